// A key's limits as an operator sets and reads them: the admin API (GET and PATCH /admin/v1/keys/{id}),
// what a key was charged today in the service's time zone, and the dashboard's limits page of a key.
// (The rate itself is tests/http/rate-limit.test.ts; the cap's enforcement is tests/messages/spend-cap.test.ts.)

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { dashboardUser } from '../helpers/web'
import { spentToday } from '../../src/modules/accounts/keys'

// 14 hours ahead of UTC: its day is not UTC's for most of the day.
const TZ = 'Pacific/Kiritimati'
let t: TestApp
beforeAll(async () => {
  t = await testApp({ env: { TIMEZONE: TZ } })
})
afterAll(() => t.close())

const send = (key: string, to = '081234567890') => t.api('POST', '/messages/send', key, { to, body: 'hello' })

/** A message of the key, charged `cost`, created at `at` (SQL) as the charge would have written it. */
async function messageAt(keyId: number, accountId: number, cost: number, at: string) {
  await t.db.sql`
    insert into messages (account_id, api_key_id, phone, body, status, cost, created_at, sent_at)
    values (${accountId}, ${keyId}, '+6281234567890', 'earlier', 'sent', ${cost}, ${t.db.sql.unsafe(at)}, now())`
}
const localMidnight = `(date_trunc('day', now() at time zone '${TZ}') at time zone '${TZ}')`

describe('the admin API', () => {
  test('a key answers its limits and what it was charged today', async () => {
    const { keyId, accountId } = await t.account(1000, { price: 7 })
    const fresh = await t.admin('GET', `/keys/${keyId}`)
    expect(fresh.status).toBe(200)
    expect(fresh.body.data).toMatchObject({
      id: keyId,
      account_id: accountId,
      rate_limit_per_minute: null,
      daily_spend_cap: null,
      spent_today: 0,
    })
    expect(fresh.body.data.key).toBeUndefined()
    expect((await t.admin('GET', '/keys/999999')).status).toBe(404)
  })

  test("today is the service time zone's day; refused (refunded) sends count, other keys' do not", async () => {
    const { key, keyId, accountId } = await t.account(1000, { price: 7 })
    const other = (await t.admin('POST', `/accounts/${accountId}/keys`, { label: 'other' })).body.data
    expect((await send(key)).status).toBe(200)
    expect((await send(key, '081234569999')).status).toBe(502) // refused by the simulator, refunded
    expect((await send(other.key)).status).toBe(200)
    await messageAt(keyId, accountId, 100, `${localMidnight} - interval '1 second'`) // yesterday, there
    await messageAt(keyId, accountId, 1000, `${localMidnight}`) // the first instant of today, there
    expect((await t.admin('GET', `/keys/${keyId}`)).body.data.spent_today).toBe(7 + 7 + 1000)
    expect(await spentToday(t.db.sql, t.deps.clock, TZ, keyId)).toBe(1014)
    expect((await t.admin('GET', `/keys/${other.id}`)).body.data.spent_today).toBe(7)
    const listed = (await t.admin('GET', `/accounts/${accountId}/keys`)).body.data.items
    expect(listed.map((k: { id: number; spent_today: number }) => [k.id, k.spent_today])).toEqual([
      [keyId, 1014],
      [other.id, 7],
    ])
    // In UTC the same messages may fall on another day: the zone decides.
    const [utc] = await t.db.sql<{ spent: number }[]>`
      select coalesce(sum(cost), 0)::bigint as spent from messages
      where api_key_id = ${keyId} and created_at >= date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'`
    expect(await spentToday(t.db.sql, t.deps.clock, 'UTC', keyId)).toBe(utc!.spent)
  })

  test('PATCH sets a cap and a rate, each alone or together; null removes them; active is kept', async () => {
    const { key, keyId } = await t.account(1000, { price: 7 })
    await send(key)
    const capped = await t.admin('PATCH', `/keys/${keyId}`, { daily_spend_cap: 500 })
    expect(capped.status).toBe(200)
    expect(capped.body.data).toMatchObject({ active: true, daily_spend_cap: 500, rate_limit_per_minute: null, spent_today: 7 })
    // The cap counts on from what the key was charged earlier today.
    const [stored] = await t.db.sql<{ spent_today: number; today: boolean }[]>`
      select spent_today, spend_day = (now() at time zone ${TZ})::date as today from api_keys where id = ${keyId}`
    expect(stored).toEqual({ spent_today: 7, today: true })
    const both = await t.admin('PATCH', `/keys/${keyId}`, { rate_limit_per_minute: 120, daily_spend_cap: 0 })
    expect(both.body.data).toMatchObject({ daily_spend_cap: 0, rate_limit_per_minute: 120 })
    const off = await t.admin('PATCH', `/keys/${keyId}`, { active: false })
    expect(off.body.data).toMatchObject({ active: false, daily_spend_cap: 0, rate_limit_per_minute: 120 })
    const cleared = await t.admin('PATCH', `/keys/${keyId}`, { daily_spend_cap: null, rate_limit_per_minute: null })
    expect(cleared.body.data).toMatchObject({ active: false, daily_spend_cap: null, rate_limit_per_minute: null })
  })

  test('what is not a cap is refused', async () => {
    const { keyId } = await t.account(0)
    const cases: [unknown, number, string][] = [
      [{ daily_spend_cap: -1 }, 422, 'daily_spend_cap: must be a whole amount from 0'],
      [{ daily_spend_cap: 1.5 }, 400, 'daily_spend_cap: must be an integer'],
      [{ daily_spend_cap: '500' }, 400, 'daily_spend_cap: must be an integer'],
      [{ daily_spend_cap: 5, label: 'x' }, 400, 'label: unknown field'],
      [{}, 400, 'body: give at least one of active, rate_limit_per_minute, daily_spend_cap'],
    ]
    for (const [body, status, error] of cases) {
      const res = await t.admin('PATCH', `/keys/${keyId}`, body)
      expect({ body, status: res.status, code: res.body.code, error: res.body.error }).toEqual({
        body,
        status,
        code: 'VALIDATION_ERROR',
        error,
      })
    }
  })
})

describe('the dashboard', () => {
  const PASSWORD = 'correct horse battery'

  test("an operator sets a key's limits on its limits page; each change is audited", async () => {
    const { key, keyId, accountId } = await t.account(1000, { price: 7 })
    await send(key)
    const op = await dashboardUser(t, `op-limits-${keyId}@example.com`, PASSWORD)
    const keys = await op.client.get(`/dashboard/accounts/${accountId}/keys`)
    expect(keys.status).toBe(200)
    expect(keys.text).toContain('600 a minute (default)')
    expect(keys.text).toContain('7 IDR')
    expect(keys.text).toContain(`href="/dashboard/accounts/${accountId}/keys/${keyId}/limits"`)
    const path = `/dashboard/accounts/${accountId}/keys/${keyId}/limits`
    const page = await op.client.get(path)
    expect(page.status).toBe(200)
    expect(page.text).toContain(`Daily spend cap (${TZ})`)

    const bad = await op.client.post(path, { _csrf: page.csrf!, rate_limit_per_minute: '0', daily_spend_cap: '' })
    expect(bad.status).toBe(422)
    expect(bad.text).toContain('rate_limit_per_minute: must be from 1 to 1,000,000,000 requests a minute')
    expect(bad.text).toContain('aria-invalid="true"')
    const worse = await op.client.post(path, { _csrf: page.csrf!, rate_limit_per_minute: '', daily_spend_cap: 'lots' })
    expect(worse.status).toBe(422)
    expect(worse.text).toContain('daily_spend_cap: must be a whole number of IDR, like 5000')

    const set = await op.client.post(path, { _csrf: page.csrf!, rate_limit_per_minute: '1,200', daily_spend_cap: '50.000' })
    expect(set.status).toBe(303)
    expect(set.location).toBe(`/dashboard/accounts/${accountId}/keys`)
    const shown = await op.client.follow(set)
    expect(shown.text).toContain('Key test: 1,200 a minute, spend cap 50,000 IDR a day.')
    expect((await t.admin('GET', `/keys/${keyId}`)).body.data).toMatchObject({
      rate_limit_per_minute: 1200,
      daily_spend_cap: 50000,
      spent_today: 7,
    })

    const cleared = await op.client.post(path, { _csrf: page.csrf!, rate_limit_per_minute: '', daily_spend_cap: '' })
    expect(cleared.status).toBe(303)
    expect((await t.admin('GET', `/keys/${keyId}`)).body.data).toMatchObject({ rate_limit_per_minute: null, daily_spend_cap: null })
    const audited = await t.db.sql<{ action: string; detail: unknown }[]>`
      select action, detail from audit_log where account_id = ${accountId} and action = 'key limits set' order by id`
    expect(audited.map((a) => (typeof a.detail === 'string' ? JSON.parse(a.detail) : a.detail))).toEqual([
      {
        key_id: keyId,
        rate_limit_per_minute: 1200,
        daily_spend_cap: 50000,
        previous: { rate_limit_per_minute: null, daily_spend_cap: null },
      },
      {
        key_id: keyId,
        rate_limit_per_minute: null,
        daily_spend_cap: null,
        previous: { rate_limit_per_minute: 1200, daily_spend_cap: 50000 },
      },
    ])
  })

  test("members see their keys' limits and cannot change them; nobody reaches another account's key", async () => {
    const mine = await t.account(1000)
    const theirs = await t.account(1000)
    await t.admin('PATCH', `/keys/${mine.keyId}`, { daily_spend_cap: 300, rate_limit_per_minute: 50 })
    const member = await dashboardUser(t, `member-limits-${mine.keyId}@example.com`, PASSWORD, mine.accountId)
    const keys = await member.client.get('/dashboard/keys')
    expect(keys.text).toContain('50 a minute')
    expect(keys.text).toContain('300 IDR a day')
    expect(keys.text).not.toContain('/limits"')
    const limits = `/dashboard/accounts/${mine.accountId}/keys/${mine.keyId}/limits`
    expect((await member.client.get(limits)).status).toBe(404)
    expect((await member.client.get(`/dashboard/keys/${mine.keyId}/limits`)).status).toBe(404)
    expect((await member.client.post(limits, { _csrf: keys.csrf!, rate_limit_per_minute: '1', daily_spend_cap: '' })).status).toBe(404)
    expect((await t.admin('GET', `/keys/${mine.keyId}`)).body.data.rate_limit_per_minute).toBe(50)

    const op = await dashboardUser(t, `op-other-${mine.keyId}@example.com`, PASSWORD)
    const wrongAccount = `/dashboard/accounts/${mine.accountId}/keys/${theirs.keyId}/limits`
    expect((await op.client.get(wrongAccount)).status).toBe(404)
    const page = await op.client.get(`/dashboard/accounts/${mine.accountId}/keys`)
    expect((await op.client.post(wrongAccount, { _csrf: page.csrf!, rate_limit_per_minute: '1', daily_spend_cap: '' })).status).toBe(404)
    expect((await t.admin('GET', `/keys/${theirs.keyId}`)).body.data.rate_limit_per_minute).toBeNull()
  })
})
