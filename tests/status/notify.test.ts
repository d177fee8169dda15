// On PostgreSQL, other instances hear of new message.status events by NOTIFY on `webhook_events`. The
// status workers (the simulator's reports, parked reports) send it with their own commit; a service
// without a database URL in its configuration (the embedded database) sends none. On a test clock,
// each worker stepped; a NOTIFY is awaited as an event, never for a while.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'
import { reportStatus } from '../helpers/reports'
import { simulatorReports } from '../../src/workers/simulator-reports'
import { parkedReports } from '../../src/workers/parked-reports'
import type { Deps } from '../../src/deps'
import type { Worker } from '../../src/workers/worker'
import { TestClock } from '../../src/lib/clock'

/** The payload of the test's own NOTIFY, sent after a step's commit (the service's are empty). */
const MARK = 'test-mark'

/** One step of a worker with the given deps (t.runWorker uses the test's own). */
function step(worker: Worker, deps: Deps): Promise<number> {
  return worker.runOnce(deps)
}

describe.skipIf(!usingPostgres())('NOTIFY from the status workers (PostgreSQL)', () => {
  let t: TestApp
  let onPostgres: Deps
  const heard: string[] = []
  let marked: (() => void) | undefined
  let unlisten: () => Promise<void>
  const clock = new TestClock()
  beforeAll(async () => {
    t = await testApp({ env: { SIM_DELIVERED_MS: '0', SIM_READ_MS: '86400000' }, clock })
    // The tests' configuration names no database URL; a service on PostgreSQL has one.
    onPostgres = { ...t.deps, config: { ...t.config, databaseUrl: t.db.url } }
    const listener = await t.db.sql.listen('webhook_events', (payload) => {
      if (payload === MARK) marked?.()
      else heard.push(payload)
    })
    unlisten = () => listener.unlisten()
  }, 60_000)
  afterAll(async () => {
    await unlisten()
    await t.close()
  })

  async function keyWithWebhook() {
    const { key, keyId } = await t.account(1000, { price: 100 })
    await t.db
      .sql`insert into webhook_endpoints (api_key_id, url, signing_secret) values (${keyId}, 'https://hooks.example.com/x', 'whsec_dGVzdA==')`
    return { key, keyId }
  }

  /** Runs one step of the worker with `deps`; the NOTIFYs it sent. */
  async function notifiesOf(step: () => Promise<number>) {
    const before = heard.length
    expect(await step()).toBeGreaterThan(0)
    // A NOTIFY of the test's own, sent after the step's commit: notifications arrive in commit order,
    // so once it is heard, any of the step's has been.
    const mark = new Promise<void>((resolve) => (marked = resolve))
    await t.db.sql.notify('webhook_events', MARK)
    await mark
    return heard.length - before
  }

  test('the simulator reports worker', async () => {
    const { key } = await keyWithWebhook()
    for (const deps of [t.deps, onPostgres]) {
      expect((await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'hi' })).status).toBe(200)
      // The simulator's report is due SIM_DELIVERED_MS (0) after the hand-off, which times it by the
      // database's now(): the clock is brought up to the present (it never waits).
      await clock.advanceTo(Date.now())
      const heardNow = await notifiesOf(() => step(simulatorReports, deps))
      expect(heardNow).toBe(deps === onPostgres ? 1 : 0)
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
      const heardNow = await notifiesOf(() => step(parkedReports, deps))
      expect(heardNow).toBe(deps === onPostgres ? 1 : 0)
      const events = await t.db.sql`select 1 from webhook_events e join messages m on m.id = e.message_id where m.message_sid = ${sid}`
      expect(events).toHaveLength(1)
    }
  })
})
