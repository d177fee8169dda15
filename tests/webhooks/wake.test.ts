// Every event wakes the delivery worker at its commit, whoever wrote it: the statement that writes an
// event announces it (sql/0034, a NOTIFY on webhook_events). Writers that never woke the worker
// themselves, an opt-out and a charge's balance.low, are delivered without waiting for the poll; and on
// PostgreSQL, a commit of one instance wakes another instance's worker. On a test clock that never
// moves, so the poll never comes: each request awaited arrives only if the loop was woken. (Before each
// commit the clock moves on by the pause a loop takes after a claim that found little to gather what
// comes next, CLAIM_GATHER_MS, far short of the poll's second.)

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { testApp, type TestApp } from '../helpers/app'
import { startDelivery } from '../helpers/delivery'
import { usingPostgres } from '../helpers/db'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { TestClock } from '../../src/lib/clock'
import { openDatabase } from '../../src/db/client'
import { buildDeps } from '../../src/server'
import { CLAIM_GATHER_MS, startWebhookDelivery } from '../../src/workers/webhook-delivery'

let tls: TestTls
let rx: Receiver
let t: TestApp
// A minute ahead of the database: events stamped with its now() (opt-outs, balance checks) are due at
// the clock's time; the clock itself never moves.
const clock = new TestClock(Math.floor(Date.now() / 1000) * 1000 + 60_000)
const env = () => ({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile })

beforeAll(async () => {
  tls = makeTestTls()
  rx = startReceiver(tls)
  t = await testApp({ env: env(), clock })
}, 60_000)
afterAll(async () => {
  await t.close()
  rx.stop()
  tls.remove()
}, 30_000)

const verify = (secret: string, body: string, headers: Record<string, string>) =>
  new Webhook(secret).verify(body, headers) as { event: string; data: any }

test("an opt-out's contact.opted_out and a charge's balance.low reach the receiver without waiting for the poll", async () => {
  rx.reset()
  const { accountId, key } = await t.account(2, { price: 1 })
  expect((await t.admin('PATCH', `/accounts/${accountId}`, { low_balance_threshold: 2 })).status).toBe(200)
  const registered = await t.api('POST', '/webhook', key, { url: rx.url(), events: ['contact.opted_out', 'balance.low'] })
  expect(registered.status).toBe(200)
  const secret = registered.body.data.signing_secret as string
  const delivery = startDelivery(t)
  try {
    await clock.nextSleep() // its first step found nothing: it sleeps until woken (the poll never comes)
    await clock.advance(CLAIM_GATHER_MS)
    expect((await t.api('POST', '/opt-outs', key, { phone: '081298765432' })).status).toBe(201)
    const [optedOut] = await rx.arrived(1)
    expect(verify(secret, optedOut!.body, optedOut!.headers)).toMatchObject({
      event: 'contact.opted_out',
      data: { phone: '+6281298765432' },
    })
    await clock.nextSleep() // asleep again after that claim
    await clock.advance(CLAIM_GATHER_MS)
    // 2 → 1: below the threshold. (One send: a second would wait for its pace slot on the clock.)
    expect((await t.api('POST', '/messages/send', key, { to: '081211110001', body: 'x' })).status).toBe(200)
    const [, low] = await rx.arrived(2)
    expect(verify(secret, low!.body, low!.headers)).toMatchObject({ event: 'balance.low', data: { balance: 1, threshold: 2 } })
  } finally {
    await delivery.stop()
  }
})

describe.skipIf(!usingPostgres())('several instances on one PostgreSQL database', () => {
  test("a commit of one instance wakes another instance's delivery worker", async () => {
    rx.reset()
    // Instance B: a client of its own on the same database, its own deps and LISTEN, its loop sleeping.
    const database = await openDatabase({ databaseUrl: t.db.url, poolMax: 2 })
    const b = buildDeps(t.config, database, { clock })
    const loop = startWebhookDelivery(b.deps)
    try {
      await clock.nextSleep()
      await clock.advance(CLAIM_GATHER_MS)
      // Instance A (the test's app, which runs no worker) writes a test event.
      const { key, keyId } = await t.account(0)
      const registered = await t.api('POST', '/webhook', key, { url: rx.url() })
      expect((await t.admin('POST', `/keys/${keyId}/webhook/test`)).status).toBe(201)
      const [event] = await rx.arrived(1)
      expect(verify(registered.body.data.signing_secret, event!.body, event!.headers)).toMatchObject({ data: { test: true } })
    } finally {
      await loop.stop()
      b.deps.handoff.stop()
      await b.deps.reads.close()
      await database.close()
    }
  })
})
