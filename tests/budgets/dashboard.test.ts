// The messaging limit in the dashboard through app.handle: the operator's senders list and sender page
// show each sender's budget use (used / tier, when the oldest frees), the sender page sets its tier and
// portfolio (audited; a portfolio that does not exist is a field error), and members see their
// senders' use on their overview.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { dashboardUser } from '../helpers/web'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

const PASSWORD = 'correct horse battery'
const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ')

test('operators see and set the tier and portfolio; members see the use on their overview', async () => {
  const created = await t.admin('POST', '/senders', {
    provider: 'simulator',
    name: 'Toko Maju',
    number: '+6281100007001',
    messaging_limit: 250,
  })
  const id = created.body.data.id
  const account = await t.account(1000)
  await t.admin('PUT', `/accounts/${account.accountId}/senders/${id}`)
  await t.db.sql`insert into messaging_budgets (budget) values (${`sender:${id}`})`
  await t.db.sql`
    insert into messaging_uses (budget, phone, first_at)
    select ${`sender:${id}`}, '+62817' || lpad(g::text, 8, '0'), now() - interval '2 hours' - make_interval(mins => g)
    from generate_series(1, 17) g`
  const [oldest] = await t.db.sql<{ frees: string }[]>`
    select to_char((min(first_at) + interval '24 hours') at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') as frees
    from messaging_uses where budget = ${`sender:${id}`}`

  const op = (await dashboardUser(t, 'op-limit@example.com', PASSWORD)).client
  const list = await op.get('/dashboard/senders')
  expect(list.status).toBe(200)
  expect(text(list.text)).toContain(`17 / 250 recipients in 24 h, oldest frees ${oldest!.frees}`)

  let page = await op.get(`/dashboard/senders/${id}`)
  expect(text(page.text)).toContain('Messaging limit 17 / 250 recipients in 24 h')
  expect(text(page.text)).toContain('its own tier')

  // A portfolio that does not exist: a field error, nothing changed.
  const refused = await op.post(`/dashboard/senders/${id}`, {
    _csrf: page.csrf!,
    name: 'Toko Maju',
    rate_per_second: '',
    recipient_gap_ms: '',
    messaging_limit: '2000',
    portfolio: 'Nope group',
  })
  expect(refused.status).toBe(422)
  expect(text(refused.text)).toContain('no portfolio is named "Nope group"')
  expect((await t.admin('GET', `/senders/${id}`)).body.data.messaging_limit).toBe(250)

  const portfolio = await t.admin('POST', '/portfolios', { name: 'Maju group', messaging_limit: 10000 })
  page = await op.get(`/dashboard/senders/${id}`)
  const saved = await op.post(`/dashboard/senders/${id}`, {
    _csrf: page.csrf!,
    name: 'Toko Maju',
    rate_per_second: '',
    recipient_gap_ms: '',
    messaging_limit: '2000',
    portfolio: 'Maju group',
  })
  expect(saved.status).toBe(303)
  const after = await op.get(saved.location!)
  expect(text(after.text)).toContain('its messaging limit (2,000), its portfolio (Maju group) changed')
  // The portfolio's budget now: its tier, none of the sender's own uses.
  expect(text(after.text)).toContain('0 / 10,000 recipients in 24 h')
  expect(text(after.text)).toContain('the tier of portfolio Maju group')
  const [audited] = await t.db.sql<{ detail: any }[]>`
    select detail from audit_log where action = 'sender changed' and detail->>'sender_id' = ${String(id)} order by id desc limit 1`
  expect(audited!.detail.changed).toEqual(expect.arrayContaining(['messaging_limit', 'portfolio']))
  expect(portfolio.body.data.id).toBeGreaterThan(0)

  // Back to its own tier: the member sees the use on the overview.
  page = await op.get(`/dashboard/senders/${id}`)
  await op.post(`/dashboard/senders/${id}`, {
    _csrf: page.csrf!,
    name: 'Toko Maju',
    rate_per_second: '',
    recipient_gap_ms: '',
    messaging_limit: '250',
    portfolio: '',
  })
  const member = (await dashboardUser(t, 'member-limit@example.com', PASSWORD, account.accountId)).client
  const overview = await member.get('/dashboard')
  const section = text(overview.text.slice(overview.text.indexOf('<h2 id="senders-title">')))
  expect(section).toContain('Messaging limit')
  expect(section).toContain(`17 / 250 recipients in 24 h, oldest frees ${oldest!.frees}`)
})
