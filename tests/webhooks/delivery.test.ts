// The delivery worker against a real HTTPS receiver on loopback (a CA made for this file, passed as
// WEBHOOK_CA_FILE). runOnce() is driven by hand; waits are replaced by moving next_attempt_at in SQL.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { testApp, type TestApp } from '../helpers/app'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { applyStatus, type ReportedStatus } from '../../src/modules/status/machine'
import { MAX_ATTEMPTS, RETRY_DELAYS_S, runOnce } from '../../src/workers/webhook-delivery'
import { parseRetryAfter, signPayload } from '../../src/modules/webhooks/delivery'
import type { Config } from '../../src/config'

let t: TestApp
let tls: TestTls
let rx: Receiver

beforeAll(async () => {
  tls = makeTestTls()
  rx = startReceiver(tls)
  t = await testApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile } })
}, 60_000)
afterAll(async () => {
  await t.close()
  rx.stop()
  tls.remove()
}, 30_000)
afterEach(async () => {
  rx.reset()
  // Leftovers of one test must not be claimed by the next.
  await t.db.sql`update webhook_events set status = 'failed', lease_token = null, lease_until = null where status = 'pending'`
})

const run = (config: Partial<Config> = {}, options: Parameters<typeof runOnce>[1] = {}) =>
  runOnce({ sql: t.db.sql, config: { ...t.config, ...config } }, options)

async function keyWithWebhook(host: 'localhost' | '127.0.0.1' = 'localhost') {
  const { key, keyId } = await t.account(1000)
  const registered = await t.api('POST', '/webhook', key, { url: rx.url(host) })
  expect(registered.status).toBe(200)
  return { key, keyId, secret: registered.body.data.signing_secret as string }
}

async function sendMessage(key: string, to = '081234567890'): Promise<string> {
  const sent = await t.api('POST', '/messages/send', key, { to, body: 'hello' })
  expect(sent.status).toBe(200)
  return sent.body.data.message_id
}

async function report(sid: string, status: ReportedStatus, errorCode?: number) {
  const outcome = await applyStatus(t.db.sql, t.config.timezone, {
    sid,
    status,
    errorCode,
    errorMessage: errorCode ? 'undeliverable' : null,
  })
  expect(outcome.events).toBe(1)
}

type EventRow = {
  id: number
  webhook_id: string
  payload: string
  status: string
  attempts: number
  last_error: string | null
  lease_token: string | null
  due_in_s: number
  delivered_at: Date | null
}
const eventsOf = (keyId: number) =>
  t.db.sql<EventRow[]>`
    select id, webhook_id, payload, status, attempts, last_error, lease_token, delivered_at,
           extract(epoch from next_attempt_at - now())::float8 as due_in_s
    from webhook_events where api_key_id = ${keyId} order by id`
const attemptsOf = async (eventId: number) => [
  ...(await t.db.sql<{ attempt: number; url: string; status_code: number | null; latency_ms: number; error: string | null }[]>`
    select attempt, url, status_code, latency_ms, error from webhook_attempts where event_id = ${eventId} order by id`),
]
const dueNow = (eventId: number) => t.db.sql`update webhook_events set next_attempt_at = now() where id = ${eventId}`

describe('a delivery', () => {
  test('POSTs the exact payload with Standard Webhooks headers that verify with the secret', async () => {
    const { key, keyId, secret } = await keyWithWebhook('localhost')
    const sid = await sendMessage(key)
    await report(sid, 'delivered')
    const [event] = await eventsOf(keyId)

    expect(await run()).toEqual({ claimed: 1, delivered: 1, retried: 0, failed: 0 })
    expect(rx.requests).toHaveLength(1)
    const [request] = rx.requests
    expect(request!.path).toBe('/hook')
    expect(request!.host).toBe(`localhost:${rx.port}`)
    expect(request!.headers['content-type']).toBe('application/json')
    expect(request!.body).toBe(event!.payload)
    expect(request!.headers['webhook-id']).toBe(event!.webhook_id)
    expect(Number(request!.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -1)
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)

    const verified = new Webhook(secret).verify(request!.body, request!.headers)
    expect(verified).toEqual({
      event: 'message.status',
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
      data: { message_sid: sid, to: '+6281234567890', status: 'delivered', previous_status: 'sent', error_code: null, error_message: null },
    })
    expect(Object.keys(JSON.parse(request!.body))).toEqual(['event', 'timestamp', 'data'])
    expect(() => new Webhook(secret).verify(`${request!.body} `, request!.headers)).toThrow()

    const [after] = await eventsOf(keyId)
    expect(after).toMatchObject({ status: 'delivered', attempts: 1, last_error: null, lease_token: null })
    expect(after!.delivered_at).toBeInstanceOf(Date)
    const attempts = await attemptsOf(event!.id)
    expect(attempts).toEqual([{ attempt: 1, url: rx.url('localhost'), status_code: 200, latency_ms: expect.any(Number), error: null }])
  })

  test('a failed status carries its error code and message; a literal-IP URL is connected to directly', async () => {
    const { key, keyId, secret } = await keyWithWebhook('127.0.0.1')
    const sid = await sendMessage(key)
    await report(sid, 'failed', 63016)
    expect(await run()).toMatchObject({ delivered: 1 })
    const [request] = rx.requests
    expect(request!.host).toBe(`127.0.0.1:${rx.port}`)
    expect(new Webhook(secret).verify(request!.body, request!.headers)).toMatchObject({
      data: { status: 'failed', previous_status: 'sent', error_code: 63016, error_message: 'undeliverable' },
    })
    expect((await eventsOf(keyId))[0]!.status).toBe('delivered')
  })

  test('the signature is the Standard Webhooks one', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
    const at = new Date(1_700_000_000_000)
    expect(signPayload(secret, 'msg_1', 1_700_000_000, '{"a":1}')).toBe(new Webhook(secret).sign('msg_1', at, '{"a":1}'))
  })

  test('any 2xx is success', async () => {
    const { key, keyId } = await keyWithWebhook()
    rx.handler = () => new Response(null, { status: 204 })
    await report(await sendMessage(key), 'delivered')
    expect(await run()).toMatchObject({ delivered: 1 })
    expect((await eventsOf(keyId))[0]!.status).toBe('delivered')
  })
})

describe('retries', () => {
  test('500 then 200: retried after about 5 s with the same webhook-id, logged per attempt', async () => {
    const { key, keyId, secret } = await keyWithWebhook()
    await report(await sendMessage(key), 'delivered')
    rx.handler = (r) => new Response(r.n === 1 ? 'boom' : 'ok', { status: r.n === 1 ? 500 : 200 })

    expect(await run()).toEqual({ claimed: 1, delivered: 0, retried: 1, failed: 0 })
    let [event] = await eventsOf(keyId)
    expect(event).toMatchObject({ status: 'pending', attempts: 1, last_error: 'HTTP 500', lease_token: null })
    // 5 s ±20%, counted from the end of the attempt.
    expect(event!.due_in_s).toBeGreaterThan(3.9)
    expect(event!.due_in_s).toBeLessThan(6.01)
    expect(await run()).toMatchObject({ claimed: 0 }) // not due yet

    await dueNow(event!.id)
    expect(await run()).toEqual({ claimed: 1, delivered: 1, retried: 0, failed: 0 })
    ;[event] = await eventsOf(keyId)
    expect(event).toMatchObject({ status: 'delivered', attempts: 2, last_error: null })

    expect(rx.requests).toHaveLength(2)
    expect(rx.requests[0]!.headers['webhook-id']).toBe(event!.webhook_id)
    expect(rx.requests[1]!.headers['webhook-id']).toBe(event!.webhook_id)
    expect(rx.requests[1]!.body).toBe(rx.requests[0]!.body)
    for (const r of rx.requests) new Webhook(secret).verify(r.body, r.headers)
    expect(await attemptsOf(event!.id)).toEqual([
      { attempt: 1, url: rx.url(), status_code: 500, latency_ms: expect.any(Number), error: 'HTTP 500' },
      { attempt: 2, url: rx.url(), status_code: 200, latency_ms: expect.any(Number), error: null },
    ])
  })

  test('the schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (±20%), then failed after the 8th attempt', async () => {
    const { key, keyId } = await keyWithWebhook()
    await report(await sendMessage(key), 'delivered')
    rx.handler = () => new Response('no', { status: 503 })
    expect(RETRY_DELAYS_S).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000])
    for (let n = 1; n <= MAX_ATTEMPTS; n++) {
      const counts = await run()
      const [event] = await eventsOf(keyId)
      expect(event!.attempts).toBe(n)
      if (n < MAX_ATTEMPTS) {
        expect(counts).toMatchObject({ claimed: 1, retried: 1 })
        const delay = RETRY_DELAYS_S[n - 1]!
        expect(event!.due_in_s).toBeGreaterThan(delay * 0.8 - 1)
        expect(event!.due_in_s).toBeLessThan(delay * 1.2 + 0.01)
        await dueNow(event!.id)
      } else {
        expect(counts).toEqual({ claimed: 1, delivered: 0, retried: 0, failed: 1 })
        expect(event).toMatchObject({ status: 'failed', last_error: 'HTTP 503' })
      }
    }
    expect(rx.requests).toHaveLength(8)
    const [event] = await eventsOf(keyId)
    expect((await attemptsOf(event!.id)).map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    await dueNow(event!.id)
    expect(await run()).toMatchObject({ claimed: 0 })
  })

  test('jitter spreads the retries', async () => {
    const { key, keyId } = await keyWithWebhook()
    rx.handler = () => new Response('no', { status: 500 })
    for (let i = 0; i < 12; i++) await report(await sendMessage(key), 'delivered')
    expect(await run()).toMatchObject({ claimed: 12, retried: 12 })
    const dues = (await eventsOf(keyId)).map((e) => e.due_in_s)
    expect(Math.max(...dues) - Math.min(...dues)).toBeGreaterThan(0.05)
    for (const due of dues) expect(due).toBeGreaterThan(3.9)
  })

  test("a 429's Retry-After is honoured: delta-seconds and an HTTP date", async () => {
    const { key, keyId } = await keyWithWebhook()
    rx.handler = (r) =>
      new Response('slow down', {
        status: 429,
        headers: { 'retry-after': r.n === 1 ? '120' : new Date(Date.now() + 600_000).toUTCString() },
      })
    await report(await sendMessage(key), 'delivered')
    expect(await run()).toMatchObject({ retried: 1 })
    let [event] = await eventsOf(keyId)
    expect(event!.due_in_s).toBeGreaterThan(118)
    expect(event!.due_in_s).toBeLessThanOrEqual(120.01)
    expect(event!.last_error).toBe('HTTP 429, Retry-After 120 s')
    const logged = await attemptsOf(event!.id)
    expect(logged[0]).toMatchObject({ status_code: 429 })

    await dueNow(event!.id)
    expect(await run()).toMatchObject({ retried: 1 })
    ;[event] = await eventsOf(keyId)
    expect(event!.due_in_s).toBeGreaterThan(597)
    expect(event!.due_in_s).toBeLessThanOrEqual(600.01)
  })

  test('Retry-After parsing', () => {
    const now = Date.parse('2025-01-01T00:00:00Z')
    expect(parseRetryAfter('30', now)).toBe(30)
    expect(parseRetryAfter(' 0 ', now)).toBe(0)
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:02:00 GMT', now)).toBe(120)
    expect(parseRetryAfter('Tue, 31 Dec 2024 00:00:00 GMT', now)).toBe(0)
    expect(parseRetryAfter('soon', now)).toBeNull()
    expect(parseRetryAfter('-5', now)).toBeNull()
    expect(parseRetryAfter(null, now)).toBeNull()
  })

  test('an answer slower than 5 s is a timeout', async () => {
    const { key, keyId } = await keyWithWebhook()
    rx.handler = async () => {
      await Bun.sleep(6_000)
      return new Response('late')
    }
    await report(await sendMessage(key), 'delivered')
    const started = Date.now()
    expect(await run()).toMatchObject({ claimed: 1, retried: 1 })
    const took = Date.now() - started
    expect(took).toBeGreaterThanOrEqual(4_900)
    expect(took).toBeLessThan(8_000) // 5 s, plus recording on a busy machine
    const [event] = await eventsOf(keyId)
    expect(event).toMatchObject({ status: 'pending', last_error: 'timeout: no answer within 5000 ms' })
    const [logged] = await attemptsOf(event!.id)
    expect(logged).toMatchObject({ status_code: null, error: 'timeout: no answer within 5000 ms' })
    expect(logged!.latency_ms).toBeGreaterThanOrEqual(4_900)
  }, 15_000)

  test('a redirect is not followed and counts as a failure', async () => {
    const { key, keyId } = await keyWithWebhook()
    rx.handler = () => new Response(null, { status: 302, headers: { location: `https://localhost:${rx.port}/elsewhere` } })
    await report(await sendMessage(key), 'delivered')
    expect(await run()).toMatchObject({ retried: 1 })
    await Bun.sleep(100)
    expect(rx.requests.map((r) => r.path)).toEqual(['/hook'])
    const [event] = await eventsOf(keyId)
    expect(await attemptsOf(event!.id)).toEqual([
      { attempt: 1, url: rx.url(), status_code: 302, latency_ms: expect.any(Number), error: 'redirect (HTTP 302) not followed' },
    ])
  })

  test('a certificate from an unknown CA fails (no WEBHOOK_CA_FILE)', async () => {
    const { key, keyId } = await keyWithWebhook()
    await report(await sendMessage(key), 'delivered')
    expect(await run({ webhookCaFile: undefined })).toMatchObject({ retried: 1 })
    expect(rx.requests).toHaveLength(0)
    const [event] = await eventsOf(keyId)
    expect(event!.last_error).toMatch(/^TLS: /)
  })

  test('a removed registration fails the event without a request', async () => {
    const { key, keyId } = await keyWithWebhook()
    await report(await sendMessage(key), 'delivered')
    expect((await t.api('DELETE', '/webhook', key)).status).toBe(200)
    expect(await run()).toEqual({ claimed: 1, delivered: 0, retried: 0, failed: 1 })
    expect(rx.requests).toHaveLength(0)
    const [event] = await eventsOf(keyId)
    expect(event).toMatchObject({ status: 'failed', last_error: 'webhook registration removed' })
  })

  test('a replaced URL is used from the next attempt on', async () => {
    const { key, keyId } = await keyWithWebhook('localhost')
    await report(await sendMessage(key), 'delivered')
    expect((await t.api('POST', '/webhook', key, { url: rx.url('127.0.0.1', '/new') })).status).toBe(200)
    expect(await run()).toMatchObject({ delivered: 1 })
    expect(rx.requests.map((r) => r.path)).toEqual(['/new'])
    expect((await eventsOf(keyId))[0]!.status).toBe('delivered')
  })
})

describe('addresses are checked at delivery, on the address connected to', () => {
  for (const host of ['127.0.0.1', 'localhost'] as const) {
    test(`registered while private addresses were allowed, ${host} is refused once they are not`, async () => {
      const { key, keyId } = await keyWithWebhook(host)
      await report(await sendMessage(key), 'delivered')
      expect(await run({ webhookAllowPrivate: false })).toMatchObject({ claimed: 1, retried: 1 })
      await Bun.sleep(100)
      expect(rx.requests).toHaveLength(0)
      const [event] = await eventsOf(keyId)
      expect(event!.last_error).toMatch(/^address refused: .*127\.0\.0\.1.* not a public address$/)
      const [logged] = await attemptsOf(event!.id)
      expect(logged).toMatchObject({ attempt: 1, status_code: null, error: event!.last_error })
    })
  }
})

describe('ordering and leases', () => {
  test("one message's events go in order: the next is not claimed while an earlier one is pending", async () => {
    const { key, keyId } = await keyWithWebhook()
    const sid = await sendMessage(key)
    await report(sid, 'delivered')
    await report(sid, 'read')
    rx.handler = (r) => new Response(null, { status: r.n === 1 ? 500 : 200 })

    expect(await run()).toMatchObject({ claimed: 1, retried: 1 }) // only 'delivered'
    const [first, second] = await eventsOf(keyId)
    await t.db.sql`update webhook_events set next_attempt_at = now() - interval '1 minute' where id = ${second!.id}`
    expect(await run()).toMatchObject({ claimed: 0 }) // 'read' waits behind the pending 'delivered'

    await dueNow(first!.id)
    expect(await run()).toMatchObject({ claimed: 1, delivered: 1 })
    expect(await run()).toMatchObject({ claimed: 1, delivered: 1 })
    expect(rx.requests.map((r) => JSON.parse(r.body).data.status)).toEqual(['delivered', 'delivered', 'read'])
  })

  test('many messages at once: each event claimed and delivered exactly once, even by two concurrent runs', async () => {
    const { key, keyId } = await keyWithWebhook()
    for (let i = 0; i < 40; i++) await report(await sendMessage(key, `08123456${String(7000 + i)}`), 'delivered')
    const [a, b] = await Promise.all([run({}, { batch: 25 }), run({}, { batch: 25 })])
    expect(a!.claimed + b!.claimed).toBe(40)
    expect(a!.delivered + b!.delivered).toBe(40)
    const ids = rx.requests.map((r) => r.headers['webhook-id'])
    expect(new Set(ids).size).toBe(40)
    expect(ids).toHaveLength(40)
    expect((await eventsOf(keyId)).every((e) => e.status === 'delivered' && e.attempts === 1)).toBe(true)
  })

  test('an outcome whose lease expired is not recorded; the event is claimed again', async () => {
    const { key, keyId } = await keyWithWebhook()
    await report(await sendMessage(key), 'delivered')
    const [event] = await eventsOf(keyId)
    rx.handler = async (r) => {
      // While this attempt is in flight, its lease runs out (as if the worker had hung for 30 s).
      if (r.n === 1) await t.db.sql`update webhook_events set lease_until = now() - interval '1 second' where id = ${event!.id}`
      return new Response('ok')
    }
    expect(await run()).toEqual({ claimed: 1, delivered: 0, retried: 0, failed: 0 })
    let [after] = await eventsOf(keyId)
    expect(after).toMatchObject({ status: 'pending', attempts: 1 })
    expect(after!.lease_token).not.toBeNull()
    expect(await attemptsOf(event!.id)).toHaveLength(0)

    expect(await run()).toEqual({ claimed: 1, delivered: 1, retried: 0, failed: 0 })
    ;[after] = await eventsOf(keyId)
    expect(after).toMatchObject({ status: 'delivered', attempts: 2 })
    expect(rx.byId(event!.webhook_id)).toHaveLength(2)
  })

  test('a live lease is not claimed by another worker', async () => {
    const { key, keyId } = await keyWithWebhook()
    await report(await sendMessage(key), 'delivered')
    const [event] = await eventsOf(keyId)
    await t.db
      .sql`update webhook_events set lease_token = gen_random_uuid(), lease_until = now() + interval '30 seconds', attempts = 1 where id = ${event!.id}`
    expect(await run()).toMatchObject({ claimed: 0 })
    await t.db.sql`update webhook_events set lease_until = now() - interval '1 second' where id = ${event!.id}`
    expect(await run()).toMatchObject({ claimed: 1, delivered: 1 })
    expect((await eventsOf(keyId))[0]!.attempts).toBe(2)
  })

  test('on stop, claimed events not yet started are released with their attempt undone', async () => {
    const { key, keyId } = await keyWithWebhook()
    for (let i = 0; i < 3; i++) await report(await sendMessage(key, `08123456${String(8000 + i)}`), 'delivered')
    let stopping = false
    rx.handler = async () => {
      stopping = true
      await Bun.sleep(200)
      return new Response('ok')
    }
    expect(await run({}, { concurrency: 1, stopping: () => stopping })).toEqual({ claimed: 3, delivered: 1, retried: 0, failed: 0 })
    const events = await eventsOf(keyId)
    expect(events.map((e) => [e.status, e.attempts, e.lease_token])).toEqual([
      ['delivered', 1, null],
      ['pending', 0, null],
      ['pending', 0, null],
    ])
    expect(await run()).toMatchObject({ claimed: 2, delivered: 2 })
  })
})
