// Outer ring (real time): the service is a child process, stopped, killed with SIGKILL and restarted.
// Delivery across process lifetimes: the service runs as a child process (`bun src/main.ts`) and is
// stopped, killed with SIGKILL and restarted; on PostgreSQL two instances share one database.
//
// Embedded mode: the child owns its PGlite directory, so this process opens that directory only
// while no child runs (between a stop or kill and the next start), to move a due time or a lease in
// SQL instead of waiting. The two-instance test needs PostgreSQL (PGlite is single-process): skipped
// without DATABASE_URL.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { call, startChild, type Child } from '../helpers/child'
import { openDatabase } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { reportStatusOverHttp, TEST_TWILIO_AUTH_TOKEN } from '../helpers/reports'
import type { Sql } from '../../src/db/client'
import { until } from '../helpers/wait'

let tls: TestTls
let rx: Receiver
beforeAll(() => {
  tls = makeTestTls()
  rx = startReceiver(tls)
})
// Children a failed test left running are killed.
const children = new Set<Child>()
async function start(env: Record<string, string>): Promise<Child> {
  const child = await startChild(env, { readyMs: 90_000 })
  children.add(child)
  return child
}
async function killLeftovers() {
  for (const child of children) if (child.proc.exitCode === null) await child.kill9()
  children.clear()
}
afterEach(async () => {
  await killLeftovers()
  rx.reset()
})
afterAll(() => {
  rx.stop()
  tls.remove()
})

/** A fresh database for one test: a new PostgreSQL database, or a new embedded data directory (both migrated). */
async function freshStore() {
  const dataDir = mkdtempSync(join(tmpdir(), 'webhook-proc-'))
  const pg = usingPostgres() ? await createMigratedPostgresDatabase() : undefined
  await premigrate(dataDir)
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_CA_FILE: tls.caFile,
    SIM_DELIVERED_MS: '20',
    SIM_READ_MS: '86400000', // one event per message: delivered
    LOG_LEVEL: 'error',
    TWILIO_AUTH_TOKEN: TEST_TWILIO_AUTH_TOKEN, // status callbacks are reported to the children
  }
  if (pg) env.DATABASE_URL = pg.url
  return {
    env,
    /** Direct SQL; in embedded mode only while no child runs. */
    async sql<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
      const db = await openDatabase({ databaseUrl: pg?.url, dataDir })
      try {
        return await fn(db.sql)
      } finally {
        await db.close()
      }
    },
    async drop() {
      await pg?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** An account, a key with the receiver registered, and one message sent (the simulator reports it delivered). */
async function keyAndMessage(service: Child) {
  const account = await call(service.url, 'POST', '/admin/v1/accounts', { name: 'proc', balance: 10 })
  const created = await call(service.url, 'POST', `/admin/v1/accounts/${account.body.data.id}/keys`, { label: 'k' })
  const key: string = created.body.data.key
  const keyId: number = created.body.data.id
  expect((await call(service.url, 'POST', '/api/v1/webhook', { url: rx.url() }, key)).status).toBe(200)
  const sent = await call(service.url, 'POST', '/api/v1/messages/send', { to: '081234567890', body: 'hi' }, key)
  expect(sent.status).toBe(200)
  return { key, keyId, sid: sent.body.data.message_id as string }
}

test('an event pending retry is delivered after a restart', async () => {
  const store = await freshStore()
  try {
    rx.handler = (r) => new Response(null, { status: r.n === 1 ? 500 : 200 })
    const first = await start(store.env)
    const { keyId, sid } = await keyAndMessage(first)
    await rx.waitFor(1)
    const pending = await until(
      () => call(first.url, 'GET', `/admin/v1/keys/${keyId}/deliveries`),
      (r) => r.body.data?.items?.[0]?.attempts === 1 && r.body.data.items[0].last_error === 'HTTP 500',
      10_000,
      'the failed attempt to be recorded',
    )
    expect(pending.body.data.items[0]).toMatchObject({ message_sid: sid, status: 'pending' })
    expect(await first.stop()).toBe(0)

    // The retry is due in about 5 s; make it due now while no service runs.
    await store.sql((sql) => sql`update webhook_events set next_attempt_at = now()`)
    const second = await start(store.env)
    await rx.waitFor(2, 20_000)
    const delivered = await until(
      () => call(second.url, 'GET', `/admin/v1/keys/${keyId}/deliveries`),
      (r) => r.body.data?.items?.[0]?.status === 'delivered',
      10_000,
      'the delivery to be recorded',
    )
    expect(delivered.body.data).toMatchObject({ total: 1, items: [{ status: 'delivered', attempts: 2 }] })
    const webhookId = delivered.body.data.items[0].webhook_id
    expect(rx.requests.map((r) => r.headers['webhook-id'])).toEqual([webhookId, webhookId])
    expect(await second.stop()).toBe(0)
  } finally {
    await killLeftovers()
    await store.drop()
  }
}, 180_000)

test('SIGKILL in the middle of a delivery: after restart and lease expiry the event is delivered, nothing lost', async () => {
  const store = await freshStore()
  try {
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    // The first request is held open until the service is dead; later ones are answered at once.
    rx.handler = async (r) => {
      if (r.n === 1) await held
      return new Response('ok')
    }
    const first = await start(store.env)
    const { keyId, sid } = await keyAndMessage(first)
    await until(
      () => rx.requests.length,
      (n) => n === 1,
      15_000,
      'the first request',
    )
    await first.kill9()
    release()

    const leased = await store.sql(
      (sql) => sql<{ status: string; attempts: number; leased: boolean }[]>`
      select status, attempts, lease_token is not null and lease_until > now() as leased from webhook_events`,
    )
    expect([...leased]).toEqual([{ status: 'pending', attempts: 1, leased: true }])
    // The dead worker's lease would run out within 30 s; move it to the past instead of waiting.
    await store.sql((sql) => sql`update webhook_events set lease_until = now() - interval '1 second'`)

    const second = await start(store.env)
    await rx.waitFor(2, 20_000)
    const delivered = await until(
      () => call(second.url, 'GET', `/admin/v1/keys/${keyId}/deliveries`),
      (r) => r.body.data?.items?.[0]?.status === 'delivered',
      10_000,
      'the delivery to be recorded',
    )
    expect(delivered.body.data).toMatchObject({ total: 1, items: [{ message_sid: sid, status: 'delivered', attempts: 2 }] })
    const webhookId = delivered.body.data.items[0].webhook_id
    expect(rx.requests.map((r) => r.headers['webhook-id'])).toEqual([webhookId, webhookId])
    // The killed attempt left no log row (its outcome was never recorded); the second one did.
    const attempts = await call(second.url, 'GET', `/admin/v1/deliveries/${delivered.body.data.items[0].id}/attempts`)
    expect(attempts.body.data.items).toMatchObject([{ attempt: 2, status_code: 200 }])
    expect(await second.stop()).toBe(0)
  } finally {
    await killLeftovers()
    await store.drop()
  }
}, 180_000)

describe.skipIf(!usingPostgres())('two instances on one PostgreSQL database', () => {
  test('500 status changes: every event delivered exactly once', async () => {
    const store = await freshStore()
    try {
      // Migrate first so the two instances do not both start on an empty database at once.
      await store.sql((sql) => migrate(sql).then(() => undefined))
      const [a, b] = await Promise.all([start(store.env), start(store.env)])
      const account = await call(a.url, 'POST', '/admin/v1/accounts', { name: 'two', balance: 0 })
      const created = await call(a.url, 'POST', `/admin/v1/accounts/${account.body.data.id}/keys`, { label: 'k' })
      expect((await call(b.url, 'POST', '/api/v1/webhook', { url: rx.url() }, created.body.data.key)).status).toBe(200)
      rx.handler = async () => {
        await Bun.sleep(2) // keep requests in flight on both instances at once
        return new Response('ok')
      }

      const db = await openDatabase({ databaseUrl: store.env.DATABASE_URL, poolMax: 8 })
      try {
        const sids = await db.sql<{ message_sid: string }[]>`
          insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at)
          select ${account.body.data.id}, ${created.body.data.id}, 'SM' || md5(random()::text || g::text), '+6281234567890', 'x', 'sent', 1, now()
          from generate_series(1, 500) g
          returning message_sid`
        expect(sids).toHaveLength(500)
        // Reported by the provider's callbacks, eight at a time, to one instance or the other; each
        // commit NOTIFYs both instances.
        for (let i = 0; i < sids.length; i += 8) {
          await Promise.all(
            sids.slice(i, i + 8).map(async ({ message_sid }, j) => {
              expect(await reportStatusOverHttp([a, b][j % 2]!.url, message_sid, 'delivered')).toEqual({ changed: true })
            }),
          )
        }
        await until(
          async () => (await db.sql<{ n: number }[]>`select count(*)::int as n from webhook_events where status = 'delivered'`)[0]!.n,
          (n) => n === 500,
          60_000,
          'all 500 deliveries',
        )
        await Bun.sleep(1_500) // anything sent twice would arrive by now
        const ids = rx.requests.map((r) => r.headers['webhook-id'])
        expect(ids).toHaveLength(500)
        expect(new Set(ids).size).toBe(500)
        const [summary] = await db.sql<{ events: number; attempts: number; max_attempts: number }[]>`
          select (select count(*)::int from webhook_events) as events, (select count(*)::int from webhook_attempts) as attempts,
                 (select max(attempts) from webhook_events) as max_attempts`
        expect(summary).toEqual({ events: 500, attempts: 500, max_attempts: 1 })
      } finally {
        await db.close()
      }
      expect(await Promise.all([a.stop(), b.stop()])).toEqual([0, 0])
    } finally {
      await killLeftovers()
      await store.drop()
    }
  }, 180_000)
})
