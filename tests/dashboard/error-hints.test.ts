// Errors that say what to do: a negative amount, one too large and a price out of range are told
// apart; a bad phone number shows the accepted forms; tenants are not told to change a setting only
// operators have; a dead sign-in link says how to get a new one, also for the first operator.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { dashboardUser, webClient } from '../helpers/web'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

test('a negative top-up, a 20-digit one and a price of -1 each get their own message', async () => {
  const op = await dashboardUser(t, 'hints-op@example.com', 'correct horse battery')
  const { accountId } = await t.account(1000)
  const post = async (action: string, page: string, form: Record<string, string>) => {
    const shown = await op.client.get(page)
    return op.client.post(action, { _csrf: shown.csrf!, _once: (await op.client.formToken(action)) ?? '', ...form })
  }
  const topup = `/dashboard/accounts/${accountId}/topups`
  const negative = await post(topup, `/dashboard/accounts/${accountId}`, { amount: '-500' })
  expect(negative.text).toContain('amount: cannot be negative (got -500): type a positive whole number of IDR, like 5000')
  const huge = await post(topup, `/dashboard/accounts/${accountId}`, { amount: '12345678901234567890' })
  expect(huge.text).toContain('amount: too large (got 20 digits): at most 999,999,999,999,999 IDR')
  const price = await post('/dashboard/price', '/dashboard/price', { cost_per_message: '-1' })
  expect(price.text).toContain('cost_per_message: a price is from 1 to 999,999,999,999,999 IDR per message (got -1), like 350')
  const words = await post(topup, `/dashboard/accounts/${accountId}`, { amount: 'lots' })
  expect(words.text).toContain('amount: must be a whole number of IDR, like 5000')
  expect(await money(t, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
})

test('a bad phone number is answered with the forms that are accepted', async () => {
  const { key } = await t.account(1000)
  const sent = await t.api('POST', '/messages/send', key, { to: '12345', body: 'x' })
  expect([sent.status, sent.body.error]).toEqual([
    422,
    'to: not a valid Indonesian phone number: write it like 081234567890, 6281234567890 or +6281234567890',
  ])
})

test('a private webhook URL tells the tenant to use a public URL or ask an operator, never to set WEBHOOK_ALLOW_PRIVATE', async () => {
  const { key } = await t.account(0)
  for (const url of ['https://10.0.0.5/hook', 'http://localhost:8080/hook', 'http://example.com/hook']) {
    const refused = await t.api('POST', '/webhook', key, { url })
    expect(refused.status).toBe(422)
    expect(refused.body.error).not.toContain('WEBHOOK_ALLOW_PRIVATE')
    expect(refused.body.error).toMatch(/public https URL|operator allowed private addresses/)
  }
})

test('a used sign-in link says how to get a new one: from an operator, or on the server for the first operator', async () => {
  const made = await t.admin('POST', '/operators', { email: 'first-op@example.com' })
  const client = webClient(t)
  expect((await client.useLink(made.body.data.link, 'correct horse battery')).status).toBe(303)
  const dead = await webClient(t).get(new URL(made.body.data.link).pathname)
  expect(dead.status).toBe(404)
  expect(dead.text).toContain('a member asks an operator')
  expect(dead.text).toContain('bun run admin user link EMAIL')
  expect(dead.text).toContain('bun run admin operator create EMAIL')
})
