// The pace of one sender, shared by every instance on the database (sql/0018_pace.sql): slots are
// reserved in one short statement each (concurrent reservations share it: a group commit) and waited
// for outside any transaction. A throttling answer halves the sender's rate, which climbs back by itself.

import type { Sql } from '../../db/client'
import { Batcher } from '../../lib/batch'
import type { Pace, Throttle } from '../../providers/provider'

export type Pacer = {
  /** Reserves a slot for a message to `phone`; resolves with how long to wait for it (ms). */
  take(phone: string): Promise<number>
  /**
   * A single send's slot, if it comes within `maxWaitMs`: the wait, or null with nothing reserved and
   * `wouldWaitMs` saying when to try again.
   */
  takeWithin(phone: string, maxWaitMs: number): Promise<{ waitMs: number } | { waitMs: null; wouldWaitMs: number }>
  /** Tells the pace about a throttling answer for a message to `phone`. */
  throttled(throttle: Throttle, phone: string, retryAfterMs: number): Promise<void>
  readonly pace: Pace
}

export function createPacer(sql: Sql, sender: string, pace: Pace): Pacer {
  const taker = new Batcher<string, number>(async (phones) => {
    const rows = await sql<{ wait_ms: number }[]>`
      select wait_ms from pace_take(${sender}, ${pace.perSecond}, ${pace.recipientGapMs}, ${phones}::text[], null)`
    return rows.map((r) => r.wait_ms)
  })
  return {
    pace,
    take: (phone) => taker.add(phone),
    async takeWithin(phone, maxWaitMs) {
      const [row] = await sql<{ wait_ms: number; reserved: boolean }[]>`
        select wait_ms, reserved from pace_take(${sender}, ${pace.perSecond}, ${pace.recipientGapMs}, ${[phone]}::text[], ${maxWaitMs})`
      return row!.reserved ? { waitMs: row!.wait_ms } : { waitMs: null, wouldWaitMs: row!.wait_ms }
    },
    async throttled(throttle, phone, retryAfterMs) {
      await sql`select pace_throttled(${sender}, ${pace.perSecond}, ${throttle.scope}, ${phone}, ${Math.round(retryAfterMs)})`
    },
  }
}
