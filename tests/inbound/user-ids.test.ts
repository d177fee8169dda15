// Customers known by a WhatsApp business-scoped user id (issue 32 §1), against the fake Graph API, which
// posts real-shaped, signed webhooks (`from_user_id`, `contacts[].user_id`, no `from` / `wa_id` for a
// username that hides the phone; `user_changed_user_id` and `user_changed_number` system messages) and
// takes a send by `recipient` without `to`: a username customer writes in, is answered by user id, and is
// later linked by phone; a STOP by user id keeps the phone from being sent to once linked; a changed user
// id and a changed number are followed; a user id through a Twilio sender is refused before charging; and
// another tenant, with its own key and its own signed webhooks, never reaches or re-keys the customer.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph, graphError } from '../helpers/fake-graph'
import { assign, fourSenders, META_A, META_B, registerFakes, sendersEnv } from '../helpers/senders'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

const clock = new TestClock()
let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
/** The account: twilioA its default sender, metaA given to it too. */
let acc: { accountId: number; key: string }
/** Another tenant, with its own key and its own Meta sender (metaB, with its own app secret). */
let other: { accountId: number; key: string }
beforeAll(async () => {
  t = await testApp({
    clock,
    runOnClock: true,
    env: sendersEnv(twilio, graph, { WEBHOOK_ALLOW_PRIVATE: 'true', WINDOW_CHECK: 'provider' }),
  })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  acc = await t.account(1000, { price: 10 })
  other = await t.account(1000, { price: 10 })
  await assign(t, acc.accountId, ids.twilioA, true)
  await assign(t, acc.accountId, ids.metaA)
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
const userId = () => `ID.1349120865530${String(++n).padStart(7, '0')}`
const phone = () => `+628139${String(++n).padStart(6, '0')}`
const META_A_ID = META_A.credentials.phone_number_id
const META_B_ID = META_B.credentials.phone_number_id

/** A customer writes to a Meta number: by user id only (`from` ''), by phone only, or both. */
async function writes(o: { to?: string; phone?: string; userId?: string; text?: string }) {
  const answer = await graph.customerWrites({
    phoneNumberId: o.to ?? META_A_ID,
    from: o.phone ?? '',
    userId: o.userId,
    text: o.text ?? 'Halo',
    name: 'Rina',
  })
  expect(answer.status).toBe(200)
  expect(((await answer.json()) as { data: { inbound: number } }).data.inbound).toBe(1)
}

const inbound = async (key: string, customer: string) => {
  const list = await t.api('GET', `/inbound?phone=${encodeURIComponent(customer)}`, key)
  expect(list.status).toBe(200)
  return list.body.data.items as Record<string, unknown>[]
}

/** The balance, the ledger and the account's messages: what a refused call leaves as they were. */
async function books(accountId: number) {
  const [row] = await t.db.sql<{ rows: number; messages: number }[]>`
    select (select count(*)::int from ledger where account_id = ${accountId}) as rows,
           (select count(*)::int from messages where account_id = ${accountId}) as messages`
  return { ...(await money(t, accountId)), ...row! }
}

/** What the fake Graph API took as messages to `customer` (a user id, or a phone's digits). */
const sentTo = (customer: string) =>
  graph.requests.filter((r) => r.to === customer.replace(/^\+/, '') && r.status === 200).map((r) => JSON.parse(r.body))

const sendMeta = (key: string, to: string, from = META_A.number, body = 'Terima kasih') =>
  t.api('POST', '/messages/send', key, { to, body, from })

const events = async (text: string) =>
  (await t.db.sql<{ payload: string }[]>`select payload from webhook_events where payload like ${`%${text}%`} order by id`).map((r) =>
    JSON.parse(r.payload),
  )

describe('a customer known by a user id', () => {
  test('writes in without a phone, is answered by user id (recipient, no to), and is linked later by phone', async () => {
    const uid = userId()
    await writes({ userId: uid })
    const [first] = await inbound(acc.key, uid)
    expect(first).toMatchObject({ phone: uid, user_id: uid, name: 'Rina', account_id: acc.accountId, sender_id: ids.metaA })
    // The event and the contact carry the user id; the contact list finds it.
    const [received] = await events(uid)
    expect(received).toMatchObject({ event: 'message.received', data: { phone: uid, user_id: uid, text: 'Halo' } })
    const contacts = await t.api('GET', `/contacts?search=${uid}`, acc.key)
    expect(contacts.body.data.items).toEqual([expect.objectContaining({ phone: uid, user_id: uid, name: 'Rina' })])
    // Its window is open with metaA: a free-form reply by user id goes as Meta's `recipient`, without `to`.
    const talk = await t.api('GET', `/conversations/${uid}?from=${encodeURIComponent(META_A.number)}`, acc.key)
    expect(talk.body.data).toMatchObject({ phone: uid, user_id: uid, window: { open: true } })
    const sent = await sendMeta(acc.key, uid)
    expect(sent.status).toBe(200)
    expect(sent.body.data).toMatchObject({ to: uid, status: 'sent' })
    const [asked] = sentTo(uid)
    expect(asked).toEqual({ messaging_product: 'whatsapp', recipient: uid, type: 'text', text: { body: 'Terima kasih' } })
    // Its status event carries the user id.
    const reported = await graph.reportStatus({ phoneNumberId: META_A_ID, id: sent.body.data.message_id, status: 'delivered' })
    expect(reported.status).toBe(200)
    const status = (await events(sent.body.data.message_id)).find((e) => e.event === 'message.status')
    expect(status.data).toMatchObject({ to: uid, user_id: uid, status: 'delivered', previous_status: 'sent' })

    // Meta names the phone with the user id: the customer is the phone from now on, found by either id.
    const tel = phone()
    await writes({ userId: uid, phone: tel.slice(1), text: 'Ini nomor saya' })
    const both = await inbound(acc.key, uid)
    expect(both.map((m) => [m.phone, m.user_id, m.text])).toEqual([
      [tel, uid, 'Ini nomor saya'],
      [tel, uid, 'Halo'],
    ])
    expect((await inbound(acc.key, tel)).length).toBe(2)
    const linked = await t.api('GET', `/contacts?search=${uid}`, acc.key)
    expect(linked.body.data.items).toEqual([expect.objectContaining({ phone: tel, user_id: uid })])
    const conversation = await t.api('GET', `/conversations/${uid}?from=${encodeURIComponent(META_A.number)}`, acc.key)
    expect(conversation.body.data).toMatchObject({ phone: tel, user_id: uid, total: 3 })
    // A send to the user id now goes to the phone.
    const again = await sendMeta(acc.key, uid)
    expect(again.status).toBe(200)
    expect(again.body.data.to).toBe(tel)
    expect(sentTo(tel).at(-1)).toMatchObject({ to: tel.slice(1), text: { body: 'Terima kasih' } })
    expect(sentTo(tel).at(-1)).not.toHaveProperty('recipient')
  })

  test('a STOP by user id keeps its phone from being sent to once Meta links them; START by user id lifts it', async () => {
    const uid = userId()
    await writes({ userId: uid, text: 'STOP' })
    const refused = await sendMeta(acc.key, uid)
    expect(refused.status).toBe(422)
    expect(refused.body.code).toBe('RECIPIENT_OPTED_OUT')
    const tel = phone()
    await writes({ userId: uid, phone: tel.slice(1), text: 'Halo lagi' })
    const before = await books(acc.accountId)
    const toPhone = await sendMeta(acc.key, tel)
    expect(toPhone.status).toBe(422)
    expect(toPhone.body.code).toBe('RECIPIENT_OPTED_OUT')
    expect(await books(acc.accountId)).toEqual(before)
    expect(sentTo(tel)).toEqual([])
    // The opt-out list finds it by either id.
    const byUserId = await t.api('GET', `/opt-outs?phone=${uid}`, acc.key)
    expect(byUserId.body.data.items).toEqual([expect.objectContaining({ phone: tel, source: 'inbound' })])
    // START by user id only (the phone hidden again): the phone is opted back in.
    await writes({ userId: uid, text: 'START' })
    const sent = await sendMeta(acc.key, tel)
    expect(sent.status).toBe(200)
  })

  test('a message to a user id waiting for its retry is stopped by a STOP written after Meta linked the phone', async () => {
    // Charged under the user id (no phone known yet); while it waits for its retry after a throttle, Meta
    // names the phone with it (the link) and the customer writes STOP: the opt-out is the phone's, and
    // still stops the message before its next hand-off (found by the fault test's review, issue 32).
    const uid = userId()
    const tel = phone()
    await writes({ userId: uid })
    let stopped: Promise<void> | undefined
    graph.answer = async (_request, sent) => {
      if (sent?.recipient !== uid || stopped) return undefined
      stopped = (async () => {
        await writes({ userId: uid, phone: tel.slice(1), text: 'Halo lagi' })
        await writes({ userId: uid, phone: tel.slice(1), text: 'STOP' })
      })()
      await stopped
      return graphError(400, 130429, '(#130429) Rate limit hit', { 'retry-after': '1' })
    }
    try {
      const { status, body } = await sendMeta(acc.key, uid)
      await stopped
      expect({ status, code: body.code }).toEqual({ status: 422, code: 'RECIPIENT_OPTED_OUT' })
      // The throttled attempt only: no retry to the user id or to the phone.
      expect(graph.requests.filter((r) => r.to === uid || r.to === tel.slice(1)).map((r) => r.status)).toEqual([400])
      // Failed, and its charge refunded: it cost nothing.
      const [row] = await t.db.sql<{ status: string; refunded: boolean; net: number }[]>`
        select m.status, m.refunded_at is not null as refunded, (select sum(amount)::int from ledger l where l.message_id = m.id) as net
        from messages m where m.id = ${body.id}`
      expect(row).toEqual({ status: 'failed', refunded: true, net: 0 })
    } finally {
      graph.answer = null
    }
  })

  test('opt-out calls take a user id', async () => {
    const uid = userId()
    await writes({ userId: uid })
    const add = await t.api('POST', '/opt-outs', acc.key, { phone: uid })
    expect(add.status).toBe(201)
    expect(add.body.data).toMatchObject({ phone: uid })
    expect((await sendMeta(acc.key, uid)).body.code).toBe('RECIPIENT_OPTED_OUT')
    const remove = await t.api('DELETE', `/opt-outs/${uid}`, acc.key)
    expect(remove.status).toBe(200)
    expect((await sendMeta(acc.key, uid)).status).toBe(200)
  })

  test('a changed user id and a changed number are followed', async () => {
    const old = userId()
    const renewed = userId()
    await writes({ userId: old, text: 'STOP' })
    const changed = await graph.customerChanged({
      phoneNumberId: META_A_ID,
      type: 'user_changed_user_id',
      previousUserId: old,
      userId: renewed,
    })
    expect(changed.status).toBe(200)
    await writes({ userId: renewed, text: 'Masih saya' })
    expect((await inbound(acc.key, renewed)).map((m) => [m.phone, m.user_id, m.text])).toEqual([
      [renewed, renewed, 'Masih saya'],
      [renewed, old, 'STOP'],
    ])
    expect((await sendMeta(acc.key, renewed)).body.code).toBe('RECIPIENT_OPTED_OUT')

    // A number changed: its opt-out and its conversation follow to the new number.
    const was = phone()
    const now = phone()
    await writes({ phone: was.slice(1), text: 'STOP' })
    const moved = await graph.customerChanged({
      phoneNumberId: META_A_ID,
      type: 'user_changed_number',
      from: was.slice(1),
      waId: now.slice(1),
    })
    expect(moved.status).toBe(200)
    expect((await inbound(acc.key, now)).map((m) => m.text)).toEqual(['STOP'])
    const before = await books(acc.accountId)
    const refused = await sendMeta(acc.key, now)
    expect(refused.body.code).toBe('RECIPIENT_OPTED_OUT')
    expect(await books(acc.accountId)).toEqual(before)
  })

  test('a user id through a Twilio sender is 422 naming the reason, nothing charged; a bulk entry fails alone', async () => {
    const uid = userId()
    await writes({ userId: uid })
    const before = await books(acc.accountId)
    const refused = await t.api('POST', '/messages/send', acc.key, { to: uid, body: 'Halo' })
    // (twilioA is the default sender; the user id never wrote to it, but the reason given is the provider's.)
    expect(refused.status).toBe(422)
    expect(refused.body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
    expect(refused.body.error).toContain('to: a WhatsApp user id reaches a customer only through a Meta sender')
    expect(refused.body.error).toContain('twilio')
    expect(await books(acc.accountId)).toEqual(before)
    const bulk = await t.api('POST', '/messages/bulk', acc.key, {
      messages: [
        { to: uid, body: 'Halo' },
        { to: uid, body: 'Halo', from: META_A.number },
      ],
    })
    expect(bulk.status).toBe(200)
    expect(bulk.body.data).toMatchObject({ total: 2, sent: 1, failed: 1 })
    expect(bulk.body.data.results[0]).toMatchObject({ to: uid, status: 'failed', code: 'VALIDATION_ERROR' })
    expect(bulk.body.data.results[1]).toMatchObject({ to: uid, status: 'sent' })
    // Not a user id, not a phone: the usual 422.
    const bad = await t.api('POST', '/messages/send', acc.key, { to: 'id.123', body: 'Halo', from: META_A.number })
    expect(bad.status).toBe(422)
  })
})

describe('tenants', () => {
  test("another tenant's key finds nothing of the customer, and its own signed webhook never links or re-keys it", async () => {
    const uid = userId()
    await writes({ userId: uid, text: 'STOP' })
    // The attacker's own real key: nothing of it.
    expect(await inbound(other.key, uid)).toEqual([])
    const talk = await t.api('GET', `/conversations/${uid}`, other.key)
    expect(talk.body.data).toMatchObject({ user_id: null, total: 0 })
    expect((await t.api('GET', `/contacts?search=${uid}`, other.key)).body.data.items).toEqual([])
    expect((await t.api('DELETE', `/opt-outs/${uid}`, other.key)).status).toBe(404)
    // A send to the user id through its own number: that number's window (closed), nothing charged.
    const before = await books(other.accountId)
    const attack = await sendMeta(other.key, uid, META_B.number)
    expect(attack.status).toBe(422)
    expect(attack.body.code).toBe('WINDOW_CLOSED')
    expect(await books(other.accountId)).toEqual(before)
    // The attacker's own Meta app signs a message naming the user id with a phone of its choosing.
    const planted = phone()
    await writes({ to: META_B_ID, userId: uid, phone: planted.slice(1) })
    // The account's customer is as it was: still the user id, still opted out, answered by user id.
    expect((await inbound(acc.key, uid)).map((m) => m.phone)).toEqual([uid])
    const optOuts = await t.api('GET', `/opt-outs?phone=${uid}`, acc.key)
    expect(optOuts.body.data.items).toEqual([expect.objectContaining({ phone: uid })])
    await t.api('DELETE', `/opt-outs/${uid}`, acc.key)
    const sent = await sendMeta(acc.key, uid)
    expect(sent.status).toBe(200)
    expect(sent.body.data.to).toBe(uid)
    expect(sentTo(planted)).toEqual([])
  })
})
