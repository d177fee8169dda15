import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

const phone = (i: number) => `0812${String(i).padStart(8, '0')}`

describe('POST /messages/bulk', () => {
  test('mixed valid, invalid and provider-refused entries: exact totals, costs, refunds, order and ledger', async () => {
    const { accountId, key } = await t.account(10_000, { price: 200 })
    const messages = [
      { to: '0812-3456-7890', body: 'ok 1' },
      { to: '12345', body: 'bad phone' },
      { to: '081234569999', body: 'refused by the provider' },
      { to: '081234567891', body: '' },
      { to: '+6281234567892', body: 'ok 2', media_url: 'https://example.com/a.png' },
      { to: '081234567893', body: 'bad media', media_url: 'ftp://x' },
      { to: '6281234567894', body: 'ok 3' },
    ]
    const res = await t.api('POST', '/messages/bulk', key, { messages })
    expect(res.status).toBe(200)
    const data = res.body.data
    expect(data).toMatchObject({ total: 7, sent: 3, failed: 4, total_cost: 600, balance_after: 9400 })
    expect(data.results.map((r: any) => [r.to, r.status, r.code])).toEqual([
      ['+6281234567890', 'sent', undefined],
      ['12345', 'failed', 'VALIDATION_ERROR'],
      ['+6281234569999', 'failed', 'BAD_GATEWAY'],
      ['+6281234567891', 'failed', 'VALIDATION_ERROR'].map((v, i) => (i === 0 ? '081234567891' : v)),
      ['+6281234567892', 'sent', undefined],
      ['081234567893', 'failed', 'VALIDATION_ERROR'],
      ['+6281234567894', 'sent', undefined],
    ])
    expect(data.results[1].error).toMatch(/^messages\[1\]\.to: not a valid Indonesian phone number/)
    expect(data.results[3].error).toMatch(/^messages\[3\]\.body: must not be empty/)
    expect(data.results[0].message_id).toMatch(/^SM[0-9a-f]{32}$/)
    expect(await money(t, accountId)).toEqual({ balance: 9400, ledgerSum: 9400 })
    const ledger = await t.db.sql<{ kind: string; amount: number }[]>`
      select kind, amount from ledger where account_id = ${accountId} and kind <> 'topup' order by id`
    expect(ledger.filter((r) => r.kind === 'charge')).toHaveLength(4) // the 4 valid entries
    expect(ledger.filter((r) => r.kind === 'refund')).toEqual([{ kind: 'refund', amount: 200 }])
    // The refused entry names its message (`id`, as in the list), listed as failed and refunded.
    const [refused] = await t.db.sql<{ id: number }[]>`select id from messages where account_id = ${accountId} and status = 'failed'`
    expect(data.results[2].id).toBe(refused!.id)
    expect(data.results.filter((r: any) => 'id' in r)).toHaveLength(1)
    const listed = await t.api('GET', '/messages?status=failed', key)
    expect(listed.body.data.items.map((m: any) => [m.id, m.refunded, m.cost])).toEqual([[refused!.id, true, 200]])
    const rows = await t.db
      .sql`select status, count(*)::int as n from messages where account_id = ${accountId} group by status order by status`
    expect([...rows]).toEqual([
      { status: 'failed', n: 1 },
      { status: 'sent', n: 3 },
    ])
  })

  test('1000 entries', async () => {
    const { accountId, key } = await t.account(1000)
    const messages = Array.from({ length: 1000 }, (_, i) => ({ to: phone(i), body: `n${i}` }))
    const res = await t.api('POST', '/messages/bulk', key, { messages })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ total: 1000, sent: 1000, failed: 0, total_cost: 1000, balance_after: 0 })
    expect(res.body.data.results.map((r: any) => r.to)).toEqual(messages.map((_, i) => `+62812${String(i).padStart(8, '0')}`))
    expect(new Set(res.body.data.results.map((r: any) => r.message_id)).size).toBe(1000)
    expect(await money(t, accountId)).toEqual({ balance: 0, ledgerSum: 0 })
  })

  test('0 and 1001 entries: 422, nothing charged', async () => {
    const { accountId, key } = await t.account(5000)
    const empty = await t.api('POST', '/messages/bulk', key, { messages: [] })
    expect([empty.status, empty.body.code]).toEqual([422, 'VALIDATION_ERROR'])
    expect(empty.body.error).toMatch(/^messages:/)
    const tooMany = await t.api('POST', '/messages/bulk', key, {
      messages: Array.from({ length: 1001 }, (_, i) => ({ to: phone(i), body: 'x' })),
    })
    expect([tooMany.status, tooMany.body.code]).toEqual([422, 'VALIDATION_ERROR'])
    expect(await money(t, accountId)).toEqual({ balance: 5000, ledgerSum: 5000 })
  })

  test('shape errors reject the whole request with 400', async () => {
    const { accountId, key } = await t.account(5000)
    const cases: [unknown, RegExp][] = [
      [{}, /^messages: is required/],
      [{ messages: 'x' }, /^messages: must be an array/],
      [{ messages: [{ to: '081234567890', body: 'ok' }, 'not an object'] }, /^messages\[1\]: must be an object/],
      [{ messages: [{ to: '081234567890', body: 'ok' }, { body: 'x' }] }, /^messages\[1\]\.to: is required/],
      [
        {
          messages: [
            { to: '081234567890', body: 'ok' },
            { to: 5, body: 'x' },
          ],
        },
        /^messages\[1\]\.to: must be a string/,
      ],
      [{ messages: [{ to: '081234567890' }] }, /^messages\[0\]\.body: is required/],
    ]
    for (const [body, message] of cases) {
      const res = await t.api('POST', '/messages/bulk', key, body)
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 400, code: 'VALIDATION_ERROR' })
      expect(res.body.error).toMatch(message)
    }
    expect(await money(t, accountId)).toEqual({ balance: 5000, ledgerSum: 5000 })
  })

  test('insufficient balance for all valid entries: 402, nothing charged or sent', async () => {
    const { accountId, key } = await t.account(299, { price: 100 })
    const res = await t.api('POST', '/messages/bulk', key, {
      messages: [
        { to: phone(1), body: 'a' },
        { to: phone(2), body: 'b' },
        { to: 'bad', body: 'not counted' },
        { to: phone(3), body: 'c' },
      ],
    })
    expect([res.status, res.body.code]).toEqual([402, 'INSUFFICIENT_BALANCE'])
    expect(await money(t, accountId)).toEqual({ balance: 299, ledgerSum: 299 })
    const [count] = await t.db.sql`select count(*)::int as n from messages where account_id = ${accountId}`
    expect(count!.n).toBe(0)
  })

  test('only invalid entries: nothing charged, 200 with every entry failed', async () => {
    const { accountId, key } = await t.account(0)
    const res = await t.api('POST', '/messages/bulk', key, { messages: [{ to: 'x', body: 'a' }] })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ total: 1, sent: 0, failed: 1, total_cost: 0, balance_after: 0 })
    expect(await money(t, accountId)).toEqual({ balance: 0, ledgerSum: 0 })
  })
})
