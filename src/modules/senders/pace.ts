// The pace of one sender, shared by every instance on the database (sql/0018_pace.sql, 0032): slots are
// reserved in one short statement each (concurrent reservations share it: a group commit) and waited
// for outside any transaction. A throttling answer lowers the sender's rate, which climbs back by itself.

import type { Sql } from '../../db/client'
import { Batcher } from '../../lib/batch'
import type { Pace, Throttle } from '../../providers/provider'
import type { Clock } from '../../lib/clock'

/**
 * The share of its rate the pace uses: its slots are exact, but the timers that wait for them fire
 * late, and a provider counting a sliding second would see a late message and an on-time one as one
 * too many. Each process also spaces its own hand-offs by the step, measured when they actually go
 * (`go`), so lateness can only slow it down. What is left is the provider's own clock: requests that
 * leave evenly can still arrive bunched, and the margin keeps such a bunch under the limit.
 */
export const PACE_MARGIN = 0.98

/** How many hand-offs a process may send early to catch up after its timers ran late (see go). */
const BURST = 2

/** A reservation: wait `waitMs`, then go (`slot`), or ask again (the recipient's gap, or a single send's bound). */
export type Take = { waitMs: number; slot: boolean }

export type Pacer = {
  /** Reserves a slot for a message to `phone`. */
  take(phone: string): Promise<Take>
  /**
   * A single send's slot, if it comes within `maxWaitMs`: the wait, or null with nothing reserved and
   * `wouldWaitMs` saying when to try again.
   */
  takeWithin(phone: string, maxWaitMs: number): Promise<{ waitMs: number } | { waitMs: null; wouldWaitMs: number }>
  /**
   * Right before a hand-off: keeps this process's hand-offs, as they actually leave, at the pace's
   * rate (a late timer cannot bunch them beyond a small catch-up).
   */
  go(): Promise<void>
  /** Tells the pace about a throttling answer for a message to `phone`. */
  throttled(throttle: Throttle, phone: string, retryAfterMs: number): Promise<void>
  readonly pace: Pace
}

export function createPacer(sql: Sql, sender: string, pace: Pace, clock: Clock): Pacer {
  const ceiling = pace.perSecond * PACE_MARGIN
  const taker = new Batcher<string, Take>(async (phones) => {
    const rows = await sql<Take[]>`
      select wait_ms as "waitMs", slot from pace_take(${sender}, ${ceiling}, ${pace.recipientGapMs}, ${phones}::text[], null, ${clock.sqlNow()}::timestamptz)`
    return rows.map((r) => ({ waitMs: r.waitMs, slot: r.slot }))
  })
  // Single sends' slots, bounded: concurrent ones share a statement too (the sender's row is locked by
  // each, so one statement per send would queue every send behind that lock). The batch's bound is the
  // smallest of its sends' (they differ by the moments between their requests).
  const boundedTaker = new Batcher<{ phone: string; maxWaitMs: number }, Take>(async (items) => {
    const maxWaitMs = Math.min(...items.map((i) => i.maxWaitMs))
    const rows = await sql<Take[]>`
      select wait_ms as "waitMs", slot
      from pace_take(${sender}, ${ceiling}, ${pace.recipientGapMs}, ${items.map((i) => i.phone)}::text[], ${maxWaitMs}, ${clock.sqlNow()}::timestamptz)`
    return rows.map((r) => ({ waitMs: r.waitMs, slot: r.slot }))
  })
  // GCRA: `due` is when the next hand-off is due at the rate; one may go up to BURST steps early, so
  // hand-offs delayed by a late timer catch up with a bunch of at most BURST + 1 (within the margin),
  // and no second ever holds more than the rate and that bunch.
  const stepMs = 1000 / ceiling
  let due = 0
  let gate: Promise<void> = Promise.resolve()
  return {
    pace,
    take: (phone) => taker.add(phone),
    go() {
      gate = gate.then(async () => {
        const waitMs = due - BURST * stepMs - clock.monotonic()
        if (waitMs > 0) await clock.sleep(waitMs)
        due = Math.max(due, clock.monotonic()) + stepMs
      })
      return gate
    },
    async takeWithin(phone, maxWaitMs) {
      const until = clock.now().getTime() + maxWaitMs
      for (;;) {
        const row = await boundedTaker.add({ phone, maxWaitMs: Math.max(0, until - clock.now().getTime()) })
        if (row.slot) return { waitMs: row.waitMs }
        // Its recipient is within its gap: ask again when it is free, if that is within the bound.
        if (clock.now().getTime() + row.waitMs > until) return { waitMs: null, wouldWaitMs: row.waitMs }
        await clock.sleep(row.waitMs)
      }
    },
    async throttled(throttle, phone, retryAfterMs) {
      await sql`select pace_throttled(${sender}, ${ceiling}, ${throttle.scope}, ${phone}, ${Math.round(retryAfterMs)}, ${clock.sqlNow()}::timestamptz)`
    },
  }
}
