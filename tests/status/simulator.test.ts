import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { until } from '../helpers/wait'

let t: TestApp
beforeAll(async () => {
  // Far enough apart that the first read after the send still finds it sent on a slow, busy machine.
  t = await testApp({ workers: true, env: { SIM_DELIVERED_MS: '1000', SIM_READ_MS: '1500', WEBHOOK_ALLOW_PRIVATE: 'true' } })
})
afterAll(() => t.close())

test('simulator: sent → delivered → read, with one event per change', async () => {
  const { key, keyId } = await t.account(10)
  await t.db
    .sql`insert into webhook_endpoints (api_key_id, url, signing_secret) values (${keyId}, 'https://hooks.example.com/x', 'whsec_dGVzdA==')`
  const sent = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'hi' })
  const sid = sent.body.data.message_id
  const first = await t.api('GET', `/messages/${sid}`, key)
  expect(first.body.data.status).toBe('sent')
  const read = await until(
    () => t.api('GET', `/messages/${sid}`, key),
    (r) => r.body.data.status === 'read',
  )
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
  const sent = await t.api('POST', '/messages/send', key, { to: '081234568888', body: 'hi' })
  expect(sent.status).toBe(200)
  const failed = await until(
    () => t.api('GET', `/messages/${sent.body.data.message_id}`, key),
    (r) => r.body.data.status === 'failed',
  )
  expect(failed.body.data).toMatchObject({ status: 'failed', error_code: 63016, delivered_at: null })
  // a failed message is final: the simulator's leftovers and later reports change nothing
  await Bun.sleep(900) // past the read it would have had
  expect((await t.api('GET', `/messages/${sent.body.data.message_id}`, key)).body.data.status).toBe('failed')
})
