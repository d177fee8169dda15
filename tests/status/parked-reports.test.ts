// Status reports that arrive before the send has stored their SID. A fake Twilio posts its signed
// status callback to the service (through app.handle, like Twilio would over HTTP) before it answers
// the send, so the report finds no message; it is parked, and applied by the parked-reports worker's
// steps once the send records the SID. Webhook events go to a real HTTPS receiver through the delivery
// worker's steps. On a test clock: a parked report expires when the test moves the clock past its hour.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import twilio from 'twilio'
import { Webhook } from 'standardwebhooks'
import { testApp, type TestApp } from '../helpers/app'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import postgres from 'postgres'
import { PARKED_REPORT_TTL_SECONDS, SID_LOCK } from '../../src/modules/status/receiver'
import { usingPostgres } from '../helpers/db'
import { TestClock } from '../../src/lib/clock'
import type { Sql } from '../../src/db/client'
import type { WorkerName } from '../../src/deps'

const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef'
const AUTH_TOKEN = 'tok_5ecret_auth_token_0123456789ab'
const FROM = 'whatsapp:+14155238886'
const PUBLIC_BASE_URL = 'https://api.example.com'
const PATH = '/provider/twilio/status'

const randomSid = () => `SM${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('hex')}`

/** What the fake Twilio does with a send: by default it accepts it with a fresh SID. */
let onSend: (sid: string) => Promise<void> = async () => {}
const fake = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch() {
    const sid = randomSid()
    await onSend(sid)
    return Response.json({ sid, status: 'queued' }, { status: 201 })
  },
})

/** Called when the app's code opens a transaction (the report receiver's, in the batch test). */
let onBegin: () => void = () => {}
const beginsObserved = (sql: Sql): Sql =>
  new Proxy(sql, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver)
      if (key !== 'begin' || typeof value !== 'function') return value
      return (...args: unknown[]) => {
        onBegin()
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })

const clock = new TestClock()
let t: TestApp
let tls: TestTls
let rx: Receiver
beforeAll(async () => {
  tls = makeTestTls()
  rx = startReceiver(tls)
  t = await testApp({
    clock,
    runOnClock: true,
    wrapSql: beginsObserved,
    env: {
      PROVIDER: 'twilio',
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      TWILIO_FROM: FROM,
      TWILIO_API_BASE: `http://127.0.0.1:${fake.port}`,
      PUBLIC_BASE_URL,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_CA_FILE: tls.caFile,
    },
  })
}, 60_000)
afterAll(async () => {
  await t.close()
  fake.stop(true)
  rx.stop()
  tls.remove()
}, 30_000)
afterEach(() => {
  onSend = async () => {}
  rx.reset()
})

/** Twilio's signed status callback for `sid`, through the service's HTTP handling. */
async function callback(sid: string, status: string) {
  const params = {
    MessageSid: sid,
    SmsSid: sid,
    MessageStatus: status,
    SmsStatus: status,
    AccountSid: ACCOUNT_SID,
    To: 'whatsapp:+6281234567890',
  }
  const signature = twilio.getExpectedTwilioSignature(AUTH_TOKEN, `${PUBLIC_BASE_URL}${PATH}`, params)
  return t.request('POST', PATH, {
    rawBody: new URLSearchParams(params).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
  })
}

/** A key with a webhook to the receiver; returns its key, id and signing secret. */
async function keyWithWebhook(balance = 1000) {
  const { accountId, key, keyId } = await t.account(balance, { price: 100 })
  const registered = await t.api('POST', '/webhook', key, { url: rx.url() })
  expect(registered.status).toBe(200)
  return { accountId, key, keyId, secret: registered.body.data.signing_secret as string }
}

const parkedFor = async (sid: string) =>
  [...(await t.db.sql<{ status: string }[]>`select status from parked_reports where message_sid = ${sid} order by id`)].map((r) => r.status)

const messageStatus = async (sid: string) =>
  (await t.db.sql<{ status: string }[]>`select status from messages where message_sid = ${sid}`)[0]?.status

/** The message.status events of a SID, as [previous_status, status], in order. */
const eventsOf = async (sid: string) =>
  (
    await t.db.sql<{ payload: string }[]>`
      select e.payload from webhook_events e join messages m on m.id = e.message_id where m.message_sid = ${sid} order by e.id`
  ).map((e) => [JSON.parse(e.payload).data.previous_status, JSON.parse(e.payload).data.status])

/** A message stored with `sid` straight in SQL, as a send whose outcome is recorded late would leave it. */
async function storeSid(keyId: number, sid: string) {
  await t.db.sql`
    insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at)
    select account_id, id, ${sid}, '+6281234567890', 'x', 'sent', 100, now() from api_keys where id = ${keyId}`
}

/** Runs `name`'s steps until one finds nothing to do (a worker's loop, stepped by the test). */
async function drain(name: WorkerName) {
  while ((await t.runWorker(name)) > 0) {}
}

/** A report parked and applied for another message (of a key without webhook): the worker has run since. */
async function barrier() {
  const { keyId } = await t.account(0)
  const sid = randomSid()
  await callback(sid, 'delivered')
  await storeSid(keyId, sid)
  await drain('parked-reports')
  expect(await messageStatus(sid)).toBe('delivered')
}

describe('a report that arrives before the send stored its SID', () => {
  test('is answered 200, parked, then applied once the send records the SID: one event, delivered once', async () => {
    const { key, secret } = await keyWithWebhook()
    const early: { status: number; body: unknown; parked: string[] }[] = []
    onSend = async (sid) => {
      const res = await callback(sid, 'delivered')
      early.push({ status: res.status, body: res.body, parked: await parkedFor(sid) })
    }
    const sent = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'halo' })
    expect(sent.status).toBe(200)
    const sid: string = sent.body.data.message_id
    expect(early).toEqual([{ status: 200, body: { success: true, data: { changed: false } }, parked: ['delivered'] }])

    await drain('parked-reports')
    expect(await messageStatus(sid)).toBe('delivered')
    expect(await parkedFor(sid)).toEqual([])
    expect(await eventsOf(sid)).toEqual([['sent', 'delivered']])
    await drain('webhook-delivery')
    expect(rx.requests).toHaveLength(1)
    const [request] = rx.requests
    expect((new Webhook(secret).verify(request!.body, request!.headers) as any).data).toMatchObject({
      message_sid: sid,
      status: 'delivered',
      previous_status: 'sent',
    })
    // Nothing applies it twice: once the worker has applied another report parked after it, the
    // message still has its one event and the receiver its one request.
    await barrier()
    await drain('webhook-delivery')
    expect(await eventsOf(sid)).toEqual([['sent', 'delivered']])
    expect(rx.requests).toHaveLength(1)
  }, 30_000)

  test('delivered and read, both early, are applied in order: sent → delivered → read', async () => {
    const { key, secret } = await keyWithWebhook()
    onSend = async (sid) => {
      expect((await callback(sid, 'delivered')).status).toBe(200)
      expect((await callback(sid, 'read')).status).toBe(200)
    }
    const sent = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'halo' })
    const sid: string = sent.body.data.message_id
    await drain('parked-reports')
    expect(await messageStatus(sid)).toBe('read')
    expect(await eventsOf(sid)).toEqual([
      ['sent', 'delivered'],
      ['delivered', 'read'],
    ])
    await drain('webhook-delivery')
    expect(rx.requests.map((r) => (new Webhook(secret).verify(r.body, r.headers) as any).data.status)).toEqual(['delivered', 'read'])
  }, 30_000)

  test('a later report for the SID applies the parked ones first (the receiver takes them, not the worker)', async () => {
    const { keyId } = await keyWithWebhook()
    const sid = randomSid()
    expect((await callback(sid, 'delivered')).body).toEqual({ success: true, data: { changed: false } })
    expect(await parkedFor(sid)).toEqual(['delivered'])
    // No worker runs but the steps the test takes: none takes the parked report between the SID's
    // store and the next report, so the receiver must apply it first.
    await storeSid(keyId, sid) // the send's late outcome
    expect((await callback(sid, 'read')).status).toBe(200)
    expect(await messageStatus(sid)).toBe('read')
    expect(await eventsOf(sid)).toEqual([
      ['sent', 'delivered'],
      ['delivered', 'read'],
    ])
    expect(await parkedFor(sid)).toEqual([])
  })

  // Two sessions at once: PostgreSQL only (the embedded database has one connection, so nothing interleaves there).
  test.skipIf(!usingPostgres())(
    "the worker takes the SID's lock as receiving does: while a report of that SID is being received, it leaves the SID's parked reports to it",
    async () => {
      const { keyId } = await keyWithWebhook()
      const sid = randomSid()
      await callback(sid, 'delivered')
      await storeSid(keyId, sid)
      // Another instance receiving a newer report of the SID holds its lock (as receiveCallbacks takes it)
      // until it has applied the parked reports and its own: the worker, meanwhile, applies nothing of it,
      // else the parked delivered and that newer report would race for the message, in either order.
      const other = postgres(t.db.url!, { max: 1, onnotice: () => {} })
      try {
        await other.begin(async (tx) => {
          await tx`select pg_advisory_xact_lock(${SID_LOCK}, hashtext(${sid}))`
          expect(await t.runWorker('parked-reports')).toBe(0)
          expect(await parkedFor(sid)).toEqual(['delivered'])
          expect(await messageStatus(sid)).toBe('sent')
        })
      } finally {
        await other.end()
      }
      await drain('parked-reports')
      expect(await messageStatus(sid)).toBe('delivered')
      expect(await eventsOf(sid)).toEqual([['sent', 'delivered']])
    },
  )

  test('a report that would move backwards stays unapplied: failed after read changes nothing', async () => {
    const { keyId } = await keyWithWebhook()
    const sid = randomSid()
    await callback(sid, 'read')
    await callback(sid, 'undelivered')
    await storeSid(keyId, sid)
    await drain('parked-reports')
    expect(await parkedFor(sid)).toEqual([])
    expect(await messageStatus(sid)).toBe('read')
    expect(await eventsOf(sid)).toEqual([['sent', 'read']])
  })

  test('"sent" (which never changes anything) is not parked', async () => {
    const sid = randomSid()
    expect((await callback(sid, 'sent')).status).toBe(200)
    expect((await callback(sid, 'queued')).status).toBe(200)
    expect(await parkedFor(sid)).toEqual([])
  })
})

describe('reports that arrive together (callbacks group-committed in one transaction)', () => {
  test('one batch: a SID twice applies in order, parked reports first, unknown SIDs parked, "sent" never parked', async () => {
    const { keyId } = await keyWithWebhook()
    const [twice, backwards, withParked, unknown, unknownSent] = Array.from({ length: 5 }, randomSid)
    await storeSid(keyId, twice!)
    await storeSid(keyId, backwards!)
    await callback(withParked!, 'delivered')
    expect(await parkedFor(withParked!)).toEqual(['delivered'])
    await storeSid(keyId, withParked!) // the parked-reports worker may apply it first: the outcome is the same
    const blocker = randomSid()
    await storeSid((await t.account(0)).keyId, blocker)

    // Callbacks that arrive while the receiver's transaction is in flight go together into its next
    // one. This test holds the blocker's message (on PGlite: the one connection) so that the blocker's
    // callback stays in flight while the seven arrive, then lets it go.
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let holding!: () => void
    const held = new Promise<void>((resolve) => (holding = resolve))
    const hold = t.db.sql.begin(async (tx) => {
      await tx`select id from messages where message_sid = ${blocker} for update`
      holding()
      await released
    })
    await held
    const receiving = new Promise<void>((resolve) => (onBegin = resolve))
    const blocked = callback(blocker, 'delivered')
    await receiving // the blocker's callback is in the receiver's transaction, waiting there
    onBegin = () => {}
    const together = [
      callback(twice!, 'delivered'),
      callback(backwards!, 'read'),
      callback(withParked!, 'read'),
      callback(twice!, 'read'),
      callback(unknown!, 'delivered'),
      callback(backwards!, 'delivered'),
      callback(unknownSent!, 'sent'),
    ]
    release()
    await hold
    expect((await blocked).body).toEqual({ success: true, data: { changed: true } })
    const changed = (await Promise.all(together)).map((res) => res.body.data.changed)
    // One transaction moved the three messages, twice's twice: now() is its start, so twice's delivered_at
    // and the three read_at are one timestamp.
    const [{ times }] = await t.db.sql<[{ times: number }]>`
      select count(distinct t)::int as times from (
        select read_at as t from messages where message_sid = any(${[twice!, backwards!, withParked!]}::text[])
        union all
        select delivered_at from messages where message_sid = ${twice!}
      ) as stamps`
    expect(times).toBe(1)
    // Four changes (twice's two, backwards's read, withParked's read), one report parked (unknown's):
    // backwards's late delivered and unknownSent's sent change nothing.
    expect(changed).toEqual([true, true, true, true, false, false, false])
    const [{ parked }] = await t.db.sql<[{ parked: number }]>`
      select count(*)::int as parked from parked_reports where message_sid = any(${[twice!, backwards!, withParked!, unknown!, unknownSent!]}::text[])`
    expect([changed.filter(Boolean).length, parked]).toEqual([4, 1])
    expect(await eventsOf(twice!)).toEqual([
      ['sent', 'delivered'],
      ['delivered', 'read'],
    ])
    expect(await eventsOf(backwards!)).toEqual([['sent', 'read']])
    expect(await eventsOf(withParked!)).toEqual([
      ['sent', 'delivered'],
      ['delivered', 'read'],
    ])
    expect(await parkedFor(withParked!)).toEqual([])
    expect(await parkedFor(unknown!)).toEqual(['delivered'])
    expect(await parkedFor(unknownSent!)).toEqual([])
  })

  test('callbacks posted concurrently for many messages: each goes sent → delivered → read, its events and webhooks in order', async () => {
    const { key, secret } = await keyWithWebhook(100 * 40)
    const sids = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const sent = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'halo' })
        expect(sent.status).toBe(200)
        return sent.body.data.message_id as string
      }),
    )
    const answers = await Promise.all(
      sids.map(async (sid) => [(await callback(sid, 'delivered')).body, (await callback(sid, 'read')).body]),
    )
    expect(answers).toEqual(
      sids.map(() => [
        { success: true, data: { changed: true } },
        { success: true, data: { changed: true } },
      ]),
    )
    for (const sid of sids) {
      expect(await eventsOf(sid)).toEqual([
        ['sent', 'delivered'],
        ['delivered', 'read'],
      ])
    }
    // Only this test's webhooks (the same steps deliver the events earlier tests left): 2 per message, each verified.
    const mine = new Set(sids)
    const ours = () => rx.requests.filter((r) => mine.has(JSON.parse(r.body).data.message_sid))
    await drain('webhook-delivery')
    expect(ours()).toHaveLength(2 * sids.length)
    const arrived = new Map<string, string[]>()
    for (const r of ours()) {
      const data = (new Webhook(secret).verify(r.body, r.headers) as any).data
      arrived.set(data.message_sid, [...(arrived.get(data.message_sid) ?? []), data.status])
    }
    expect(sids.map((sid) => arrived.get(sid))).toEqual(sids.map(() => ['delivered', 'read']))
  }, 30_000)
})

// Last: these move the clock past a parked report's hour, and a webhook signed after that is dated
// ahead of the real time its receiver checks signatures by.
describe('expiry', () => {
  test(`a parked report expires after ${PARKED_REPORT_TTL_SECONDS} s: never applied, then deleted by retention`, async () => {
    expect(PARKED_REPORT_TTL_SECONDS).toBe(3600)
    const { keyId } = await keyWithWebhook()
    const [late, inTime] = [randomSid(), randomSid()]
    await callback(late, 'delivered')
    const [row] = await t.db.sql<{ ttl: number }[]>`
      select extract(epoch from expires_at - received_at)::int as ttl from parked_reports where message_sid = ${late}`
    expect(row!.ttl).toBe(PARKED_REPORT_TTL_SECONDS)
    // A second later the other is parked; the first's hour then runs out while the second has a second left.
    await clock.advance(1_000)
    await callback(inTime, 'delivered')
    await clock.advance(PARKED_REPORT_TTL_SECONDS * 1000 - 500)
    await storeSid(keyId, late)
    await storeSid(keyId, inTime)
    await drain('parked-reports')
    // The one still in time is applied; the expired one, parked before it, is not.
    expect(await messageStatus(inTime)).toBe('delivered')
    expect(await messageStatus(late)).toBe('sent')
    expect(await parkedFor(late)).toEqual(['delivered'])

    await t.runWorker('retention')
    expect(await parkedFor(late)).toEqual([])
    expect(await messageStatus(late)).toBe('sent')
    expect(await eventsOf(late)).toEqual([])
  })

  test('an expired parked report is dropped, not applied, when a later report for its SID arrives', async () => {
    const { keyId } = await keyWithWebhook()
    const sid = randomSid()
    await callback(sid, 'delivered')
    await clock.advance(PARKED_REPORT_TTL_SECONDS * 1000 + 1_000) // past its hour
    await storeSid(keyId, sid)
    await callback(sid, 'read')
    expect(await eventsOf(sid)).toEqual([['sent', 'read']])
    expect(await parkedFor(sid)).toEqual([])
  })
})
