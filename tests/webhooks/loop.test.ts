// The delivery loop as the service runs it: woken by commits (not only the 1 s poll), one message's
// events in order, and a graceful stop that finishes and records the attempts in flight.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Webhook } from 'standardwebhooks'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { createApp } from '../../src/app'
import { reportStatus } from '../helpers/reports'
import { readConfig } from '../../src/config'
import { startService } from '../../src/server'
import { startWebhookDelivery } from '../../src/workers/webhook-delivery'
import { openDatabase } from '../../src/db/client'
import { until } from '../helpers/wait'

let tls: TestTls
let rx: Receiver
beforeAll(() => {
  tls = makeTestTls()
  rx = startReceiver(tls)
})
afterAll(() => {
  rx.stop()
  tls.remove()
})

describe('the running loop', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await testApp({
      workers: true,
      env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile, SIM_DELIVERED_MS: '50', SIM_READ_MS: '150' },
    })
  }, 60_000)
  afterAll(() => t.close(), 30_000)

  test('simulator reports reach the receiver in order (delivered, then read), signed', async () => {
    rx.reset()
    const { key } = await t.account(100)
    const secret = (await t.api('POST', '/webhook', key, { url: rx.url() })).body.data.signing_secret
    const sent = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'hi' })
    const sid = sent.body.data.message_id
    const requests = await rx.waitFor(2)
    expect(requests.map((r) => (new Webhook(secret).verify(r.body, r.headers) as any).data)).toEqual([
      { message_sid: sid, to: '+6281234567890', status: 'delivered', previous_status: 'sent', error_code: null, error_message: null },
      { message_sid: sid, to: '+6281234567890', status: 'read', previous_status: 'delivered', error_code: null, error_message: null },
    ])
  }, 30_000)
})

describe('waking up', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await testApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile } })
  }, 60_000)
  afterAll(() => t.close(), 30_000)

  // The loop here polls once a minute: every delivery within the test's few seconds was woken by the
  // commit (the NOTIFY its statement sent, sql/0037), not found by the poll.
  test('a commit wakes the loop at once: no waiting for the poll', async () => {
    rx.reset()
    let loop: ReturnType<typeof startWebhookDelivery> | undefined
    const deps = { ...t.deps, wake: () => loop?.wake() }
    loop = startWebhookDelivery(deps, { pollMs: 60_000 })
    // The app whose status callbacks commit the events: each commit wakes this loop.
    const service = { app: createApp(deps), config: t.config }
    try {
      const { key, keyId } = await t.account(100)
      await t.api('POST', '/webhook', key, { url: rx.url() })
      await Bun.sleep(100) // the loop's first step found nothing and went to sleep
      for (let i = 0; i < 5; i++) {
        const sid = `SM${crypto.randomUUID().replaceAll('-', '')}`
        // "sent" straight in SQL so the simulator has nothing scheduled for it
        await t.db.sql`
          insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at)
          select account_id, id, ${sid}, '+6281234567890', 'x', 'sent', 1, now() from api_keys where id = ${keyId}`
        const before = rx.requests.length
        await reportStatus(service, sid, 'delivered')
        const seen = await until(
          () => rx.requests.length,
          (n) => n > before,
          20_000,
        )
        expect(seen).toBe(before + 1)
      }
      // the receiver answers before the worker records the outcome
      const delivered = await until(
        async () =>
          (
            await t.db.sql<
              { n: number }[]
            >`select count(*)::int as n from webhook_events where api_key_id = ${keyId} and status = 'delivered'`
          )[0]!.n,
        (n) => n === 5,
        20_000,
      )
      expect(delivered).toBe(5)
    } finally {
      await loop.stop()
    }
  }, 60_000)

  // Every commit of a burst announces its own events (sql/0037): the last one's too, or another instance
  // would wait for its poll.
  test.skipIf(!usingPostgres())(
    'a burst of commits: an instance woken only by NOTIFY delivers every event',
    async () => {
      rx.reset()
      // "Another instance": its loop hears NOTIFY and nothing in-process; it polls once a minute.
      const other = startWebhookDelivery(t.deps, { pollMs: 60_000 })
      try {
        const { key, keyId } = await t.account(100)
        await t.api('POST', '/webhook', key, { url: rx.url() })
        await Bun.sleep(100) // its first step found nothing and it went to sleep
        const sids = Array.from({ length: 20 }, () => `SM${crypto.randomUUID().replaceAll('-', '')}`)
        await t.db.sql`
        insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at)
        select account_id, id, sid, '+6281234567890', 'x', 'sent', 1, now()
        from api_keys, unnest(${sids}::text[]) as sid where id = ${keyId}`
        // The callbacks go to the test's app, whose commits carry their NOTIFY, as every writer's do.
        await Promise.all(sids.map((sid) => reportStatus(t, sid, 'delivered')))
        const delivered = await until(
          async () =>
            (
              await t.db.sql<
                { n: number }[]
              >`select count(*)::int as n from webhook_events where api_key_id = ${keyId} and status = 'delivered'`
            )[0]!.n,
          (n) => n === sids.length,
          20_000,
          'every event delivered',
        )
        expect(delivered).toBe(sids.length)
      } finally {
        await other.stop()
      }
    },
    60_000,
  )
})

describe('graceful stop', () => {
  test('stopping the service finishes the attempt in flight and records it', async () => {
    rx.reset()
    const dataDir = mkdtempSync(join(tmpdir(), 'webhook-stop-'))
    const pg = usingPostgres() ? await createMigratedPostgresDatabase() : undefined
    await premigrate(dataDir)
    const env: Record<string, string> = {
      PORT: '0',
      ADMIN_TOKEN,
      DATA_DIR: dataDir,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_CA_FILE: tls.caFile,
      SIM_DELIVERED_MS: '20',
      SIM_READ_MS: '86400000',
      LOG_LEVEL: 'error',
    }
    if (pg) env.DATABASE_URL = pg.url
    const running = await startService(readConfig(env))
    try {
      const call = async (method: string, path: string, token: string, body?: unknown) => {
        const response = await fetch(`${running.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        return (await response.json()) as any
      }
      const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'stop', balance: 10 })
      const key = await call('POST', `/admin/v1/accounts/${account.data.id}/keys`, ADMIN_TOKEN, { label: 'k' })
      await call('POST', '/api/v1/webhook', key.data.key, { url: rx.url() })
      let answered = false
      rx.handler = async () => {
        await Bun.sleep(1_000)
        answered = true
        return new Response('ok')
      }
      await call('POST', '/api/v1/messages/send', key.data.key, { to: '081234567890', body: 'hi' })
      await rx.waitFor(1)
      expect(rx.requests).toHaveLength(1)
      expect(answered).toBe(false)
      await running.stop()
      expect(answered).toBe(true)
    } finally {
      await running.stop()
    }
    const db = await openDatabase({ databaseUrl: pg?.url, dataDir })
    try {
      const events = await db.sql`select status, attempts, lease_token from webhook_events`
      expect([...events]).toEqual([{ status: 'delivered', attempts: 1, lease_token: null }])
      const attempts = await db.sql`select attempt, status_code from webhook_attempts`
      expect([...attempts]).toEqual([{ attempt: 1, status_code: 200 }])
    } finally {
      await db.close()
      await pg?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 60_000)
})
