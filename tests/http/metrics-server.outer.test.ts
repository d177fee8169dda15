// Outer ring (real time): a real server on loopback ports, its simulator's reports and webhook deliveries running.
// GET /metrics from a running service (startService): the METRICS_PORT listener on loopback without a
// token, the text format read strictly and by promtool (when installed), counters that move with real
// sends, refusals and webhook deliveries, and labels that never carry an id or a phone number. Through
// app.handle on a test clock: metrics.test.ts.

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { readConfig } from '../../src/config'
import { startService, type Running } from '../../src/server'
import { ADMIN_TOKEN } from '../helpers/app'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { errorEnvelope } from '../helpers/envelope'
import { parseExposition, type Scrape } from '../helpers/prometheus'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { until } from '../helpers/wait'

setDefaultTimeout(60_000)

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

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
