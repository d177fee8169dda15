// Tenant boundaries at the provider callbacks (issue 28), tried as an attacker holding one tenant's
// own sender credentials would: account B holds the secrets of its senders (Twilio B, Meta B) and signs
// callbacks with them for what belongs to account V (its senders Twilio A, Meta A) or account D (which
// sends through the deployment's number). Every callback is signed here with the official `twilio`
// package and node:crypto, independently of the service's signature code, and posted to the real routes.
// Also: the conversation rule of a number several accounts share (no tenant can take another's
// conversation by sending one message; operators see and move conversations), and the per-sender
// choice whether late failures reported through a tenant's own credentials are refunded.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import twilioSdk from 'twilio'
import { testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { assign, ENV_TWILIO, fourSenders, META_A, META_B, registerFakes, sendersEnv, TWILIO_A, TWILIO_B } from '../helpers/senders'
import { metaWebhookHeaders } from '../helpers/meta-webhook'
import { dashboardUser } from '../helpers/web'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

const BASE = 'https://api.example.com'
const ENV_NUMBER = ENV_TWILIO.from.slice('whatsapp:'.length)

let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
/** The victim: Twilio A and Meta A are its senders. */
let victim: { accountId: number; key: string }
/** The attacker: holds Twilio B's and Meta B's credentials, its own senders. */
let attacker: { accountId: number; key: string }
/** Two accounts without senders of their own: they send through the deployment's number. */
let shopD: { accountId: number; key: string }
let shopT: { accountId: number; key: string }

beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph) })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  victim = await t.account(10_000)
  attacker = await t.account(10_000)
  shopD = await t.account(10_000)
  shopT = await t.account(10_000)
  await assign(t, victim.accountId, ids.twilioA, true)
  await assign(t, victim.accountId, ids.metaA)
  await assign(t, attacker.accountId, ids.twilioB, true)
  await assign(t, attacker.accountId, ids.metaB)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

let phones = 0
/** A customer's number nobody has written to yet in this file. */
const customer = () => {
  const national = `81277${String(++phones).padStart(5, '0')}`
  return { phone: `+62${national}`, wa: `62${national}`, local: `0${national}` }
}

async function send(key: string, to: string, from?: number) {
  const answer = await t.api('POST', '/messages/send', key, { to, body: 'Your order shipped', ...(from ? { from: String(from) } : {}) })
  expect(answer.status).toBe(200)
  return answer.body.data as { message_id: string; balance_after: number }
}

const balanceOf = async (accountId: number) =>
  Number((await t.db.sql<{ balance: number }[]>`select balance from accounts where id = ${accountId}`)[0]!.balance)
const messageOf = async (sid: string) =>
  (await t.db.sql<{ status: string; refunded_at: Date | null }[]>`select status, refunded_at from messages where message_sid = ${sid}`)[0]!

function twilioPost(path: 'status' | 'inbound', fields: Record<string, string>, token: string) {
  return t.request('POST', `/provider/twilio/${path}`, {
    rawBody: new URLSearchParams(fields).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(token, `${BASE}/provider/twilio/${path}`, fields),
    },
  })
}

const twilioStatus = (sid: string, status: string, accountSid: string, token: string, errorCode?: string) =>
  twilioPost(
    'status',
    {
      MessageSid: sid,
      MessageStatus: status,
      AccountSid: accountSid,
      ApiVersion: '2010-04-01',
      ...(errorCode ? { ErrorCode: errorCode } : {}),
    },
    token,
  )

let inboundIds = 0
const twilioInbound = (o: { accountSid: string; token: string; to: string; from: string; body: string; replyTo?: string }) =>
  twilioPost(
    'inbound',
    {
      MessageSid: `SM${(++inboundIds).toString(16).padStart(32, '0')}`,
      AccountSid: o.accountSid,
      From: `whatsapp:${o.from}`,
      To: `whatsapp:${o.to}`,
      Body: o.body,
      NumMedia: '0',
      ...(o.replyTo ? { OriginalRepliedMessageSid: o.replyTo } : {}),
    },
    o.token,
  )

function metaPost(body: unknown, secret: string) {
  const raw = JSON.stringify(body)
  return t.request('POST', '/provider/meta/webhook', { rawBody: raw, headers: metaWebhookHeaders(raw, secret) })
}

const metadata = (phoneNumberId: string) => ({ display_phone_number: '15550000000', phone_number_id: phoneNumberId })
const statusChange = (phoneNumberId: string, wamid: string, status: string) => ({
  field: 'messages',
  value: {
    messaging_product: 'whatsapp',
    metadata: metadata(phoneNumberId),
    statuses: [
      {
        id: wamid,
        status,
        timestamp: '1750857384',
        recipient_id: '6281234567890',
        ...(status === 'failed' ? { errors: [{ code: 131026, title: 'Message undeliverable' }] } : {}),
      },
    ],
  },
})
const messagesValue = (from: string, text: string, phoneNumberId?: string) => ({
  messaging_product: 'whatsapp',
  ...(phoneNumberId ? { metadata: metadata(phoneNumberId) } : {}),
  contacts: [{ profile: { name: 'Ani' }, wa_id: from }],
  messages: [{ from, id: `wamid.in${++inboundIds}`, timestamp: '1750857384', type: 'text', text: { body: text } }],
})
const notification = (...changes: unknown[]) => ({ object: 'whatsapp_business_account', entry: [{ id: '200000000000002', changes }] })

const storedFrom = (phone: string) =>
  t.db.sql<{ account_id: number | null; sender_id: number | null; text: string }[]>`
    select account_id, sender_id, text from inbound_messages where phone = ${phone} order by id`
const optedOut = async (accountId: number, phone: string) =>
  (await t.db.sql`select 1 from opt_outs where account_id = ${accountId} and phone = ${phone}`).length > 0

describe("a status report signed with one tenant's own credentials", () => {
  test("Twilio: B's token, AccountSid B, failed for a message V sent through sender A: nothing changes, nothing refunded", async () => {
    const c = customer()
    const sent = await send(victim.key, c.local, ids.twilioA)
    const before = await balanceOf(victim.accountId)
    const forged = await twilioStatus(sent.message_id, 'failed', TWILIO_B.credentials.account_sid, TWILIO_B.credentials.auth_token, '30008')
    expect([forged.status, forged.body.data]).toEqual([200, { changed: false }])
    expect((await messageOf(sent.message_id)).status).toBe('sent')
    expect(await balanceOf(victim.accountId)).toBe(before)
    // A's own token still moves it.
    const own = await twilioStatus(sent.message_id, 'delivered', TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token)
    expect([own.status, own.body.data]).toEqual([200, { changed: true }])
  })

  test("Twilio: B's token cannot report for a message of the deployment's number either", async () => {
    const c = customer()
    const sent = await send(shopD.key, c.local)
    const forged = await twilioStatus(sent.message_id, 'failed', TWILIO_B.credentials.account_sid, TWILIO_B.credentials.auth_token, '30008')
    expect([forged.status, forged.body.data]).toEqual([200, { changed: false }])
    expect((await messageOf(sent.message_id)).status).toBe('sent')
  })

  test("Meta: B's app secret, B's phone_number_id, a status for V's wamid sent through Meta A: nothing changes", async () => {
    const c = customer()
    const sent = await send(victim.key, c.local, ids.metaA)
    const before = await balanceOf(victim.accountId)
    const forged = await metaPost(
      notification(statusChange(META_B.credentials.phone_number_id, sent.message_id, 'failed')),
      META_B.credentials.app_secret,
    )
    expect([forged.status, forged.body.data]).toEqual([200, { changed: false }])
    expect((await messageOf(sent.message_id)).status).toBe('sent')
    expect(await balanceOf(victim.accountId)).toBe(before)
    const own = await metaPost(
      notification(statusChange(META_A.credentials.phone_number_id, sent.message_id, 'read')),
      META_A.credentials.app_secret,
    )
    expect([own.status, own.body.data]).toEqual([200, { changed: true }])
  })

  test('a forged report parked before its SID was stored is never applied to the message, the real one is', async () => {
    const c = customer()
    const sid = `SM${'f0'.repeat(16)}`
    // The fake answers the send with a SID of the test's choosing, after B's forged report (and A's
    // real one) for it arrive: both are parked, the message not being stored yet.
    twilio.answer = async () => {
      twilio.answer = null
      const forged = await twilioStatus(sid, 'failed', TWILIO_B.credentials.account_sid, TWILIO_B.credentials.auth_token, '30008')
      const real = await twilioStatus(sid, 'delivered', TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token)
      expect([forged.status, real.status]).toEqual([200, 200])
      return Response.json({ sid, status: 'queued' }, { status: 201 })
    }
    const sent = await send(victim.key, c.local, ids.twilioA)
    expect(sent.message_id).toBe(sid)
    await t.runWorker('parked-reports')
    // Charged once, never refunded: the forged failure was not applied.
    expect(await messageOf(sid)).toMatchObject({ status: 'delivered', refunded_at: null })
    expect(await balanceOf(victim.accountId)).toBe(sent.balance_after)
    expect((await t.db.sql`select 1 from parked_reports where message_sid = ${sid}`).length).toBe(0)
  })
})

describe("an inbound message signed with one tenant's own credentials", () => {
  test("Twilio: B's token, To the deployment's number, D's customer writing STOP: 403, nothing stored, D's next send goes", async () => {
    const c = customer()
    await send(shopD.key, c.local)
    const forged = await twilioInbound({
      accountSid: TWILIO_B.credentials.account_sid,
      token: TWILIO_B.credentials.auth_token,
      to: ENV_NUMBER,
      from: c.phone,
      body: 'STOP',
    })
    expect(forged.status).toBe(403)
    expect((await storedFrom(c.phone)).length).toBe(0)
    expect(await optedOut(shopD.accountId, c.phone)).toBe(false)
    expect((await t.api('POST', '/messages/send', shopD.key, { to: c.local, body: 'still here' })).status).toBe(200)
  })

  test("Twilio: B's token, To sender A's number: 403, nothing stored", async () => {
    const c = customer()
    await send(victim.key, c.local, ids.twilioA)
    const forged = await twilioInbound({
      accountSid: TWILIO_B.credentials.account_sid,
      token: TWILIO_B.credentials.auth_token,
      to: TWILIO_A.number,
      from: c.phone,
      body: 'STOP',
    })
    expect(forged.status).toBe(403)
    expect((await storedFrom(c.phone)).length).toBe(0)
    expect(await optedOut(victim.accountId, c.phone)).toBe(false)
  })

  test("Meta: B's secret, one change for B's own number and one without metadata carrying D's customer's STOP: 403, nothing of it applied", async () => {
    const c = customer()
    const own = customer()
    await send(shopD.key, c.local)
    const forged = await metaPost(
      notification(
        { field: 'messages', value: messagesValue(own.wa, 'hello B', META_B.credentials.phone_number_id) },
        { field: 'messages', value: messagesValue(c.wa, 'STOP') },
      ),
      META_B.credentials.app_secret,
    )
    expect(forged.status).toBe(403)
    expect(forged.body.error).toBe('a messages change names no metadata.phone_number_id')
    expect((await storedFrom(c.phone)).length).toBe(0)
    expect((await storedFrom(own.phone)).length).toBe(0)
    expect(await optedOut(shopD.accountId, c.phone)).toBe(false)
    // B's own change alone is B's to make.
    const alone = await metaPost(
      notification({ field: 'messages', value: messagesValue(own.wa, 'hello B', META_B.credentials.phone_number_id) }),
      META_B.credentials.app_secret,
    )
    expect([alone.status, alone.body.data.inbound]).toEqual([200, 1])
    expect((await storedFrom(own.phone)).map((r) => r.sender_id)).toEqual([ids.metaB])
  })

  test("Meta: B's secret naming A's phone_number_id (a message or a user_preferences stop): 403, nothing stored", async () => {
    const c = customer()
    await send(victim.key, c.local, ids.metaA)
    const message = await metaPost(
      notification({ field: 'messages', value: messagesValue(c.wa, 'STOP', META_A.credentials.phone_number_id) }),
      META_B.credentials.app_secret,
    )
    expect(message.status).toBe(403)
    const preference = await metaPost(
      notification({
        field: 'user_preferences',
        value: {
          metadata: metadata(META_A.credentials.phone_number_id),
          user_preferences: [{ wa_id: c.wa, category: 'marketing_messages', value: 'stop', timestamp: 1750857384 }],
        },
      }),
      META_B.credentials.app_secret,
    )
    expect(preference.status).toBe(403)
    expect((await storedFrom(c.phone)).length).toBe(0)
    expect(await optedOut(victim.accountId, c.phone)).toBe(false)
  })
})

describe('a number several accounts share', () => {
  const envInbound = (from: string, body: string, replyTo?: string) =>
    twilioInbound({ accountSid: ENV_TWILIO.sid, token: ENV_TWILIO.token, to: ENV_NUMBER, from, body, replyTo })

  test("another account's send does not take the conversation: replies, STOP and events stay with the first", async () => {
    const c = customer()
    await send(shopD.key, c.local)
    // T sends the same customer one message through the shared number, hoping for the replies.
    const fromT = await send(shopT.key, c.local)
    expect((await envInbound(c.phone, 'where is my order?')).status).toBe(200)
    expect((await envInbound(c.phone, 'STOP')).status).toBe(200)
    expect((await storedFrom(c.phone)).map((r) => r.account_id)).toEqual([shopD.accountId, shopD.accountId])
    expect(await optedOut(shopD.accountId, c.phone)).toBe(true)
    expect(await optedOut(shopT.accountId, c.phone)).toBe(false)
    // A reply quoting T's message is T's (the customer chose it), and the conversation moves there.
    expect((await envInbound(c.phone, 'yes please', fromT.message_id)).status).toBe(200)
    expect((await envInbound(c.phone, 'and thanks')).status).toBe(200)
    expect((await storedFrom(c.phone)).map((r) => r.account_id)).toEqual([
      shopD.accountId,
      shopD.accountId,
      shopT.accountId,
      shopT.accountId,
    ])
    const holders = await t.admin('GET', `/conversation-holders?phone=${c.local}`)
    expect(holders.status).toBe(200)
    expect(holders.body.data.items).toMatchObject([{ sender_id: null, phone: c.phone, account_id: shopT.accountId, source: 'reply' }])
    // An account id no row can have is 422 naming the filter, not a database error (the fuzz test found a 500).
    const beyond = await t.admin('GET', '/conversation-holders?account_id=18446744073709551616')
    expect({ status: beyond.status, code: beyond.body.code }).toEqual({ status: 422, code: 'VALIDATION_ERROR' })
    expect(beyond.body.error).toContain('account_id')
  })

  test("quoting a message of another number changes nothing: the quote must be of this number's messages", async () => {
    const c = customer()
    await send(shopD.key, c.local)
    const elsewhere = await send(victim.key, c.local, ids.twilioA)
    expect((await envInbound(c.phone, 'hi', elsewhere.message_id)).status).toBe(200)
    expect((await storedFrom(c.phone)).map((r) => r.account_id)).toEqual([shopD.accountId])
  })

  test('an operator moves a conversation, with the messages already received, and it is audited', async () => {
    const c = customer()
    await send(shopD.key, c.local)
    await send(shopT.key, c.local)
    expect((await envInbound(c.phone, 'first')).status).toBe(200)
    const moved = await t.admin('PUT', '/conversation-holders', {
      phone: c.local,
      sender_id: null,
      account_id: shopT.accountId,
      move_messages: true,
    })
    expect(moved.status).toBe(200)
    expect(moved.body.data).toMatchObject({
      sender_id: null,
      phone: c.phone,
      account_id: shopT.accountId,
      source: 'operator',
      messages_moved: 1,
    })
    expect((await envInbound(c.phone, 'second')).status).toBe(200)
    expect((await storedFrom(c.phone)).map((r) => r.account_id)).toEqual([shopT.accountId, shopT.accountId])
    const [contact] = await t.db.sql`select 1 from contacts where account_id = ${shopT.accountId} and phone = ${c.phone}`
    expect(contact).toBeDefined()
    const [row] = await t.db.sql<{ actor: string; detail: Record<string, unknown> }[]>`
      select actor, detail from audit_log where action = 'conversation moved' and account_id = ${shopT.accountId} order by id desc limit 1`
    expect(row).toMatchObject({ actor: 'admin token', detail: { phone: c.phone, from_account_id: shopD.accountId, messages_moved: 1 } })
    // A stored sender's conversation goes only to an account the sender is given to.
    const refused = await t.admin('PUT', '/conversation-holders', { phone: c.local, sender_id: ids.twilioA, account_id: shopT.accountId })
    expect([refused.status, refused.body.code]).toEqual([422, 'VALIDATION_ERROR'])
    expect((await t.admin('PUT', '/conversation-holders', { phone: 'x', account_id: shopT.accountId })).status).toBe(422)
    expect((await t.admin('PUT', '/conversation-holders', { phone: c.local, account_id: 999_999 })).status).toBe(404)
  })
})

describe("the operator's conversation page on a shared number", () => {
  test('shows who holds the conversation and moves it to the account of the page; members see no such card', async () => {
    const c = customer()
    await send(shopD.key, c.local)
    await send(shopT.key, c.local)
    expect(
      (await twilioInbound({ accountSid: ENV_TWILIO.sid, token: ENV_TWILIO.token, to: ENV_NUMBER, from: c.phone, body: 'halo' })).status,
    ).toBe(200)
    const operator = (await dashboardUser(t, 'tenants-operator@example.com', 'correct horse battery')).client
    const page = `/dashboard/accounts/${shopT.accountId}/inbox/${c.phone.slice(1)}`
    const before = await operator.get(page)
    expect(before.status).toBe(200)
    expect(before.text).toContain('<h2 id="holder-title">Shared number</h2>')
    expect(before.text).toContain(`<a href="/dashboard/accounts/${shopD.accountId}">`)
    expect(before.text).toContain('Move the conversation to this account')
    const moved = await operator.post(`${page}/holder`, { _csrf: before.csrf!, move_messages: 'on' })
    expect(moved.status).toBe(303)
    expect((await storedFrom(c.phone)).map((r) => r.account_id)).toEqual([shopT.accountId])
    const after = await operator.get(page)
    expect(after.text).toContain('The conversation now belongs to this account with 1 received message(s).')
    expect(after.text).not.toContain('Move the conversation to this account')
    // Without the CSRF token nothing moves.
    const dPage = `/dashboard/accounts/${shopD.accountId}/inbox/${c.phone.slice(1)}`
    expect((await operator.post(`${dPage}/holder`, {})).status).toBe(403)
    expect((await storedFrom(c.phone)).map((r) => r.account_id)).toEqual([shopT.accountId])
    // A member's own conversation page shows no card, and cannot post one.
    const member = (await dashboardUser(t, 'tenants-member@example.com', 'correct horse battery', shopT.accountId)).client
    const own = await member.get(`/dashboard/inbox/${c.phone.slice(1)}`)
    expect(own.status).toBe(200)
    expect(own.text).not.toContain('Shared number')
    expect((await member.post(`/dashboard/inbox/${c.phone.slice(1)}/holder`, { _csrf: own.csrf! })).status).toBe(404)
  })
})

describe('late failures reported through credentials a tenant may hold', () => {
  test("a Twilio or Meta sender keeps them charged by default; an operator may trust the sender's; the default number's are refunded", async () => {
    const sender = await t.admin('GET', `/senders/${ids.twilioA}`)
    expect(sender.body.data.late_failures).toBe('keep')
    const c = customer()
    // V holds A's credentials (its own Twilio subaccount) and signs `failed` for its delivered message.
    const kept = await send(victim.key, c.local, ids.twilioA)
    const before = await balanceOf(victim.accountId)
    await twilioStatus(kept.message_id, 'delivered', TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token)
    const late = await twilioStatus(kept.message_id, 'failed', TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token, '30008')
    expect([late.status, late.body.data]).toEqual([200, { changed: true }])
    expect(await messageOf(kept.message_id)).toMatchObject({ status: 'failed', refunded_at: null })
    expect(await balanceOf(victim.accountId)).toBe(before)

    const trusted = await t.admin('PATCH', `/senders/${ids.twilioA}`, { late_failures: 'refund' })
    expect([trusted.status, trusted.body.data.late_failures]).toEqual([200, 'refund'])
    const refunded = await send(victim.key, c.local, ids.twilioA)
    const beforeRefund = await balanceOf(victim.accountId)
    await twilioStatus(refunded.message_id, 'failed', TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token, '30008')
    expect((await messageOf(refunded.message_id)).refunded_at).not.toBeNull()
    expect(await balanceOf(victim.accountId)).toBe(beforeRefund + (await costOf(refunded.message_id)))
    await t.admin('PATCH', `/senders/${ids.twilioA}`, { late_failures: 'keep' })

    const viaDefault = await send(shopD.key, c.local)
    const beforeDefault = await balanceOf(shopD.accountId)
    await twilioStatus(viaDefault.message_id, 'failed', ENV_TWILIO.sid, ENV_TWILIO.token, '30008')
    expect(await balanceOf(shopD.accountId)).toBe(beforeDefault + (await costOf(viaDefault.message_id)))

    expect((await t.admin('PATCH', `/senders/${ids.twilioA}`, { late_failures: 'sometimes' })).status).toBe(400)
  })
})

const costOf = async (sid: string) =>
  Number((await t.db.sql<{ cost: number }[]>`select cost from messages where message_sid = ${sid}`)[0]!.cost)
