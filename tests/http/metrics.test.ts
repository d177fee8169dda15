// GET /metrics through app.handle on a test clock: the admin token on the service's port (the envelope
// otherwise), queue gauges that follow the database's rows (read through a short cache, on the clock),
// the pool's counters, a throttling answer's counters, and METRICS_PORT's setting. The listener on
// loopback, counters through a real server and promtool: metrics-server.outer.test.ts.

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readConfig } from '../../src/config'
import { QUEUES_CACHE_MS } from '../../src/http/metrics/queues'
import { TestClock } from '../../src/lib/clock'
import type { HandoffResult, Provider } from '../../src/providers/provider'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'
import { errorEnvelope } from '../helpers/envelope'
import { parseExposition, type Scrape } from '../helpers/prometheus'
import { reportStatus } from '../helpers/reports'

setDefaultTimeout(60_000)

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

describe('through app.handle', () => {
  let t: TestApp
  const clock = new TestClock()
  // A provider that holds every hand-off until released: its messages stay queued meanwhile.
  const waiting: (() => void)[] = []
  const release = () => waiting.splice(0).forEach((resolve) => resolve())
  // Resolves when a hand-off reaches the provider (an event, not a poll).
  let reached: (() => void)[] = []
  const handedOver = () => new Promise<void>((resolve) => reached.push(resolve))
  const held: Provider = {
    name: 'simulator',
    send: () =>
      new Promise<HandoffResult>((resolve) => {
        waiting.push(() => resolve({ ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }))
        const arrived = reached
        reached = []
        for (const resume of arrived) resume()
      }),
  }

  beforeAll(async () => {
    t = await testApp({ clock, provider: held, env: { PROVIDER_TIMEOUT_MS: '30000', WEBHOOK_ALLOW_PRIVATE: 'true' } })
  })
  afterAll(async () => {
    release()
    await t?.close()
  })

  test('no token: 401 AUTH_MISSING_HEADER; a wrong one: 401 AUTH_INVALID_KEY, as the admin API answers, in the envelope', async () => {
    const missing = await t.request('GET', '/metrics')
    expect(missing.status).toBe(401)
    expect(missing.body).toEqual(errorEnvelope(missing.headers, 'AUTH_MISSING_HEADER'))
    const wrong = await t.request('GET', '/metrics', { key: 'not-the-admin-token-at-all' })
    expect(wrong.status).toBe(401)
    expect(wrong.body).toEqual(errorEnvelope(wrong.headers, 'AUTH_INVALID_KEY'))
    // An API key is not the admin token either.
    const { key } = await t.account(10)
    const apiKey = await t.request('GET', '/metrics', { key })
    expect(apiKey.status).toBe(401)
    expect(apiKey.body.code).toBe('AUTH_INVALID_KEY')
    expect(JSON.stringify([missing.body, wrong.body, apiKey.body])).not.toContain('messaging_')
  })

  test('queue gauges follow the rows: a queued hand-off, a pending webhook event, parked reports; read through a short cache', async () => {
    const { key } = await t.account(100, { price: 10 })
    // Nothing listens there, and no delivery worker runs here: its events stay pending.
    expect((await t.api('POST', '/webhook', key, { url: 'http://127.0.0.1:9/hook' })).status).toBe(200)
    // A sent message, then a provider report that makes its event.
    const firstReached = handedOver()
    const first = t.api('POST', '/messages/send', key, { to: '081234560001', body: 'one' })
    await firstReached
    release()
    const sent = await first
    expect(sent.status).toBe(200)
    expect((await reportStatus(t, sent.body.data.message_id, 'delivered')).changed).toBe(true)
    // Two reports for SIDs nobody knows yet: parked.
    for (const sid of ['SMaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'SMbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb']) {
      expect((await reportStatus(t, sid, 'delivered')).changed).toBe(false)
    }
    // A send whose hand-off the provider holds: charged, queued.
    const secondReached = handedOver()
    const second = t.api('POST', '/messages/send', key, { to: '081234560002', body: 'two' })
    await secondReached

    const during = await scrapeApp(t)
    expect(during.value('messaging_handoffs_queued')).toBe(1)
    expect(during.value('messaging_webhook_events_pending')).toBe(1)
    expect(during.value('messaging_webhook_oldest_pending_age_seconds')).toBeGreaterThan(0)
    expect(during.value('messaging_webhook_due_lag_seconds')).toBeGreaterThan(0)
    expect(during.value('messaging_status_reports_parked')).toBe(2)
    expect(during.value('messaging_campaigns_sending')).toBe(0)
    expect(during.value('messaging_handoffs_quarantined')).toBe(0)
    expect(during.value('messaging_queues_read_success')).toBe(1)
    for (const name of ['messaging_handoffs_queued', 'messaging_webhook_events_pending', 'messaging_status_reports_parked']) {
      expect(during.types.get(name)).toBe('gauge')
    }

    release()
    expect((await second).status).toBe(200)
    // Within the cache's time the depths are the same read, even its last millisecond; after it, a new one.
    await clock.advance(QUEUES_CACHE_MS - 1)
    const cached = await scrapeApp(t)
    expect(cached.value('messaging_handoffs_queued')).toBe(1)
    await clock.advance(1)
    const after = await scrapeApp(t)
    expect(after.value('messaging_handoffs_queued')).toBe(0)
    expect(after.value('messaging_status_reports_parked')).toBe(2)
  })

  test('pool: transactions counted through sql.begin, the pool size shown', async () => {
    const before = await scrapeApp(t)
    await t.account(5) // an account with an opening balance: a transaction
    await clock.advance(QUEUES_CACHE_MS) // and the next scrape's own read of the depths is one more
    const after = await scrapeApp(t)
    expect(after.value('messaging_db_transaction_start_seconds_count')).toBeGreaterThan(
      before.value('messaging_db_transaction_start_seconds_count'),
    )
    expect(after.value('messaging_db_transactions_open')).toBeGreaterThanOrEqual(0)
    expect(after.value('messaging_db_transactions_waiting')).toBeGreaterThanOrEqual(0)
    expect(after.value('messaging_db_pool_max_connections')).toBe(t.db.sql.options.max)
    if (!usingPostgres()) expect(t.db.sql.options.max).toBe(1)
  })
})

test('a throttling answer: a throttled attempt, a throttle of its scope, and the wait before the next attempt', async () => {
  let calls = 0
  const throttling: Provider = {
    name: 'simulator',
    async send() {
      calls++
      if (calls === 1)
        return { ok: false, errorCode: 130429, errorMessage: 'Rate limit hit', throttle: { scope: 'sender', retryAfterMs: 200 } }
      return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
    },
  }
  const clock = new TestClock()
  const t = await testApp({ clock, provider: throttling })
  try {
    const { key } = await t.account(100, { price: 10 })
    const before = await scrapeApp(t)
    // The send waits out the Retry-After at the pace: on the clock, as long as it sleeps.
    const sent = await clock.run(t.api('POST', '/messages/send', key, { to: '081234560003', body: 'throttled once' }))
    expect(sent.status).toBe(200)
    expect(calls).toBe(2)
    const after = await scrapeApp(t)
    const delta = (name: string, labels: Record<string, string> = {}) => after.value(name, labels) - before.value(name, labels)
    expect(delta('messaging_handoffs_total', { provider: 'simulator', outcome: 'throttled' })).toBe(1)
    expect(delta('messaging_handoffs_total', { provider: 'simulator', outcome: 'accepted' })).toBe(1)
    expect(delta('messaging_provider_throttles_total', { provider: 'simulator', scope: 'sender' })).toBe(1)
    // Two slots taken; the second waited out the provider's Retry-After at the pace.
    expect(delta('messaging_pace_wait_seconds_count', { provider: 'simulator' })).toBe(2)
    expect(delta('messaging_pace_wait_seconds_sum', { provider: 'simulator' })).toBeGreaterThanOrEqual(0.15)
  } finally {
    await t.close()
  }
})

test('METRICS_PORT: unset is no listener; a port must be a port, and not PORT itself', () => {
  expect(readConfig({}).metricsPort).toBeUndefined()
  expect(readConfig({ METRICS_PORT: '9464' }).metricsPort).toBe(9464)
  expect(() => readConfig({ METRICS_PORT: 'nine' })).toThrow('METRICS_PORT: expected an integer from 0 to 65535, got "nine"')
  expect(() => readConfig({ METRICS_PORT: '70000' })).toThrow('METRICS_PORT: expected an integer')
  expect(() => readConfig({ PORT: '3000', METRICS_PORT: '3000' })).toThrow('METRICS_PORT: must differ from PORT (3000)')
})

async function scrapeApp(t: TestApp): Promise<Scrape> {
  const response = await t.app.handle(new Request('http://localhost/metrics', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }))
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe(CONTENT_TYPE)
  return parseExposition(await response.text())
}
