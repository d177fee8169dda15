// Outer ring (real time): a TCP proxy between the service and PostgreSQL holds a statement back.
// An API key lookup (one statement for the requests that arrive together, which also counts their
// rate) whose statement never comes back is answered 503 with Retry-After after LOOKUP_DEADLINE_MS, and
// the requests that came meanwhile and after are served: without the deadline every later request of
// the process waited behind it for ever, as the status callbacks did (tests/status/receiver-stall).
// Its session is ended as the receiver's is (db/end-session.ts, proven there: here the statement never
// reached the server). (PostgreSQL only: the embedded database has a single connection, which the proxy
// cannot share.)

import { afterEach, expect, test } from 'bun:test'
import { readConfig } from '../../src/config'
import { createApp } from '../../src/app'
import { buildDeps } from '../../src/server'
import { LOOKUP_DEADLINE_MS } from '../../src/http/auth'
import { ADMIN_TOKEN } from '../helpers/app'
import { testDatabase, usingPostgres } from '../helpers/db'
import { poolThroughProxy, startPgProxy } from '../helpers/pg-proxy'

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
}, 30_000)

test.skipIf(!usingPostgres())(
  'a key lookup whose statement never comes back is answered 503 in time, and later requests are served',
  async () => {
    const db = await testDatabase()
    cleanups.push(() => db.drop())
    let release = () => {}
    const hold = new Promise<void>((resolve) => (release = resolve))
    cleanups.push(() => release())
    // The lookup's statement (it counts the keys' requests): the first one sent is held back.
    const { proxy, database } = await poolThroughProxy(db.url!, (target) => startPgProxy(target, 'api_key_windows', { hold }), cleanups)
    const { deps } = buildDeps(readConfig({ ADMIN_TOKEN }), database)
    const app = createApp(deps)
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const started = performance.now()
      const response = await app.handle(
        new Request(`http://localhost${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      )
      return { status: response.status, headers: response.headers, body: (await response.json()) as any, ms: performance.now() - started }
    }
    const account = (await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'Toko Stall', balance: 1000 })).body.data
    const key = (await call('POST', `/admin/v1/accounts/${account.id}/keys`, ADMIN_TOKEN, { label: 'stall' })).body.data.key as string

    const held = call('GET', '/api/v1/balance', key)
    while (!proxy.held()) await Bun.sleep(20)
    // Arrives while the first lookup's statement is held: it waits for that lookup to end.
    const behind = call('GET', '/api/v1/balance', key)

    const first = await held
    expect(first.status).toBe(503)
    expect(first.body.code).toBe('SERVICE_UNAVAILABLE')
    expect(first.headers.get('retry-after')).toBe('1')
    expect(first.ms).toBeGreaterThanOrEqual(LOOKUP_DEADLINE_MS - 100)
    expect(first.ms).toBeLessThan(LOOKUP_DEADLINE_MS + 3_000)
    const second = await behind
    expect(second.status).toBe(200)
    expect(second.body.data.wa_balance).toBe(1000)
    expect((await call('GET', '/api/v1/balance', key)).status).toBe(200)
  },
  60_000,
)
