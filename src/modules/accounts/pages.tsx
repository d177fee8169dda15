// The operator's accounts: search, create, and one account's balance, top-up, members and invitations.

import { h, Fragment } from '../../dashboard/jsx'
import { CopyButton, Csrf, Layout } from '../../dashboard/layout'
import { PagedTable } from '../../dashboard/components'
import { type Dashboard, field, integerField, notFound, orError, redirect, respond, pageRoutes } from '../../dashboard/context'
import type { Session } from '../../dashboard/session'
import { ApiError } from '../../http/errors'
import { audit, createUser, listUsers } from '../users/service'
import { changeBalance, clearPriceOverride, createAccount, getAccount, getPrice, searchAccounts, setPrice } from './service'

/** An account's own pages, opened from its account page. */
const ACCOUNT_PAGES = [
  ['messages', 'Messages'],
  ['ledger', 'Ledger'],
  ['contacts', 'Contacts'],
  ['templates', 'Templates and segments'],
  ['campaigns', 'Campaigns'],
  ['webhook', 'Webhook'],
  ['keys', 'API keys'],
] as const

export function accountPages(d: Dashboard) {
  async function accountsPage(session: Session, search: string, options: { error?: string; status?: number } = {}) {
    const term = search.trim().slice(0, 100)
    const rows = await searchAccounts(d.sql, term)
    return respond(
      <Layout title="Accounts" session={session} error={options.error}>
        <form class="inline card" method="get" action="/dashboard/accounts" role="search">
          <label>
            Search by name
            <input type="search" name="q" value={term} />
          </label>
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
          empty={term ? `No account's name contains “${term}”.` : undefined}
        />
        <h2>New account</h2>
        <form class="stack card" method="post" action="/dashboard/accounts">
          <Csrf session={session} />
          <label>
            Name
            <input name="name" required maxlength={200} />
          </label>
          <label>
            Opening balance ({d.config.currency})
            <input name="balance" inputmode="numeric" pattern="[0-9]*" />
          </label>
          <button type="submit">Create account</button>
        </form>
      </Layout>,
      options.status ?? 200,
    )
  }

  async function accountPage(
    session: Session,
    idParam: string,
    options: { error?: string; status?: number; invite?: { email: string; link: string } } = {},
  ) {
    const id = Number(idParam)
    if (!/^\d{1,15}$/.test(idParam)) return notFound(session)
    const account = await getAccount(d.sql, d.tz, id).catch((error) => {
      if (error instanceof ApiError && error.code === 'NOT_FOUND') return null
      throw error
    })
    if (!account) return notFound(session)
    const members = await listUsers(d.sql, id)
    const price = await getPrice(d.sql, id)
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
        </div>
        <nav class="account-pages card" aria-label="This account's pages">
          {ACCOUNT_PAGES.map(([page, label]) => (
            <a href={`/dashboard/accounts/${id}/${page}`}>{label}</a>
          ))}
        </nav>
        <h2>Top up</h2>
        <form class="inline card" method="post" action={`/dashboard/accounts/${id}/topups`}>
          <Csrf session={session} />
          <label>
            Amount ({d.config.currency})
            <input name="amount" inputmode="numeric" pattern="[0-9]*" required />
          </label>
          <label>
            Note
            <input name="note" maxlength={200} />
          </label>
          <button type="submit">Top up</button>
        </form>
        <h2>Price</h2>
        <form class="inline card" method="post" action={`/dashboard/accounts/${id}/price`}>
          <Csrf session={session} />
          <label>
            This account's price per message ({d.config.currency})
            <input name="cost_per_message" inputmode="numeric" pattern="[0-9]*" required />
          </label>
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
        <h2>Members</h2>
        {options.invite ? (
          <div class="card" role="status">
            <p>
              Invitation for <strong>{options.invite.email}</strong>: pass this link on (valid 72 hours, once). It is shown only now.
            </p>
            <code class="secret" id="invite-link">
              {options.invite.link}
            </code>
            <CopyButton target="invite-link" what="link" />
          </div>
        ) : null}
        <ul>
          {members.map((m) => (
            <li>
              {m.email} {m.active ? '' : '(deactivated)'}
            </li>
          ))}
        </ul>
        <form class="inline card" method="post" action={`/dashboard/accounts/${id}/invites`}>
          <Csrf session={session} />
          <label>
            E-mail of the new member
            <input type="email" name="email" required />
          </label>
          <button type="submit">Invite</button>
        </form>
      </Layout>,
      options.status ?? 200,
    )
  }

  return pageRoutes()
    .get('/accounts', async ({ request, query }) => {
      const session = await d.sessionOf(request)
      if (!session) return redirect('/dashboard/sign-in')
      if (session.user.role !== 'operator') return notFound(session)
      return accountsPage(session, typeof query.q === 'string' ? query.q : '')
    })
    .post('/accounts', async ({ request, body, server }) => {
      const session = await d.change(request, body)
      if (session instanceof Response) return session
      if (session.user.role !== 'operator') return notFound(session)
      try {
        const opening = field(body, 'balance').trim() === '' ? 0 : integerField(body, 'balance')
        const account = await createAccount(d.sql, d.tz, { name: field(body, 'name'), balance: opening, createdBy: session.user.id })
        await audit(d.sql, {
          user: session.user,
          address: d.addressOf(request, server),
          accountId: account.id,
          action: 'account created',
          detail: { name: account.name, balance: opening },
        })
        return redirect(`/dashboard/accounts/${account.id}`)
      } catch (error) {
        if (error instanceof ApiError) return accountsPage(session, '', { error: error.message, status: error.status })
        throw error
      }
    })
    .get('/accounts/:id', async ({ request, params }) => {
      const session = await d.sessionOf(request)
      if (!session) return redirect('/dashboard/sign-in')
      if (session.user.role !== 'operator') return notFound(session)
      return accountPage(session, params.id)
    })
    .post('/accounts/:id/topups', async ({ request, body, params, server }) => {
      const session = await d.change(request, body)
      if (session instanceof Response) return session
      if (session.user.role !== 'operator') return notFound(session)
      const id = Number(params.id)
      try {
        const amount = integerField(body, 'amount')
        const note = field(body, 'note').trim().slice(0, 200) || null
        await changeBalance(d.sql, id, 'topup', amount, note, session.user.id)
        await audit(d.sql, {
          user: session.user,
          address: d.addressOf(request, server),
          accountId: id,
          action: 'top-up',
          detail: { amount, note },
        })
        return redirect(`/dashboard/accounts/${id}`)
      } catch (error) {
        if (error instanceof ApiError) return accountPage(session, params.id, { error: error.message, status: error.status })
        throw error
      }
    })
    .post('/accounts/:id/invites', async ({ request, body, params, server }) => {
      const session = await d.change(request, body)
      if (session instanceof Response) return session
      if (session.user.role !== 'operator') return notFound(session)
      const id = Number(params.id)
      try {
        const { user, token } = await createUser(d.sql, {
          email: field(body, 'email'),
          role: 'member',
          accountId: id,
          createdBy: session.user.id,
        })
        await audit(d.sql, {
          user: session.user,
          address: d.addressOf(request, server),
          accountId: id,
          action: 'member invited',
          detail: { email: user.email },
        })
        const link = `${new URL(request.url).origin}/dashboard/link/${token}`
        return accountPage(session, params.id, { invite: { email: user.email, link } })
      } catch (error) {
        if (error instanceof ApiError) return accountPage(session, params.id, { error: error.message, status: error.status })
        throw error
      }
    })
    .post('/accounts/:id/price', async ({ request, body, params, server }) => {
      const session = await d.change(request, body, 'operator')
      if (session instanceof Response) return session
      const id = Number(params.id)
      if (!/^\d{1,15}$/.test(params.id)) return notFound(session)
      return orError(
        async () => {
          const previous = await getPrice(d.sql, id)
          const price = await setPrice(d.sql, { cost_per_message: integerField(body, 'cost_per_message'), account_id: id })
          await audit(d.sql, {
            user: session.user,
            address: d.addressOf(request, server),
            accountId: id,
            action: 'account price set',
            detail: { cost_per_message: price.cost_per_message, previous: previous.cost_per_message },
          })
          return redirect(`/dashboard/accounts/${id}`)
        },
        (error, status) => (status === 404 ? notFound(session) : accountPage(session, params.id, { error, status })),
      )
    })
    .post('/accounts/:id/price/clear', async ({ request, body, params, server }) => {
      const session = await d.change(request, body, 'operator')
      if (session instanceof Response) return session
      const id = Number(params.id)
      if (!/^\d{1,15}$/.test(params.id)) return notFound(session)
      return orError(
        async () => {
          const previous = await getPrice(d.sql, id)
          const price = await clearPriceOverride(d.sql, id)
          await audit(d.sql, {
            user: session.user,
            address: d.addressOf(request, server),
            accountId: id,
            action: 'account price cleared',
            detail: { cost_per_message: price.cost_per_message, previous: previous.cost_per_message },
          })
          return redirect(`/dashboard/accounts/${id}`)
        },
        (error, status) => (status === 404 ? notFound(session) : accountPage(session, params.id, { error, status })),
      )
    })
}
