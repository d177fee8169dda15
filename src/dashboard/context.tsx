// What every dashboard page module shares: answering with a page or a redirect, reading form
// fields, the session guard (GET: signed in, of the right role; POST: also same origin and the
// session's CSRF token), the client's address for the audit log, and how a change answers: always a
// redirect (303) to the page that shows its outcome in a flash, and for creating and money-moving
// forms exactly once (single-use form tokens, form-token.ts).

import { Elysia } from 'elysia'
import type { Deps } from '../deps'
import type { Sql, Tx } from '../db/client'
import { kind } from '../http/routes'
import { ApiError } from '../http/errors'
import { identify } from '../http/access-log'
import { clientAddressOf } from '../http/request'
import { valueOf } from '../http/values'
import { MAX_NOTE_CHARS, checkAmount, checkOptionalText } from '../lib/validate'
import { h, documentOf, type Html } from './jsx'
import { Layout } from './layout'
import { leaveFlash, takeFlashes } from './flash'
import { FORM_TOKEN, formTokenNonce, useFormToken } from './form-token'
import {
  SESSION_COOKIE,
  PAGE_HEADERS,
  cookieOf,
  csrfTokenMatches,
  loadSession,
  sameOrigin,
  type Flash,
  type Role,
  type Session,
} from './session'

/** A module's dashboard pages, under /dashboard (see routes.tsx for the guard in front of them). */
export const pageRoutes = () => new Elysia({ prefix: '/dashboard', detail: kind('page') })

type Form = Record<string, unknown>
export const field = (form: unknown, name: string): string => {
  const value = (form as Form | null)?.[name]
  return typeof value === 'string' ? value : ''
}

/** Where a change sends the browser (a path of the dashboard), and what that page shows once. */
export type Outcome = Flash & { to: string }

const ALREADY_SENT = 'This form was sent already, and what it asked for was done then. It was not done again.'

/** "1 delivery", "2 deliveries": a number with its noun. */
export const counted = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`

export const respond = (html: Html, status = 200, headers: Record<string, string> = {}) =>
  new Response(documentOf(html), { status, headers: { ...PAGE_HEADERS, ...headers } })

/** A CSV file to download (`filename`), with the pages' headers (no-store, nosniff). */
export const csvDownload = (csv: string, filename: string) =>
  new Response(csv, {
    headers: { ...PAGE_HEADERS, 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="${filename}"` },
  })
export const redirect = (to: string, cookies: string[] = []) => {
  const headers = new Headers({ ...PAGE_HEADERS, location: to })
  for (const cookie of cookies) headers.append('set-cookie', cookie)
  return new Response(null, { status: 303, headers })
}
export const notFound = (session: Session | null) =>
  respond(<Layout title="Not found" session={session} error="This page does not exist, or it is not yours to see." />, 404)
export const refused = () =>
  respond(
    <Layout title="Request refused" error="This request did not come from the dashboard's own form. Reload the page and try again." />,
    403,
  )

/** Runs `fn`; an ApiError (a rule of a service) becomes `onError(message, status)`, anything else is thrown on. */
export async function orError(fn: () => Promise<Response>, onError: (message: string, status: number) => Promise<Response> | Response) {
  try {
    return await fn()
  } catch (error) {
    if (error instanceof ApiError) return onError(error.message, error.status)
    throw error
  }
}

/** What a POST page answers when its change broke a rule (an ApiError): usually the form again. */
type Failed<T> = (message: string, status: number, found: T) => Response | Promise<Response>

type Server = { requestIP(r: Request): { address: string } | null } | null

export function dashboardContext(deps: Deps) {
  const { sql, config } = deps
  // Read once per request: the guard in front of the pages and the page itself share it.
  const sessions = new WeakMap<Request, Promise<Session | null>>()
  const sessionOf = (request: Request) => {
    let session = sessions.get(request)
    if (!session) {
      session = loadSession(sql, deps.clock, cookieOf(request, SESSION_COOKIE)).then(async (found) => {
        if (!found) return null
        identify(request, { auth: 'session', user_id: found.user.id, account_id: found.user.account_id ?? undefined })
        if (request.method === 'GET') found.flashes = await takeFlashes(sql, deps.clock, found, new URL(request.url).pathname)
        return found
      })
      sessions.set(request, session)
    }
    return session
  }
  /** A change: as view(), and it must come from the dashboard's own form. */
  async function change(request: Request, body: unknown, role?: Role): Promise<Session | Response> {
    const session = await sessionOf(request)
    if (!session) return redirect('/dashboard/sign-in')
    if (!sameOrigin(request) || !csrfTokenMatches(session.csrf, field(body, '_csrf'))) return refused()
    if (role && session.user.role !== role) return notFound(session)
    return session
  }
  /**
   * The skeleton of a POST page: the guard of `change` (signed in, the dashboard's own form, `role`),
   * then `run`, which answers with the redirect of its outcome (finish, once) or a page. A rule `run`
   * breaks (an ApiError: a field's 422, a 404, a 409) answers `failed(message, status, session)`,
   * usually the form again with what was typed and why; without `failed` it is thrown on.
   * Instead of a role, `target` finds what the change is about from the session (an account's scope,
   * a template of it), or answers itself (404); `run` and `failed` then get what it found.
   */
  function formAction(
    request: Request,
    body: unknown,
    role: Role | undefined,
    run: (session: Session) => Promise<Response>,
    failed?: Failed<Session>,
  ): Promise<Response>
  function formAction<T>(
    request: Request,
    body: unknown,
    target: (session: Session) => Promise<T | Response>,
    run: (found: T) => Promise<Response>,
    failed?: Failed<T>,
  ): Promise<Response>
  async function formAction<T>(
    request: Request,
    body: unknown,
    guard: Role | undefined | ((session: Session) => Promise<T | Response>),
    run: (found: T | Session) => Promise<Response>,
    failed?: Failed<T | Session>,
  ): Promise<Response> {
    const session = await change(request, body, typeof guard === 'function' ? undefined : guard)
    if (session instanceof Response) return session
    const found = typeof guard === 'function' ? await guard(session) : session
    if (found instanceof Response) return found
    return failed
      ? orError(
          () => run(found),
          (message, status) => failed(message, status, found),
        )
      : run(found)
  }
  /** The redirect of a change, leaving its flash (in the caller's transaction when `db` is one). */
  async function finish(session: Session, outcome: Outcome, db: Sql | Tx = sql): Promise<Response> {
    const { to, ...flash } = outcome
    if (Object.keys(flash).length > 0) await leaveFlash(db, deps.clock, session, to.split('?')[0]!, flash)
    return redirect(to)
  }
  return {
    deps,
    sql,
    config,
    tz: config.timezone,
    sessionOf,
    secure: (request: Request) =>
      request.url.startsWith('https:') ||
      (config.trustProxy && request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim() === 'https'),
    /** The client's address, for the audit log (the server's socket, or X-Forwarded-For under TRUST_PROXY). */
    addressOf: (request: Request, _server?: Server) => clientAddressOf(request, config.trustProxy),
    /** A page: the session, or the answer (sign-in redirect, or 404 for the wrong role). */
    async view(request: Request, role?: Role): Promise<Session | Response> {
      const session = await sessionOf(request)
      if (!session) return redirect('/dashboard/sign-in')
      if (role && session.user.role !== role) return notFound(session)
      return session
    },
    finish,
    /**
     * A creating or money-moving change, exactly once: `fn` runs in one transaction with the use of
     * the form's single-use token, so a form sent again is refused (a redirect to `again` saying so,
     * or `again`'s own words) and never done twice. A rule `fn` breaks (an ApiError) rolls it back, the token too: the form
     * can be corrected and sent. Everything `fn` does must go through `tx`.
     */
    async once(session: Session, body: unknown, again: string | Outcome, fn: (tx: Tx) => Promise<Outcome>): Promise<Response> {
      const nonce = formTokenNonce(session, field(body, FORM_TOKEN))
      if (!nonce) return refused()
      const done = await sql.begin(async (tx) => {
        if (!(await useFormToken(tx, deps.clock, nonce))) return null
        const outcome = await fn(tx)
        await finish(session, outcome, tx)
        return outcome
      })
      return done ? redirect(done.to) : finish(session, typeof again === 'string' ? { to: again, error: ALREADY_SENT } : again)
    },
    /** An amount of money in a form field (5000, 5,000 or 5.000); a 422 naming the field otherwise. */
    amount: (form: unknown, name: string): number => valueOf(checkAmount(field(form, name), name, config.currency)),
    /** A price typed in a form: as an amount, with the allowed range in its message. */
    price: (form: unknown, name: string): number => valueOf(checkAmount(field(form, name), name, config.currency, 'price')),
    /** An optional note in a form field: blank is null; longer than allowed is a 422, never cut. */
    note: (form: unknown, name: string): string | null => valueOf(checkOptionalText(field(form, name), name, MAX_NOTE_CHARS)),
    /** An amount as the pages write it: "5,000 IDR". */
    money: (amount: number) => `${amount.toLocaleString('en')} ${config.currency}`,
    change,
    formAction,
  }
}

export type Dashboard = ReturnType<typeof dashboardContext>
