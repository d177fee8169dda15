// Rich messages through Meta's WhatsApp Cloud API, against the local fake Graph API (which refuses what
// Meta refuses of each type's shape): the exact JSON each type sends, single and in a bulk, template
// header media as a header component, and a customer's tap on a reply button coming back (a signed
// button_reply / list_reply webhook) stored as an interactive inbound message with the chosen id.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { boundTemplate } from '../helpers/templates'
import { fakeGraph } from '../helpers/fake-graph'
import { metaMessagesBody, metaWebhookHeaders } from '../helpers/meta-webhook'

const ACCESS_TOKEN = 'EAAGm0PX4ZCpsBArich_meta_token_0123456789'
const PHONE_NUMBER_ID = '106540352242977'
const APP_SECRET = 'meta_app_secret_rich_0123456789ab'
const API_PATH = `/v21.0/${PHONE_NUMBER_ID}/messages`

const fake = fakeGraph()
let t: TestApp
beforeAll(async () => {
  t = await testApp({
    env: {
      PROVIDER: 'meta',
      META_ACCESS_TOKEN: ACCESS_TOKEN,
      META_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
      META_APP_SECRET: APP_SECRET,
      META_VERIFY_TOKEN: 'verify',
      META_API_BASE: fake.apiBase,
    },
  })
})
afterAll(async () => {
  await t.close()
  fake.stop()
})
beforeEach(() => fake.reset())

let numbers = 0
const customer = () => {
  const national = `8127${String(++numbers).padStart(7, '0')}`
  return { local: `0${national}`, wa: `62${national}` }
}
const sentJson = () => fake.requests.filter((r) => r.path === API_PATH).map((r) => JSON.parse(r.body))

const interactiveButtons = {
  type: 'button',
  body: { text: 'Confirm delivery tomorrow?' },
  action: {
    buttons: [
      { type: 'reply', reply: { id: 'confirm', title: 'Yes' } },
      { type: 'reply', reply: { id: 'reschedule', title: 'Another day' } },
    ],
  },
}
const interactiveList = {
  type: 'list',
  body: { text: 'Pick a delivery slot' },
  action: {
    button: 'Slots',
    sections: [
      {
        title: 'Tomorrow',
        rows: [
          { id: 'am', title: 'Morning', description: '08:00-12:00' },
          { id: 'pm', title: 'Afternoon' },
        ],
      },
      { title: 'Saturday', rows: [{ id: 'sat', title: 'Any time' }] },
    ],
  },
}

/** Each type: the request's fields and the Cloud API fields Meta must receive (besides messaging_product and to). */
const CASES: [string, Record<string, unknown>, Record<string, unknown>][] = [
  [
    'image',
    { type: 'image', image: { link: 'https://cdn.example.com/p/1.jpg', caption: 'Your order' } },
    { type: 'image', image: { link: 'https://cdn.example.com/p/1.jpg', caption: 'Your order' } },
  ],
  [
    'video',
    { type: 'video', video: { link: 'https://cdn.example.com/v.mp4' } },
    { type: 'video', video: { link: 'https://cdn.example.com/v.mp4' } },
  ],
  [
    'audio',
    { type: 'audio', audio: { link: 'https://cdn.example.com/a.ogg' } },
    { type: 'audio', audio: { link: 'https://cdn.example.com/a.ogg' } },
  ],
  [
    'document',
    { type: 'document', document: { link: 'https://cdn.example.com/d/88', filename: 'invoice-88.pdf', caption: 'Invoice' } },
    { type: 'document', document: { link: 'https://cdn.example.com/d/88', caption: 'Invoice', filename: 'invoice-88.pdf' } },
  ],
  [
    'sticker',
    { type: 'sticker', sticker: { link: 'https://cdn.example.com/s.webp' } },
    { type: 'sticker', sticker: { link: 'https://cdn.example.com/s.webp' } },
  ],
  [
    'location',
    { type: 'location', location: { latitude: -6.2088, longitude: 106.8456, name: 'Toko Budi', address: 'Jl. Sudirman 1' } },
    { type: 'location', location: { latitude: -6.2088, longitude: 106.8456, name: 'Toko Budi', address: 'Jl. Sudirman 1' } },
  ],
  ['reply buttons', { type: 'interactive', interactive: interactiveButtons }, { type: 'interactive', interactive: interactiveButtons }],
  ['list', { type: 'interactive', interactive: interactiveList }, { type: 'interactive', interactive: interactiveList }],
]

describe('the exact Cloud API JSON of each type', () => {
  for (const [name, request, expected] of CASES) {
    test(name, async () => {
      const { accountId, key } = await t.account(1000, { price: 10 })
      const c = customer()
      const res = await t.api('POST', '/messages/send', key, { to: c.local, ...request })
      expect(res.status).toBe(200)
      expect(res.body.data.message_id).toBe(fake.ids[0]!)
      expect(sentJson()).toEqual([{ messaging_product: 'whatsapp', to: c.wa, ...expected }])
      expect(await money(t, accountId)).toEqual({ balance: 990, ledgerSum: 990 })
    })
  }

  test('a bulk of every type sends each exactly as a single send does', async () => {
    const { key } = await t.account(1000, { price: 10 })
    const people = CASES.map(() => customer())
    const res = await t.api('POST', '/messages/bulk', key, {
      messages: CASES.map(([, request], i) => ({ to: people[i]!.local, ...request })),
    })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ total: CASES.length, sent: CASES.length, failed: 0 })
    const byTo = new Map(sentJson().map((j) => [j.to, j]))
    CASES.forEach(([, , expected], i) => {
      expect(byTo.get(people[i]!.wa)).toEqual({ messaging_product: 'whatsapp', to: people[i]!.wa, ...expected })
    })
  })

  test('template header media: a header component before the body parameters', async () => {
    const a = await boundTemplate(t, 'Promo for {{name}}', { meta: { ref: 'promo_header', language: 'id', variables: ['name'] } })
    const c = customer()
    const res = await t.api('POST', '/messages/send', a.key, {
      to: c.local,
      template_id: a.templateId,
      variables: { name: 'Budi' },
      header: { type: 'document', link: 'https://cdn.example.com/katalog.pdf', filename: 'katalog.pdf' },
    })
    expect(res.status).toBe(200)
    expect(sentJson()).toEqual([
      {
        messaging_product: 'whatsapp',
        to: c.wa,
        type: 'template',
        template: {
          name: 'promo_header',
          language: { code: 'id' },
          components: [
            {
              type: 'header',
              parameters: [{ type: 'document', document: { link: 'https://cdn.example.com/katalog.pdf', filename: 'katalog.pdf' } }],
            },
            { type: 'body', parameters: [{ type: 'text', text: 'Budi' }] },
          ],
        },
      },
    ])
  })
})

describe('the fake Graph API refuses what Meta refuses', () => {
  const post = (message: Record<string, unknown>) =>
    fetch(`${fake.apiBase}/${PHONE_NUMBER_ID}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ACCESS_TOKEN}` },
      body: JSON.stringify({ messaging_product: 'whatsapp', to: '6281200000000', ...message }),
    }).then(async (r) => ({ status: r.status, code: ((await r.json()) as any).error?.code ?? null }))

  test('131009 for a value past a limit, 100 for a missing parameter; a good message is taken', async () => {
    const fourButtons = {
      ...interactiveButtons,
      action: { buttons: ['a', 'b', 'c', 'd'].map((id) => ({ type: 'reply', reply: { id, title: id } })) },
    }
    expect(await post({ type: 'interactive', interactive: fourButtons })).toEqual({ status: 400, code: 131009 })
    expect(await post({ type: 'interactive', interactive: { type: 'button', body: { text: 'x' }, action: {} } })).toEqual({
      status: 400,
      code: 100,
    })
    expect(await post({ type: 'sticker', sticker: { link: 'https://a.example/s.webp', caption: 'no' } })).toEqual({
      status: 400,
      code: 131009,
    })
    expect(await post({ type: 'interactive', interactive: interactiveButtons })).toEqual({ status: 200, code: null })
  })

  test("a refusal by Meta is the send's 502 with Meta's code, refunded", async () => {
    // What the service checks already cannot reach Meta; here the fake refuses a valid message as Meta may.
    fake.answer = () =>
      Response.json(
        {
          error: {
            message: '(#131009) Parameter value is not valid',
            code: 131009,
            error_data: { details: 'Button title length invalid' },
          },
        },
        { status: 400 },
      )
    const { accountId, key } = await t.account(1000, { price: 10 })
    const res = await t.api('POST', '/messages/send', key, { to: customer().local, type: 'interactive', interactive: interactiveButtons })
    expect(res.status).toBe(502)
    const [row] = await t.db.sql<{ error_code: number; status: string }[]>`
      select error_code, status from messages where account_id = ${accountId}`
    expect(row).toEqual({ error_code: 131009, status: 'failed' })
    expect(await money(t, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
  })
})

describe('replies to buttons and lists', () => {
  function webhook(from: string, message: Record<string, unknown>) {
    const body = metaMessagesBody(PHONE_NUMBER_ID, from, [message])
    return t.request('POST', '/provider/meta/webhook', { rawBody: body, headers: metaWebhookHeaders(body, APP_SECRET) })
  }

  test('a tap on our button and on our list row: stored as interactive with the chosen id', async () => {
    const { key } = await t.account(1000)
    const c = customer()
    const sent = await t.api('POST', '/messages/send', key, { to: c.local, type: 'interactive', interactive: interactiveButtons })
    expect(sent.status).toBe(200)
    const context = { from: PHONE_NUMBER_ID, id: sent.body.data.message_id }
    const tap = await webhook(c.wa, {
      id: 'wamid.HBgNtapButton0001',
      type: 'interactive',
      context,
      interactive: { type: 'button_reply', button_reply: { id: 'reschedule', title: 'Another day' } },
    })
    const pick = await webhook(c.wa, {
      id: 'wamid.HBgNtapList00001',
      type: 'interactive',
      context,
      interactive: { type: 'list_reply', list_reply: { id: 'sat', title: 'Any time' } },
    })
    expect([tap.status, pick.status]).toEqual([200, 200])
    const rows = await t.db.sql<{ type: string; text: string; content: any }[]>`
      select type, text, content from inbound_messages where phone = ${`+${c.wa}`} order by id`
    expect(rows.map((r) => [r.type, r.text, r.content.kind, r.content.id])).toEqual([
      ['interactive', 'Another day', 'button_reply', 'reschedule'],
      ['interactive', 'Any time', 'list_reply', 'sat'],
    ])
  })
})
