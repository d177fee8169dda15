// The operator's users pages: the users (invite an operator, a new one-time link for whoever lost
// theirs, deactivate and reactivate) and the audit log. 404 for members.

import { h } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, field, notFound, orError, respond, counted, pageRoutes } from '../../dashboard/context'
import {
  Field,
  FormProblem,
  FormToken,
  PagedTable,
  formState,
  offsetOf,
  offsetPager,
  PAGE_SIZE,
  type FormState,
} from '../../dashboard/components'
import type { Session } from '../../dashboard/session'
import { ApiError, badValue } from '../../http/errors'
import { formatTimestamp } from '../../lib/time'
import { shownLink } from './sign-in-pages'
import { MAX_EMAIL_CHARS, audit, createUser, getUser, listAudit, listUsersWithAccounts, reissueLink, setUserActive } from './service'

type Server = Parameters<Dashboard['addressOf']>[1]

export function userPages(d: Dashboard) {
  const auditOf = (
    db: Parameters<typeof audit>[0],
    session: Session,
    request: Request,
    server: Server,
    entry: { accountId: number | null; action: string; detail: Record<string, unknown> },
  ) => audit(db, { user: session.user, address: d.addressOf(request, server), ...entry })

  // ---- users
  async function usersPage(session: Session, options: { error?: string; status?: number; state?: FormState } = {}) {
    const users = await listUsersWithAccounts(d.sql)
    return respond(
      <Layout title="Users" session={session} error={options.error}>
        <p class="muted">
          Someone who lost their one-time link gets a new one with <strong>New link</strong>: an invitation while they never set a password,
          a password reset once they have. The link before it stops working.
        </p>
        <PagedTable
          columns={[
            { header: 'E-mail', cell: (u) => u.email, class: 'wrap' },
            { header: 'Role', cell: (u) => u.role },
            {
              header: 'Account',
              cell: (u) =>
                u.account_id === null ? (
                  <span class="muted">every account</span>
                ) : (
                  <a href={`/dashboard/accounts/${u.account_id}`}>{u.account_name ?? `#${u.account_id}`}</a>
                ),
            },
            {
              header: 'State',
              cell: (u) => (
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
              ),
            },
            {
              header: 'One-time link',
              cell: (u) =>
                u.active ? (
                  <form method="post" action={`/dashboard/users/${u.id}/link`}>
                    <Csrf session={session} />
                    <FormToken session={session} />
                    <button class="secondary" type="submit" aria-label={`Make a new link for ${u.email}`}>
                      New link
                    </button>
                  </form>
                ) : null,
            },
          ]}
          rows={users}
        />
        <h2>Invite an operator</h2>
        <form class="inline card" method="post" action="/dashboard/users/invites">
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={options.state} form="operator" />
          <Field
            state={options.state}
            form="operator"
            name="email"
            label="E-mail of the new operator"
            type="email"
            required
            maxlength={MAX_EMAIL_CHARS}
          />
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
        <PagedTable
          columns={[
            { header: 'When', cell: (row) => formatTimestamp(row.at, d.tz), class: 'nowrap' },
            { header: 'Who', cell: (row) => row.actor, class: 'wrap' },
            { header: 'From', cell: (row) => row.address ?? '', phone: false },
            {
              header: 'Account',
              cell: (row) => (row.account_id === null ? '' : <a href={`/dashboard/accounts/${row.account_id}`}>#{row.account_id}</a>),
            },
            { header: 'Action', cell: (row) => row.action },
            { header: 'Detail', cell: (row) => (row.detail === '{}' ? '' : <code>{row.detail}</code>), class: 'wrap detail' },
          ]}
          rows={log.items}
          pager={offsetPager(
            'Pages of the audit log',
            offset,
            log.total,
            (at) => `/dashboard/audit?${accountId === null ? '' : `account=${accountId}&`}offset=${at}`,
          )}
        />
      </Layout>,
      accountValid ? 200 : 422,
    )
  }

  const OPERATOR = 'operator' as const
  return pageRoutes()
    .get('/users', async ({ request }) => {
      const session = await d.view(request, OPERATOR)
      return session instanceof Response ? session : usersPage(session)
    })
    .post('/users/invites', async ({ request, body, server }) => {
      const session = await d.change(request, body, OPERATOR)
      if (session instanceof Response) return session
      return orError(
        () =>
          d.once(session, body, '/dashboard/users', async (tx) => {
            const { user, token } = await createUser(tx, d.deps.clock, {
              email: field(body, 'email'),
              role: 'operator',
              accountId: null,
              createdBy: session.user.id,
            })
            await auditOf(tx, session, request, server, {
              accountId: null,
              action: 'operator invited',
              detail: { user_id: user.id, email: user.email },
            })
            return { to: '/dashboard/users', shown: shownLink(request, token, `Invitation for ${user.email}`) }
          }),
        (message, status) => usersPage(session, { state: formState('operator', body, ['email'], message), status }),
      )
    })
    .post('/users/:id/link', async ({ request, body, params, server }) => {
      const session = await d.change(request, body, OPERATOR)
      if (session instanceof Response) return session
      const user = await userOf(params.id)
      if (!user) return notFound(session)
      return orError(
        () =>
          d.once(session, body, '/dashboard/users', async (tx) => {
            const { kind, token } = await reissueLink(tx, d.deps.clock, user.id, session.user.id)
            await auditOf(tx, session, request, server, {
              accountId: user.account_id,
              action: kind === 'invite' ? 'invitation link made' : 'password reset link made',
              detail: { user_id: user.id, email: user.email },
            })
            const what = kind === 'invite' ? `A new invitation for ${user.email}` : `Password-reset link for ${user.email}`
            return { to: '/dashboard/users', shown: shownLink(request, token, what) }
          }),
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
          await setUserActive(d.sql, d.deps.clock, user.id, active)
          await auditOf(d.sql, session, request, server, {
            accountId: user.account_id,
            action: active ? 'user reactivated' : 'user deactivated',
            detail: { user_id: user.id, email: user.email },
          })
          return d.finish(session, {
            to: '/dashboard/users',
            notice: active
              ? `${user.email} is active again and can sign in.`
              : `${user.email} is deactivated: their sessions ended and their links stopped working.`,
          })
        },
        (error, status) => usersPage(session, { error, status }),
      )
    })
    .get('/audit', async ({ request, query }) => {
      const session = await d.view(request, OPERATOR)
      return session instanceof Response ? session : auditPage(session, query)
    })
}
