// The simulator plays by WhatsApp's rules: a sender's rate (SIM_RATE_PER_SECOND, 130429 beyond it) and
// a gap per recipient (SIM_RECIPIENT_GAP_MS, 131056 within it) answered as throttles with a Retry-After,
// held across instances on one database; numbers that are not WhatsApp users (…7777, 131026); reports
// that come late and out of order (…6666). Through the provider interface, the API and the worker's
// steps, on a test clock: the rules count by its time, which moves only when the test moves it.

import { TestClock } from '../../src/lib/clock'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { ConfigError, readConfig } from '../../src/config'
import type { HandoffResult, OutgoingMessage } from '../../src/providers/provider'
import { paceOf } from '../../src/providers/registry'
import { providerOf } from '../../src/server'
import { money, testApp, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'

const clock = new TestClock()
let t: TestApp
let other: postgres.Sql | undefined
beforeAll(async () => {
  t = await testApp({
    clock,
    runOnClock: true,
    env: { SIM_DELIVERED_MS: '100', SIM_READ_MS: '150', SIM_LATE_MS: '800', WEBHOOK_ALLOW_PRIVATE: 'true' },
  })
  // A second instance's connection to the same database (the embedded one has a single connection).
  if (usingPostgres()) other = postgres(t.db.url!, { max: 4, onnotice: () => {} })
})
afterAll(async () => {
  await other?.end()
  await t.close()
})
beforeEach(async () => {
  await t.db.sql`delete from simulator_sender_second`
  await t.db.sql`delete from simulator_recipient_gap`
})

/** A simulator with these settings, on this test's database (or the second instance's connection), on the test's clock. */
const simulator = (env: Record<string, string>, sql: postgres.Sql = t.db.sql) => providerOf(readConfig(env), sql, clock)
const message = (id: number, to = '+6281234567890'): OutgoingMessage => ({ id, to, body: `message ${id}`, mediaUrl: null })
const throttleOf = (r: HandoffResult) => (r.ok ? null : (r.throttle ?? null))

/** `ms` pass, and the simulator's reports due by then are applied (its worker's steps, until one finds none). */
async function after(ms: number) {
  await clock.advance(ms)
  while ((await t.runWorker('simulator-reports')) > 0) {}
}

/** Moves the clock to the start of its next second (it stays there while a burst goes: the burst falls within that second). */
async function nextSecond() {
  await clock.advanceTo((Math.floor(clock.now().getTime() / 1000) + 1) * 1000)
}

describe('settings', () => {
  const configError = (env: Record<string, string>) => {
    try {
      readConfig(env)
    } catch (error) {
      if (error instanceof ConfigError) return error.message
      throw error
    }
    return null
  }

  test('defaults keep today: no rate, no gap, the pace of an upgraded number; set, they are its pace', () => {
    expect(readConfig({}).providers.simulator).toMatchObject({ ratePerSecond: 0, recipientGapMs: 0, lateMs: 10_000 })
    expect(paceOf('simulator', readConfig({}).providers.simulator)).toEqual({
      perSecond: 1000,
      recipientGapMs: 0,
      source: 'the simulator (an upgraded number, no pair rate)',
    })
    expect(paceOf('simulator', readConfig({ SIM_RATE_PER_SECOND: '80', SIM_RECIPIENT_GAP_MS: '6000' }).providers.simulator)).toEqual({
      perSecond: 80,
      recipientGapMs: 6000,
      source: 'the simulator (SIM_RATE_PER_SECOND, SIM_RECIPIENT_GAP_MS)',
    })
    expect(paceOf('simulator', readConfig({ SIM_RECIPIENT_GAP_MS: '500' }).providers.simulator)).toMatchObject({
      perSecond: 1000,
      recipientGapMs: 500,
    })
    // The real providers' paces are their documented defaults, whatever their settings.
    expect(paceOf('meta', readConfig({}).providers.meta)).toMatchObject({ perSecond: 80, recipientGapMs: 6000 })
  })

  test('a bad value stops the start with one line naming it', () => {
    expect(configError({ SIM_RATE_PER_SECOND: 'fast' })).toBe('SIM_RATE_PER_SECOND: expected an integer from 0 to 100000, got "fast"')
    expect(configError({ SIM_RATE_PER_SECOND: '-1' })).toBe('SIM_RATE_PER_SECOND: expected an integer from 0 to 100000, got "-1"')
    expect(configError({ SIM_RECIPIENT_GAP_MS: '1.5' })).toBe('SIM_RECIPIENT_GAP_MS: expected an integer from 0 to 86400000, got "1.5"')
    expect(configError({ SIM_LATE_MS: '86400001' })).toBe('SIM_LATE_MS: expected an integer from 0 to 86400000, got "86400001"')
  })

  test('without a rate or a gap it keeps no counters', async () => {
    const sender = simulator({})
    const results = await Promise.all([1, 2, 3, 4].map((id) => sender.send(message(id))))
    expect(results.every((r) => r.ok)).toBe(true)
    const [rows] = await t.db.sql<{ senders: number; recipients: number }[]>`
      select (select count(*)::int from simulator_sender_second) as senders, (select count(*)::int from simulator_recipient_gap) as recipients`
    expect(rows).toEqual({ senders: 0, recipients: 0 })
  })
})

describe('a rate per sender: 130429 beyond it, a throttle with Retry-After', () => {
  test('SIM_RATE_PER_SECOND=3: of 6 at once from two instances, 3 go and 3 are throttled until the next second', async () => {
    const env = { SIM_RATE_PER_SECOND: '3' }
    const one = simulator(env)
    const two = simulator(env, other ?? t.db.sql)
    await nextSecond()
    const results = await Promise.all([1, 2, 3, 4, 5, 6].map((id) => (id % 2 ? one : two).send(message(id, `+62812000000${id}0`))))
    expect(results.filter((r) => r.ok)).toHaveLength(3)
    const throttled = results.filter((r) => !r.ok)
    expect(throttled).toHaveLength(3)
    for (const r of throttled) {
      expect(r).toEqual({
        ok: false,
        errorCode: 130429,
        errorMessage: '(#130429) Rate limit hit: the simulator takes 3 messages per second (SIM_RATE_PER_SECOND)',
        throttle: { scope: 'sender', retryAfterMs: expect.any(Number) },
      })
      expect(throttleOf(r)!.retryAfterMs).toBeWithin(1, 1001)
    }
    // After its Retry-After, a throttled message goes.
    await clock.advance(throttleOf(throttled[0]!)!.retryAfterMs!)
    expect((await two.send(message(7))).ok).toBe(true)
  })
})

describe('a gap per recipient: 131056 within it, a throttle with Retry-After', () => {
  test('SIM_RECIPIENT_GAP_MS=1500: a second message to one number waits; another number does not', async () => {
    const sender = simulator({ SIM_RECIPIENT_GAP_MS: '1500' })
    const second = simulator({ SIM_RECIPIENT_GAP_MS: '1500' }, other ?? t.db.sql)
    expect((await sender.send(message(1, '+6281200000001'))).ok).toBe(true)
    const again = await second.send(message(2, '+6281200000001'))
    expect(again).toEqual({
      ok: false,
      errorCode: 131056,
      errorMessage:
        '(#131056) (Business Account, Consumer Account) pair rate limit hit: the simulator sends one message every 1500 ms ' +
        'to a recipient (SIM_RECIPIENT_GAP_MS)',
      throttle: { scope: 'recipient', retryAfterMs: expect.any(Number) },
    })
    expect(throttleOf(again)!.retryAfterMs).toBeWithin(1, 1501)
    expect((await sender.send(message(3, '+6281200000002'))).ok).toBe(true)
    await clock.advance(throttleOf(again)!.retryAfterMs!)
    expect((await second.send(message(2, '+6281200000001'))).ok).toBe(true)
  })

  test('both rules are taken together or not at all: a refusal by one leaves the other untouched', async () => {
    const sender = simulator({ SIM_RATE_PER_SECOND: '2', SIM_RECIPIENT_GAP_MS: '5000' })
    await nextSecond()
    const [first, sameNumber, otherNumber, overRate] = [
      await sender.send(message(1, '+6281200000011')),
      // Refused by the gap: it does not use the second's other slot...
      await sender.send(message(2, '+6281200000011')),
      await sender.send(message(3, '+6281200000012')),
      // ...and refused by the rate, a number's gap does not start.
      await sender.send(message(4, '+6281200000013')),
    ]
    expect([first, sameNumber, otherNumber, overRate].map((r) => (r.ok ? 'sent' : r.errorCode))).toEqual(['sent', 131056, 'sent', 130429])
    await clock.advance(throttleOf(overRate)!.retryAfterMs!)
    expect((await sender.send(message(4, '+6281200000013'))).ok).toBe(true)
  })

  test('numbers long free are forgotten as it goes', async () => {
    const sender = simulator({ SIM_RECIPIENT_GAP_MS: '1000' })
    for (const id of [1, 2, 3]) expect((await sender.send(message(id, `+628120000010${id}`))).ok).toBe(true)
    await clock.advance(1100)
    expect((await sender.send(message(4, '+6281200000104'))).ok).toBe(true)
    expect((await sender.send(message(5, '+6281200000105'))).ok).toBe(true)
    const rows = await t.db.sql<{ phone: string }[]>`select phone from simulator_recipient_gap order by phone`
    expect(rows.map((r) => r.phone)).toEqual(['+6281200000104', '+6281200000105'])
  })
})

describe('numbers with a story', () => {
  test('a number ending in 7777 is not a WhatsApp user: 131026, a plain failure (502, refunded)', async () => {
    const { accountId, key } = await t.account(100, { price: 10 })
    const res = await t.api('POST', '/messages/send', key, { to: '081234567777', body: 'hello' })
    expect([res.status, res.body.code]).toEqual([502, 'BAD_GATEWAY'])
    const [row] = await t.db
      .sql`select status, error_code, error_message, refunded_at is not null as refunded from messages where id = ${res.body.id}`
    expect(row).toEqual({
      status: 'failed',
      error_code: 131026,
      error_message: '(#131026) Message undeliverable: the number is not a WhatsApp user (simulated: it ends in 7777)',
      refunded: true,
    })
    expect(await money(t, accountId)).toEqual({ balance: 100, ledgerSum: 100 })
    const result = await simulator({}).send(message(1, '+6281234567777'))
    expect(result).toMatchObject({ ok: false, errorCode: 131026 })
    expect(throttleOf(result)).toBeNull()
  })

  test('a number ending in 6666 is reported late and out of order: read after SIM_LATE_MS, then a delivered that changes nothing', async () => {
    const { key, keyId } = await t.account(10)
    await t.db
      .sql`insert into webhook_endpoints (api_key_id, url, signing_secret) values (${keyId}, 'https://hooks.example.com/x', 'whsec_dGVzdA==')`
    const sent = await t.api('POST', '/messages/send', key, { to: '081234566666', body: 'late' })
    expect(sent.status).toBe(200)
    const sid = sent.body.data.message_id
    // Not delivered at SIM_DELIVERED_MS, as other numbers are.
    await after(300)
    expect((await t.api('GET', `/messages/${sid}`, key)).body.data.status).toBe('sent')
    await after(500) // SIM_LATE_MS
    const read = await t.api('GET', `/messages/${sid}`, key)
    expect(read.body.data.status).toBe('read')
    // Reaching `read` records the delivery too (read implies delivered).
    expect(read.body.data).toMatchObject({ status: 'read', delivered_at: read.body.data.read_at, read_at: expect.any(String) })
    // The late `delivered` (at SIM_LATE_MS + SIM_DELIVERED_MS) is applied and changes nothing.
    await after(100)
    expect(await t.db.sql`select 1 from simulator_reports where message_sid = ${sid}`).toHaveLength(0)
    expect((await t.api('GET', `/messages/${sid}`, key)).body.data).toEqual(read.body.data)
    const events = await t.db.sql<{ payload: string }[]>`select payload from webhook_events where api_key_id = ${keyId} order by id`
    expect(events.map((e) => JSON.parse(e.payload).data)).toEqual([
      { message_sid: sid, to: '+6281234566666', status: 'read', previous_status: 'sent', error_code: null, error_message: null },
    ])
  })
})
