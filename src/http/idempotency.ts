// Idempotency-Key on the send endpoints. The first request with a key claims it (a row in state
// `running`, with the token its charges will carry); its answer, whatever the status, is stored and
// replayed to every repeat from the same account within 24 h. A different body or endpoint with the
// same key is 422 IDEMPOTENCY_KEY_REUSED; a repeat while the first still runs is 409. Rows live in
// PostgreSQL, so every instance sees them.
//
// Recovery (Stripe's recovery points): if the first request died (the process crashed, its answer
// could not be stored), a repeat runs the request again with the first one's token, once nothing of
// it is still in progress: its charged messages all have an outcome (recovery hands over or refunds
// them), or it charged nothing and is older than STALE_AFTER_SECONDS. Run again, the charge finds
// the first charge and the hand-off finds each outcome, so the repeat gets the final answer and is
// charged nothing.
//
// A 409 CONFLICT from the handler is not an answer either: it says some of the request's messages are
// still being handed over elsewhere (recovery holds them, or they wait in quarantine). It is not
// stored, so a repeat answers 409 while they are queued and then runs again to answer how each one
// ended.

import type { Sql } from '../db/client'
import type { Clock } from '../lib/clock'
import { nowOf } from '../db/now'
import { ApiError, badValue, ok } from './errors'
import { sha256Hex } from '../lib/keys'
import { log, errorKind } from '../lib/log'
import { isOutage, isTransient, retrying } from '../db/retry'
import { isUnreachable } from '../lib/no-connection'

const MAX_KEY_LENGTH = 255
/** An Idempotency-Key replays its answer for 24 h; after that its row is only history (the retention worker deletes it). */
export const IDEMPOTENCY_KEY_TTL_HOURS = 24
/** Tries to store an answer (100 ms, then doubling: about 12 s in all) before the request is answered 503. */
const STORE_ATTEMPTS = 8
/** A running key that has charged nothing after this long belongs to a request that died before charging. */
const STALE_AFTER_SECONDS = 30

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** Thrown to answer with a stored response; the shell's error mapping sends it as it is. */
export class ReplayedAnswer extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super('replayed')
  }
}

type Stored = {
  endpoint: string
  fingerprint: string
  state: 'running' | 'done'
  response_status: number | null
  response_body: string
  request_token: string | null
  stale: boolean
}

/**
 * Runs `handler` at most once per (account, key); a repeat throws ReplayedAnswer with the first answer.
 * `handler` gets the request token its charges must carry: a UUIDv7 of `clock`'s time, which its
 * messages take as their created_at (ledger/service.ts, tokenTime).
 */
export async function withIdempotency<T>(
  sql: Sql,
  clock: Clock,
  accountId: number,
  key: string | null,
  endpoint: string,
  body: unknown,
  handler: (requestToken: string) => Promise<T>,
  /** The HTTP status of a successful answer, stored for its replays (200 unless it says otherwise). */
  statusOf: (answer: T) => number = () => 200,
): Promise<ReturnType<typeof ok<T>>> {
  if (key === null) return ok(await handler(Bun.randomUUIDv7('hex', clock.now())))
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) throw badValue(`Idempotency-Key: must be 1 to ${MAX_KEY_LENGTH} characters`)
  const fingerprint = sha256Hex(`${endpoint}\n${canonical(body)}`)

  const now = nowOf(sql, clock)
  const claimed = await sql<{ request_token: string }[]>`
    insert into idempotency_keys as k (account_id, key, endpoint, fingerprint, state, request_token, created_at)
    values (${accountId}, ${key}, ${endpoint}, ${fingerprint}, 'running', ${Bun.randomUUIDv7('hex', clock.now())}, ${now})
    on conflict (account_id, key) do update
      set endpoint = excluded.endpoint, fingerprint = excluded.fingerprint, state = 'running', request_token = excluded.request_token,
          response_status = null, response_body = null, created_at = ${now}, completed_at = null
      where k.created_at < ${now} - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})
    returning request_token`
  if (claimed.length > 0) return run(claimed[0]!.request_token)

  const [existing] = await sql<Stored[]>`
    select endpoint, fingerprint, state, response_status, response_body, request_token,
           created_at < ${nowOf(sql, clock)} - make_interval(secs => ${STALE_AFTER_SECONDS}) as stale
    from idempotency_keys where account_id = ${accountId} and key = ${key}`
  const inProgress = () => new ApiError('CONFLICT', 'a request with this Idempotency-Key is in progress')
  if (!existing) throw inProgress()
  if (existing.endpoint !== endpoint || existing.fingerprint !== fingerprint) {
    throw new ApiError('IDEMPOTENCY_KEY_REUSED', 'Idempotency-Key was already used with a different request')
  }
  if (existing.state === 'done') throw new ReplayedAnswer(existing.response_status!, existing.response_body)
  if (!existing.request_token) throw inProgress()
  const [progress] = await sql<{ charged: number; pending: number }[]>`
    select count(*)::int as charged, (count(*) filter (where status = 'queued' and quarantined_at is null))::int as pending
    from messages where request_token = ${existing.request_token}`
  if (progress!.pending > 0 || (progress!.charged === 0 && !existing.stale)) throw inProgress()
  return run(existing.request_token)

  async function run(requestToken: string): Promise<ReturnType<typeof ok<T>>> {
    let value: ReturnType<typeof ok<T>>
    try {
      value = ok(await handler(requestToken))
    } catch (error) {
      // An answer of ours (402, 422, 502...) is the request's answer: store it. An unexpected failure
      // is not, nor a 409 (its messages are still being handed over elsewhere): the key stays running,
      // and a repeat recovers the request once its work is over. The request id is not stored: a
      // replay carries the id of the request it answers (http/shell.ts).
      if (error instanceof ApiError && error.code !== 'CONFLICT') {
        await store(error.status, { success: false, error: error.message, code: error.code, ...error.fields })
      }
      throw error
    }
    await store(statusOf(value.data), value)
    return value
  }

  // The answer goes out only once it is stored: a repeat must get this very answer, and one run
  // again (recovered) can differ from it (entries the first run refused for a closed window or an
  // opt-out come back CONFLICT). Tried again through a short outage (the update is safe to repeat: a
  // first run that did commit leaves the key done, and the second changes nothing); still failing, the
  // request is answered 503 instead, the key stays running, and a repeat recovers the request.
  async function store(status: number, answer: unknown): Promise<void> {
    const stored = await retrying(
      () => sql<{ stored: number }[]>`
        update idempotency_keys set state = 'done', response_status = ${status}, response_body = ${JSON.stringify(answer)}, completed_at = ${nowOf(sql, clock)}
        where account_id = ${accountId} and key = ${key} and state = 'running'
        returning 1 as stored`,
      // Not after a wait for a connection that ran out (CONNECT_WAIT_SECONDS): that was the outage's share.
      { attempts: STORE_ATTEMPTS, clock, retryIf: (error) => !isUnreachable(error) && (isOutage(error) || isTransient(error)) },
    ).catch((error) => {
      log.warn('could not store idempotent answer', { error: errorKind(error) })
      throw new ApiError(
        'SERVICE_UNAVAILABLE',
        'the answer to this request could not be recorded; repeat it with the same Idempotency-Key to get it',
        503,
        {},
        { 'retry-after': '1' },
      )
    })
    if (stored.length > 0) return
    // The key is done already: a repeat recovered the request while this run's store waited (an outage,
    // a slow connection), or a first try did commit and only its answer was lost. The stored answer is
    // the key's answer, this run's too: two answers to one key never differ.
    const [done] = await sql<{ response_status: number; response_body: string }[]>`
      select response_status, response_body from idempotency_keys where account_id = ${accountId} and key = ${key} and state = 'done'`
    if (done) throw new ReplayedAnswer(done.response_status, done.response_body)
  }
}
