// Idempotency-Key on the send endpoints. The first request with a key claims it (a row in state
// `running`); its answer, whatever the status, is stored and replayed to every repeat from the same
// account within 24 h. A different body or endpoint with the same key is 422
// IDEMPOTENCY_KEY_REUSED; a repeat while the first still runs is 409. Rows live in PostgreSQL, so
// every instance sees them. A request whose process died while running keeps its key answering
// 409 until the key expires: re-running it could charge twice.

import type { Sql } from '../db/client'
import { ApiError, badValue, ok } from './errors'
import { sha256Hex } from '../lib/keys'
import { log } from '../lib/log'

const MAX_KEY_LENGTH = 255

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

type Stored = { endpoint: string; fingerprint: string; state: 'running' | 'done'; response_status: number | null; response_body: string }

/** Runs `handler` at most once per (account, key); a repeat throws ReplayedAnswer with the first answer. */
export async function withIdempotency<T>(
  sql: Sql,
  accountId: number,
  key: string | null,
  endpoint: string,
  body: unknown,
  handler: () => Promise<T>,
): Promise<ReturnType<typeof ok<T>>> {
  if (key === null) return ok(await handler())
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) throw badValue(`Idempotency-Key: must be 1 to ${MAX_KEY_LENGTH} characters`)
  const fingerprint = sha256Hex(`${endpoint}\n${canonical(body)}`)

  const claimed = await sql`
    insert into idempotency_keys as k (account_id, key, endpoint, fingerprint, state)
    values (${accountId}, ${key}, ${endpoint}, ${fingerprint}, 'running')
    on conflict (account_id, key) do update
      set endpoint = excluded.endpoint, fingerprint = excluded.fingerprint, state = 'running',
          response_status = null, response_body = null, created_at = now(), completed_at = null
      where k.created_at < now() - interval '24 hours'
    returning 1`
  if (claimed.length === 0) {
    const [existing] = await sql<Stored[]>`
      select endpoint, fingerprint, state, response_status, response_body from idempotency_keys
      where account_id = ${accountId} and key = ${key}`
    if (!existing) throw new ApiError('CONFLICT', 'a request with this Idempotency-Key is in progress')
    if (existing.endpoint !== endpoint || existing.fingerprint !== fingerprint) {
      throw new ApiError('IDEMPOTENCY_KEY_REUSED', 'Idempotency-Key was already used with a different request')
    }
    if (existing.state === 'running') throw new ApiError('CONFLICT', 'a request with this Idempotency-Key is in progress')
    throw new ReplayedAnswer(existing.response_status!, existing.response_body)
  }

  let status = 200
  let stored: unknown
  let outcome: { value: ReturnType<typeof ok<T>> } | { error: unknown }
  try {
    const value = ok(await handler())
    stored = value
    outcome = { value }
  } catch (error) {
    const api = error instanceof ApiError ? error : new ApiError('INTERNAL_ERROR', 'internal error')
    status = api.status
    stored = { success: false, error: api.message, code: api.code }
    outcome = { error }
  }
  await sql`
    update idempotency_keys set state = 'done', response_status = ${status}, response_body = ${JSON.stringify(stored)}, completed_at = now()
    where account_id = ${accountId} and key = ${key}`.catch((error) => {
    // The answer still goes out; the key stays `running` (409 to repeats) rather than risk a second charge.
    log.warn('could not store idempotent answer', { error: error instanceof Error ? error.name : 'unknown' })
  })
  if ('error' in outcome) throw outcome.error
  return outcome.value
}
