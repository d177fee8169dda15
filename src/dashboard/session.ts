// Dashboard sessions, after OWASP's session management cheat sheet: a 256-bit random token in a
// `__Host-` cookie (HttpOnly, Secure, SameSite=Strict, Path=/), only its SHA-256 in the database, a
// new one at every sign-in, 30 minutes idle and 12 hours at most. Plus CSRF checks (Fetch metadata
// or Origin, and a per-session token in every form) and the headers every page carries.

import type { Sql } from '../db/client'
import { nowOf } from '../db/now'
import type { Clock } from '../lib/clock'
import { constantTimeEqual, randomBase62, sha256Hex } from '../lib/keys'

export const SESSION_COOKIE = '__Host-session'
/** Before sign-in there is no session: the sign-in form's CSRF token rides in its own cookie. */
export const SIGN_IN_COOKIE = '__Host-sign-in'
export const IDLE_MINUTES = 30
export const ABSOLUTE_HOURS = 12

/** Who may use the dashboard: an operator (every account) or a member (one account). */
export type Role = 'operator' | 'member'
/** A dashboard user as a session knows them (modules/users manages them). */
export type User = { id: number; email: string; role: Role; account_id: number | null; active: boolean }

/** What a change left for the next page to show once (flash.ts). */
export type Flash = {
  notice?: string
  error?: string
  /** A link after the error: where to look instead (a path of the dashboard). */
  link?: { href: string; text: string }
  /** A secret shown only this once: the element that holds it (`id`), the sentence before it, and what the copy button copies. */
  shown?: { id: string; text: string; value: string; what: string }
  /** What a page shows of its own (the contact import's report). */
  report?: unknown
}

export type Session = {
  user: User
  csrf: string
  tokenHash: string
  /** The key of this session's flashes, derived from the cookie's token (never stored). */
  flashKey: Uint8Array<ArrayBuffer>
  /** The flashes waiting for this request's page (read by GET requests only). */
  flashes: Flash[]
}

export async function startSession(sql: Sql, clock: Clock, userId: number): Promise<{ token: string; csrf: string }> {
  const token = randomBase62(43)
  const csrf = randomBase62(32)
  const now = nowOf(sql, clock)
  await sql`
    insert into sessions (token_hash, user_id, csrf_token, created_at, last_seen_at)
    values (${sha256Hex(token)}, ${userId}, ${csrf}, ${now}, ${now})`
  return { token, csrf }
}

/** The session of a cookie value, renewed for another idle period; null if unknown, expired or its user deactivated. */
export async function loadSession(sql: Sql, clock: Clock, token: string | undefined): Promise<Session | null> {
  if (!token || token.length > 100) return null
  const tokenHash = sha256Hex(token)
  const now = nowOf(sql, clock)
  const [row] = await sql<(User & { csrf_token: string })[]>`
    update sessions s set last_seen_at = ${now}
    from users u
    where s.token_hash = ${tokenHash} and u.id = s.user_id and u.active
      and s.last_seen_at > ${now} - make_interval(mins => ${IDLE_MINUTES})
      and s.created_at > ${now} - make_interval(hours => ${ABSOLUTE_HOURS})
    returning u.id, u.email, u.role, u.account_id, u.active, s.csrf_token`
  if (!row) return null
  const { csrf_token, ...user } = row
  return { user, csrf: csrf_token, tokenHash, flashKey: flashKeyOf(token), flashes: [] }
}

/**
 * The AES key of a session's flashes: an HMAC of the cookie's token, so only the browser holding the
 * cookie can have its flashes opened (the database holds only the token's SHA-256, which does not give it).
 */
const flashKeyOf = (token: string) => new Uint8Array(new Bun.CryptoHasher('sha256', token).update('dashboard flash').digest())

export async function endSession(sql: Sql, tokenHash: string): Promise<void> {
  await sql`delete from sessions where token_hash = ${tokenHash}`
}

export function sessionCookie(token: string): string {
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=${ABSOLUTE_HOURS * 3600}`
}
export const clearedCookie = (name: string) => `${name}=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0`
export const signInCookie = (token: string) => `${SIGN_IN_COOKIE}=${token}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=3600`

export function cookieOf(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=')
    if (key === name) return value.join('=')
  }
  return undefined
}

/**
 * Whether a state-changing request comes from the dashboard itself: Sec-Fetch-Site same-origin (every
 * current browser sends it), else an Origin equal to the request's own; a request with neither is
 * refused. The form's token is checked separately (`csrfTokenMatches`).
 */
export function sameOrigin(request: Request): boolean {
  const site = request.headers.get('sec-fetch-site')
  if (site) return site === 'same-origin'
  const origin = request.headers.get('origin')
  if (!origin) return false
  try {
    return new URL(origin).host === new URL(request.url).host
  } catch {
    return false
  }
}

export const csrfTokenMatches = (expected: string, given: unknown) => typeof given === 'string' && constantTimeEqual(expected, given)

/** Headers of every dashboard answer (OWASP): no inline scripts, no framing, no caching of signed-in pages. */
export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
}
