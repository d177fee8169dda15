// Webhook delivery through the pipeline the service runs, against a real HTTPS receiver on loopback
// (a CA made for this file, passed as WEBHOOK_CA_FILE), on a test clock. Each test sets up its events
// and steps the pipeline (deliverAll: each step claims what is due at the clock's time and ends when
// its outcomes are recorded); a retry comes due when the test moves the clock to its due time.
// "Nothing was claimed" is checked after a step: it claimed everything due.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { testApp, type TestApp } from '../helpers/app'
import { deliverAll, startDelivery, type Delivery } from '../helpers/delivery'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { reportStatus } from '../helpers/reports'
import { deliverDue, LEASE_SECONDS, MAX_ATTEMPTS, RETRY_DELAYS_S } from '../../src/workers/webhook-delivery'
import { TestClock, type Clock } from '../../src/lib/clock'
import { parseRetryAfter, signPayload } from '../../src/modules/webhooks/sender'
import type { Config } from '../../src/config'
import { type ReportedStatus } from '../../src/providers/provider'

let t: TestApp
let tls: TestTls
let rx: Receiver
let workers: Delivery[] = []
const clock = new TestClock()

beforeAll(async () => {
  tls = makeTestTls()
  rx = startReceiver(tls, clock)
  t = await testApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile }, clock, runOnClock: true })
}, 60_000)
afterAll(async () => {
  await t.close()
  rx.stop()
  tls.remove()
}, 30_000)
afterEach(async () => {
  await Promise.all(workers.map((w) => w.stop()))
  workers = []
  rx.reset()
  // Leftovers of one test must not be claimed by the next: a failed event is never claimed, whatever its lease.
  await t.db.sql`update webhook_events set status = 'failed' where status = 'pending'`
}, 30_000)

/** Steps the delivery pipeline until nothing is due: every outcome recorded. */
const deliver = (config: Partial<Config> = {}, options: { concurrency?: number } = {}) => deliverAll(t, config, options)

/** Starts the service's delivery pipeline as a loop on the test clock (stopped after the test). */
function deliveryLoop(options: { concurrency?: number } = {}): Delivery {
  const worker = startDelivery(t, {}, options)
  workers.push(worker)
  return worker
}

async function keyWithWebhook(host: 'localhost' | '127.0.0.1' = 'localhost', receiver: Receiver = rx) {
  const { key, keyId } = await t.account(1000)
  const registered = await t.api('POST', '/webhook', key, { url: receiver.url(host) })
  expect(registered.status).toBe(200)
  return { key, keyId, secret: registered.body.data.signing_secret as string }
}

let phone = 7000
async function sendMessage(key: string): Promise<string> {
  const sent = await t.api('POST', '/messages/send', key, { to: `08123456${phone++}`, body: 'hello' })
  expect(sent.status).toBe(200)
  return sent.body.data.message_id
}

const eventCount = async (sid: string) =>
  (
    await t.db.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_events e join messages m on m.id = e.message_id where m.message_sid = ${sid}`
  )[0]!.n

/** A status change reported by the provider's callback, which wakes the pipeline after its commit: one event. */
async function report(sid: string, status: ReportedStatus, errorCode?: number) {
  const before = await eventCount(sid)
  const outcome = await reportStatus(t, sid, status, { errorCode, errorMessage: errorCode ? 'undeliverable' : null })
  expect(outcome).toEqual({ changed: true })
  expect(await eventCount(sid)).toBe(before + 1)
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
  due_at_s: number
  delivered_at: Date | null
}
const eventsOf = (keyId: number) =>
  t.db.sql<EventRow[]>`
    select id, webhook_id, payload, status, attempts, last_error, lease_token, delivered_at,
           extract(epoch from next_attempt_at - ${clock.now()}::timestamptz)::float8 as due_in_s,
           extract(epoch from next_attempt_at)::float8 as due_at_s
    from webhook_events where api_key_id = ${keyId} order by id`
const attemptsOf = async (eventId: number) => [
  ...(await t.db.sql<{ attempt: number; url: string; status_code: number | null; latency_ms: number; error: string | null }[]>`
    select attempt, url, status_code, latency_ms, error from webhook_attempts where event_id = ${eventId} order by id`),
]

/** The key's events, every one of them satisfying `done` with its outcome recorded (no lease held). */
async function settled(keyId: number, done: (e: EventRow) => boolean, what: string) {
  const events = await eventsOf(keyId)
  const unsettled = events.filter((e) => !(e.lease_token === null && done(e)))
  if (events.length === 0 || unsettled.length > 0) throw new Error(`not settled: ${what}: ${JSON.stringify(unsettled)}`)
  return events
}

/** Moves the clock to an event's retry (its next_attempt_at) and steps the pipeline, as the poll would find it then. */
async function dueNow(eventId: number) {
  // In whole milliseconds, rounded up (the database keeps microseconds).
  const [row] = await t.db.sql<{ at: number }[]>`
    select ceil(extract(epoch from next_attempt_at) * 1000)::float8 as at from webhook_events where id = ${eventId}`
  await clock.advanceTo(row!.at)
  await deliver()
}

/**
 * The clock of a worker that hangs (its process stalled): it reads the test's time, but its own timers
 * (an attempt's 5 s limit) never come due, so time passes its lease by while it waits.
 */
function hungClock(): Clock {
  const stalled = new TestClock(clock.now()) // never moved
  return {
    now: () => clock.now(),
    monotonic: () => clock.monotonic(),
    sqlNow: () => clock.sqlNow(),
    sleep: (ms, signal) => stalled.sleep(ms, signal),
    setTimeout: (fn, ms) => stalled.setTimeout(fn, ms),
    clearTimeout: (timer) => stalled.clearTimeout(timer),
    setInterval: (fn, ms) => stalled.setInterval(fn, ms),
    clearInterval: (timer) => stalled.clearInterval(timer),
    timeoutSignal: (ms) => stalled.timeoutSignal(ms),
  }
}

/** One step of another worker, one that hangs (hungClock): it resolves when that worker has recorded what it could. */
const hungWorkerStep = () => deliverDue({ ...t.deps, clock: hungClock() })

/** Seconds from the arrival of a request to the event's next due time. */
const dueAfter = (event: EventRow, requestAt: number) => event.due_at_s - requestAt / 1000

/** A step of the pipeline, now: it claims everything due, so what it leaves was not due. */
const barrier = () => deliver()

describe('a delivery', () => {
  test('POSTs the exact payload with Standard Webhooks headers that verify with the secret', async () => {
    const { key, keyId, secret } = await keyWithWebhook('localhost')
    const sid = await sendMessage(key)
    await report(sid, 'delivered')
    const [event] = await eventsOf(keyId)

    await deliver()
    const [after] = await settled(keyId, (e) => e.status === 'delivered', 'the delivery')
    expect(rx.requests).toHaveLength(1)
    const [request] = rx.requests
    expect(request!.path).toBe('/hook')
    expect(request!.host).toBe(`localhost:${rx.port}`)
    expect(request!.headers['content-type']).toBe('application/json')
    expect(request!.body).toBe(event!.payload)
    expect(request!.headers['webhook-id']).toBe(event!.webhook_id)
    expect(Number(request!.headers['webhook-timestamp'])).toBeCloseTo(clock.now().getTime() / 1000, -1)
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)

    const verified = new Webhook(secret).verify(request!.body, request!.headers)
    expect(verified).toEqual({
      event: 'message.status',
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
      data: {
        message_sid: sid,
        to: expect.stringMatching(/^\+628123456\d{4}$/),
        status: 'delivered',
        previous_status: 'sent',
        error_code: null,
        error_message: null,
      },
    })
    expect(Object.keys(JSON.parse(request!.body))).toEqual(['event', 'timestamp', 'data'])
    expect(() => new Webhook(secret).verify(`${request!.body} `, request!.headers)).toThrow()

    expect(after).toMatchObject({ status: 'delivered', attempts: 1, last_error: null, lease_token: null })
    expect(after!.delivered_at).toBeInstanceOf(Date)
    const attempts = await attemptsOf(event!.id)
    expect(attempts).toEqual([{ attempt: 1, url: rx.url('localhost'), status_code: 200, latency_ms: expect.any(Number), error: null }])
  })

  test('a failed status carries its error code and message; a literal-IP URL is connected to directly', async () => {
    const { key, keyId, secret } = await keyWithWebhook('127.0.0.1')
    const sid = await sendMessage(key)
    await report(sid, 'failed', 63016)
    await deliver()
    await settled(keyId, (e) => e.status === 'delivered', 'the delivery')
    const [request] = rx.requests
    expect(request!.host).toBe(`127.0.0.1:${rx.port}`)
    expect(new Webhook(secret).verify(request!.body, request!.headers)).toMatchObject({
      data: { status: 'failed', previous_status: 'sent', error_code: 63016, error_message: 'undeliverable' },
    })
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
    await deliver()
    const [event] = await settled(keyId, (e) => e.attempts === 1, 'the attempt')
    expect(event).toMatchObject({ status: 'delivered', attempts: 1 })
  })
})

describe('retries', () => {
  test('500 then 200: retried after about 5 s with the same webhook-id, logged per attempt', async () => {
    const { key, keyId, secret } = await keyWithWebhook()
    await report(await sendMessage(key), 'delivered')
    rx.handler = (r) => new Response(r.n === 1 ? 'boom' : 'ok', { status: r.n === 1 ? 500 : 200 })

    await deliver()
    let [event] = await settled(keyId, (e) => e.attempts === 1, 'the failed attempt')
    expect(event).toMatchObject({ status: 'pending', attempts: 1, last_error: 'HTTP 500', lease_token: null })
    // 5 s ±20%, counted from the end of the attempt (which came after the request arrived).
    expect(dueAfter(event!, rx.requests[0]!.at)).toBeGreaterThanOrEqual(3.95)
    expect(dueAfter(event!, rx.requests[0]!.at)).toBeLessThan(7)
    await barrier()
    expect((await eventsOf(keyId))[0]!.attempts).toBe(1) // not due yet: not claimed

    await dueNow(event!.id)
    ;[event] = await settled(keyId, (e) => e.status === 'delivered', 'the retry')
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
    await deliver()
    for (let n = 1; n <= MAX_ATTEMPTS; n++) {
      const [event] = await settled(keyId, (e) => e.attempts === n, `attempt ${n}`)
      expect(rx.requests).toHaveLength(n)
      if (n < MAX_ATTEMPTS) {
        expect(event).toMatchObject({ status: 'pending', last_error: 'HTTP 503' })
        const delay = RETRY_DELAYS_S[n - 1]!
        expect(dueAfter(event!, rx.requests[n - 1]!.at)).toBeGreaterThanOrEqual(delay * 0.8 - 0.05)
        expect(dueAfter(event!, rx.requests[n - 1]!.at)).toBeLessThan(delay * 1.2 + 2)
        await dueNow(event!.id)
      } else {
        expect(event).toMatchObject({ status: 'failed', last_error: 'HTTP 503' })
      }
    }
    const [event] = await eventsOf(keyId)
    expect((await attemptsOf(event!.id)).map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    await dueNow(event!.id)
    await barrier()
    expect(rx.requests).toHaveLength(8)
    expect((await eventsOf(keyId))[0]).toMatchObject({ status: 'failed', attempts: 8 })
  })

  test('jitter spreads the retries', async () => {
    const { key, keyId } = await keyWithWebhook()
    rx.handler = () => new Response('no', { status: 500 })
    for (let i = 0; i < 12; i++) await report(await sendMessage(key), 'delivered')
    await deliver()
    const events = await settled(keyId, (e) => e.attempts === 1, 'the 12 failed attempts')
    const arrival = new Map(rx.requests.map((r) => [r.headers['webhook-id'], r.at]))
    const dues = events.map((e) => dueAfter(e, arrival.get(e.webhook_id)!))
    expect(Math.max(...dues) - Math.min(...dues)).toBeGreaterThan(0.05)
    for (const due of dues) expect(due).toBeGreaterThanOrEqual(3.95)
  })

  test('the Retry-After of a 429 (delta-seconds) and of a 503 (an HTTP date) is honoured', async () => {
    const { key, keyId } = await keyWithWebhook()
    rx.handler = (r) =>
      new Response('slow down', {
        status: r.n === 1 ? 429 : 503,
        headers: { 'retry-after': r.n === 1 ? '120' : new Date(clock.now().getTime() + 600_000).toUTCString() },
      })
    await report(await sendMessage(key), 'delivered')
    await deliver()
    let [event] = await settled(keyId, (e) => e.attempts === 1, 'the first attempt')
    expect(dueAfter(event!, rx.requests[0]!.at)).toBeGreaterThanOrEqual(119.99)
    expect(dueAfter(event!, rx.requests[0]!.at)).toBeLessThan(122)
    expect(event!.last_error).toBe('HTTP 429, Retry-After 120 s')
    const logged = await attemptsOf(event!.id)
    expect(logged[0]).toMatchObject({ status_code: 429 })

    await dueNow(event!.id)
    ;[event] = await settled(keyId, (e) => e.attempts === 2, 'the second attempt')
    expect(event!.last_error).toMatch(/^HTTP 503, Retry-After (599|600) s$/)
    // An HTTP date has whole seconds: 599 or 600 s from the answer.
    expect(dueAfter(event!, rx.requests[1]!.at)).toBeGreaterThanOrEqual(598.99)
    expect(dueAfter(event!, rx.requests[1]!.at)).toBeLessThan(602)
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
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    rx.handler = async () => {
      await held
      return new Response('late')
    }
    await report(await sendMessage(key), 'delivered')
    const step = deliver()
    await rx.arrived(1)
    // 6 s pass on the clock while the receiver holds its answer.
    await clock.advance(6_000)
    await step
    release()
    const [event] = await settled(keyId, (e) => e.attempts === 1, 'the timed-out attempt')
    expect(event).toMatchObject({ status: 'pending', last_error: 'timeout: no answer within 5000 ms' })
    const [logged] = await attemptsOf(event!.id)
    expect(logged).toMatchObject({ status_code: null, error: 'timeout: no answer within 5000 ms' })
    expect(logged!.latency_ms).toBeGreaterThanOrEqual(4_900)
  })

  test('a redirect is not followed and counts as a failure', async () => {
    const { key, keyId } = await keyWithWebhook()
    rx.handler = () => new Response(null, { status: 302, headers: { location: `https://localhost:${rx.port}/elsewhere` } })
    await report(await sendMessage(key), 'delivered')
    await deliver()
    const [event] = await settled(keyId, (e) => e.attempts === 1, 'the attempt')
    expect(rx.requests.map((r) => r.path)).toEqual(['/hook'])
    expect(await attemptsOf(event!.id)).toEqual([
      { attempt: 1, url: rx.url(), status_code: 302, latency_ms: expect.any(Number), error: 'redirect (HTTP 302) not followed' },
    ])
  })

  test('a certificate from an unknown CA fails (no WEBHOOK_CA_FILE)', async () => {
    const { key, keyId } = await keyWithWebhook()
    await report(await sendMessage(key), 'delivered')
    await deliver({ webhookCaFile: undefined })
    const [event] = await settled(keyId, (e) => e.attempts === 1, 'the attempt')
    expect(rx.requests).toHaveLength(0)
    expect(event!.last_error).toMatch(/^TLS: /)
  })

  test('a removed registration fails the event without a request', async () => {
    const { key, keyId } = await keyWithWebhook()
    await report(await sendMessage(key), 'delivered')
    expect((await t.api('DELETE', '/webhook', key)).status).toBe(200)
    await deliver()
    const [event] = await settled(keyId, (e) => e.status !== 'pending', 'the event to fail')
    expect(rx.requests).toHaveLength(0)
    expect(event).toMatchObject({ status: 'failed', last_error: 'webhook registration removed' })
    expect(await attemptsOf(event!.id)).toEqual([])
  })

  test('a replaced URL is used from the next attempt on', async () => {
    const { key, keyId } = await keyWithWebhook('localhost')
    await report(await sendMessage(key), 'delivered')
    expect((await t.api('POST', '/webhook', key, { url: rx.url('127.0.0.1', '/new') })).status).toBe(200)
    await deliver()
    await settled(keyId, (e) => e.status === 'delivered', 'the delivery')
    expect(rx.requests.map((r) => r.path)).toEqual(['/new'])
  })
})

describe('addresses are checked at delivery, on the address connected to', () => {
  for (const host of ['127.0.0.1', 'localhost'] as const) {
    test(`registered while private addresses were allowed, ${host} is refused once they are not`, async () => {
      const { key, keyId } = await keyWithWebhook(host)
      await report(await sendMessage(key), 'delivered')
      await deliver({ webhookAllowPrivate: false })
      const [event] = await settled(keyId, (e) => e.attempts === 1, 'the refused attempt')
      expect(rx.requests).toHaveLength(0)
      expect(event!.status).toBe('pending')
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

    await deliver()
    await settled(keyId, (e) => e.attempts === (e.payload.includes('"read"') ? 0 : 1), "the first attempt at 'delivered'")
    const [first, second] = await eventsOf(keyId)
    expect(second!.due_in_s).toBeLessThanOrEqual(0) // 'read' is due (since it was made), ahead of the retry of 'delivered'
    await barrier()
    expect((await eventsOf(keyId)).map((e) => e.attempts)).toEqual([1, 0]) // 'read' waits behind the pending 'delivered'

    await dueNow(first!.id)
    await settled(keyId, (e) => e.status === 'delivered', 'both deliveries')
    expect(rx.requests.map((r) => JSON.parse(r.body).data.status)).toEqual(['delivered', 'delivered', 'read'])
  })

  test('many messages at once: each event claimed and delivered exactly once, even by two pipelines at once', async () => {
    const { key, keyId } = await keyWithWebhook()
    for (let i = 0; i < 40; i++) await report(await sendMessage(key), 'delivered')
    // Two pipelines stepped at once, until neither finds anything due.
    const step = () => deliverDue(t.deps, { concurrency: 8 })
    while ((await Promise.all([step(), step()])).some((n) => n > 0));
    const events = await settled(keyId, (e) => e.status === 'delivered', 'the 40 deliveries')
    expect(events).toHaveLength(40)
    expect(events.every((e) => e.attempts === 1)).toBe(true)
    const ids = rx.requests.map((r) => r.headers['webhook-id'])
    expect(ids).toHaveLength(40)
    expect(new Set(ids).size).toBe(40)
  })

  test('an outcome whose lease expired is not recorded; the event is claimed again', async () => {
    const { key, keyId } = await keyWithWebhook()
    await report(await sendMessage(key), 'delivered')
    const [event] = await eventsOf(keyId)
    rx.handler = async (r) => {
      // While this attempt is in flight, its worker hangs past its lease: the time passes (its own
      // time limit never fires), and its outcome comes a second after the lease ran out.
      if (r.n === 1) await clock.advance(LEASE_SECONDS * 1000 + 1000)
      return new Response('ok')
    }
    await hungWorkerStep()
    await deliver()
    const [after] = await settled(keyId, (e) => e.status === 'delivered', 'the second attempt')
    expect(after).toMatchObject({ status: 'delivered', attempts: 2 })
    expect(rx.byId(event!.webhook_id)).toHaveLength(2)
    // The first outcome was never recorded: only the second attempt is logged.
    expect((await attemptsOf(event!.id)).map((a) => [a.attempt, a.status_code])).toEqual([[2, 200]])
  })

  test('a live lease is not claimed by another worker', async () => {
    const { key, keyId } = await keyWithWebhook()
    await report(await sendMessage(key), 'delivered')
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    rx.handler = async (r) => {
      if (r.n === 1) await held
      return new Response('ok')
    }
    // Another worker's claim: its lease, LEASE_SECONDS from now; it hangs waiting for its answer.
    const other = hungWorkerStep()
    await rx.arrived(1)
    await barrier()
    expect((await eventsOf(keyId))[0]!.attempts).toBe(1)
    expect(rx.requests).toHaveLength(1) // the other worker's: this one sent nothing
    // Its worker never records an outcome: the lease runs out.
    await clock.advance(LEASE_SECONDS * 1000 + 1000)
    await deliver()
    const [after] = await settled(keyId, (e) => e.status === 'delivered', 'the delivery after the lease ran out')
    expect(after!.attempts).toBe(2)
    // Its answer comes at last: too late to be recorded.
    release()
    await other
    expect(await settled(keyId, (e) => e.status === 'delivered', 'the delivery, unchanged')).toMatchObject([{ attempts: 2 }])
  })

  test('stop finishes and records the attempt in flight, and claims nothing more', async () => {
    const { key, keyId } = await keyWithWebhook()
    for (let i = 0; i < 3; i++) await report(await sendMessage(key), 'delivered')
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    rx.handler = async () => {
      await held
      return new Response('ok')
    }
    const worker = deliveryLoop({ concurrency: 1 })
    await rx.arrived(1)
    const stopped = worker.stop()
    release()
    await stopped
    const events = await eventsOf(keyId)
    expect(events.map((e) => [e.status, e.attempts, e.lease_token])).toEqual([
      ['delivered', 1, null],
      ['pending', 0, null],
      ['pending', 0, null],
    ])
    expect(rx.requests).toHaveLength(1)
    // A new pipeline (the next start) delivers the rest.
    await deliver()
    await settled(keyId, (e) => e.status === 'delivered', 'the rest after a restart')
  })
})
