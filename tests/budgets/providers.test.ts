// The messaging limit against the fake providers, which enforce a tier as Meta and Twilio do: a Meta
// sender with tier 250 in the service and in the fake Graph API sends approved templates to 251 new
// recipients in one bulk: the service refuses the 251st itself (MESSAGING_LIMIT, uncharged), so the
// fake sees 250 and refuses none. A tier set higher than Meta's lets the provider refuse (131048): that
// message fails and is refunded, as any provider refusal is.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeGraph, type FakeGraph } from '../helpers/fake-graph'
import { fakeTwilio, type FakeTwilio } from '../helpers/fake-twilio'
import { META_A, TWILIO_A, assign, createSender, registerFakes, sendersEnv } from '../helpers/senders'
import { boundTemplate } from '../helpers/templates'

let t: TestApp
let twilio: FakeTwilio
let graph: FakeGraph
beforeAll(async () => {
  twilio = fakeTwilio()
  graph = fakeGraph()
  registerFakes(twilio, graph)
  t = await testApp({ env: sendersEnv(twilio, graph) })
})
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

const phone = (i: number) => `+62815${String(i).padStart(8, '0')}`

test('Meta, tier 250 in both: a bulk of 251 templates reaches the fake with 250, the last refused by the service uncharged', async () => {
  graph.reset()
  graph.messagingLimit = 250
  const a = await boundTemplate(t, 'Halo {{name}}, promo November!', { meta: { ref: 'promo_november', language: 'id' } })
  const sender = await createSender(t, 'meta', META_A, { messaging_limit: 250 })
  await assign(t, a.accountId, sender, true)
  const messages = Array.from({ length: 251 }, (_, i) => ({ to: phone(i), template_id: a.templateId, variables: { name: `C${i}` } }))
  const answer = await t.api('POST', '/messages/bulk', a.key, { messages })
  expect(answer.status).toBe(200)
  expect({ sent: answer.body.data.sent, failed: answer.body.data.failed }).toEqual({ sent: 250, failed: 1 })
  expect(answer.body.data.results[250]).toMatchObject({ status: 'failed', code: 'MESSAGING_LIMIT' })
  const messagesToFake = graph.requests.filter((r) => r.path.endsWith('/messages'))
  expect(messagesToFake).toHaveLength(250)
  expect(messagesToFake.every((r) => r.status === 200)).toBe(true)
  expect(await money(t, a.accountId)).toEqual({ balance: 10_000 - 2500, ledgerSum: 10_000 - 2500 })

  // The service's tier set higher than Meta's: the fake refuses the new recipient with 131048, refunded.
  expect((await t.admin('PATCH', `/senders/${sender}`, { messaging_limit: 2000 })).status).toBe(200)
  const refused = await t.api('POST', '/messages/send', a.key, { to: phone(999), template_id: a.templateId, variables: { name: 'X' } })
  expect(refused.status).toBe(502)
  expect(refused.body.code).toBe('BAD_GATEWAY')
  const [failed] = await t.db.sql<{ error_code: number; refunded: boolean }[]>`
    select error_code, refunded_at is not null as refunded from messages where phone = ${phone(999)}`
  expect(failed).toEqual({ error_code: 131048, refunded: true })
  expect(await money(t, a.accountId)).toEqual({ balance: 10_000 - 2500, ledgerSum: 10_000 - 2500 })
}, 60_000)

test('Twilio: the fake refuses a new recipient past its tier with 63018; the service, with the same tier, never sends it', async () => {
  twilio.reset()
  twilio.messagingLimit = 1
  const auth = `Basic ${Buffer.from(`${TWILIO_A.credentials.account_sid}:${TWILIO_A.credentials.auth_token}`).toString('base64')}`
  const post = (to: string) =>
    fetch(`${twilio.url}/2010-04-01/Accounts/${TWILIO_A.credentials.account_sid}/Messages.json`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ To: `whatsapp:${to}`, From: `whatsapp:${TWILIO_A.number}`, Body: 'x' }),
    })
  expect((await post(phone(1))).status).toBe(201)
  expect((await post(phone(1))).status).toBe(201)
  const refused = await post(phone(2))
  expect(refused.status).toBe(429)
  expect(((await refused.json()) as any).code).toBe(63018)

  twilio.reset()
  const a = await t.account(1000, { price: 10 })
  const sender = await createSender(t, 'twilio', TWILIO_A, { messaging_limit: 250 })
  await assign(t, a.accountId, sender, true)
  await t.db.sql`insert into messaging_budgets (budget) values (${`sender:${sender}`}) on conflict do nothing`
  await t.db.sql`
    insert into messaging_uses (budget, phone) select ${`sender:${sender}`}, '+62816' || lpad(g::text, 8, '0') from generate_series(1, 250) g`
  const limited = await t.api('POST', '/messages/send', a.key, { to: phone(3), body: 'Promo' })
  expect([limited.status, limited.body.code]).toEqual([429, 'MESSAGING_LIMIT'])
  // Only the sends count: creating the sender listed its templates.
  expect(twilio.requests.filter((r) => r.path.endsWith('/Messages.json'))).toHaveLength(0)
})
