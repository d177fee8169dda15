// The simulator's reports, applied by steps of its worker on a test clock.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { TestClock } from '../../src/lib/clock'

const DELIVERED_MS = 1000
const READ_MS = 1500
const clock = new TestClock()
let t: TestApp
beforeAll(async () => {
  t = await testApp({ env: { SIM_DELIVERED_MS: String(DELIVERED_MS), SIM_READ_MS: String(READ_MS), WEBHOOK_ALLOW_PRIVATE: 'true' }, clock })
})
afterAll(() => t.close())

/**
 * `ms` pass after a hand-off, and the worker steps. The clock is first brought up to the present, if
 * behind it (a hand-off may time its reports by the database's now()), then moved `ms` on.
 */
async function after(ms: number) {
  await clock.advanceTo(Date.now())
  await clock.advance(ms)
  await t.runWorker('simulator-reports')
}

test('simulator: sent → delivered → read, with one event per change', async () => {
  const { key, keyId } = await t.account(10)
  await t.db
    .sql`insert into webhook_endpoints (api_key_id, url, signing_secret) values (${keyId}, 'https://hooks.example.com/x', 'whsec_dGVzdA==')`
  const sent = await clock.run(t.api('POST', '/messages/send', key, { to: '081234567890', body: 'hi' }))
  const sid = sent.body.data.message_id
  const first = await t.api('GET', `/messages/${sid}`, key)
  expect(first.body.data.status).toBe('sent')
  await after(READ_MS)
  const read = await t.api('GET', `/messages/${sid}`, key)
  expect(read.body.data).toMatchObject({ status: 'read', delivered_at: expect.any(String), read_at: expect.any(String) })
  const events = await t.db.sql<{ payload: string }[]>`select payload from webhook_events where api_key_id = ${keyId} order by id`
  expect(events.map((e) => JSON.parse(e.payload).data)).toEqual([
    { message_sid: sid, to: '+6281234567890', status: 'delivered', previous_status: 'sent', error_code: null, error_message: null },
    { message_sid: sid, to: '+6281234567890', status: 'read', previous_status: 'delivered', error_code: null, error_message: null },
  ])
  const payload = JSON.parse(events[0]!.payload)
  expect(Object.keys(payload)).toEqual(['event', 'timestamp', 'data'])
  expect(payload.event).toBe('message.status')
  expect(payload.timestamp).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
})

test('simulator: a number ending in 8888 is accepted, then reported failed with 63016', async () => {
  const { key } = await t.account(10)
  const sent = await clock.run(t.api('POST', '/messages/send', key, { to: '081234568888', body: 'hi' }))
  expect(sent.status).toBe(200)
  await after(DELIVERED_MS)
  const failed = await t.api('GET', `/messages/${sent.body.data.message_id}`, key)
  expect(failed.body.data).toMatchObject({ status: 'failed', error_code: 63016, delivered_at: null })
  // a failed message is final: the simulator's leftovers and later reports change nothing
  await after(READ_MS) // past the read it would have had
  expect((await t.api('GET', `/messages/${sent.body.data.message_id}`, key)).body.data.status).toBe('failed')
})
