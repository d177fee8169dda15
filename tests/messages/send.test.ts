import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

describe('POST /messages/send', () => {
  test('sends, charges the current price and records a ledger row', async () => {
    const { accountId, key } = await t.account(1000, { price: 350 })
    const res = await t.api('POST', '/messages/send', key, { to: '0812-3456-7890', body: 'hello' })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.data).toMatchObject({ to: '+6281234567890', status: 'sent', cost: 350, balance_after: 650 })
    expect(res.body.data.message_id).toMatch(/^SM[0-9a-f]{32}$/)
    expect(await money(t, accountId)).toEqual({ balance: 650, ledgerSum: 650 })
    const [row] = await t.db.sql`select status, cost, message_sid, sent_at from messages where message_sid = ${res.body.data.message_id}`
    expect(row).toMatchObject({ status: 'sent', cost: 350 })
    expect(row!.sent_at).toBeInstanceOf(Date)
  })

  test('the price is fixed at charging: a later price change does not alter the stored cost', async () => {
    const { accountId, key } = await t.account(1000, { price: 100 })
    const first = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'one' })
    await t.admin('PUT', '/price', { cost_per_message: 200, account_id: accountId })
    const second = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'two' })
    expect([first.body.data.cost, second.body.data.cost]).toEqual([100, 200])
    expect(await money(t, accountId)).toEqual({ balance: 700, ledgerSum: 700 })
  })

  test('402 INSUFFICIENT_BALANCE changes nothing', async () => {
    const { accountId, key } = await t.account(349, { price: 350 })
    const res = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'hello' })
    expect(res.status).toBe(402)
    expect(res.body).toEqual(errorEnvelope(res.headers, 'INSUFFICIENT_BALANCE'))
    expect(await money(t, accountId)).toEqual({ balance: 349, ledgerSum: 349 })
    const [count] = await t.db.sql`select count(*)::int as n from messages where account_id = ${accountId}`
    expect(count!.n).toBe(0)
  })

  test('provider refusal: 502 BAD_GATEWAY, refunded, message listed as failed without SID', async () => {
    const { accountId, key } = await t.account(1000, { price: 300 })
    const res = await t.api('POST', '/messages/send', key, { to: '081234569999', body: 'refused' })
    expect(res.status).toBe(502)
    expect(res.body.code).toBe('BAD_GATEWAY')
    expect(await money(t, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
    const rows = await t.db.sql`select id, status, message_sid, refunded_at, error_message from messages where account_id = ${accountId}`
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ status: 'failed', message_sid: null })
    expect(rows[0]!.refunded_at).toBeInstanceOf(Date)
    // The answer names the message (its `id`, as in the list), where it is failed and refunded.
    expect(res.body).toEqual(errorEnvelope(res.headers, 'BAD_GATEWAY', expect.any(String), { id: rows[0]!.id }))
    const listed = await t.api('GET', '/messages', key)
    expect(listed.body.data.items).toEqual([
      expect.objectContaining({ id: rows[0]!.id, status: 'failed', message_sid: null, cost: 300, refunded: true }),
    ])
    const ledger = await t.db.sql<
      { kind: string; amount: number }[]
    >`select kind, amount from ledger where account_id = ${accountId} order by id`
    expect(ledger.map((r) => [r.kind, r.amount])).toEqual([
      ['topup', 1000],
      ['charge', -300],
      ['refund', 300],
    ])
  })

  test('validation: 400 for shape, 422 for values, each naming the field', async () => {
    const { accountId, key } = await t.account(1000)
    const cases: [unknown, number, RegExp][] = [
      [{ body: 'x' }, 400, /^to: is required/],
      [{ to: '081234567890' }, 400, /^body: is required/],
      [{ to: 81234567890, body: 'x' }, 400, /^to: must be a string/],
      [{ to: '081234567890', body: 5 }, 400, /^body: must be a string/],
      [{ to: '081234567890', body: 'x', media_url: 5 }, 400, /^media_url: must be a string/],
      [[], 400, /body must be a JSON object/],
      ['just text', 400, /body must be a JSON object/],
      [{ to: '12345', body: 'x' }, 422, /^to: not a valid Indonesian phone number/],
      [{ to: '081234567890', body: '' }, 422, /^body: must not be empty/],
      [{ to: '081234567890', body: 'x'.repeat(4097) }, 422, /^body: must be at most 4096/],
      [{ to: '081234567890', body: 'x', media_url: 'ftp://example.com/a.png' }, 422, /^media_url: must be an absolute http or https URL/],
      [{ to: '081234567890', body: 'x', media_url: 'not a url' }, 422, /^media_url/],
    ]
    for (const [body, status, message] of cases) {
      const res = await t.api('POST', '/messages/send', key, body)
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status, code: 'VALIDATION_ERROR' })
      expect(res.body.success).toBe(false)
      expect(res.body.error).toMatch(message)
    }
    const bad = await t.request('POST', '/api/v1/messages/send', {
      key,
      rawBody: '{"to": ',
      headers: { 'content-type': 'application/json' },
    })
    expect(bad.status).toBe(400)
    expect(bad.body).toEqual(errorEnvelope(bad.headers, 'VALIDATION_ERROR', 'body is not valid JSON'))
    expect(await money(t, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
  })

  test('text with a NUL character (which PostgreSQL cannot store) is 422 and charges nothing', async () => {
    const { accountId, key } = await t.account(1000)
    const concurrent = await Promise.all([
      t.api('POST', '/messages/send', key, { to: '081234567890', body: 'bad \u0000 byte' }),
      t.api('POST', '/messages/send', key, { to: '081234567890', body: 'fine' }),
      t.api('POST', '/messages/bulk', key, { messages: [{ to: '081234567890', body: 'x', media_url: 'https://a.example/\u0000' }] }),
    ])
    expect(concurrent.map((r) => r.status)).toEqual([422, 200, 422])
    expect(concurrent[0]!.body).toEqual(
      errorEnvelope(concurrent[0]!.headers, 'VALIDATION_ERROR', 'body: text must not contain NUL characters (\\u0000)'),
    )
    expect(await money(t, accountId)).toEqual({ balance: 999, ledgerSum: 999 })
    const unauthenticated = await t.request('POST', '/api/v1/messages/send', { body: { to: '081234567890', body: '\u0000' } })
    expect(unauthenticated.status).toBe(401)
  })

  test('authentication is checked before validation', async () => {
    const missing = await t.request('POST', '/api/v1/messages/send', {
      rawBody: '{not json',
      headers: { 'content-type': 'application/json' },
    })
    expect(missing.status).toBe(401)
    expect(missing.body.code).toBe('AUTH_MISSING_HEADER')
    const wrong = await t.request('POST', '/api/v1/messages/send', { key: 'pm_' + 'x'.repeat(40), body: { to: 1 } })
    expect(wrong.status).toBe(401)
    expect(wrong.body.code).toBe('AUTH_INVALID_KEY')
  })
})
