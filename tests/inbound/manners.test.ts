// Conversations with manners (issue 32 §2), against the fake Graph API and the fake Twilio, which post
// real-shaped, signed inbound webhooks and check what the service asks of them as Meta and Twilio do:
// POST /inbound/{id}/read (with a typing indicator; never charged; another account's is 404; the
// provider's refusal answered without secrets), `reply_to` on a send (Meta's context; refused for
// another account's message and through Twilio, nothing charged), reactions both ways, and inbound
// replies that quote a message (GET /inbound, the conversation and the message.received event).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { assign, fourSenders, META_A, META_B, registerFakes, sendersEnv, TWILIO_A } from '../helpers/senders'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

const clock = new TestClock()
let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
/** The account with the four senders (twilioA its default). */
let acc: { accountId: number; key: string }
/** Another tenant, with its own key and a sender of its own (metaB). */
let other: { accountId: number; key: string }
beforeAll(async () => {
  t = await testApp({ clock, runOnClock: true, env: sendersEnv(twilio, graph, { WEBHOOK_ALLOW_PRIVATE: 'true' }) })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  acc = await t.account(1000, { price: 10 })
  other = await t.account(1000, { price: 10 })
  await assign(t, acc.accountId, ids.twilioA, true)
  await assign(t, acc.accountId, ids.metaA)
  await assign(t, other.accountId, ids.metaB, true)
  const callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
  twilio.callback = callback
  graph.callback = callback
  const hook = await t.api('POST', '/webhook', acc.key, { url: 'https://127.0.0.1:9/hook', events: ['message.received'] })
  expect(hook.status).toBe(200)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

let numbers = 0
const customer = () => `+628139${String(++numbers).padStart(6, '0')}`
const META_FROM = META_A.number

/** The balance, the ledger and the account's messages: what a call that is never charged leaves as they were. */
async function books(accountId: number) {
  const [row] = await t.db.sql<{ rows: number; messages: number }[]>`
    select (select count(*)::int from ledger where account_id = ${accountId}) as rows,
           (select count(*)::int from messages where account_id = ${accountId}) as messages`
  return { ...(await money(t, accountId)), ...row! }
}

/** A customer writes to metaA (optionally quoting or reacting); the stored inbound message as the account lists it. */
async function metaWrites(
  phone: string,
  text = 'Halo',
  extra: { context?: string; reaction?: { message_id: string; emoji: string } } = {},
) {
  const answer = await graph.customerWrites({ phoneNumberId: META_A.credentials.phone_number_id, from: phone, text, ...extra })
  expect(answer.status).toBe(200)
  const list = await t.api('GET', `/inbound?phone=${encodeURIComponent(phone)}`, acc.key)
  expect(list.status).toBe(200)
  return list.body.data.items[0]
}

async function twilioWrites(phone: string) {
  const answer = await twilio.customerWrites({
    accountSid: TWILIO_A.credentials.account_sid,
    to: TWILIO_A.number,
    from: phone,
    text: 'Halo',
  })
  expect(answer.status).toBe(200)
  return (await t.api('GET', `/inbound?phone=${encodeURIComponent(phone)}`, acc.key)).body.data.items[0]
}

/** What the fake Graph API was asked to send to `phone`, as sent. */
const sentToMeta = (phone: string) =>
  graph.requests.filter((r) => r.to === phone.slice(1) && r.status === 200).map((r) => JSON.parse(r.body))

describe('POST /inbound/{id}/read', () => {
  test('Meta: status read with a typing indicator, never charged; read_at shows; again without typing', async () => {
    const phone = customer()
    const inbound = await metaWrites(phone)
    expect(inbound.read_at).toBeNull()
    const before = await books(acc.accountId)
    const read = await t.api('POST', `/inbound/${inbound.id}/read`, acc.key, { typing: true })
    expect(read.status).toBe(200)
    expect(read.body.data).toEqual({ id: inbound.id, read_at: expect.any(String), typing: true })
    const asked = graph.requests.filter((r) => r.path.endsWith('/messages') && r.body.includes('"status":"read"')).at(-1)!
    expect(JSON.parse(asked.body)).toEqual({
      messaging_product: 'whatsapp',
      status: 'read',
      message_id: inbound.provider_message_id,
      typing_indicator: { type: 'text' },
    })
    expect(asked.path).toBe(`/v21.0/${META_A.credentials.phone_number_id}/messages`)
    expect(graph.reads.at(-1)).toEqual({
      phoneNumberId: META_A.credentials.phone_number_id,
      messageId: inbound.provider_message_id,
      typing: true,
    })
    // Without a body: read only.
    const plain = await t.api('POST', `/inbound/${inbound.id}/read`, acc.key)
    expect(plain.status).toBe(200)
    expect(graph.reads.at(-1)!.typing).toBe(false)
    expect(await books(acc.accountId)).toEqual(before)
    const one = await t.api('GET', `/inbound/${inbound.id}`, acc.key)
    expect(one.body.data.read_at).toBe(plain.body.data.read_at)
  })

  test("another account's message is 404 for an attacker with its own real key, and nothing reaches the provider", async () => {
    const phone = customer()
    const inbound = await metaWrites(phone)
    const reads = graph.reads.length
    const before = await books(other.accountId)
    const attack = await t.api('POST', `/inbound/${inbound.id}/read`, other.key, { typing: true })
    expect(attack.status).toBe(404)
    expect(attack.body).toMatchObject({ success: false, code: 'NOT_FOUND', error: `inbound message ${inbound.id} not found` })
    expect(graph.reads.length).toBe(reads)
    expect(await books(other.accountId)).toEqual(before)
    const [row] = await t.db.sql<{ read_marked_at: Date | null }[]>`select read_marked_at from inbound_messages where id = ${inbound.id}`
    expect(row!.read_marked_at).toBeNull()
  })

  test("the provider's refusal is 502 in its words, without the access token; nothing charged, nothing recorded", async () => {
    const phone = customer()
    const inbound = await metaWrites(phone)
    // The fake forgets the customer's message: Meta's refusal of an id it does not know (131009).
    graph.customerIds = graph.customerIds.filter((id) => id !== inbound.provider_message_id)
    graph.echoCredentials = true
    const before = await books(acc.accountId)
    try {
      const read = await t.api('POST', `/inbound/${inbound.id}/read`, acc.key, { typing: true })
      expect(read.status).toBe(502)
      expect(read.body.code).toBe('BAD_GATEWAY')
      expect(read.body.error).toContain('131009')
      expect(read.body.error).toContain('Parameter value is not valid')
      expect(JSON.stringify(read.body)).not.toContain(META_A.credentials.access_token)
    } finally {
      graph.echoCredentials = false
    }
    expect(await books(acc.accountId)).toEqual(before)
    expect((await t.api('GET', `/inbound/${inbound.id}`, acc.key)).body.data.read_at).toBeNull()
  })

  test('Twilio: its typing indicator marks read; without typing it is 422 naming why; a wrong body is 400', async () => {
    const phone = customer()
    const inbound = await twilioWrites(phone)
    const refused = await t.api('POST', `/inbound/${inbound.id}/read`, acc.key, { typing: false })
    expect(refused.status).toBe(422)
    expect(refused.body.error).toContain('Twilio marks a message read only with its typing indicator')
    const read = await t.api('POST', `/inbound/${inbound.id}/read`, acc.key, { typing: true })
    expect(read.status).toBe(200)
    expect(twilio.typings.at(-1)).toEqual({ account: TWILIO_A.credentials.account_sid, messageId: inbound.provider_message_id })
    expect((await t.api('POST', `/inbound/${inbound.id}/read`, acc.key, { typing: 'yes' })).status).toBe(400)
    expect((await t.api('POST', `/inbound/${inbound.id}/read`, acc.key, { typing: true, extra: 1 })).status).toBe(400)
  })
})

describe('reply_to on a send', () => {
  test("quotes an inbound message by our id or the provider's: Meta's context.message_id; charged as any message", async () => {
    const phone = customer()
    const inbound = await metaWrites(phone)
    const byId = await t.api('POST', '/messages/send', acc.key, {
      to: phone,
      body: 'Baik, kami cek',
      from: META_FROM,
      reply_to: String(inbound.id),
    })
    expect(byId.status).toBe(200)
    const byWamid = await t.api('POST', '/messages/send', acc.key, {
      to: phone,
      body: 'Sudah dikirim',
      from: META_FROM,
      reply_to: inbound.provider_message_id,
    })
    expect(byWamid.status).toBe(200)
    const sent = sentToMeta(phone)
    expect(sent.map((s) => s.context)).toEqual([{ message_id: inbound.provider_message_id }, { message_id: inbound.provider_message_id }])
    // The conversation shows what each outbound message quotes, with our id of it.
    const talk = await t.api('GET', `/conversations/${encodeURIComponent(phone)}?from=${encodeURIComponent(META_FROM)}`, acc.key)
    const outbound = talk.body.data.items.filter((i: { direction: string }) => i.direction === 'outbound')
    expect(outbound.map((i: { reply_to: unknown }) => i.reply_to)).toEqual([
      { provider_message_id: inbound.provider_message_id, id: inbound.id, direction: 'inbound' },
      { provider_message_id: inbound.provider_message_id, id: inbound.id, direction: 'inbound' },
    ])
  })

  test("another account's message, another phone's, or an unknown id is 422 before anything is charged", async () => {
    const phone = customer()
    await metaWrites(phone)
    // The other tenant's customer writes to its own number.
    const theirs = customer()
    expect((await graph.customerWrites({ phoneNumberId: '100000000000002', from: theirs, text: 'Rahasia' })).status).toBe(200)
    const [their] = await t.db.sql<{ id: number; provider_message_id: string }[]>`
      select id, provider_message_id from inbound_messages where phone = ${theirs}`
    const before = await books(acc.accountId)
    const requests = graph.requests.length
    for (const ref of [String(their!.id), their!.provider_message_id, 'wamid.unknown', '999999999999']) {
      const refused = await t.api('POST', '/messages/send', acc.key, { to: phone, body: 'Hai', from: META_FROM, reply_to: ref })
      expect(refused.status).toBe(422)
      expect(refused.body.error).toStartWith("reply_to: not a message of this account's conversation with")
      // The attacker quoting the other tenant's message to that tenant's own customer: refused too.
      const cross = await t.api('POST', '/messages/send', acc.key, { to: theirs, body: 'Hai', from: META_FROM, reply_to: ref })
      expect(cross.status).toBe(422)
    }
    expect(await books(acc.accountId)).toEqual(before)
    expect(graph.requests.length).toBe(requests)
  })

  test("on a number two accounts share: the other account's message in its own conversation is 422 for an attacker's real key", async () => {
    // The attacker (acc) is given metaB too, the other tenant's default number, where that tenant holds a customer's conversation.
    await assign(t, acc.accountId, ids.metaB)
    const phone = customer()
    const first = await t.api('POST', '/messages/send', other.key, { to: phone, body: 'Pesanan Anda', from: META_B.number })
    expect(first.status).toBe(200)
    expect((await graph.customerWrites({ phoneNumberId: META_B.credentials.phone_number_id, from: phone, text: 'Rahasia' })).status).toBe(
      200,
    )
    const [theirs] = await t.db.sql<{ id: number; account_id: number; provider_message_id: string }[]>`
      select id, account_id, provider_message_id from inbound_messages where phone = ${phone}`
    expect(Number(theirs!.account_id)).toBe(other.accountId)
    const before = await books(acc.accountId)
    for (const ref of [String(theirs!.id), theirs!.provider_message_id, first.body.data.message_id]) {
      const quoted = await t.api('POST', '/messages/send', acc.key, { to: phone, body: 'Hai', from: META_B.number, reply_to: ref })
      expect(quoted.status).toBe(422)
      const reacted = await t.api('POST', '/messages/send', acc.key, {
        to: phone,
        from: META_B.number,
        type: 'reaction',
        reaction: { message_id: ref, emoji: '👍' },
      })
      expect(reacted.status).toBe(422)
    }
    expect(await books(acc.accountId)).toEqual(before)
    // Nor may the attacker mark it read.
    expect((await t.api('POST', `/inbound/${theirs!.id}/read`, acc.key, { typing: true })).status).toBe(404)
  })

  test('through Twilio: 422 naming why, nothing charged; with a reaction: 400', async () => {
    const phone = customer()
    const inbound = await twilioWrites(phone)
    const before = await books(acc.accountId)
    const refused = await t.api('POST', '/messages/send', acc.key, { to: phone, body: 'Hai', reply_to: String(inbound.id) })
    expect(refused.status).toBe(422)
    expect(refused.body.error).toContain("Twilio's Messages API cannot quote a message")
    const both = await t.api('POST', '/messages/send', acc.key, {
      to: phone,
      type: 'reaction',
      reaction: { message_id: String(inbound.id), emoji: '👍' },
      reply_to: String(inbound.id),
    })
    expect(both.status).toBe(400)
    expect(await books(acc.accountId)).toEqual(before)
  })
})

describe('reactions', () => {
  test("a sent reaction goes as Meta's type reaction, is charged as a service message and shows on the inbound message", async () => {
    const phone = customer()
    const inbound = await metaWrites(phone, 'Pesanan sudah sampai')
    const before = await money(t, acc.accountId)
    const reacted = await t.api('POST', '/messages/send', acc.key, {
      to: phone,
      from: META_FROM,
      type: 'reaction',
      reaction: { message_id: String(inbound.id), emoji: '👍' },
    })
    expect(reacted.status).toBe(200)
    expect(reacted.body.data.cost).toBe(10)
    expect((await money(t, acc.accountId)).balance).toBe(before.balance - 10)
    expect(sentToMeta(phone).at(-1)).toEqual({
      messaging_product: 'whatsapp',
      to: phone.slice(1),
      type: 'reaction',
      reaction: { message_id: inbound.provider_message_id, emoji: '👍' },
    })
    const one = await t.api('GET', `/inbound/${inbound.id}`, acc.key)
    expect(one.body.data.reactions).toEqual([{ emoji: '👍', by: 'business', at: expect.any(String) }])
    // An empty emoji removes it.
    const removed = await t.api('POST', '/messages/send', acc.key, {
      to: phone,
      from: META_FROM,
      type: 'reaction',
      reaction: { message_id: inbound.provider_message_id, emoji: '' },
    })
    expect(removed.status).toBe(200)
    expect(sentToMeta(phone).at(-1).reaction).toEqual({ message_id: inbound.provider_message_id, emoji: '' })
    clock.advance(1000)
    expect((await t.api('GET', `/inbound/${inbound.id}`, acc.key)).body.data.reactions).toEqual([])
    // Not an emoji: 422; through Twilio: 422; both before charging.
    const word = await t.api('POST', '/messages/send', acc.key, {
      to: phone,
      from: META_FROM,
      type: 'reaction',
      reaction: { message_id: String(inbound.id), emoji: 'ok' },
    })
    expect(word.status).toBe(422)
    const viaTwilio = await t.api('POST', '/messages/send', acc.key, {
      to: phone,
      type: 'reaction',
      reaction: { message_id: String(inbound.id), emoji: '👍' },
    })
    expect(viaTwilio.status).toBe(422)
  })

  test("a customer's reaction to our message shows on it in the conversation; one quoting our message carries reply_to", async () => {
    const phone = customer()
    await metaWrites(phone)
    const sent = await t.api('POST', '/messages/send', acc.key, { to: phone, body: 'Paket dikirim besok', from: META_FROM })
    expect(sent.status).toBe(200)
    const wamid = sent.body.data.message_id
    const reaction = await metaWrites(phone, '', { reaction: { message_id: wamid, emoji: '❤️' } })
    expect(reaction).toMatchObject({ type: 'reaction', content: { emoji: '❤️', message_id: wamid } })
    const reply = await metaWrites(phone, 'Terima kasih', { context: wamid })
    const [ours] = await t.db.sql<{ id: number }[]>`select id from messages where message_sid = ${wamid}`
    expect(reply.reply_to).toEqual({ provider_message_id: wamid, id: Number(ours!.id), direction: 'outbound' })
    const talk = await t.api('GET', `/conversations/${encodeURIComponent(phone)}?from=${encodeURIComponent(META_FROM)}`, acc.key)
    const item = talk.body.data.items.find((i: { message_sid: string }) => i.message_sid === wamid)
    expect(item.reactions).toEqual([{ emoji: '❤️', by: 'customer', at: expect.any(String) }])
    // The message.received event of the reply says what it quotes.
    const payloads = (
      await t.db.sql<{ payload: string }[]>`select payload from webhook_events where payload like ${'%message.received%'}`
    ).map((r) => JSON.parse(r.payload))
    const event = payloads.find((p) => p.data.id === reply.id)
    expect(event.data.reply_to).toEqual({ provider_message_id: wamid, id: Number(ours!.id), direction: 'outbound' })
  })
})
