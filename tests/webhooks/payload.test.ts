// The bytes of a webhook body: compact JSON in the spec's field order (no spaces from the database's
// JSON output), strings escaped as JSON.stringify does, a failure's `refunded` after the spec's fields;
// test events the same. Events stored before
// bodies were compact are still sent exactly as stored, and verify. On a test clock: the delivery
// worker is stepped (deliverAll), each step ending when what it sent is recorded.

import { afterAll, afterEach, beforeAll, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { testApp, type TestApp } from '../helpers/app'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { deliverAll } from '../helpers/delivery'
import { applyStatuses } from '../../src/modules/status/machine'
import { reportStatus } from '../helpers/reports'
import { TestClock } from '../../src/lib/clock'

let t: TestApp
let rx: Receiver
beforeAll(async () => {
  rx = startReceiver(null)
  t = await testApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' }, clock: new TestClock() })
}, 60_000)
afterAll(async () => {
  await t.close()
  rx.stop()
}, 30_000)
afterEach(() => rx.reset())

async function keyWithUrl() {
  const { key, keyId } = await t.account(100)
  const registered = await t.api('POST', '/webhook', key, { url: rx.url('127.0.0.1') })
  expect(registered.status).toBe(200)
  return { key, keyId, secret: registered.body.data.signing_secret as string }
}

const TIMESTAMP = /^\{"event":"message\.status","timestamp":"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})"/

test('a status event: compact JSON in the spec order, byte for byte, with any text escaped as JSON.stringify does', async () => {
  const { key, secret } = await keyWithUrl()
  const sent = await (t.deps.clock as TestClock).run(t.api('POST', '/messages/send', key, { to: '081234567890', body: 'hi' }))
  const sid: string = sent.body.data.message_id
  const errorMessage = 'Undeliverable: "blocked" \\ by carrier – ünï 😀\n\ttab \u0001'
  await reportStatus(t, sid, 'delivered')
  // The failure through the statement itself (applyStatuses, as the receiver runs it): providers turn
  // control characters in an error text into spaces, and this test pins how the statement escapes any text.
  await applyStatuses(t.db.sql, t.config.timezone, [{ sid, status: 'failed', errorCode: 63016, errorMessage }], { clock: t.deps.clock })
  expect(await deliverAll(t)).toBe(2)
  const [first, second] = rx.requests
  const expected = (timestamp: string, data: Record<string, unknown>) =>
    JSON.stringify({ event: 'message.status', timestamp, data: { message_sid: sid, to: '+6281234567890', ...data } })
  expect(first!.body).toBe(
    expected(TIMESTAMP.exec(first!.body)![1]!, { status: 'delivered', previous_status: 'sent', error_code: null, error_message: null }),
  )
  expect(second!.body).toBe(
    expected(TIMESTAMP.exec(second!.body)![1]!, {
      status: 'failed',
      previous_status: 'delivered',
      error_code: 63016,
      error_message: errorMessage,
      refunded: true,
    }),
  )
  for (const r of [first!, second!]) expect(() => new Webhook(secret).verify(r.body, r.headers)).not.toThrow()
})

test('a failure says whether it was refunded, after error_message: false when its price keeps late failures charged', async () => {
  const { key, keyId, secret } = await keyWithUrl()
  const [{ account_id }] = await t.db.sql<[{ account_id: number }]>`select account_id from api_keys where id = ${keyId}`
  const kept = await t.admin('PUT', '/price', { cost_per_message: 5, account_id, refund_late_failures: false })
  expect(kept.body.data.refund_late_failures).toBe(false)
  const sent = await (t.deps.clock as TestClock).run(t.api('POST', '/messages/send', key, { to: '081234567890', body: 'hi' }))
  const sid: string = sent.body.data.message_id
  await reportStatus(t, sid, 'failed', { errorCode: 63016, errorMessage: 'Message failed' })
  expect(await deliverAll(t)).toBe(1)
  const [received] = rx.requests
  const timestamp = TIMESTAMP.exec(received!.body)![1]!
  expect(received!.body).toBe(
    `{"event":"message.status","timestamp":"${timestamp}","data":{"message_sid":"${sid}","to":"+6281234567890","status":"failed",` +
      `"previous_status":"sent","error_code":63016,"error_message":"Message failed","refunded":false}}`,
  )
  expect(() => new Webhook(secret).verify(received!.body, received!.headers)).not.toThrow()
})

test('a test event: the same shape, compact, with data.test last', async () => {
  const { keyId, secret } = await keyWithUrl()
  const queued = await t.admin('POST', `/keys/${keyId}/webhook/test`)
  expect(queued.status).toBe(201)
  expect(queued.body.data).toEqual({
    id: expect.any(Number),
    webhook_id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
    url: rx.url('127.0.0.1'),
  })
  expect(await deliverAll(t)).toBe(1)
  const [received] = rx.requests
  const timestamp = TIMESTAMP.exec(received!.body)![1]!
  expect(received!.body).toBe(
    `{"event":"message.status","timestamp":"${timestamp}","data":{"message_sid":"test","to":"test","status":"delivered",` +
      `"previous_status":"sent","error_code":null,"error_message":null,"test":true}}`,
  )
  expect(received!.headers['webhook-id']).toBe(queued.body.data.webhook_id)
  expect(() => new Webhook(secret).verify(received!.body, received!.headers)).not.toThrow()
  // Signed, not sent: the same body, headers that verify, and nothing recorded.
  const signed = await t.admin('POST', `/keys/${keyId}/webhook/test`, { deliver: false })
  expect(signed.status).toBe(200)
  expect(signed.body.data.body).toMatch(/^\{"event":"message\.status","timestamp":"[^"]+","data":\{"message_sid":"test",.*"test":true\}\}$/)
  expect(() => new Webhook(secret).verify(signed.body.data.body, signed.body.data.headers)).not.toThrow()
  expect(signed.body.data.headers['webhook-id']).toBe(signed.body.data.webhook_id)
  const [count] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from webhook_events where api_key_id = ${keyId}`
  expect(count!.n).toBe(1)
})

test('an event stored before bodies were compact is sent exactly as stored, and verifies', async () => {
  const { keyId, secret } = await keyWithUrl()
  // What the status machine stored until migration 0011: json_build_object's text, with its spaces
  // (stored now on the test's clock, so due now).
  const [stored] = await t.db.sql<{ payload: string; webhook_id: string }[]>`
    insert into webhook_events (webhook_id, api_key_id, message_id, next_attempt_at, created_at, payload)
    values ('msg_' || md5(random()::text), ${keyId}, null, ${t.deps.clock.now()}, ${t.deps.clock.now()}, json_build_object(
      'event', 'message.status', 'timestamp', '2025-01-31 10:00:00',
      'data', json_build_object('message_sid', 'SMold', 'to', '+6281234567890', 'status', 'delivered',
        'previous_status', 'sent', 'error_code', null, 'error_message', null))::text)
    returning payload, webhook_id`
  expect(stored!.payload).toContain('" : ')
  expect(await deliverAll(t)).toBe(1)
  const [received] = rx.requests
  expect(received!.body).toBe(stored!.payload)
  expect(received!.headers['webhook-id']).toBe(stored!.webhook_id)
  expect(() => new Webhook(secret).verify(received!.body, received!.headers)).not.toThrow()
  const delivered = await t.admin('GET', `/keys/${keyId}/deliveries`)
  expect(delivered.body.data.items[0]?.status).toBe('delivered')
  expect(delivered.body.data.items[0].payload.data.message_sid).toBe('SMold')
})
