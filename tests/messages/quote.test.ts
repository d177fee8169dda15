// POST /messages/quote (issue 31, §3) and max_price: the quote answers, entry by entry, what a bulk made
// now would do (messages/admission.ts judges both), and takes nothing: no charge, no hand-off, no pace
// slot, no messaging-limit use. Proven as a property: over seeded random mixes of opt-outs, windows,
// templates (approved, paused), budgets and balances, a bulk made right after with the same body does
// what the quote said. The default sender is the simulator held to the window (SIM_REQUIRE_TEMPLATE),
// with the messaging limit's smallest tier (250), whose uses are seeded in SQL at the test clock's time.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { insertTemplate, type WaTemplate } from '../../src/modules/templates/catalog'
import { testApp, type TestApp } from '../helpers/app'
import { seeded } from '../helpers/random'
import { dashboardUser } from '../helpers/web'

const PRICE = 10
const TIER = 250
const clock = new TestClock()
let t: TestApp
let approved: WaTemplate
let paused: WaTemplate
let serial = 0
beforeAll(async () => {
  t = await testApp({
    clock,
    runOnClock: true,
    env: { MESSAGING_LIMIT: String(TIER), SIM_REQUIRE_TEMPLATE: 'true', WINDOW_CHECK: 'provider' },
  })
  approved = await template('approved', 'utility')
  paused = await template('paused', 'marketing')
}, 60_000)
afterAll(() => t.close())
beforeEach(async () => {
  await t.db.sql`delete from messaging_uses`
})

/** A WhatsApp template of the default (simulator) sender: one body parameter. */
async function template(status: string, category: 'utility' | 'marketing'): Promise<WaTemplate> {
  return (await t.db.sql.begin((tx) =>
    insertTemplate(
      tx,
      t.deps.clock,
      {
        name: `quote_${++serial}_${Math.random().toString(36).slice(2, 8)}`,
        language: 'en_US',
        category,
        parameterFormat: 'positional',
        components: [{ type: 'BODY', text: 'Hello {{1}}', example: { body_text: [['Budi']] } }],
        status: status as WaTemplate['status'],
        senderId: null,
        provider: 'simulator',
      },
      'sync',
    ),
  )) as WaTemplate
}

const phone = (i: number) => `+62813${String(i).padStart(8, '0')}`

/** The customer wrote to the default sender `hoursAgo` hours ago (its window is open under 24). */
async function wrote(accountId: number, to: string, hoursAgo: number) {
  await t.db.sql`
    insert into inbound_messages (provider, provider_message_id, account_id, phone, type, text, content, raw, received_at)
    values ('simulator', ${`in-${++serial}`}, ${accountId}, ${to}, 'text', 'halo', '{"body":"halo"}'::jsonb, '{}'::jsonb,
            ${clock.now()}::timestamptz - make_interval(hours => ${hoursAgo}))`
}

/** The default budget with `room` recipients left (uses spent 1 hour ago by others). */
async function leaveRoom(room: number) {
  await t.db.sql`insert into messaging_budgets (budget) values ('default') on conflict do nothing`
  await t.db.sql`
    insert into messaging_uses (budget, phone, first_at)
    select 'default', '+62899' || lpad(g::text, 7, '0'), ${clock.now()}::timestamptz - interval '1 hour'
    from generate_series(1, ${TIER - room}) g`
}

/** What a quote must leave as it found it: the money, the messages, the budgets' uses and the pace's slots. */
async function snapshot(accountId: number) {
  const [row] = await t.db.sql<{ balance: number; ledger: number; messages: number; uses: string; paces: string; recipients: string }[]>`
    select (select balance from accounts where id = ${accountId}) as balance,
           (select count(*)::int from ledger where account_id = ${accountId}) as ledger,
           (select count(*)::int from messages where account_id = ${accountId}) as messages,
           (select coalesce(string_agg(budget || phone || first_at::text || coalesce(held_until::text, ''), ',' order by id), '') from messaging_uses) as uses,
           (select coalesce(string_agg(to_jsonb(p)::text, ',' order by sender), '') from sender_paces p) as paces,
           (select coalesce(string_agg(to_jsonb(r)::text, ',' order by 1), '') from recipient_paces r) as recipients`
  return row!
}

describe('the quote', () => {
  test('each entry in order: would_send, the code it would fail with, category and price; totals; nothing taken', async () => {
    const a = await t.account(1000, { price: PRICE })
    expect((await t.api('POST', '/opt-outs', a.key, { phone: phone(2) })).status).toBe(201)
    await wrote(a.accountId, phone(1), 2)
    await leaveRoom(1)
    const body = {
      messages: [
        { to: phone(1), body: 'in the window: free-form goes' },
        { to: phone(2), body: 'opted out' },
        { to: phone(3), body: 'window closed' },
        { to: phone(4), template_id: approved.id, variables: { '1': 'Budi' } },
        { to: phone(5), template_id: approved.id, variables: { '1': 'Sari' } },
        { to: phone(6), template_id: paused.id, variables: { '1': 'Ani' } },
        { to: phone(1), body: 'too dear', max_price: PRICE - 1 },
        { to: 'not a phone', body: 'x' },
      ],
    }
    const before = await snapshot(a.accountId)
    const quoted = await t.api('POST', '/messages/quote', a.key, body)
    expect(quoted.status).toBe(200)
    const q = quoted.body.data
    expect(q.results.map((r: any) => [r.to, r.would_send, r.code ?? null, r.category, r.price])).toEqual([
      [phone(1), true, null, 'service', PRICE],
      [phone(2), false, 'RECIPIENT_OPTED_OUT', 'service', PRICE],
      [phone(3), false, 'WINDOW_CLOSED', 'service', PRICE],
      [phone(4), true, null, 'utility', PRICE],
      // The budget had room for one business-initiated recipient: phone 4 took it.
      [phone(5), false, 'MESSAGING_LIMIT', 'utility', PRICE],
      [phone(6), false, 'TEMPLATE_NOT_APPROVED', 'service', PRICE],
      [phone(1), false, 'PRICE_ABOVE_MAX', 'service', PRICE],
      ['not a phone', false, 'VALIDATION_ERROR', 'service', PRICE],
    ])
    expect(q).toMatchObject({
      would_send: 2,
      skipped: 6,
      total_cost: 2 * PRICE,
      cost_by_category: { service: PRICE, utility: PRICE },
      wa_balance: 1000,
      balance_covers: true,
    })
    // Asked again: the same answer (it took nothing), and nothing changed anywhere.
    expect((await t.api('POST', '/messages/quote', a.key, body)).body.data).toEqual(q)
    expect(await snapshot(a.accountId)).toEqual(before)
  })

  test("a send's body is quoted as one entry; a balance too small says so", async () => {
    const a = await t.account(PRICE - 1, { price: PRICE })
    await wrote(a.accountId, phone(11), 1)
    const quoted = await t.api('POST', '/messages/quote', a.key, { to: phone(11), body: 'hi' })
    expect(quoted.status).toBe(200)
    expect(quoted.body.data).toMatchObject({
      results: [{ to: phone(11), would_send: true, category: 'service', price: PRICE }],
      total_cost: PRICE,
      wa_balance: PRICE - 1,
      balance_covers: false,
    })
    expect((await t.api('POST', '/messages/send', a.key, { to: phone(11), body: 'hi' })).body.code).toBe('INSUFFICIENT_BALANCE')
  })

  test('shape errors are 400, an empty list 422, as for the bulk', async () => {
    const a = await t.account(100, { price: PRICE })
    expect((await t.api('POST', '/messages/quote', a.key, { messages: [{ to: phone(1) }] })).status).toBe(400)
    expect((await t.api('POST', '/messages/quote', a.key, { messages: [] })).status).toBe(422)
    expect((await t.api('POST', '/messages/quote', a.key, { to: phone(1), body: 'x', max_price: -1 })).status).toBe(400)
  })
})

describe('prices per category', () => {
  test("each entry is quoted at its category's price, the bulk charges exactly that, and max_price holds against it", async () => {
    const a = await t.account(1000, { price: PRICE })
    const set = await t.admin('PUT', '/price', { account_id: a.accountId, cost_per_message: PRICE, prices: { utility: 25 } })
    expect(set.status).toBe(200)
    await wrote(a.accountId, phone(31), 1)
    const messages = [
      { to: phone(31), body: 'free-form, in the window' },
      { to: phone(32), template_id: approved.id, variables: { '1': 'Budi' } },
    ]
    const q = (await t.api('POST', '/messages/quote', a.key, { messages })).body.data
    expect(q.results.map((r: any) => [r.would_send, r.category, r.price])).toEqual([
      [true, 'service', PRICE],
      [true, 'utility', 25],
    ])
    expect(q).toMatchObject({ total_cost: PRICE + 25, cost_by_category: { service: PRICE, utility: 25 } })
    const capped = await t.api('POST', '/messages/send', a.key, { ...messages[1], to: phone(33), max_price: 24 })
    expect([capped.status, capped.body.code]).toEqual([422, 'PRICE_ABOVE_MAX'])
    const bulk = await t.api('POST', '/messages/bulk', a.key, { messages })
    expect(bulk.body.data).toMatchObject({ sent: 2, total_cost: PRICE + 25, balance_after: 1000 - PRICE - 25 })
  })
})

describe('max_price', () => {
  test('a send whose price is above its max_price: 422 PRICE_ABOVE_MAX, nothing charged; at the price it goes', async () => {
    const a = await t.account(100, { price: PRICE })
    await wrote(a.accountId, phone(21), 1)
    const before = await snapshot(a.accountId)
    const refused = await t.api('POST', '/messages/send', a.key, { to: phone(21), body: 'hi', max_price: PRICE - 1 })
    expect(refused.status).toBe(422)
    expect(refused.body.code).toBe('PRICE_ABOVE_MAX')
    expect(refused.body.error).toContain('nothing was charged')
    expect(await snapshot(a.accountId)).toEqual(before)
    const sent = await t.api('POST', '/messages/send', a.key, { to: phone(21), body: 'hi', max_price: PRICE })
    expect(sent.status).toBe(200)
    expect(sent.body.data.cost).toBe(PRICE)
  })

  test('a bulk entry above its max_price fails alone, uncharged; the others go', async () => {
    const a = await t.account(100, { price: PRICE })
    await wrote(a.accountId, phone(22), 1)
    const bulk = await t.api('POST', '/messages/bulk', a.key, {
      messages: [
        { to: phone(22), body: 'one', max_price: 0 },
        { to: phone(22), body: 'two', max_price: PRICE * 2 },
      ],
    })
    expect(bulk.status).toBe(200)
    expect(bulk.body.data).toMatchObject({ total: 2, sent: 1, failed: 1, total_cost: PRICE, balance_after: 100 - PRICE })
    expect(bulk.body.data.results[0]).toMatchObject({ to: phone(22), status: 'failed', code: 'PRICE_ABOVE_MAX' })
  })
})

describe('a bulk made right after the quote does what it said (property)', () => {
  test('seeded random mixes of opt-outs, windows, templates, budgets, balances and price caps', async () => {
    const seed = Number(process.env.QUOTE_SEED ?? 20261202)
    const random = seeded(seed)
    for (let round = 0; round < 12; round++) {
      await t.db.sql`delete from messaging_uses`
      const n = random.int(1, 8)
      const a = await t.account(random.int(0, n + 2) * PRICE, { price: PRICE })
      const pool = Array.from({ length: 5 }, (_, i) => phone(1000 + round * 10 + i))
      for (const p of pool) {
        if (random.chance(0.25)) expect((await t.api('POST', '/opt-outs', a.key, { phone: p })).status).toBe(201)
        if (random.chance(0.4)) await wrote(a.accountId, p, random.pick([1, 23, 30]))
      }
      await leaveRoom(random.int(0, 3))
      const messages = Array.from({ length: n }, () => {
        const to = random.pick(pool)
        const cap = random.chance(0.2) ? { max_price: random.pick([0, PRICE - 1, PRICE]) } : {}
        const kind = random.int(0, 3)
        if (kind === 0) return { to, body: 'free-form', ...cap }
        if (kind === 1) return { to, template_id: approved.id, variables: { '1': 'Budi' }, ...cap }
        if (kind === 2) return { to, template_id: paused.id, variables: { '1': 'Budi' }, ...cap }
        return { to, body: 'free-form, checked again', ...cap }
      })
      const context = { seed, round, messages }
      const quoted = await t.api('POST', '/messages/quote', a.key, { messages })
      expect({ ...context, status: quoted.status }).toMatchObject({ status: 200 })
      const q = quoted.body.data
      const bulk = await t.api('POST', '/messages/bulk', a.key, { messages })
      if (q.would_send > 0 && !q.balance_covers) {
        expect({ ...context, code: bulk.body.code }).toMatchObject({ code: 'INSUFFICIENT_BALANCE' })
        continue
      }
      expect({ ...context, status: bulk.status }).toMatchObject({ status: 200 })
      const said = q.results.map((r: any) => (r.would_send ? 'sent' : r.code))
      const did = bulk.body.data.results.map((r: any) => (r.status === 'sent' ? 'sent' : r.code))
      expect({ ...context, did }).toEqual({ ...context, did: said })
      expect({ ...context, cost: bulk.body.data.total_cost }).toEqual({ ...context, cost: q.total_cost })
    }
  })
})

describe("a campaign's max_price", () => {
  test('a price above it pauses the campaign with PRICE_ABOVE_MAX, nothing charged; within it, it runs', async () => {
    const a = await t.account(1000, { price: PRICE })
    for (const i of [1, 2, 3]) {
      expect((await t.api('POST', '/contacts', a.key, { name: `C${i}`, phone: phone(300 + i), tags: 'vip' })).status).toBe(201)
      await wrote(a.accountId, phone(300 + i), 1)
    }
    const template = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'promo', body: 'Hi {{name}}' })
    const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
    const campaign = async (maxPrice: number) => {
      const draft = await t.api('POST', '/campaigns', a.key, {
        name: `capped ${maxPrice}`,
        template_id: template.body.data.id,
        segment_id: segment.body.data.id,
        max_price: maxPrice,
      })
      expect(draft.status).toBe(201)
      expect(draft.body.data.campaign.max_price).toBe(maxPrice)
      const id: number = draft.body.data.campaign.id
      expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
      await t.runWorker('campaign-runner')
      return (await t.admin('GET', `/campaigns/${id}`)).body.data.campaign
    }
    const before = await snapshot(a.accountId)
    const capped = await campaign(PRICE - 1)
    expect(capped.status).toBe('paused')
    expect(capped.pause_reason).toStartWith('PRICE_ABOVE_MAX: its service messages cost 10, above its max_price of 9')
    expect(await snapshot(a.accountId)).toEqual(before)
    const within = await campaign(PRICE)
    expect(within.status).toBe('sent')
    expect((await snapshot(a.accountId)).balance).toBe(1000 - 3 * PRICE)
  })
})

describe("the dashboard's campaign page", () => {
  test('a draft shows its quote before Run: how many would go, how many skipped and why, the cost by category; nothing taken', async () => {
    const a = await t.account(1000, { price: PRICE })
    for (const i of [1, 2, 3, 4]) {
      expect((await t.api('POST', '/contacts', a.key, { name: `D${i}`, phone: phone(400 + i), tags: 'dash' })).status).toBe(201)
    }
    await wrote(a.accountId, phone(401), 1)
    await wrote(a.accountId, phone(402), 1)
    expect((await t.api('POST', '/opt-outs', a.key, { phone: phone(403) })).status).toBe(201)
    const template = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'dash', body: 'Hi {{name}}' })
    const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'dash', tag: 'dash' })
    const draft = await t.api('POST', '/campaigns', a.key, {
      name: 'quoted',
      template_id: template.body.data.id,
      segment_id: segment.body.data.id,
    })
    const id: number = draft.body.data.campaign.id
    const user = await dashboardUser(t, `quote-${id}@example.com`, 'correct horse battery', a.accountId)
    const before = await snapshot(a.accountId)
    const page = await user.client.get(`/dashboard/campaigns/${id}`)
    expect(page.status).toBe(200)
    expect(page.text).toContain('id="campaign-quote"')
    expect(page.text).toContain('2 would be sent, 2 skipped, of 4 recipients.')
    expect(page.text).toContain('opted out (RECIPIENT_OPTED_OUT)')
    expect(page.text).toContain('24-hour window closed (free-form) (WINDOW_CLOSED)')
    expect(page.text).toMatch(/<td>service<\/td><td>20<\/td>/)
    expect(page.text).toContain('<td id="quote-total">20</td>')
    expect(page.text).toContain('covers it')
    expect(await snapshot(a.accountId)).toEqual(before)
  })
})
