// The dashboard at /dashboard: server-rendered pages, plain forms, post-redirect-get. Two groups:
// public pages (sign-in, the one-time link that sets a password, the stylesheet) and pages behind
// the session guard. Members see their own account only: it comes from the session, never from the
// URL. Operators see every account. Pages call the same services as the admin API.

import { Elysia } from 'elysia'
import type { Deps } from '../deps'
import { ApiError } from '../http/errors'
import { h, Fragment, documentOf, type Html } from './jsx'
import { Csrf, Layout } from './layout'
import css from './assets/style.css' with { type: 'text' }
import {
  SESSION_COOKIE,
  SIGN_IN_COOKIE,
  PAGE_HEADERS,
  clearedCookie,
  cookieOf,
  csrfTokenMatches,
  endSession,
  loadSession,
  sameOrigin,
  sessionCookie,
  signInCookie,
  startSession,
  type Session,
} from './session'
import { MIN_PASSWORD_LENGTH, audit, createUser, listUsers, setPasswordWithLink, signIn, userOfLink } from '../modules/users/service'
import { changeBalance, createAccount, createKey, getAccount, listKeys, setKeyActive } from '../modules/admin/service'
import { randomBase62 } from '../lib/keys'

void Fragment

type Form = Record<string, unknown>
const field = (form: unknown, name: string): string => {
  const value = (form as Form | null)?.[name]
  return typeof value === 'string' ? value : ''
}
const integerField = (form: unknown, name: string): number => {
  const text = field(form, name).trim()
  if (!/^\d{1,15}$/.test(text)) throw new ApiError('VALIDATION_ERROR', `${name}: must be a whole number`, 422)
  return Number(text)
}

const respond = (html: Html, status = 200, headers: Record<string, string> = {}) =>
  new Response(documentOf(html), { status, headers: { ...PAGE_HEADERS, ...headers } })
const redirect = (to: string, cookies: string[] = []) => {
  const headers = new Headers({ ...PAGE_HEADERS, location: to })
  for (const cookie of cookies) headers.append('set-cookie', cookie)
  return new Response(null, { status: 303, headers })
}
const notFound = (session: Session | null) =>
  respond(<Layout title="Not found" session={session} error="This page does not exist, or it is not yours to see." />, 404)
const refused = () =>
  respond(
    <Layout title="Request refused" error="This request did not come from the dashboard's own form. Reload the page and try again." />,
    403,
  )

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

export function dashboardRoutes(deps: Deps) {
  const { sql, config } = deps
  const tz = config.timezone
  const secure = (request: Request) =>
    request.url.startsWith('https:') || (config.trustProxy && request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim() === 'https')
  const addressOf = (request: Request, server: { requestIP(r: Request): { address: string } | null } | null) =>
    (config.trustProxy ? request.headers.get('x-forwarded-for')?.split(',')[0]?.trim() : undefined) ??
    server?.requestIP(request)?.address ??
    null

  /** The session of the request, or null. */
  const sessionOf = (request: Request) => loadSession(sql, cookieOf(request, SESSION_COOKIE))

  /** A state-changing request of a signed-in user: same origin and the session's form token. */
  async function guardPost(request: Request, body: unknown): Promise<Session | Response> {
    const session = await sessionOf(request)
    if (!session) return redirect('/dashboard/sign-in')
    if (!sameOrigin(request) || !csrfTokenMatches(session.csrf, field(body, '_csrf'))) return refused()
    return session
  }

  function signInPage(request: Request, options: { error?: string; status?: number; email?: string } = {}) {
    const token = randomBase62(32)
    const host = new URL(request.url).hostname
    const needsHttps = !secure(request) && !LOOPBACK.has(host)
    return respond(
      <Layout title="Sign in" error={options.error}>
        <div class="card sign-in">
          {needsHttps ? (
            <p class="notice error" role="alert">
              This address is plain HTTP. The dashboard's session cookie is only sent over HTTPS, so signing in here cannot work: open the
              dashboard through https:// (TLS_CERT_FILE and TLS_KEY_FILE, or a TLS proxy with TRUST_PROXY=true).
            </p>
          ) : null}
          <form class="stack" method="post" action="/dashboard/sign-in">
            <input type="hidden" name="_csrf" value={token} />
            <label>
              E-mail
              <input type="email" name="email" autocomplete="username" required value={options.email ?? ''} />
            </label>
            <label>
              Password
              <input type="password" name="password" autocomplete="current-password" required />
            </label>
            <button type="submit">Sign in</button>
          </form>
        </div>
      </Layout>,
      options.status ?? 200,
      { 'set-cookie': signInCookie(token) },
    )
  }

  const publicPages = new Elysia({ prefix: '/dashboard' })
    .get(
      '/assets/style.css',
      () => new Response(css, { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600' } }),
    )
    .get('/sign-in', async ({ request }) => ((await sessionOf(request)) ? redirect('/dashboard') : signInPage(request)))
    .post('/sign-in', async ({ request, body, server }) => {
      const expected = cookieOf(request, SIGN_IN_COOKIE)
      if (!sameOrigin(request) || !expected || !csrfTokenMatches(expected, field(body, '_csrf'))) return refused()
      const email = field(body, 'email')
      const result = await signIn(sql, email, field(body, 'password'), addressOf(request, server) ?? 'unknown')
      if (!result.ok) {
        // The same answer for unknown e-mails, wrong passwords and locked ones, apart from the lock itself.
        return result.locked
          ? signInPage(request, { error: 'Too many failed sign-ins. Try again in 15 minutes.', status: 429, email })
          : signInPage(request, { error: 'E-mail or password is not right.', status: 401, email })
      }
      const { token } = await startSession(sql, result.user.id)
      return redirect('/dashboard', [sessionCookie(token), clearedCookie(SIGN_IN_COOKIE)])
    })
    .get('/link/:token', async ({ params }) => {
      const user = await userOfLink(sql, params.token)
      if (!user)
        return respond(
          <Layout
            title="Link not valid"
            error="This link was used already, has expired or was replaced by a newer one. Ask an operator for a new one."
          />,
          404,
        )
      return respond(
        <Layout title="Set your password">
          <div class="card sign-in">
            <p>
              For <strong>{user.email}</strong>. At least {MIN_PASSWORD_LENGTH} characters.
            </p>
            <form class="stack" method="post" action={`/dashboard/link/${params.token}`}>
              <label>
                New password
                <input type="password" name="password" autocomplete="new-password" minlength={MIN_PASSWORD_LENGTH} required />
              </label>
              <button type="submit">Set password and sign in</button>
            </form>
          </div>
        </Layout>,
      )
    })
    .post('/link/:token', async ({ request, params, body }) => {
      // The link's token is the secret here; the origin check keeps other sites from posting to it.
      if (!sameOrigin(request)) return refused()
      const password = field(body, 'password')
      if (password.length < MIN_PASSWORD_LENGTH) {
        return respond(<Layout title="Set your password" error={`The password must be at least ${MIN_PASSWORD_LENGTH} characters.`} />, 422)
      }
      const user = await setPasswordWithLink(sql, params.token, password).catch((error) => {
        if (error instanceof ApiError) return null
        throw error
      })
      if (!user) return respond(<Layout title="Link not valid" error="This link was used already or has expired." />, 404)
      await audit(sql, { user, address: null, accountId: user.account_id, action: 'password set' })
      const { token } = await startSession(sql, user.id)
      return redirect('/dashboard', [sessionCookie(token)])
    })

  const pages = new Elysia({ prefix: '/dashboard' })
    .get('', async ({ request }) => {
      const session = await sessionOf(request)
      if (!session) return redirect('/dashboard/sign-in')
      if (session.user.role === 'operator') return redirect('/dashboard/accounts')
      const account = await getAccount(sql, tz, session.user.account_id!)
      return respond(
        <Layout title="Overview" session={session}>
          <div class="stats">
            <div class="card stat">
              <div class="value">{account.wa_balance.toLocaleString('en')}</div>
              <div class="label">Balance ({config.currency})</div>
            </div>
            <div class="card stat">
              <div class="value">{account.cost_per_message.toLocaleString('en')}</div>
              <div class="label">Price per message</div>
            </div>
            <div class="card stat">
              <div class="value">{Math.floor(account.wa_balance / account.cost_per_message).toLocaleString('en')}</div>
              <div class="label">Messages the balance pays for</div>
            </div>
          </div>
        </Layout>,
      )
    })
    .post('/sign-out', async ({ request, body }) => {
      const session = await guardPost(request, body)
      if (session instanceof Response) return session
      await endSession(sql, session.tokenHash)
      return redirect('/dashboard/sign-in', [clearedCookie(SESSION_COOKIE)])
    })
    .get('/keys', async ({ request }) => {
      const session = await sessionOf(request)
      if (!session) return redirect('/dashboard/sign-in')
      if (session.user.role !== 'member') return notFound(session)
      return keysPage(session)
    })
    .post('/keys', async ({ request, body, server }) => {
      const session = await guardPost(request, body)
      if (session instanceof Response) return session
      if (session.user.role !== 'member') return notFound(session)
      try {
        const key = await createKey(sql, tz, session.user.account_id!, { label: field(body, 'label') })
        await audit(sql, {
          user: session.user,
          address: addressOf(request, server),
          accountId: key.account_id,
          action: 'key created',
          detail: { key_id: key.id, label: key.label },
        })
        return keysPage(session, { created: key })
      } catch (error) {
        if (error instanceof ApiError) return keysPage(session, { error: error.message, status: error.status })
        throw error
      }
    })
    .post('/keys/:id/active', async ({ request, body, params, server }) => {
      const session = await guardPost(request, body)
      if (session instanceof Response) return session
      if (session.user.role !== 'member') return notFound(session)
      const id = Number(params.id)
      const keys = await listKeys(sql, tz, session.user.account_id!)
      if (!Number.isSafeInteger(id) || !keys.items.some((k) => k.id === id)) return notFound(session)
      const active = field(body, 'active') === 'true'
      await setKeyActive(sql, tz, id, active)
      await audit(sql, {
        user: session.user,
        address: addressOf(request, server),
        accountId: session.user.account_id,
        action: active ? 'key activated' : 'key deactivated',
        detail: { key_id: id },
      })
      return redirect('/dashboard/keys')
    })
    .get('/accounts', async ({ request, query }) => {
      const session = await sessionOf(request)
      if (!session) return redirect('/dashboard/sign-in')
      if (session.user.role !== 'operator') return notFound(session)
      return accountsPage(session, typeof query.q === 'string' ? query.q : '')
    })
    .post('/accounts', async ({ request, body, server }) => {
      const session = await guardPost(request, body)
      if (session instanceof Response) return session
      if (session.user.role !== 'operator') return notFound(session)
      try {
        const opening = field(body, 'balance').trim() === '' ? 0 : integerField(body, 'balance')
        const account = await createAccount(sql, tz, { name: field(body, 'name'), balance: opening, createdBy: session.user.id })
        await audit(sql, {
          user: session.user,
          address: addressOf(request, server),
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
      const session = await sessionOf(request)
      if (!session) return redirect('/dashboard/sign-in')
      if (session.user.role !== 'operator') return notFound(session)
      return accountPage(session, params.id)
    })
    .post('/accounts/:id/topups', async ({ request, body, params, server }) => {
      const session = await guardPost(request, body)
      if (session instanceof Response) return session
      if (session.user.role !== 'operator') return notFound(session)
      const id = Number(params.id)
      try {
        const amount = integerField(body, 'amount')
        const note = field(body, 'note').trim().slice(0, 200) || null
        await changeBalance(sql, id, 'topup', amount, note, session.user.id)
        await audit(sql, {
          user: session.user,
          address: addressOf(request, server),
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
      const session = await guardPost(request, body)
      if (session instanceof Response) return session
      if (session.user.role !== 'operator') return notFound(session)
      const id = Number(params.id)
      try {
        const { user, token } = await createUser(sql, {
          email: field(body, 'email'),
          role: 'member',
          accountId: id,
          createdBy: session.user.id,
        })
        await audit(sql, {
          user: session.user,
          address: addressOf(request, server),
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

  async function keysPage(session: Session, options: { created?: { key: string; label: string }; error?: string; status?: number } = {}) {
    const keys = await listKeys(sql, tz, session.user.account_id!)
    return respond(
      <Layout title="API keys" session={session} error={options.error}>
        {options.created ? (
          <div class="card" role="status">
            <p>
              The new key <strong>{options.created.label}</strong>. Copy it now: it is shown only this once.
            </p>
            <code class="secret" id="new-key">
              {options.created.key}
            </code>
          </div>
        ) : null}
        <form class="inline card" method="post" action="/dashboard/keys">
          <Csrf session={session} />
          <label>
            Label
            <input name="label" required maxlength={200} />
          </label>
          <button type="submit">Create key</button>
        </form>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Label</th>
                <th scope="col">Prefix</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {keys.items.map((k) => (
                <tr>
                  <td>{k.label}</td>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td>{k.created_at}</td>
                  <td>{k.last_used_at ?? 'never'}</td>
                  <td>
                    <form method="post" action={`/dashboard/keys/${k.id}/active`}>
                      <Csrf session={session} />
                      <input type="hidden" name="active" value={k.active ? 'false' : 'true'} />
                      {k.active ? 'active ' : 'inactive '}
                      <button class="secondary" type="submit" aria-label={`${k.active ? 'Deactivate' : 'Activate'} key ${k.label}`}>
                        {k.active ? 'Deactivate' : 'Activate'}
                      </button>
                    </form>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Layout>,
      options.status ?? 200,
    )
  }

  async function accountsPage(session: Session, search: string, options: { error?: string; status?: number } = {}) {
    const term = search.trim().slice(0, 100)
    const rows = await sql<{ id: number; name: string; balance: number }[]>`
      select id, name, balance from accounts
      where ${term === '' ? sql`true` : sql`name ilike ${`%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`}`}
      order by id desc limit 200`
    return respond(
      <Layout title="Accounts" session={session} error={options.error}>
        <form class="inline card" method="get" action="/dashboard/accounts" role="search">
          <label>
            Search by name
            <input type="search" name="q" value={term} />
          </label>
          <button type="submit">Search</button>
        </form>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Account</th>
                <th scope="col">Balance</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((a) => (
                <tr>
                  <td>
                    <a href={`/dashboard/accounts/${a.id}`}>{a.name}</a> <span class="muted">#{a.id}</span>
                  </td>
                  <td>{a.balance.toLocaleString('en')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <h2>New account</h2>
        <form class="stack card" method="post" action="/dashboard/accounts">
          <Csrf session={session} />
          <label>
            Name
            <input name="name" required maxlength={200} />
          </label>
          <label>
            Opening balance ({config.currency})
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
    const account = await getAccount(sql, tz, id).catch((error) => {
      if (error instanceof ApiError && error.code === 'NOT_FOUND') return null
      throw error
    })
    if (!account) return notFound(session)
    const members = await listUsers(sql, id)
    return respond(
      <Layout title={account.name} session={session} error={options.error}>
        <div class="stats">
          <div class="card stat">
            <div class="value">{account.wa_balance.toLocaleString('en')}</div>
            <div class="label">Balance ({config.currency})</div>
          </div>
          <div class="card stat">
            <div class="value">{account.cost_per_message.toLocaleString('en')}</div>
            <div class="label">Price per message</div>
          </div>
        </div>
        <h2>Top up</h2>
        <form class="inline card" method="post" action={`/dashboard/accounts/${id}/topups`}>
          <Csrf session={session} />
          <label>
            Amount ({config.currency})
            <input name="amount" inputmode="numeric" pattern="[0-9]*" required />
          </label>
          <label>
            Note
            <input name="note" maxlength={200} />
          </label>
          <button type="submit">Top up</button>
        </form>
        <h2>Members</h2>
        {options.invite ? (
          <div class="card" role="status">
            <p>
              Invitation for <strong>{options.invite.email}</strong>: pass this link on (valid 72 hours, once). It is shown only now.
            </p>
            <code class="secret" id="invite-link">
              {options.invite.link}
            </code>
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

  return new Elysia({ name: 'dashboard' }).use(publicPages).use(pages)
}
