// The randomized fault test with a fixed seed (see scenario.ts): about a minute, in both modes.
// `bun run chaos --seed N --minutes M` runs it longer, over many seeds, and prints a failing seed.

import { expect, test } from 'bun:test'
import { MIN_KILLS, runChaos } from './scenario'

export const CI_SEED = 20261123
const FAULT_SECONDS = Number(process.env.CHAOS_SECONDS ?? 25)

test(`seed ${CI_SEED}: crashes, provider faults and repeats leave every invariant holding`, async () => {
  const report = await runChaos({ seed: CI_SEED, seconds: FAULT_SECONDS, log: (line) => console.log(`[chaos] ${line}`) })
  console.log(`[chaos] ${report.mode}, seed ${report.seed}: ${report.kills} kills in ${(report.ms / 1000).toFixed(1)} s`, report.stats)
  expect(report.violations).toEqual([])
  // The run must have exercised what it claims to: crashes, hand-offs, refunds, events, repeats.
  expect(report.kills).toBeGreaterThanOrEqual(MIN_KILLS)
  expect(report.stats['provider hand-offs']).toBeGreaterThan(50)
  expect(report.stats['messages failed']).toBeGreaterThan(0)
  expect(report.stats['late failures refunded']).toBeGreaterThan(0)
  expect(report.stats['events']).toBeGreaterThan(0)
  expect(report.stats['idempotent repeats']).toBeGreaterThan(0)
  expect(report.stats['campaign messages']).toBeGreaterThan(0)
}, 300_000)
