// Outer ring (real time): a TCP proxy between the service and PostgreSQL cuts the connection (a real outage).
// An Idempotency-Key's answer that cannot be stored. The first answer to a key is what every repeat must
// get, but a request run again (recovered) can answer otherwise: a bulk's entry its first run refused
// for an opt-out comes back CONFLICT. So the answer goes out only once stored: the store is tried again
// through a short outage, and a request whose answer still cannot be stored is answered 503, its repeat
// getting the recovered answer. A TCP proxy between the service and PostgreSQL cuts the connection each
// time the store's statement is sent, before it reaches the server. (PostgreSQL only: the embedded
// database has a single connection, which the proxy cannot share.)

import { afterAll, expect, test } from 'bun:test'
import { readConfig } from '../../src/config'
import { createApp } from '../../src/app'
import { buildDeps } from '../../src/server'
import { ADMIN_TOKEN } from '../helpers/app'
import { testDatabase, usingPostgres } from '../helpers/db'
import { poolThroughProxy, startPgProxy } from '../helpers/pg-proxy'
import { until } from '../helpers/wait'

const STORE = "update idempotency_keys set state = 'done'"

const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
}, 30_000)

/**
 * The app on a fresh database behind a proxy that cuts the connection the first `cuts` times the store
 * is sent, or, given `hold`, holds the first store back until `hold` settles.
 */
async function appFailingStore(cuts: number, hold?: Promise<void>) {
  const db = await testDatabase()
  cleanups.push(() => db.drop())
  const { proxy, database } = await poolThroughProxy(
    db.url!,
    (target) => startPgProxy(target, STORE, hold ? { hold } : { before: true, cutTimes: cuts }),
    cleanups,
  )
  const app = createApp(buildDeps(readConfig({ ADMIN_TOKEN }), database).deps)
  const call = async (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await app.handle(
      new Request(`http://localhost${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    )
    return { status: response.status, headers: response.headers, text: await response.text() }
  }
  const account = JSON.parse((await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'store', balance: 100 })).text).data.id
  const key = JSON.parse((await call('POST', `/admin/v1/accounts/${account}/keys`, ADMIN_TOKEN, { label: 'k' })).text).data.key
  // One recipient opted out: its entry is refused (uncharged) by the first run.
  expect((await call('POST', '/api/v1/opt-outs', key, { phone: '081234500001' })).status).toBe(201)
  const bulk = () =>
    call(
      'POST',
      '/api/v1/messages/bulk',
      key,
      {
        messages: [
          { to: '081234500001', body: 'to the one who opted out' },
          { to: '081234500002', body: 'to the other' },
        ],
      },
      { 'idempotency-key': 'order-7' },
    )
  return { db, proxy, bulk }
}

const entries = (text: string) => (JSON.parse(text).data.results as { status: string; code?: string }[]).map((r) => r.code ?? r.status)

test.skipIf(!usingPostgres())(
  'an answer that cannot be stored is not given: 503, and the repeat gets the recovered answer, replayed ever after',
  async () => {
    // Cut at every one of its tries (8), then no more.
    const { db, proxy, bulk } = await appFailingStore(8)
    const first = await bulk()
    expect(proxy.cuts()).toBe(8)
    expect(first.status).toBe(503)
    expect(JSON.parse(first.text)).toMatchObject({ success: false, code: 'SERVICE_UNAVAILABLE' })
    expect(first.headers.get('retry-after')).toBe('1')
    // The repeat recovers the request: the entry the first run charged is sent (once), the refused one
    // comes back CONFLICT, uncharged. That answer, stored now, is the one every later repeat gets.
    const recovered = await bulk()
    expect(recovered.status).toBe(200)
    expect(entries(recovered.text)).toEqual(['CONFLICT', 'sent'])
    const again = await bulk()
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(JSON.parse(again.text)).toEqual(JSON.parse(recovered.text))
    const [row] = await db.sql<{ charged: number; balance: number }[]>`
      select (select count(*)::int from messages) as charged, (select balance from accounts limit 1) as balance`
    expect(row).toEqual({ charged: 1, balance: 99 })
  },
  60_000,
)

test.skipIf(!usingPostgres())(
  'a store that fails only for a moment is tried again: the first answer is the stored one, which every repeat gets',
  async () => {
    const { db, proxy, bulk } = await appFailingStore(2)
    const first = await bulk()
    expect(proxy.cuts()).toBe(2)
    expect(first.status).toBe(200)
    expect(entries(first.text)).toEqual(['RECIPIENT_OPTED_OUT', 'sent'])
    const repeat = await bulk()
    expect(repeat.headers.get('idempotent-replayed')).toBe('true')
    expect(JSON.parse(repeat.text)).toEqual(JSON.parse(first.text))
    const [row] = await db.sql<{ charged: number }[]>`select count(*)::int as charged from messages`
    expect(row!.charged).toBe(1)
  },
  60_000,
)

test.skipIf(!usingPostgres())(
  'a repeat recovers the request while the first run waits to store its answer: the first run answers the stored answer too',
  async () => {
    let release!: () => void
    const { db, bulk } = await appFailingStore(0, new Promise<void>((resolve) => (release = resolve)))
    const first = bulk()
    // Its message is handed over, and its answer waits for the store: a repeat now recovers the request.
    await until(
      async () => (await db.sql<{ n: number }[]>`select count(*)::int as n from messages where status <> 'queued'`)[0]!.n,
      (n) => n === 1,
      20_000,
      "the first run's hand-off",
    )
    const repeat = await bulk()
    expect(repeat.status).toBe(200)
    expect(entries(repeat.text)).toEqual(['CONFLICT', 'sent'])
    // The first run's store finds the key done: it answers what is stored, not its own answer.
    release()
    const answered = await first
    expect(answered.status).toBe(200)
    expect(answered.headers.get('idempotent-replayed')).toBe('true')
    expect(JSON.parse(answered.text).data).toEqual(JSON.parse(repeat.text).data)
    const [row] = await db.sql<{ charged: number; balance: number }[]>`
      select (select count(*)::int from messages) as charged, (select balance from accounts limit 1) as balance`
    expect(row).toEqual({ charged: 1, balance: 99 })
  },
  60_000,
)
