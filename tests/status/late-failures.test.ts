// Money follows the outcome: a message the provider accepted and later reported failed is refunded
// exactly what it was charged, once, with the status change (its ledger row, `refunded` on the
// message and in the webhook event), unless it was charged under a price that keeps late failures
// charged. Messages are sent through the API to a local fake Twilio and reported to through signed
// Twilio status callbacks; the price and its choice are set through the admin API. On a test clock:
// a hand-off times out when the test moves the clock past PROVIDER_TIMEOUT_MS.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/app'
import { money, testApp, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'
import { reportStatus, type ReportTarget, type ReportedByTwilio } from '../helpers/reports'
import { TestClock } from '../../src/lib/clock'

// The service's time limit for the provider's answer; it passes only when the test moves the clock.
const TIMEOUT_MS = 1_500
/** Numbers ending in this are accepted by the fake Twilio only after the service stopped waiting (the test lets it answer). */
const LATE_SUFFIX = '0999'
const clock = new TestClock()

/** The fake's late answer: `arrived` once the send reached it; it answers when `answer()` is called, `answered` then. */
function lateAnswer() {
  const signal = () => {
    let resolve!: () => void
    const promise = new Promise<void>((r) => (resolve = r))
    return { promise, resolve }
  }
  const [arrived, answering, answered] = [signal(), signal(), signal()]
  return { arrived, answering, answered }
}
let late = lateAnswer()

const randomSid = () => `SM${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('hex')}`
/** Every SID the fake gave, by the number it was given for (`+62...`). */
const sidsGiven = new Map<string, string[]>()
const fake = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(request) {
    const to = String((await request.formData()).get('To')).replace(/^whatsapp:/, '')
    const sid = randomSid()
    sidsGiven.set(to, [...(sidsGiven.get(to) ?? []), sid])
    if (to.endsWith(LATE_SUFFIX)) {
      late.arrived.resolve()
      await late.answering.promise
      late.answered.resolve()
    }
    return Response.json({ sid, status: 'queued' }, { status: 201 })
  },
})

let t: TestApp
/** Apps over the same database, each with its own receiver (as instances of the service have). */
let instances: ReportTarget[]
beforeAll(async () => {
  t = await testApp({
    runOnClock: true,
    env: {
      PROVIDER: 'twilio',
      TWILIO_ACCOUNT_SID: `AC${'0'.repeat(32)}`,
      TWILIO_FROM: 'whatsapp:+14155238886',
      TWILIO_API_BASE: `http://127.0.0.1:${fake.port}`,
      PROVIDER_TIMEOUT_MS: String(TIMEOUT_MS),
      WEBHOOK_ALLOW_PRIVATE: 'true',
    },
    clock,
  })
  instances = [t, ...Array.from({ length: 3 }, () => ({ app: createApp(t.deps), config: t.config }))]
}, 60_000)
afterAll(async () => {
  await t.close()
  fake.stop(true)
})

type Account = { accountId: number; key: string; keyId: number }

/** An account with `balance`, its own price `price` and, unless told otherwise, a webhook URL (events are recorded, not sent). */
async function account(balance: number, price: number, options: { refundLateFailures?: boolean } = {}): Promise<Account> {
  const a = await t.account(balance)
  const set = await t.admin('PUT', '/price', {
    cost_per_message: price,
    account_id: a.accountId,
    ...(options.refundLateFailures === undefined ? {} : { refund_late_failures: options.refundLateFailures }),
  })
  expect(set.status).toBe(200)
  expect((await t.api('POST', '/webhook', a.key, { url: 'http://127.0.0.1:9/hook' })).status).toBe(200)
  return a
}

async function send(a: Account, to = '081234567890'): Promise<string> {
  const res = await t.api('POST', '/messages/send', a.key, { to, body: 'halo' })
  expect(res.status).toBe(200)
  return res.body.data.message_id
}

const report = (sid: string, status: ReportedByTwilio, via: ReportTarget = t) =>
  reportStatus(via, sid, status, status === 'failed' || status === 'undelivered' ? { errorCode: 30008, errorMessage: 'Unknown error' } : {})

const message = async (a: Account, sid: string) => (await t.api('GET', `/messages/${sid}`, a.key)).body.data

type LedgerRow = { kind: string; amount: number; balance_after: number; message_id: number | null; note: string | null }
/** The account's ledger, oldest first, through the admin API. */
async function ledger(a: Account): Promise<LedgerRow[]> {
  const res = await t.admin('GET', `/accounts/${a.accountId}/ledger?limit=200`)
  return (res.body.data.items as LedgerRow[]).reverse()
}
const refundsOf = async (a: Account, messageId: number) =>
  (await ledger(a)).filter((r) => r.kind === 'refund' && r.message_id === messageId)

/** The data of the key's `message.status` events for one message, oldest first, through the admin API. */
async function events(a: Account, sid: string): Promise<Record<string, unknown>[]> {
  const res = await t.admin('GET', `/keys/${a.keyId}/deliveries?limit=200`)
  return (res.body.data.items as { message_sid: string | null; payload: { data: Record<string, unknown> } }[])
    .filter((d) => d.message_sid === sid)
    .map((d) => d.payload.data)
    .reverse()
}

const balance = async (a: Account) => (await t.api('GET', '/balance', a.key)).body.data.wa_balance as number

describe('a failure reported after the provider accepted the message', () => {
  test('delivered, then failed: refunded once, with its ledger row, `refunded` on the message and in the event', async () => {
    const a = await account(1000, 300)
    const sid = await send(a)
    const { id } = await message(a, sid)
    expect(await balance(a)).toBe(700)
    expect((await report(sid, 'delivered')).changed).toBe(true)
    expect(await balance(a)).toBe(700)

    expect((await report(sid, 'failed')).changed).toBe(true)
    expect(await balance(a)).toBe(1000)
    expect(await message(a, sid)).toMatchObject({ status: 'failed', cost: 300, refunded: true, error_code: 30008 })
    expect(await refundsOf(a, id)).toMatchObject([
      {
        kind: 'refund',
        amount: 300,
        balance_after: 1000,
        message_id: id,
        note: 'the provider reported it failed after accepting it (error 30008)',
      },
    ])
    expect(await events(a, sid)).toEqual([
      { message_sid: sid, to: '+6281234567890', status: 'delivered', previous_status: 'sent', error_code: null, error_message: null },
      {
        message_sid: sid,
        to: '+6281234567890',
        status: 'failed',
        previous_status: 'delivered',
        error_code: 30008,
        error_message: 'Unknown error',
        refunded: true,
      },
    ])

    // Reported again, in either of Twilio's words: nothing more.
    for (const status of ['failed', 'undelivered', 'failed'] as const) expect((await report(sid, status)).changed).toBe(false)
    expect(await balance(a)).toBe(1000)
    expect(await refundsOf(a, id)).toHaveLength(1)
    expect(await events(a, sid)).toHaveLength(2)
    const m = await money(t, a.accountId)
    expect(m.balance).toBe(m.ledgerSum)
  })

  test('sent, then undelivered: refunded exactly what was charged, though the price changed since', async () => {
    const a = await account(1000, 300)
    const sid = await send(a)
    const { id } = await message(a, sid)
    expect((await t.admin('PUT', '/price', { cost_per_message: 450, account_id: a.accountId })).status).toBe(200)
    expect((await t.admin('PUT', '/price', { cost_per_message: 20 })).status).toBe(200)

    expect((await report(sid, 'undelivered')).changed).toBe(true)
    expect(await balance(a)).toBe(1000)
    expect((await refundsOf(a, id)).map((r) => r.amount)).toEqual([300])
    expect(await message(a, sid)).toMatchObject({ status: 'failed', cost: 300, refunded: true })
    expect((await events(a, sid)).map((e) => [e.previous_status, e.status, e.refunded])).toEqual([['sent', 'failed', true]])
    expect((await report(sid, 'undelivered')).changed).toBe(false)
    expect(await refundsOf(a, id)).toHaveLength(1)
    expect((await t.admin('PUT', '/price', { cost_per_message: 1 })).status).toBe(200)
  })

  test(`concurrent failure reports through several instances (${usingPostgres() ? 'PostgreSQL' : 'PGlite, serialised'}): one refund each`, async () => {
    // Two accounts, messages interleaved, so that concurrent statements refund both accounts at once.
    const accounts = [await account(10_000, 70), await account(10_000, 90)]
    const sent: { a: Account; sid: string }[] = []
    for (let i = 0; i < 12; i++) {
      const a = accounts[i % 2]!
      const sid = await send(a)
      if (i % 3 === 0) await report(sid, 'delivered')
      sent.push({ a, sid })
    }
    const outcomes = await Promise.all(
      sent.flatMap(({ sid }, i) =>
        Array.from({ length: 4 }, (_, j) => report(sid, j % 2 ? 'undelivered' : 'failed', instances[(i + j) % instances.length])),
      ),
    )
    expect(outcomes.filter((o) => o.changed)).toHaveLength(sent.length)
    for (const { a, sid } of sent) {
      const { id, refunded, status } = await message(a, sid)
      expect({ status, refunded }).toEqual({ status: 'failed', refunded: true })
      expect(await refundsOf(a, id)).toHaveLength(1)
      expect((await events(a, sid)).filter((e) => e.status === 'failed')).toHaveLength(1)
    }
    for (const a of accounts) {
      expect(await balance(a)).toBe(10_000)
      const m = await money(t, a.accountId)
      expect(m.balance).toBe(m.ledgerSum)
    }
  })

  test('a failure reported for a message whose hand-off failed (already refunded) refunds nothing more', async () => {
    const a = await account(1000, 300)
    const to = `+62812345${LATE_SUFFIX}`
    // The fake accepts it, but after the service stopped waiting: failed at hand-off, refunded, no SID.
    late = lateAnswer()
    const sending = t.api('POST', '/messages/send', a.key, { to, body: 'halo' })
    await late.arrived.promise
    await clock.advance(TIMEOUT_MS)
    const refused = await sending
    expect(refused.status).toBe(502)
    expect(await balance(a)).toBe(1000)
    // The provider had given it a SID; it reports that SID failed (and again, and through another instance).
    late.answering.resolve()
    await late.answered.promise
    const [sid] = sidsGiven.get(to)!
    for (const via of instances.slice(0, 2)) expect((await report(sid!, 'failed', via)).changed).toBe(false)
    await t.runWorker('parked-reports')
    expect(await balance(a)).toBe(1000)
    const rows = await ledger(a)
    expect(rows.filter((r) => r.kind === 'refund').map((r) => [r.amount, r.message_id])).toEqual([[300, refused.body.id]])
    const listed = (await t.api('GET', '/messages?status=failed', a.key)).body.data.items
    expect(listed.map((m: { id: number; refunded: boolean }) => [m.id, m.refunded])).toEqual([[refused.body.id, true]])
    const m = await money(t, a.accountId)
    expect(m.balance).toBe(m.ledgerSum)
  })

  test('a message already refunded is never refunded again when it fails (the guard on refunded_at)', async () => {
    // No path of the service refunds a message that is still delivered today; this one is made so, to
    // show that a failure refunds only a message not refunded yet, whatever refunded it first: stored
    // straight in SQL (sent at a cost of 300, already marked refunded, at the clock's time) for an
    // account holding 700, then reported delivered.
    const a = await account(700, 300)
    const sid = randomSid()
    const [{ id }] = await t.db.sql<[{ id: number }]>`
      insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at, refunded_at)
      values (${a.accountId}, ${a.keyId}, ${sid}, '+6281234567890', 'halo', 'sent', 300, ${clock.now()}, ${clock.now()})
      returning id`
    await report(sid, 'delivered')
    expect((await report(sid, 'failed')).changed).toBe(true)
    expect(await balance(a)).toBe(700)
    expect(await refundsOf(a, id)).toEqual([])
    expect((await events(a, sid)).at(-1)).toMatchObject({ status: 'failed', refunded: false })
  })
})

describe('a price that keeps late failures charged', () => {
  test('single sends, bulks and campaigns charged under it stay charged when they fail: `refunded` false', async () => {
    const a = await account(100_000, 40, { refundLateFailures: false })
    const single = await send(a)
    const bulk = await t.api('POST', '/messages/bulk', a.key, {
      messages: [
        { to: '081234567891', body: 'one' },
        { to: '081234567892', body: 'two' },
      ],
    })
    expect(bulk.status).toBe(200)
    expect(bulk.body.data.sent).toBe(2)
    for (const [i, phone] of ['081234567893', '081234567894'].entries())
      expect((await t.api('POST', '/contacts', a.key, { name: `c${i}`, phone, tags: 'late' })).status).toBe(201)
    const template = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'promo', body: 'Hi {{name}}' })
    const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'late', tag: 'late' })
    const draft = await t.api('POST', '/campaigns', a.key, {
      name: 'late failures',
      template_id: template.body.data.id,
      segment_id: segment.body.data.id,
    })
    const campaignId = draft.body.data.campaign.id
    expect((await t.admin('POST', `/campaigns/${campaignId}/run`)).status).toBe(200)
    while ((await t.api('GET', `/campaigns/${campaignId}`, a.key)).body.data.campaign.status !== 'sent')
      await t.runWorker('campaign-runner')

    const listed = (await t.api('GET', '/messages?limit=200', a.key)).body.data.items as {
      message_sid: string
      campaign_id: number | null
    }[]
    expect(listed).toHaveLength(5)
    expect(listed.filter((m) => m.campaign_id === campaignId)).toHaveLength(2)
    expect(listed.map((m) => m.message_sid)).toContain(single)
    const before = await balance(a)
    expect(before).toBe(100_000 - 5 * 40)

    for (const m of listed) expect((await report(m.message_sid, 'failed')).changed).toBe(true)
    expect(await balance(a)).toBe(before)
    expect((await ledger(a)).filter((r) => r.kind === 'refund')).toEqual([])
    for (const m of listed) {
      expect(await message(a, m.message_sid)).toMatchObject({ status: 'failed', refunded: false })
      expect((await events(a, m.message_sid)).at(-1)).toMatchObject({ status: 'failed', refunded: false })
    }
  })

  test('the choice a message was charged under applies, not the one in force when its failure is reported', async () => {
    const a = await account(1000, 100, { refundLateFailures: false })
    const keptCharged = await send(a)
    expect((await t.admin('PUT', '/price', { cost_per_message: 100, account_id: a.accountId, refund_late_failures: true })).status).toBe(
      200,
    )
    const refunded = await send(a)
    expect((await t.admin('PUT', '/price', { cost_per_message: 100, account_id: a.accountId, refund_late_failures: false })).status).toBe(
      200,
    )
    expect(await balance(a)).toBe(800)

    await report(keptCharged, 'failed')
    await report(refunded, 'failed')
    expect(await message(a, keptCharged)).toMatchObject({ status: 'failed', refunded: false })
    expect(await message(a, refunded)).toMatchObject({ status: 'failed', refunded: true })
    expect(await balance(a)).toBe(900)
    expect((await ledger(a)).filter((r) => r.kind === 'refund').map((r) => r.amount)).toEqual([100])
  })

  test('the global price holds the choice for accounts without their own price', async () => {
    const a = await t.account(1000)
    expect((await t.api('POST', '/webhook', a.key, { url: 'http://127.0.0.1:9/hook' })).status).toBe(200)
    const acct: Account = a
    const global = await t.admin('PUT', '/price', { cost_per_message: 10, refund_late_failures: false })
    expect(global.body.data).toMatchObject({ cost_per_message: 10, account_id: null, account_override: false, refund_late_failures: false })
    try {
      const sid = await send(acct)
      await report(sid, 'failed')
      expect(await message(acct, sid)).toMatchObject({ status: 'failed', refunded: false, cost: 10 })
      expect(await balance(acct)).toBe(990)
    } finally {
      expect((await t.admin('PUT', '/price', { cost_per_message: 1, refund_late_failures: true })).status).toBe(200)
    }
  })
})
