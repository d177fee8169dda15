// One line per request at info level: method, path, the names of the query parameters (never their
// values: a search or a phone number is personal data), status, duration, request id, and who was
// identified (an API key's account and key, the admin token, a dashboard session's user). Never a
// key, token, cookie or body. Health checks are logged at debug only: load balancers and process
// managers poll them every few seconds.

import { log } from '../lib/log'
import type { RouteKind } from './routes'

/** Who a request was identified as; set by the authentication that identified it. */
export type Identity =
  { auth: 'key'; account_id: number; key_id: number } | { auth: 'admin' } | { auth: 'session'; user_id: number; account_id?: number }

const identities = new WeakMap<Request, Identity>()

export function identify(request: Request, identity: Identity): void {
  identities.set(request, identity)
}

/**
 * Whose reads must see whose writes (db/replica.ts): an API key's or member's account, an operator,
 * the admin token; undefined when the request was not identified.
 */
export function callerOf(request: Request): string | undefined {
  const who = identities.get(request)
  if (!who) return undefined
  if (who.auth === 'admin') return 'admin'
  if (who.auth === 'key' || who.account_id !== undefined) return `account:${who.account_id}`
  return `user:${who.user_id}`
}

const MAX_PATH_CHARS = 200

// Path segments that are secrets: the one-time link that sets a dashboard password.
const SECRET_IN_PATH = /^(\/dashboard\/link\/)[^/]+/

/** The path as logged: secret segments and anything shaped like an API key replaced, long paths cut. */
export function loggedPath(pathname: string): string {
  const path = pathname.replace(SECRET_IN_PATH, '$1[redacted]').replace(/pm_[0-9A-Za-z]{8,}/g, 'pm_[redacted]')
  return path.length > MAX_PATH_CHARS ? `${path.slice(0, MAX_PATH_CHARS)}...` : path
}

/** The query's parameter names, joined by `&` (each once, in order); undefined without a query. */
export function queryNames(search: string): string | undefined {
  const names = [...new Set(new URLSearchParams(search).keys())]
    .slice(0, 20)
    // A name is the client's text too: only a plain identifier is shown.
    .map((name) => (/^[\w.[\]-]{1,40}$/.test(name) ? name : '?'))
  return names.length > 0 ? names.join('&') : undefined
}

export function logRequest(request: Request, requestId: string, status: number, durationMs: number, kind?: RouteKind): void {
  const url = new URL(request.url)
  const fields = {
    method: request.method,
    path: loggedPath(url.pathname),
    query: queryNames(url.search),
    status,
    duration_ms: Math.round(durationMs * 10) / 10,
    request_id: requestId,
    ...identities.get(request),
  }
  if (kind === 'health') log.debug('request', fields)
  else log.info('request', fields)
}
