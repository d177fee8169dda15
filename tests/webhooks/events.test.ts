// Events beyond message.status: a registration chooses its events (HTTP rules), and the new events
// reach only the receivers that chose them, signed like every delivery, through the pipeline the
// service runs: message.received when a customer writes (Twilio's inbound webhook signed with the
// official package, and the simulator), balance.low once per crossing of the account's threshold
// (single sends, bulk, concurrent sends). Replay and the delivery log show them with their type.
// On a test clock: the delivery pipeline is stepped (deliverAll) once the events are written, so every
// request has arrived when a step ends.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import twilioSdk from 'twilio'
import { Webhook } from 'standardwebhooks'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { deliverAll } from '../helpers/delivery'
import { makeTestTls, startReceiver, type Received, type Receiver, type TestTls } from '../helpers/receiver'
import { TEST_TWILIO_AUTH_TOKEN } from '../helpers/reports'
import { TestClock } from '../../src/lib/clock'
import { createApp } from '../../src/app'
import { eventWakes } from '../helpers/event-wakes'

let t: TestApp
let tls: TestTls
let rx: Receiver
const clock = new TestClock()

beforeAll(async () => {
  tls = makeTestTls()
  rx = startReceiver(tls)
  t = await testApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile }, clock, runOnClock: true })
}, 60_000)
afterAll(async () => {
  await t.close()
  rx.stop()
  tls.remove()
}, 30_000)
afterEach(() => rx.reset())

const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/

/** A key of `accountId` (a new account when none) registered at `path` of the receiver for `events`. */
async function registered(path: string, events: string[] | undefined, accountId?: number) {
  let account: { accountId: number; key: string; keyId: number }
  if (accountId === undefined) account = await t.account(1000, { price: 1 })
  else {
    const created = await t.admin('POST', `/accounts/${accountId}/keys`, { label: path })
    account = { accountId, key: created.body.data.key, keyId: created.body.data.id }
  }
  const res = await t.api('POST', '/webhook', account.key, { url: rx.url('localhost', path), ...(events ? { events } : {}) })
  expect(res.status).toBe(200)
  return { ...account, secret: res.body.data.signing_secret as string }
}

/**
 * Steps the delivery pipeline until nothing is due. Inbound messages, opt-outs and balance checks
 * stamp their events with the database's now() (they do not take the clock): the clock is brought up
 * to the present first (it never waits), so those are due as well.
 */
async function deliver() {
  await clock.advanceTo(Date.now())
  return deliverAll(t)
}

const at = (path: string) => rx.requests.filter((r) => r.path === path)
const verify = (secret: string, r: Received) => new Webhook(secret).verify(r.body, r.headers) as { event: string; data: any }
const eventsOf = (keyId: number) =>
  t.db.sql<{ event: string; payload: string }[]>`select event, payload from webhook_events where api_key_id = ${keyId} order by id`

describe('registration: events', () => {
  test('default ["message.status"], shown by POST and GET', async () => {
    const { key } = await t.account()
    const res = await t.api('POST', '/webhook', key, { url: 'https://93.184.216.34/hook' })
    expect(res.body.data.events).toEqual(['message.status'])
    expect((await t.api('GET', '/webhook', key)).body).toEqual({
      success: true,
      data: { url: 'https://93.184.216.34/hook', events: ['message.status'] },
    })
  })

  test('a choice is stored once each, in the known order; a replacement without events keeps it, one with events changes it', async () => {
    const { key } = await t.account()
    const chosen = await t.api('POST', '/webhook', key, {
      url: 'https://93.184.216.34/a',
      events: ['balance.low', 'message.received', 'balance.low', 'contact.opted_in', 'contact.opted_out'],
    })
    expect(chosen.status).toBe(200)
    expect(chosen.body.data.events).toEqual(['message.received', 'contact.opted_out', 'contact.opted_in', 'balance.low'])
    const kept = await t.api('POST', '/webhook', key, { url: 'https://93.184.216.34/b' })
    expect(kept.body.data).toMatchObject({ url: 'https://93.184.216.34/b', events: chosen.body.data.events })
    expect(kept.body.data.signing_secret).toBe(chosen.body.data.signing_secret)
    const changed = await t.api('POST', '/webhook', key, { url: 'https://93.184.216.34/b', events: ['message.status'] })
    expect((await t.api('GET', '/webhook', key)).body.data.events).toEqual(['message.status'])
    expect(changed.body.data.events).toEqual(['message.status'])
  })

  test('422 VALIDATION_ERROR naming unknown events, and for an empty list; nothing registered', async () => {
    const { key } = await t.account()
    const unknown = await t.api('POST', '/webhook', key, {
      url: 'https://93.184.216.34/hook',
      events: ['message.status', 'order.paid', 'message.Received'],
    })
    expect(unknown.status).toBe(422)
    expect(unknown.body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
    expect(unknown.body.error).toContain('"order.paid"')
    expect(unknown.body.error).toContain('"message.Received"')
    expect(unknown.body.error).not.toContain('"message.status"')
    const empty = await t.api('POST', '/webhook', key, { url: 'https://93.184.216.34/hook', events: [] })
    expect(empty.status).toBe(422)
    expect(empty.body).toMatchObject({ success: false, code: 'VALIDATION_ERROR', error: expect.stringContaining('events:') })
    expect((await t.api('GET', '/webhook', key)).status).toBe(404)
    const notList = await t.api('POST', '/webhook', key, { url: 'https://93.184.216.34/hook', events: 'message.status' })
    expect(notList.status).toBe(400)
    expect(notList.body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
  })
})

let numbers = 0
const customer = () => `+62813${String(7_000_000 + ++numbers)}`
const inboundUrl = () => `${t.config.publicBaseUrl}/provider/twilio/inbound`

/** Twilio's "a message comes in" webhook from `phone` to the default number, signed with the official package. */
function twilioInbound(phone: string, sid: string, body: string, extra: Record<string, string> = {}) {
  const fields: Record<string, string> = {
    MessageSid: sid,
    SmsMessageSid: sid,
    AccountSid: `AC${'0'.repeat(32)}`,
    From: `whatsapp:${phone}`,
    To: 'whatsapp:+14155238886',
    ProfileName: 'Rina',
    WaId: phone.slice(1),
    NumMedia: '0',
    MessageType: 'text',
    Body: body,
    ...extra,
  }
  return t.request('POST', '/provider/twilio/inbound', {
    rawBody: new URLSearchParams(fields).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(TEST_TWILIO_AUTH_TOKEN, inboundUrl(), fields),
    },
  })
}

describe('message.received', () => {
  test('a receiver that chose it gets one signed event per inbound message (a repeat makes none); one registered for message.status only gets nothing', async () => {
    const received = await registered('/received', ['message.status', 'message.received'])
    const statusOnly = await registered('/status', undefined, received.accountId)
    const phone = customer()
    // The account rule: the inbound message belongs to the account that last wrote the phone.
    expect((await t.api('POST', '/messages/send', statusOnly.key, { to: phone, body: 'Tagihan' })).status).toBe(200)

    const sid = `SM${'e'.repeat(31)}1`
    expect((await twilioInbound(phone, sid, 'Sudah bayar')).status).toBe(200)
    expect((await twilioInbound(phone, sid, 'Sudah bayar')).status).toBe(200) // Twilio's repeat delivery
    await deliver()
    expect(at('/received')).toHaveLength(1)
    const event = at('/received')[0]!
    const payload = verify(received.secret, event)
    const inbound = await t.api('GET', '/inbound', statusOnly.key)
    const stored = inbound.body.data.items.find((i: { phone: string }) => i.phone === phone)
    expect(event.body).toBe(
      JSON.stringify({
        event: 'message.received',
        timestamp: (payload as unknown as { timestamp: string }).timestamp,
        data: {
          id: stored.id,
          phone,
          name: 'Rina',
          type: 'text',
          text: 'Sudah bayar',
          content: { body: 'Sudah bayar' },
          sender_id: null,
          received_at: stored.received_at,
        },
      }),
    )
    expect((payload as unknown as { timestamp: string }).timestamp).toMatch(TIMESTAMP)
    // Recorded in the inbound message's transaction: the status-only key has no such event, and got nothing.
    expect((await eventsOf(statusOnly.keyId)).map((e) => e.event)).not.toContain('message.received')
    expect(at('/status')).toHaveLength(0)
    expect((await eventsOf(received.keyId)).filter((e) => e.event === 'message.received')).toHaveLength(1)
  })

  test("a reply to a button carries the chosen button's id", async () => {
    const received = await registered('/button', ['message.received'])
    const phone = customer()
    await t.api('POST', '/messages/send', received.key, { to: phone, body: 'Kirim sekarang?' })
    const answer = await twilioInbound(phone, `SM${'b'.repeat(31)}2`, 'Ya, kirim', {
      ButtonText: 'Ya, kirim',
      ButtonPayload: 'confirm-1042',
    })
    expect(answer.status).toBe(200)
    await deliver()
    const [event] = rx.requests
    expect(verify(received.secret, event!).data).toMatchObject({
      phone,
      type: 'button',
      text: 'Ya, kirim',
      content: { payload: 'confirm-1042', text: 'Ya, kirim' },
    })
  })

  test("the simulator's inbound message makes the same event, delivered at once after the commit", async () => {
    const received = await registered('/sim', ['message.received'])
    const phone = customer()
    expect((await t.api('POST', '/messages/send', received.key, { to: phone, body: 'Halo' })).status).toBe(200)
    // The same service, its wake-ups heard: the commit wakes the delivery worker (no waiting for its poll)
    // by the NOTIFY its statement sent (sql/0034), on the LISTEN the worker subscribes to.
    const wakes = await eventWakes(t.db)
    const before = await wakes.settled()
    const service = createApp(t.deps)
    const wrote = await service.handle(
      new Request('http://localhost/admin/v1/simulator/inbound', {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ phone, body: 'Balas ya' }),
      }),
    )
    expect(wrote.status).toBe(200)
    const inboundId = ((await wrote.json()) as { data: { inbound_id: number } }).data.inbound_id
    expect(await wakes.settled()).toBeGreaterThan(before)
    await wakes.stop()
    await deliver()
    const [event] = rx.requests
    expect(event).toBeDefined()
    const payload = verify(received.secret, event!)
    expect(payload).toMatchObject({
      event: 'message.received',
      data: { id: inboundId, phone, type: 'text', text: 'Balas ya' },
    })
    // A registration without message.status gets no status event of its own messages.
    expect((await eventsOf(received.keyId)).map((e) => e.event)).toEqual(['message.received'])
  })

  test('its delivery is listed with its type and replayed with the same webhook-id and bytes', async () => {
    const received = await registered('/replay', ['message.received'])
    const phone = customer()
    await t.api('POST', '/messages/send', received.key, { to: phone, body: 'Halo' })
    await t.admin('POST', '/simulator/inbound', { phone, body: 'Sekali lagi' })
    await deliver()
    const [first] = rx.requests
    const list = await t.admin('GET', `/keys/${received.keyId}/deliveries`)
    expect(list.status).toBe(200)
    const item = list.body.data.items[0]
    expect(item).toMatchObject({
      event: 'message.received',
      message_sid: null,
      status: 'delivered',
      webhook_id: first!.headers['webhook-id'],
    })
    expect(item.payload).toEqual(JSON.parse(first!.body))
    const replayed = await t.admin('POST', `/deliveries/${item.id}/replay`)
    expect(replayed.status).toBe(200)
    expect(replayed.body.data.event).toBe('message.received')
    await deliver()
    const [, again] = rx.requests
    expect(again!.headers['webhook-id']).toBe(first!.headers['webhook-id'])
    expect(again!.body).toBe(first!.body)
    verify(received.secret, again!)
  })
})

describe('balance.low', () => {
  /** An account with `balance` at price 1, a threshold, and a key registered for balance.low only. */
  async function lowAccount(balance: number, threshold: number, path: string) {
    const { accountId, key, keyId } = await t.account(balance, { price: 1 })
    const set = await t.admin('PATCH', `/accounts/${accountId}`, { low_balance_threshold: threshold })
    expect(set.status).toBe(200)
    expect(set.body.data).toMatchObject({ id: accountId, wa_balance: balance, low_balance_threshold: threshold })
    const res = await t.api('POST', '/webhook', key, { url: rx.url('localhost', path), events: ['balance.low'] })
    return { accountId, key, keyId, secret: res.body.data.signing_secret as string }
  }
  const lows = async (keyId: number) =>
    (await eventsOf(keyId)).filter((e) => e.event === 'balance.low').map((e) => JSON.parse(e.payload).data)
  let n = 0
  const send = (key: string) => t.api('POST', '/messages/send', key, { to: `0813${String(8_000_000 + ++n)}`, body: 'x' })

  test('once per crossing: two debits below make one event; a top-up back to the threshold re-arms it', async () => {
    const a = await lowAccount(6, 5, '/low')
    expect((await send(a.key)).status).toBe(200) // 6 → 5: at the threshold, not below
    expect(await lows(a.keyId)).toEqual([])
    expect((await send(a.key)).status).toBe(200) // 5 → 4: crossed
    expect((await send(a.key)).status).toBe(200) // 4 → 3: already below
    expect(await lows(a.keyId)).toEqual([{ balance: 4, threshold: 5 }])
    await deliver()
    const [event] = rx.requests
    expect(verify(a.secret, event!)).toMatchObject({ event: 'balance.low', data: { balance: 4, threshold: 5 } })
    expect(event!.body).toMatch(/^\{"event":"balance\.low","timestamp":"[\d :-]{19}","data":\{"balance":4,"threshold":5\}\}$/)

    await t.admin('POST', `/accounts/${a.accountId}/topups`, { amount: 1 }) // 4: still below, not re-armed
    expect((await send(a.key)).status).toBe(200) // 4 → 3
    expect(await lows(a.keyId)).toHaveLength(1)
    await t.admin('POST', `/accounts/${a.accountId}/topups`, { amount: 9 }) // 12: re-armed
    // A bulk charge crossing it: one event with the balance after the charge.
    const bulk = await t.api('POST', '/messages/bulk', a.key, {
      messages: Array.from({ length: 8 }, (_, i) => ({ to: `0813${String(8_100_000 + i + n * 10)}`, body: 'b' })),
    })
    expect(bulk.status).toBe(200)
    expect(await lows(a.keyId)).toEqual([
      { balance: 4, threshold: 5 },
      { balance: 4, threshold: 5 },
    ])
    await deliver()
    expect(at('/low')).toHaveLength(2)
  })

  test('concurrent sends across the threshold: exactly one event', async () => {
    const a = await lowAccount(20, 10, '/race')
    const answers = await Promise.all(Array.from({ length: 20 }, () => send(a.key)))
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200))
    // Concurrent single sends share charge statements (group commit): whichever took it below says so, once.
    const events = await lows(a.keyId)
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ threshold: 10 })
    expect(events[0].balance).toBeLessThan(10)
    const [balance] = await t.db.sql<{ balance: number }[]>`select balance from accounts where id = ${a.accountId}`
    expect(Number(balance!.balance)).toBe(0)
  })

  test('a campaign charging across the threshold: one event', async () => {
    const a = await lowAccount(100, 50, '/campaign')
    for (let i = 0; i < 8; i++) {
      expect((await t.api('POST', '/contacts', a.key, { name: `C${i}`, phone: `0813${String(8_200_000 + i)}`, tags: 'vip' })).status).toBe(
        201,
      )
    }
    await t.admin('PUT', '/price', { cost_per_message: 10, account_id: a.accountId })
    const template = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'promo', body: 'Hi {{name}}' })
    const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
    const draft = await t.api('POST', '/campaigns', a.key, {
      name: 'low',
      template_id: template.body.data.id,
      segment_id: segment.body.data.id,
    })
    const id = draft.body.data.campaign.id
    expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
    // The runner's steps, until it has sent the campaign.
    while ((await t.api('GET', `/campaigns/${id}`, a.key)).body.data.campaign.status !== 'sent') await t.runWorker('campaign-runner')
    const [balance] = await t.db.sql<{ balance: number }[]>`select balance from accounts where id = ${a.accountId}`
    expect(Number(balance!.balance)).toBe(20)
    const events = await lows(a.keyId)
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ threshold: 50 })
    expect(events[0].balance).toBeLessThan(50)
  })

  test('no threshold, or a registration that did not choose it: no event', async () => {
    const { accountId, key, keyId } = await t.account(3, { price: 1 })
    await t.api('POST', '/webhook', key, { url: rx.url('localhost', '/none'), events: ['balance.low'] })
    const other = await registered('/other', undefined, accountId)
    expect((await send(key)).status).toBe(200)
    await t.admin('PATCH', `/accounts/${accountId}`, { low_balance_threshold: 2 })
    expect((await send(key)).status).toBe(200) // 2 → 1: crossed
    expect(await lows(keyId)).toEqual([{ balance: 1, threshold: 2 }])
    expect(await lows(other.keyId)).toEqual([])
    await t.admin('PATCH', `/accounts/${accountId}`, { low_balance_threshold: null })
    await t.admin('POST', `/accounts/${accountId}/topups`, { amount: 5 })
    expect((await send(key)).status).toBe(200)
    expect(await lows(keyId)).toHaveLength(1)
  })

  test('the threshold in the admin API: set at creation, shown, 422 for a bad value, 404 for no account', async () => {
    const created = await t.admin('POST', '/accounts', { name: 'low', balance: 10, low_balance_threshold: 3 })
    expect(created.status).toBe(201)
    expect(created.body.data.low_balance_threshold).toBe(3)
    expect((await t.admin('GET', `/accounts/${created.body.data.id}`)).body.data.low_balance_threshold).toBe(3)
    expect((await t.admin('POST', '/accounts', { name: 'plain' })).body.data.low_balance_threshold).toBeNull()
    for (const bad of [0, -5]) {
      const res = await t.admin('PATCH', `/accounts/${created.body.data.id}`, { low_balance_threshold: bad })
      expect(res.status).toBe(422)
      expect(res.body).toMatchObject({ success: false, code: 'VALIDATION_ERROR', error: expect.stringContaining('low_balance_threshold') })
    }
    expect((await t.admin('PATCH', '/accounts/999999999', { low_balance_threshold: 5 })).status).toBe(404)
    expect((await t.admin('PATCH', `/accounts/${created.body.data.id}`, {})).status).toBe(400)
  })
})

describe('contact.opted_out and contact.opted_in', () => {
  test('a STOP and a START from the customer each make one signed event for the receivers that chose them (a repeat makes none); removing the opt-out by API makes contact.opted_in', async () => {
    const chosen = await registered('/consent', ['contact.opted_out', 'contact.opted_in'])
    const statusOnly = await registered('/consent-status', undefined, chosen.accountId)
    const phone = customer()
    // The account rule: the STOP belongs to the account that last wrote the phone.
    expect((await t.api('POST', '/messages/send', chosen.key, { to: phone, body: 'Promo' })).status).toBe(200)

    const stop = `SM${'c'.repeat(31)}1`
    expect((await twilioInbound(phone, stop, 'STOP')).status).toBe(200)
    expect((await twilioInbound(phone, stop, 'STOP')).status).toBe(200) // Twilio's repeat delivery
    await deliver()
    expect(at('/consent')).toHaveLength(1)
    const out = verify(chosen.secret, at('/consent')[0]!)
    const stored = (await t.api('GET', '/inbound', chosen.key)).body.data.items.find((i: { phone: string }) => i.phone === phone)
    expect(out as unknown).toEqual({
      event: 'contact.opted_out',
      timestamp: expect.stringMatching(TIMESTAMP),
      data: { phone, contact_id: stored.contact_id, source: 'inbound', detail: 'STOP', inbound_message_id: stored.id },
    })
    // Refused now, before charging.
    expect((await t.api('POST', '/messages/send', chosen.key, { to: phone, body: 'Promo' })).body.code).toBe('RECIPIENT_OPTED_OUT')

    expect((await twilioInbound(phone, `SM${'c'.repeat(31)}2`, 'mulai')).status).toBe(200)
    await deliver()
    expect(at('/consent').length).toBeGreaterThanOrEqual(2)
    expect(verify(chosen.secret, at('/consent')[1]!)).toMatchObject({
      event: 'contact.opted_in',
      data: { phone, source: 'inbound', detail: 'MULAI' },
    })

    // By hand: an opt-out and its removal through the API.
    expect((await t.api('POST', '/opt-outs', chosen.key, { phone })).status).toBe(201)
    expect((await t.api('DELETE', `/opt-outs/${encodeURIComponent(phone)}`, chosen.key)).status).toBe(200)
    await deliver()
    expect(at('/consent').map((r) => verify(chosen.secret, r).event)).toEqual([
      'contact.opted_out',
      'contact.opted_in',
      'contact.opted_out',
      'contact.opted_in',
    ])
    expect(verify(chosen.secret, at('/consent')[3]!).data).toMatchObject({ source: 'api', detail: null, inbound_message_id: null })
    // The registration that chose only message.status got none of them, and has no such event recorded.
    expect(at('/consent-status')).toHaveLength(0)
    expect((await eventsOf(statusOnly.keyId)).filter((e) => e.event.startsWith('contact.'))).toHaveLength(0)
  })
})
