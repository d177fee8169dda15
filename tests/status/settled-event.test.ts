// message.settled (issue 31): when Meta's pricing on a status webhook settles a message and that changes
// its category or cost, the account's registrations that chose the event get one, signed like every
// delivery, carrying the SID, the category and cost before and after, and what the balance could not pay.
// Exactly once per settlement: repeated, late and out-of-order reports send nothing more; a settlement
// that changes nothing (the category charged, a price that keeps charges) sends nothing. Messages go
// through the API to the fake Graph API (the deployment's Meta number), whose signed notifications carry
// `pricing`; the events go through the delivery pipeline to a real receiver on loopback.

import { afterAll, afterEach, beforeAll, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { testApp, type TestApp } from '../helpers/app'
import { deliverAll } from '../helpers/delivery'
import { fakeGraph } from '../helpers/fake-graph'
import { metaPricing } from '../helpers/meta-webhook'
import { startReceiver, type Received, type Receiver } from '../helpers/receiver'
import { insertTemplate } from '../../src/modules/templates/catalog'

const APP_SECRET = 'meta_app_secret_settled_0123456789'
const PHONE = '106540352242978'
const WABA = '200000000000078'
const graph = fakeGraph()
graph.phone(PHONE, 'meta-token', { appSecret: APP_SECRET })
graph.accountOf.set(PHONE, WABA)

let t: TestApp
let rx: Receiver
let utility = 0
beforeAll(async () => {
  rx = startReceiver(null)
  t = await testApp({
    env: {
      PROVIDER: 'meta',
      META_ACCESS_TOKEN: 'meta-token',
      META_PHONE_NUMBER_ID: PHONE,
      META_APP_SECRET: APP_SECRET,
      META_VERIFY_TOKEN: 'verify',
      META_API_BASE: graph.apiBase,
      WEBHOOK_ALLOW_PRIVATE: 'true',
    },
  })
  graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
  const components = [{ type: 'BODY', text: 'A utility message' }]
  const row = await t.db.sql.begin((tx) =>
    insertTemplate(
      tx,
      t.deps.clock,
      {
        status: 'approved',
        name: 'settled_utility',
        language: 'en_US',
        category: 'utility',
        parameterFormat: 'positional',
        components,
        senderId: null,
        provider: 'meta',
      },
      'sync',
    ),
  )
  graph.template(WABA, { name: 'settled_utility', language: 'en_US', category: 'UTILITY', status: 'APPROVED', components })
  utility = row!.id
}, 60_000)
afterAll(async () => {
  await t.close()
  graph.stop()
  rx.stop()
})
afterEach(() => {
  graph.reset()
  rx.reset()
})

/** An account (service 100, utility 150, marketing 300) with two keys: one chose message.settled, the other the default. */
async function account(balance = 10_000, extra: Record<string, unknown> = {}) {
  const a = await t.account(balance)
  const price = { cost_per_message: 100, account_id: a.accountId, prices: { utility: 150, marketing: 300 }, ...extra }
  expect((await t.admin('PUT', '/price', price)).status).toBe(200)
  const path = `/settled-${a.accountId}`
  const chose = await t.api('POST', '/webhook', a.key, { url: rx.url('localhost', path), events: ['message.settled'] })
  expect(chose.status).toBe(200)
  const other = await t.admin('POST', `/accounts/${a.accountId}/keys`, { label: 'default events' })
  expect((await t.api('POST', '/webhook', other.body.data.key, { url: rx.url('localhost', `${path}-default`) })).status).toBe(200)
  return { ...a, path, secret: chose.body.data.signing_secret as string }
}

async function sendUtility(key: string) {
  const res = await t.api('POST', '/messages/send', key, { to: '081234567890', template_id: utility })
  expect(res.status).toBe(200)
  return res.body.data as { message_id: string; cost: number }
}

const report = (id: string, status: 'sent' | 'delivered' | 'read', pricing: ReturnType<typeof metaPricing>) =>
  graph.reportStatus({ phoneNumberId: PHONE, id, status, pricing })

/** Every event delivered so far to `path`, verified with its registration's secret. */
async function delivered(path: string, secret: string) {
  await deliverAll(t)
  return rx.requests
    .filter((r: Received) => r.path === path)
    .map((r) => new Webhook(secret).verify(r.body, r.headers) as { event: string; timestamp: string; data: unknown })
}

test('settled up: one message.settled with the categories and costs, to the registration that chose it; repeats send nothing', async () => {
  const a = await account()
  const sent = await sendUtility(a.key)
  expect((await report(sent.message_id, 'delivered', metaPricing('marketing'))).status).toBe(200)
  // Repeated, late and out-of-order reports (other words too) settle nothing more.
  await report(sent.message_id, 'delivered', metaPricing('marketing'))
  await report(sent.message_id, 'read', metaPricing('authentication'))
  await report(sent.message_id, 'sent', metaPricing('utility'))
  const events = await delivered(a.path, a.secret)
  expect(events).toEqual([
    {
      event: 'message.settled',
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
      data: {
        message_sid: sent.message_id,
        to: '+6281234567890',
        category: 'marketing',
        previous_category: 'utility',
        cost: 300,
        previous_cost: 150,
        unsettled: 0,
      },
    },
  ])
  // The body is compact JSON in that field order (what the receiver verified is what was signed).
  expect(rx.requests.find((r) => r.path === a.path)!.body).toContain(
    `"data":{"message_sid":"${sent.message_id}","to":"+6281234567890","category":"marketing","previous_category":"utility",` +
      '"cost":300,"previous_cost":150,"unsettled":0}}',
  )
  // The account's other key, whose registration kept the default events, gets none of it.
  const others = rx.requests.filter((r) => r.path === `${a.path}-default`).map((r) => JSON.parse(r.body).event)
  expect(others).toEqual([])
  const [row] = await t.db.sql<{ n: number }[]>`
    select count(*)::int as n from webhook_events e join api_keys k on k.id = e.api_key_id
    where k.account_id = ${a.accountId} and e.event = 'message.settled'`
  expect(row!.n).toBe(1)
})

test('settled down to free, and up past the balance: the event says what it finally cost and what was not taken', async () => {
  const a = await account(300)
  const free = await sendUtility(a.key)
  await report(free.message_id, 'read', metaPricing('utility', 'free_customer_service'))
  // 300 - 150 + 50 (the free one's difference back) - 150 leaves 50 for the next one's difference of 150.
  const short = await sendUtility(a.key)
  await report(short.message_id, 'delivered', metaPricing('marketing'))
  const events = await delivered(a.path, a.secret)
  expect(events.map((e) => e.data)).toEqual([
    {
      message_sid: free.message_id,
      to: '+6281234567890',
      category: 'service',
      previous_category: 'utility',
      cost: 100,
      previous_cost: 150,
      unsettled: 0,
    },
    {
      message_sid: short.message_id,
      to: '+6281234567890',
      category: 'marketing',
      previous_category: 'utility',
      cost: 200,
      previous_cost: 150,
      unsettled: 100,
    },
  ])
})

test('a settlement that changes nothing sends nothing: the category charged, or a price that keeps charges', async () => {
  const same = await account()
  const m1 = await sendUtility(same.key)
  await report(m1.message_id, 'delivered', metaPricing('utility'))
  const kept = await account(10_000, { settle: 'keep' })
  const m2 = await sendUtility(kept.key)
  await report(m2.message_id, 'delivered', metaPricing('marketing'))
  expect(await delivered(same.path, same.secret)).toEqual([])
  expect(await delivered(kept.path, kept.secret)).toEqual([])
})
