// Operator pages: the global price, the users (invite an operator, reset links, deactivate and
// reactivate), failed webhook deliveries across accounts, and the audit log. 404 for members.

import { Elysia } from 'elysia'
import { h } from '../../dashboard/jsx'
import { CopyButton, Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, field, integerField, notFound, orError, redirect, respond, counted } from '../../dashboard/context'
import type { Session } from '../../dashboard/session'
import { ApiError, badValue } from '../../http/errors'
import { formatTimestamp } from '../../lib/time'
import { audit, createLink, createUser, getUser, listAudit, listUsersWithAccounts, setUserActive } from './service'
import { getPrice, setPrice } from '../accounts/service'
import { accountOfKey, getDelivery, listFailedDeliveries, replayDelivery } from '../webhooks/deliveries'
import { eventsCommitted } from '../webhooks/notify'

const PAGE_SIZE = 50

type Server = Parameters<Dashboard['addressOf']>[1]

const offsetOf = (value: unknown) => {
  const text = typeof value === 'string' ? value : ''
  return /^\d{1,9}$/.test(text) ? Number(text) : 0
}

function Pager(props: { label: string; path: string; offset: number; total: number; extra?: string }) {
  const at = (offset: number) => `${props.path}?${props.extra ? `${props.extra}&` : ''}offset=${offset}`
  return (
    <nav class="pager" aria-label={props.label}>
      {props.offset > 0 ? <a href={at(Math.max(0, props.offset - PAGE_SIZE))}>Newer</a> : null}
      {props.offset + PAGE_SIZE < props.total ? <a href={at(props.offset + PAGE_SIZE)}>Older</a> : null}
    </nav>
  )
}

export function operatorPages(d: Dashboard) {
  const auditOf = (
    session: Session,
    request: Request,
    server: Server,
    entry: { accountId: number | null; action: string; detail: Record<string, unknown> },
  ) => audit(d.sql, { user: session.user, address: d.addressOf(request, server), ...entry })

  // ---- the global price
  async function pricePage(session: Session, options: { error?: string; status?: number } = {}) {
    const price = await getPrice(d.sql, null)
    return respond(
      <Layout title="Price" session={session} error={options.error}>
        <div class="stats">
          <div class="card stat">
            <div class="value">{price.cost_per_message.toLocaleString('en')}</div>
            <div class="label">Price per message ({d.config.currency}), for every account without its own price</div>
          </div>
        </div>
        <form class="inline card" method="post" action="/dashboard/price">
          <Csrf session={session} />
          <label>
            New price per message ({d.config.currency})
            <input name="cost_per_message" inputmode="numeric" pattern="[0-9]*" required />
          </label>
          <button type="submit">Set price</button>
        </form>
        <p class="muted">An account's own price is set on its account page.</p>
      </Layout>,
      options.status ?? 200,
    )
  }

  // ---- users
  type Shown = { what: string; email: string; link: string }
  async function usersPage(session: Session, options: { error?: string; status?: number; shown?: Shown } = {}) {
    const users = await listUsersWithAccounts(d.sql)
    return respond(
      <Layout title="Users" session={session} error={options.error}>
        {options.shown ? (
          <div class="card" role="status">
            <p>
              {options.shown.what} for <strong>{options.shown.email}</strong>: pass this link on (valid 72 hours, once). It is shown only
              now.
            </p>
            <code class="secret" id="user-link">
              {options.shown.link}
            </code>
            <CopyButton target="user-link" what="link" />
          </div>
        ) : null}
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">E-mail</th>
                <th scope="col">Role</th>
                <th scope="col">Account</th>
                <th scope="col">State</th>
                <th scope="col">Password reset</th>
              </tr>
            </thead>
            <tbody>
              {users.map((u) => (
                <tr>
                  <td>{u.email}</td>
                  <td>{u.role}</td>
                  <td>
                    {u.account_id === null ? (
                      <span class="muted">every account</span>
                    ) : (
                      <a href={`/dashboard/accounts/${u.account_id}`}>{u.account_name ?? `#${u.account_id}`}</a>
                    )}
                  </td>
                  <td>
                    <form method="post" action={`/dashboard/users/${u.id}/active`}>
                      <Csrf session={session} />
                      <input type="hidden" name="active" value={u.active ? 'false' : 'true'} />
                      {u.active ? 'active ' : 'deactivated '}
                      {u.id === session.user.id ? null : (
                        <button class="secondary" type="submit" aria-label={`${u.active ? 'Deactivate' : 'Reactivate'} ${u.email}`}>
                          {u.active ? 'Deactivate' : 'Reactivate'}
                        </button>
                      )}
                    </form>
                  </td>
                  <td>
                    {u.active ? (
                      <form method="post" action={`/dashboard/users/${u.id}/reset`}>
                        <Csrf session={session} />
                        <button class="secondary" type="submit" aria-label={`Make a password-reset link for ${u.email}`}>
                          Reset link
                        </button>
                      </form>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <h2>Invite an operator</h2>
        <form class="inline card" method="post" action="/dashboard/users/invites">
          <Csrf session={session} />
          <label>
            E-mail of the new operator
            <input type="email" name="email" required />
          </label>
          <button type="submit">Invite operator</button>
        </form>
        <p class="muted">Members are invited from their account's page.</p>
      </Layout>,
      options.status ?? 200,
    )
  }

  /** The user of an id in the URL, or null (404). */
  async function userOf(idParam: string) {
    if (!/^\d{1,15}$/.test(idParam)) return null
    return getUser(d.sql, Number(idParam)).catch((error) => {
      if (error instanceof ApiError && error.code === 'NOT_FOUND') return null
      throw error
    })
  }

  // ---- failed deliveries
  async function deliveriesPage(session: Session, offset: number, options: { error?: string; status?: number } = {}) {
    const list = await listFailedDeliveries(d.sql, d.tz, { limit: PAGE_SIZE, offset })
    return respond(
      <Layout title="Failed deliveries" session={session} error={options.error}>
        <p class="muted">
          {list.total.toLocaleString('en')} webhook deliveries gave up after every retry, newest first. Times in {d.tz}.
        </p>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Created</th>
                <th scope="col">Account</th>
                <th scope="col">Key</th>
                <th scope="col">Message</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last error</th>
                <th scope="col">Replay</th>
              </tr>
            </thead>
            <tbody>
              {list.items.map((e) => (
                <tr>
                  <td>{e.created_at}</td>
                  <td>
                    <a href={`/dashboard/accounts/${e.account_id}/webhook?key=${e.api_key_id}`}>{e.account_name}</a>
                  </td>
                  <td>{e.key_label}</td>
                  <td>{e.payload?.data?.test ? 'test event' : <code>{e.message_sid ?? ''}</code>}</td>
                  <td>{e.attempts}</td>
                  <td>{e.last_error ?? ''}</td>
                  <td>
                    <form method="post" action={`/dashboard/deliveries/${e.id}/replay`}>
                      <Csrf session={session} />
                      <button class="secondary" type="submit" aria-label={`Replay delivery ${e.id}`}>
                        Replay
                      </button>
                    </form>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <Pager label="Pages of failed deliveries" path="/dashboard/deliveries" offset={offset} total={list.total} />
      </Layout>,
      options.status ?? 200,
    )
  }

  // ---- audit log
  async function auditPage(session: Session, query: Record<string, unknown>) {
    const accountText = typeof query.account === 'string' ? query.account.trim() : ''
    const accountValid = accountText === '' || /^\d{1,15}$/.test(accountText)
    const accountId = accountText !== '' && accountValid ? Number(accountText) : null
    const offset = offsetOf(query.offset)
    const log = await listAudit(d.sql, accountId, { limit: PAGE_SIZE, offset })
    return respond(
      <Layout title="Audit log" session={session} error={accountValid ? undefined : 'Account: must be an account id (a whole number).'}>
        <form class="inline card" method="get" action="/dashboard/audit" role="search">
          <label>
            Account id
            <input name="account" inputmode="numeric" pattern="[0-9]*" value={accountText} />
          </label>
          <button type="submit">Filter</button>
          {accountId !== null ? <a href="/dashboard/audit">Every account</a> : null}
        </form>
        <p class="muted">
          {counted(log.total, 'entry', 'entries')}, newest first. Times in {d.tz}.
        </p>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">From</th>
                <th scope="col">Account</th>
                <th scope="col">Action</th>
                <th scope="col">Detail</th>
              </tr>
            </thead>
            <tbody>
              {log.items.map((row) => (
                <tr>
                  <td>{formatTimestamp(row.at, d.tz)}</td>
                  <td>{row.actor}</td>
                  <td>{row.address ?? ''}</td>
                  <td>{row.account_id === null ? '' : <a href={`/dashboard/accounts/${row.account_id}`}>#{row.account_id}</a>}</td>
                  <td>{row.action}</td>
                  <td>
                    <code class="detail">{row.detail === '{}' ? '' : row.detail}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <Pager
          label="Pages of the audit log"
          path="/dashboard/audit"
          offset={offset}
          total={log.total}
          extra={accountId === null ? undefined : `account=${accountId}`}
        />
      </Layout>,
      accountValid ? 200 : 422,
    )
  }

  const OPERATOR = 'operator' as const
  return new Elysia({ prefix: '/dashboard' })
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
          const price = await setPrice(d.sql, { cost_per_message: integerField(body, 'cost_per_message') })
          await auditOf(session, request, server, {
            accountId: null,
            action: 'price set',
            detail: { cost_per_message: price.cost_per_message, previous: previous.cost_per_message },
          })
          return redirect('/dashboard/price')
        },
        (error, status) => pricePage(session, { error, status }),
      )
    })
    .get('/users', async ({ request }) => {
      const session = await d.view(request, OPERATOR)
      return session instanceof Response ? session : usersPage(session)
    })
    .post('/users/invites', async ({ request, body, server }) => {
      const session = await d.change(request, body, OPERATOR)
      if (session instanceof Response) return session
      return orError(
        async () => {
          const { user, token } = await createUser(d.sql, {
            email: field(body, 'email'),
            role: 'operator',
            accountId: null,
            createdBy: session.user.id,
          })
          await auditOf(session, request, server, {
            accountId: null,
            action: 'operator invited',
            detail: { user_id: user.id, email: user.email },
          })
          const link = `${new URL(request.url).origin}/dashboard/link/${token}`
          return usersPage(session, { shown: { what: 'Invitation', email: user.email, link } })
        },
        (error, status) => usersPage(session, { error, status }),
      )
    })
    .post('/users/:id/reset', async ({ request, body, params, server }) => {
      const session = await d.change(request, body, OPERATOR)
      if (session instanceof Response) return session
      const user = await userOf(params.id)
      if (!user) return notFound(session)
      return orError(
        async () => {
          if (!user.active) throw badValue('this user is deactivated: reactivate them first')
          const token = await createLink(d.sql, user.id, 'reset', session.user.id)
          await auditOf(session, request, server, {
            accountId: user.account_id,
            action: 'password reset link made',
            detail: { user_id: user.id, email: user.email },
          })
          const link = `${new URL(request.url).origin}/dashboard/link/${token}`
          return usersPage(session, { shown: { what: 'Password-reset link', email: user.email, link } })
        },
        (error, status) => usersPage(session, { error, status }),
      )
    })
    .post('/users/:id/active', async ({ request, body, params, server }) => {
      const session = await d.change(request, body, OPERATOR)
      if (session instanceof Response) return session
      const user = await userOf(params.id)
      if (!user) return notFound(session)
      return orError(
        async () => {
          const active = field(body, 'active') === 'true'
          if (!active && user.id === session.user.id) throw badValue('you cannot deactivate yourself')
          await setUserActive(d.sql, user.id, active)
          await auditOf(session, request, server, {
            accountId: user.account_id,
            action: active ? 'user reactivated' : 'user deactivated',
            detail: { user_id: user.id, email: user.email },
          })
          return redirect('/dashboard/users')
        },
        (error, status) => usersPage(session, { error, status }),
      )
    })
    .get('/deliveries', async ({ request, query }) => {
      const session = await d.view(request, OPERATOR)
      return session instanceof Response ? session : deliveriesPage(session, offsetOf(query.offset))
    })
    .post('/deliveries/:id/replay', async ({ request, body, params, server }) => {
      const session = await d.change(request, body, OPERATOR)
      if (session instanceof Response) return session
      if (!/^\d{1,15}$/.test(params.id)) return notFound(session)
      const id = Number(params.id)
      return orError(
        async () => {
          const delivery = await getDelivery(d.sql, d.tz, id)
          await replayDelivery(d.sql, d.tz, id)
          eventsCommitted(d.deps)
          await auditOf(session, request, server, {
            accountId: await accountOfKey(d.sql, delivery.api_key_id),
            action: 'webhook delivery replayed',
            detail: { key_id: delivery.api_key_id, delivery_id: id },
          })
          return redirect('/dashboard/deliveries')
        },
        (error, status) => (status === 404 ? notFound(session) : deliveriesPage(session, 0, { error, status })),
      )
    })
    .get('/audit', async ({ request, query }) => {
      const session = await d.view(request, OPERATOR)
      return session instanceof Response ? session : auditPage(session, query)
    })
}
