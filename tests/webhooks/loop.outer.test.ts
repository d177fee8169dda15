// Outer ring (real time): the service's workers running on the system clock end to end, and startService stopped with a delivery in flight.
// The delivery loop as the service runs it: the running workers bring one message's events to the
// receiver in order, and stopping the service finishes and records the attempt in flight. (Its
// wake-ups by commit and NOTIFY, on a test clock: loop.test.ts.)

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Webhook } from 'standardwebhooks'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { readConfig } from '../../src/config'
import { startService } from '../../src/server'
import { openDatabase } from '../../src/db/client'

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
