// HTTPS end to end: a real TLS listener from TLS_CERT_FILE/TLS_KEY_FILE with a certificate made
// here; the REQUIRE_HTTPS guard with and without TRUST_PROXY; and a bad setting stopping the start
// with one line that names it.

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readConfig } from '../../src/config'
import { startService, type Running } from '../../src/server'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { errorEnvelope } from '../helpers/envelope'
import { makeCertificate } from '../helpers/certificate'

// bunfig's `timeout` is not read by bun test, and its 5 s default is short for starting databases
// and processes on a loaded machine.
setDefaultTimeout(30_000)

const ROOT = join(import.meta.dir, '..', '..')
const dir = mkdtempSync(join(tmpdir(), 'messaging-https-'))
const certFile = join(dir, 'cert.pem')
const keyFile = join(dir, 'key.pem')
let certPem = ''

beforeAll(async () => {
  makeCertificate(dir)
  certPem = await Bun.file(certFile).text()
}, 30_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('TLS_CERT_FILE and TLS_KEY_FILE', () => {
  let running: Running
  let dropDatabase = async () => {}

  beforeAll(async () => {
    const env: Record<string, string> = {
      PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      TLS_CERT_FILE: certFile,
      TLS_KEY_FILE: keyFile,
      REQUIRE_HTTPS: 'true',
      DATA_DIR: join(dir, 'data'),
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
    await dropDatabase()
  }, 30_000)

  const tls = () => ({ ca: certPem })
  async function call(method: string, path: string, token: string, body?: unknown) {
    const response = await fetch(`${running.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      tls: tls(),
      signal: AbortSignal.timeout(10_000),
    })
    return { status: response.status, body: (await response.json()) as any }
  }

  test('serves HTTPS with the configured certificate', async () => {
    expect(running.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/)
    const health = await fetch(`${running.url}/healthz`, { tls: tls(), signal: AbortSignal.timeout(10_000) })
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ success: true, data: { status: 'ok' } })
    const byName = await fetch(`${running.url.replace('127.0.0.1', 'localhost')}/readyz`, {
      tls: tls(),
      signal: AbortSignal.timeout(10_000),
    })
    expect(byName.status).toBe(200)
  })

  test('a client that does not trust the certificate is refused', async () => {
    await expect(fetch(`${running.url}/healthz`, { signal: AbortSignal.timeout(10_000) })).rejects.toThrow()
  })

  test('the API works over HTTPS with REQUIRE_HTTPS on', async () => {
    const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'tls', balance: 1000 })
    expect(account.status).toBe(201)
    const key = await call('POST', `/admin/v1/accounts/${account.body.data.id}/keys`, ADMIN_TOKEN, { label: 'tls' })
    expect(key.status).toBe(201)
    const sent = await call('POST', '/api/v1/messages/send', key.body.data.key, { to: '081234567890', body: 'over tls' })
    expect(sent.status).toBe(200)
    expect(sent.body.data).toMatchObject({ to: '+6281234567890', status: 'sent' })
    const balance = await call('GET', '/api/v1/balance', key.body.data.key)
    expect(balance.status).toBe(200)
    expect(balance.body.data.wa_balance).toBe(sent.body.data.balance_after)
  })
})

const httpsRequired = (res: { headers: Headers }) => errorEnvelope(res.headers, 'HTTPS_REQUIRED')

/** A request that arrived over TLS, as the HTTPS guard sees it. */
async function overHttps(t: TestApp, method: string, path: string, body?: unknown) {
  const response = await t.app.handle(
    new Request(`https://localhost${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  )
  return { status: response.status, body: (await response.json()) as any }
}

async function accountWithKey(t: TestApp, viaProxy: boolean): Promise<{ accountId: number; key: string }> {
  const admin = (method: string, path: string, body: unknown) =>
    viaProxy
      ? t.request(method, `/admin/v1${path}`, { key: ADMIN_TOKEN, body, headers: { 'x-forwarded-proto': 'https' } })
      : overHttps(t, method, `/admin/v1${path}`, body)
  const account = await admin('POST', '/accounts', { name: 'guarded', balance: 500 })
  expect(account.status).toBe(201)
  const key = await admin('POST', `/accounts/${account.body.data.id}/keys`, { label: 'guarded' })
  expect(key.status).toBe(201)
  return { accountId: account.body.data.id, key: key.body.data.key }
}

describe('REQUIRE_HTTPS=true without TRUST_PROXY', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await testApp({ env: { REQUIRE_HTTPS: 'true' } })
  }, 60_000)
  afterAll(() => t?.close(), 30_000)

  test('plain HTTP to /api/v1 and /admin/v1 gets 403 HTTPS_REQUIRED, even with valid credentials', async () => {
    const { key } = await accountWithKey(t, false)
    const api = await t.request('GET', '/api/v1/balance', { key })
    expect(api.status).toBe(403)
    expect(api.body).toEqual(httpsRequired(api))
    const send = await t.request('POST', '/api/v1/messages/send', { key, body: { to: '081234567890', body: 'hi' } })
    expect(send.status).toBe(403)
    expect(send.body).toEqual(httpsRequired(send))
    const admin = await t.request('GET', '/admin/v1/accounts', { key: ADMIN_TOKEN })
    expect(admin.status).toBe(403)
    expect(admin.body).toEqual(httpsRequired(admin))
  })

  test('/healthz and /readyz are exempt', async () => {
    expect((await t.request('GET', '/healthz')).status).toBe(200)
    expect((await t.request('GET', '/readyz')).status).toBe(200)
  })

  test('X-Forwarded-Proto is ignored: still 403', async () => {
    const { key } = await accountWithKey(t, false)
    const res = await t.request('GET', '/api/v1/balance', { key, headers: { 'x-forwarded-proto': 'https' } })
    expect(res.status).toBe(403)
    expect(res.body).toEqual(httpsRequired(res))
  })

  test('the same calls over HTTPS are served', async () => {
    const { accountId } = await accountWithKey(t, false)
    const res = await overHttps(t, 'GET', `/admin/v1/accounts/${accountId}`)
    expect(res.status).toBe(200)
    expect(res.body.data.wa_balance).toBe(500)
  })
})

describe('REQUIRE_HTTPS=true with TRUST_PROXY=true', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await testApp({ env: { REQUIRE_HTTPS: 'true', TRUST_PROXY: 'true' } })
  }, 60_000)
  afterAll(() => t?.close(), 30_000)

  test('plain HTTP carrying X-Forwarded-Proto: https is accepted', async () => {
    const { key } = await accountWithKey(t, true)
    const res = await t.request('GET', '/api/v1/balance', { key, headers: { 'x-forwarded-proto': 'https' } })
    expect(res.status).toBe(200)
    expect(res.body.data.wa_balance).toBe(500)
  })

  test('without the header, or with X-Forwarded-Proto: http, still 403', async () => {
    const { key } = await accountWithKey(t, true)
    const bare = await t.request('GET', '/api/v1/balance', { key })
    expect(bare.status).toBe(403)
    expect(bare.body).toEqual(httpsRequired(bare))
    const http = await t.request('GET', '/admin/v1/accounts', { key: ADMIN_TOKEN, headers: { 'x-forwarded-proto': 'http' } })
    expect(http.status).toBe(403)
    expect(http.body).toEqual(httpsRequired(http))
  })
})

describe('a bad setting stops the start with one line naming it', () => {
  const cases: [string, Record<string, string>, string][] = [
    ['PORT=abc', { PORT: 'abc' }, 'PORT'],
    ['TLS_CERT_FILE without TLS_KEY_FILE', { TLS_CERT_FILE: certFile }, 'TLS_KEY_FILE'],
    ['TLS_KEY_FILE without TLS_CERT_FILE', { TLS_KEY_FILE: keyFile }, 'TLS_CERT_FILE'],
    ['PROVIDER=foo', { PROVIDER: 'foo' }, 'PROVIDER'],
    ['TIMEZONE=Mars/Olympus', { TIMEZONE: 'Mars/Olympus' }, 'TIMEZONE'],
    ['REQUIRE_HTTPS=maybe', { REQUIRE_HTTPS: 'maybe' }, 'REQUIRE_HTTPS'],
    ['DATABASE_URL=mysql://...', { DATABASE_URL: 'mysql://localhost/x' }, 'DATABASE_URL'],
  ]

  for (const [label, bad, name] of cases) {
    test(`${label} → one line naming ${name}`, async () => {
      // A minimal environment: nothing of this run leaks in, and a start that wrongly succeeds
      // binds a free port on loopback and is killed by the timer below.
      const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: '0', ADMIN_TOKEN, DATA_DIR: join(dir, `data-${name}`), ...bad }
      const child = Bun.spawn([process.execPath, 'src/main.ts'], { cwd: ROOT, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
      clearTimeout(timer)
      expect(child.signalCode).toBeNull()
      expect(code).not.toBe(0)
      expect(stdout).toBe('')
      const line = stderr.trim()
      expect(line).toContain(name)
      expect(line.split('\n')).toHaveLength(1)
    }, 30_000)
  }
})

test('a TLS or CA file that cannot be read stops the start with one line naming it', () => {
  for (const [name, env] of [
    ['TLS_CERT_FILE', { TLS_CERT_FILE: '/nonexistent/cert.pem', TLS_KEY_FILE: '/nonexistent/key.pem' }],
    ['WEBHOOK_CA_FILE', { WEBHOOK_CA_FILE: '/nonexistent/ca.pem' }],
  ] as const) {
    const run = Bun.spawnSync(['bun', `${import.meta.dir}/../../src/main.ts`], { env: { ...process.env, PORT: '0', ...env } })
    const lines = run.stderr.toString().trim().split('\n')
    expect(run.exitCode).not.toBe(0)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(name)
  }
})
