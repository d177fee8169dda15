// Outer ring (real time): two service processes through a real PgBouncer.
// Two instances (real child processes) through one real PgBouncer in transaction mode, on a pool of 2
// server sessions shared by their 12 connections, so consecutive transactions of a client connection
// land on different sessions: no named prepared statement and no session state survives between them. Through it: concurrent sends
// and bulks on both instances with Idempotency-Key repeats (each message charged once, balance equal
// to the ledger), status reports and webhook deliveries each exactly once to a real receiver, and a
// campaign run. Once with workers polling (no DATABASE_DIRECT_URL: LISTEN off, said once at start),
// once with LISTEN over DATABASE_DIRECT_URL (the migrations run over it too). Before them, the cause
// of the stalls these runs used to show, on its own: a statement written while the connection's previous
// one still ran (postgres.js pipelining), whose answer PgBouncer dropped (see src/db/client.ts).
//
// PostgreSQL mode only (DATABASE_URL). Without /usr/sbin/pgbouncer it is skipped, except in CI
// (.ci/run installs it), where a missing PgBouncer fails.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { call, startChild, type Child } from '../helpers/child'
import { createPostgresDatabase, usingPostgres } from '../helpers/db'
import { havePgbouncer, startPgbouncer, type Bouncer } from '../helpers/pgbouncer'
import { openDatabase, transaction } from '../../src/db/client'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { encodeKey, generateKey } from '../../src/lib/secrets'
import { readConfig } from '../../src/config'

const skip = !usingPostgres() || (!havePgbouncer() && !process.env.CI)
if (usingPostgres() && !havePgbouncer() && !process.env.CI)
  console.warn('tests/db/pgbouncer.outer.test.ts skipped: /usr/sbin/pgbouncer is missing (apt-get install pgbouncer)')
/** PgBouncer's warning when a server session answers after it was handed back: that answer is lost. */
const LOST_ANSWER = /from server when not linked/

const PRICE = 100
const BALANCE = 1_000_000
const SENDS = 60 // each sent on both instances with one Idempotency-Key
const BULKS = 8 // of BULK_SIZE entries, each sent on both instances with one Idempotency-Key
const BULK_SIZE = 10
const CAMPAIGN = 10 // contacts of the campaign

describe.skipIf(skip)('one client connection through PgBouncer', () => {
  test('a statement sent while the previous one runs is answered (nothing pipelined), and sql.begin works', async () => {
    const db = await createPostgresDatabase()
    const bouncer = await startPgbouncer(db.url, { poolSize: 2 })
    const direct = postgres(db.url, { max: 2, onnotice: () => {} })
    // The service's own client behind PgBouncer, on one connection so both statements meet on it.
    const pooled = await openDatabase({ databaseUrl: bouncer.url, pooler: 'pgbouncer', poolMax: 1 })
    try {
      await direct`create table t (id int)`
      await pooled.sql`select 1`
      // The second statement (with a parameter: Parse/Describe/Flush first, then Bind/Execute/Sync) is
      // asked for while the first sleeps; its Parse waits for the lock until after the first one ended.
      // Written behind the first, PgBouncer handed the session back at the first's end and dropped the
      // Parse's answer: the client waited forever. One at a time, it waits for the lock and is answered.
      const locked = direct.begin(async (tx) => {
        await tx`lock table t in access exclusive mode`
        await Bun.sleep(400)
      })
      await Bun.sleep(50)
      const both = Promise.all([
        pooled.sql`select pg_sleep(0.2) as slept`,
        Bun.sleep(30).then(() => pooled.sql<{ n: number }[]>`select count(*)::int as n from t where id = ${1}`),
      ])
      const answer = await Promise.race([both, Bun.sleep(5_000).then(() => 'stalled' as const)])
      await locked
      expect(answer === 'stalled' ? answer : answer[1][0]).toEqual({ n: 0 })
      // sql.begin under max_pipeline: 0 (patches/postgres@3.4.9.patch), alone and beside a statement.
      const [inTx, beside] = await Promise.all([
        transaction(pooled.sql, async (tx) => (await tx<{ x: number }[]>`select ${7}::int as x`)[0]!.x),
        pooled.sql<{ y: number }[]>`select ${8}::int as y`,
      ])
      expect([inTx, beside[0]!.y]).toEqual([7, 8])
      expect(bouncer.output()).not.toMatch(LOST_ANSWER)
    } finally {
      await pooled.close()
      await direct.end()
      await bouncer.stop()
      await db.drop()
    }
  }, 30_000)
})

type Setup = { db: { url: string; drop(): Promise<void> }; bouncer: Bouncer; dataDir: string; children: Child[]; direct: postgres.Sql }

describe.skipIf(skip)('two instances through PgBouncer in transaction mode', () => {
  let receiver: Receiver
  const setups: Setup[] = []
  beforeAll(() => {
    receiver = startReceiver(null)
  })
  afterAll(async () => {
    for (const s of setups) {
      await Promise.all(s.children.map((c) => c.stop()))
      await s.direct.end()
      await s.bouncer.stop()
      await s.db.drop()
      rmSync(s.dataDir, { recursive: true, force: true })
    }
    receiver.stop()
  })

  /** A fresh database, a PgBouncer in front of it, and two instances through it (the first migrates). */
  async function setUp(withDirectUrl: boolean): Promise<Setup> {
    const db = await createPostgresDatabase()
    // Two server sessions for the two instances' 12 connections (PGB_POOL=n: another size).
    const bouncer = await startPgbouncer(db.url, { poolSize: Number(process.env.PGB_POOL ?? 2) })
    const dataDir = mkdtempSync(join(tmpdir(), 'pgbouncer-service-'))
    const setup: Setup = { db, bouncer, dataDir, children: [], direct: postgres(db.url, { max: 2, onnotice: () => {} }) }
    setups.push(setup)
    const env: Record<string, string> = {
      DATABASE_URL: bouncer.url,
      ...(withDirectUrl ? { DATABASE_DIRECT_URL: db.url } : { DATABASE_POOLER: 'pgbouncer' }),
      DATA_DIR: dataDir,
      SECRETS_KEY: encodeKey(generateKey()),
      DB_POOL_MAX: '6',
      SIM_DELIVERED_MS: '100',
      SIM_READ_MS: '300',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      KEY_RATE_LIMIT_PER_MINUTE: '100000',
    }
    for (let i = 0; i < 2; i++) setup.children.push(await startChild(env, { readyMs: 60_000 }))
    return setup
  }

  /** The whole slice against the two instances; every check on the database goes around PgBouncer. */
  async function exercise({ children: [a, b], direct, bouncer }: Setup) {
    const both = [a!.url, b!.url]
    receiver.reset()
    const account = await call(a!.url, 'POST', '/admin/v1/accounts', { name: 'bouncer', balance: BALANCE })
    expect(account.status).toBe(201)
    const accountId = account.body.data.id as number
    expect((await call(b!.url, 'PUT', '/admin/v1/price', { cost_per_message: PRICE, account_id: accountId })).status).toBe(200)
    const key = (await call(a!.url, 'POST', `/admin/v1/accounts/${accountId}/keys`, { label: 'k' })).body.data.key as string
    expect((await call(b!.url, 'POST', '/api/v1/webhook', { url: receiver.url('127.0.0.1') }, key)).status).toBeLessThan(300)

    // A repeat while its twin still runs is 409 (in progress): asked again until it has the final answer.
    const post = async (base: string, path: string, body: unknown, idempotencyKey: string) => {
      for (let tries = 0; ; tries++) {
        const r = await fetch(`${base}/api/v1${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
          body: JSON.stringify(body),
        })
        const answer = { status: r.status, body: (await r.json()) as any }
        if (answer.status !== 409 || tries >= 100) return answer
        await Bun.sleep(100)
      }
    }

    // Every request twice at once, once on each instance, with one Idempotency-Key: one message each.
    const phone = (n: number) => `+62812${String(n).padStart(8, '0')}`
    const sends = await Promise.all(
      Array.from({ length: SENDS }, (_, i) =>
        Promise.all(both.map((base) => post(base, '/messages/send', { to: phone(i), body: `single ${i}` }, `send-${i}`))),
      ),
    )
    const bulks = await Promise.all(
      Array.from({ length: BULKS }, (_, i) => {
        const messages = Array.from({ length: BULK_SIZE }, (_, j) => ({ to: phone(1000 + i * BULK_SIZE + j), body: `bulk ${i}.${j}` }))
        return Promise.all(both.map((base) => post(base, '/messages/bulk', { messages }, `bulk-${i}`)))
      }),
    )
    const sids = new Set<string>()
    for (const [first, repeat] of sends) {
      expect(first!.status).toBe(200)
      expect(repeat!.status).toBe(200)
      expect(repeat!.body.data.message_id).toBe(first!.body.data.message_id)
      sids.add(first!.body.data.message_id)
    }
    for (const [first, repeat] of bulks) {
      if (first!.status !== 200 || repeat!.status !== 200) console.log(JSON.stringify([first, repeat]).slice(0, 2000))
      expect(first!.status).toBe(200)
      expect(first!.body.data).toMatchObject({ total: BULK_SIZE, sent: BULK_SIZE, failed: 0 })
      expect(repeat!.body.data.results.map((r: any) => r.message_id)).toEqual(first!.body.data.results.map((r: any) => r.message_id))
      for (const r of first!.body.data.results) sids.add(r.message_id)
    }
    expect(sids.size).toBe(SENDS + BULKS * BULK_SIZE)

    // A campaign made on one instance, run on the other.
    for (let i = 0; i < CAMPAIGN; i++) {
      expect(
        (await call(both[i % 2]!, 'POST', '/api/v1/contacts', { name: `c${i}`, phone: phone(5000 + i), tags: 'pool' }, key)).status,
      ).toBe(201)
    }
    const template = await call(a!.url, 'POST', `/admin/v1/accounts/${accountId}/templates`, { name: 't', body: 'Hi {{name}}' })
    const segment = await call(a!.url, 'POST', `/admin/v1/accounts/${accountId}/segments`, { name: 's', tag: 'pool' })
    const draft = await call(
      a!.url,
      'POST',
      '/api/v1/campaigns',
      { name: 'c', template_id: template.body.data.id, segment_id: segment.body.data.id },
      key,
    )
    expect(draft.status).toBe(201)
    const campaignId = draft.body.data.campaign.id as number
    expect((await call(b!.url, 'POST', `/admin/v1/campaigns/${campaignId}/run`)).status).toBeLessThan(300)

    const total = SENDS + BULKS * BULK_SIZE + CAMPAIGN
    // Every message delivered and read (the simulator's reports), every event delivered.
    await until(async () => {
      const [row] = await direct<{ read: number; pending: number }[]>`
        select (select count(*)::int from messages where status = 'read') as read,
               (select count(*)::int from webhook_events where status <> 'delivered') as pending`
      return row!.read === total && row!.pending === 0
    }, 45_000)
    const [campaign] = await direct<{ status: string; n: number }[]>`
      select status, (select count(*)::int from messages where campaign_id = ${campaignId}) as n from campaigns where id = ${campaignId}`
    expect(campaign).toEqual({ status: 'sent', n: CAMPAIGN })

    // Money: each message charged once, the balance equal to the ledger.
    const [money] = await direct<{ balance: number; ledger: number; messages: number; cost: number }[]>`
      select a.balance::int, (select coalesce(sum(amount), 0)::int from ledger where account_id = a.id) as ledger,
             (select count(*)::int from messages where account_id = a.id) as messages,
             (select coalesce(sum(cost), 0)::int from messages where account_id = a.id) as cost
      from accounts a where a.id = ${accountId}`
    expect(money).toEqual({ balance: BALANCE - total * PRICE, ledger: BALANCE - total * PRICE, messages: total, cost: total * PRICE })

    // Webhooks: one request per event, each event once, each status of each message once.
    const [{ events }] = (await direct<{ events: number }[]>`select count(*)::int as events from webhook_events`) as any
    await receiver.waitFor(events, 5_000)
    await Bun.sleep(500) // a duplicate would arrive now
    const requests = receiver.requests
    expect(requests.length).toBe(events)
    expect(new Set(requests.map((r) => r.headers['webhook-id'])).size).toBe(events)
    const seen = new Map<string, number>()
    for (const r of requests) {
      const { data } = JSON.parse(r.body)
      seen.set(`${data.message_sid} ${data.status}`, (seen.get(`${data.message_sid} ${data.status}`) ?? 0) + 1)
    }
    const [{ all }] = (await direct<{ all: string[] }[]>`select array_agg(message_sid) as all from messages`) as any
    for (const sid of all as string[]) {
      expect({ sid, delivered: seen.get(`${sid} delivered`), read: seen.get(`${sid} read`) }).toEqual({ sid, delivered: 1, read: 1 })
    }
    // Nothing went wrong on the way (an ERROR line, a statement PgBouncer's sessions could not run).
    for (const child of [a!, b!]) expect(child.output()).not.toMatch(/Z ERROR |prepared statement/)
    expect(bouncer.output()).not.toMatch(LOST_ANSWER)
  }

  /** How many sessions of the database are LISTENing (postgres.js keeps one per client, idle on its LISTEN). */
  async function listening(direct: postgres.Sql): Promise<number> {
    const [row] = await direct<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where datname = current_database() and query ilike 'listen %'`
    return row!.n
  }

  test('without DATABASE_DIRECT_URL: LISTEN off (said once at start), workers poll; money, hand-offs and webhooks exactly once', async () => {
    const setup = await setUp(false)
    for (const child of setup.children) expect(child.output().match(/LISTEN is off/g)).toHaveLength(1)
    await exercise(setup)
    expect(await listening(setup.direct)).toBe(0)
  }, 120_000)

  test('with DATABASE_DIRECT_URL: LISTEN and the migrations go direct; the same checks', async () => {
    const setup = await setUp(true)
    for (const child of setup.children) expect(child.output()).not.toMatch(/LISTEN is off/)
    // One LISTEN session per instance (its webhook delivery worker), on PostgreSQL itself.
    await until(async () => (await listening(setup.direct)) === 2, 5_000)
    await exercise(setup)
    expect(await listening(setup.direct)).toBe(2)
  }, 120_000)
})

test('DATABASE_POOLER and DATABASE_DIRECT_URL: read and checked at start', () => {
  const pg = 'postgres://u@db:5432/app'
  const bouncer = 'postgres://u@bouncer:6432/app'
  const read = (env: Record<string, string>) => {
    const c = readConfig(env)
    return { url: c.databaseUrl, direct: c.databaseDirectUrl, pooler: c.databasePooler }
  }
  expect(read({})).toEqual({ url: undefined, direct: undefined, pooler: 'none' })
  expect(read({ DATABASE_URL: pg })).toEqual({ url: pg, direct: undefined, pooler: 'none' })
  // A direct URL beside DATABASE_URL says DATABASE_URL is a pooler.
  expect(read({ DATABASE_URL: bouncer, DATABASE_DIRECT_URL: pg })).toEqual({ url: bouncer, direct: pg, pooler: 'pgbouncer' })
  expect(read({ DATABASE_URL: bouncer, DATABASE_POOLER: 'pgbouncer' })).toEqual({ url: bouncer, direct: undefined, pooler: 'pgbouncer' })
  expect(() => read({ DATABASE_URL: pg, DATABASE_POOLER: 'pgpool' })).toThrow('DATABASE_POOLER: expected none or pgbouncer, got "pgpool"')
  expect(() => read({ DATABASE_DIRECT_URL: pg })).toThrow('DATABASE_DIRECT_URL: needs DATABASE_URL')
  expect(() => read({ DATABASE_POOLER: 'pgbouncer' })).toThrow('DATABASE_POOLER: needs DATABASE_URL')
  expect(() => read({ DATABASE_URL: bouncer, DATABASE_DIRECT_URL: 'mysql://x' })).toThrow('DATABASE_DIRECT_URL: expected a postgres:')
})

async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`)
    await Bun.sleep(100)
  }
}
