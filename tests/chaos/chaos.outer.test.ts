// Outer ring (real time): the randomized fault test kills real service processes and cuts real connections while customers send.
// The randomized fault test with two fixed seeds (see scenario.ts): about a minute each, in both modes
// (in CI, one in each).
// `bun run chaos --seed N --minutes M` runs it longer, over many seeds, and prints a failing seed. A
// failing run here prints its seed and the command that replays its plan (CHAOS_SEED=N runs that seed
// alone here).

import { expect, test } from 'bun:test'
import { usingPostgres } from '../helpers/db'
import { MIN_KILLS, runChaos } from './scenario'

export const CI_SEED = 20261123
/** A second plan: another mix of operations, faults, fake rate and kill schedule. */
export const SECOND_SEED = 20261125
const FAULT_SECONDS = Number(process.env.CHAOS_SECONDS ?? 25)
// CI runs its two database modes at once, a lane each (CI_LANE, .ci/run): there each mode plays one of
// the two plans, PostgreSQL the first, which met its stalls.
const SEEDS = process.env.CHAOS_SEED
  ? [Number(process.env.CHAOS_SEED)]
  : process.env.CI_LANE
    ? [usingPostgres() ? CI_SEED : SECOND_SEED]
    : [CI_SEED, SECOND_SEED]

/** The commands that replay a seed's plan, in the mode it ran in (the database URL elided). */
export function replayCommands(seed: number, seconds: number, mode: 'embedded' | 'postgres'): string[] {
  const database = mode === 'postgres' ? 'DATABASE_URL=postgres://... ' : ''
  return [
    `${database}CHAOS_SEED=${seed} CHAOS_SECONDS=${seconds} bun test tests/chaos/chaos.outer.test.ts --timeout 60000`,
    `${database}bun run chaos --seed ${seed} --minutes 0 --seconds ${seconds}`,
  ]
}

for (const seed of SEEDS) {
  test(`seed ${seed}: crashes, provider faults, throttles and repeats leave every invariant holding`, async () => {
    const report = await runChaos({ seed, seconds: FAULT_SECONDS, log: (line) => console.log(`[chaos] ${line}`) })
    console.log(`[chaos] ${report.mode}, seed ${report.seed}: ${report.kills} kills in ${(report.ms / 1000).toFixed(1)} s`, report.stats)
    // Before the checks: a failing run's output names its seed and the commands that replay its plan.
    console.log(`[chaos] replay seed ${seed} (${report.mode}): ${replayCommands(seed, FAULT_SECONDS, report.mode).join('  or  ')}`)
    expect(report.violations).toEqual([])
    // The run must have exercised what it claims to: crashes, hand-offs, refunds, events, repeats,
    // throttles and their retries, slow answers outliving the lease, both senders (each with hand-offs
    // accepted and throttles of its own), forged callbacks refused (with another's token or the
    // forger's own), customers writing in (STOP too) and messages inside and outside their windows;
    // on PostgreSQL, lost COMMIT answers and database outages.
    expect(report.kills).toBeGreaterThanOrEqual(MIN_KILLS)
    expect(report.stats['provider hand-offs']).toBeGreaterThan(50)
    expect(report.stats['messages failed']).toBeGreaterThan(0)
    expect(report.stats['late failures refunded']).toBeGreaterThan(0)
    expect(report.stats['events']).toBeGreaterThan(0)
    expect(report.stats['idempotent repeats']).toBeGreaterThan(0)
    expect(report.stats['campaign messages']).toBeGreaterThan(0)
    expect(report.stats['throttling answers']).toBeGreaterThan(0)
    expect(report.stats['retries after a throttle']).toBeGreaterThan(0)
    expect(report.stats['slow answers past the lease']).toBeGreaterThan(0)
    expect(report.senders).toHaveLength(2)
    for (const id of report.senders) {
      // 15 for one sender on a slow machine (both CI runs on 2 cores); usually 30 or more.
      expect(report.stats[`sender ${id}: hand-offs`]).toBeGreaterThan(10)
      expect(report.stats[`sender ${id}: messages accepted`]).toBeGreaterThan(0)
    }
    // Throttled at least once (above); not each sender: on a slow machine one may never reach its rate.
    expect(report.stats['forged status callbacks refused']).toBeGreaterThan(0)
    // Forged with a tenant's own credentials (another sender's account and token): status reports for
    // the victim's messages answered changed: false, messages in its customers' names refused.
    expect(report.stats['own-secret status forgeries refused']).toBeGreaterThan(0)
    expect(report.stats['own-secret inbound forgeries refused']).toBeGreaterThan(0)
    // Customers wrote in, some STOP, racing the sends: messages inside and outside their windows.
    expect(report.stats['inbound messages written']).toBeGreaterThan(5)
    expect(report.stats['message.received events']).toBeGreaterThan(0)
    expect(report.stats['messages inside the window']).toBeGreaterThan(20)
    expect(report.stats['refused for the window (WINDOW_CLOSED)']).toBeGreaterThan(0)
    expect(report.stats["customers' STOPs"]).toBeGreaterThan(0)
    // WhatsApp templates sent while Meta changed them (templates.ts): messages charged and handed to
    // Meta, status changes taken, and the campaign run while its template was paused.
    expect(report.stats['template messages']).toBeGreaterThan(0)
    expect(report.stats['template changes by Meta (status)']).toBeGreaterThan(0)
    expect(report.stats['template campaigns run while their template was paused']).toBe(1)
    // Customers known only by a user id (user-ids.ts): a STOP refused the sends after it, a START let
    // them through again, messages went to Meta by `recipient`, some customers were linked to a phone,
    // and a twin's STOP in another portfolio stopped nothing of the first one's.
    expect(report.stats["user-id customers' STOPs"]).toBeGreaterThan(0)
    expect(report.stats['user-id sends refused before charging (RECIPIENT_OPTED_OUT)']).toBeGreaterThan(0)
    expect(report.stats['user-id sends after a START, not refused as opted out']).toBeGreaterThan(0)
    expect(report.stats['user-id messages to Meta by recipient (no to)']).toBeGreaterThan(0)
    expect(report.stats['user-id customers linked to a phone']).toBeGreaterThan(0)
    expect(report.stats["user-id sends not stopped by another portfolio's STOP of the same user id"]).toBeGreaterThan(0)
    if (report.mode === 'postgres') {
      expect(report.stats['lost COMMIT answers']).toBeGreaterThan(0)
      expect(report.stats['database outages']).toBeGreaterThan(0)
    }
  }, 300_000)
}
