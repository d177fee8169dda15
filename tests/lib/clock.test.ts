// The test clock: time stands still until the test moves it; timers fire in order as it passes; run()
// lets code sleep as long as it wants; SQL takes the clock's time (db/now.ts) under a test clock and the
// database's own under the system clock.

import { expect, test } from 'bun:test'
import { systemClock, TestClock } from '../../src/lib/clock'
import { nowOf } from '../../src/db/now'
import { testDatabase } from '../helpers/db'

test('time stands still until advanced; timers fire in order of their due time, each continuation before the next', async () => {
  const clock = new TestClock(Date.UTC(2026, 5, 1, 12, 0, 0))
  const seen: string[] = []
  clock.setTimeout(() => seen.push(`b@${clock.now().toISOString().slice(11, 19)}`), 2_000)
  clock.setTimeout(() => seen.push(`a@${clock.now().toISOString().slice(11, 19)}`), 1_000)
  const cleared = clock.setTimeout(() => seen.push('never'), 1_500)
  clock.clearTimeout(cleared)
  void clock.sleep(1_500).then(() => seen.push('slept'))
  expect(clock.now().toISOString()).toBe('2026-06-01T12:00:00.000Z')
  await clock.advance(1_999)
  expect(seen).toEqual(['a@12:00:01', 'slept'])
  await clock.advance(1)
  expect(seen).toEqual(['a@12:00:01', 'slept', 'b@12:00:02'])
  expect(clock.monotonic()).toBe(2_000)
})

test('intervals repeat; a sleep ends early when its signal aborts; timeoutSignal aborts on the clock', async () => {
  const clock = new TestClock()
  let beats = 0
  const interval = clock.setInterval(() => beats++, 100)
  await clock.advance(350)
  expect(beats).toBe(3)
  clock.clearInterval(interval)
  await clock.advance(1_000)
  expect(beats).toBe(3)
  const controller = new AbortController()
  const slept = clock.sleep(60_000, controller.signal)
  controller.abort()
  await slept
  const signal = clock.timeoutSignal(500)
  await clock.advance(499)
  expect(signal.aborted).toBe(false)
  await clock.advance(1)
  expect(signal.aborted).toBe(true)
})

test('run() advances to each sleep the code reaches, and only as far as it sleeps', async () => {
  const clock = new TestClock(0)
  const start = clock.monotonic()
  async function retries() {
    for (const wait of [100, 200, 400]) await clock.sleep(wait)
    return clock.monotonic() - start
  }
  expect(await clock.run(retries())).toBe(700)
  // A guard racing an answer that comes first never fires.
  let fired = false
  clock.setTimeout(() => (fired = true), 10_000)
  expect(await clock.run(Promise.resolve('answer'))).toBe('answer')
  expect(fired).toBe(false)
  await expect(clock.run(clock.sleep(2_000), 1_000)).rejects.toThrow('still waiting after 1000 ms')
})

test("SQL's now: the clock's time under a test clock, the database's own under the system clock", async () => {
  const db = await testDatabase()
  try {
    const clock = new TestClock(Date.UTC(2030, 0, 2, 3, 4, 5))
    const [stubbed] = await db.sql<{ t: Date }[]>`select ${nowOf(db.sql, clock)} as t`
    expect(stubbed!.t.toISOString()).toBe('2030-01-02T03:04:05.000Z')
    const before = Date.now()
    const [real] = await db.sql<{ t: Date }[]>`select ${nowOf(db.sql, systemClock())} as t`
    expect(Math.abs(real!.t.getTime() - before)).toBeLessThan(60_000)
  } finally {
    await db.drop()
  }
}, 60_000)
