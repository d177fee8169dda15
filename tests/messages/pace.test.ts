// Hand-offs at the sender's pace, through a fake Graph API that enforces Meta's limits (130429 beyond
// its rate, 131056 within a recipient's gap, with Retry-After): the pace keeps under the limit across
// instances, throttling answers are retried and never refunded, a message whose validity runs out
// fails with the provider's code and is refunded, a single send the pace cannot take in time is 429
// before anything is charged, and a message taken over while it waited for its slot is not sent by
// the waiter.

import { afterAll, afterEach, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeGraph, graphError } from '../helpers/fake-graph'
import { inFlight, type InFlight } from '../helpers/in-flight'
import { buildDeps } from '../../src/server'
import { createApp } from '../../src/app'
import { TestClock } from '../../src/lib/clock'

const fake = fakeGraph()
afterAll(() => fake.stop())

let t: TestApp | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
  fake.reset()
})

/**
 * An app on a test clock the fake keeps its limits by, its provider's requests tracked: time passes
 * only while every hand-off waits (for a slot, a Retry-After), never while a request travels.
 */
async function pacedApp(options: Parameters<typeof testApp>[0] = {}): Promise<TestApp & { clock: TestClock; flight: InFlight }> {
  const clock = new TestClock()
  const flight = inFlight()
  const app = await testApp({ ...options, clock, wrapSql: flight.sql })
  flight.track(app.deps.provider)
  fake.now = () => clock.monotonic()
  return Object.assign(app, { clock, flight })
}

/** `work` run to its end on the app's clock: each time every hand-off waits, time moves to the first wait's end. */
const drive = <T>(app: { clock: TestClock; flight: InFlight }, work: Promise<T>): Promise<T> =>
  app.clock.run(work, undefined, app.flight.idle)

const metaEnv = (env: Record<string, string> = {}): Record<string, string> => ({
  PROVIDER: 'meta',
  META_ACCESS_TOKEN: 'EAAtoken',
  META_PHONE_NUMBER_ID: '1234567890',
  META_APP_SECRET: 'app-secret',
  META_VERIFY_TOKEN: 'verify',
  META_API_BASE: fake.apiBase,
  PROVIDER_TIMEOUT_MS: '2000',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  ...env,
})

const bulkOf = (n: number, prefix: string, to = (i: number) => `0812400${String(i).padStart(5, '0')}`) => ({
  messages: Array.from({ length: n }, (_, i) => ({ to: to(i), body: `${prefix} ${i}` })),
})

const throttles = () => fake.requests.filter((r) => r.code === 130429 || r.code === 131056).length

async function refunds(app: TestApp, accountId: number): Promise<number> {
  const [row] = await app.db.sql<{ n: number }[]>`select count(*)::int as n from ledger where account_id = ${accountId} and kind = 'refund'`
  return row!.n
}

test('a bulk at the pace: the provider never throttles, every entry is sent once, the pace shows in the time taken', async () => {
  // The pace under the provider's limit: at 6 a second (5.88 with the pace's margin) eleven hand-offs span
  // 1.7 s, so eleven never fall into one of the fake's seconds.
  fake.limits.perSecond = 10
  const app = (t = await pacedApp({ env: metaEnv({ PROVIDER_MAX_PER_SECOND: '6' }) }))
  const { accountId, key } = await t.account(1000)
  const started = app.clock.monotonic()
  const answer = await drive(app, t.api('POST', '/messages/bulk', key, bulkOf(30, 'paced')))
  const elapsed = app.clock.monotonic() - started
  expect(answer.status).toBe(200)
  expect(answer.body.data).toMatchObject({ total: 30, sent: 30, failed: 0 })
  expect(throttles()).toBe(0)
  expect(fake.accepted.duplicates()).toEqual([])
  expect(fake.requests).toHaveLength(30)
  expect(elapsed).toBeGreaterThan(4_000) // 30 at 6 a second: the last slot is 4.9 s after the first
  expect(await money(t, accountId)).toEqual({ balance: 970, ledgerSum: 970 })
}, 30_000)

test('two instances on one database share one pace', async () => {
  fake.limits.perSecond = 10
  // 6 a second (5.88 with the margin): eleven hand-offs span 1.7 s, never one of the fake's seconds, while
  // two instances each pacing alone would go at 11.8 a second together.
  const app = (t = await pacedApp({ env: metaEnv({ PROVIDER_MAX_PER_SECOND: '6' }) }))
  const otherDeps = buildDeps(t.deps.config, { ...t.db, sql: app.flight.sql(t.db.sql) }, { clock: app.clock }).deps
  app.flight.track(otherDeps.provider)
  const other = createApp(otherDeps)
  const { accountId, key } = await t.account(1000)
  const onOther = (body: unknown) =>
    other
      .handle(
        new Request('http://localhost/api/v1/messages/bulk', {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      )
      .then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
  const [a, b] = await drive(app, Promise.all([t.api('POST', '/messages/bulk', key, bulkOf(15, 'one')), onOther(bulkOf(15, 'two'))]))
  expect([a.status, b.status]).toEqual([200, 200])
  expect(a.body.data.sent + b.body.data.sent).toBe(30)
  expect(throttles()).toBe(0) // each instance alone would have gone at 6 a second: together, 12
  expect(fake.accepted.duplicates()).toEqual([])
  expect(await money(t, accountId)).toEqual({ balance: 970, ledgerSum: 970 })
}, 30_000)

test('throttling answers (130429 with Retry-After) are retried, never refunded; every entry ends sent once', async () => {
  fake.limits.perSecond = 5 // the number's real rate is lower than the configured one
  const app = (t = await pacedApp({ env: metaEnv({ PROVIDER_MAX_PER_SECOND: '40' }) }))
  const { accountId, key } = await t.account(1000)
  const answer = await drive(app, t.api('POST', '/messages/bulk', key, bulkOf(20, 'throttled')))
  expect(answer.status).toBe(200)
  expect(answer.body.data).toMatchObject({ total: 20, sent: 20, failed: 0 })
  expect(throttles()).toBeGreaterThan(0)
  expect(fake.accepted.duplicates()).toEqual([])
  expect(fake.ids).toHaveLength(20)
  expect(await refunds(t, accountId)).toBe(0)
  expect(await money(t, accountId)).toEqual({ balance: 980, ledgerSum: 980 })
}, 30_000)

test("a recipient's gap (131056) is kept: three messages to one number go over 1 s apart, none throttled, and nobody else waits for them", async () => {
  fake.limits.recipientGapMs = 1_000
  const app = (t = await pacedApp({ env: metaEnv({ PROVIDER_RECIPIENT_GAP_MS: '1500' }) }))
  const { key } = await t.account(100)
  const answer = await drive(
    app,
    t.api(
      'POST',
      '/messages/bulk',
      key,
      bulkOf(5, 'gap', (i) => (i < 3 ? '081240099999' : `08124000000${i}`)),
    ),
  )
  expect(answer.body.data).toMatchObject({ sent: 5, failed: 0 })
  expect(throttles()).toBe(0)
  const times = fake.requests.filter((r) => r.to === '6281240099999').map((r) => r.at)
  expect(times).toHaveLength(3)
  expect(times[2]! - times[0]!).toBeGreaterThan(2_100)
  // The busy recipient holds up nobody else: the other two went before its second message.
  const others = fake.requests.filter((r) => r.to !== '6281240099999').map((r) => r.at)
  expect(Math.max(...others)).toBeLessThan(times[1]!)
}, 30_000)

test('a single send the pace cannot take within SEND_WAIT_MS: 429 RATE_LIMITED with Retry-After, nothing charged', async () => {
  // The second send's slot is about a second after the first's, further than its 100 ms of waiting.
  const app = (t = await pacedApp({ env: metaEnv({ PROVIDER_MAX_PER_SECOND: '1', SEND_WAIT_MS: '100' }) }))
  const { accountId, key } = await t.account(100)
  const first = await drive(app, t.api('POST', '/messages/send', key, { to: '081240000001', body: 'first' }))
  expect(first.status).toBe(200)
  const second = await drive(app, t.request('POST', '/api/v1/messages/send', { key, body: { to: '081240000002', body: 'second' } }))
  expect(second.status).toBe(429)
  expect(second.body).toMatchObject({ success: false, code: 'RATE_LIMITED' })
  expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  expect(await money(t, accountId)).toEqual({ balance: 99, ledgerSum: 99 })
  expect(fake.requests).toHaveLength(1)
}, 30_000)

test('a throttled single send is answered 202 queued; its outcome comes as a message.status event from queued', async () => {
  let refusals = 3
  fake.answer = () => (refusals-- > 0 ? graphError(400, 130429, '(#130429) Rate limit hit', { 'retry-after': '1' }) : undefined)
  const app = (t = await pacedApp({ env: metaEnv({ SEND_WAIT_MS: '300' }) }))
  const { accountId, key } = await t.account(100)
  expect((await t.api('POST', '/webhook', key, { url: 'http://127.0.0.1:9/hook' })).status).toBe(200)
  const answer = await drive(app, t.api('POST', '/messages/send', key, { to: '081240000003', body: 'later' }))
  expect(answer.status).toBe(202)
  expect(answer.body.data).toMatchObject({ status: 'queued', to: '+6281240000003', cost: 1, balance_after: 99 })
  const id = answer.body.data.id
  // Listed while it waits (a message being handed over is not, unless it was answered queued).
  const listed = await t.api('GET', '/messages?status=queued', key)
  expect(listed.body.data.items.map((m: any) => [m.id, m.status, m.message_sid])).toEqual([[id, 'queued', null]])
  // Its hand-off goes on through the throttles: waited for as the service waits for an outcome.
  await drive(app, t.deps.handoff.outcomeOf(id))
  const [row] = await t.db.sql<{ status: string; message_sid: string | null }[]>`select status, message_sid from messages where id = ${id}`
  expect(row!.status).toBe('sent')
  const events = await t.db.sql<{ payload: string }[]>`select payload from webhook_events where message_id = ${id}`
  expect(events.map((e) => JSON.parse(e.payload).data)).toEqual([
    expect.objectContaining({ message_sid: row!.message_sid, status: 'sent', previous_status: 'queued' }),
  ])
  expect(fake.ids).toHaveLength(1)
  expect(await money(t, accountId)).toEqual({ balance: 99, ledgerSum: 99 })
}, 30_000)

test("a message still throttled when its validity runs out fails with the provider's code and is refunded, once", async () => {
  fake.answer = () => graphError(400, 130429, '(#130429) Rate limit hit', { 'retry-after': '1' })
  t = await pacedApp({ env: metaEnv({ SEND_WAIT_MS: '300', BULK_WAIT_MS: '300' }) })
  const { accountId, key } = await t.account(100)
  expect((await t.api('POST', '/webhook', key, { url: 'http://127.0.0.1:9/hook' })).status).toBe(200)
  // 60 s is the least validity a request may ask for; the default is set lower here (MESSAGE_VALIDITY_SECONDS).
  expect((await t.api('POST', '/messages/send', key, { to: '081240000004', body: 'x', validity_seconds: 59 })).status).toBe(422)
  const u = await pacedApp({ env: metaEnv({ SEND_WAIT_MS: '300', BULK_WAIT_MS: '300', MESSAGE_VALIDITY_SECONDS: '2' }) })
  try {
    const a = await u.account(100)
    expect((await u.api('POST', '/webhook', a.key, { url: 'http://127.0.0.1:9/hook' })).status).toBe(200)
    const bulk = await drive(u, u.api('POST', '/messages/bulk', a.key, bulkOf(2, 'expiring')))
    expect(bulk.status).toBe(200)
    expect(bulk.body.data).toMatchObject({ total: 2, sent: 0, failed: 0, queued: 2, total_cost: 2, balance_after: 98 })
    expect(bulk.body.data.results.map((r: any) => r.status)).toEqual(['queued', 'queued'])
    // Their hand-offs go on, throttled, until their validity runs out: waited for as the service waits for outcomes.
    await drive(u, Promise.all(bulk.body.data.results.map((r: any) => u.deps.handoff.outcomeOf(r.id))))
    const rows = await u.db.sql<{ status: string; error_code: number | null; refunded: boolean }[]>`
      select status, error_code, refunded_at is not null as refunded from messages order by id`
    expect([...rows]).toEqual([
      { status: 'failed', error_code: 130429, refunded: true },
      { status: 'failed', error_code: 130429, refunded: true },
    ])
    const events = await u.db.sql<{ payload: string }[]>`select payload from webhook_events order by id`
    expect(events.map((e) => JSON.parse(e.payload).data)).toEqual([
      expect.objectContaining({ status: 'failed', previous_status: 'queued', error_code: 130429, refunded: true }),
      expect.objectContaining({ status: 'failed', previous_status: 'queued', error_code: 130429, refunded: true }),
    ])
    expect(await money(u, a.accountId)).toEqual({ balance: 100, ledgerSum: 100 })
    expect(fake.ids).toHaveLength(0)
  } finally {
    await u.close()
  }
  expect(await money(t, accountId)).toEqual({ balance: 100, ledgerSum: 100 })
}, 30_000)

test('a message taken over while it waits for its slot is not handed over by the waiter', async () => {
  // Leases of 3 s: the one the charge gave the last entry runs out soon after it is taken over.
  const app = (t = await pacedApp({ workers: true, env: metaEnv({ PROVIDER_MAX_PER_SECOND: '2', HANDOFF_LEASE_SECONDS: '3' }) }))
  const { accountId, key } = await t.account(100)
  let firstHandoff!: () => void
  const first = new Promise<void>((resolve) => (firstHandoff = resolve))
  fake.answer = () => void firstHandoff()
  const answer = t.api('POST', '/messages/bulk', key, bulkOf(4, 'waiting'))
  await first
  // The last entry's slot is 1.5 s away: another holder takes it over meanwhile (its token), with the
  // lease the charge gave it (3 s): the waiter's heartbeat no longer renews it.
  await t.db.sql`update messages set handoff_token = gen_random_uuid() where body = 'waiting 3'`
  await drive(app, app.clock.sleep(2_500))
  expect(fake.requests.map((r) => r.text)).toEqual(['waiting 0', 'waiting 1', 'waiting 2'])
  // Its new holder died (its lease runs out): recovery sends it, once.
  const { status, body } = await drive(app, answer)
  expect(status).toBe(200)
  expect(body.data).toMatchObject({ total: 4, sent: 4, failed: 0 })
  expect(fake.accepted.duplicates()).toEqual([])
  expect(fake.requests).toHaveLength(4)
  expect(await money(t, accountId)).toEqual({ balance: 96, ledgerSum: 96 })
}, 30_000)
