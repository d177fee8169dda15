// Public pages: sign-in (CSRF token in a cookie of its own, throttled) and the one-time link that sets
// a password; and sign-out.

import { h } from '../../dashboard/jsx'
import { Layout } from '../../dashboard/layout'
import { ApiError } from '../../http/errors'
import { identify } from '../../http/access-log'
import { randomBase62 } from '../../lib/keys'
import { type Dashboard, field, redirect, refused, respond, pageRoutes } from '../../dashboard/context'
import {
  SESSION_COOKIE,
  SIGN_IN_COOKIE,
  clearedCookie,
  cookieOf,
  csrfTokenMatches,
  endSession,
  sameOrigin,
  sessionCookie,
  signInCookie,
  startSession,
} from '../../dashboard/session'
import { MIN_PASSWORD_LENGTH, audit, setPasswordWithLink, signIn, userOfLink } from './service'

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

/** A one-time link (an invitation or a password reset) as shown once to the operator who made it, to pass on. */
export const shownLink = (request: Request, token: string, what: string, id = 'user-link') => ({
  id,
  text: `${what}: pass this link on (valid 72 hours, once). It is shown only now.`,
  value: `${new URL(request.url).origin}/dashboard/link/${token}`,
  what: 'link',
})

export function signInPages(d: Dashboard) {
  function signInPage(request: Request, options: { error?: string; status?: number; email?: string } = {}) {
    const token = randomBase62(32)
    const host = new URL(request.url).hostname
    const needsHttps = !d.secure(request) && !LOOPBACK.has(host)
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

  return pageRoutes()
    .get('/sign-in', async ({ request }) => ((await d.sessionOf(request)) ? redirect('/dashboard') : signInPage(request)))
    .post('/sign-in', async ({ request, body, server }) => {
      const expected = cookieOf(request, SIGN_IN_COOKIE)
      if (!sameOrigin(request) || !expected || !csrfTokenMatches(expected, field(body, '_csrf'))) return refused()
      const email = field(body, 'email')
      const result = await signIn(d.sql, d.deps.clock, email, field(body, 'password'), d.addressOf(request, server) ?? 'unknown')
      if (!result.ok) {
        // The same answer for unknown e-mails, wrong passwords and locked ones, apart from the lock itself.
        return result.locked
          ? signInPage(request, { error: 'Too many failed sign-ins. Try again in 15 minutes.', status: 429, email })
          : signInPage(request, { error: 'E-mail or password is not right.', status: 401, email })
      }
      const { token } = await startSession(d.sql, d.deps.clock, result.user.id)
      identify(request, { auth: 'session', user_id: result.user.id, account_id: result.user.account_id ?? undefined })
      return redirect('/dashboard', [sessionCookie(token), clearedCookie(SIGN_IN_COOKIE)])
    })
    .get('/link/:token', async ({ params }) => {
      const user = await userOfLink(d.sql, d.deps.clock, params.token)
      if (!user)
        return respond(
          <Layout
            title="Link not valid"
            error={
              'This link was used already, has expired or was replaced by a newer one. For a new one: a member asks an operator ' +
              '(Users, then "New link"); an operator with no one to ask runs `bun run admin user link EMAIL` on the server ' +
              '(or `bun run admin operator create EMAIL` for the first operator), which prints a new link.'
            }
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
      const user = await setPasswordWithLink(d.sql, d.deps.clock, params.token, password).catch((error) => {
        if (error instanceof ApiError) return null
        throw error
      })
      if (!user) return respond(<Layout title="Link not valid" error="This link was used already or has expired." />, 404)
      await audit(d.sql, { user, address: d.addressOf(request), accountId: user.account_id, action: 'password set' })
      const { token } = await startSession(d.sql, d.deps.clock, user.id)
      identify(request, { auth: 'session', user_id: user.id, account_id: user.account_id ?? undefined })
      return redirect('/dashboard', [sessionCookie(token)])
    })
    .post('/sign-out', async ({ request, body }) => {
      const session = await d.change(request, body)
      if (session instanceof Response) return session
      await endSession(d.sql, session.tokenHash)
      return redirect('/dashboard/sign-in', [clearedCookie(SESSION_COOKIE)])
    })
}
