// Other instances, and this one's own delivery worker, hear of new message.status events by NOTIFY on
// `webhook_events`, sent with the commit of the statement that wrote them (sql/0034): whatever the
// service's configuration, on PostgreSQL and on the embedded database alike. The status workers (the
// simulator's reports, parked reports) are stepped on a test clock; each step's commit is heard exactly
// once (a NOTIFY is awaited as an event, never for a while).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { eventWakes, type EventWakes } from '../helpers/event-wakes'
import { reportStatus } from '../helpers/reports'
import { simulatorReports } from '../../src/workers/simulator-reports'
import { parkedReports } from '../../src/workers/parked-reports'
import type { Deps } from '../../src/deps'
import type { Worker } from '../../src/workers/worker'
import { TestClock } from '../../src/lib/clock'

/** One step of a worker with the given deps (t.runWorker uses the test's own). */
function step(worker: Worker, deps: Deps): Promise<number> {
  return worker.runOnce(deps)
}

describe('NOTIFY from the status workers', () => {
  let t: TestApp
  let onPostgres: Deps
  let wakes: EventWakes
  const clock = new TestClock()
  beforeAll(async () => {
    t = await testApp({ env: { SIM_DELIVERED_MS: '0', SIM_READ_MS: '86400000' }, clock })
    // The tests' configuration names no database URL; a service on PostgreSQL has one. Both notify.
    onPostgres = { ...t.deps, config: { ...t.config, databaseUrl: t.db.url } }
    wakes = await eventWakes(t.db)
  }, 60_000)
  afterAll(async () => {
    await wakes.stop()
    await t.close()
  })

  async function keyWithWebhook() {
    const { key, keyId } = await t.account(1000, { price: 100 })
    await t.db
      .sql`insert into webhook_endpoints (api_key_id, url, signing_secret) values (${keyId}, 'https://hooks.example.com/x', 'whsec_dGVzdA==')`
    return { key, keyId }
  }

  /** Runs one step of the worker; the NOTIFYs its commit sent. */
  async function notifiesOf(step: () => Promise<number>) {
    const before = await wakes.settled()
    expect(await step()).toBeGreaterThan(0)
    return (await wakes.settled()) - before
  }

  test('the simulator reports worker', async () => {
    const { key } = await keyWithWebhook()
    for (const deps of [t.deps, onPostgres]) {
      expect((await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'hi' })).status).toBe(200)
      // The simulator's report is due SIM_DELIVERED_MS (0) after the hand-off, which times it by the
      // database's now(): the clock is brought up to the present (it never waits).
      await clock.advanceTo(Date.now())
      expect(await notifiesOf(() => step(simulatorReports, deps))).toBe(1)
    }
  })

  test('the parked reports worker', async () => {
    const { keyId } = await keyWithWebhook()
    for (const deps of [t.deps, onPostgres]) {
      const sid = `SM${crypto.randomUUID().replaceAll('-', '')}`
      // Its SID is not stored yet: the report is parked.
      expect(await reportStatus(t, sid, 'delivered')).toEqual({ changed: false })
      expect([...(await t.db.sql`select status from parked_reports where message_sid = ${sid}`)]).toEqual([{ status: 'delivered' }])
      await t.db.sql`
        insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at)
        select account_id, id, ${sid}, '+6281234567890', 'x', 'sent', 100, now() from api_keys where id = ${keyId}`
      expect(await notifiesOf(() => step(parkedReports, deps))).toBe(1)
      const events = await t.db.sql`select 1 from webhook_events e join messages m on m.id = e.message_id where m.message_sid = ${sid}`
      expect(events).toHaveLength(1)
    }
  })
})
