// The simulator's traffic rules, as WhatsApp's: a sender's rate (SIM_RATE_PER_SECOND: beyond it Meta's
// 130429 "Rate limit hit") and a gap per recipient (SIM_RECIPIENT_GAP_MS: within it 131056, the pair
// rate). Both are throttles: the message is not refused, it is to be tried again after `retryAfterMs`.
// The counters live in the database (sql/0017_simulator_rules.sql, 0033), so the rules hold across every
// instance on one PostgreSQL; one short statement per hand-off, and none when neither rule is set. The
// time they count by is the clock's (the database's own in production).

import type { Sql } from '../../db/client'
import type { Clock } from '../../lib/clock'
import type { HandoffResult } from '../provider'

/** Meta's codes for a sender over its rate and for too many messages to one recipient. */
export const RATE_LIMIT_CODE = 130429
export const PAIR_RATE_CODE = 131056

/**
 * The rules, and the sender the counters are kept for: `simulator` for the deployment's default sender,
 * `simulator:<number>` for a stored one (each number has its own rate, as with WhatsApp).
 */
export type Rules = { ratePerSecond: number; recipientGapMs: number; sender: string }

/** null when the message may go now (and it is counted), else the throttling answer. */
export async function admit(
  sql: Sql,
  clock: Pick<Clock, 'sqlNow'>,
  rules: Rules,
  to: string,
): Promise<(HandoffResult & { ok: false }) | null> {
  if (rules.ratePerSecond === 0 && rules.recipientGapMs === 0) return null
  let answer: { refused: 'rate' | 'gap' | null; wait_ms: number } | undefined
  try {
    const rows = await sql<{ refused: 'rate' | 'gap' | null; wait_ms: number }[]>`
      select refused, wait_ms from simulator_admit(${rules.sender}, ${rules.ratePerSecond}, ${to}, ${rules.recipientGapMs}, ${clock.sqlNow()}::timestamptz)`
    answer = rows[0]
  } catch {
    return { ok: false, errorCode: null, errorMessage: 'simulator could not read its rate counters' }
  }
  if (!answer?.refused) return null
  if (answer.refused === 'rate') {
    return {
      ok: false,
      errorCode: RATE_LIMIT_CODE,
      errorMessage: `(#130429) Rate limit hit: the simulator takes ${rules.ratePerSecond} messages per second (SIM_RATE_PER_SECOND)`,
      throttle: { scope: 'sender', retryAfterMs: answer.wait_ms },
    }
  }
  return {
    ok: false,
    errorCode: PAIR_RATE_CODE,
    errorMessage:
      '(#131056) (Business Account, Consumer Account) pair rate limit hit: the simulator sends one message every ' +
      `${rules.recipientGapMs} ms to a recipient (SIM_RECIPIENT_GAP_MS)`,
    throttle: { scope: 'recipient', retryAfterMs: answer.wait_ms },
  }
}
