// A STOP stops what has not been handed over yet (issue 28): a message charged before its recipient
// opted out, and still waiting for its hand-off (its slot at a slow sender's pace, or a retry after the
// provider throttled it), is failed RECIPIENT_OPTED_OUT and refunded once, never handed over. A single
// send still waiting answers 422 RECIPIENT_OPTED_OUT; a bulk entry fails with that code; a message
// answered `queued` gets its message.status event saying so; a campaign's message fails the same.
// Senders are stored Meta numbers of the fake Graph API, each test's its own (its pace is its own); the
// opt-outs come through the real signed inbound webhook (a customer writes STOP) or POST /opt-outs,
// made while the message waits: from the fake's answer to the message before it (or to its throttled
// attempt), or while a test clock stands still with the message asleep on its slot, so no test sleeps
// to let time pass.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeGraph, graphError } from '../helpers/fake-graph'
import { assign, createSender } from '../helpers/senders'
import { OPTED_OUT_AT_HANDOFF } from '../../src/modules/optouts/service'
import { TestClock } from '../../src/lib/clock'
import { inFlight } from '../helpers/in-flight'

const graph = fakeGraph()

const env = (more: Record<string, string> = {}) => ({
  PROVIDER: 'simulator',
  META_API_BASE: graph.apiBase,
  PUBLIC_BASE_URL: 'https://api.example.com',
  PROVIDER_TIMEOUT_MS: '5000',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  ...more,
})

let t: TestApp
beforeAll(async () => {
  t = await testApp({ env: env() })
  graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
}, 60_000)
afterAll(async () => {
  await t.close()
  graph.stop()
})

let senders = 0
/**
 * An account (balance 100, price 1) whose default sender is a new Meta number of its own at
 * `rate` messages a second (the provider's default when not given).
 */
async function accountWithSender(rate?: number, app = t) {
  const n = ++senders
  const phoneNumberId = `30000000000000${n}`
  const appSecret = `handoff-app-secret-${n}`
  graph.phone(phoneNumberId, `EAAhandoffToken${n}`, { appSecret })
  const senderId = await createSender(
    app,
    'meta',
    {
      number: `+628110000090${n}`,
      credentials: {
        access_token: `EAAhandoffToken${n}`,
        phone_number_id: phoneNumberId,
        app_secret: appSecret,
        business_account_id: `40000000000000${n}`,
        verify_token: `verify-${n}`,
      },
    },
    { recipient_gap_ms: 0, ...(rate === undefined ? {} : { rate_per_second: rate }) },
  )
  const account = await app.account(100, { price: 1 })
  await assign(app, account.accountId, senderId, true)
  return { ...account, phoneNumberId }
}

let numbers = 0
function customer() {
  const national = `8135${String(++numbers).padStart(7, '0')}`
  return { wa: `62${national}`, phone: `+62${national}`, local: `0${national}` }
}

/** What the fake was asked to send to `c`. */
const handedTo = (c: { wa: string }) => graph.requests.filter((r) => r.to === c.wa).length

/** The message's row: its status, error, and its ledger rows (charges and refunds). */
async function settled(id: number, app = t) {
  const [row] = await app.db.sql<{ status: string; error_code: number | null; error_message: string | null; refunded: boolean }[]>`
    select status, error_code, error_message, refunded_at is not null as refunded from messages where id = ${id}`
  const ledger = await app.db.sql<{ kind: string; amount: number }[]>`select kind, amount from ledger where message_id = ${id} order by id`
  return { ...row!, ledger: ledger.map((l) => [l.kind, l.amount]) }
}

const STOPPED = {
  status: 'failed',
  error_code: null,
  error_message: OPTED_OUT_AT_HANDOFF,
  refunded: true,
  ledger: [
    ['charge', -1],
    ['refund', 1],
  ],
}

test('a single send waiting for its slot when the customer writes STOP: 422 RECIPIENT_OPTED_OUT, refunded, never handed over', async () => {
  // On a test clock: the second send, charged, sleeps on its slot until the test moves the clock.
  const clock = new TestClock()
  const u = await testApp({ env: env(), clock })
  const callback = graph.callback
  graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => u.app.handle(r) }
  try {
    const a = await accountWithSender(0.25, u) // a slot every 4 s
    const first = customer()
    const second = customer()
    expect((await clock.run(u.api('POST', '/messages/send', a.key, { to: first.local, body: 'first' }))).status).toBe(200)
    // The second send's slot is 4 s after the first's: charged, it waits for it.
    const answer = u.api('POST', '/messages/send', a.key, { to: second.local, body: 'second' })
    await clock.nextSleep(true)
    const [charged] = await u.db.sql<
      { id: number }[]
    >`select id from messages where account_id = ${a.accountId} and phone = ${second.phone}`
    // The customer writes STOP to the number, through Meta's signed webhook.
    const stop = await graph.customerWrites({ phoneNumberId: a.phoneNumberId, from: second.wa, text: 'STOP' })
    expect(stop.status).toBe(200)
    expect((await u.api('GET', `/opt-outs?phone=${second.local}`, a.key)).body.data.items).toMatchObject([{ source: 'inbound' }])

    const { status, body } = await clock.run(answer)
    expect({ status, code: body.code, id: body.id }).toEqual({ status: 422, code: 'RECIPIENT_OPTED_OUT', id: charged!.id })
    expect(body.error).toContain('refunded')
    expect(handedTo(second)).toBe(0)
    expect(await settled(charged!.id, u)).toEqual(STOPPED)
    expect(await money(u, a.accountId)).toEqual({ balance: 99, ledgerSum: 99 }) // the first send's charge only
    // Listed as failed, with the code in its error.
    const listed = await u.api('GET', '/messages?status=failed', a.key)
    expect(listed.body.data.items).toMatchObject([
      { id: charged!.id, status: 'failed', message_sid: null, error_code: null, error_message: OPTED_OUT_AT_HANDOFF },
    ])
  } finally {
    graph.callback = callback
    await u.close()
  }
}, 30_000)

test('a bulk entry waiting for its slot when its recipient is opted out: fails RECIPIENT_OPTED_OUT, refunded, never handed over', async () => {
  // On a test clock: the second entry sleeps on its slot (4 s after the first's) while the first's
  // hand-off opts its recipient out (POST /opt-outs); the clock moves only once that opt-out is made.
  const clock = new TestClock()
  const u = await testApp({ env: env(), clock })
  const a = await accountWithSender(0.25, u)
  const first = customer()
  const second = customer()
  const optedOut = Promise.withResolvers<number>()
  graph.answer = async (_request, sent) => {
    if (sent?.to === first.wa) optedOut.resolve((await u.api('POST', '/opt-outs', a.key, { phone: second.local })).status)
    return undefined
  }
  try {
    const answer = await clock.run(
      u.api('POST', '/messages/bulk', a.key, {
        messages: [
          { to: first.local, body: 'one' },
          { to: second.local, body: 'two' },
        ],
      }),
      undefined,
      () => optedOut.promise.then(() => {}),
    )
    expect(await optedOut.promise).toBe(201)
    expect(answer.status).toBe(200)
    expect(answer.body.data).toMatchObject({ total: 2, sent: 1, failed: 1, total_cost: 1, balance_after: 99 })
    const entry = answer.body.data.results[1]
    expect(entry).toMatchObject({ to: second.phone, status: 'failed', code: 'RECIPIENT_OPTED_OUT' })
    expect(handedTo(first)).toBe(1)
    expect(handedTo(second)).toBe(0)
    expect(await settled(entry.id, u)).toEqual(STOPPED)
    expect(await money(u, a.accountId)).toEqual({ balance: 99, ledgerSum: 99 })
  } finally {
    graph.answer = null
    await u.close()
  }
}, 30_000)

/**
 * Throttles (130429, Retry-After 1 s) the first attempt to `c`, and opts `c` out before that answer
 * goes; a later attempt would be accepted (a retry after the STOP would be handed over).
 */
function throttleAndOptOut(a: { key: string }, c: { wa: string; local: string }, app = t) {
  let optedOut: Promise<number> | undefined
  graph.answer = async (_request, sent) => {
    if (sent?.to !== c.wa || optedOut) return undefined
    optedOut = app.api('POST', '/opt-outs', a.key, { phone: c.local }).then((r) => r.status)
    await optedOut
    return graphError(400, 130429, '(#130429) Rate limit hit', { 'retry-after': '1' })
  }
  return () => optedOut
}

test('a throttled single send whose recipient opts out before its retry: 422 RECIPIENT_OPTED_OUT, refunded, no further attempt', async () => {
  const a = await accountWithSender()
  const c = customer()
  const optedOut = throttleAndOptOut(a, c)
  try {
    const { status, body } = await t.api('POST', '/messages/send', a.key, { to: c.local, body: 'throttled' })
    expect(await optedOut()).toBe(201)
    expect({ status, code: body.code }).toEqual({ status: 422, code: 'RECIPIENT_OPTED_OUT' })
    expect(handedTo(c)).toBe(1) // the throttled attempt, no retry
    expect(await settled(body.id)).toEqual(STOPPED)
    expect(await money(t, a.accountId)).toEqual({ balance: 100, ledgerSum: 100 })
  } finally {
    graph.answer = null
  }
}, 30_000)

test('a throttled bulk entry answered queued whose recipient opts out: failed RECIPIENT_OPTED_OUT, refunded, its event says so', async () => {
  // Answered within 300 ms (BULK_WAIT_MS): queued, its outcome announced by a message.status event.
  // On a test clock: the throttle's Retry-After passes as the hand-off sleeps on it; the answer's
  // deadline comes first, and the clock moves on only once the statements it started are done.
  const clock = new TestClock()
  const flight = inFlight()
  const u = await testApp({ env: env({ BULK_WAIT_MS: '300' }), clock, wrapSql: flight.sql })
  try {
    const a = await accountWithSender(undefined, u)
    expect((await u.api('POST', '/webhook', a.key, { url: 'http://127.0.0.1:9/hook' })).status).toBe(200)
    const c = customer()
    const optedOut = throttleAndOptOut(a, c, u)
    const bulk = await clock.run(
      u.api('POST', '/messages/bulk', a.key, { messages: [{ to: c.local, body: 'queued' }] }),
      undefined,
      flight.idle,
    )
    expect(await optedOut()).toBe(201)
    expect(bulk.status).toBe(200)
    const entry = bulk.body.data.results[0]
    expect(entry).toMatchObject({ status: 'queued' })
    // Its hand-off goes on: waited for as the service waits for an outcome.
    await clock.run(u.deps.handoff.outcomeOf(entry.id))
    expect(await settled(entry.id, u)).toEqual(STOPPED)
    const events = await u.db.sql<{ payload: string }[]>`select payload from webhook_events where message_id = ${entry.id}`
    expect(events.map((e) => JSON.parse(e.payload).data)).toEqual([
      {
        message_sid: null,
        to: c.phone,
        status: 'failed',
        previous_status: 'queued',
        error_code: null,
        error_message: OPTED_OUT_AT_HANDOFF,
        refunded: true,
      },
    ])
    expect(handedTo(c)).toBe(1)
    expect(await money(u, a.accountId)).toEqual({ balance: 100, ledgerSum: 100 })
  } finally {
    graph.answer = null
    await u.close()
  }
}, 30_000)

test("a campaign's message throttled when its recipient opts out: failed RECIPIENT_OPTED_OUT, refunded, no further attempt", async () => {
  const a = await accountWithSender()
  const kept = customer()
  const stopped = customer()
  for (const [i, c] of [kept, stopped].entries()) {
    expect((await t.api('POST', '/contacts', a.key, { name: `C${i}`, phone: c.local, tags: 'vip' })).status).toBe(201)
  }
  const template = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'promo', body: 'Hi {{name}}' })
  const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
  const draft = await t.api('POST', '/campaigns', a.key, {
    name: 'Promo',
    template_id: template.body.data.id,
    segment_id: segment.body.data.id,
  })
  expect(draft.status).toBe(201)
  const id: number = draft.body.data.campaign.id
  const optedOut = throttleAndOptOut(a, stopped)
  try {
    expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
    // The worker's step charges the batch and returns once every message of it has its outcome.
    await t.runWorker('campaign-runner')
    expect(await optedOut()).toBe(201)
    const rows = await t.db.sql<{ id: number; phone: string; status: string }[]>`
      select id, phone, status from messages where campaign_id = ${id} order by phone`
    expect(rows.map((r) => [r.phone, r.status])).toEqual([
      [kept.phone, 'sent'],
      [stopped.phone, 'failed'],
    ])
    expect(await settled(rows[1]!.id)).toEqual(STOPPED)
    expect([handedTo(kept), handedTo(stopped)]).toEqual([1, 1])
    expect(await money(t, a.accountId)).toEqual({ balance: 99, ledgerSum: 99 })
    const detail = await t.api('GET', `/campaigns/${id}`, a.key)
    expect(detail.body.data.stats).toMatchObject({ total: 2, sent: 1, failed: 1 })
  } finally {
    graph.answer = null
  }
}, 30_000)
