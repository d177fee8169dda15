// The messaging limit (issue 19, part 5) through the API: a business-initiated message (the customer's
// 24-hour window with the sender is closed) uses its sender's budget, a recipient once per rolling 24
// hours; past the tier, single sends are 429 MESSAGING_LIMIT and bulk entries fail, nothing charged; a
// campaign sends what fits, pauses, and resumes by itself once uses age out. Uses already spent are
// seeded in SQL (a tier is one of WhatsApp's: 250 is the smallest), at the test clock's time, which the
// test moves to let uses and windows age.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { money, testApp, type TestApp } from '../helpers/app'

const PRICE = 10
const HOUR = 3_600_000
const clock = new TestClock()
let t: TestApp
beforeAll(async () => {
  t = await testApp({ clock, runOnClock: true, env: { MESSAGING_LIMIT: '250' } })
})
afterAll(() => t.close())
beforeEach(async () => {
  await t.db.sql`delete from messaging_uses`
})

const phone = (i: number) => `+62812${String(i).padStart(8, '0')}`

/** `n` recipients counted in `budget` `hoursAgo` hours ago on the clock (uses spent by earlier sends). */
async function seedUses(budget: string, n: number, hoursAgo = 1, from = 900_000) {
  await t.db.sql`insert into messaging_budgets (budget) values (${budget}) on conflict do nothing`
  await t.db.sql`
    insert into messaging_uses (budget, phone, first_at)
    select ${budget}, '+62812' || lpad((${from} + g)::text, 8, '0'), ${clock.now()}::timestamptz - make_interval(hours => ${hoursAgo})
    from generate_series(1, ${n}) g`
}

const send = (key: string, to: string, extra: Record<string, unknown> = {}) =>
  t.api('POST', '/messages/send', key, { to, body: 'Promo November', ...extra })
const messagesOf = async (accountId: number) =>
  (await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where account_id = ${accountId}`)[0]!.n
const used = async (budget: string) =>
  (
    await t.db.sql<{ n: number }[]>`
      select count(distinct phone)::int as n from messaging_uses
      where budget = ${budget} and first_at > ${clock.now()}::timestamptz - interval '24 hours'`
  )[0]!.n

describe('single sends', () => {
  test('past the budget: 429 MESSAGING_LIMIT with the tier, the use and when it frees, Retry-After, nothing charged', async () => {
    const a = await t.account(100 * PRICE, { price: PRICE })
    await seedUses('default', 249, 2)
    expect((await send(a.key, phone(1))).status).toBe(200)
    const refused = await send(a.key, phone(2))
    expect(refused.status).toBe(429)
    expect(refused.body.code).toBe('MESSAGING_LIMIT')
    expect(refused.body.error).toContain('250 unique recipients')
    expect(refused.body.error).toContain('250 used')
    expect(refused.body.error).toMatch(/the oldest frees at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/)
    expect(refused.body.error).toContain('nothing was charged')
    // The oldest use was 2 hours ago: it frees in about 22 hours.
    const retryAfter = Number(refused.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(21 * 3600)
    expect(retryAfter).toBeLessThanOrEqual(22 * 3600)
    expect(await messagesOf(a.accountId)).toBe(1)
    expect(await money(t, a.accountId)).toEqual({ balance: 99 * PRICE, ledgerSum: 99 * PRICE })
    expect(await used('default')).toBe(250)
  })

  test('the same phone twice within 24 hours counts once', async () => {
    const a = await t.account(100 * PRICE, { price: PRICE })
    await seedUses('default', 249)
    expect((await send(a.key, phone(10))).status).toBe(200)
    expect((await send(a.key, phone(10), { body: 'again' })).status).toBe(200)
    expect((await send(a.key, phone(10).replace('+62', '0'), { body: 'and again' })).status).toBe(200)
    expect((await send(a.key, phone(11))).status).toBe(429)
    expect(await used('default')).toBe(250)
    expect(await messagesOf(a.accountId)).toBe(3)
  })

  test('a customer whose window is open (they wrote within 24 hours) uses no budget', async () => {
    const a = await t.account(100 * PRICE, { price: PRICE })
    await seedUses('default', 250)
    expect((await send(a.key, phone(20))).status).toBe(429)
    const wrote = await t.admin('POST', '/simulator/inbound', { phone: phone(20), body: 'halo, masih ada promo?' })
    expect(wrote.status).toBe(200)
    const answered = await send(a.key, phone(20))
    expect(answered.status).toBe(200)
    expect(await used('default')).toBe(250)
    // Once the window closed (their message 25 hours old) the budget applies again: full again by then
    // with other recipients' uses (those seeded above aged out with the window).
    await clock.advance(25 * HOUR)
    await seedUses('default', 250, 1, 800_000)
    expect((await send(a.key, phone(20))).status).toBe(429)
  })

  test('uses older than 24 hours free the budget', async () => {
    const a = await t.account(100 * PRICE, { price: PRICE })
    await seedUses('default', 250, 25)
    expect((await send(a.key, phone(30))).status).toBe(200)
    expect(await used('default')).toBe(1)
  })

  test('a send refused for its balance leaves no use behind', async () => {
    const poor = await t.account(0, { price: PRICE })
    await seedUses('default', 249)
    const refused = await send(poor.key, phone(40))
    expect(refused.status).toBe(402)
    expect(await used('default')).toBe(249)
    const [held] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from messaging_uses where phone = ${phone(40)}`
    expect(held!.n).toBe(0)
  })

  test('a held use whose request died before charging is dropped by the next taker; one whose message was charged is kept', async () => {
    const a = await t.account(100 * PRICE, { price: PRICE })
    await seedUses('default', 248)
    // Two holds that ran out: one of a request that never charged, one of a request whose message exists.
    const [m] = await t.db.sql<{ request_token: string }[]>`
      insert into messages (account_id, phone, body, status, cost, request_token, request_item, valid_until)
      values (${a.accountId}, ${phone(51)}, 'x', 'sent', 0, gen_random_uuid(), 1, now()) returning request_token`
    await t.db.sql`
      insert into messaging_uses (budget, phone, first_at, request_token, held_until) values
        ('default', ${phone(50)}, ${clock.now()}, gen_random_uuid(), ${clock.now()}::timestamptz - interval '1 second'),
        ('default', ${phone(51)}, ${clock.now()}, ${m!.request_token}, ${clock.now()}::timestamptz - interval '1 second')`
    expect(await used('default')).toBe(250)
    expect((await send(a.key, phone(52))).status).toBe(200)
    expect(await used('default')).toBe(250)
    const kept = await t.db.sql<{ phone: string }[]>`select phone from messaging_uses where phone in (${phone(50)}, ${phone(51)})`
    expect(kept.map((r) => r.phone)).toEqual([phone(51)])
  })
})

describe('bulk', () => {
  test('a bulk of 251 new recipients: 250 sent, the last fails MESSAGING_LIMIT uncharged', async () => {
    const a = await t.account(1000 * PRICE, { price: PRICE })
    const messages = Array.from({ length: 251 }, (_, i) => ({ to: phone(1000 + i), body: `Promo ${i}` }))
    const answer = await t.api('POST', '/messages/bulk', a.key, { messages })
    expect(answer.status).toBe(200)
    expect({ sent: answer.body.data.sent, failed: answer.body.data.failed, cost: answer.body.data.total_cost }).toEqual({
      sent: 250,
      failed: 1,
      cost: 250 * PRICE,
    })
    const last = answer.body.data.results[250]
    expect(last).toMatchObject({ to: phone(1250), status: 'failed', code: 'MESSAGING_LIMIT' })
    expect(last.error).toContain('250 unique recipients')
    expect(await money(t, a.accountId)).toEqual({ balance: 750 * PRICE, ledgerSum: 750 * PRICE })
    expect(await messagesOf(a.accountId)).toBe(250)
    expect(await used('default')).toBe(250)
    // A phone already counted still goes, a new one does not.
    const again = await t.api('POST', '/messages/bulk', a.key, {
      messages: [
        { to: phone(1000), body: 'again' },
        { to: phone(2000), body: 'new' },
      ],
    })
    expect(again.body.data.results.map((r: any) => r.status)).toEqual(['sent', 'failed'])
    expect(again.body.data.total_cost).toBe(PRICE)
  }, 60_000)

  test('an entry its charge leaves out (its price rose above its max_price meanwhile) counts no recipient; the charged ones do', async () => {
    const a = await t.account(100 * PRICE, { price: PRICE })
    // The price doubles between the bulk's checks and its charge: as its hold records the first use.
    await t.db.sql.unsafe(`
      create function raise_price() returns trigger language plpgsql as $$
      begin
        update prices set cost_per_message = ${2 * PRICE} where account_id = ${a.accountId};
        return new;
      end $$;
      create trigger raise_price after insert on messaging_uses for each row
        when (new.phone = '${phone(4000)}') execute function raise_price();`)
    try {
      const answer = await t.api('POST', '/messages/bulk', a.key, {
        messages: [
          { to: phone(4000), body: 'x' },
          { to: phone(4001), body: 'x', max_price: PRICE },
        ],
      })
      expect(answer.status).toBe(200)
      expect(answer.body.data.results.map((r: { status: string; code?: string }) => r.code ?? r.status)).toEqual([
        'sent',
        'PRICE_ABOVE_MAX',
      ])
      const counted = await t.db.sql<{ phone: string }[]>`
        select phone from messaging_uses where phone in (${phone(4000)}, ${phone(4001)})`
      expect(counted.map((r) => r.phone)).toEqual([phone(4000)])
    } finally {
      await t.db.sql.unsafe('drop trigger raise_price on messaging_uses; drop function raise_price()')
    }
  })

  test('a bulk refused for its balance holds no budget', async () => {
    const a = await t.account(PRICE, { price: PRICE })
    await seedUses('default', 240)
    const answer = await t.api('POST', '/messages/bulk', a.key, {
      messages: [phone(3000), phone(3001)].map((to) => ({ to, body: 'x' })),
    })
    expect(answer.status).toBe(402)
    expect(await used('default')).toBe(240)
  })
})

describe('stored senders and portfolios', () => {
  async function sender(number: string, body: Record<string, unknown> = {}) {
    const created = await t.admin('POST', '/senders', { provider: 'simulator', name: 'Toko', number, ...body })
    expect(created.status).toBe(201)
    return created.body.data.id as number
  }

  test('tiers are validated: one of 250, 2000, 10000, 100000 or null; a portfolio must exist', async () => {
    const bad = await t.admin('POST', '/senders', { provider: 'simulator', name: 'x', number: '+6281100009001', messaging_limit: 300 })
    expect(bad.status).toBe(422)
    expect(bad.body.error).toContain('messaging_limit: must be one of 250, 2000, 10000, 100000')
    const nowhere = await t.admin('POST', '/senders', { provider: 'simulator', name: 'x', number: '+6281100009001', portfolio: 'Nope' })
    expect(nowhere.status).toBe(422)
    expect(nowhere.body.error).toContain('portfolio: no portfolio is named "Nope"')
    const badPortfolio = await t.admin('POST', '/portfolios', { name: 'Group', messaging_limit: 1 })
    expect(badPortfolio.status).toBe(422)
  })

  test("a sender's own tier, shown with its use", async () => {
    const a = await t.account(100 * PRICE, { price: PRICE })
    const id = await sender('+6281100009002', { messaging_limit: 250 })
    await t.admin('PUT', `/accounts/${a.accountId}/senders/${id}`)
    await seedUses(`sender:${id}`, 250, 3)
    const refused = await send(a.key, phone(60))
    expect(refused.status).toBe(429)
    expect(refused.body.error).toContain(`sender ${id}'s budget`)
    const shown = await t.admin('GET', `/senders/${id}`)
    expect(shown.body.data).toMatchObject({ messaging_limit: 250, portfolio: null, budget: { messaging_limit: 250, used: 250 } })
    expect(shown.body.data.budget.frees_at).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    // Unlimited: it goes, and nothing is counted.
    expect((await t.admin('PATCH', `/senders/${id}`, { messaging_limit: null })).status).toBe(200)
    expect((await send(a.key, phone(60))).status).toBe(200)
    expect(await used(`sender:${id}`)).toBe(250)
  })

  test('two senders in one portfolio share its budget and its tier', async () => {
    const portfolio = await t.admin('POST', '/portfolios', { name: 'Toko Maju group', messaging_limit: 250 })
    expect(portfolio.status).toBe(201)
    const pid = portfolio.body.data.id
    const one = await sender('+6281100009003', { portfolio: 'Toko Maju group', messaging_limit: 100000 })
    const two = await sender('+6281100009004')
    expect((await t.admin('PATCH', `/senders/${two}`, { portfolio: 'Toko Maju group' })).status).toBe(200)
    const a = await t.account(100 * PRICE, { price: PRICE })
    await t.admin('PUT', `/accounts/${a.accountId}/senders/${one}`)
    await t.admin('PUT', `/accounts/${a.accountId}/senders/${two}`)
    await seedUses(`portfolio:${pid}`, 248)
    expect((await send(a.key, phone(70), { from: String(one) })).status).toBe(200)
    expect((await send(a.key, phone(71), { from: String(two) })).status).toBe(200)
    const refused = await send(a.key, phone(72), { from: String(one) })
    expect(refused.status).toBe(429)
    expect(refused.body.error).toContain('portfolio "Toko Maju group"')
    // The same phone through the other sender of the portfolio: counted already.
    expect((await send(a.key, phone(70), { from: String(two) })).status).toBe(200)
    const listed = await t.admin('GET', `/portfolios/${pid}`)
    expect(listed.body.data).toMatchObject({ name: 'Toko Maju group', senders: [one, two], messaging_limit: 250, used: 250 })
    // Raised to the next tier: room again.
    expect((await t.admin('PATCH', `/portfolios/${pid}`, { messaging_limit: 2000 })).status).toBe(200)
    expect((await send(a.key, phone(72), { from: String(one) })).status).toBe(200)
  })
})

describe('campaigns', () => {
  test('starts with what fits, pauses with MESSAGING_LIMIT, resumes by itself once uses age out; counted phones use no budget', async () => {
    const a = await t.account(1000 * PRICE, { price: PRICE })
    const phones = Array.from({ length: 6 }, (_, i) => phone(5000 + i))
    await t.db.sql`
      insert into contacts (account_id, name, phone, tags)
      select ${a.accountId}, 'Contact ' || p, p, array['vip'] from unnest(${phones}::text[]) as p`
    const template = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'promo', body: 'Hi {{name}}!' })
    const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
    const created = await t.api('POST', '/campaigns', a.key, {
      name: 'Limited',
      template_id: template.body.data.id,
      segment_id: segment.body.data.id,
    })
    const id = created.body.data.campaign.id
    // 246 counted 23 hours ago, and the campaign's fourth contact 1 hour ago: room for 3 new ones.
    await seedUses('default', 246, 23)
    await t.db.sql`
      insert into messaging_uses (budget, phone, first_at) values ('default', ${phones[3]!}, ${clock.now()}::timestamptz - interval '1 hour')`
    expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
    await t.runWorker('campaign-runner')
    const paused = (await t.api('GET', `/campaigns/${id}`, a.key)).body.data.campaign
    expect(paused.status).toBe('paused')
    expect(paused.pause_reason).toMatch(/^MESSAGING_LIMIT: /)
    expect(paused.pause_reason).toContain('resumes by itself')
    const sentTo = async () =>
      (await t.db.sql<{ phone: string }[]>`select phone from messages where campaign_id = ${id} order by phone`).map((r) => r.phone)
    // The first three new ones, and the fourth (counted already); not the last two.
    expect(await sentTo()).toEqual(phones.slice(0, 4))
    expect(await used('default')).toBe(250)
    expect(await money(t, a.accountId)).toEqual({ balance: 996 * PRICE, ledgerSum: 996 * PRICE })

    // Nothing frees yet: the scheduler leaves it paused.
    await t.runWorker('campaign-scheduler')
    expect((await t.api('GET', `/campaigns/${id}`, a.key)).body.data.campaign.status).toBe('paused')
    // An hour later the 246 are 24 hours old and age out: it resumes by itself and finishes.
    await clock.advance(HOUR)
    await t.runWorker('campaign-scheduler')
    expect((await t.api('GET', `/campaigns/${id}`, a.key)).body.data.campaign.status).toBe('sending')
    await t.runWorker('campaign-runner')
    expect((await t.api('GET', `/campaigns/${id}`, a.key)).body.data.campaign.status).toBe('sent')
    expect(await sentTo()).toEqual(phones)
  }, 60_000)

  test('a campaign paused for another reason is not resumed by the scheduler', async () => {
    const a = await t.account(0, { price: PRICE })
    const template = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'p', body: 'Hi' })
    const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 's', tag: 'vip' })
    const created = await t.api('POST', '/campaigns', a.key, {
      name: 'x',
      template_id: template.body.data.id,
      segment_id: segment.body.data.id,
    })
    const id = created.body.data.campaign.id
    await t.db.sql`update campaigns set status = 'paused', pause_reason = 'paused by an operator' where id = ${id}`
    await t.runWorker('campaign-scheduler')
    expect((await t.api('GET', `/campaigns/${id}`, a.key)).body.data.campaign.status).toBe('paused')
  })
})

describe('unlimited (the default)', () => {
  test('MESSAGING_LIMIT unset: nothing is counted', async () => {
    const u = await testApp()
    try {
      expect(u.config.messagingLimit).toBeNull()
      const a = await u.account(10 * PRICE, { price: PRICE })
      expect((await u.api('POST', '/messages/send', a.key, { to: phone(1), body: 'x' })).status).toBe(200)
      const [row] = await u.db.sql<{ n: number }[]>`select count(*)::int as n from messaging_uses`
      expect(row!.n).toBe(0)
    } finally {
      await u.close()
    }
  })
})
