// The operator's global price: the price per message of every account without its own price, the
// prices per category (issue 31: marketing, utility, authentication, service; a category without its
// own costs the price per message), whether Meta's pricing settles a message, and whether messages that
// fail after the provider accepted them are refunded. The form controls and their reading are shared
// with an account's page (pages.tsx).

import { h, Fragment } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, field, respond, pageRoutes } from '../../dashboard/context'
import { Field, FormError, FormProblem, fieldProps, formState, type FormState } from '../../dashboard/components'
import type { Session } from '../../dashboard/session'
import { badValue } from '../../http/errors'
import { audit } from '../users/service'
import { getPrice, setPrice } from './service'
import { CATEGORIES, type Category, type SettleMode } from '../ledger/service'

type Server = Parameters<Dashboard['addressOf']>[1]

/** A category's price field in the forms. */
const categoryField = (category: Category) => `price_${category}`

export const PRICE_FIELDS = ['cost_per_message', 'late_failures', 'settle', ...CATEGORIES.map(categoryField)] as const

/**
 * The form's prices per category: a category's field empty removes its own price (it costs the price per
 * message), a figure sets it; a form without the field (an older page) keeps what is in force.
 */
export function categoryPricesOf(d: Dashboard, body: unknown): Partial<Record<Category, number | null>> {
  const prices: Partial<Record<Category, number | null>> = {}
  for (const category of CATEGORIES) {
    const name = categoryField(category)
    if (typeof (body as Record<string, unknown> | null)?.[name] !== 'string') continue
    prices[category] = field(body, name).trim() === '' ? null : d.price(body, name)
  }
  return prices
}

/** The form's choice of `settle` (undefined: keep the one in force); a 422 naming the field otherwise. */
export function settleOf(body: unknown): SettleMode | undefined {
  const value = field(body, 'settle')
  if (value === '') return undefined
  if (value !== 'provider' && value !== 'keep')
    throw badValue("settle: choose whether Meta's pricing settles a message or the charge is kept")
  return value
}

/**
 * The four categories' own prices (empty: the price per message) and the settlement choice, for the
 * global price's form and an account's. `own`: the prices set; `resolved`: what each costs now.
 */
export function CategoryPrices(props: {
  d: Dashboard
  state: FormState | undefined
  form: string
  own: Partial<Record<Category, number>>
  resolved: Record<Category, number>
  settle: SettleMode
}) {
  const { d, state, form, own, resolved } = props
  const { typed, attributes } = fieldProps(state, form, 'settle')
  const settle = typed === 'provider' || typed === 'keep' ? typed : props.settle
  return (
    <>
      <fieldset class="category-prices">
        <legend>{`Prices per category (${d.config.currency}; empty: the price per message)`}</legend>
        {CATEGORIES.map((category) => (
          <Field
            state={state}
            form={form}
            name={categoryField(category)}
            label={`${category[0]!.toUpperCase()}${category.slice(1)} (now ${resolved[category].toLocaleString('en')})`}
            inputmode="numeric"
            value={own[category] === undefined ? '' : own[category]!.toLocaleString('en')}
          />
        ))}
      </fieldset>
      <fieldset aria-describedby={attributes['aria-describedby']}>
        <legend>When Meta prices a message in another category, or free</legend>
        <FormError state={state} form={form} name="settle" />
        <label class="choice">
          <input type="radio" name="settle" value="provider" checked={settle === 'provider'} />
          Settle it at that category's price
        </label>
        <label class="choice">
          <input type="radio" name="settle" value="keep" checked={settle === 'keep'} />
          Keep the charge as made
        </label>
      </fieldset>
    </>
  )
}

/** The resolved price of each category, as a small table. */
export function CategoryPriceTable(props: { d: Dashboard; prices: Record<Category, number>; own: Partial<Record<Category, number>> }) {
  return (
    <table class="card" id="category-prices">
      <caption>Price per category ({props.d.config.currency})</caption>
      <thead>
        <tr>
          <th scope="col">Category</th>
          <th scope="col">Price</th>
          <th scope="col">From</th>
        </tr>
      </thead>
      <tbody>
        {CATEGORIES.map((category) => (
          <tr>
            <th scope="row">{category}</th>
            <td>{props.prices[category].toLocaleString('en')}</td>
            <td>{props.own[category] === undefined ? 'the price per message' : 'its own price'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

/** How a price treats late failures, in words. */
export const lateFailuresText = (refund: boolean) => (refund ? 'refunded' : 'kept charged')

/**
 * The form's choice of `refund_late_failures`: `refund` or `charge`; undefined when the form has no
 * choice (it keeps the one in force). A 422 naming the field otherwise.
 */
export function lateFailuresOf(body: unknown): boolean | undefined {
  const value = field(body, 'late_failures')
  if (value === '') return undefined
  if (value !== 'refund' && value !== 'charge') throw badValue('late_failures: choose whether to refund late failures or keep them charged')
  return value === 'refund'
}

/** The choice as two radio buttons, `current` (the price's) checked unless the form came back with another. */
export function LateFailuresChoice(props: { state: FormState | undefined; form: string; current: boolean }) {
  const { typed, attributes } = fieldProps(props.state, props.form, 'late_failures')
  const refund = typed === 'refund' || typed === 'charge' ? typed === 'refund' : props.current
  return (
    <fieldset aria-describedby={attributes['aria-describedby']}>
      <legend>Messages that fail after the provider accepted them</legend>
      <FormError state={props.state} form={props.form} name="late_failures" />
      <label class="choice">
        <input type="radio" name="late_failures" value="refund" checked={refund} />
        Refund them
      </label>
      <label class="choice">
        <input type="radio" name="late_failures" value="charge" checked={!refund} />
        Keep them charged
      </label>
    </fieldset>
  )
}

/** The notice after a price was set: the price, and the late-failure choice when it changed. */
export function priceNotice(
  d: Dashboard,
  lead: string,
  previous: { cost_per_message: number; refund_late_failures: boolean },
  price: { cost_per_message: number; refund_late_failures: boolean },
) {
  const choice =
    price.refund_late_failures === previous.refund_late_failures
      ? ''
      : ` Messages charged from now on that fail after the provider accepted them are ${lateFailuresText(price.refund_late_failures)}.`
  return `${lead} ${d.money(price.cost_per_message)} per message (it was ${d.money(previous.cost_per_message)}).${choice}`
}

export function pricePages(d: Dashboard) {
  const auditOf = (
    session: Session,
    request: Request,
    server: Server,
    entry: { accountId: number | null; action: string; detail: Record<string, unknown> },
  ) => audit(d.sql, { user: session.user, address: d.addressOf(request, server), ...entry })
  const OPERATOR = 'operator' as const

  async function pricePage(session: Session, options: { state?: FormState; status?: number } = {}) {
    const price = await getPrice(d.sql, null)
    return respond(
      <Layout title="Price" session={session}>
        <div class="stats">
          <div class="card stat">
            <div class="value">{price.cost_per_message.toLocaleString('en')}</div>
            <div class="label">Price per message ({d.config.currency}), for every account without its own price</div>
          </div>
          <div class="card stat">
            <div class="value" id="late-failures">
              {lateFailuresText(price.refund_late_failures)}
            </div>
            <div class="label">Messages that fail after the provider accepted them</div>
          </div>
        </div>
        <CategoryPriceTable d={d} prices={price.prices} own={price.own_prices} />
        <form class="stack card" method="post" action="/dashboard/price">
          <Csrf session={session} />
          <FormProblem state={options.state} form="price" />
          <Field
            state={options.state}
            form="price"
            name="cost_per_message"
            label={`New price per message (${d.config.currency})`}
            inputmode="numeric"
            required
          />
          <CategoryPrices d={d} state={options.state} form="price" own={price.own_prices} resolved={price.prices} settle={price.settle} />
          <LateFailuresChoice state={options.state} form="price" current={price.refund_late_failures} />
          <button type="submit">Set price</button>
        </form>
        <p class="muted">
          An account's own price is set on its account page. A message keeps the price and the late-failure choice it was charged under.
        </p>
      </Layout>,
      options.status ?? 200,
    )
  }

  return pageRoutes()
    .get('/price', async ({ request }) => {
      const session = await d.view(request, OPERATOR)
      return session instanceof Response ? session : pricePage(session)
    })
    .post('/price', ({ request, body, server }) =>
      d.formAction(
        request,
        body,
        OPERATOR,
        async (session) => {
          const previous = await getPrice(d.sql, null)
          const price = await setPrice(d.sql, {
            cost_per_message: d.price(body, 'cost_per_message'),
            refund_late_failures: lateFailuresOf(body),
            prices: categoryPricesOf(d, body),
            settle: settleOf(body),
          })
          await auditOf(session, request, server, {
            accountId: null,
            action: 'price set',
            detail: {
              cost_per_message: price.cost_per_message,
              previous: previous.cost_per_message,
              refund_late_failures: price.refund_late_failures,
              previous_refund_late_failures: previous.refund_late_failures,
              prices: price.own_prices,
              previous_prices: previous.own_prices,
              settle: price.settle,
            },
          })
          return d.finish(session, { to: '/dashboard/price', notice: priceNotice(d, 'The global price is now', previous, price) })
        },
        (message, status, session) => pricePage(session, { state: formState('price', body, PRICE_FIELDS, message), status }),
      ),
    )
}
