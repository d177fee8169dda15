// GET /metrics: the admin token on the service's port (the envelope otherwise), the METRICS_PORT
// listener on loopback without one, the text format read strictly (and by promtool when installed),
// counters that move with real sends, refusals and webhook deliveries through a real server, queue
// gauges that follow the database's rows (read through a short cache), and labels that never carry an
// id or a phone number.

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { readConfig } from '../../src/config'
import { startService, type Running } from '../../src/server'
import { QUEUES_CACHE_MS } from '../../src/http/metrics/queues'
import type { HandoffResult, Provider } from '../../src/providers/provider'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { errorEnvelope } from '../helpers/envelope'
import { parseExposition, type Scrape } from '../helpers/prometheus'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { reportStatus } from '../helpers/reports'
import { until } from '../helpers/wait'

setDefaultTimeout(60_000)

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

describe('through app.handle', () => {
  let t: TestApp
  // A provider that holds every hand-off until released: its messages stay queued meanwhile.
  const waiting: (() => void)[] = []
  const release = () => waiting.splice(0).forEach((resolve) => resolve())
  const held: Provider = {
    name: 'simulator',
    send: () =>
      new Promise<HandoffResult>((resolve) => {
        waiting.push(() => resolve({ ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }))
      }),
  }
  const handedOver = () =>
    until(
      () => waiting.length,
      (n) => n === 1,
      10_000,
      'the hand-off to reach the provider',
    )

  beforeAll(async () => {
    t = await testApp({ provider: held, env: { PROVIDER_TIMEOUT_MS: '30000', WEBHOOK_ALLOW_PRIVATE: 'true' } })
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
    const first = t.api('POST', '/messages/send', key, { to: '081234560001', body: 'one' })
    await handedOver()
    release()
    const sent = await first
    expect(sent.status).toBe(200)
    expect((await reportStatus(t, sent.body.data.message_id, 'delivered')).changed).toBe(true)
    // Two reports for SIDs nobody knows yet: parked.
    for (const sid of ['SMaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'SMbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb']) {
      expect((await reportStatus(t, sid, 'delivered')).changed).toBe(false)
    }
    // A send whose hand-off the provider holds: charged, queued.
    const second = t.api('POST', '/messages/send', key, { to: '081234560002', body: 'two' })
    await handedOver()

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
    // Within the cache's time the depths are the same read; after it, a new one.
    const cached = await scrapeApp(t)
    expect(cached.value('messaging_handoffs_queued')).toBe(1)
    await Bun.sleep(QUEUES_CACHE_MS + 100)
    const after = await scrapeApp(t)
    expect(after.value('messaging_handoffs_queued')).toBe(0)
    expect(after.value('messaging_status_reports_parked')).toBe(2)
  })

  test('pool: transactions counted through sql.begin, the pool size shown', async () => {
    const before = await scrapeApp(t)
    await t.account(5) // an account with an opening balance: a transaction
    await Bun.sleep(QUEUES_CACHE_MS + 100) // and the next scrape's own read of the depths is one more
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
  const t = await testApp({ provider: throttling })
  try {
    const { key } = await t.account(100, { price: 10 })
    const before = await scrapeApp(t)
    const sent = await t.api('POST', '/messages/send', key, { to: '081234560003', body: 'throttled once' })
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

describe('a real server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'messaging-metrics-'))
  let running: Running
  let dropDatabase = async () => {}
  let receiver: Receiver
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }

  beforeAll(async () => {
    receiver = startReceiver(null)
    const env: Record<string, string> = {
      PORT: '0',
      HOST: '127.0.0.1',
      METRICS_PORT: '0',
      ADMIN_TOKEN,
      DATA_DIR: join(dir, 'data'),
      LOG_LEVEL: 'error',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      SIM_DELIVERED_MS: '50',
      SIM_READ_MS: '100',
    }
    if (usingPostgres()) {
      const database = await createMigratedPostgresDatabase()
      env.DATABASE_URL = database.url
      dropDatabase = database.drop
    }
    await premigrate(env.DATA_DIR!)
    running = await startService(readConfig(env))
  }, 60_000)

  afterAll(async () => {
    await running?.stop()
    receiver?.stop()
    await dropDatabase()
    rmSync(dir, { recursive: true, force: true })
  })

  const call = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${running.url}${path}`, init)
    return { status: response.status, headers: response.headers, body: (await response.json()) as any }
  }

  async function scrapeServer(): Promise<{ text: string; scrape: Scrape; response: Response }> {
    const response = await fetch(`${running.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe(CONTENT_TYPE)
    const text = await response.text()
    return { text, scrape: parseExposition(text), response }
  }

  test('the metrics port: loopback only, no token needed there; GET /metrics only', async () => {
    expect(running.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
    const response = await fetch(running.metricsUrl!)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe(CONTENT_TYPE)
    const scrape = parseExposition(await response.text())
    expect(scrape.types.get('messaging_http_requests_total')).toBe('counter')
    const other = await fetch(running.metricsUrl!.replace('/metrics', '/admin/v1/accounts'))
    expect(other.status).toBe(404)
    expect(await other.text()).not.toContain('messaging_')
    const post = await fetch(running.metricsUrl!, { method: 'POST' })
    expect(post.status).toBe(405)
    // Not bound to the machine's other addresses.
    const port = new URL(running.metricsUrl!).port
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)
    if (outside) await expect(fetch(`http://${outside.address}:${port}/metrics`)).rejects.toThrow()
    // On the service's own port the token is still needed.
    const open = await call('/metrics')
    expect(open.status).toBe(401)
    expect(open.body).toEqual(errorEnvelope(open.headers, 'AUTH_MISSING_HEADER'))
  })

  test('counters move with a send, a refused send, a late failure and webhook deliveries; labels carry no ids or phone numbers', async () => {
    const account = await call('/admin/v1/accounts', {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ name: 'metrics', balance: 100 }),
    })
    const accountId = account.body.data.id
    await call('/admin/v1/price', { method: 'PUT', headers: admin, body: JSON.stringify({ cost_per_message: 7, account_id: accountId }) })
    const key = (
      await call(`/admin/v1/accounts/${accountId}/keys`, { method: 'POST', headers: admin, body: JSON.stringify({ label: 'metrics' }) })
    ).body.data.key
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    expect(
      (await call('/api/v1/webhook', { method: 'POST', headers: auth, body: JSON.stringify({ url: receiver.url('127.0.0.1') }) })).status,
    ).toBe(200)

    const before = (await scrapeServer()).scrape
    const sent = await call('/api/v1/messages/send', {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ to: '081234567801', body: 'hi' }),
    })
    expect(sent.status).toBe(200)
    const refused = await call('/api/v1/messages/send', {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ to: '081234569999', body: 'refused by the simulator' }),
    })
    expect(refused.status).toBe(502)
    // Accepted, then reported failed by the simulator: refunded with that status change (a late failure).
    const late = await call('/api/v1/messages/send', {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ to: '081234568888', body: 'late' }),
    })
    expect(late.status).toBe(200)
    expect((await call(`/api/v1/messages/${sent.body.data.message_id}`, { headers: auth })).status).toBe(200)
    // The simulator reports delivered, then read, and the other failed: three message.status events, delivered to the receiver.
    await receiver.waitFor(3, 15_000)
    expect(receiver.requests.length).toBeGreaterThanOrEqual(3)
    const { text, scrape: after } = await until(
      () => scrapeServer(),
      (s) =>
        s.scrape.value('messaging_webhook_attempts_total', { outcome: 'delivered' }) -
          before.value('messaging_webhook_attempts_total', { outcome: 'delivered' }) >=
        3,
    )
    const delta = (name: string, labels: Record<string, string> = {}) => after.value(name, labels) - before.value(name, labels)

    expect(delta('messaging_handoffs_total', { provider: 'simulator', outcome: 'accepted' })).toBe(2)
    expect(delta('messaging_handoffs_total', { provider: 'simulator', outcome: 'refused' })).toBe(1)
    expect(delta('messaging_handoff_duration_seconds_count', { provider: 'simulator' })).toBe(3)
    expect(delta('messaging_pace_wait_seconds_count', { provider: 'simulator' })).toBe(3)
    expect(delta('messaging_balance_movements_total', { kind: 'charge' })).toBe(3)
    expect(delta('messaging_balance_credits_total', { kind: 'charge', direction: 'out' })).toBe(21)
    // The refused hand-off's refund and the late failure's.
    expect(delta('messaging_balance_movements_total', { kind: 'refund' })).toBe(2)
    expect(delta('messaging_balance_credits_total', { kind: 'refund', direction: 'in' })).toBe(14)
    expect(delta('messaging_webhook_attempts_total', { outcome: 'delivered' })).toBeGreaterThanOrEqual(3)
    expect(delta('messaging_webhook_attempts_total', { outcome: 'failed' })).toBe(0)
    expect(delta('messaging_webhook_attempt_duration_seconds_count', { outcome: 'delivered' })).toBeGreaterThanOrEqual(2)
    const send = { route: '/api/v1/messages/send', method: 'POST' }
    expect(delta('messaging_http_requests_total', { ...send, code: '200' })).toBe(2)
    expect(delta('messaging_http_requests_total', { ...send, code: '502' })).toBe(1)
    expect(delta('messaging_http_request_duration_seconds_count', send)).toBe(3)
    // The lookup by SID counts under its template.
    expect(delta('messaging_http_requests_total', { route: '/api/v1/messages/:message_sid', method: 'GET', code: '200' })).toBe(1)
    // PostgreSQL shows the service's connections (the embedded database has no such view of them).
    if (usingPostgres()) expect(after.value('messaging_db_connections')).toBeGreaterThanOrEqual(1)
    // The opening balance of the account, before the first scrape, is a top-up too.
    expect(after.value('messaging_balance_movements_total', { kind: 'topup' })).toBeGreaterThanOrEqual(1)

    // No label value is an id, a SID, a key or a phone number.
    const values = after.samples.flatMap((s) => Object.values(s.labels))
    for (const value of values) {
      expect(value).not.toMatch(/\/\d+(\/|$)/)
      expect(value).not.toMatch(/\d{6,}/)
      expect(value).not.toMatch(/SM[0-9a-f]{32}|pm_|\+62/)
    }
    expect(text).not.toContain(sent.body.data.message_id)
    expect(text).not.toContain(key)
    expect(text).not.toContain('81234567801')
    const routes = new Set(after.samples.filter((s) => s.labels.route).map((s) => s.labels.route))
    expect(routes.has(`/api/v1/messages/${sent.body.data.message_id}`)).toBe(false)
    expect(routes.has(`/admin/v1/accounts/${accountId}/keys`)).toBe(false)
    expect(routes.has('/admin/v1/accounts/:id/keys')).toBe(true)
  })

  test('an unmatched path and an unknown method are bounded labels', async () => {
    const before = (await scrapeServer()).scrape
    expect((await fetch(`${running.url}/no/such/0812345678901`)).status).toBe(404)
    expect((await fetch(`${running.url}/healthz`, { method: 'PROPFIND' })).status).toBeGreaterThanOrEqual(400)
    const after = (await scrapeServer()).scrape
    expect(
      after.value('messaging_http_requests_total', { route: 'unmatched', code: '404' }) -
        before.value('messaging_http_requests_total', { route: 'unmatched', code: '404' }),
    ).toBe(1)
    const methods = new Set(after.samples.flatMap((s) => (s.labels.method ? [s.labels.method] : [])))
    expect(methods.has('PROPFIND')).toBe(false)
    for (const method of methods) expect(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'other']).toContain(method)
  })

  test('every family has HELP and TYPE, names follow the conventions, and promtool check metrics passes', async () => {
    const { text, scrape } = await scrapeServer()
    expect(scrape.types.size).toBeGreaterThan(15)
    for (const [name, type] of scrape.types) {
      expect(scrape.helps.has(name)).toBe(true)
      expect(name).toMatch(/^messaging_[a-z0-9_]+$/)
      if (type === 'counter') expect(name).toMatch(/_total$/)
      else expect(name).not.toMatch(/_total$/)
    }
    const promtool = Bun.which('promtool')
    if (!promtool) {
      // CI installs Debian's prometheus package (.ci/run); only a developer's machine may lack it.
      if (process.env.CI) throw new Error('promtool not found: install Debian package prometheus (.ci/run does)')
      console.warn('SKIPPED: promtool check metrics (promtool not installed: apt-get install -y prometheus)')
      return
    }
    const check = Bun.spawnSync([promtool, 'check', 'metrics'], { stdin: new TextEncoder().encode(text), stdout: 'pipe', stderr: 'pipe' })
    expect({ exit: check.exitCode, out: `${check.stdout.toString()}${check.stderr.toString()}` }).toEqual({ exit: 0, out: '' })
  })
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
