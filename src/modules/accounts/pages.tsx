// The operator's accounts: search, create, and one account's balance, top-up, price, senders (their
// changes are modules/senders/account-pages.tsx), members and invitations. Creating an account, a top-up and an invitation happen once per form (d.once).

import { h, Fragment } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, field, notFound, respond, pageRoutes } from '../../dashboard/context'
import { Field, FormProblem, FormToken, PagedTable, formState, type FormState } from '../../dashboard/components'
import type { Session } from '../../dashboard/session'
import { ApiError } from '../../http/errors'
import { MAX_NAME_CHARS, MAX_NOTE_CHARS } from '../../lib/validate'
import { MAX_EMAIL_CHARS, audit, createUser, listUsers } from '../users/service'
import { shownLink } from '../users/sign-in-pages'
import { idParam } from './scope'
import { changeBalance, clearPriceOverride, createAccount, getAccount, getPrice, searchAccounts, setPrice, updateAccount } from './service'
import {
  CategoryPriceTable,
  CategoryPrices,
  LateFailuresChoice,
  PRICE_FIELDS,
  categoryPricesOf,
  lateFailuresOf,
  lateFailuresText,
  priceNotice,
  settleOf,
} from './price-pages'
import { AccountSenders } from '../senders/account-pages'
import { TemplateRights } from '../templates/wa-pages'
import { membersMayChange } from '../templates/rights'
import { listAccountSenders, senderNames } from '../senders/service'

/** An account's own pages, opened from its account page. */
const ACCOUNT_PAGES = [
  ['overview', 'Overview'],
  ['messages', 'Messages'],
  ['inbox', 'Inbox'],
  ['ledger', 'Ledger'],
  ['usage', 'Usage'],
  ['contacts', 'Contacts'],
  ['opt-outs', 'Opt-outs'],
  ['templates', 'Templates and segments'],
  ['campaigns', 'Campaigns'],
  ['webhook', 'Webhook'],
  ['keys', 'API keys'],
] as const

const MAX_SEARCH_CHARS = 100
const ACCOUNT_FIELDS = ['name', 'balance'] as const
const TOPUP_FIELDS = ['amount', 'note'] as const
const INVITE_FIELDS = ['email'] as const

/** What a top-up form sent again answers (Back, then the same form sent): booked once, where to see it. */
const topupAgain = (id: number) => ({
  to: `/dashboard/accounts/${id}`,
  error: 'This top-up was already booked when its form was first sent; it was not booked again. To book another, fill in the form below.',
  link: { href: `/dashboard/accounts/${id}/ledger`, text: "See it in this account's ledger." },
})

type Server = Parameters<Dashboard['addressOf']>[1]
type Options = { state?: FormState; error?: string; status?: number }

export function accountPages(d: Dashboard) {
  const OPERATOR = 'operator' as const
  const auditOf = (
    db: Parameters<typeof audit>[0],
    session: Session,
    request: Request,
    server: Server,
    entry: { accountId: number; action: string; detail: Record<string, unknown> },
  ) => audit(db, { user: session.user, address: d.addressOf(request, server), ...entry })

  async function accountsPage(session: Session, search: string, options: Options = {}) {
    const term = search.trim()
    const long = term.length > MAX_SEARCH_CHARS
    const searchState = long ? formState('search', { q: term }, ['q'], `q: must be at most ${MAX_SEARCH_CHARS} characters`) : undefined
    const rows = long ? [] : await searchAccounts(d.sql, term)
    const { state } = options
    return respond(
      <Layout title="Accounts" session={session}>
        <form class="inline card" method="get" action="/dashboard/accounts" role="search">
          <Field
            state={searchState}
            form="search"
            name="q"
            label="Search by name"
            type="search"
            value={term}
            maxlength={MAX_SEARCH_CHARS}
          />
          <button type="submit">Search</button>
        </form>
        <PagedTable
          columns={[
            {
              header: 'Account',
              cell: (a) => (
                <>
                  <a href={`/dashboard/accounts/${a.id}`}>{a.name}</a> <span class="muted">#{a.id}</span>
                </>
              ),
            },
            { header: 'Balance', cell: (a) => a.balance.toLocaleString('en'), class: 'num' },
          ]}
          rows={rows}
          empty={term && !long ? `No account's name contains “${term}”.` : undefined}
        />
        <h2>New account</h2>
        <form class="stack card" method="post" action="/dashboard/accounts">
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={state} form="account" />
          <Field state={state} form="account" name="name" label="Name" required maxlength={MAX_NAME_CHARS} />
          <Field
            state={state}
            form="account"
            name="balance"
            label={`Opening balance (${d.config.currency})`}
            inputmode="numeric"
            placeholder="5,000"
          />
          <button type="submit">Create account</button>
        </form>
      </Layout>,
      long ? 422 : (options.status ?? 200),
    )
  }

  async function accountPage(session: Session, id: number, options: Options = {}) {
    const account = await getAccount(d.sql, id).catch((error) => {
      if (error instanceof ApiError && error.code === 'NOT_FOUND') return null
      throw error
    })
    if (!account) return notFound(session)
    const members = await listUsers(d.sql, id)
    const price = await getPrice(d.sql, id)
    const [senders, allSenders] = await Promise.all([listAccountSenders(d.sql, id), senderNames(d.sql)])
    const templateRights = await membersMayChange(d.sql, id)
    const { state } = options
    return respond(
      <Layout title={account.name} session={session} error={options.error}>
        <div class="stats">
          <div class="card stat">
            <div class="value">{account.wa_balance.toLocaleString('en')}</div>
            <div class="label">Balance ({d.config.currency})</div>
          </div>
          <div class="card stat">
            <div class="value">{account.cost_per_message.toLocaleString('en')}</div>
            <div class="label">Price per message ({price.account_override ? 'its own price' : 'the global price'})</div>
          </div>
          <div class="card stat">
            <div class="value" id="late-failures">
              {lateFailuresText(price.refund_late_failures)}
            </div>
            <div class="label">Messages that fail after the provider accepted them</div>
          </div>
        </div>
        <nav class="account-pages card" aria-label="This account's pages">
          {ACCOUNT_PAGES.map(([page, label]) => (
            <a href={`/dashboard/accounts/${id}/${page}`}>{label}</a>
          ))}
        </nav>
        <h2>Top up</h2>
        <form class="inline card" method="post" action={`/dashboard/accounts/${id}/topups`}>
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={state} form="topup" />
          <Field
            state={state}
            form="topup"
            name="amount"
            label={`Amount (${d.config.currency})`}
            inputmode="numeric"
            placeholder="5,000"
            // After Back the browser refills a form as it was typed; not this amount, so a page shown again
            // cannot book the same top-up twice by one click, with scripts off too (issue 33).
            autocomplete="off"
            required
          />
          <Field state={state} form="topup" name="note" label="Note" maxlength={MAX_NOTE_CHARS} />
          <button type="submit">Top up</button>
        </form>
        <h2>Price</h2>
        <CategoryPriceTable d={d} prices={price.prices} own={price.account_override ? price.own_prices : {}} />
        <form class="stack card" method="post" action={`/dashboard/accounts/${id}/price`}>
          <Csrf session={session} />
          <FormProblem state={state} form="price" />
          <Field
            state={state}
            form="price"
            name="cost_per_message"
            label={`This account's price per message (${d.config.currency})`}
            inputmode="numeric"
            required
          />
          <CategoryPrices
            d={d}
            state={state}
            form="price"
            own={price.account_override ? price.own_prices : {}}
            resolved={price.prices}
            settle={price.settle}
          />
          <LateFailuresChoice state={state} form="price" current={price.refund_late_failures} />
          <button type="submit">Set own price</button>
        </form>
        {price.account_override ? (
          <form class="card" method="post" action={`/dashboard/accounts/${id}/price/clear`}>
            <Csrf session={session} />
            <button class="secondary" type="submit">
              Clear own price (use the global price)
            </button>
          </form>
        ) : null}
        <h2 id="low-balance">Low-balance alert</h2>
        <form class="inline card" method="post" action={`/dashboard/accounts/${id}/low-balance`} aria-labelledby="low-balance">
          <Csrf session={session} />
          <FormProblem state={state} form="low-balance" />
          <Field
            state={state}
            form="low-balance"
            name="low_balance_threshold"
            label={`Alert when the balance falls below (${d.config.currency}; empty: no alert)`}
            inputmode="numeric"
            value={account.low_balance_threshold === null ? '' : account.low_balance_threshold.toLocaleString('en')}
          />
          <button type="submit">Save alert</button>
        </form>
        <p class="muted">
          A charge that takes the balance below it sends one <code>balance.low</code> webhook event to the account's webhooks that chose it;
          the next one is sent after the balance is back at or above it.
        </p>
        <AccountSenders session={session} accountId={id} senders={senders} all={allSenders} />
        <TemplateRights session={session} accountId={id} allowed={templateRights} />
        <h2>Members</h2>
        {members.length === 0 ? <p class="muted">No members yet.</p> : null}
        <ul>
          {members.map((m) => (
            <li>
              {m.email} {m.active ? '' : '(deactivated)'}
            </li>
          ))}
        </ul>
        <p class="muted">
          A member who lost their link gets a new one on the <a href="/dashboard/users">Users</a> page.
        </p>
        <form class="inline card" method="post" action={`/dashboard/accounts/${id}/invites`}>
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={state} form="invite" />
          <Field
            state={state}
            form="invite"
            name="email"
            label="E-mail of the new member"
            type="email"
            required
            maxlength={MAX_EMAIL_CHARS}
          />
          <button type="submit">Invite</button>
        </form>
      </Layout>,
      options.status ?? 200,
    )
  }

  /** The account of an id in the path, or the 404 page. */
  const pageOf = (session: Session, param: string, options?: Options) => {
    const id = idParam(param)
    return id === null ? notFound(session) : accountPage(session, id, options)
  }

  /**
   * A change of the account of the path (/accounts/:id/...): formAction for operators, 404 for an id or
   * an account that is none, and the account's page again with the `problem` of a rule broken.
   */
  function accountChange(
    request: Request,
    body: unknown,
    param: string,
    run: (session: Session, id: number) => Promise<Response>,
    problem: (message: string) => Pick<Options, 'state' | 'error'>,
  ) {
    const id = idParam(param)
    return d.formAction(
      request,
      body,
      OPERATOR,
      (session) => (id === null ? Promise.resolve(notFound(session)) : run(session, id)),
      (message, status, session) =>
        status === 404 || id === null ? notFound(session) : accountPage(session, id, { ...problem(message), status }),
    )
  }

  return pageRoutes()
    .get('/accounts', async ({ request, query }) => {
      const session = await d.view(request, OPERATOR)
      if (session instanceof Response) return session
      return accountsPage(session, typeof query.q === 'string' ? query.q : '')
    })
    .post('/accounts', ({ request, body, server }) =>
      d.formAction(
        request,
        body,
        OPERATOR,
        (session) =>
          d.once(session, body, '/dashboard/accounts', async (tx) => {
            const opening = field(body, 'balance').trim() === '' ? 0 : d.amount(body, 'balance')
            const account = await createAccount(
              tx,
              { name: field(body, 'name'), balance: opening, createdBy: session.user.id },
              d.deps.clock,
            )
            await auditOf(tx, session, request, server, {
              accountId: account.id,
              action: 'account created',
              detail: { name: account.name, balance: opening },
            })
            return {
              to: `/dashboard/accounts/${account.id}`,
              notice: `Account ${account.name} created, with ${opening > 0 ? `an opening balance of ${d.money(opening)}` : 'a balance of 0'}.`,
            }
          }),
        (message, status, session) => accountsPage(session, '', { state: formState('account', body, ACCOUNT_FIELDS, message), status }),
      ),
    )
    .get('/accounts/:id', async ({ request, params }) => {
      const session = await d.view(request, OPERATOR)
      return session instanceof Response ? session : pageOf(session, params.id)
    })
    .post('/accounts/:id/topups', ({ request, body, params, server }) =>
      accountChange(
        request,
        body,
        params.id,
        (session, id) =>
          d.once(session, body, topupAgain(id), async (tx) => {
            const amount = d.amount(body, 'amount')
            const note = d.note(body, 'note')
            const { wa_balance } = await changeBalance(tx, id, 'topup', amount, note, session.user.id)
            await auditOf(tx, session, request, server, { accountId: id, action: 'top-up', detail: { amount, note } })
            return { to: `/dashboard/accounts/${id}`, notice: `Top-up of ${d.money(amount)} booked; balance ${d.money(wa_balance)}.` }
          }),
        (message) => ({ state: formState('topup', body, TOPUP_FIELDS, message) }),
      ),
    )
    .post('/accounts/:id/low-balance', ({ request, body, params, server }) =>
      accountChange(
        request,
        body,
        params.id,
        async (session, id) => {
          const typed = field(body, 'low_balance_threshold').trim()
          const threshold = typed === '' ? null : d.amount(body, 'low_balance_threshold')
          const previous = (await getAccount(d.sql, id)).low_balance_threshold
          await updateAccount(d.sql, id, { low_balance_threshold: threshold })
          await auditOf(d.sql, session, request, server, {
            accountId: id,
            action: 'low-balance threshold set',
            detail: { low_balance_threshold: threshold, previous },
          })
          return d.finish(session, {
            to: `/dashboard/accounts/${id}`,
            notice:
              threshold === null ? 'No low-balance alert.' : `balance.low is sent when the balance falls below ${d.money(threshold)}.`,
          })
        },
        (message) => ({ state: formState('low-balance', body, ['low_balance_threshold'], message) }),
      ),
    )
    .post('/accounts/:id/invites', ({ request, body, params, server }) =>
      accountChange(
        request,
        body,
        params.id,
        (session, id) =>
          d.once(session, body, `/dashboard/accounts/${id}`, async (tx) => {
            const { user, token } = await createUser(tx, d.deps.clock, {
              email: field(body, 'email'),
              role: 'member',
              accountId: id,
              createdBy: session.user.id,
            })
            await auditOf(tx, session, request, server, { accountId: id, action: 'member invited', detail: { email: user.email } })
            return { to: `/dashboard/accounts/${id}`, shown: shownLink(request, token, `Invitation for ${user.email}`, 'invite-link') }
          }),
        (message) => ({ state: formState('invite', body, INVITE_FIELDS, message) }),
      ),
    )
    .post('/accounts/:id/price', ({ request, body, params, server }) =>
      accountChange(
        request,
        body,
        params.id,
        async (session, id) => {
          const previous = await getPrice(d.sql, id)
          const price = await setPrice(d.sql, {
            cost_per_message: d.price(body, 'cost_per_message'),
            account_id: id,
            refund_late_failures: lateFailuresOf(body),
            prices: categoryPricesOf(d, body),
            settle: settleOf(body),
          })
          await auditOf(d.sql, session, request, server, {
            accountId: id,
            action: 'account price set',
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
          return d.finish(session, {
            to: `/dashboard/accounts/${id}`,
            notice: priceNotice(d, "This account's own price is now", previous, price),
          })
        },
        (message) => ({ state: formState('price', body, PRICE_FIELDS, message) }),
      ),
    )
    .post('/accounts/:id/price/clear', ({ request, body, params, server }) =>
      accountChange(
        request,
        body,
        params.id,
        async (session, id) => {
          const previous = await getPrice(d.sql, id)
          const price = await clearPriceOverride(d.sql, id)
          await auditOf(d.sql, session, request, server, {
            accountId: id,
            action: 'account price cleared',
            detail: {
              cost_per_message: price.cost_per_message,
              previous: previous.cost_per_message,
              refund_late_failures: price.refund_late_failures,
              previous_refund_late_failures: previous.refund_late_failures,
            },
          })
          return d.finish(session, {
            to: `/dashboard/accounts/${id}`,
            notice:
              `This account pays the global price again: ${d.money(price.cost_per_message)} per message; ` +
              `late failures ${lateFailuresText(price.refund_late_failures)}.`,
          })
        },
        (message) => ({ error: message }),
      ),
    )
}
