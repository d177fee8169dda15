// WhatsApp's 24-hour window, enforced before charging (WINDOW_CHECK=provider), against the fake
// Twilio and the fake Graph API, which keep and enforce their own window: a customer "writes" through
// the fakes, which post a real-shaped, signed inbound webhook to the service. A free-form send outside
// the window is 422 WINDOW_CLOSED with nothing charged and nothing handed over; after the customer
// writes it goes; templates always go; the window is per sender; bulk entries fail on their own;
// free-form campaigns skip (and count) the recipients outside it; the window closes after 24 hours.
// With the check off, the providers' own refusals (63016, 131047) are refunded, as before. The
// simulator (SIM_REQUIRE_TEMPLATE) reads the same inbound messages.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { money, testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import {
  assign,
  createSender,
  ENV_TWILIO,
  fourSenders,
  META_A,
  META_B,
  registerFakes,
  sendersEnv,
  TWILIO_A,
  TWILIO_B,
} from '../helpers/senders'
import { boundTemplate, campaignMessages, runCampaign } from '../helpers/templates'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

const SID = 'HX0123456789abcdef0123456789abcdef'
const ENV_NUMBER = ENV_TWILIO.from.slice('whatsapp:'.length)

const clock = new TestClock()
let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
/** twilioA (its default), twilioB, metaA and metaB. */
let acc: { accountId: number; key: string }
beforeAll(async () => {
  t = await testApp({ clock, runOnClock: true, env: sendersEnv(twilio, graph, { WINDOW_CHECK: 'provider' }) })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  acc = await t.account(1000, { price: 10 })
  await assign(t, acc.accountId, ids.twilioA, true)
  await assign(t, acc.accountId, ids.twilioB)
  await assign(t, acc.accountId, ids.metaA)
  await assign(t, acc.accountId, ids.metaB)
  const callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
  twilio.callback = callback
  graph.callback = callback
  twilio.windows.enforce = true
  graph.windows.enforce = true
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

let numbers = 0
/** A customer number of its own per use. */
const customer = () => `+628139${String(++numbers).padStart(6, '0')}`

/** What the account's balance, ledger and messages are: unchanged by a refusal. */
async function books(app: TestApp, accountId: number) {
  const [row] = await app.db.sql<{ rows: number; messages: number }[]>`
    select (select count(*)::int from ledger where account_id = ${accountId}) as rows,
           (select count(*)::int from messages where account_id = ${accountId}) as messages`
  return { ...(await money(app, accountId)), ...row! }
}

/** What the fakes were asked to send to `phone`. */
const handedTo = (phone: string) =>
  [...twilio.requests.filter((r) => r.to === `whatsapp:${phone}`), ...graph.requests.filter((r) => r.to === phone.slice(1))].map((r) => [
    r.status,
    r.code,
  ])

const writesToTwilio = async (sender: { credentials: { account_sid: string }; number: string }, phone: string) => {
  const answer = await twilio.customerWrites({ accountSid: sender.credentials.account_sid, to: sender.number, from: phone, text: 'Halo' })
  expect(answer.status).toBe(200)
}
const writesToMeta = async (sender: { credentials: { phone_number_id: string } }, phone: string) => {
  const answer = await graph.customerWrites({ phoneNumberId: sender.credentials.phone_number_id, from: phone, text: 'Halo' })
  expect(answer.status).toBe(200)
}

describe('single sends', () => {
  test('outside the window: 422 WINDOW_CLOSED naming the fix, nothing charged, nothing handed over; after the customer writes it goes', async () => {
    const phone = customer()
    const before = await books(t, acc.accountId)
    const refused = await t.api('POST', '/messages/send', acc.key, { to: phone, body: 'Any questions?' })
    expect(refused.status).toBe(422)
    expect(refused.body).toEqual(
      errorEnvelope(
        refused.headers,
        'WINDOW_CLOSED',
        "to: the customer has never written to this sender, so WhatsApp's 24-hour window is closed and only an approved " +
          'template can go: send one with template_id (a template bound to twilio); nothing was charged',
      ),
    )
    expect(await books(t, acc.accountId)).toEqual(before)
    expect(handedTo(phone)).toEqual([])

    await writesToTwilio(TWILIO_A, phone)
    const sent = await t.api('POST', '/messages/send', acc.key, { to: phone, body: 'Any questions?' })
    expect([sent.status, sent.body.data?.status]).toEqual([200, 'sent'])
    expect(handedTo(phone)).toEqual([[201, null]])
  })

  test('an approved template goes either way; a template without a binding for the provider goes free-form, so it is refused', async () => {
    const phone = customer()
    const made = await t.admin('POST', `/accounts/${acc.accountId}/templates`, { name: 'bound', body: 'Hi {{name}}' })
    const templateId: number = made.body.data.id
    const unbound = await t.api('POST', '/messages/send', acc.key, { to: phone, template_id: templateId, variables: { name: 'Budi' } })
    expect([unbound.status, unbound.body.code]).toEqual([422, 'WINDOW_CLOSED'])
    expect((await t.admin('PUT', `/templates/${templateId}/bindings/twilio`, { ref: SID, variables: ['name'] })).status).toBe(200)
    const approved = await t.api('POST', '/messages/send', acc.key, { to: phone, template_id: templateId, variables: { name: 'Budi' } })
    expect([approved.status, approved.body.data?.status]).toEqual([200, 'sent'])
    expect(handedTo(phone)).toEqual([[201, null]])
  })

  test('the window is per sender: writing to one number opens it for that number only', async () => {
    const phone = customer()
    await writesToTwilio(TWILIO_A, phone)
    await writesToMeta(META_A, phone)
    const send = (from: string) => t.api('POST', '/messages/send', acc.key, { to: phone, body: `from ${from}`, from })
    expect((await send(TWILIO_A.number)).status).toBe(200)
    expect((await send(META_A.number)).status).toBe(200)
    const viaB = await send(TWILIO_B.number)
    expect([viaB.status, viaB.body.code]).toEqual([422, 'WINDOW_CLOSED'])
    const viaMetaB = await send(META_B.number)
    expect([viaMetaB.status, viaMetaB.body.code]).toEqual([422, 'WINDOW_CLOSED'])
    expect(viaMetaB.body.error).toContain('(a template bound to meta)')
    // The conversation shows the window with the account's default sender, or the one `from` names.
    const path = `/conversations/${encodeURIComponent(phone)}`
    expect((await t.api('GET', path, acc.key)).body.data.window).toMatchObject({ open: true, sender_id: ids.twilioA })
    expect((await t.api('GET', `${path}?from=${ids.twilioB}`, acc.key)).body.data.window).toEqual({
      open: false,
      until: null,
      sender_id: ids.twilioB,
      last_inbound_at: null,
    })
    expect((await t.api('GET', `${path}?from=${encodeURIComponent(META_A.number)}`, acc.key)).body.data.window).toMatchObject({
      open: true,
      sender_id: ids.metaA,
    })
    const notOurs = await t.api('GET', `${path}?from=%2B14155559999`, acc.key)
    expect([notOurs.status, notOurs.body.code]).toEqual([422, 'VALIDATION_ERROR'])
  })

  test('the window closes 24 hours after the last message', async () => {
    const phone = customer()
    await writesToTwilio(TWILIO_A, phone)
    expect((await t.api('POST', '/messages/send', acc.key, { to: phone, body: 'Within' })).status).toBe(200)
    // The clock moves on (the fakes keep their own windows open: only ours decides here).
    await clock.advance(23 * 3_600_000 + 59 * 60_000)
    expect((await t.api('POST', '/messages/send', acc.key, { to: phone, body: 'Just in time' })).status).toBe(200)
    await clock.advance(60_000 + 1_000)
    const before = await books(t, acc.accountId)
    const late = await t.api('POST', '/messages/send', acc.key, { to: phone, body: 'Too late' })
    expect([late.status, late.body.code]).toEqual([422, 'WINDOW_CLOSED'])
    expect(late.body.error).toMatch(/^to: the customer last wrote to this sender at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d, so /)
    expect(await books(t, acc.accountId)).toEqual(before)
  })
})

test('bulk: an entry outside its window fails uncharged, the rest go', async () => {
  const open = customer()
  const closed = customer()
  await writesToTwilio(TWILIO_A, open)
  const made = await t.admin('POST', `/accounts/${acc.accountId}/templates`, { name: 'bulk', body: 'Hi {{name}}' })
  await t.admin('PUT', `/templates/${made.body.data.id}/bindings/twilio`, { ref: SID, variables: ['name'] })
  const before = await books(t, acc.accountId)
  const answer = await t.api('POST', '/messages/bulk', acc.key, {
    messages: [
      { to: open, body: 'inside' },
      { to: closed, body: 'outside' },
      { to: closed, template_id: made.body.data.id, variables: { name: 'Sari' } },
      { to: open, body: 'another sender', from: TWILIO_B.number },
    ],
  })
  expect(answer.status).toBe(200)
  expect(answer.body.data).toMatchObject({ total: 4, sent: 2, failed: 2, total_cost: 20, balance_after: before.balance - 20 })
  expect(answer.body.data.results.map((r: { status: string; code?: string }) => [r.status, r.code])).toEqual([
    ['sent', undefined],
    ['failed', 'WINDOW_CLOSED'],
    ['sent', undefined],
    ['failed', 'WINDOW_CLOSED'],
  ])
  expect(answer.body.data.results[1].error).toStartWith('messages[1].to: the customer has never written to this sender')
  expect(answer.body.data.results[3].error).toStartWith('messages[3].to: the customer has never written to this sender')
  const after = await books(t, acc.accountId)
  expect(after).toMatchObject({ balance: before.balance - 20, ledgerSum: before.balance - 20, messages: before.messages + 2 })
  expect(handedTo(closed)).toEqual([[201, null]])
})

test('a free-form campaign skips and counts the recipients outside the window, uncharged; an approved template reaches all', async () => {
  const contacts = [
    { name: 'Ani', phone: customer() },
    { name: 'Eko', phone: customer() },
    { name: 'Sri', phone: customer() },
  ]
  // A new account without senders: the deployment's number (Twilio), where Eko wrote.
  const free = await boundTemplate(t, 'Promo for {{name}}', {}, contacts)
  await writesToTwilio({ credentials: { account_sid: ENV_TWILIO.sid }, number: ENV_NUMBER }, contacts[1]!.phone)
  const id = await runCampaign(t, free)
  const sent = await campaignMessages(t, id)
  expect(sent.map((m) => [m.phone, m.status, m.body])).toEqual([[contacts[1]!.phone, 'sent', 'Promo for Eko']])
  const detail = await t.api('GET', `/campaigns/${id}`, free.key)
  expect(detail.body.data.stats).toMatchObject({ total: 3, sent: 1, failed: 0, window_closed: 2 })
  expect(await money(t, free.accountId)).toEqual({ balance: 9_990, ledgerSum: 9_990 })
  expect(handedTo(contacts[0]!.phone)).toEqual([])

  const approved = await boundTemplate(t, 'Promo for {{name}}', { twilio: { ref: SID, variables: ['name'] } }, contacts)
  const all = await campaignMessages(t, await runCampaign(t, approved))
  expect(all.map((m) => m.status)).toEqual(['sent', 'sent', 'sent'])
})

describe('with WINDOW_CHECK=off', () => {
  let off: TestApp
  beforeAll(async () => {
    off = await testApp({ env: sendersEnv(twilio, graph) })
  })
  afterAll(() => off.close())

  test("the providers' own refusals (63016, 131047) come after the charge, which is refunded", async () => {
    // `a` sends from the deployment's number (Twilio), `b` from its own Meta number.
    const a = await off.account(1000, { price: 10 })
    const b = await off.account(1000, { price: 10 })
    await assign(off, b.accountId, await createSender(off, 'meta', META_A))
    const phone = customer()
    const viaTwilio = await off.api('POST', '/messages/send', a.key, { to: phone, body: 'Hello' })
    expect([viaTwilio.status, viaTwilio.body.code]).toEqual([502, 'BAD_GATEWAY'])
    expect(viaTwilio.body.error).toContain('outside the allowed window')
    const viaMeta = await off.api('POST', '/messages/send', b.key, { to: phone, body: 'Hello' })
    expect([viaMeta.status, viaMeta.body.code]).toEqual([502, 'BAD_GATEWAY'])
    expect(viaMeta.body.error).toContain('131047')
    expect(handedTo(phone)).toEqual([
      [400, 63016],
      [400, 131047],
    ])
    const failed = await off.db.sql<{ error_code: number; refunded: boolean }[]>`
      select error_code, refunded_at is not null as refunded from messages where phone = ${phone} order by id`
    expect([...failed]).toEqual([
      { error_code: 63016, refunded: true },
      { error_code: 131047, refunded: true },
    ])
    // A top-up, a charge and its refund each.
    expect(await books(off, a.accountId)).toMatchObject({ balance: 1000, ledgerSum: 1000, rows: 3 })
    expect(await books(off, b.accountId)).toMatchObject({ balance: 1000, ledgerSum: 1000, rows: 3 })
  })
})

describe('the simulator', () => {
  let sim: TestApp
  let strict: TestApp
  beforeAll(async () => {
    sim = await testApp({ env: { WINDOW_CHECK: 'provider' } })
    strict = await testApp({ env: { WINDOW_CHECK: 'provider', SIM_REQUIRE_TEMPLATE: 'true' } })
  })
  afterAll(async () => {
    await sim.close()
    await strict.close()
  })

  test('without SIM_REQUIRE_TEMPLATE it does not enforce the window: free-form goes', async () => {
    const a = await sim.account(100)
    expect((await sim.api('POST', '/messages/send', a.key, { to: customer(), body: 'Hello' })).status).toBe(200)
  })

  test('with SIM_REQUIRE_TEMPLATE it does: 422 until the number writes in (a real inbound message), per sender', async () => {
    const a = await strict.account(100)
    const phone = customer()
    const refused = await strict.api('POST', '/messages/send', a.key, { to: phone, body: 'Hello' })
    expect([refused.status, refused.body.code]).toEqual([422, 'WINDOW_CLOSED'])
    expect(refused.body.error).toContain('(a template bound to simulator)')
    expect(await money(strict, a.accountId)).toEqual({ balance: 100, ledgerSum: 100 })

    // Writing to a stored simulator sender opens that sender's window, not the default number's.
    const own = await strict.admin('POST', '/senders', { provider: 'simulator', name: 'Own', number: '+14155550199', credentials: {} })
    expect(own.status).toBe(201)
    expect((await strict.admin('POST', '/simulator/inbound', { phone, sender: '+14155550199' })).status).toBe(200)
    expect((await strict.api('POST', '/messages/send', a.key, { to: phone, body: 'Hello' })).status).toBe(422)
    const wrote = await strict.admin('POST', '/simulator/inbound', { phone, body: 'Halo' })
    expect(wrote.body.data).toEqual({
      phone,
      sender: null,
      account_id: null,
      window_until: expect.any(String),
      inbound_id: expect.any(Number),
    })
    expect((await strict.api('POST', '/messages/send', a.key, { to: phone, body: 'Hello' })).status).toBe(200)
  })
})
