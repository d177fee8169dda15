import { afterAll, beforeAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

test('60 concurrent sends against a balance for exactly 20: 20 succeed, 40 get 402, nothing lost', async () => {
  const { accountId, key } = await t.account(20 * 250, { price: 250 })
  const results = await Promise.all(
    Array.from({ length: 60 }, (_, i) =>
      t.api('POST', '/messages/send', key, { to: `0812345${String(i).padStart(5, '0')}`, body: `message ${i}` }),
    ),
  )
  const statuses = results.map((r) => r.status)
  expect(statuses.filter((s) => s === 200)).toHaveLength(20)
  expect(statuses.filter((s) => s === 402)).toHaveLength(40)
  expect(results.filter((r) => r.status === 402).every((r) => r.body.code === 'INSUFFICIENT_BALANCE')).toBe(true)
  expect(await money(t, accountId)).toEqual({ balance: 0, ledgerSum: 0 })
  const [sent] = await t.db.sql`select count(*)::int as n from messages where account_id = ${accountId} and status = 'sent'`
  expect(sent!.n).toBe(20)
  // balance_after values are all different: every charge saw the previous one.
  const after = results.filter((r) => r.status === 200).map((r) => r.body.data.balance_after)
  expect(new Set(after).size).toBe(20)
})

test('refunds under concurrency: refused and accepted sends interleaved keep balance = sum(ledger)', async () => {
  const { accountId, key } = await t.account(10_000, { price: 100 })
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      t.api('POST', '/messages/send', key, { to: i % 3 === 0 ? '081234569999' : '081234567890', body: `m${i}` }),
    ),
  )
  expect(results.filter((r) => r.status === 502)).toHaveLength(10)
  expect(results.filter((r) => r.status === 200)).toHaveLength(20)
  expect(await money(t, accountId)).toEqual({ balance: 8000, ledgerSum: 8000 })
})
