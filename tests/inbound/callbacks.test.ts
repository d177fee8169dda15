// Inbound messages from Meta's webhook (every messages[] type) and Twilio's incoming message webhook
// (POST /provider/twilio/inbound), signed here with node:crypto and the official `twilio` package,
// independently of the service's signature code, for stored senders and the deployment's default
// number. Each is stored once (a repeat delivery changes nothing), names its contact, and belongs to
// the account the account rule picks; a request signed with another sender's secret is 403 and stores nothing.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import twilioSdk from 'twilio'
import { testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import {
  assign,
  ENV_META,
  ENV_TWILIO,
  fourSenders,
  META_A,
  META_B,
  registerFakes,
  sendersEnv,
  TWILIO_A,
  TWILIO_B,
} from '../helpers/senders'
import { metaMessagesBody, metaWebhookHeaders } from '../helpers/meta-webhook'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

const INBOUND_URL = 'https://api.example.com/provider/twilio/inbound'

let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
/** accA: twilioA (its default), metaA and twilioB given first; accB: metaA (its default), twilioB given second. */
let accA: { accountId: number; key: string }
let accB: { accountId: number; key: string }
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph) })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  accA = await t.account(1000)
  accB = await t.account(1000)
  await assign(t, accA.accountId, ids.twilioA, true)
  await assign(t, accA.accountId, ids.metaA)
  await assign(t, accA.accountId, ids.twilioB)
  await assign(t, accB.accountId, ids.metaA, true)
  await assign(t, accB.accountId, ids.twilioB)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

let numbers = 0
/** A customer number of its own per test: Meta's form (digits) and ours. */
function customer() {
  const national = `8138${String(++numbers).padStart(7, '0')}`
  return { wa: `62${national}`, phone: `+62${national}` }
}

function metaWebhook(body: string, secret: string) {
  return t.request('POST', '/provider/meta/webhook', {
    rawBody: body,
    headers: metaWebhookHeaders(body, secret),
  })
}

function metaInbound(phoneNumberId: string, from: string, messages: Record<string, unknown>[], name = 'Budi') {
  const timestamp = (i: number) => String(Math.floor(Date.now() / 1000) - 60 + i)
  return metaMessagesBody(
    phoneNumberId,
    from,
    messages.map((m, i) => ({ timestamp: timestamp(i), ...m })),
    { name },
  )
}

function twilioInbound(fields: Record<string, string>, token: string) {
  return t.request('POST', '/provider/twilio/inbound', {
    rawBody: new URLSearchParams(fields).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(token, INBOUND_URL, fields),
    },
  })
}

type Stored = {
  provider_message_id: string
  sender_id: number | null
  account_id: number | null
  contact_id: number | null
  type: string
  text: string | null
  content: Record<string, unknown>
  raw: Record<string, unknown>
}
const storedFrom = (phone: string) =>
  t.db.sql<Stored[]>`
    select provider_message_id, sender_id::int as sender_id, account_id::int as account_id, contact_id::int as contact_id, type, text, content, raw
    from inbound_messages where phone = ${phone} order by id`

const wamid = (tag: string) => `wamid.HBgNNjI4MTIzNDU2Nzg5MBUCABIY${tag}`

describe("Meta's messages[]", () => {
  test('every type, stored once with its normalised content and raw item; a repeat delivery changes nothing; the contact is named', async () => {
    const c = customer()
    const items = [
      { id: wamid('text'), type: 'text', text: { body: 'Halo, pesanan saya?' } },
      { id: wamid('image'), type: 'image', image: { id: 'media-img-1', mime_type: 'image/jpeg', sha256: 'x', caption: 'Fotonya' } },
      {
        id: wamid('doc'),
        type: 'document',
        document: { id: 'media-doc-1', mime_type: 'application/pdf', filename: 'nota.pdf', caption: 'Nota' },
      },
      { id: wamid('audio'), type: 'audio', audio: { id: 'media-aud-1', mime_type: 'audio/ogg; codecs=opus', voice: true } },
      { id: wamid('video'), type: 'video', video: { id: 'media-vid-1', mime_type: 'video/mp4' } },
      { id: wamid('sticker'), type: 'sticker', sticker: { id: 'media-stk-1', mime_type: 'image/webp', animated: false } },
      { id: wamid('loc'), type: 'location', location: { latitude: -6.2, longitude: 106.8166, name: 'Monas', address: 'Jakarta Pusat' } },
      {
        id: wamid('contacts'),
        type: 'contacts',
        contacts: [{ name: { formatted_name: 'Sari Dewi', first_name: 'Sari' }, phones: [{ phone: '+62 812-3456-7890', type: 'CELL' }] }],
      },
      { id: wamid('btn'), type: 'interactive', interactive: { type: 'button_reply', button_reply: { id: 'yes', title: 'Ya' } } },
      {
        id: wamid('list'),
        type: 'interactive',
        interactive: { type: 'list_reply', list_reply: { id: 'row-2', title: 'Jumat', description: 'Pengiriman Jumat' } },
      },
      { id: wamid('tplbtn'), type: 'button', button: { payload: 'STOP_PROMO', text: 'Berhenti' }, context: { id: wamid('orig') } },
      { id: wamid('react'), type: 'reaction', reaction: { message_id: wamid('orig'), emoji: '👍' } },
    ]
    const body = metaInbound(META_A.credentials.phone_number_id, c.wa, items)
    const first = await metaWebhook(body, META_A.credentials.app_secret)
    expect([first.status, first.body]).toEqual([200, { success: true, data: { changed: false, inbound: 12 } }])
    const again = await metaWebhook(body, META_A.credentials.app_secret)
    expect([again.status, again.body]).toEqual([200, { success: true, data: { changed: false, inbound: 0 } }])

    const rows = await storedFrom(c.phone)
    expect(rows.length).toBe(12)
    // metaA is accB's default: with nobody having written, the default's account.
    expect(new Set(rows.map((r) => `${r.sender_id}/${r.account_id}`))).toEqual(new Set([`${ids.metaA}/${accB.accountId}`]))
    expect(rows.map((r) => [r.type, r.text, r.content])).toEqual([
      ['text', 'Halo, pesanan saya?', { body: 'Halo, pesanan saya?' }],
      ['image', 'Fotonya', { media_id: 'media-img-1', media_url: null, mime_type: 'image/jpeg', caption: 'Fotonya', filename: null }],
      [
        'document',
        'Nota',
        { media_id: 'media-doc-1', media_url: null, mime_type: 'application/pdf', caption: 'Nota', filename: 'nota.pdf' },
      ],
      ['audio', null, { media_id: 'media-aud-1', media_url: null, mime_type: 'audio/ogg; codecs=opus', caption: null, filename: null }],
      ['video', null, { media_id: 'media-vid-1', media_url: null, mime_type: 'video/mp4', caption: null, filename: null }],
      ['sticker', null, { media_id: 'media-stk-1', media_url: null, mime_type: 'image/webp', caption: null, filename: null }],
      ['location', 'Monas', { latitude: -6.2, longitude: 106.8166, name: 'Monas', address: 'Jakarta Pusat' }],
      ['contacts', 'Sari Dewi', { contacts: [{ name: 'Sari Dewi', phones: ['+62 812-3456-7890'] }] }],
      ['interactive', 'Ya', { kind: 'button_reply', id: 'yes', title: 'Ya', description: null }],
      ['interactive', 'Jumat', { kind: 'list_reply', id: 'row-2', title: 'Jumat', description: 'Pengiriman Jumat' }],
      ['button', 'Berhenti', { payload: 'STOP_PROMO', text: 'Berhenti' }],
      ['reaction', '👍', { emoji: '👍', message_id: wamid('orig') }],
    ])
    expect(rows[1]!.raw).toMatchObject({ ...items[1], from: c.wa })
    const [contact] = await t.db.sql<{ id: number; name: string }[]>`
      select id::int as id, name from contacts where account_id = ${accB.accountId} and phone = ${c.phone}`
    expect(contact!.name).toBe('Budi')
    expect(new Set(rows.map((r) => r.contact_id))).toEqual(new Set([contact!.id]))
    // The API shows them to accB, newest first.
    const listed = await t.api('GET', `/inbound?phone=${c.phone.replace('+', '%2B')}`, accB.key)
    expect(listed.body.data.total).toBe(12)
    expect(listed.body.data.items[0]).toMatchObject({ provider: 'meta', type: 'reaction', name: 'Budi', sender_id: ids.metaA })
  })

  test('the same notification delivered twice at once: stored once, counted once', async () => {
    const c = customer()
    const body = metaInbound(META_A.credentials.phone_number_id, c.wa, [{ id: wamid('twice'), type: 'text', text: { body: 'dua kali' } }])
    const answers = await Promise.all([1, 2, 3].map(() => metaWebhook(body, META_A.credentials.app_secret)))
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200])
    expect(answers.reduce((sum, a) => sum + a.body.data.inbound, 0)).toBe(1)
    expect((await storedFrom(c.phone)).length).toBe(1)
    const [contacts] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from contacts where phone = ${c.phone}`
    expect(contacts!.n).toBe(1)
  })

  test("signed with another sender's app secret: 403, nothing stored", async () => {
    const c = customer()
    const body = metaInbound(META_A.credentials.phone_number_id, c.wa, [{ id: wamid('forged'), type: 'text', text: { body: 'x' } }])
    const forged = await metaWebhook(body, META_B.credentials.app_secret)
    expect(forged.status).toBe(403)
    expect((await storedFrom(c.phone)).length).toBe(0)
  })

  test('the account that last wrote the phone through that sender wins over the default', async () => {
    const c = customer()
    const sent = await t.api('POST', '/messages/send', accA.key, { to: c.phone, body: 'Promo', from: String(ids.metaA) })
    expect(sent.status).toBe(200)
    const body = metaInbound(
      META_A.credentials.phone_number_id,
      c.wa,
      [{ id: wamid('reply1'), type: 'text', text: { body: 'Mau' } }],
      'Ani',
    )
    expect((await metaWebhook(body, META_A.credentials.app_secret)).body.data.inbound).toBe(1)
    const [row] = await storedFrom(c.phone)
    expect(row!.account_id).toBe(accA.accountId)
    const [contact] = await t.db.sql<
      { name: string }[]
    >`select name from contacts where account_id = ${accA.accountId} and phone = ${c.phone}`
    expect(contact!.name).toBe('Ani')
  })

  test("the environment's phone number id: the default number; nobody wrote the phone, so no account", async () => {
    const c = customer()
    const body = metaInbound(ENV_META.phoneNumberId, c.wa, [{ id: wamid('envnum'), type: 'text', text: { body: 'Halo' } }])
    expect((await metaWebhook(body, ENV_META.appSecret)).body.data).toEqual({ changed: false, inbound: 1 })
    const [row] = await storedFrom(c.phone)
    expect(row).toMatchObject({ sender_id: null, account_id: null, contact_id: null })
    const admin = await t.admin('GET', `/inbound?account_id=0&phone=${c.phone.replace('+', '%2B')}`)
    expect(admin.body.data.items.length).toBe(1)
  })
})

describe("Twilio's incoming message webhook", () => {
  const base = (c: { phone: string }, sid: string, accountSid: string, to: string) => ({
    MessageSid: sid,
    SmsMessageSid: sid,
    SmsSid: sid,
    AccountSid: accountSid,
    From: `whatsapp:${c.phone}`,
    To: `whatsapp:${to}`,
    ProfileName: 'Rina',
    WaId: c.phone.slice(1),
    NumMedia: '0',
    NumSegments: '1',
    MessageType: 'text',
    SmsStatus: 'received',
    ApiVersion: '2010-04-01',
  })
  const sid = (n: number) => `SM${String(n).padStart(32, '0')}`

  test('text, media, location and button, verified with the sender AccountSid names; stored once each', async () => {
    const c = customer()
    const A = TWILIO_A.credentials
    const text = { ...base(c, sid(1), A.account_sid, TWILIO_A.number), Body: 'Halo dari Twilio' }
    const media = {
      ...base(c, `MM${'1'.repeat(32)}`, A.account_sid, TWILIO_A.number),
      Body: 'Lihat',
      NumMedia: '1',
      MessageType: 'image',
      MediaUrl0: 'https://api.twilio.com/2010-04-01/Accounts/AC/Messages/MM/Media/ME1',
      MediaContentType0: 'image/png',
    }
    const location = {
      ...base(c, sid(2), A.account_sid, TWILIO_A.number),
      Body: '',
      MessageType: 'location',
      Latitude: '-6.2',
      Longitude: '106.8166',
      Address: 'Jakarta',
      Label: 'Kantor',
    }
    const button = {
      ...base(c, sid(3), A.account_sid, TWILIO_A.number),
      Body: 'Ya',
      MessageType: 'button',
      ButtonText: 'Ya',
      ButtonPayload: 'confirm',
    }
    for (const fields of [text, media, location, button]) {
      const answer = await twilioInbound(fields, A.auth_token)
      // An empty TwiML answer: Twilio sends no reply.
      expect([answer.status, answer.headers.get('content-type'), answer.body]).toEqual([
        200,
        'text/xml; charset=utf-8',
        '<?xml version="1.0" encoding="UTF-8"?><Response></Response>',
      ])
    }
    // A repeat changes nothing.
    expect((await twilioInbound(text, A.auth_token)).status).toBe(200)
    expect(await storedFrom(c.phone)).toHaveLength(4)

    const rows = await storedFrom(c.phone)
    expect(rows.map((r) => [r.type, r.text, r.content])).toEqual([
      ['text', 'Halo dari Twilio', { body: 'Halo dari Twilio' }],
      [
        'image',
        'Lihat',
        {
          media_id: null,
          media_url: media.MediaUrl0,
          mime_type: 'image/png',
          caption: 'Lihat',
          filename: null,
          media: [{ media_id: null, media_url: media.MediaUrl0, mime_type: 'image/png' }],
        },
      ],
      ['location', 'Kantor', { latitude: -6.2, longitude: 106.8166, name: 'Kantor', address: 'Jakarta' }],
      ['button', 'Ya', { payload: 'confirm', text: 'Ya' }],
    ])
    // twilioA is accA's default.
    expect(new Set(rows.map((r) => `${r.sender_id}/${r.account_id}`))).toEqual(new Set([`${ids.twilioA}/${accA.accountId}`]))
    expect(rows[0]!.raw).toMatchObject({ MessageSid: sid(1), ProfileName: 'Rina' })
    const [contact] = await t.db.sql<
      { name: string }[]
    >`select name from contacts where account_id = ${accA.accountId} and phone = ${c.phone}`
    expect(contact!.name).toBe('Rina')
  })

  test("signed with another sender's token, or unsigned: 403, nothing stored", async () => {
    const c = customer()
    const fields = { ...base(c, sid(10), TWILIO_A.credentials.account_sid, TWILIO_A.number), Body: 'palsu' }
    const forged = await twilioInbound(fields, TWILIO_B.credentials.auth_token)
    expect(forged.status).toBe(403)
    // The environment's token does not verify a stored sender's account either.
    expect((await twilioInbound(fields, ENV_TWILIO.token)).status).toBe(403)
    const unsigned = await t.request('POST', '/provider/twilio/inbound', {
      rawBody: new URLSearchParams(fields).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(unsigned.status).toBe(403)
    expect((await storedFrom(c.phone)).length).toBe(0)
  })

  test('a sender given to two accounts, neither as default: the first account given it', async () => {
    const c = customer()
    const B = TWILIO_B.credentials
    expect((await twilioInbound({ ...base(c, sid(20), B.account_sid, TWILIO_B.number), Body: 'Hai' }, B.auth_token)).status).toBe(200)
    const [row] = await storedFrom(c.phone)
    expect(row).toMatchObject({ sender_id: ids.twilioB, account_id: accA.accountId })
  })

  test('the default number: the account that last wrote the phone through it', async () => {
    const c = customer()
    const plain = await t.account(100)
    expect((await t.api('POST', '/messages/send', plain.key, { to: c.phone, body: 'Tagihan' })).status).toBe(200)
    const to = ENV_TWILIO.from.slice('whatsapp:'.length)
    const answer = await twilioInbound({ ...base(c, sid(30), ENV_TWILIO.sid, to), Body: 'Sudah bayar' }, ENV_TWILIO.token)
    expect(answer.status).toBe(200)
    const [row] = await storedFrom(c.phone)
    expect(row).toMatchObject({ sender_id: null, account_id: plain.accountId })
    const conversation = await t.api('GET', `/conversations/${c.phone.replace('+', '%2B')}`, plain.key)
    expect(conversation.body.data.items.map((i: { direction: string }) => i.direction)).toEqual(['outbound', 'inbound'])
    expect(conversation.body.data.window.open).toBe(true)
  })

  test("the simulator names a stored sender by its number: that sender's account", async () => {
    const c = customer()
    const answer = await t.admin('POST', '/simulator/inbound', { phone: c.phone, body: 'lewat simulator', sender: '+1 415 555 0101' })
    expect(answer.status).toBe(200)
    const [row] = await storedFrom(c.phone)
    expect(row).toMatchObject({ sender_id: ids.twilioA, account_id: accA.accountId, type: 'text', text: 'lewat simulator' })
  })
})
