// The delivery loop as the service runs it, on a test clock: woken by commits (the NOTIFY the statement
// that wrote the events sent, sql/0034, heard from this instance or another), never by its poll. The clock moves only by the loop's own short
// gathering pauses (see `loopClock`), never as far as its poll, so every delivery here was woken.
// (The running service end to end and its graceful stop, on real time: loop.outer.test.ts.)

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { createApp } from '../../src/app'
import { reportStatus } from '../helpers/reports'
import { startWebhookDelivery } from '../../src/workers/webhook-delivery'
import { TestClock, type Clock } from '../../src/lib/clock'

let tls: TestTls
let rx: Receiver
let t: TestApp
const clock = new TestClock()
beforeAll(async () => {
  tls = makeTestTls()
  rx = startReceiver(tls, clock)
  t = await testApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile }, clock })
}, 60_000)
afterAll(async () => {
  await t.close()
  rx.stop()
  tls.remove()
}, 30_000)

/** The pipeline's pause before a claim that follows a short one (CLAIM_GATHER_MS of webhook-delivery.ts). */
const GATHER_MS = 20

/**
 * The test clock as the loops here see it: a pause of at most GATHER_MS (the pipeline's gathering
 * before a woken claim) moves the clock on by itself; a longer sleep (the minute's poll) waits for a
 * time the clock never reaches. Every other question goes to the test clock.
 */
const loopClock: Clock = {
  now: () => clock.now(),
  monotonic: () => clock.monotonic(),
  sqlNow: () => clock.sqlNow(),
  sleep: (ms, signal) => (ms <= GATHER_MS ? clock.advance(Math.max(0, ms)) : clock.sleep(ms, signal)),
  setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
  clearTimeout: (timer) => clock.clearTimeout(timer),
  setInterval: (fn, ms) => clock.setInterval(fn, ms),
  clearInterval: (timer) => clock.clearInterval(timer),
  timeoutSignal: (ms) => clock.timeoutSignal(ms),
}

const deliveredCount = async (keyId: number) =>
  (await t.db.sql<{ n: number }[]>`select count(*)::int as n from webhook_events where api_key_id = ${keyId} and status = 'delivered'`)[0]!
    .n

describe('waking up', () => {
  // The loop here polls once a minute, a time the clock never reaches: every delivery was woken by
  // the commit (the NOTIFY its statement sent, sql/0034), not found by the poll.
  test('a commit wakes the loop at once: no waiting for the poll', async () => {
    rx.reset()
    let loop: ReturnType<typeof startWebhookDelivery> | undefined
    const deps = { ...t.deps, clock: loopClock, wake: () => loop?.wake() }
    loop = startWebhookDelivery(deps, { pollMs: 60_000 })
    // The app whose status callbacks commit the events: each commit wakes this loop.
    const service = { app: createApp(deps), config: t.config }
    const { key, keyId } = await t.account(100)
    try {
      await t.api('POST', '/webhook', key, { url: rx.url() })
      await clock.nextSleep() // the loop's first step found nothing and went to sleep
      for (let i = 0; i < 5; i++) {
        const sid = `SM${crypto.randomUUID().replaceAll('-', '')}`
        // "sent" straight in SQL so the simulator has nothing scheduled for it
        await t.db.sql`
          insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at)
          select account_id, id, ${sid}, '+6281234567890', 'x', 'sent', 1, now() from api_keys where id = ${keyId}`
        const before = rx.requests.length
        await reportStatus(service, sid, 'delivered')
        const seen = (await rx.arrived(before + 1)).length
        expect(seen).toBe(before + 1)
      }
    } finally {
      await loop.stop()
    }
    // The receiver answers before the worker records the outcome: stopped, the loop has recorded every one.
    expect(await deliveredCount(keyId)).toBe(5)
  }, 60_000)

  // Every commit of a burst announces its own events (sql/0034): the last one's too, or another instance
  // would wait for its poll.
  test.skipIf(!usingPostgres())(
    'a burst of commits: an instance woken only by NOTIFY delivers every event',
    async () => {
      rx.reset()
      // "Another instance": its loop hears NOTIFY and nothing in-process; it polls once a minute.
      const other = startWebhookDelivery({ ...t.deps, clock: loopClock }, { pollMs: 60_000 })
      const { key, keyId } = await t.account(100)
      const sids = Array.from({ length: 20 }, () => `SM${crypto.randomUUID().replaceAll('-', '')}`)
      try {
        await t.api('POST', '/webhook', key, { url: rx.url() })
        await clock.nextSleep() // its first step found nothing and it went to sleep
        await t.db.sql`
        insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at)
        select account_id, id, sid, '+6281234567890', 'x', 'sent', 1, now()
        from api_keys, unnest(${sids}::text[]) as sid where id = ${keyId}`
        // The callbacks go to the test's app, whose commits carry their NOTIFY, as every writer's do.
        await Promise.all(sids.map((sid) => reportStatus(t, sid, 'delivered')))
        await rx.arrived(sids.length)
      } finally {
        await other.stop()
      }
      // Stopped: every outcome recorded.
      expect(await deliveredCount(keyId)).toBe(sids.length)
    },
    60_000,
  )
})
