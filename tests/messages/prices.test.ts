// Prices per category (issue 31): each message is charged its category's price (its WhatsApp
// template's category, else service), shows `category` and `cost`, and is settled once on Meta's word
// (`pricing` on its status webhooks): up, down, free, repeated and out of order, a balance too small for
// the difference, and a price that keeps charges. Messages go for real through the API to the fake
// Graph API (the deployment's Meta number), whose signed status notifications carry `pricing` as
// Meta's do; prices are set through the admin API; balance = sum(ledger) after each.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeGraph, type FakeTemplate } from '../helpers/fake-graph'
import { metaPricing } from '../helpers/meta-webhook'
import { insertTemplate } from '../../src/modules/templates/catalog'
import { META_A, assign, createSender } from '../helpers/senders'

const APP_SECRET = 'meta_app_secret_prices_0123456789'
const PHONE = '106540352242977'
const WABA = '200000000000077'
const graph = fakeGraph()
graph.phone(PHONE, 'meta-token', { appSecret: APP_SECRET })
graph.accountOf.set(PHONE, WABA)

let t: TestApp
const templates: Record<'marketing' | 'utility' | 'authentication', number> = { marketing: 0, utility: 0, authentication: 0 }
beforeAll(async () => {
  t = await testApp({
    env: {
      PROVIDER: 'meta',
      META_ACCESS_TOKEN: 'meta-token',
      META_PHONE_NUMBER_ID: PHONE,
      META_APP_SECRET: APP_SECRET,
      META_VERIFY_TOKEN: 'verify',
      META_API_BASE: graph.apiBase,
    },
  })
  graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
  for (const category of ['marketing', 'utility', 'authentication'] as const) {
    const name = `price_${category}`
    const components = [{ type: 'BODY', text: `A ${category} message` }]
    const row = await t.db.sql.begin((tx) =>
      insertTemplate(
        tx,
        t.deps.clock,
        {
          status: 'approved',
          name,
          language: 'en_US',
          category,
          parameterFormat: 'positional',
          components,
          senderId: null,
          provider: 'meta',
        },
        'sync',
      ),
    )
    graph.template(WABA, {
      name,
      language: 'en_US',
      category: category.toUpperCase() as FakeTemplate['category'],
      status: 'APPROVED',
      components,
    })
    templates[category] = row!.id
  }
}, 60_000)
afterAll(async () => {
  await t.close()
  graph.stop()
})
afterEach(() => graph.reset())

const PRICES = { marketing: 300, utility: 150, authentication: 120 }

/** An account with its own price: cost_per_message 100 (service), and the categories' own prices. */
async function account(balance = 10_000, extra: Record<string, unknown> = {}) {
  const a = await t.account(balance)
  const res = await t.admin('PUT', '/price', { cost_per_message: 100, account_id: a.accountId, prices: PRICES, ...extra })
  expect(res.status).toBe(200)
  return a
}

type Kind = 'service' | 'marketing' | 'utility' | 'authentication'
const bodyOf = (kind: Kind) => (kind === 'service' ? { body: 'halo' } : { template_id: templates[kind] })

async function send(key: string, kind: Kind) {
  const res = await t.api('POST', '/messages/send', key, { to: '081234567890', ...bodyOf(kind) })
  expect(res.status).toBe(200)
  return res.body.data as { message_id: string; cost: number; balance_after: number }
}

const message = async (key: string, sid: string) => (await t.api('GET', `/messages/${sid}`, key)).body.data
const report = (id: string, status: 'sent' | 'delivered' | 'read' | 'failed', pricing?: ReturnType<typeof metaPricing> | null) =>
  graph.reportStatus({ phoneNumberId: PHONE, id, status, pricing })
async function balanced(accountId: number) {
  const m = await money(t, accountId)
  expect(m.balance).toBe(m.ledgerSum)
  return m.balance
}
const settlements = (accountId: number) =>
  t.db.sql<{ amount: number; message_id: number }[]>`
    select amount, message_id from ledger where account_id = ${accountId} and kind = 'settlement' order by id`

describe('a price per category', () => {
  test('each category is charged its own price, shown with the message; a bulk too; GET /balance lists the four', async () => {
    const a = await account()
    const costs: Record<string, number> = {}
    for (const kind of ['service', 'marketing', 'utility', 'authentication'] as const) {
      const sent = await send(a.key, kind)
      costs[kind] = sent.cost
      expect(await message(a.key, sent.message_id)).toMatchObject({ category: kind, cost: sent.cost })
    }
    expect(costs).toEqual({ service: 100, marketing: 300, utility: 150, authentication: 120 })
    const bulk = await t.api('POST', '/messages/bulk', a.key, {
      messages: [
        { to: '081234567891', ...bodyOf('marketing') },
        { to: '081234567892', ...bodyOf('service') },
        { to: '081234567893', ...bodyOf('authentication') },
      ],
    })
    expect(bulk.status).toBe(200)
    expect(bulk.body.data).toMatchObject({ sent: 3, total_cost: 520, balance_after: 10_000 - 670 - 520 })
    const listed = (await t.api('GET', '/messages?limit=3', a.key)).body.data.items
    expect(listed.map((m: any) => [m.category, m.cost])).toEqual([
      ['authentication', 120],
      ['service', 100],
      ['marketing', 300],
    ])
    const balance = await t.api('GET', '/balance', a.key)
    expect(balance.body.data).toMatchObject({
      cost_per_message: 100,
      estimated_sends: Math.floor((10_000 - 1190) / 100),
      prices: { marketing: 300, utility: 150, authentication: 120, service: 100 },
    })
    expect(await balanced(a.accountId)).toBe(10_000 - 1190)
  })

  test('a category without its own price costs cost_per_message; null removes one; each change is kept', async () => {
    const a = await account()
    await t.admin('PUT', '/price', { cost_per_message: 90, account_id: a.accountId, prices: { marketing: null, service: 80 } })
    const price = (await t.admin('GET', `/price?account_id=${a.accountId}`)).body.data
    expect(price).toMatchObject({
      cost_per_message: 90,
      prices: { marketing: 90, utility: 150, authentication: 120, service: 80 },
      own_prices: { utility: 150, authentication: 120, service: 80 },
      settle: 'provider',
    })
    expect((await send(a.key, 'marketing')).cost).toBe(90)
    expect((await send(a.key, 'service')).cost).toBe(80)
    const history = (await t.admin('GET', `/price/history?account_id=${a.accountId}`)).body.data
    expect(history.map((h: any) => [h.cost_per_message, h.prices])).toEqual([
      [90, { utility: 150, authentication: 120, service: 80 }],
      [100, PRICES],
    ])
    const bad = await t.admin('PUT', '/price', { cost_per_message: 90, account_id: a.accountId, prices: { utility: 0 } })
    expect([bad.status, bad.body.code]).toEqual([422, 'VALIDATION_ERROR'])
  })
})

describe("settled on Meta's word", () => {
  test('up: a utility message Meta prices as marketing costs the marketing price, once, however often or late the report comes', async () => {
    const a = await account()
    const sent = await send(a.key, 'utility')
    expect((await report(sent.message_id, 'delivered', metaPricing('marketing'))).status).toBe(200)
    expect(await message(a.key, sent.message_id)).toMatchObject({ status: 'delivered', category: 'marketing', cost: 300 })
    // Repeated, then later reports with other words: nothing moves again.
    await report(sent.message_id, 'delivered', metaPricing('marketing'))
    await report(sent.message_id, 'read', metaPricing('utility'))
    await report(sent.message_id, 'sent', metaPricing('authentication'))
    expect(await message(a.key, sent.message_id)).toMatchObject({ status: 'read', category: 'marketing', cost: 300 })
    expect((await settlements(a.accountId)).map((s) => s.amount)).toEqual([-150])
    expect(await balanced(a.accountId)).toBe(10_000 - 300)
  })

  test('down: a marketing message Meta prices as utility is given the difference back; Meta’s other categories map onto the four', async () => {
    const a = await account()
    const down = await send(a.key, 'marketing')
    await report(down.message_id, 'read', metaPricing('utility'))
    expect(await message(a.key, down.message_id)).toMatchObject({ category: 'utility', cost: 150 })
    const lite = await send(a.key, 'utility')
    await report(lite.message_id, 'delivered', metaPricing('marketing_lite'))
    const international = await send(a.key, 'utility')
    await report(international.message_id, 'delivered', metaPricing('authentication_international'))
    expect((await message(a.key, lite.message_id)).cost).toBe(300)
    expect(await message(a.key, international.message_id)).toMatchObject({ category: 'authentication', cost: 120 })
    expect((await settlements(a.accountId)).map((s) => s.amount)).toEqual([150, -150, 30])
    expect(await balanced(a.accountId)).toBe(10_000 - 150 - 300 - 120)
  })

  test('free: a free type (or billable false) settles to the service price', async () => {
    const a = await account()
    const m1 = await send(a.key, 'utility')
    await report(m1.message_id, 'delivered', metaPricing('utility', 'free_customer_service'))
    const m2 = await send(a.key, 'marketing')
    await report(m2.message_id, 'sent', metaPricing('marketing', 'free_entry_point'))
    const m3 = await send(a.key, 'authentication')
    await report(m3.message_id, 'read', { pricing_model: 'CBP', category: 'authentication', billable: false })
    for (const m of [m1, m2, m3]) expect(await message(a.key, m.message_id)).toMatchObject({ category: 'service', cost: 100 })
    expect(await balanced(a.accountId)).toBe(10_000 - 300)
  })

  test('out of order: a read that settles first wins; the delivered that comes late settles nothing', async () => {
    const a = await account()
    const sent = await send(a.key, 'service')
    await report(sent.message_id, 'read', metaPricing('utility'))
    await report(sent.message_id, 'delivered', metaPricing('marketing'))
    expect(await message(a.key, sent.message_id)).toMatchObject({ status: 'read', category: 'utility', cost: 150 })
    expect((await settlements(a.accountId)).map((s) => s.amount)).toEqual([-50])
    // A failed report settles nothing (Meta's carries no pricing) and a message that failed is not settled later.
    const failed = await send(a.key, 'utility')
    await report(failed.message_id, 'failed')
    await report(failed.message_id, 'delivered', metaPricing('marketing'))
    expect(await message(a.key, failed.message_id)).toMatchObject({ status: 'failed', category: 'utility', refunded: true })
    expect(await balanced(a.accountId)).toBe(10_000 - 150)
  })

  test('priced by its sent, then failed: settled once, then refunded what it finally cost', async () => {
    const a = await account()
    const up = await send(a.key, 'utility')
    await report(up.message_id, 'sent', metaPricing('marketing_lite'))
    await report(up.message_id, 'failed')
    expect(await message(a.key, up.message_id)).toMatchObject({ status: 'failed', category: 'marketing', cost: 300, refunded: true })
    const same = await send(a.key, 'marketing')
    await report(same.message_id, 'sent', metaPricing('marketing_lite'))
    await report(same.message_id, 'failed')
    const [row] = await t.db.sql<
      { settled: boolean }[]
    >`select settled_at is not null as settled from messages where message_sid = ${same.message_id}`
    expect(row!.settled).toBe(true)
    expect((await settlements(a.accountId)).map((s) => s.amount)).toEqual([-150])
    expect(await balanced(a.accountId)).toBe(10_000)
  })

  test('reports parked before the SID is stored (priced sent, then failed) apply in order once it is: settled, then refunded', async () => {
    const a = await account()
    const first = await send(a.key, 'utility')
    // The fake's next message id: Meta reports on it before the send below has stored it.
    const next = first.message_id.replace(
      /j([0-9a-f]{8})A=$/,
      (_, n: string) => `j${(parseInt(n, 16) + 1).toString(16).padStart(8, '0')}A=`,
    )
    await report(next, 'sent', metaPricing('marketing'))
    await report(next, 'failed')
    expect((await t.db.sql`select status from parked_reports where message_sid = ${next} order by id`).map((r) => r.status)).toEqual([
      'sent',
      'failed',
    ])
    const parked = await send(a.key, 'utility')
    expect(parked.message_id).toBe(next)
    await t.runWorker('parked-reports')
    expect(await message(a.key, next)).toMatchObject({ status: 'failed', category: 'marketing', cost: 300, refunded: true })
    expect((await settlements(a.accountId)).map((s) => s.amount)).toEqual([-150])
    expect(await balanced(a.accountId)).toBe(10_000 - 150)
  })

  test('a balance too small for the difference: it takes what there is (never below 0), the rest is recorded unsettled', async () => {
    const a = await account(200)
    const sent = await send(a.key, 'utility')
    expect(sent.balance_after).toBe(50)
    await report(sent.message_id, 'delivered', metaPricing('marketing'))
    expect(await message(a.key, sent.message_id)).toMatchObject({ category: 'marketing', cost: 200 })
    const [row] = await t.db.sql<{ unsettled: number }[]>`select unsettled from messages where message_sid = ${sent.message_id}`
    expect(row!.unsettled).toBe(100)
    expect((await settlements(a.accountId)).map((s) => s.amount)).toEqual([-50])
    expect(await balanced(a.accountId)).toBe(0)
    // An empty balance takes nothing: no ledger row, all of it unsettled.
    await t.admin('POST', `/accounts/${a.accountId}/topups`, { amount: 150 })
    const second = await send(a.key, 'utility')
    await report(second.message_id, 'delivered', metaPricing('marketing'))
    const [row2] = await t.db.sql<{ unsettled: number; cost: number }[]>`
      select unsettled, cost from messages where message_sid = ${second.message_id}`
    expect(row2).toEqual({ unsettled: 150, cost: 150 })
    expect(await balanced(a.accountId)).toBe(0)
  })

  test("a price that keeps charges: Meta's category is recorded, the charge stays", async () => {
    const a = await account(10_000, { settle: 'keep' })
    const sent = await send(a.key, 'utility')
    await report(sent.message_id, 'delivered', metaPricing('marketing'))
    expect(await message(a.key, sent.message_id)).toMatchObject({ category: 'utility', cost: 150 })
    const [row] = await t.db.sql<
      { settled_category: string }[]
    >`select settled_category from messages where message_sid = ${sent.message_id}`
    expect(row!.settled_category).toBe('marketing')
    expect((await settlements(a.accountId)).length).toBe(0)
    expect(await balanced(a.accountId)).toBe(10_000 - 150)
  })
})

describe("a tenant's own sender cannot price its messages down", () => {
  test('a free or cheaper category reported through a secret the tenant holds settles nothing down; once the operator trusts the sender, it does', async () => {
    const { phone_number_id: phone, app_secret: secret, business_account_id: waba, access_token: token } = META_A.credentials
    graph.phone(phone, token, { appSecret: secret })
    graph.accountOf.set(phone, waba)
    const a = await account()
    // The tenant brought this Meta sender (its app secret): late failures and reports are not trusted with money (keep).
    const senderId = await createSender(t, 'meta', META_A)
    await assign(t, a.accountId, senderId, true)
    const components = [{ type: 'BODY', text: 'Promo of the week' }]
    const row = await t.db.sql.begin((tx) =>
      insertTemplate(
        tx,
        t.deps.clock,
        {
          status: 'approved',
          name: 'tenant_promo',
          language: 'en_US',
          category: 'marketing',
          parameterFormat: 'positional',
          components,
          senderId,
          provider: 'meta',
        },
        'sync',
      ),
    )
    graph.template(waba, { name: 'tenant_promo', language: 'en_US', category: 'MARKETING', status: 'APPROVED', components })
    // Each to its own recipient: Meta's gap between two messages to one recipient (6 s) is not what this is about.
    let recipient = 0
    const sendPromo = async () => {
      const res = await t.api('POST', '/messages/send', a.key, { to: `08123456789${recipient++}`, template_id: row!.id })
      expect(res.status).toBe(200)
      return res.body.data.message_id as string
    }
    const tenantReport = (id: string, pricing: ReturnType<typeof metaPricing>) =>
      graph.reportStatus({ phoneNumberId: phone, id, status: 'delivered', pricing, appSecret: secret })

    const free = await sendPromo()
    expect((await tenantReport(free, metaPricing('marketing', 'free_customer_service'))).status).toBe(200)
    const cheaper = await sendPromo()
    await tenantReport(cheaper, metaPricing('utility'))
    for (const id of [free, cheaper])
      expect(await message(a.key, id)).toMatchObject({ status: 'delivered', category: 'marketing', cost: 300 })
    expect((await settlements(a.accountId)).length).toBe(0)
    expect(await balanced(a.accountId)).toBe(10_000 - 600)

    // Once the operator trusts the sender's reports with money (late_failures: refund), Meta's word settles down.
    expect((await t.admin('PATCH', `/senders/${senderId}`, { late_failures: 'refund' })).status).toBe(200)
    const trusted = await sendPromo()
    await tenantReport(trusted, metaPricing('utility'))
    expect(await message(a.key, trusted)).toMatchObject({ category: 'utility', cost: 150 })
    expect((await settlements(a.accountId)).map((s) => s.amount)).toEqual([150])
    expect(await balanced(a.accountId)).toBe(10_000 - 750)
  })
})

describe('usage by day and category', () => {
  const today = () => new Intl.DateTimeFormat('en-CA', { timeZone: t.config.timezone }).format(new Date())

  test("sums each day's messages per category at their final cost; another account's key sees only its own", async () => {
    const a = await account()
    const b = await account()
    for (const kind of ['marketing', 'marketing', 'utility', 'service'] as const) await send(a.key, kind)
    const settled = await send(a.key, 'utility')
    await report(settled.message_id, 'delivered', metaPricing('authentication'))
    // A message refunded (it failed after acceptance) cost nothing: left out.
    const failed = await send(a.key, 'authentication')
    await report(failed.message_id, 'failed')
    await send(b.key, 'service')

    const day = today()
    const res = await t.api('GET', `/usage?date_from=${day}&date_to=${day}`, a.key)
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ total: 4, has_more: false })
    expect(res.body.data.items).toEqual([
      { day, category: 'authentication', count: 1, cost: 120 },
      { day, category: 'marketing', count: 2, cost: 600 },
      { day, category: 'service', count: 1, cost: 100 },
      { day, category: 'utility', count: 1, cost: 150 },
    ])
    // The items sum to what the account paid.
    const paid = res.body.data.items.reduce((sum: number, i: any) => sum + i.cost, 0)
    expect(paid).toBe(10_000 - (await balanced(a.accountId)))

    const other = await t.api('GET', '/usage', b.key)
    expect(other.body.data.items).toEqual([{ day, category: 'service', count: 1, cost: 100 }])
    const paged = await t.api('GET', '/usage?limit=1&offset=1', a.key)
    expect(paged.body.data).toMatchObject({ total: 4, limit: 1, offset: 1, has_more: true })
    expect(paged.body.data.items).toEqual([{ day, category: 'marketing', count: 2, cost: 600 }])
    expect((await t.api('GET', '/usage?date_to=2000-01-01', a.key)).body.data.items).toEqual([])
  })

  test('dates are checked: 422 naming the field', async () => {
    const a = await account()
    for (const [query, field] of [
      ['date_from=2026-13-01', 'date_from'],
      ['date_to=yesterday', 'date_to'],
      ['date_from=2026-11-02&date_to=2026-11-01', 'date_to'],
    ]) {
      const res = await t.api('GET', `/usage?${query}`, a.key)
      expect([res.status, res.body.code]).toEqual([422, 'VALIDATION_ERROR'])
      expect(res.body.error).toStartWith(`${field}:`)
    }
    expect((await t.request('GET', '/api/v1/usage', { key: null })).status).toBe(401)
  })
})
