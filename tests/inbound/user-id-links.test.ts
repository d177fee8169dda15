// Customers known by a WhatsApp user id, what a link reaches (issue 32 §1), against the fake Graph API's
// real-shaped, signed webhooks: Meta's status reports name the recipient by `recipient_user_id` (with
// `recipient_id` when it gives the phone too); a status naming both links them on the number that sent
// the message (only a message of a number whose signature brought it: another tenant naming the
// account's message links nothing); a link re-keys the customer's messaging-limit uses, so a customer
// sent a template by user id and then by phone counts once; message.status and message.received carry
// the user id where it is known; a campaign through a Meta sender reaches a contact known only by user id
// as Meta's `recipient`, and through a Twilio sender skips it uncharged (user_id_only); the inbox opens
// and answers such a conversation; the simulator refuses a user id, naming why.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { assign, fourSenders, META_A, META_B, registerFakes, sendersEnv } from '../helpers/senders'
import { boundTemplate } from '../helpers/templates'
import { dashboardUser } from '../helpers/web'

const HOUR = 3_600_000
const clock = new TestClock()
const twilio = fakeTwilio()
// The customers' messages carry the test clock's time: the window follows the clock the tests move.
const graph = fakeGraph({ clock })
registerFakes(twilio, graph)
let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
/** The account: metaA its default sender, twilioA given to it too; a template bound for both providers. */
let acc: Awaited<ReturnType<typeof boundTemplate>>
/** Another tenant, with its own key and its own Meta sender (metaB, with its own app secret). */
let other: { accountId: number; key: string }
beforeAll(async () => {
  t = await testApp({
    clock,
    runOnClock: true,
    env: sendersEnv(twilio, graph, { WEBHOOK_ALLOW_PRIVATE: 'true', WINDOW_CHECK: 'provider' }),
  })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  acc = await boundTemplate(t, 'Halo {{name}}, pesanan siap', {
    meta: { ref: 'order_ready', language: 'id', variables: ['name'] },
    twilio: { ref: `HX${'a'.repeat(32)}`, variables: ['name'] },
  })
  other = await t.account(1000, { price: 10 })
  await assign(t, acc.accountId, ids.metaA, true)
  await assign(t, acc.accountId, ids.twilioA)
  await assign(t, other.accountId, ids.metaB, true)
  const callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
  twilio.callback = callback
  graph.callback = callback
  const hook = await t.api('POST', '/webhook', acc.key, { url: 'https://127.0.0.1:9/hook', events: ['message.received', 'message.status'] })
  expect(hook.status).toBe(200)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

let n = 0
const userId = () => `ID.2349120865530${String(++n).padStart(7, '0')}`
const phone = () => `+628139${String(++n + 500_000).padStart(6, '0')}`
const META_A_ID = META_A.credentials.phone_number_id
const META_B_ID = META_B.credentials.phone_number_id

/** A customer writes to a Meta number: by user id only, by phone only, or both. */
async function writes(o: { to?: string; phone?: string; userId?: string; text?: string }) {
  const answer = await graph.customerWrites({
    phoneNumberId: o.to ?? META_A_ID,
    from: o.phone?.slice(1) ?? '',
    userId: o.userId,
    text: o.text ?? 'Halo',
    name: 'Rina',
  })
  expect(answer.status).toBe(200)
}

const template = (to: string, from = META_A.number) =>
  t.api('POST', '/messages/send', acc.key, { to, template_id: acc.templateId, variables: { name: 'Rina' }, from })

/** Meta reports a status of message `id`, naming its recipient as the test says. */
async function status(id: string, o: { status?: 'delivered' | 'read'; phone?: string | null; userId?: string; on?: string } = {}) {
  const answer = await graph.reportStatus({
    phoneNumberId: o.on ?? META_A_ID,
    id,
    status: o.status ?? 'delivered',
    recipient: o.phone === undefined || o.phone === null ? null : o.phone.slice(1),
    recipientUserId: o.userId,
  })
  expect(answer.status).toBe(200)
}

const events = async (kind: string, text: string) =>
  (await t.db.sql<{ payload: string }[]>`select payload from webhook_events where payload like ${`%${text}%`} order by id`)
    .map((r) => JSON.parse(r.payload))
    .filter((e) => e.event === kind)

const budgetUsed = async () => (await t.admin('GET', `/senders/${ids.metaA}`)).body.data.budget.used as number

/** What the fake Graph API took as messages (status 200), with the customer they named. */
const sentTo = (customer: string) =>
  graph.requests.filter((r) => r.to === customer.replace(/^\+/, '') && r.status === 200).map((r) => JSON.parse(r.body))

describe('a status naming the recipient by user id', () => {
  test('applies to its message with recipient_user_id alone; with recipient_id too it links them, and events carry the user id', async () => {
    const uid = userId()
    await writes({ userId: uid })
    const sent = await t.api('POST', '/messages/send', acc.key, { to: uid, body: 'Terima kasih' })
    expect(sent.status).toBe(200)
    const sid = sent.body.data.message_id as string
    // recipient_user_id without recipient_id: the status applies to its message all the same.
    await status(sid, { phone: null, userId: uid })
    expect((await t.api('GET', `/messages/${sid}`, acc.key)).body.data.status).toBe('delivered')
    expect((await events('message.status', sid)).at(-1).data).toMatchObject({ to: uid, user_id: uid, status: 'delivered' })

    // Both ids: linked on metaA, the customer is the phone from now on.
    const tel = phone()
    await status(sid, { status: 'read', phone: tel, userId: uid })
    expect((await t.api('GET', `/inbound?phone=${uid}`, acc.key)).body.data.items.map((m: { phone: string }) => m.phone)).toEqual([tel])
    const again = await template(uid)
    expect(again.body.data.to).toBe(tel)
    // A message to the phone: its status event carries the linked user id (Meta names the phone alone).
    await status(again.body.data.message_id, { phone: tel })
    expect((await events('message.status', again.body.data.message_id)).at(-1).data).toMatchObject({ to: tel, user_id: uid })
    // And the customer writing by phone alone: message.received carries it too.
    await writes({ phone: tel, text: 'Dari nomor saya' })
    expect((await events('message.received', 'Dari nomor saya')).at(-1).data).toMatchObject({ phone: tel, user_id: uid })
  })

  test("another tenant's own signed status naming the account's message and a phone of its choosing links nothing", async () => {
    const uid = userId()
    await writes({ userId: uid })
    const sent = await t.api('POST', '/messages/send', acc.key, { to: uid, body: 'Halo' })
    expect(sent.status).toBe(200)
    const planted = phone()
    // Signed with metaB's own app secret, about metaB's own number: only the account's message id is not its.
    await status(sent.body.data.message_id, { on: META_B_ID, phone: planted, userId: uid })
    const next = await t.api('POST', '/messages/send', acc.key, { to: uid, body: 'Masih di sini?' })
    expect(next.status).toBe(200)
    expect(next.body.data.to).toBe(uid)
    expect(sentTo(planted)).toEqual([])
    expect((await t.api('GET', `/inbound?phone=${uid}`, acc.key)).body.data.items.map((m: { phone: string }) => m.phone)).toEqual([uid])
  })
})

describe('a contact known only by user id', () => {
  test('a campaign through a Meta sender reaches it as recipient; through a Twilio sender it is skipped, uncharged, and counted', async () => {
    const uid = userId()
    await writes({ userId: uid })
    await t.db.sql`update contacts set tags = array['known-by-id'] where account_id = ${acc.accountId} and phone = ${uid}`
    const segment = await t.admin('POST', `/accounts/${acc.accountId}/segments`, { name: 'by id', tag: 'known-by-id' })
    const run = async (from: string) => {
      const draft = await t.api('POST', '/campaigns', acc.key, {
        name: `by id ${from}`,
        template_id: acc.templateId,
        segment_id: segment.body.data.id,
        from,
      })
      expect(draft.status).toBe(201)
      const id = draft.body.data.campaign.id as number
      expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
      await t.runWorker('campaign-runner')
      return (await t.admin('GET', `/campaigns/${id}`)).body.data
    }
    const viaMeta = await run(META_A.number)
    expect(viaMeta.stats).toMatchObject({ total: 1, sent: 1, user_id_only: 0 })
    expect(sentTo(uid).at(-1)).toMatchObject({ recipient: uid, type: 'template' })
    expect(sentTo(uid).at(-1)).not.toHaveProperty('to')

    const before = await money(t, acc.accountId)
    const viaTwilio = await run(String(ids.twilioA))
    expect(viaTwilio.campaign.status).toBe('sent')
    expect(viaTwilio.stats).toMatchObject({ total: 1, sent: 0, failed: 0, user_id_only: 1 })
    expect(await money(t, acc.accountId)).toEqual(before)
    expect(twilio.requests.filter((r) => r.body.includes(uid))).toEqual([])
  })

  test('the inbox lists the conversation, opens it by user id and answers it', async () => {
    const uid = userId()
    await writes({ userId: uid, text: 'Pesanan saya?' })
    const member = (await dashboardUser(t, 'user-id-inbox@example.com', 'correct horse battery', acc.accountId)).client
    const list = await member.get('/dashboard/inbox')
    expect(list.text).toContain(`href="/dashboard/inbox/${uid}"`)
    const page = await member.get(`/dashboard/inbox/${uid}`)
    expect(page.status).toBe(200)
    expect(page.text).toContain('Pesanan saya?')
    const token = await member.formToken(`/dashboard/inbox/${uid}/reply`)
    // On the test clock, as t.api runs: the send may wait for its slot at the sender's pace.
    const sent = await clock.run(member.post(`/dashboard/inbox/${uid}/reply`, { _csrf: page.csrf!, _once: token!, body: 'Besok sampai' }))
    expect([sent.status, sent.location]).toEqual([303, `/dashboard/inbox/${uid}`])
    expect((await member.follow(sent)).text).toContain('Reply sent; 10 IDR charged.')
    expect(sentTo(uid).at(-1)).toMatchObject({ recipient: uid, text: { body: 'Besok sampai' } })
    // Another tenant's customer known by user id: not this account's conversation.
    const theirs = userId()
    await writes({ to: META_B_ID, userId: theirs })
    const refused = await member.get(`/dashboard/inbox/${theirs}`)
    expect([refused.status, refused.location]).toEqual([404, null])
  })
})

describe('the simulator', () => {
  test('a user id writing in is refused, naming why', async () => {
    const refused = await t.admin('POST', '/simulator/inbound', { phone: userId() })
    expect(refused.status).toBe(422)
    expect(refused.body.error).toContain('a WhatsApp user id reaches the service only through a Meta sender')
  })
})

// Last: it moves the clock a day past the customers' messages (Meta's timestamps are the fake's real time).
describe('the messaging limit', () => {
  test('a customer sent a template by user id, then by phone once Meta linked them, counts once', async () => {
    expect((await t.admin('PATCH', `/senders/${ids.metaA}`, { messaging_limit: 250 })).status).toBe(200)
    try {
      const uid = userId()
      await writes({ userId: uid })
      // A day later the window is closed: a template uses the budget.
      await clock.advance(25 * HOUR)
      const before = await budgetUsed()
      const first = await template(uid)
      expect(first.status).toBe(200)
      expect(await budgetUsed()).toBe(before + 1)
      const tel = phone()
      await status(first.body.data.message_id, { phone: tel, userId: uid })
      const second = await template(tel)
      expect(second.status).toBe(200)
      expect(await budgetUsed()).toBe(before + 1)
    } finally {
      await t.admin('PATCH', `/senders/${ids.metaA}`, { messaging_limit: null })
    }
  })
})

describe('a repeat after Meta linked the customer', () => {
  test('requests by user id whose first run died, repeated once the user id is linked to a phone: answered as charged, charged once', async () => {
    const [linked, other] = [userId(), userId()]
    await writes({ userId: linked })
    await writes({ userId: other })
    const bulkBody = {
      messages: [
        { to: linked, body: 'Pesanan siap' },
        { to: other, body: 'Pesanan siap' },
      ],
    }
    const sendBody = { to: linked, body: 'Satu lagi' }
    const idem = (key: string) => ({ 'idempotency-key': key })
    const bulk = await t.api('POST', '/messages/bulk', acc.key, bulkBody, idem('uid-bulk'))
    const one = await t.api('POST', '/messages/send', acc.key, sendBody, idem('uid-send'))
    expect(bulk.body.data).toMatchObject({ sent: 2, failed: 0 })
    expect(one.body.data).toMatchObject({ status: 'sent', to: linked })
    const before = await money(t, acc.accountId)
    const handedOver = graph.requests.length
    // The crash: both requests charged and handed over, their answers lost before they were stored.
    await t.db.sql`
      update idempotency_keys set state = 'running', response_status = null, response_body = null
      where account_id = ${acc.accountId} and key in ('uid-bulk', 'uid-send')`
    // Meanwhile the customer writes with a phone beside the user id: Meta's link.
    await writes({ userId: linked, phone: phone() })
    // The repeats find what their first runs charged (to the user id, as then), not 409 for ever.
    const bulkAgain = await t.api('POST', '/messages/bulk', acc.key, bulkBody, idem('uid-bulk'))
    expect(bulkAgain.status).toBe(200)
    expect(bulkAgain.body.data).toEqual(bulk.body.data)
    const oneAgain = await t.api('POST', '/messages/send', acc.key, sendBody, idem('uid-send'))
    expect(oneAgain.status).toBe(200)
    expect(oneAgain.body.data).toEqual(one.body.data)
    expect(await money(t, acc.accountId)).toEqual(before)
    expect(graph.requests.length).toBe(handedOver)
  })
})
