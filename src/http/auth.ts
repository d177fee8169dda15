// API-key authentication: `Authorization: Bearer <key>` → the key's hash → its account, and the key's
// request rate. Checked on every request (no cache), so a deactivated key fails on the very next
// request from any instance.
//
// The rate is a window of one minute per key, counted in the database (api_key_windows) by the same
// statement that looks the key up: concurrent requests share that statement (group commit), so
// counting adds no statement to a request, and every instance counts in the same row. Each key's
// minute starts at its own second (its id modulo 60), so keys do not all get their quota back at
// once. A request beyond its key's limit is refused before anything else is done (429 RATE_LIMITED);
// every answer to a key's request says where it stands (draft-ietf-httpapi-ratelimit-headers).

import { Elysia } from 'elysia'
import { CONNECT_WAIT_SECONDS, type Sql } from '../db/client'
import { ApiError } from './errors'
import { identify } from './access-log'
import { looksLikeApiKey, sha256Hex } from '../lib/keys'
import { Batcher } from '../lib/batch'
import { systemClock, type Clock } from '../lib/clock'
import { nowOf } from '../db/now'
import { endSession } from '../db/end-session'

/** A key's request rate after this request: its limit per window, what is left, and seconds until the window resets. */
export type RateState = { limit: number; remaining: number; reset: number }
export type Principal = { accountId: number; keyId: number }
/** A request's key as its lookup found it, with the key's rate after this request. */
export type KeyFound = Principal & { rate: RateState }

/** The length of a rate window, in seconds. */
export const RATE_WINDOW_SECONDS = 60
/** The policy's name in the RateLimit-Policy and RateLimit headers. */
const POLICY = '"default"'

// last_used_at is written at most once a minute per key and process: a write on every request
// would make one hot row the bottleneck of every busy key.
const LAST_USED_EVERY_MS = 60_000
const lastUsedWritten = new Map<string, number>() // by key hash: ids repeat across databases

export function bearerToken(header: string | null | undefined): string {
  if (header === null || header === undefined) throw new ApiError('AUTH_MISSING_HEADER', 'Authorization header not found')
  const match = /^bearer\s+(\S+)\s*$/i.exec(header.trim())
  if (!match) throw new ApiError('AUTH_INVALID_KEY', 'Authorization must be "Bearer <API_KEY>"')
  return match[1]!
}

/** A key as its lookup found it: `position` is this request's place among its window's (1: the first), `reset` the seconds the window has left. */
type KeyRow = { id: number; account_id: number; rate_limit_per_minute: number | null; position: number; reset: number }

// Concurrent requests share one statement that finds their keys and counts them (group commit); a
// lone request waits for nobody. Rows are counted in key order, so two instances' statements never
// wait for each other's rows in opposite orders. The windows are minutes of the clock's time: one
// statement per client and clock.
// A lookup whose statement never comes back (a connection gone quiet, a row lock never released) would
// hold every later request of the process behind it: past LOOKUP_DEADLINE_MS its requests are answered
// 503 with Retry-After, its session is ended, and the next lookup goes ahead. Its counting may have
// committed (a request counted that was not served), which only errs on the safe side of a rate. Longer
// than the wait for a connection, so that an outage is waited through and answered as documented
// (CONNECT_WAIT_SECONDS): the deadline is for a statement that got its connection and never came back.
export const LOOKUP_DEADLINE_MS = CONNECT_WAIT_SECONDS * 1000 + 2_000
const lookups = new WeakMap<Sql, WeakMap<object, Batcher<string, KeyRow | undefined>>>()
function lookupKey(sql: Sql, clock: Pick<Clock, 'sqlNow'>, hash: string): Promise<KeyRow | undefined> {
  let byClock = lookups.get(sql)
  if (!byClock) lookups.set(sql, (byClock = new WeakMap()))
  let batcher = byClock.get(clock)
  if (!batcher) {
    batcher = new Batcher(
      async (hashes, signal) => {
        const now = nowOf(sql, clock)
        const lookup = sql<(Omit<KeyRow, 'position'> & { key_hash: string; used: number; counted: number })[]>`
        with input as (
          select key_hash, count(*)::int as n from unnest(${hashes}::text[]) as h(key_hash) group by key_hash
        ), found as (
          -- The minutes since the epoch, each key's starting at its own second (id % 60).
          select k.id, k.account_id, k.key_hash, k.rate_limit_per_minute, input.n,
                 floor((extract(epoch from ${now}) - k.id % 60) / 60)::bigint as window_number
          from api_keys k join input on input.key_hash = k.key_hash
          where k.key_hash = any(${hashes}::text[]) and k.active
        ), counted as (
          -- A statement that started in a window another has closed already counts in the newer one.
          insert into api_key_windows as w (api_key_id, window_number, used)
          select id, window_number, n from found order by id
          on conflict (api_key_id) do update
            set used = case when excluded.window_number > w.window_number then excluded.used else w.used + excluded.used end,
                window_number = greatest(w.window_number, excluded.window_number)
          returning api_key_id, window_number, used
        )
        select f.id, f.account_id, f.key_hash, f.rate_limit_per_minute, c.used, f.n as counted,
               ceil((c.window_number + 1) * 60 + f.id % 60 - extract(epoch from ${now}))::int as reset
        from found f join counted c on c.api_key_id = f.id`
        signal.addEventListener('abort', () => endSession(sql, lookup, 'API key lookups'), { once: true })
        const rows = await lookup
        const found = new Map(rows.map((r) => [r.key_hash, r]))
        // The requests of one key in this statement are its last `counted` of `used`, in arrival order.
        const seen = new Map<string, number>()
        return hashes.map((hash) => {
          const row = found.get(hash)
          if (!row) return undefined
          const nth = (seen.get(hash) ?? 0) + 1
          seen.set(hash, nth)
          const { id, account_id, rate_limit_per_minute, reset } = row
          return { id, account_id, rate_limit_per_minute, reset, position: row.used - row.counted + nth }
        })
      },
      {
        deadline: {
          ms: LOOKUP_DEADLINE_MS,
          // Real time, as a socket's timeout: how long the database takes to answer (status/receiver.ts).
          clock: systemClock(),
          error: () =>
            new ApiError('SERVICE_UNAVAILABLE', 'the database did not answer in time; retry shortly', 503, {}, { 'retry-after': '1' }),
        },
      },
    )
    byClock.set(clock, batcher)
  }
  return batcher.add(hash)
}

/** The key of an `Authorization` header, its account and its rate; `defaultRate` is the limit of a key without its own. */
export async function authenticate(
  sql: Sql,
  clock: Pick<Clock, 'now' | 'sqlNow'>,
  header: string | null | undefined,
  defaultRate: number,
): Promise<KeyFound & { limited: boolean }> {
  const key = bearerToken(header)
  if (!looksLikeApiKey(key)) throw new ApiError('AUTH_INVALID_KEY', 'API key is invalid or inactive')
  const hash = sha256Hex(key)
  const row = await lookupKey(sql, clock, hash)
  if (!row) throw new ApiError('AUTH_INVALID_KEY', 'API key is invalid or inactive')
  const now = clock.now().getTime()
  if ((lastUsedWritten.get(hash) ?? 0) < now - LAST_USED_EVERY_MS) {
    lastUsedWritten.set(hash, now)
    sql`update api_keys set last_used_at = ${nowOf(sql, clock)} where id = ${row.id}`.catch(() => lastUsedWritten.delete(hash))
  }
  const limit = row.rate_limit_per_minute ?? defaultRate
  return {
    accountId: row.account_id,
    keyId: row.id,
    rate: { limit, remaining: Math.max(0, limit - row.position), reset: Math.max(1, row.reset) },
    limited: row.position > limit,
  }
}

/** The draft's headers: the key's policy, and its quota left in the current window. */
export const rateLimitHeaders = (rate: RateState): Record<string, string> => ({
  'ratelimit-policy': `${POLICY};q=${rate.limit};w=${RATE_WINDOW_SECONDS}`,
  ratelimit: `${POLICY};r=${rate.remaining};t=${rate.reset}`,
})

// The shell authenticates a request before reading its body, the route's derive needs the principal
// again: one lookup per request serves both.
const byRequest = new WeakMap<Request, Promise<KeyFound>>()
const rates = new WeakMap<Request, RateState>()

/**
 * The request's key (looked up once per request), identified in the request log; a request beyond
 * its key's rate is refused here, with the headers that say when to come back.
 */
export function authenticateRequest(
  sql: Sql,
  clock: Pick<Clock, 'now' | 'sqlNow'>,
  request: Request,
  defaultRate: number,
): Promise<KeyFound> {
  let principal = byRequest.get(request)
  if (!principal) {
    principal = authenticate(sql, clock, request.headers.get('authorization'), defaultRate).then(({ limited, ...found }) => {
      identify(request, { auth: 'key', account_id: found.accountId, key_id: found.keyId })
      rates.set(request, found.rate)
      if (limited) {
        const { limit, reset } = found.rate
        throw new ApiError(
          'RATE_LIMITED',
          `this API key is over its rate of ${limit} requests a minute; retry after ${reset} s`,
          429,
          {},
          {
            'retry-after': String(reset),
            ...rateLimitHeaders(found.rate),
          },
        )
      }
      return found
    })
    byRequest.set(request, principal)
  }
  return principal
}

/** The RateLimit headers of a request whose key was found (any answer to it carries them); none otherwise. */
export function rateLimitHeadersOf(request: Request): Record<string, string> {
  const rate = rates.get(request)
  return rate ? rateLimitHeaders(rate) : {}
}

/**
 * Derives `principal` for every route registered after it in the same plugin chain: the key the shell
 * found before the route runs (http/shell.ts authenticates every API request first).
 */
export const apiKeyAuth = () =>
  new Elysia({ name: 'api-key-auth' }).derive({ as: 'scoped' }, async ({ request }) => {
    const principal = byRequest.get(request)
    if (!principal) throw new Error('an API route ran before the shell authenticated its request')
    const { accountId, keyId }: Principal = await principal
    return { principal: { accountId, keyId } }
  })
