// Time moves on a test clock: a key's 24 hours and a dead request's 30 s pass by moving it, and the
// requests held at the provider are waited for as events, never by polling.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import type { Provider } from '../../src/providers/provider'
import { TestClock } from '../../src/lib/clock'
import { MAX_RECOVERIES } from '../../src/workers/handoff-recovery'

const clock = new TestClock()
let t: TestApp
beforeAll(async () => {
  t = await testApp({ clock, runOnClock: true })
})
afterAll(() => t.close())

const send = (key: string, body: unknown, idem?: string) =>
  t.api('POST', '/messages/send', key, body, idem === undefined ? {} : { 'idempotency-key': idem })

test('the same request twice charges once and answers identically', async () => {
  const { accountId, key } = await t.account(1000, { price: 100 })
  const body = { to: '081234567890', body: 'once' }
  const first = await send(key, body, 'order-1')
  const second = await send(key, { body: 'once', to: '081234567890' }, 'order-1') // same body, other key order
  expect(first.status).toBe(200)
  expect(second.status).toBe(200)
  expect(second.body).toEqual(first.body)
  expect(second.headers.get('idempotent-replayed')).toBe('true')
  expect(await money(t, accountId)).toEqual({ balance: 900, ledgerSum: 900 })
})

test('20 concurrent identical requests: one charge; every answer is the same success or 409 while in flight', async () => {
  const { accountId, key } = await t.account(1000, { price: 100 })
  const body = {
    messages: [
      { to: '081234567890', body: 'a' },
      { to: '081234567891', body: 'b' },
    ],
  }
  const answers = await Promise.all(
    Array.from({ length: 20 }, () => t.api('POST', '/messages/bulk', key, body, { 'idempotency-key': 'bulk-20' })),
  )
  const successes = answers.filter((a) => a.status === 200)
  const conflicts = answers.filter((a) => a.status === 409)
  expect(successes.length + conflicts.length).toBe(20)
  expect(successes.length).toBeGreaterThanOrEqual(1)
  expect(new Set(successes.map((a) => JSON.stringify(a.body))).size).toBe(1)
  expect(conflicts.every((a) => a.body.code === 'CONFLICT')).toBe(true)
  expect(await money(t, accountId)).toEqual({ balance: 800, ledgerSum: 800 })
  // after the first finished, every repeat replays it
  const later = await t.api('POST', '/messages/bulk', key, body, { 'idempotency-key': 'bulk-20' })
  expect(later.body).toEqual(successes[0]!.body)
  const [count] = await t.db.sql`select count(*)::int as n from messages where account_id = ${accountId}`
  expect(count!.n).toBe(2)
})

test('the same key with another body, or on the other endpoint: 422 IDEMPOTENCY_KEY_REUSED', async () => {
  const { accountId, key } = await t.account(1000, { price: 100 })
  await send(key, { to: '081234567890', body: 'first' }, 'k-1')
  const other = await send(key, { to: '081234567890', body: 'second' }, 'k-1')
  expect([other.status, other.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED'])
  const bulk = await t.api(
    'POST',
    '/messages/bulk',
    key,
    { messages: [{ to: '081234567890', body: 'first' }] },
    { 'idempotency-key': 'k-1' },
  )
  expect([bulk.status, bulk.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED'])
  expect(await money(t, accountId)).toEqual({ balance: 900, ledgerSum: 900 })
})

test('error answers are replayed too, and keys are per account', async () => {
  const poor = await t.account(0)
  const first = await send(poor.key, { to: '081234567890', body: 'x' }, 'shared-key')
  expect(first.status).toBe(402)
  await t.admin('POST', `/accounts/${poor.accountId}/topups`, { amount: 100 })
  const replay = await send(poor.key, { to: '081234567890', body: 'x' }, 'shared-key')
  // The first answer again, naming the request that got it now (its own x-request-id).
  expect([replay.status, replay.body]).toEqual([402, { ...first.body, request_id: replay.headers.get('x-request-id') }])
  expect(replay.body.request_id).not.toBe(first.body.request_id)
  expect(replay.headers.get('idempotent-replayed')).toBe('true')

  const rich = await t.account(100)
  const elsewhere = await send(rich.key, { to: '081234567890', body: 'x' }, 'shared-key')
  expect(elsewhere.status).toBe(200)
})

test('an Idempotency-Key over 255 characters is 422; after 24 h a key can be used again', async () => {
  const { accountId, key } = await t.account(1000, { price: 100 })
  const long = await send(key, { to: '081234567890', body: 'x' }, 'k'.repeat(256))
  expect([long.status, long.body.code]).toEqual([422, 'VALIDATION_ERROR'])
  expect((await send(key, { to: '081234567890', body: 'x' }, 'k'.repeat(255))).status).toBe(200)

  await send(key, { to: '081234567890', body: 'day one' }, 'daily')
  await clock.advance(25 * 3_600_000)
  const reused = await send(key, { to: '081234567890', body: 'day two' }, 'daily')
  expect(reused.status).toBe(200)
  expect(reused.headers.get('idempotent-replayed')).toBeNull()
  expect(await money(t, accountId)).toEqual({ balance: 700, ledgerSum: 700 })
})

test('a repeat while the first request is still handing its message over: 409 at once, then the first answer', async () => {
  // A provider that holds the first hand-off until released.
  const gate = Promise.withResolvers<void>()
  const attempted = Promise.withResolvers<void>()
  let attempts = 0
  const provider: Provider = {
    name: 'twilio',
    async send() {
      attempts++
      attempted.resolve()
      await gate.promise
      return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
    },
  }
  // On a test clock that nobody moves: the repeat's answer takes no time at all (a repeat that waited
  // for the first, or for time to pass, would never be answered).
  const slow = await testApp({ provider, clock: new TestClock() })
  try {
    const { accountId, key } = await slow.account(1000, { price: 100 })
    const body = { to: '081234567890', body: 'slow' }
    const first = slow.api('POST', '/messages/send', key, body, { 'idempotency-key': 'slow-1' })
    await attempted.promise // the first hand-off
    const repeat = await slow.api('POST', '/messages/send', key, body, { 'idempotency-key': 'slow-1' })
    expect(repeat).toMatchObject({ status: 409, body: { code: 'CONFLICT' } })

    gate.resolve()
    const answered = await first
    expect(answered.status).toBe(200)
    expect(await slow.api('POST', '/messages/send', key, body, { 'idempotency-key': 'slow-1' })).toMatchObject({
      status: 200,
      body: answered.body,
    })
    expect(attempts).toBe(1)
    expect(await money(slow, accountId)).toEqual({ balance: 900, ledgerSum: 900 })
  } finally {
    gate.resolve()
    await slow.close()
  }
})

test('a bulk answered 409 (a message still being handed over elsewhere) is not its stored answer: a later repeat answers how each ended', async () => {
  // One hand-off at a time; the provider holds the first until released.
  const gate = Promise.withResolvers<void>()
  const attempted = Promise.withResolvers<void>()
  const attempts: string[] = []
  const provider: Provider = {
    name: 'twilio',
    async send(message) {
      attempts.push(message.to)
      attempted.resolve()
      await gate.promise
      return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
    },
  }
  // Leases of 2 s: the second message's runs out while the first is held (below).
  const clock = new TestClock()
  const slow = await testApp({ provider, clock, env: { HANDOFF_CONCURRENCY: '1', HANDOFF_LEASE_SECONDS: '2' } })
  try {
    const { accountId, key } = await slow.account(1000, { price: 100 })
    const body = {
      messages: [
        { to: '081234567890', body: 'first' },
        { to: '081234567891', body: 'second' },
      ],
    }
    const bulk = () => slow.api('POST', '/messages/bulk', key, body, { 'idempotency-key': 'bulk-elsewhere' })
    const first = bulk()
    await attempted.promise // the first hand-off
    // Meanwhile the second message, still waiting for its turn, is taken from this request: another
    // holder has it (a token not this request's, so its lease is not renewed) and has recovered it as
    // often as recovery may, so once its lease has run out recovery quarantines it, where it waits for
    // an operator. The first's lease, renewed by its live holder, stays this request's.
    const [second] = await slow.db.sql<{ id: number }[]>`
      update messages set handoff_token = gen_random_uuid(), handoff_recoveries = ${MAX_RECOVERIES}
      where account_id = ${accountId} and body = 'second' returning id`
    await clock.advance(2 * slow.config.handoffLeaseSeconds * 1000 + 1_000)
    expect(await clock.run(slow.runWorker('handoff-recovery'))).toBe(0)
    const [quarantined] = await slow.db.sql<{ id: number }[]>`select id from messages where quarantined_at is not null`
    expect(quarantined).toEqual(second)
    gate.resolve()
    const answered = await clock.run(first)
    expect([answered.status, answered.body.code]).toEqual([409, 'CONFLICT'])
    // Still elsewhere: 409 again, computed anew (not a replay).
    const again = await clock.run(bulk())
    expect([again.status, again.body.code, again.headers.get('idempotent-replayed')]).toEqual([409, 'CONFLICT', null])

    // The operator settles it (it never went out: refunded); the repeat answers each entry's outcome.
    expect((await slow.admin('POST', `/quarantine/${second!.id}/settle`, { outcome: 'refund' })).status).toBe(200)
    const settled = await clock.run(bulk())
    expect(settled.status).toBe(200)
    expect(settled.headers.get('idempotent-replayed')).toBeNull()
    expect(settled.body.data).toMatchObject({ total: 2, sent: 1, failed: 1, total_cost: 100, balance_after: 900 })
    expect(settled.body.data.results).toMatchObject([
      { to: '+6281234567890', status: 'sent' },
      { to: '+6281234567891', status: 'failed', code: 'BAD_GATEWAY', id: second!.id },
    ])
    // That answer is the stored one from now on.
    expect(await clock.run(bulk())).toMatchObject({ status: 200, body: settled.body })
    expect(attempts).toEqual(['+6281234567890'])
    expect(await money(slow, accountId)).toEqual({ balance: 900, ledgerSum: 900 })
  } finally {
    gate.resolve()
    await slow.close()
  }
})

// A key left `running` by a request that died. What its repeat does depends on how far the dead
// request got: nothing charged (recent: 409; older than 30 s: run again with its token), messages
// still queued (409 until recovery hands them over), every message with an outcome (the final answer).
test('recovery: a key whose request died before charging runs again once stale, charging once', async () => {
  const { accountId, key } = await t.account(1000, { price: 100 })
  const body = { to: '081234567890', body: 'died before the charge' }
  await t.db.sql`
    insert into idempotency_keys (account_id, key, endpoint, fingerprint, state, request_token, created_at)
    select ${accountId}, 'dead-1', 'send', k.fingerprint, 'running', gen_random_uuid(), ${clock.now()}
    from (select ${await fingerprintOf(key, body)} as fingerprint) k`
  expect((await send(key, body, 'dead-1')).status).toBe(409) // it may still be running
  await clock.advance(31_000)
  const recovered = await send(key, body, 'dead-1')
  expect(recovered.status).toBe(200)
  expect(await send(key, body, 'dead-1')).toMatchObject({ status: 200, body: recovered.body })
  expect(await money(t, accountId)).toEqual({ balance: 900, ledgerSum: 900 })
})

test('recovery: a key whose request died after charging answers 409 while queued, then the final answer', async () => {
  const { accountId, key } = await t.account(1000, { price: 100 })
  const body = { to: '081234567890', body: 'died after the charge' }
  const first = await send(key, body, 'dead-2')
  expect(first.status).toBe(200)
  // Rewind to the moment of the crash: the answer not stored, the message charged and still queued.
  await t.db.sql`update idempotency_keys set state = 'running', response_status = null, response_body = null where key = 'dead-2'`
  const [message] = await t.db.sql<{ id: number; message_sid: string }[]>`
    update messages set status = 'queued' where account_id = ${accountId} returning id, message_sid`
  expect((await send(key, body, 'dead-2')).status).toBe(409)
  // Recovery records the outcome (here: the same acceptance), and the repeat gets the final answer.
  await t.db.sql`update messages set status = 'sent' where id = ${message!.id}`
  const recovered = await send(key, body, 'dead-2')
  expect(recovered.status).toBe(200)
  expect(recovered.body).toEqual(first.body)
  expect(await money(t, accountId)).toEqual({ balance: 900, ledgerSum: 900 })
})

/** The fingerprint the service stores for a send body: learnt from a throwaway key of another account. */
async function fingerprintOf(_key: string, body: unknown): Promise<string> {
  const other = await t.account(100)
  await send(other.key, body, 'fingerprint-probe')
  const [row] = await t.db.sql<{ fingerprint: string }[]>`
    select fingerprint from idempotency_keys where account_id = ${other.accountId} and key = 'fingerprint-probe'`
  return row!.fingerprint
}
