// The operator's global price: the price per message of every account without its own price.

import { h } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, orError, respond, pageRoutes } from '../../dashboard/context'
import { Field, FormProblem, formState, type FormState } from '../../dashboard/components'
import type { Session } from '../../dashboard/session'
import { audit } from '../users/service'
import { getPrice, setPrice } from './service'

type Server = Parameters<Dashboard['addressOf']>[1]

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
        </div>
        <form class="inline card" method="post" action="/dashboard/price">
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
          <button type="submit">Set price</button>
        </form>
        <p class="muted">An account's own price is set on its account page.</p>
      </Layout>,
      options.status ?? 200,
    )
  }

  return pageRoutes()
    .get('/price', async ({ request }) => {
      const session = await d.view(request, OPERATOR)
      return session instanceof Response ? session : pricePage(session)
    })
    .post('/price', async ({ request, body, server }) => {
      const session = await d.change(request, body, OPERATOR)
      if (session instanceof Response) return session
      return orError(
        async () => {
          const previous = await getPrice(d.sql, null)
          const price = await setPrice(d.sql, { cost_per_message: d.amount(body, 'cost_per_message') })
          await auditOf(session, request, server, {
            accountId: null,
            action: 'price set',
            detail: { cost_per_message: price.cost_per_message, previous: previous.cost_per_message },
          })
          return d.finish(session, {
            to: '/dashboard/price',
            notice: `The global price is now ${d.money(price.cost_per_message)} per message (it was ${d.money(previous.cost_per_message)}).`,
          })
        },
        (message, status) => pricePage(session, { state: formState('price', body, ['cost_per_message'], message), status }),
      )
    })
}
