import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { TestClock } from '../../src/lib/clock'
import { drain } from '../helpers/worker-steps'

// A minute behind the real time: what still stamps the database's own now() (a hand-off's sent_at)
// comes after any time this clock reaches. The simulator reports at once: its reports are due as soon
// as the hand-off records them, whichever clock stamps them.
const clock = new TestClock(Math.floor(Date.now() / 1000) * 1000 - 60_000)
let t: TestApp
beforeAll(async () => {
  t = await testApp({ clock, env: { SIM_DELIVERED_MS: '0', SIM_READ_MS: '0' } })
})
afterAll(() => t.close())

/** An account with `contacts` contacts tagged "vip" (and a few untagged), a template and a segment. */
async function setup(balance: number, contacts: number, price = 10) {
  const acct = await t.account(balance, { price })
  const rows = Array.from({ length: contacts }, (_, i) => ({
    name: `Contact ${i}`,
    phone: `+62813${String(i).padStart(8, '0')}`,
    city: i % 2 === 0 ? 'Bandung' : null,
    tags: i % 3 === 0 ? ['VIP', 'x'] : ['vip'],
  }))
  await t.db.sql`
    insert into contacts (account_id, name, phone, city, tags)
    select ${acct.accountId}, v.name, v.phone, v.city, string_to_array(v.tags, ',')
    from unnest(${rows.map((r) => r.name)}::text[], ${rows.map((r) => r.phone)}::text[], ${rows.map((r) => r.city) as string[]}::text[],
                ${rows.map((r) => r.tags.join(','))}::text[]) as v(name, phone, city, tags)`
  await t.api('POST', '/contacts', acct.key, { name: 'Not in segment', phone: '081299999990', tags: 'other' })
  const template = await t.admin('POST', `/accounts/${acct.accountId}/templates`, { name: 'promo', body: 'Hi {{name}} from {{city}}!' })
  const segment = await t.admin('POST', `/accounts/${acct.accountId}/segments`, { name: 'vips', tag: 'vip' })
  expect([template.status, segment.status]).toEqual([201, 201])
  return { ...acct, templateId: template.body.data.id, segmentId: segment.body.data.id }
}

async function draft(a: { key: string; templateId: number; segmentId: number }, extra: Record<string, unknown> = {}) {
  const res = await t.api('POST', '/campaigns', a.key, {
    name: 'November promo',
    template_id: a.templateId,
    segment_id: a.segmentId,
    ...extra,
  })
  expect(res.status).toBe(201)
  return res.body.data.campaign.id as number
}

/** The runner's steps (sending what is sending), then the simulator's reports. */
async function sendAll() {
  await drain(t, clock, 'campaign-runner')
  await drain(t, clock, 'simulator-reports')
}

const stats = async (key: string, id: number) => (await t.api('GET', `/campaigns/${id}`, key)).body.data

describe('campaign engine', () => {
  test('500 contacts: one message each, rendered, stats move to delivered/read, ledger charges 500 × price', async () => {
    const a = await setup(10_000, 500, 10)
    const id = await draft(a)
    const run = await t.admin('POST', `/campaigns/${id}/run`)
    expect(run.status).toBe(200)
    expect(['sending', 'sent']).toContain(run.body.data.campaign.status)

    await sendAll()
    const finished = await stats(a.key, id)
    expect(finished.campaign.status).toBe('sent')
    expect(finished.stats).toEqual({
      total: 500,
      sent: 500,
      delivered: 500,
      read: 500,
      failed: 0,
      window_closed: 0,
      opted_out: 0,
      missing_values: 0,
      user_id_only: 0,
    })

    const perContact = await t.db.sql<{ n: number; contacts: number }[]>`
      select count(*)::int as n, count(distinct contact_id)::int as contacts from messages where campaign_id = ${id}`
    expect(perContact[0]).toEqual({ n: 500, contacts: 500 })
    const [sample] = await t.db.sql<{ body: string }[]>`
      select m.body from messages m join contacts c on c.id = m.contact_id where m.campaign_id = ${id} and c.name = 'Contact 2'`
    expect(sample!.body).toBe('Hi Contact 2 from Bandung!')
    const [odd] = await t.db.sql<{ body: string }[]>`
      select m.body from messages m join contacts c on c.id = m.contact_id where m.campaign_id = ${id} and c.name = 'Contact 1'`
    expect(odd!.body).toBe('Hi Contact 1 from !')
    expect(await money(t, a.accountId)).toEqual({ balance: 10_000 - 5000, ledgerSum: 10_000 - 5000 })
    const [charges] = await t.db
      .sql`select count(*)::int as n, sum(amount)::int as total from ledger where account_id = ${a.accountId} and kind = 'charge'`
    expect(charges).toEqual({ n: 500, total: -5000 })

    // campaign messages are listed like any other
    const listed = await t.api('GET', '/messages?limit=1', a.key)
    expect(listed.body.data.total).toBe(500)
    expect(listed.body.data.items[0].campaign_id).toBe(id)
  }, 60_000)

  test('balance for 120 of 500: pauses at 120, resume after a top-up finishes the rest with no duplicate', async () => {
    const a = await setup(1200, 500, 10)
    const id = await draft(a)
    await t.admin('POST', `/campaigns/${id}/run`)
    await sendAll()
    const paused = await stats(a.key, id)
    expect(paused.campaign.status).toBe('paused')
    expect(paused.campaign.pause_reason).toMatch(/insufficient balance/)
    expect(paused.stats.sent).toBe(120)
    expect(await money(t, a.accountId)).toEqual({ balance: 0, ledgerSum: 0 })

    const early = await t.admin('POST', `/campaigns/${id}/run`)
    expect([early.status, early.body.code]).toEqual([409, 'CONFLICT'])
    await t.admin('POST', `/accounts/${a.accountId}/topups`, { amount: 5000 })
    const resumed = await t.admin('POST', `/campaigns/${id}/resume`)
    expect(resumed.status).toBe(200)
    await sendAll()
    const done = await stats(a.key, id)
    expect(done.stats.total).toBe(500)
    expect(done.stats.sent).toBe(500)
    const [counts] = await t.db
      .sql`select count(*)::int as n, count(distinct contact_id)::int as contacts from messages where campaign_id = ${id}`
    expect(counts).toEqual({ n: 500, contacts: 500 })
    expect(await money(t, a.accountId)).toEqual({ balance: 1200 + 5000 - 5000, ledgerSum: 1200 })
    expect((await t.admin('POST', `/campaigns/${id}/resume`)).status).toBe(409)
  }, 60_000)

  test('a scheduled campaign starts at its time, not before', async () => {
    const a = await setup(1000, 5, 10)
    const at = new Date(clock.now().getTime() + 2500)
    const when = at.toISOString().slice(0, 19).replace('T', ' ')
    const id = await draft(a, { schedule_at: when })
    const run = await t.admin('POST', `/campaigns/${id}/run`)
    expect(run.body.data.campaign.status).toBe('scheduled')
    await clock.advance(1000)
    await t.runWorker('campaign-scheduler')
    await sendAll()
    const before = await stats(a.key, id)
    expect(before.campaign.status).toBe('scheduled')
    expect(before.stats.sent).toBe(0)
    await clock.advanceTo(Math.floor(at.getTime() / 1000) * 1000)
    await t.runWorker('campaign-scheduler')
    await sendAll()
    const started = await stats(a.key, id)
    expect(started.campaign.status).toBe('sent')
    expect(started.stats.sent).toBe(5)
    const [first] = await t.db.sql<{ sent_at: Date }[]>`select min(sent_at) as sent_at from messages where campaign_id = ${id}`
    // schedule_at has second precision
    expect(first!.sent_at.getTime()).toBeGreaterThanOrEqual(Math.floor(at.getTime() / 1000) * 1000)
  }, 30_000)

  test('cancel stops a campaign; run, resume and cancel answer 409 or 404 when they do not apply', async () => {
    const a = await setup(0, 3, 10)
    const id = await draft(a)
    await t.admin('POST', `/campaigns/${id}/run`)
    await sendAll()
    expect((await stats(a.key, id)).campaign.status).toBe('paused')
    const cancelled = await t.admin('POST', `/campaigns/${id}/cancel`)
    expect(cancelled.body.data.campaign.status).toBe('cancelled')
    expect((await t.admin('POST', `/campaigns/${id}/cancel`)).status).toBe(409)
    expect((await t.admin('POST', `/campaigns/${id}/resume`)).status).toBe(409)
    expect((await t.admin('POST', '/campaigns/999999/run')).status).toBe(404)
    expect((await t.admin('POST', '/campaigns/abc/run')).status).toBe(400)
  })

  test('tenant isolation: another account cannot use or see templates, segments or campaigns', async () => {
    const a = await setup(1000, 2, 10)
    const b = await t.account(1000)
    const theirs = await t.api('POST', '/campaigns', b.key, { name: 'x', template_id: a.templateId, segment_id: a.segmentId })
    expect([theirs.status, theirs.body.code]).toEqual([422, 'VALIDATION_ERROR'])
    const id = await draft(a)
    expect((await t.api('GET', `/campaigns/${id}`, b.key)).status).toBe(404)
    expect((await t.api('GET', '/campaigns', b.key)).body.data.total).toBe(0)
  })
})
