// Inbound messages through the simulator (POST /admin/v1/simulator/inbound with a body) and the
// integrator's and operator's routes: GET /inbound (filters, pagination), GET /inbound/{id},
// GET /conversations/{phone} (both directions in time order, the 24-hour window), GET /admin/v1/inbound.
// The account rule for the default number: the account that last wrote to the phone, else none.
// Messages are placed in time by moving a test clock before each one arrives or is sent.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { formatTimestamp } from '../../src/lib/time'

const HOUR = 3_600_000
const clock = new TestClock()
let t: TestApp
beforeAll(async () => {
  t = await testApp({ clock, runOnClock: true })
}, 60_000)
afterAll(() => t.close())

/** A number of its own for each test, so that tests do not see each other's messages. */
let numbers = 0
const phoneOf = () => `+628139${String(++numbers).padStart(6, '0')}`

const writeIn = (phone: string, body?: string, extra: Record<string, unknown> = {}) =>
  t.admin('POST', '/simulator/inbound', { phone, ...(body === undefined ? {} : { body }), ...extra })

/** An account that wrote `phone` through the default number (so inbound from it is the account's). */
async function accountWriting(phone: string) {
  const account = await t.account(1000, { price: 1 })
  const sent = await t.api('POST', '/messages/send', account.key, { to: phone, body: 'Pesanan Anda sudah dikirim' })
  expect(sent.status).toBe(200)
  return account
}

describe('the simulator writes in', () => {
  test('with a body: a real inbound text message, linked to the account that last wrote the phone, and a contact named as given', async () => {
    const phone = phoneOf()
    const account = await accountWriting(phone)
    const answer = await writeIn(phone.replace('+62', '0'), 'Terima kasih!', { name: 'Budi' })
    expect(answer.status).toBe(200)
    // Written to the deployment's number (sender null), the one the account wrote from: its message.
    expect(answer.body.data).toEqual({
      phone,
      window_until: expect.any(String),
      inbound_id: expect.any(Number),
      sender: null,
      account_id: account.accountId,
    })
    const one = await t.api('GET', `/inbound/${answer.body.data.inbound_id}`, account.key)
    expect(one.status).toBe(200)
    expect(one.body.data).toMatchObject({
      provider: 'simulator',
      sender_id: null,
      account_id: account.accountId,
      phone,
      name: 'Budi',
      type: 'text',
      text: 'Terima kasih!',
      content: { body: 'Terima kasih!' },
    })
    const [contact] = await t.db.sql<{ id: number; name: string }[]>`
      select id, name from contacts where account_id = ${account.accountId} and phone = ${phone}`
    expect(contact!.name).toBe('Budi')
    expect(one.body.data.contact_id).toBe(Number(contact!.id))
    // A second message keeps the contact (and its name).
    await writeIn(phone, 'Satu lagi', { name: 'Budi Santoso' })
    const [contacts] = await t.db.sql<{ n: number }[]>`
      select count(*)::int as n from contacts where account_id = ${account.accountId} and phone = ${phone}`
    expect(contacts!.n).toBe(1)
  })

  test('nobody wrote the phone through the default number: stored without an account, seen by operators only', async () => {
    const phone = phoneOf()
    const answer = await writeIn(phone, 'Halo?')
    expect(answer.status).toBe(200)
    const id = answer.body.data.inbound_id
    const [row] = await t.db.sql<{ account_id: number | null; contact_id: number | null }[]>`
      select account_id, contact_id from inbound_messages where id = ${id}`
    expect(row).toEqual({ account_id: null, contact_id: null })
    const unassigned = await t.admin('GET', `/inbound?account_id=0&phone=${encodeURIComponent(phone)}`)
    expect(unassigned.status).toBe(200)
    expect(unassigned.body.data.items.map((i: { id: number }) => i.id)).toEqual([id])
    const someone = await t.account(10)
    expect((await t.api('GET', `/inbound/${id}`, someone.key)).status).toBe(404)
    expect((await t.api('GET', `/inbound?phone=${encodeURIComponent(phone)}`, someone.key)).body.data.items).toEqual([])
  })

  test('without a body a placeholder text is stored (it is what opens the window); a sender number that is no stored sender is 422', async () => {
    const phone = phoneOf()
    const answer = await writeIn(phone)
    // Nobody wrote to this phone: the deployment's number, no account's.
    expect(answer.body.data).toEqual({
      phone,
      window_until: expect.any(String),
      inbound_id: expect.any(Number),
      sender: null,
      account_id: null,
    })
    const stored = await t.db.sql<{ text: string }[]>`select text from inbound_messages where phone = ${phone}`
    expect([...stored]).toEqual([{ text: '(the customer wrote in)' }])
    const bad = await writeIn(phone, 'Halo', { sender: '+14155559999' })
    expect(bad.status).toBe(422)
    expect(bad.body).toEqual(errorEnvelope(bad.headers, 'VALIDATION_ERROR'))
    expect((await writeIn(phone, '   ')).status).toBe(422)
    expect((await writeIn(phone, 'Halo', { sender: 'not a number' })).body.error).toBe(
      "sender: a stored sender's number, e.g. +14155550101",
    )
  })
})

describe('GET /inbound and GET /inbound/{id}', () => {
  test('newest first, filtered by phone and by received_at, paginated with has_more; 422 for a bad date or phone', async () => {
    const phone = phoneOf()
    const other = phoneOf()
    const account = await accountWriting(phone)
    await t.api('POST', '/messages/send', account.key, { to: other, body: 'Halo' })
    // Received at known times: 03:00, 04:00, 05:00 UTC of the next day, the other one at 06:00.
    const base = new Date(Math.floor(clock.now().getTime() / (24 * HOUR) + 1) * 24 * HOUR + 3 * HOUR)
    const ids: number[] = []
    for (const [i, [to, text]] of [
      [phone, 'satu'],
      [phone, 'dua'],
      [phone, 'tiga'],
      [other, 'lain'],
    ].entries()) {
      await clock.advanceTo(base.getTime() + i * HOUR)
      ids.push((await writeIn(to!, text)).body.data.inbound_id)
    }
    const at = (hours: number) => encodeURIComponent(formatTimestamp(new Date(base.getTime() + hours * HOUR), t.config.timezone)!)

    const all = await t.api('GET', '/inbound', account.key)
    expect(all.status).toBe(200)
    expect(all.body.data.items.map((i: { id: number }) => i.id)).toEqual([...ids].reverse())
    expect(all.body.data).toMatchObject({ total: 4, limit: 50, offset: 0, has_more: false })

    const byPhone = await t.api('GET', `/inbound?phone=${phone.replace('+62', '0')}`, account.key)
    expect(byPhone.body.data.items.map((i: { text: string }) => i.text)).toEqual(['tiga', 'dua', 'satu'])

    const range = await t.api('GET', `/inbound?date_from=${at(1)}&date_to=${at(2)}`, account.key)
    expect(range.body.data.items.map((i: { id: number }) => i.id)).toEqual([ids[2], ids[1]])

    const first = await t.api('GET', '/inbound?limit=3', account.key)
    expect(first.body.data).toMatchObject({ total: 4, limit: 3, offset: 0, has_more: true })
    const last = await t.api('GET', '/inbound?limit=3&offset=3', account.key)
    expect(last.body.data).toMatchObject({ total: 4, offset: 3, has_more: false })
    expect(last.body.data.items.map((i: { id: number }) => i.id)).toEqual([ids[0]])

    for (const query of ['date_from=yesterday', 'date_to=2026-13-01%2000:00:00', 'phone=abc', 'limit=0']) {
      const bad = await t.api('GET', `/inbound?${query}`, account.key)
      expect([query, bad.status, bad.body]).toEqual([query, 422, errorEnvelope(bad.headers, 'VALIDATION_ERROR')])
    }
  })

  test("another account's message, or an unknown id, is 404; no key is 401", async () => {
    const phone = phoneOf()
    const owner = await accountWriting(phone)
    const id = (await writeIn(phone, 'punya saya')).body.data.inbound_id
    expect((await t.api('GET', `/inbound/${id}`, owner.key)).status).toBe(200)
    const stranger = await t.account(10)
    const theirs = await t.api('GET', `/inbound/${id}`, stranger.key)
    expect([theirs.status, theirs.body]).toEqual([404, errorEnvelope(theirs.headers, 'NOT_FOUND', `inbound message ${id} not found`)])
    expect((await t.api('GET', '/inbound/999999999', owner.key)).status).toBe(404)
    expect((await t.request('GET', '/api/v1/inbound')).status).toBe(401)
  })

  test('GET /admin/v1/inbound lists every account, or one', async () => {
    const phone = phoneOf()
    const account = await accountWriting(phone)
    const id = (await writeIn(phone, 'admin sees me')).body.data.inbound_id
    const all = await t.admin('GET', '/inbound?limit=200')
    expect(all.body.data.items.some((i: { id: number }) => i.id === id)).toBe(true)
    const one = await t.admin('GET', `/inbound?account_id=${account.accountId}`)
    expect(one.body.data.items.map((i: { id: number }) => i.id)).toEqual([id])
    expect(one.body.data.items[0].account_id).toBe(account.accountId)
    expect((await t.request('GET', '/admin/v1/inbound')).status).toBe(401)
  })
})

describe('GET /conversations/{phone}', () => {
  test('both directions in time order, paginated; the window open until 24 hours after the latest inbound message', async () => {
    const phone = phoneOf()
    // The outbound message, the customer's answer an hour later, the reply two hours after that.
    const account = await accountWriting(phone) // outbound 1
    await clock.advance(HOUR)
    const inboundId = (await writeIn(phone, 'Kapan sampai?')).body.data.inbound_id
    await clock.advance(2 * HOUR)
    const reply = await t.api('POST', '/messages/send', account.key, { to: phone, body: 'Besok pagi' })
    expect(reply.status).toBe(200)

    const answer = await t.api('GET', `/conversations/${encodeURIComponent(phone)}`, account.key)
    expect(answer.status).toBe(200)
    const data = answer.body.data
    expect(data.phone).toBe(phone)
    expect(data.items.map((i: { direction: string; text: string }) => [i.direction, i.text])).toEqual([
      ['outbound', 'Pesanan Anda sudah dikirim'],
      ['inbound', 'Kapan sampai?'],
      ['outbound', 'Besok pagi'],
    ])
    expect(data.items[1]).toMatchObject({ id: inboundId, type: 'text', status: null, content: { body: 'Kapan sampai?' } })
    expect(data.items[2]).toMatchObject({ status: 'sent', message_sid: reply.body.data.message_id })
    expect(data).toMatchObject({ total: 3, has_more: false })
    const [expected] = await t.db.sql<
      { until: Date }[]
    >`select received_at + interval '24 hours' as until from inbound_messages where id = ${inboundId}`
    expect(data.window).toEqual({
      open: true,
      until: formatTimestamp(expected!.until, t.config.timezone),
      sender_id: null,
      last_inbound_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
    })

    const page = await t.api('GET', `/conversations/${phone.replace('+62', '0')}?limit=2&offset=1`, account.key)
    expect(page.body.data.items.map((i: { text: string }) => i.text)).toEqual(['Kapan sampai?', 'Besok pagi'])
    expect(page.body.data).toMatchObject({ total: 3, limit: 2, offset: 1, has_more: false })
    const head = await t.api('GET', `/conversations/${encodeURIComponent(phone)}?limit=1`, account.key)
    expect(head.body.data).toMatchObject({ total: 3, has_more: true })

    // 24 hours and a second after the customer wrote the window is closed.
    await clock.advanceTo(expected!.until.getTime() + 1_000)
    const closed = await t.api('GET', `/conversations/${encodeURIComponent(phone)}`, account.key)
    expect(closed.body.data.window).toMatchObject({ open: false, until: null, sender_id: null })
  })

  test('a phone that never wrote: outbound only, window closed; a phone that is not a number is 422', async () => {
    const phone = phoneOf()
    const account = await accountWriting(phone)
    const answer = await t.api('GET', `/conversations/${encodeURIComponent(phone)}`, account.key)
    expect(answer.body.data.window).toEqual({ open: false, until: null, sender_id: null, last_inbound_at: null })
    expect(answer.body.data.items.map((i: { direction: string }) => i.direction)).toEqual(['outbound'])
    const bad = await t.api('GET', '/conversations/not-a-phone', account.key)
    expect([bad.status, bad.body]).toEqual([
      422,
      errorEnvelope(bad.headers, 'VALIDATION_ERROR', 'phone: not a valid phone number nor a WhatsApp user id (ID.1349…)'),
    ])
  })
})
