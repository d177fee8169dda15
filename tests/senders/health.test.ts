// Number health steers the sends (issue 32 §4): Meta's business_capability_update, account_update and
// phone_number_quality_update, posted signed by the fake Graph API in the Cloud API's shapes to the real
// webhook route, set a sender's messaging limit, restrictions, flag and throughput; the number's
// quality_rating is read at each check. A restricted sender's sends are refused before charging
// (SENDER_RESTRICTED), a flagged or restricted sender's campaigns pause and resume on recovery, each
// change is in GET /admin/v1/senders/{id}'s history and a `sender.status_changed` event, and a tenant's
// own app secret changes only its own senders.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { boundTemplate } from '../helpers/templates'
import { assign, fourSenders, META_A, META_B, registerFakes, sendersEnv } from '../helpers/senders'
import { deliverAll } from '../helpers/delivery'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { dashboardUser } from '../helpers/web'
import { TestClock } from '../../src/lib/clock'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)
const clock = new TestClock()

const WABA_A = META_A.credentials.business_account_id
const WABA_B = META_B.credentials.business_account_id

let t: TestApp
let tls: TestTls
let rx: Receiver
let ids: Awaited<ReturnType<typeof fourSenders>>
/** Meta A's account (the victim of forgeries) and Meta B's (holds Meta B's secret: the attacker). */
let shopA: { accountId: number; key: string; keyId: number; secret: string }
let shopB: { accountId: number; key: string; keyId: number }

beforeAll(async () => {
  tls = makeTestTls()
  rx = startReceiver(tls)
  t = await testApp({
    env: sendersEnv(twilio, graph, { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile }),
    clock,
    runOnClock: true,
  })
  graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  const a = await t.account(10_000, { price: 100 })
  shopB = await t.account(10_000, { price: 100 })
  await assign(t, a.accountId, ids.metaA, true)
  await assign(t, shopB.accountId, ids.metaB, true)
  const registered = await t.api('POST', '/webhook', a.key, { url: rx.url('localhost', '/health'), events: ['sender.status_changed'] })
  expect(registered.body.data.events).toEqual(['sender.status_changed'])
  shopA = { ...a, secret: registered.body.data.signing_secret }
}, 60_000)
beforeEach(() => graph.reset())
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
  rx.stop()
  tls.remove()
})

/** Meta says it, signed with the app secret of the account's own senders unless the test gives another. */
const say = (o: Parameters<typeof graph.sayHealth>[0]) =>
  graph.sayHealth({ appSecret: o.waba === WABA_A ? META_A.credentials.app_secret : META_B.credentials.app_secret, ...o })
const sender = async (id: number) => (await t.admin('GET', `/senders/${id}`)).body.data
async function said(response: Promise<Response>) {
  const answer = await response
  expect(answer.status).toBe(200)
  return ((await answer.json()) as { data: { health?: number } }).data
}
/** Meta's time now (whole seconds), `plus` seconds later. */
const metaTime = (plus = 0) => Math.floor(clock.now().getTime() / 1000) + plus
const send = (to = '081234567001') => t.api('POST', '/messages/send', shopA.key, { to, body: 'Halo' })

describe("Meta's health webhooks", () => {
  test('business_capability_update sets the messaging limit in force (no typing it after); the history and the event say it', async () => {
    expect((await said(say({ waba: WABA_A, capability: 2000 }))).health).toBe(1)
    const a = await sender(ids.metaA)
    expect(a.messaging_limit).toBe(2000)
    expect(a.budget.messaging_limit).toBe(2000)
    expect(a.health).toMatchObject({ messaging_limit_source: 'meta' })
    expect(a.health.history[0]).toMatchObject({ field: 'messaging_limit', old: 'unlimited', new: '2000', source: 'meta' })
    // A repeat changes nothing; -1 is unlimited.
    expect((await said(say({ waba: WABA_A, capability: 2000 }))).health).toBe(0)
    expect((await said(say({ waba: WABA_A, capability: -1 }))).health).toBe(1)
    expect((await sender(ids.metaA)).budget.messaging_limit).toBeNull()
    // Meta said it: an operator cannot type a tier any more.
    const typed = await t.admin('PATCH', `/senders/${ids.metaA}`, { messaging_limit: 250 })
    expect([typed.status, typed.body.code]).toEqual([422, 'VALIDATION_ERROR'])
    expect(typed.body.error).toContain('Meta sets')
    await deliverAll(t)
    const events = rx.requests
      .filter((r) => r.path === '/health')
      .map((r) => new Webhook(shopA.secret).verify(r.body, r.headers) as { event: string; data: Record<string, unknown> })
    expect(events.map((e) => [e.event, e.data.sender_id, e.data.field, e.data.old, e.data.new])).toEqual([
      ['sender.status_changed', ids.metaA, 'messaging_limit', 'unlimited', '2000'],
      ['sender.status_changed', ids.metaA, 'messaging_limit', '2000', 'unlimited'],
    ])
  })

  test("the legacy current_limit tiers still read; Meta's order, not the delivery's", async () => {
    const quality = { phoneNumberId: META_B.credentials.phone_number_id, event: 'UPGRADE', current_limit: 'TIER_10K', old_limit: 'TIER_2K' }
    expect((await said(say({ waba: WABA_B, quality, time: metaTime(20) }))).health).toBe(1)
    expect((await sender(ids.metaB)).messaging_limit).toBe(10_000)
    // An older notification delivered late changes nothing.
    const older = { ...quality, event: 'DOWNGRADE', current_limit: 'TIER_250' }
    expect((await said(say({ waba: WABA_B, quality: older, time: metaTime(10) }))).health).toBe(0)
    expect((await sender(ids.metaB)).messaging_limit).toBe(10_000)
    // THROUGHPUT_UPGRADE speaks of throughput: its TIER_UNLIMITED is not a messaging limit; the default pace follows.
    const upgrade = { phoneNumberId: META_B.credentials.phone_number_id, event: 'THROUGHPUT_UPGRADE', current_limit: 'TIER_UNLIMITED' }
    expect((await said(say({ waba: WABA_B, quality: upgrade, time: metaTime(30) }))).health).toBe(1)
    const b = await sender(ids.metaB)
    expect([b.messaging_limit, b.health.throughput, b.rate_per_second]).toEqual([10_000, 'high', 1000])
  })

  test('a restriction refuses the sends it forbids before charging; lifted, they go', async () => {
    const before = await money(t, shopA.accountId)
    const expiration = metaTime(3600)
    await said(say({ waba: WABA_A, restrictions: [{ restriction_type: 'RESTRICTED_CUSTOMER_INITIATED_MESSAGING', expiration }] }))
    expect((await sender(ids.metaA)).health).toMatchObject({ restricted: 'all' })
    const refused = await send()
    expect([refused.status, refused.body.code]).toEqual([422, 'SENDER_RESTRICTED'])
    expect(refused.body.error).toContain('nothing was charged')
    const bulk = await t.api('POST', '/messages/bulk', shopA.key, { messages: [{ to: '081234567002', body: 'x' }] })
    expect(bulk.body.data.results[0]).toMatchObject({ status: 'failed', code: 'SENDER_RESTRICTED' })
    const quote = await t.api('POST', '/messages/quote', shopA.key, { to: '081234567002', body: 'x' })
    expect(quote.body.data.results[0]).toMatchObject({ would_send: false, code: 'SENDER_RESTRICTED' })
    expect(await money(t, shopA.accountId)).toEqual(before)
    expect(graph.requests).toHaveLength(0)
    // Business-initiated only: a customer who wrote within 24 hours can be answered; another cannot.
    await said(say({ waba: WABA_A, restrictions: [{ restriction_type: 'RESTRICTED_BIZ_INITIATED_MESSAGING' }] }))
    await graph.customerWrites({ phoneNumberId: META_A.credentials.phone_number_id, from: '6281234567003', text: 'halo' })
    expect((await send('081234567003')).status).toBe(200)
    expect((await send('081234567004')).body.code).toBe('SENDER_RESTRICTED')
    // Lifted (ACCOUNT_RESTRICTION without restriction_info): sends go again.
    await said(say({ waba: WABA_A, restrictions: [] }))
    expect((await sender(ids.metaA)).health).toMatchObject({ restricted: null, restrictions: [] })
    expect((await send()).status).toBe(200)
  })

  test('a restriction ends by itself when its expiration passes', async () => {
    await said(
      say({ waba: WABA_A, restrictions: [{ restriction_type: 'RESTRICTED_CUSTOMER_INITIATED_MESSAGING', expiration: metaTime(600) }] }),
    )
    expect((await send()).body.code).toBe('SENDER_RESTRICTED')
    await clock.advance(601_000)
    const after = await send()
    expect([after.status, after.body.error]).toEqual([200, undefined])
    await said(say({ waba: WABA_A, restrictions: [] }))
  })

  test('a flagged sender pauses its campaigns, charging nothing more; unflagged, they resume by themselves', async () => {
    const a = await boundTemplate(t, 'Promo {{name}}', {}, [
      { name: 'Dodi', phone: '081234500011' },
      { name: 'Eka', phone: '081234500012' },
    ])
    await assign(t, a.accountId, ids.metaA, true)
    const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
    const created = await t.api('POST', '/campaigns', a.key, { name: 'promo', template_id: a.templateId, segment_id: segment.body.data.id })
    const id = created.body.data.campaign.id
    const before = await money(t, a.accountId)
    const flagged = { phoneNumberId: META_A.credentials.phone_number_id, event: 'FLAGGED', current_limit: 'TIER_2K' }
    await said(say({ waba: WABA_A, quality: flagged }))
    expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
    await t.runWorker('campaign-runner')
    const paused = (await t.admin('GET', `/campaigns/${id}`)).body.data.campaign
    expect(paused.status).toBe('paused')
    expect(paused.pause_reason).toStartWith('SENDER_FLAGGED:')
    expect(await money(t, a.accountId)).toEqual(before)
    expect(graph.requests).toHaveLength(0)
    // Still flagged: the scheduler leaves it paused.
    await t.runWorker('campaign-scheduler')
    expect((await t.admin('GET', `/campaigns/${id}`)).body.data.campaign.status).toBe('paused')
    const unflagged = { phoneNumberId: META_A.credentials.phone_number_id, event: 'UNFLAGGED', current_limit: 'TIER_2K' }
    await clock.advance(1000)
    await said(say({ waba: WABA_A, quality: unflagged }))
    await t.runWorker('campaign-scheduler')
    await t.runWorker('campaign-runner')
    expect((await t.admin('GET', `/campaigns/${id}`)).body.data.campaign.status).toBe('sent')
    expect(graph.requests).toHaveLength(2)
    const history = (await sender(ids.metaA)).health.history.filter((h: { field: string }) => h.field === 'flagged')
    expect(history.map((h: { old: string; new: string }) => [h.old, h.new])).toEqual([
      ['true', 'false'],
      ['false', 'true'],
    ])
  })

  test("a check reads the number's quality_rating; GREEN clears a flag", async () => {
    graph.phones.get(META_B.credentials.phone_number_id)!.quality_rating = 'YELLOW'
    const checked = await t.admin('POST', `/senders/${ids.metaB}/check`)
    expect(checked.body.data.health.quality).toBe('yellow')
    expect(checked.body.data.health.history[0]).toMatchObject({ field: 'quality', new: 'yellow', source: 'check' })
    graph.phones.get(META_B.credentials.phone_number_id)!.quality_rating = 'GREEN'
  })
})

describe('a tenant signing with its own app secret', () => {
  test("changes none of another tenant's senders: not the limit, not a restriction, not a flag", async () => {
    const attacker = META_B.credentials.app_secret
    const before = await sender(ids.metaA)
    const own = await sender(ids.metaB)
    const forged = [
      say({ waba: WABA_A, capability: 250, appSecret: attacker }),
      say({ waba: WABA_A, restrictions: [{ restriction_type: 'RESTRICTED_CUSTOMER_INITIATED_MESSAGING' }], appSecret: attacker }),
      say({ waba: WABA_A, quality: { phoneNumberId: META_A.credentials.phone_number_id, event: 'FLAGGED' }, appSecret: attacker }),
      // Its own account, naming the victim's number: none of its senders has that number.
      say({ waba: WABA_B, quality: { phoneNumberId: META_A.credentials.phone_number_id, event: 'FLAGGED' }, appSecret: attacker }),
    ]
    for (const answer of forged) expect((await said(answer)).health).toBe(0)
    const after = await sender(ids.metaA)
    expect([after.messaging_limit, after.health.restricted, after.health.flagged]).toEqual([before.messaging_limit, null, false])
    expect(after.health.history).toEqual(before.health.history)
    // Nor the attacker's own senders: a part naming nothing its signer owns changes nothing at all.
    expect((await sender(ids.metaB)).health).toEqual(own.health)
    expect((await send()).status).toBe(200)
    // A forged signature is 403 and changes nothing.
    const wrong = await say({ waba: WABA_A, capability: 250, appSecret: 'not-the-secret' })
    expect(wrong.status).toBe(403)
  })
})

describe("the sender's dashboard page", () => {
  test('shows its health and its history', async () => {
    const { client } = await dashboardUser(t, 'op-health@example.com', 'a long enough password')
    const page = await client.get(`/dashboard/senders/${ids.metaA}`)
    expect(page.status).toBe(200)
    const html = page.text
    expect(html).toContain('id="sender-health"')
    expect(html).toContain('Health history')
    expect(html).toContain('id="tier-by-meta"')
    expect(html).not.toContain('name="messaging_limit"')
  })
})
