// max_price held by the charge itself (issue 31): admission refuses a message above its max_price from its
// read of the price, but a price can be raised after that read and before the charge (a single send waits
// for its pace slot in between; a bulk holds its messaging limit). The charge statement checks the cap
// again against the price it charges: 422 PRICE_ABOVE_MAX, nothing charged, nothing handed over.
// (A campaign reads the price under its account's lock in the transaction that charges it, and charges
// that very price: campaigns/engine.ts; tests/messages/quote.test.ts covers its pause.)

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'

const PRICE = 10
let t: TestApp
beforeAll(async () => {
  // The default sender with a messaging limit: a bulk to new recipients holds their uses before its charge.
  t = await testApp({ env: { MESSAGING_LIMIT: '250' } })
}, 60_000)
afterAll(() => t.close())

const raise = async (accountId: number, price: number) =>
  expect((await t.admin('PUT', '/price', { cost_per_message: price, account_id: accountId })).status).toBe(200)

const messagesOf = async (accountId: number) =>
  (await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where account_id = ${accountId}`)[0]!.n

test('a single send whose price is raised between the check and the charge: 422 PRICE_ABOVE_MAX, nothing charged', async () => {
  const { accountId, key } = await t.account(100, { price: PRICE })
  // The operator raises the price while the send waits for its pace slot (after admission read the price).
  const charge = t.deps.chargeOne
  t.deps.chargeOne = async (request) => {
    await raise(accountId, PRICE + 5)
    return charge(request)
  }
  let answer
  try {
    answer = await t.api('POST', '/messages/send', key, { to: '081234567001', body: 'hi', max_price: PRICE })
  } finally {
    t.deps.chargeOne = charge
  }
  expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 422, code: 'PRICE_ABOVE_MAX' })
  expect(answer.body.error).toBe(
    "max_price: this service message costs 15, above its max_price of 10; nothing was charged (this is the service's own cap, " +
      "not Meta's maximum price for marketing messages)",
  )
  expect(await money(t, accountId)).toEqual({ balance: 100, ledgerSum: 100 })
  expect(await messagesOf(accountId)).toBe(0)
  // A send without a cap at the same moment is charged the new price; one whose cap allows it too.
  expect((await t.api('POST', '/messages/send', key, { to: '081234567001', body: 'hi' })).body.data.cost).toBe(15)
  expect((await t.api('POST', '/messages/send', key, { to: '081234567001', body: 'hi', max_price: 15 })).body.data.cost).toBe(15)
})

test('a bulk whose price is raised after its checks: the entries above their max_price fail uncharged, the others go at the new price', async () => {
  const { accountId, key } = await t.account(100, { price: PRICE })
  // The operator's change commits while the bulk holds its recipients' messaging-limit uses (after its
  // read of the price, before its charge): a trigger of this test's own on that insert makes it.
  await t.db.sql.unsafe(`
    create function test_raise_price() returns trigger language plpgsql as $$
    begin update prices set cost_per_message = ${PRICE + 5} where account_id = ${accountId}; return null; end $$;
    create trigger test_raise_price after insert on messaging_uses for each statement execute function test_raise_price();`)
  let answer
  try {
    answer = await t.api('POST', '/messages/bulk', key, {
      messages: [
        { to: '081234567011', body: 'capped at the old price', max_price: PRICE },
        { to: '081234567012', body: 'no cap' },
        { to: '081234567013', body: 'cap above the new price', max_price: PRICE + 5 },
        { to: '081234567014', body: 'capped too', max_price: PRICE + 1 },
      ],
    })
  } finally {
    await t.db.sql.unsafe('drop trigger test_raise_price on messaging_uses; drop function test_raise_price()')
  }
  expect(answer.status).toBe(200)
  const over = (i: number, cap: number) => ({
    to: `+628123456701${i}`,
    status: 'failed',
    code: 'PRICE_ABOVE_MAX',
    error: `messages[${i - 1}].max_price: this service message costs 15, above its max_price of ${cap}; nothing was charged (this is the service's own cap, not Meta's maximum price for marketing messages)`,
  })
  expect(answer.body.data.results).toEqual([
    over(1, PRICE),
    { to: '+6281234567012', status: 'sent', message_id: expect.any(String) },
    { to: '+6281234567013', status: 'sent', message_id: expect.any(String) },
    over(4, PRICE + 1),
  ])
  expect(answer.body.data).toMatchObject({ total: 4, sent: 2, failed: 2, total_cost: 30, balance_after: 70 })
  expect(await money(t, accountId)).toEqual({ balance: 70, ledgerSum: 70 })
  expect(await messagesOf(accountId)).toBe(2)
})
