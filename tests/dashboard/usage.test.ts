// The usage page (issue 31 §5) through app.handle: an account's messages by day and category with their
// cost, as GET /api/v1/usage counts them, the same rows as CSV, a bad day answered 422 on the page, and
// one account's usage never shown to another account's member.

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

describe('usage page', () => {
  test('the page and its CSV show what GET /usage counts; a bad day is 422; another account is 404', async () => {
    const own = await t.account(10_000, { price: 70 })
    const other = await t.account(10_000)
    for (const to of ['+6281200000101', '+6281200000102', '+6281200000103']) {
      expect((await t.api('POST', '/messages/send', own.key, { to, body: 'Your order has shipped' })).status).toBe(200)
    }
    const usage = (await t.api('GET', '/usage', own.key)).body.data.items
    expect(usage).toHaveLength(1)
    expect(usage[0]).toMatchObject({ category: 'service', count: 3, cost: 210 })

    const member = await dashboardUser(t, email('member'), PASSWORD, own.accountId)
    const page = await member.client.get('/dashboard/usage')
    expect(page.status).toBe(200)
    expect(page.text).toContain('<table id="usage">')
    expect(page.text).toContain(`<td class="nowrap">${usage[0].day}</td>`)
    expect(page.text).toContain('<td class="num">210</td>')
    expect(page.text).toContain('aria-hidden="true"')

    const csv = await member.client.get('/dashboard/usage.csv')
    expect(csv.status).toBe(200)
    expect(csv.text.trim().split(/\r?\n/)).toEqual(['day,category,count,cost', `${usage[0].day},service,3,210`])

    const bad = await member.client.get('/dashboard/usage?date_from=yesterday')
    expect(bad.status).toBe(422)
    expect(bad.text).toContain('date_from')

    const stranger = await dashboardUser(t, email('stranger'), PASSWORD, other.accountId)
    expect((await stranger.client.get(`/dashboard/accounts/${own.accountId}/usage`)).status).toBe(404)
    const strangerPage = await stranger.client.get('/dashboard/usage')
    expect(strangerPage.text).toContain('No messages charged in this range.')

    const op = await dashboardUser(t, email('op'), PASSWORD)
    const opPage = await op.client.get(`/dashboard/accounts/${own.accountId}/usage`)
    expect(opPage.status).toBe(200)
    expect(opPage.text).toContain('<td class="num">210</td>')
  })
})
