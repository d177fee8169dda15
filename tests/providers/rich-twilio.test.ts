// Rich messages through Twilio, against the local fake Twilio (Messages resource and Content API, which
// refuse what Twilio refuses): media as MediaUrl, a location as a geo: PersistentAction, reply buttons
// and lists as Content templates (twilio/quick-reply, twilio/list-picker) created once per shape and
// sent by ContentSid with ContentVariables; Twilio's own limits refused 422 before charging; a customer's
// tap (ButtonPayload, ListId) stored with the chosen id.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import twilioSdk from 'twilio'
import { money, testApp, type TestApp } from '../helpers/app'
import { boundTemplate } from '../helpers/templates'
import { fakeTwilio, twilioError } from '../helpers/fake-twilio'
import type { FakeRequest } from '../helpers/fake-rates'

const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcd77'
const AUTH_TOKEN = 'tok_rich_auth_token_0123456789abcd'
const FROM = 'whatsapp:+14155238886'
const PUBLIC_BASE_URL = 'https://api.example.com'
const MESSAGES_PATH = `/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`
const STATUS_CALLBACK = `${PUBLIC_BASE_URL}/provider/twilio/status`

const fake = fakeTwilio()
let t: TestApp
beforeAll(async () => {
  t = await testApp({
    env: {
      PROVIDER: 'twilio',
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      TWILIO_FROM: FROM,
      TWILIO_API_BASE: fake.url,
      TWILIO_CONTENT_API_BASE: fake.url,
      PUBLIC_BASE_URL,
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
  const national = `8126${String(++numbers).padStart(7, '0')}`
  return { local: `0${national}`, e164: `+62${national}` }
}
const forms = () => fake.requests.filter((r) => r.path === MESSAGES_PATH).map((r) => [...new URLSearchParams(r.body)])
const contentPosts = (): FakeRequest[] => fake.requests.filter((r) => r.path === '/v1/Content')
const buttons = (text: string, ...pairs: [string, string][]) => ({
  type: 'interactive',
  interactive: {
    type: 'button',
    body: { text },
    action: { buttons: pairs.map(([id, title]) => ({ type: 'reply', reply: { id, title } })) },
  },
})

describe('media and location', () => {
  const cases: [string, Record<string, unknown>, (to: string) => [string, string][]][] = [
    [
      'image with a caption: Body and MediaUrl',
      { type: 'image', image: { link: 'https://cdn.example.com/p/1.jpg', caption: 'Your order' } },
      (to) => [
        ['To', `whatsapp:${to}`],
        ['From', FROM],
        ['Body', 'Your order'],
        ['MediaUrl', 'https://cdn.example.com/p/1.jpg'],
        ['StatusCallback', STATUS_CALLBACK],
      ],
    ],
    ...(['video', 'audio', 'sticker', 'document'] as const).map(
      (kind): [string, Record<string, unknown>, (to: string) => [string, string][]] => [
        `${kind}: MediaUrl alone`,
        { type: kind, [kind]: { link: `https://cdn.example.com/m/${kind}` } },
        (to) => [
          ['To', `whatsapp:${to}`],
          ['From', FROM],
          ['MediaUrl', `https://cdn.example.com/m/${kind}`],
          ['StatusCallback', STATUS_CALLBACK],
        ],
      ],
    ),
    [
      'location: its name as Body, geo: PersistentAction with the address as label',
      { type: 'location', location: { latitude: -6.2088, longitude: 106.8456, name: 'Toko Budi', address: 'Jl. Sudirman 1' } },
      (to) => [
        ['To', `whatsapp:${to}`],
        ['From', FROM],
        ['Body', 'Toko Budi'],
        ['PersistentAction', 'geo:-6.2088,106.8456|Jl. Sudirman 1'],
        ['StatusCallback', STATUS_CALLBACK],
      ],
    ],
  ]
  for (const [name, request, expected] of cases) {
    test(name, async () => {
      const { accountId, key } = await t.account(1000, { price: 10 })
      const c = customer()
      const res = await t.api('POST', '/messages/send', key, { to: c.local, ...request })
      expect(res.status).toBe(200)
      expect(forms()).toEqual([expected(c.e164)])
      expect(await money(t, accountId)).toEqual({ balance: 990, ledgerSum: 990 })
    })
  }
})

describe('reply buttons and lists: Content templates, one per shape', () => {
  test('buttons: the quick-reply template is created once, then each message goes by ContentSid with its ContentVariables', async () => {
    const { key } = await t.account(1000, { price: 10 })
    const first = customer()
    const second = customer()
    const a = await t.api('POST', '/messages/send', key, { to: first.local, ...buttons('Confirm?', ['yes', 'Yes'], ['no', 'No']) })
    const b = await t.api('POST', '/messages/send', key, {
      to: second.local,
      ...buttons('Deliver today?', ['d1', 'Sure'], ['d2', 'Later']),
    })
    expect([a.status, b.status]).toEqual([200, 200])
    const created = contentPosts()
    expect(created).toHaveLength(1)
    expect(JSON.parse(created[0]!.body)).toEqual({
      friendly_name: 'messaging_api_quick-reply_2',
      language: 'en',
      variables: { '1': 'Confirm?', '2': 'Yes', '3': 'yes', '4': 'No', '5': 'no' },
      types: {
        'twilio/quick-reply': {
          body: '{{1}}',
          actions: [
            { title: '{{2}}', id: '{{3}}' },
            { title: '{{4}}', id: '{{5}}' },
          ],
        },
      },
    })
    const sid = [...fake.contents.keys()][0]!
    expect(forms()).toEqual([
      [
        ['To', `whatsapp:${first.e164}`],
        ['From', FROM],
        ['ContentSid', sid],
        ['ContentVariables', JSON.stringify({ '1': 'Confirm?', '2': 'Yes', '3': 'yes', '4': 'No', '5': 'no' })],
        ['StatusCallback', STATUS_CALLBACK],
      ],
      [
        ['To', `whatsapp:${second.e164}`],
        ['From', FROM],
        ['ContentSid', sid],
        ['ContentVariables', JSON.stringify({ '1': 'Deliver today?', '2': 'Sure', '3': 'd1', '4': 'Later', '5': 'd2' })],
        ['StatusCallback', STATUS_CALLBACK],
      ],
    ])
    // Kept in the database, for other processes and after a restart.
    const kept = await t.db.sql<{ digest: string; ref: string }[]>`
      select digest, ref from provider_contents where provider = 'twilio' and account = ${ACCOUNT_SID}`
    expect([...kept]).toEqual([{ digest: 'quick-reply:2', ref: sid }])
    // Another shape (3 buttons) is another template.
    const c = await t.api('POST', '/messages/send', key, {
      to: customer().local,
      ...buttons('Rate us', ['1', 'Good'], ['2', 'OK'], ['3', 'Bad']),
    })
    expect(c.status).toBe(200)
    expect(contentPosts()).toHaveLength(2)
  })

  test('a list: a list-picker of its rows in order, sections flattened', async () => {
    const { key } = await t.account(1000, { price: 10 })
    const c = customer()
    const res = await t.api('POST', '/messages/send', key, {
      to: c.local,
      type: 'interactive',
      interactive: {
        type: 'list',
        body: { text: 'Pick a slot' },
        action: {
          button: 'Slots',
          sections: [
            { title: 'Tomorrow', rows: [{ id: 'am', title: 'Morning', description: '08-12' }] },
            { title: 'Saturday', rows: [{ id: 'sat', title: 'Any time', description: 'All day' }] },
          ],
        },
      },
    })
    expect(res.status).toBe(200)
    const [created] = contentPosts()
    expect(JSON.parse(created!.body).types).toEqual({
      'twilio/list-picker': {
        body: '{{1}}',
        button: '{{2}}',
        items: [
          { item: '{{3}}', id: '{{4}}', description: '{{5}}' },
          { item: '{{6}}', id: '{{7}}', description: '{{8}}' },
        ],
      },
    })
    const [form] = forms()
    expect(Object.fromEntries(form!)).toEqual({
      To: `whatsapp:${c.e164}`,
      From: FROM,
      ContentSid: expect.stringMatching(/^HX[0-9a-f]{32}$/),
      ContentVariables: JSON.stringify({
        '1': 'Pick a slot',
        '2': 'Slots',
        '3': 'Morning',
        '4': 'am',
        '5': '08-12',
        '6': 'Any time',
        '7': 'sat',
        '8': 'All day',
      }),
      StatusCallback: STATUS_CALLBACK,
    })
  })

  test("the Content API refusing the template: the send's 502, refunded, nothing sent", async () => {
    fake.answer = (request) => (new URL(request.url).pathname === '/v1/Content' ? twilioError(400, 20001, 'Invalid Content') : undefined)
    const { accountId, key } = await t.account(1000, { price: 10 })
    // A shape not created yet (1 button).
    const res = await t.api('POST', '/messages/send', key, { to: customer().local, ...buttons('One?', ['only', 'Only']) })
    expect(res.status).toBe(502)
    expect(res.body.error).toContain("Twilio's Content API refused the template: Invalid Content")
    expect(forms()).toEqual([])
    expect(await money(t, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
  })
})

describe("Twilio's own limits: 422 before anything is charged", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    [
      'a document file name',
      { type: 'document', document: { link: 'https://cdn.example.com/d', filename: 'a.pdf' } },
      "document.filename: Twilio does not send a document's file name",
    ],
    [
      'a document caption',
      { type: 'document', document: { link: 'https://cdn.example.com/d', caption: 'x' } },
      'document.caption: Twilio does not send captions on documents',
    ],
    [
      'a button id over 200',
      buttons('x', ['i'.repeat(201), 'A']),
      'interactive.action.buttons[0].reply.id: at most 200 characters through Twilio',
    ],
    [
      'a list row without a description',
      {
        type: 'interactive',
        interactive: { type: 'list', body: { text: 'x' }, action: { button: 'B', sections: [{ rows: [{ id: 'a', title: 'A' }] }] } },
      },
      'interactive.action.sections[0].rows[0].description: required through Twilio',
    ],
  ]
  for (const [name, request, error] of cases) {
    test(name, async () => {
      const { accountId, key } = await t.account(1000, { price: 10 })
      const res = await t.api('POST', '/messages/send', key, { to: customer().local, ...request })
      expect([res.status, res.body.code]).toEqual([422, 'VALIDATION_ERROR'])
      expect(res.body.error).toStartWith(error)
      expect(fake.requests).toEqual([])
      expect(await money(t, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
    })
  }

  test('template header media: 422 naming header (a Content template carries its own media)', async () => {
    const a = await boundTemplate(t, 'Promo {{name}}', { twilio: { ref: `HX${'a'.repeat(32)}`, variables: ['name'] } })
    const res = await t.api('POST', '/messages/send', a.key, {
      to: customer().local,
      template_id: a.templateId,
      variables: { name: 'Budi' },
      header: { type: 'image', link: 'https://cdn.example.com/p.jpg' },
    })
    expect([res.status, res.body.error]).toEqual([
      422,
      "header: the sender's provider (twilio) cannot send template header media; nothing was charged",
    ])
    expect(await money(t, a.accountId)).toEqual({ balance: 10_000, ledgerSum: 10_000 })
  })
})

describe('the fake Content API and Messages resource refuse what Twilio refuses', () => {
  const auth = `Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64')}`
  test('a quick-reply title over 20 characters; ContentVariables that break an item limit', async () => {
    const create = (types: unknown, variables: Record<string, string>) =>
      fetch(`${fake.url}/v1/Content`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify({ friendly_name: 'x', language: 'en', variables, types }),
      })
    const tooLong = await create({ 'twilio/quick-reply': { body: 'b', actions: [{ title: 't'.repeat(21), id: 'i' }] } }, {})
    expect(tooLong.status).toBe(400)
    const made = await create(
      { 'twilio/quick-reply': { body: '{{1}}', actions: [{ title: '{{2}}', id: '{{3}}' }] } },
      { '1': 'b', '2': 't', '3': 'i' },
    )
    expect(made.status).toBe(201)
    const sid = ((await made.json()) as any).sid
    const send = (variables: Record<string, string>) =>
      fetch(`${fake.url}${MESSAGES_PATH}`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          To: 'whatsapp:+6281200000000',
          From: FROM,
          ContentSid: sid,
          ContentVariables: JSON.stringify(variables),
        }),
      }).then(async (r) => ({ status: r.status, code: ((await r.json()) as any).code ?? null }))
    expect(await send({ '1': 'b', '2': 't'.repeat(21), '3': 'i' })).toEqual({ status: 400, code: 21656 })
    expect(await send({ '1': 'b', '2': 'ok', '3': 'i' })).toEqual({ status: 201, code: null })
  })
})

describe('replies to buttons and lists', () => {
  const INBOUND_URL = `${PUBLIC_BASE_URL}/provider/twilio/inbound`
  function inbound(fields: Record<string, string>) {
    return t.request('POST', '/provider/twilio/inbound', {
      rawBody: new URLSearchParams(fields).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(AUTH_TOKEN, INBOUND_URL, fields),
      },
    })
  }
  test('ButtonPayload and ListId: stored with the chosen id', async () => {
    const c = customer()
    const base = { AccountSid: ACCOUNT_SID, From: `whatsapp:${c.e164}`, To: FROM, NumMedia: '0', ProfileName: 'Rina' }
    const tap = await inbound({
      ...base,
      MessageSid: `SM${'b'.repeat(32)}`,
      MessageType: 'button',
      Body: 'Another day',
      ButtonText: 'Another day',
      ButtonPayload: 'reschedule',
    })
    const pick = await inbound({
      ...base,
      MessageSid: `SM${'c'.repeat(32)}`,
      MessageType: 'interactive',
      Body: 'Any time',
      ListId: 'sat',
      ListTitle: 'Any time',
    })
    expect([tap.status, pick.status]).toEqual([200, 200])
    const rows = await t.db.sql<{ type: string; text: string; content: any }[]>`
      select type, text, content from inbound_messages where phone = ${c.e164} order by id`
    expect(rows.map((r) => [r.type, r.text, r.content])).toEqual([
      ['button', 'Another day', { payload: 'reschedule', text: 'Another day' }],
      ['interactive', 'Any time', { kind: 'list_reply', id: 'sat', title: 'Any time', description: null }],
    ])
  })
})
