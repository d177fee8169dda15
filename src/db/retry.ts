// Running a statement again after a failure. Only for statements that are safe to repeat: atomic,
// and guarded so that a second run after a first that did commit changes nothing (request tokens on
// charges, `status = 'queued'` on hand-off outcomes).

import { isUnreachable } from '../lib/no-connection'
import { systemClock, type Clock } from '../lib/clock'

const SYSTEM = systemClock()

// The connection broke (the statement may or may not have committed), a deadlock or serialization
// failure (nothing committed), the server shutting down, or the unique request token (a concurrent
// twin of the charge committed first: running again finds it).
const CONNECTION_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED', 'ECONNRESET', 'EPIPE'])

export function isTransient(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  const e = error as Error & { code?: string; constraint_name?: string }
  if (e.code && CONNECTION_CODES.has(e.code)) return true
  // Named on the month's partition (messages_p2026_11_request_token_request_item_created_at_idx), or
  // messages_request_item(_part|_legacy) on a table converted from a plain one (db/partitions.ts).
  if (e.code === '23505') return /^messages_.*request_(token_request_)?item/.test(e.constraint_name ?? '')
  return typeof e.code === 'string' && /^(40|08|57P)/.test(e.code)
}

/**
 * Whether the server rolled the transaction back for a conflict with another (a deadlock, 40P01, or a
 * serialization failure, 40001): nothing of it committed, so running it again whole is always safe.
 */
export function isRolledBack(error: unknown): boolean {
  const code = error instanceof Error ? (error as Error & { code?: string }).code : undefined
  return typeof code === 'string' && /^40/.test(code)
}

/**
 * Whether an error says the database could not be reached (a broken or refused connection, the server
 * shutting down): an outage, not a statement's own failure.
 */
export function isOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  const code = (error as Error & { code?: string }).code
  if (code && CONNECTION_CODES.has(code)) return true
  if (isUnreachable(error)) return true
  return typeof code === 'string' && /^(08|57P)/.test(code)
}

/** Runs `run`, again after a failure `retryIf` accepts, up to `attempts` times with doubling waits (on `clock`, the system's by default). */
export async function retrying<T>(
  run: () => Promise<T>,
  options: { attempts?: number; firstWaitMs?: number; retryIf?: (error: unknown) => boolean; clock?: Pick<Clock, 'sleep'> } = {},
): Promise<T> {
  const { attempts = 3, firstWaitMs = 100, retryIf = isTransient, clock = SYSTEM } = options
  for (let attempt = 1; ; attempt++) {
    try {
      return await run()
    } catch (error) {
      if (attempt >= attempts || !retryIf(error)) throw error
      await clock.sleep(firstWaitMs * 2 ** (attempt - 1))
    }
  }
}
