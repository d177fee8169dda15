// The simulator's "a number writes in" without a sender named: it writes to the number that last
// wrote to it (an account's default sender after the account sent from it), or to the default sender
// of the account named, so the message is the account's, its message.received event goes out and the
// free-form send after it goes; the answer says where it went and whose it is (none: said so).

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'

let t: TestApp
beforeAll(async () => {
  t = await testApp({ env: { WINDOW_CHECK: 'provider', SIM_REQUIRE_TEMPLATE: 'true' } })
})
afterAll(() => t.close())

let n = 0
const customer = () => `+62812777${String(++n).padStart(5, '0')}`

/** An account whose first (default) sender is a simulator number, with a template bound to the simulator. */
async function accountWithDefaultSender(number: string) {
  const a = await t.account(1000, { price: 10 })
  const sender = await t.admin('POST', '/senders', { provider: 'simulator', name: 'Toko Maju', number, credentials: {} })
  expect(sender.status).toBe(201)
  expect((await t.admin('PUT', `/accounts/${a.accountId}/senders/${sender.body.data.id}`)).status).toBe(200)
  const template = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'ready', body: 'Hi {{name}}' })
  expect(
    (await t.admin('PUT', `/templates/${template.body.data.id}/bindings/simulator`, { ref: 'ready', variables: ['name'] })).status,
  ).toBe(200)
  const hook = await t.api('POST', '/webhook', a.key, { url: 'https://93.184.216.34/hook', events: ['message.received'] })
  expect(hook.status).toBe(200)
  return { ...a, templateId: template.body.data.id as number, senderId: sender.body.data.id as number }
}

const received = async (keyId: number) =>
  (
    await t.db.sql<
      { n: number }[]
    >`select count(*)::int as n from webhook_events where api_key_id = ${keyId} and event = 'message.received'`
  )[0]!.n

test("after the account's default sender wrote, the customer answers it: the account's message, its event, then free-form goes", async () => {
  const a = await accountWithDefaultSender('+6281200001111')
  const phone = customer()
  const template = await t.api('POST', '/messages/send', a.key, { to: phone, template_id: a.templateId, variables: { name: 'Budi' } })
  expect([template.status, template.body.data?.status]).toEqual([200, 'sent'])
  const closed = await t.api('POST', '/messages/send', a.key, { to: phone, body: 'Any questions?' })
  expect([closed.status, closed.body.code]).toEqual([422, 'WINDOW_CLOSED'])

  const wrote = await t.admin('POST', '/simulator/inbound', { phone })
  expect(wrote.status).toBe(200)
  expect(wrote.body.data).toEqual({
    phone,
    sender: '+6281200001111',
    account_id: a.accountId,
    window_until: expect.any(String),
    inbound_id: expect.any(Number),
  })
  expect(await received(a.keyId)).toBe(1)
  const sent = await t.api('POST', '/messages/send', a.key, { to: phone, body: 'Any questions?' })
  expect([sent.status, sent.body.data?.status]).toEqual([200, 'sent'])
})

test('--account names the account: its default sender, before it ever wrote', async () => {
  const a = await accountWithDefaultSender('+6281200002222')
  const phone = customer()
  const wrote = await t.admin('POST', '/simulator/inbound', { phone, account_id: a.accountId, body: 'Halo' })
  expect(wrote.body.data).toMatchObject({ sender: '+6281200002222', account_id: a.accountId })
  expect(await received(a.keyId)).toBe(1)
  expect((await t.api('POST', '/messages/send', a.key, { to: phone, body: 'Halo juga' })).body.data?.status).toBe('sent')
  expect((await t.admin('POST', '/simulator/inbound', { phone, account_id: 999999 })).status).toBe(404)
})

test("a number no one wrote to writes to the deployment's number and belongs to no account: the answer says so", async () => {
  const wrote = await t.admin('POST', '/simulator/inbound', { phone: customer() })
  expect(wrote.body.data).toMatchObject({ sender: null, account_id: null })
})
