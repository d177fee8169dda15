// The admin API of deliveries: list a key's events, an event's attempts, replay one or many. On a
// test clock: the delivery pipeline is stepped (deliverAll) and a retry comes due as the clock reaches it.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, ADMIN_TOKEN, type TestApp } from '../helpers/app'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { reportStatus } from '../helpers/reports'
import { deliverAll } from '../helpers/delivery'
import { errorEnvelope } from '../helpers/envelope'
import { TestClock } from '../../src/lib/clock'
import { formatTimestamp } from '../../src/lib/time'

let t: TestApp
let tls: TestTls
let rx: Receiver
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

// The service's delivery pipeline, stepped until nothing is due once a test's events are set up.
const deliver = () => deliverAll(t)

/** The key's events, every one satisfying `done` with its outcome recorded (no lease held). */
async function settled(keyId: number, done: (e: { status: string; attempts: number }) => boolean, what: string) {
  const events = await t.db.sql<{ status: string; attempts: number; lease_token: string | null }[]>`
    select status, attempts, lease_token from webhook_events where api_key_id = ${keyId} order by id`
  const unsettled = events.filter((e) => !(e.lease_token === null && done(e)))
  if (events.length === 0 || unsettled.length > 0) throw new Error(`not settled: ${what}: ${JSON.stringify(unsettled)}`)
  return events
}
const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/

let phone = 7000
async function keyWithEvents(count: number) {
  const { key, keyId } = await t.account(1000)
  await t.api('POST', '/webhook', key, { url: rx.url() })
  const sids: string[] = []
  for (let i = 0; i < count; i++) {
    const sent = await t.api('POST', '/messages/send', key, { to: `08123456${phone++}`, body: 'hi' })
    sids.push(sent.body.data.message_id)
    await reportStatus(t, sent.body.data.message_id, 'delivered')
  }
  return { key, keyId, sids }
}

describe('GET /admin/v1/keys/{id}/deliveries', () => {
  test("lists a key's deliveries newest first, with status, attempts and the parsed payload", async () => {
    rx.reset()
    const { keyId, sids } = await keyWithEvents(3)
    rx.handler = (r) => new Response(null, { status: r.body.includes(sids[1]!) ? 500 : 200 })
    await deliver()
    const outcomes = await settled(keyId, (e) => e.attempts === 1, 'the three attempts')
    expect(outcomes.map((e) => e.status)).toEqual(['delivered', 'pending', 'delivered'])

    const listed = await t.admin('GET', `/keys/${keyId}/deliveries`)
    expect(listed.status).toBe(200)
    expect(listed.body.data).toMatchObject({ total: 3, limit: 50, offset: 0, has_more: false })
    const items = listed.body.data.items
    expect(items.map((i: any) => i.message_sid)).toEqual([...sids].reverse())
    const events = await t.db.sql<
      { id: number; webhook_id: string }[]
    >`select id, webhook_id from webhook_events where api_key_id = ${keyId} order by id desc`
    expect(items.map((i: any) => i.id)).toEqual(events.map((e) => e.id))
    const failedOne = items.find((i: any) => i.status === 'pending')
    expect(failedOne).toEqual({
      id: expect.any(Number),
      webhook_id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
      api_key_id: keyId,
      event: 'message.status',
      message_sid: sids[1],
      status: 'pending',
      attempts: 1,
      next_attempt_at: expect.stringMatching(TIMESTAMP),
      last_error: 'HTTP 500',
      created_at: expect.stringMatching(TIMESTAMP),
      delivered_at: null,
      payload: {
        event: 'message.status',
        timestamp: expect.stringMatching(TIMESTAMP),
        data: {
          message_sid: sids[1],
          to: expect.stringMatching(/^\+628/),
          status: 'delivered',
          previous_status: 'sent',
          error_code: null,
          error_message: null,
        },
      },
    })
    const delivered = items.find((i: any) => i.status === 'delivered')
    expect(delivered).toMatchObject({
      attempts: 1,
      next_attempt_at: null,
      last_error: null,
      delivered_at: expect.stringMatching(TIMESTAMP),
    })

    const onlyPending = await t.admin('GET', `/keys/${keyId}/deliveries?status=pending`)
    expect(onlyPending.body.data.total).toBe(1)
    expect(onlyPending.body.data.items.map((i: any) => i.message_sid)).toEqual([sids[1]])
    const onlyDelivered = await t.admin('GET', `/keys/${keyId}/deliveries?status=delivered&limit=1&offset=1`)
    expect(onlyDelivered.body.data).toMatchObject({ total: 2, limit: 1, offset: 1, has_more: false })
    expect(onlyDelivered.body.data.items.map((i: any) => i.message_sid)).toEqual([sids[0]])
    const page2 = await t.admin('GET', `/keys/${keyId}/deliveries?limit=2&offset=2`)
    expect(page2.body.data.items.map((i: any) => i.message_sid)).toEqual([sids[0]])
    expect((await t.admin('GET', `/keys/${keyId}/deliveries?status=failed`)).body.data).toMatchObject({ items: [], total: 0 })
    await t.db.sql`update webhook_events set status = 'failed' where api_key_id = ${keyId} and status = 'pending'`
  })

  test('400, 401, 404 and 422', async () => {
    const { keyId } = await keyWithEvents(0)
    const unknown = await t.admin('GET', '/keys/999999/deliveries')
    expect(unknown.status).toBe(404)
    expect(unknown.body).toEqual(errorEnvelope(unknown.headers, 'NOT_FOUND'))
    for (const query of ['status=sent', 'status=', 'limit=0', 'limit=201', 'offset=-1']) {
      const bad = await t.admin('GET', `/keys/${keyId}/deliveries?${query}`)
      expect([query, bad.status, bad.body.code]).toEqual([query, 422, 'VALIDATION_ERROR'])
    }
    for (const query of ['limit=abc', 'offset=1.5']) {
      const bad = await t.admin('GET', `/keys/${keyId}/deliveries?${query}`)
      expect([query, bad.status, bad.body.code]).toEqual([query, 400, 'VALIDATION_ERROR'])
    }
    expect((await t.admin('GET', '/keys/abc/deliveries')).status).toBe(400)
    const noToken = await t.request('GET', `/admin/v1/keys/${keyId}/deliveries`)
    expect(noToken.status).toBe(401)
    const wrongToken = await t.request('GET', `/admin/v1/keys/${keyId}/deliveries`, { key: `${ADMIN_TOKEN}x` })
    expect(wrongToken.body.code).toBe('AUTH_INVALID_KEY')
    for (const path of ['/deliveries/1/attempts', '/deliveries/1/replay', `/keys/${keyId}/deliveries/replay`]) {
      const method = path.endsWith('replay') ? 'POST' : 'GET'
      expect((await t.request(method, `/admin/v1${path}`, { body: { since: '2025-01-01 00:00:00' } })).status).toBe(401)
    }
  })
})

describe('attempts and replay', () => {
  test('GET /admin/v1/deliveries/{id}/attempts lists every attempt, newest first', async () => {
    rx.reset()
    const { keyId } = await keyWithEvents(1)
    rx.handler = (r) => new Response(null, { status: r.n === 1 ? 503 : 200 })
    await deliver()
    await settled(keyId, (e) => e.attempts === 1, 'the first attempt')
    const [event] = await t.db.sql<{ id: number; due: number }[]>`
      select id, ceil(extract(epoch from next_attempt_at) * 1000)::float8 as due from webhook_events where api_key_id = ${keyId}`
    // The retry's time (in whole milliseconds, rounded up) comes, and the pipeline steps.
    await clock.advanceTo(event!.due)
    await deliver()
    await settled(keyId, (e) => e.status === 'delivered', 'the retry')
    const attempts = await t.admin('GET', `/deliveries/${event!.id}/attempts`)
    expect(attempts.status).toBe(200)
    expect(attempts.body.data).toMatchObject({ total: 2, limit: 50, offset: 0, has_more: false })
    expect(attempts.body.data.items).toEqual([
      {
        id: expect.any(Number),
        attempt: 2,
        url: rx.url(),
        status_code: 200,
        latency_ms: expect.any(Number),
        error: null,
        created_at: expect.stringMatching(TIMESTAMP),
      },
      {
        id: expect.any(Number),
        attempt: 1,
        url: rx.url(),
        status_code: 503,
        latency_ms: expect.any(Number),
        error: 'HTTP 503',
        created_at: expect.stringMatching(TIMESTAMP),
      },
    ])
    expect((await t.admin('GET', `/deliveries/${event!.id}/attempts?limit=1&offset=1`)).body.data.items.map((a: any) => a.attempt)).toEqual(
      [1],
    )
    expect((await t.admin('GET', '/deliveries/999999/attempts')).status).toBe(404)
    const one = await t.admin('GET', `/deliveries/${event!.id}`)
    expect(one.body.data).toMatchObject({ id: event!.id, status: 'delivered', attempts: 2 })
    expect((await t.admin('GET', '/deliveries/999999')).status).toBe(404)
  })

  test('POST /admin/v1/deliveries/{id}/replay sends it again with the same webhook-id and a fresh schedule', async () => {
    rx.reset()
    const { key, keyId } = await keyWithEvents(1)
    // Registration removed: the event fails without a request.
    await t.api('DELETE', '/webhook', key)
    await deliver()
    await settled(keyId, (e) => e.status === 'failed', 'the event to fail')
    const [event] = await t.db.sql<
      { id: number; webhook_id: string }[]
    >`select id, webhook_id from webhook_events where api_key_id = ${keyId}`
    expect((await t.admin('GET', `/deliveries/${event!.id}`)).body.data).toMatchObject({
      status: 'failed',
      last_error: 'webhook registration removed',
    })

    await t.api('POST', '/webhook', key, { url: rx.url() })
    const replayed = await t.admin('POST', `/deliveries/${event!.id}/replay`)
    expect(replayed.status).toBe(200)
    expect(replayed.body.data).toMatchObject({
      id: event!.id,
      webhook_id: event!.webhook_id,
      status: 'pending',
      attempts: 0,
      last_error: null,
      next_attempt_at: expect.stringMatching(TIMESTAMP),
    })
    // The replay makes it due now: the next step sends it.
    await deliver()
    await settled(keyId, (e) => e.status === 'delivered' && e.attempts === 1, 'the replayed delivery')
    expect(rx.requests.map((r) => r.headers['webhook-id'])).toEqual([event!.webhook_id])

    // A delivered event can be replayed too.
    expect((await t.admin('POST', `/deliveries/${event!.id}/replay`)).body.data).toMatchObject({ status: 'pending', delivered_at: null })
    await deliver()
    await settled(keyId, (e) => e.status === 'delivered' && e.attempts === 1, 'the second replay to be recorded')
    expect(rx.byId(event!.webhook_id)).toHaveLength(2)

    expect((await t.admin('POST', '/deliveries/999999/replay')).status).toBe(404)
    // An attempt in flight (a live lease) is not reset under the worker: a third replay, whose request
    // the receiver holds while the replay is asked again.
    expect((await t.admin('POST', `/deliveries/${event!.id}/replay`)).status).toBe(200)
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    rx.handler = async () => {
      await held
      return new Response(null, { status: 200 })
    }
    const attempt = deliver()
    await rx.arrived(3)
    const busy = await t.admin('POST', `/deliveries/${event!.id}/replay`)
    expect(busy.status).toBe(409)
    expect(busy.body.code).toBe('CONFLICT')
    release()
    await attempt
  })

  test("POST /admin/v1/keys/{id}/deliveries/replay replays the key's failed deliveries since a time", async () => {
    rx.reset()
    const { key, keyId, sids } = await keyWithEvents(1)
    // The key's first event is older than `since`, a whole second after it; its two others come then.
    const since = Math.ceil(clock.now().getTime() / 1000) * 1000 + 1000
    await clock.advanceTo(since)
    for (let i = 0; i < 2; i++) {
      const sent = await t.api('POST', '/messages/send', key, { to: `08123456${phone++}`, body: 'hi' })
      sids.push(sent.body.data.message_id)
      await reportStatus(t, sent.body.data.message_id, 'delivered')
    }
    const sinceText = formatTimestamp(new Date(since), t.config.timezone)!
    const other = await keyWithEvents(1)
    await t.api('DELETE', '/webhook', key)
    await t.api('DELETE', '/webhook', other.key)
    await deliver()
    await settled(keyId, (e) => e.status === 'failed', "the key's events to fail")
    await settled(other.keyId, (e) => e.status === 'failed', "the other key's event to fail")

    const bad = [
      [{}, 400],
      [{ since: 5 }, 400],
      [{ since: '2025-13-01 00:00:00' }, 422],
      [{ since: '2025-01-01T00:00:00Z' }, 422],
      [{ since: '' }, 422],
    ] as const
    for (const [body, status] of bad) {
      const answer = await t.admin('POST', `/keys/${keyId}/deliveries/replay`, body)
      expect([body, answer.status, answer.body.code]).toEqual([body, status, 'VALIDATION_ERROR'])
    }
    expect((await t.admin('POST', '/keys/999999/deliveries/replay', { since: sinceText })).status).toBe(404)

    await t.api('POST', '/webhook', key, { url: rx.url() })
    const replayed = await t.admin('POST', `/keys/${keyId}/deliveries/replay`, { since: sinceText })
    expect(replayed.status).toBe(200)
    expect(replayed.body).toEqual({ success: true, data: { replayed: 2 } })
    await deliver()
    const statuses = await settled(keyId, (e) => e.status !== 'pending', 'the replayed deliveries')
    expect(statuses.map((s) => s.status)).toEqual(['failed', 'delivered', 'delivered'])
    expect(rx.requests).toHaveLength(2)
    // The other key's failed event is untouched.
    expect((await t.admin('GET', `/keys/${other.keyId}/deliveries?status=failed`)).body.data.total).toBe(1)
    // Nothing left to replay.
    expect((await t.admin('POST', `/keys/${keyId}/deliveries/replay`, { since: sinceText })).body.data).toEqual({ replayed: 0 })
  })
})
