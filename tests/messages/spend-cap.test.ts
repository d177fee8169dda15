// A key's daily spend cap, enforced by the charge statements (ledger/service.ts): a send or a bulk
// that would take what the key was charged today past its cap is 402 SPEND_CAP_REACHED with nothing
// charged; up to the cap exactly passes; the day is the service time zone's; refunds give no room
// back; a campaign created with the key pauses at the cap. The days pass on a test clock. (Setting the
// cap and what a key was charged today, as operators see them: tests/admin/key-limits.test.ts;
// concurrent sends through several instances: spend-cap-instances.outer.test.ts.)

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { money, testApp, type TestApp } from '../helpers/app'

// 14 hours ahead of UTC all year: its day is not UTC's for most of the day.
const TZ = 'Pacific/Kiritimati'
const TZ_OFFSET_MS = 14 * 3_600_000
const DAY_MS = 24 * 3_600_000
const PRICE = 100
const clock = new TestClock()
let t: TestApp
beforeAll(async () => {
  t = await testApp({ clock, runOnClock: true, env: { TIMEZONE: TZ } })
})
afterAll(() => t.close())

/** Moves the clock to the next midnight in TZ: a new day for the caps. */
const nextDay = () => clock.advanceTo((Math.floor((clock.now().getTime() + TZ_OFFSET_MS) / DAY_MS) + 1) * DAY_MS - TZ_OFFSET_MS)

/** An account with `balance`, a key whose daily cap is `cap` messages at PRICE, and the key's id. */
async function capped(cap: number, balance = 100 * PRICE) {
  const a = await t.account(balance, { price: PRICE })
  const set = await t.admin('PATCH', `/keys/${a.keyId}`, { daily_spend_cap: cap * PRICE })
  expect(set.status).toBe(200)
  return a
}

const send = (key: string, to = '081234567890') => t.api('POST', '/messages/send', key, { to, body: 'hello' })
const bulk = (key: string, n: number) =>
  t.api('POST', '/messages/bulk', key, {
    messages: Array.from({ length: n }, (_, i) => ({ to: `0812345${String(i).padStart(5, '0')}`, body: `entry ${i}` })),
  })
const spentToday = async (keyId: number) => (await t.admin('GET', `/keys/${keyId}`)).body.data.spent_today as number
const messagesOf = async (accountId: number) =>
  (await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where account_id = ${accountId}`)[0]!.n

/** Everything a refused charge must leave as it was. */
async function snapshot(a: { accountId: number; keyId: number }) {
  const [key] = await t.db.sql`select spend_day, spent_today from api_keys where id = ${a.keyId}`
  return { money: await money(t, a.accountId), messages: await messagesOf(a.accountId), key }
}

function expectCapRefusal(answer: { status: number; body: any }) {
  expect([answer.status, answer.body.code]).toEqual([402, 'SPEND_CAP_REACHED'])
  expect(answer.body.error).toContain('daily spend cap')
}

describe('sends and bulks', () => {
  test('single sends: up to the cap exactly pass, the next is 402 SPEND_CAP_REACHED and charges nothing', async () => {
    const a = await capped(3)
    for (let i = 0; i < 3; i++) expect((await send(a.key)).status).toBe(200)
    expect(await spentToday(a.keyId)).toBe(3 * PRICE)
    const before = await snapshot(a)
    const refused = await send(a.key)
    expectCapRefusal(refused)
    expect(refused.body.error).toContain(`cap of ${3 * PRICE}`)
    expect(refused.body.error).toContain(`charged ${3 * PRICE} today`)
    expect(await snapshot(a)).toEqual(before)
    expect(before.money).toEqual({ balance: 97 * PRICE, ledgerSum: 97 * PRICE })
  })

  test('a bulk that would pass the cap is refused whole, nothing charged; one that fills it exactly passes', async () => {
    const a = await capped(5)
    expect((await bulk(a.key, 3)).status).toBe(200)
    const before = await snapshot(a)
    expectCapRefusal(await bulk(a.key, 3)) // 6 > 5
    expect(await snapshot(a)).toEqual(before)

    // Entries that fail on their own are not charged, and do not count against the cap.
    const mixed = await t.api('POST', '/messages/bulk', a.key, {
      messages: [
        { to: '081234567890', body: 'fills the cap' },
        { to: '12345', body: 'not a phone number' },
        { to: '081234567891', body: 'fills the cap too' },
      ],
    })
    expect(mixed.status).toBe(200)
    expect(mixed.body.data).toMatchObject({ total: 3, sent: 2, failed: 1, total_cost: 2 * PRICE, balance_after: 95 * PRICE })
    expect(await spentToday(a.keyId)).toBe(5 * PRICE)
    const full = await snapshot(a)
    expectCapRefusal(await bulk(a.key, 1))
    expectCapRefusal(await send(a.key))
    expect(await snapshot(a)).toEqual(full)
    expect(full.money).toEqual({ balance: 95 * PRICE, ledgerSum: 95 * PRICE })
  })

  test('the cap is checked before the balance: a key at its cap is SPEND_CAP_REACHED even when the balance is short too', async () => {
    const a = await capped(1, PRICE)
    expect((await send(a.key)).status).toBe(200)
    expectCapRefusal(await send(a.key))
    // Under its cap, a short balance is INSUFFICIENT_BALANCE as always.
    await t.admin('PATCH', `/keys/${a.keyId}`, { daily_spend_cap: 10 * PRICE })
    expect((await send(a.key)).body.code).toBe('INSUFFICIENT_BALANCE')
  })

  test('refunds give no room back: a message the provider refused still counts', async () => {
    const a = await capped(2)
    expect((await send(a.key, '081234569999')).status).toBe(502) // refused by the simulator, refunded
    expect((await send(a.key)).status).toBe(200)
    expectCapRefusal(await send(a.key))
    expect(await money(t, a.accountId)).toEqual({ balance: 99 * PRICE, ledgerSum: 99 * PRICE })
    expect(await spentToday(a.keyId)).toBe(2 * PRICE)
  })

  test("the cap is each key's own: the account's other keys, and keys without a cap, are not held back", async () => {
    const a = await capped(1)
    const other = (await t.admin('POST', `/accounts/${a.accountId}/keys`, { label: 'other' })).body.data
    expect((await send(a.key)).status).toBe(200)
    expectCapRefusal(await send(a.key))
    for (let i = 0; i < 3; i++) expect((await send(other.key)).status).toBe(200)
    // The count on a key without a cap is not kept in its row: a cap set later counts its messages.
    const [row] = await t.db.sql<{ spent_today: number }[]>`select spent_today from api_keys where id = ${other.id}`
    expect(row!.spent_today).toBe(0)
    const set = await t.admin('PATCH', `/keys/${other.id}`, { daily_spend_cap: 4 * PRICE })
    expect(set.body.data.spent_today).toBe(3 * PRICE)
    expect((await send(other.key)).status).toBe(200)
    expectCapRefusal(await send(other.key))
  })

  test('a new day in the service time zone starts from nothing', async () => {
    const a = await capped(2)
    expect((await bulk(a.key, 2)).status).toBe(200)
    expectCapRefusal(await send(a.key))
    // Midnight passes (in TZ): the key's count is yesterday's.
    await nextDay()
    expect((await send(a.key)).status).toBe(200)
    const [key] = await t.db.sql<{ spent_today: number; today: boolean }[]>`
      select spent_today, spend_day = (${clock.now()}::timestamptz at time zone ${TZ})::date as today from api_keys where id = ${a.keyId}`
    expect(key).toEqual({ spent_today: PRICE, today: true })
    await nextDay()
    expect((await bulk(a.key, 2)).status).toBe(200)
    expectCapRefusal(await bulk(a.key, 1))
    expect(await money(t, a.accountId)).toEqual({ balance: 95 * PRICE, ledgerSum: 95 * PRICE })
  })

  test('a refused send with an Idempotency-Key is replayed as refused, like a short balance', async () => {
    const a = await capped(0)
    const first = await t.api('POST', '/messages/send', a.key, { to: '081234567890', body: 'x' }, { 'idempotency-key': 'capped-1' })
    expectCapRefusal(first)
    await t.admin('PATCH', `/keys/${a.keyId}`, { daily_spend_cap: null })
    const replay = await t.api('POST', '/messages/send', a.key, { to: '081234567890', body: 'x' }, { 'idempotency-key': 'capped-1' })
    expect([replay.status, replay.body.code, replay.headers.get('idempotent-replayed')]).toEqual([402, 'SPEND_CAP_REACHED', 'true'])
    expect(await messagesOf(a.accountId)).toBe(0)
  })
})

describe('campaigns', () => {
  test('a campaign created with a capped key pauses at the cap with the reason, and resumes the next day', async () => {
    const a = await capped(3)
    await t.db.sql`
      insert into contacts (account_id, name, phone, tags)
      select ${a.accountId}, 'Contact ' || i, '+62813' || lpad(i::text, 8, '0'), array['vip']
      from generate_series(1, 5) as i`
    const template = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'promo', body: 'Hi {{name}}!' })
    const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
    const created = await t.api('POST', '/campaigns', a.key, {
      name: 'capped',
      template_id: template.body.data.id,
      segment_id: segment.body.data.id,
    })
    expect(created.status).toBe(201)
    const id = created.body.data.campaign.id
    expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
    await t.runWorker('campaign-runner')
    const paused = (await t.admin('GET', `/campaigns/${id}`)).body.data
    expect(paused.campaign.status).toBe('paused')
    expect(paused.campaign.pause_reason).toContain('daily spend cap reached')
    expect(paused.campaign.pause_reason).toBe(
      `daily spend cap reached: API key ${a.keyId} may be charged 0 more today (cap ${3 * PRICE}), below the price ${PRICE}; ` +
        `resume after midnight (${TZ}) or once the cap is raised`,
    )
    const charged = async () => (await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where campaign_id = ${id}`)[0]!.n
    expect(await charged()).toBe(3)
    expect(await spentToday(a.keyId)).toBe(3 * PRICE)
    expectCapRefusal(await send(a.key)) // the campaign's messages count for the key's sends too
    expect(await money(t, a.accountId)).toEqual({ balance: 97 * PRICE, ledgerSum: 97 * PRICE })

    await nextDay()
    expect((await t.admin('POST', `/campaigns/${id}/resume`)).status).toBe(200)
    await t.runWorker('campaign-runner')
    const done = (await t.admin('GET', `/campaigns/${id}`)).body.data
    expect(done.campaign.status).toBe('sent')
    expect(await charged()).toBe(5)
    expect(await money(t, a.accountId)).toEqual({ balance: 95 * PRICE, ledgerSum: 95 * PRICE })
  })
})
