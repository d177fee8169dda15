// A campaign of a WhatsApp template that Meta pauses while the campaign is sending (issue 30), made
// deterministic: 520 recipients (a first batch of 500 and a second of 20, campaigns/engine.ts), one
// hand-off at a time (HANDOFF_CONCURRENCY=1), and the fake Graph API posting Meta's signed PAUSED
// webhook to the service as the 101st message reaches it (before it answers). Meta refuses that one
// (132015, refunded): the service could not know. The rest of the first batch, charged before the
// pause, is set aside at its hand-off (never reaches Meta, stays charged); the campaign pauses with the
// reason and charges nothing more. Meta approves it again (webhook): the scheduler's step resumes the
// campaign and gives the set-aside messages back to recovery, which hands them over; the runner sends
// the second batch. Every recipient but the one Meta refused gets the message once; what the fake
// received is counted against the ledger. Cancelling a campaign with messages set aside refunds them.
// (tests/templates/campaigns.test.ts covers a template paused before the campaign starts.)

import { beforeAll, describe, expect, test } from 'bun:test'
import { money, type TestApp } from '../helpers/app'
import { assign, createSender, META_A } from '../helpers/senders'
import { templateFakes, WABA_A } from '../helpers/templates'
import { TestClock } from '../../src/lib/clock'

const clock = new TestClock()
const fakes = templateFakes({ graph: { clock } })
const { graph } = fakes

const RECIPIENTS = 520
const PAUSED_AT = 101

let t: TestApp
let metaA: number
beforeAll(async () => {
  t = await fakes.start({ clock, runOnClock: true, env: { HANDOFF_CONCURRENCY: '1' } })
  metaA = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
  graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
}, 60_000)

const templateSends = () => graph.requests.filter((r) => r.path.endsWith('/messages'))
/** The campaign's messages set aside for their template: queued, charged, without a lease. */
async function setAside(campaignId: number) {
  const [row] = await t.db.sql<{ n: number }[]>`
    select count(*)::int as n from messages where campaign_id = ${campaignId} and status = 'queued' and set_aside_at is not null`
  return row!.n
}

async function ledger(accountId: number) {
  const [row] = await t.db.sql<{ charges: number; refunds: number; refunded_twice: number }[]>`
    select count(*) filter (where kind = 'charge')::int as charges, count(*) filter (where kind = 'refund')::int as refunds,
           (select count(*)::int from (select message_id from ledger where account_id = ${accountId} and kind = 'refund'
                                       group by message_id having count(*) > 1) twice) as refunded_twice
    from ledger where account_id = ${accountId} and message_id is not null`
  return row!
}

test('paused by Meta midway: what it charged is set aside, not refused; approved again, it resumes by itself, sends those and finishes', async () => {
  const fake = graph.template(WABA_A, {
    name: 'order_ready',
    language: 'id',
    category: 'UTILITY',
    status: 'APPROVED',
    components: [{ type: 'BODY', text: 'Halo {{1}}, pesanan Anda siap diambil.', example: { body_text: [['Budi']] } }],
  })
  expect((await t.admin('POST', `/senders/${metaA}/templates/sync`)).status).toBe(200)
  const shop = await t.account(10_000, { price: 10 })
  await assign(t, shop.accountId, metaA, true)
  const [listed] = (await t.api('GET', '/templates?name=order_ready', shop.key)).body.data.items
  expect(listed.status).toBe('approved')

  // The recipients, straight into the table (the subject is the campaign, not how contacts are made).
  const names = Array.from({ length: RECIPIENTS }, (_, i) => `Pelanggan ${i + 1}`)
  const phones = Array.from({ length: RECIPIENTS }, (_, i) => `+62813${String(i + 1).padStart(8, '0')}`)
  await t.db.sql`
    insert into contacts (account_id, name, phone, tags)
    select ${shop.accountId}, v.name, v.phone, array['vip'] from unnest(${names}::text[], ${phones}::text[]) as v(name, phone)`
  const segment = await t.admin('POST', `/accounts/${shop.accountId}/segments`, { name: 'vips', tag: 'vip' })
  const made = await t.api('POST', '/campaigns', shop.key, {
    name: 'ready for pickup',
    template_id: listed.id,
    segment_id: segment.body.data.id,
    parameters: { variables: { '1': { field: 'name' } } },
  })
  expect(made.status).toBe(201)
  const id: number = made.body.data.campaign.id
  const campaign = async () => (await t.api('GET', `/campaigns/${id}`, shop.key)).body.data

  // Meta pauses the template as the 101st message reaches it: the webhook is in before Meta answers.
  graph.reset()
  let reached = 0
  graph.answer = async (_request, sent) => {
    if (sent?.type !== 'template') return undefined
    if (++reached === PAUSED_AT) {
      const paused = await graph.changeTemplate({ waba: WABA_A, id: fake.id, status: 'PAUSED', reason: 'LOW_QUALITY' })
      expect(paused.status).toBe(200)
    }
    return undefined
  }
  expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
  await t.runWorker('campaign-runner')

  let shown = await campaign()
  expect(shown.campaign.status).toBe('paused')
  expect(shown.campaign.pause_reason).toBe(
    `TEMPLATE_NOT_APPROVED: template ${listed.id} (order_ready, id) is paused (reason: LOW_QUALITY); ` +
      'the campaign resumes by itself once it is approved again',
  )
  // The first batch (500) was charged before the pause: 100 went, Meta refused the 101st (paused, refunded
  // once), and the other 399 were set aside at their hand-off: still charged, never sent to Meta.
  const firstBatch = templateSends()
  expect(firstBatch).toHaveLength(PAUSED_AT)
  expect(firstBatch.filter((r) => r.status === 200)).toHaveLength(PAUSED_AT - 1)
  expect(firstBatch.filter((r) => r.status !== 200).map((r) => r.code)).toEqual([132015])
  const aside = 500 - PAUSED_AT
  expect(shown.stats).toMatchObject({ total: RECIPIENTS, sent: PAUSED_AT - 1, failed: 1 })
  expect(await setAside(id)).toBe(aside)
  expect(await ledger(shop.accountId)).toEqual({ charges: 500, refunds: 1, refunded_twice: 0 })
  expect(await money(t, shop.accountId)).toEqual({ balance: 10_000 - 499 * 10, ledgerSum: 10_000 - 499 * 10 })
  // The 20 recipients of the second batch: not charged, no message of theirs recorded.
  const [unsent] = await t.db.sql<{ n: number }[]>`
    select count(*)::int as n from contacts c where c.account_id = ${shop.accountId}
      and not exists (select 1 from messages m where m.campaign_id = ${id} and m.contact_id = c.id)`
  expect(unsent!.n).toBe(RECIPIENTS - 500)

  // While the template is paused, the scheduler leaves the campaign paused and its messages aside, the
  // runner finds nothing to send, and recovery takes nothing set aside.
  // (Round after round: a message given back to recovery while its template is still paused would be
  // set aside again, and quarantined after a few recoveries.)
  for (let round = 0; round < 4; round++) {
    await t.runWorker('campaign-scheduler')
    expect((await campaign()).campaign.status).toBe('paused')
    await t.runWorker('campaign-runner')
    await clock.advance(60_000)
    await t.runWorker('handoff-recovery')
  }
  expect((await campaign()).campaign.status).toBe('paused')
  expect(templateSends()).toHaveLength(PAUSED_AT)
  expect(await setAside(id)).toBe(aside)
  expect(await ledger(shop.accountId)).toEqual({ charges: 500, refunds: 1, refunded_twice: 0 })

  // Meta approves it again: the campaign resumes by itself, its set-aside messages go, then the rest.
  graph.answer = null
  const approved = await graph.changeTemplate({
    waba: WABA_A,
    id: fake.id,
    status: 'APPROVED',
    time: Math.floor(clock.now().getTime() / 1000) + 60,
  })
  expect(approved.status).toBe(200)
  await t.runWorker('campaign-scheduler')
  expect(await setAside(id)).toBe(0)
  await t.runWorker('handoff-recovery')
  await t.runWorker('campaign-runner')

  shown = await campaign()
  expect(shown.campaign).toMatchObject({ status: 'sent', pause_reason: null })
  expect(shown.stats).toMatchObject({ total: RECIPIENTS, sent: RECIPIENTS - 1, failed: 1 })
  const all = templateSends()
  expect(all).toHaveLength(RECIPIENTS)
  expect(all.filter((r) => r.status === 200)).toHaveLength(RECIPIENTS - 1)
  // Each recipient reached Meta once; the set-aside ones after the approval, with their own values.
  expect(new Set(all.map((r) => r.to)).size).toBe(RECIPIENTS)
  expect(all.slice(PAUSED_AT, 500).every((r) => r.status === 200)).toBe(true)
  expect(await ledger(shop.accountId)).toEqual({ charges: RECIPIENTS, refunds: 1, refunded_twice: 0 })
  expect(await money(t, shop.accountId)).toEqual({
    balance: 10_000 - (RECIPIENTS - 1) * 10,
    ledgerSum: 10_000 - (RECIPIENTS - 1) * 10,
  })
})

describe('messages set aside that will not be sent are refunded', () => {
  /** A campaign of 30 on a template of its own, run until Meta pauses the template at the 6th message. */
  async function pausedCampaign(name: string) {
    const fake = graph.template(WABA_A, {
      name,
      language: 'id',
      category: 'UTILITY',
      status: 'APPROVED',
      components: [{ type: 'BODY', text: 'Halo {{1}}, tagihan Anda sudah terbit.', example: { body_text: [['Budi']] } }],
    })
    expect((await t.admin('POST', `/senders/${metaA}/templates/sync`)).status).toBe(200)
    const shop = await t.account(1_000, { price: 10 })
    await assign(t, shop.accountId, metaA, true)
    const [listed] = (await t.api('GET', `/templates?name=${name}`, shop.key)).body.data.items
    const phones = Array.from({ length: 30 }, (_, i) => `+62814${String(i + 1).padStart(8, '0')}`)
    await t.db.sql`
      insert into contacts (account_id, name, phone, tags)
      select ${shop.accountId}, 'Pelanggan', v.phone, array['all'] from unnest(${phones}::text[]) as v(phone)`
    const segment = await t.admin('POST', `/accounts/${shop.accountId}/segments`, { name: 'all', tag: 'all' })
    const made = await t.api('POST', '/campaigns', shop.key, {
      name,
      template_id: listed.id,
      segment_id: segment.body.data.id,
      parameters: { variables: { '1': { field: 'name' } } },
    })
    const id: number = made.body.data.campaign.id
    graph.reset()
    let reached = 0
    graph.answer = async (_request, sent) => {
      if (sent?.type === 'template' && ++reached === 6) await graph.changeTemplate({ waba: WABA_A, id: fake.id, status: 'PAUSED' })
      return undefined
    }
    await t.admin('POST', `/campaigns/${id}/run`)
    await t.runWorker('campaign-runner')
    graph.answer = null
    expect(await setAside(id)).toBe(24)
    expect(await money(t, shop.accountId)).toEqual({ balance: 1_000 - 29 * 10, ledgerSum: 1_000 - 29 * 10 })
    return { id, shop }
  }

  const refundedWith = (campaignId: number) =>
    t.db.sql<{ error_message: string; n: number }[]>`
      select error_message, count(*)::int as n from messages where campaign_id = ${campaignId} and status = 'failed'
        and refunded_at is not null and set_aside_at is not null group by 1`

  test('its campaign cancelled: each refunded once, none sent, then or later', async () => {
    const { id, shop } = await pausedCampaign('invoice_cancelled')
    expect((await t.admin('POST', `/campaigns/${id}/cancel`)).status).toBe(200)
    expect([...(await refundedWith(id))]).toEqual([
      { error_message: 'its campaign was cancelled while its WhatsApp template was not approved: never sent, refunded', n: 24 },
    ])
    expect(await setAside(id)).toBe(0)
    expect(await money(t, shop.accountId)).toEqual({ balance: 1_000 - 5 * 10, ledgerSum: 1_000 - 5 * 10 })
    expect(await ledger(shop.accountId)).toEqual({ charges: 30, refunds: 25, refunded_twice: 0 })
    await t.runWorker('campaign-scheduler')
    await clock.advance(60_000)
    await t.runWorker('handoff-recovery')
    expect(templateSends()).toHaveLength(6)
  })

  test("its template not approved again within the messages' validity: each refunded once when it runs out", async () => {
    const { id, shop } = await pausedCampaign('invoice_expired')
    await clock.advance(4 * 3_600_000 - 120_000)
    await t.runWorker('campaign-scheduler')
    expect(await setAside(id)).toBe(24)
    await clock.advance(120_000)
    await t.runWorker('campaign-scheduler')
    expect([...(await refundedWith(id))]).toEqual([
      { error_message: "its WhatsApp template was not approved again within the message's validity: never sent, refunded", n: 24 },
    ])
    expect(await money(t, shop.accountId)).toEqual({ balance: 1_000 - 5 * 10, ledgerSum: 1_000 - 5 * 10 })
    expect(await ledger(shop.accountId)).toEqual({ charges: 30, refunds: 25, refunded_twice: 0 })
    await t.runWorker('handoff-recovery')
    expect(templateSends()).toHaveLength(6)
  })
})
