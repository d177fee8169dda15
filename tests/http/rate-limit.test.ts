// The request rate of an API key: every answer to a key's request says where the key stands
// (RateLimit-Policy and RateLimit, draft-ietf-httpapi-ratelimit-headers-11), a request beyond the
// key's rate is 429 RATE_LIMITED with Retry-After and does nothing, an operator can give a key its own
// rate, and the count is exact under concurrency and across instances on one database.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { usingPostgres } from '../helpers/db'
import { openDatabase, type Database } from '../../src/db/client'
import { readConfig } from '../../src/config'
import { buildDeps } from '../../src/server'
import { createApp } from '../../src/app'
import { TestClock } from '../../src/lib/clock'

// On a test clock: a key's minute passes when the test moves it, and no test straddles two minutes.
const LIMIT = 5
const clock = new TestClock()
let t: TestApp
beforeAll(async () => {
  t = await testApp({ env: { KEY_RATE_LIMIT_PER_MINUTE: String(LIMIT) }, clock, runOnClock: true })
})
afterAll(() => t.close())

/** The two fields, checked against the draft's syntax: a List of one String Item with Integer parameters. */
function rateOf(headers: Headers) {
  const policy = /^"default";q=(\d+);w=(\d+)$/.exec(headers.get('ratelimit-policy') ?? '')
  const now = /^"default";r=(\d+);t=(\d+)$/.exec(headers.get('ratelimit') ?? '')
  if (!policy || !now) return null
  return { q: Number(policy[1]), w: Number(policy[2]), r: Number(now[1]), t: Number(now[2]) }
}

const balance = (key: string) => t.api('GET', '/balance', key)

describe('the headers', () => {
  test("every answer to a key's request carries RateLimit-Policy and RateLimit, whatever its status", async () => {
    const { key } = await t.account(100)
    const answers = [
      await balance(key),
      await t.api('POST', '/messages/send', key, { to: '12345', body: 'x' }), // 422
      await t.api('GET', '/messages/SMnothing', key), // 404
      await t.request('POST', '/api/v1/contacts', { key, rawBody: 'name=x', headers: { 'content-type': 'text/plain' } }), // 415
      await t.api('POST', '/messages/send', key, { to: '081234567890' }), // 400
    ]
    expect(answers.map((a) => a.status)).toEqual([200, 422, 404, 415, 400])
    const rates = answers.map((a) => rateOf(a.headers))
    expect(rates.map((r) => r && { q: r.q, w: r.w, r: r.r })).toEqual([4, 3, 2, 1, 0].map((r) => ({ q: LIMIT, w: 60, r })))
    for (const r of rates) expect(r!.t).toBeWithin(1, 61)
  })

  test('answers to requests without a valid key carry none, and are not counted', async () => {
    const { key, keyId } = await t.account(0)
    const missing = await t.request('GET', '/api/v1/balance')
    const wrong = await t.request('GET', '/api/v1/balance', { key: `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}` })
    await t.admin('PATCH', `/keys/${keyId}`, { active: false })
    const inactive = await balance(key)
    for (const answer of [missing, wrong, inactive]) {
      expect(answer.status).toBe(401)
      expect(answer.headers.get('ratelimit')).toBeNull()
      expect(answer.headers.get('ratelimit-policy')).toBeNull()
    }
    await t.admin('PATCH', `/keys/${keyId}`, { active: true })
    expect(rateOf((await balance(key)).headers)!.r).toBe(LIMIT - 1)
  })
})

describe('beyond the rate', () => {
  test('429 RATE_LIMITED in the envelope, Retry-After = the window left, and a send is not charged', async () => {
    const { key, accountId } = await t.account(100)
    for (let i = 0; i < LIMIT; i++) expect((await balance(key)).status).toBe(200)
    const before = await money(t, accountId)
    const refused = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'one too many' })
    expect(refused.status).toBe(429)
    expect(refused.body).toEqual(errorEnvelope(refused.headers, 'RATE_LIMITED'))
    const rate = rateOf(refused.headers)!
    expect(rate).toMatchObject({ q: LIMIT, w: 60, r: 0 })
    expect(Number(refused.headers.get('retry-after'))).toBe(rate.t)
    expect(refused.body.error).toBe(`this API key is over its rate of ${LIMIT} requests a minute; retry after ${rate.t} s`)
    expect(await money(t, accountId)).toEqual(before)
    const [messages] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where account_id = ${accountId}`
    expect(messages!.n).toBe(0)
    // Every later request of the window is refused too, reads included.
    expect((await balance(key)).status).toBe(429)
  })

  test('a new window starts from zero', async () => {
    const { key } = await t.account(0)
    for (let i = 0; i <= LIMIT; i++) await balance(key)
    expect((await balance(key)).status).toBe(429)
    // The minute passes: the stored window is an older one now.
    await clock.advance(60_000)
    const again = await balance(key)
    expect(again.status).toBe(200)
    expect(rateOf(again.headers)!.r).toBe(LIMIT - 1)
  })

  test('exact under concurrency: of 12 requests at once, 5 pass, each with its own remaining quota', async () => {
    const { key } = await t.account(0)
    const answers = await Promise.all(Array.from({ length: 12 }, () => balance(key)))
    const passed = answers.filter((a) => a.status === 200)
    expect(passed).toHaveLength(LIMIT)
    expect(answers.filter((a) => a.status === 429)).toHaveLength(12 - LIMIT)
    expect(passed.map((a) => rateOf(a.headers)!.r).sort()).toEqual([0, 1, 2, 3, 4])
  })

  test('keys are counted apart, even of one account', async () => {
    const { key, accountId } = await t.account(0)
    const other = (await t.admin('POST', `/accounts/${accountId}/keys`, { label: 'other' })).body.data.key
    for (let i = 0; i <= LIMIT; i++) await balance(key)
    expect((await balance(key)).status).toBe(429)
    expect((await balance(other)).status).toBe(200)
  })
})

describe("a key's own rate", () => {
  test('set by an operator; null goes back to the default', async () => {
    const { key, keyId } = await t.account(0)
    const set = await t.admin('PATCH', `/keys/${keyId}`, { rate_limit_per_minute: 2 })
    expect(set.status).toBe(200)
    expect(set.body.data).toMatchObject({ id: keyId, active: true, rate_limit_per_minute: 2 })
    expect(rateOf((await balance(key)).headers)).toMatchObject({ q: 2, r: 1 })
    expect((await balance(key)).status).toBe(200)
    const refused = await balance(key)
    expect(refused.status).toBe(429)
    expect(rateOf(refused.headers)).toMatchObject({ q: 2, r: 0 })

    const back = await t.admin('PATCH', `/keys/${keyId}`, { rate_limit_per_minute: null })
    expect(back.body.data.rate_limit_per_minute).toBeNull()
    // 3 counted in this window (the refused one too): under the default of 5 this 4th leaves 1.
    const after = await balance(key)
    expect(after.status).toBe(200)
    expect(rateOf(after.headers)).toMatchObject({ q: LIMIT, r: 1 })
    const listed = await t.admin(
      'GET',
      `/accounts/${(await t.db.sql`select account_id from api_keys where id = ${keyId}`)[0]!.account_id}/keys`,
    )
    expect(listed.body.data.items[0].rate_limit_per_minute).toBeNull()
  })

  test('a higher rate than the default lets more through', async () => {
    const { key, keyId } = await t.account(0)
    await t.admin('PATCH', `/keys/${keyId}`, { rate_limit_per_minute: 8 })
    const answers = await Promise.all(Array.from({ length: 10 }, () => balance(key)))
    expect(answers.filter((a) => a.status === 200)).toHaveLength(8)
  })

  test('the admin API refuses what is not a rate', async () => {
    const { keyId } = await t.account(0)
    const cases: [unknown, number][] = [
      [{ rate_limit_per_minute: 0 }, 422],
      [{ rate_limit_per_minute: -5 }, 422],
      [{ rate_limit_per_minute: 1_000_000_001 }, 422],
      [{ rate_limit_per_minute: 1.5 }, 400],
      [{ rate_limit_per_minute: '100' }, 400],
      [{}, 400],
    ]
    for (const [body, status] of cases) {
      const res = await t.admin('PATCH', `/keys/${keyId}`, body)
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status, code: 'VALIDATION_ERROR' })
    }
    expect((await t.admin('PATCH', '/keys/999999', { rate_limit_per_minute: 10 })).status).toBe(404)
  })
})

describe('across instances', () => {
  let second: { database: Database; app: ReturnType<typeof createApp> } | undefined
  beforeAll(async () => {
    // A second instance: its own app and, on PostgreSQL, its own connections to the same database.
    const database = t.db.url ? await openDatabase({ databaseUrl: t.db.url, poolMax: 5 }) : t.db
    const config = readConfig({ KEY_RATE_LIMIT_PER_MINUTE: String(LIMIT), ADMIN_TOKEN: 'test-admin-token-0123456789' })
    second = { database, app: createApp(buildDeps(config, database, { clock }).deps) }
  })
  afterAll(async () => {
    if (second && second.database !== t.db) await second.database.close()
  })

  const onSecond = async (key: string) => {
    const response = await second!.app.handle(
      new Request('http://localhost/api/v1/balance', { headers: { authorization: `Bearer ${key}` } }),
    )
    return { status: response.status, headers: response.headers }
  }

  test(`one count for the key, whichever instance answers (${usingPostgres() ? 'two connection pools' : 'one embedded database'})`, async () => {
    const { key } = await t.account(0)
    const statuses: number[] = []
    for (let i = 0; i < LIMIT + 1; i++) statuses.push((i % 2 === 0 ? await balance(key) : await onSecond(key)).status)
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
  })

  test('concurrent requests to both instances: exactly the limit passes', async () => {
    const { key } = await t.account(0)
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? balance(key) : onSecond(key))))
    expect(answers.filter((a) => a.status === 200)).toHaveLength(LIMIT)
    expect(answers.filter((a) => a.status === 429)).toHaveLength(16 - LIMIT)
  })
})

test('the default rate is 600 requests a minute', () => {
  expect(readConfig({}).keyRateLimitPerMinute).toBe(600)
  expect(() => readConfig({ KEY_RATE_LIMIT_PER_MINUTE: '0' })).toThrow('KEY_RATE_LIMIT_PER_MINUTE')
})
