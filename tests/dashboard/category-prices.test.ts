// Prices per category on the dashboard (issue 31 §1): the global price page and an account's page show
// each category's price and where it comes from, and set, keep or remove a category's own price and the
// settlement choice, with the same rules as PUT /admin/v1/price (a 422 naming the field) and an audit row.
// Through app.handle; what the pages set is read back through the API (GET /balance) and the admin API.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { dashboardUser } from '../helpers/web'

let t: TestApp
const PASSWORD = 'correct horse battery'
let n = 0
const email = (what: string) => `${what}-${++n}@example.com`

beforeAll(async () => {
  t = await testApp()
}, 60_000)
afterAll(async () => {
  await t.close()
}, 30_000)

const balancePrices = async (key: string) => (await t.api('GET', '/balance', key)).body.data.prices

describe('prices per category on the dashboard', () => {
  test('the global page sets, keeps and removes category prices and the settlement choice; a bad figure is 422 naming it', async () => {
    const { client } = await dashboardUser(t, email('op'), PASSWORD)
    const own = await t.account(10_000)
    let page = await client.get('/dashboard/price')
    expect(page.status).toBe(200)
    expect(page.text).toContain('id="category-prices"')

    const set = await client.post('/dashboard/price', {
      _csrf: page.csrf!,
      cost_per_message: '100',
      price_marketing: '250',
      price_utility: '',
      price_authentication: '80',
      price_service: '',
      settle: 'keep',
      late_failures: 'refund',
    })
    expect(set.status).toBe(303)
    expect(await balancePrices(own.key)).toEqual({ marketing: 250, utility: 100, authentication: 80, service: 100 })
    const admin = await t.admin('GET', '/price')
    expect(admin.body.data.settle).toBe('keep')
    page = await client.get('/dashboard/price')
    // The form shows the own prices it keeps (a category left out costs the price per message).
    expect(page.text).toMatch(/name="price_marketing"[^>]*value="250"|value="250"[^>]*name="price_marketing"/)

    // A form without a category's field keeps that category's price; an empty field removes it.
    const partial = await client.post('/dashboard/price', {
      _csrf: page.csrf!,
      cost_per_message: '120',
      price_authentication: '',
      late_failures: 'refund',
    })
    expect(partial.status).toBe(303)
    expect(await balancePrices(own.key)).toEqual({ marketing: 250, utility: 120, authentication: 120, service: 120 })

    const bad = await client.post('/dashboard/price', {
      _csrf: page.csrf!,
      cost_per_message: '120',
      price_utility: '-5',
      late_failures: 'refund',
    })
    expect(bad.status).toBe(422)
    expect(bad.text).toContain('price_utility')
    expect(await balancePrices(own.key)).toEqual({ marketing: 250, utility: 120, authentication: 120, service: 120 })

    const audit = await t.db.sql`select detail from audit_log where action = 'price set' order by id desc limit 1`
    const detail = typeof audit[0]!.detail === 'string' ? JSON.parse(audit[0]!.detail) : audit[0]!.detail
    expect(detail.prices).toEqual({ marketing: 250 })
    expect(detail.previous_prices).toEqual({ marketing: 250, authentication: 80 })

    // Back to no category prices for the other tests of this file.
    await t.admin('PUT', '/price', { cost_per_message: 100, prices: { marketing: null } })
  })

  test("an account's own price takes its own category prices; a member cannot set them", async () => {
    const { client } = await dashboardUser(t, email('op'), PASSWORD)
    const own = await t.account(10_000)
    const other = await t.account(10_000)
    let page = await client.get(`/dashboard/accounts/${own.accountId}`)
    expect(page.status).toBe(200)
    const set = await client.post(`/dashboard/accounts/${own.accountId}/price`, {
      _csrf: page.csrf!,
      cost_per_message: '90',
      price_marketing: '300',
      price_utility: '',
      price_authentication: '',
      price_service: '',
      settle: 'provider',
      late_failures: 'refund',
    })
    expect(set.status).toBe(303)
    expect(await balancePrices(own.key)).toEqual({ marketing: 300, utility: 90, authentication: 90, service: 90 })
    // Another account keeps the global prices.
    expect(await balancePrices(other.key)).toEqual((await t.admin('GET', '/price')).body.data.prices)
    page = await client.get(`/dashboard/accounts/${own.accountId}`)
    expect(page.text).toContain('id="category-prices"')

    const member = await dashboardUser(t, email('member'), PASSWORD, own.accountId)
    const memberPage = await member.client.get('/dashboard/webhook')
    const refused = await member.client.post(`/dashboard/accounts/${own.accountId}/price`, {
      _csrf: memberPage.csrf!,
      cost_per_message: '1',
      price_marketing: '1',
    })
    expect(refused.status).toBe(404)
    expect(await balancePrices(own.key)).toEqual({ marketing: 300, utility: 90, authentication: 90, service: 90 })
  })
})
