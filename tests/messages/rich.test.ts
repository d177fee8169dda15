// Rich messages through the public API on the simulator (the default provider): every type is sent,
// charged one price, recorded with its content and a text rendering, and shown by GET /messages/{sid};
// every limit is a 400 or 422 in the spec's envelope naming the field, with nothing charged; a bulk of
// mixed types fails only its bad entries; a sender whose provider cannot send a type is refused 422
// before charging (single and bulk).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { boundTemplate } from '../helpers/templates'
import { dashboardUser } from '../helpers/web'
import type { HandoffResult, OutgoingMessage, Provider } from '../../src/providers/provider'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(async () => {
  await t.close()
})

let numbers = 0
const phone = () => `08123${String(++numbers).padStart(7, '0')}`

const buttons = (...pairs: [string, string][]) => ({
  type: 'interactive',
  interactive: {
    type: 'button',
    body: { text: 'Confirm delivery tomorrow?' },
    action: { buttons: pairs.map(([id, title]) => ({ type: 'reply', reply: { id, title } })) },
  },
})
const list = (sections: { title?: string; rows: { id: string; title: string; description?: string }[] }[], button = 'Slots') => ({
  type: 'interactive',
  interactive: { type: 'list', body: { text: 'Pick a slot' }, action: { button, sections } },
})

/** Each type as a request, with the `type`, `content` and `body` GET /messages/{sid} shows of it. */
const KINDS: { name: string; request: Record<string, unknown>; type: string; content: unknown; body: string }[] = [
  {
    name: 'image',
    request: { type: 'image', image: { link: 'https://cdn.example.com/p/1.jpg', caption: ' Your order ' } },
    type: 'image',
    content: { link: 'https://cdn.example.com/p/1.jpg', caption: 'Your order' },
    body: 'Your order',
  },
  {
    name: 'video',
    request: { type: 'video', video: { link: 'https://cdn.example.com/v.mp4' } },
    type: 'video',
    content: { link: 'https://cdn.example.com/v.mp4' },
    body: '[video]',
  },
  {
    name: 'audio',
    request: { type: 'audio', audio: { link: 'https://cdn.example.com/a.ogg' } },
    type: 'audio',
    content: { link: 'https://cdn.example.com/a.ogg' },
    body: '[audio]',
  },
  {
    name: 'document',
    request: { type: 'document', document: { link: 'https://cdn.example.com/d/88', filename: 'invoice-88.pdf' } },
    type: 'document',
    content: { link: 'https://cdn.example.com/d/88', filename: 'invoice-88.pdf' },
    body: '[document] invoice-88.pdf',
  },
  {
    name: 'sticker',
    request: { type: 'sticker', sticker: { link: 'https://cdn.example.com/s.webp' } },
    type: 'sticker',
    content: { link: 'https://cdn.example.com/s.webp' },
    body: '[sticker]',
  },
  {
    name: 'location',
    request: { type: 'location', location: { latitude: -6.2088, longitude: 106.8456, name: 'Toko Budi', address: 'Jl. Sudirman 1' } },
    type: 'location',
    content: { latitude: -6.2088, longitude: 106.8456, name: 'Toko Budi', address: 'Jl. Sudirman 1' },
    body: '[location] Toko Budi',
  },
  {
    name: 'buttons',
    request: buttons(['yes', 'Yes'], ['later', 'Another day']),
    type: 'interactive',
    content: buttons(['yes', 'Yes'], ['later', 'Another day']).interactive,
    body: 'Confirm delivery tomorrow?',
  },
  {
    name: 'list',
    request: list([
      {
        title: 'Tomorrow',
        rows: [
          { id: 'am', title: 'Morning', description: '08-12' },
          { id: 'pm', title: 'Afternoon' },
        ],
      },
    ]),
    type: 'interactive',
    content: list([
      {
        title: 'Tomorrow',
        rows: [
          { id: 'am', title: 'Morning', description: '08-12' },
          { id: 'pm', title: 'Afternoon' },
        ],
      },
    ]).interactive,
    body: 'Pick a slot',
  },
]

describe('every type through the simulator', () => {
  for (const kind of KINDS) {
    test(`${kind.name}: sent at one price, recorded with its content, shown by GET /messages/{sid}`, async () => {
      const { accountId, key } = await t.account(1000, { price: 7 })
      const res = await t.api('POST', '/messages/send', key, { to: phone(), ...kind.request })
      expect(res.status).toBe(200)
      expect(res.body.data).toMatchObject({ status: 'sent', cost: 7, balance_after: 993 })
      const shown = await t.api('GET', `/messages/${res.body.data.message_id}`, key)
      expect(shown.status).toBe(200)
      expect({ type: shown.body.data.type, content: shown.body.data.content, body: shown.body.data.body }).toEqual({
        type: kind.type,
        content: kind.content,
        body: kind.body,
      })
      // The list shows the same.
      const listed = await t.api('GET', '/messages', key)
      expect(listed.body.data.items[0]).toMatchObject({ type: kind.type, content: kind.content, body: kind.body })
      expect(await money(t, accountId)).toEqual({ balance: 993, ledgerSum: 993 })
    })
  }

  test('text and plain template messages show type text and template with content null', async () => {
    const a = await boundTemplate(t, 'Halo {{name}}', { simulator: { ref: 'promo', variables: ['name'] } })
    const text = await t.api('POST', '/messages/send', a.key, { to: phone(), body: 'hi', type: 'text' })
    const tpl = await t.api('POST', '/messages/send', a.key, { to: phone(), template_id: a.templateId, variables: { name: 'Budi' } })
    expect([text.status, tpl.status]).toEqual([200, 200])
    const shownText = (await t.api('GET', `/messages/${text.body.data.message_id}`, a.key)).body.data
    const shownTpl = (await t.api('GET', `/messages/${tpl.body.data.message_id}`, a.key)).body.data
    expect([shownText.type, shownText.content, shownTpl.type, shownTpl.content]).toEqual(['text', null, 'template', null])
  })

  test('template header media: recorded beside the bound template, shown as {header}', async () => {
    const a = await boundTemplate(t, 'Promo {{name}}', { simulator: { ref: 'promo_img', variables: ['name'] } })
    const header = { type: 'image', link: 'https://cdn.example.com/promo.png' }
    const res = await t.api('POST', '/messages/send', a.key, { to: phone(), template_id: a.templateId, variables: { name: 'Ani' }, header })
    expect(res.status).toBe(200)
    const shown = (await t.api('GET', `/messages/${res.body.data.message_id}`, a.key)).body.data
    expect([shown.type, shown.content, shown.body]).toEqual(['template', { header }, 'Promo Ani'])
  })
})

describe('limits: a 400 or 422 naming the field, nothing charged', () => {
  const long = (n: number) => 'x'.repeat(n)
  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `r${i}`, title: `Row ${i}` }))
  const cases: [string, Record<string, unknown>, number, string][] = [
    ['type unknown', { type: 'carousel' }, 400, 'type: must be one of'],
    ['object missing', { type: 'image' }, 400, 'image: is required with type "image"'],
    [
      'object of another type',
      { type: 'image', image: { link: 'https://a.example/x.jpg' }, video: { link: 'https://a.example/v.mp4' } },
      400,
      'video: only with type "video"',
    ],
    [
      'body with a rich type',
      { type: 'image', image: { link: 'https://a.example/x.jpg' }, body: 'hi' },
      400,
      'body: not with type "image"',
    ],
    ['caption on audio', { type: 'audio', audio: { link: 'https://a.example/a.ogg', caption: 'x' } }, 400, 'audio.caption: unknown field'],
    [
      'filename on an image',
      { type: 'image', image: { link: 'https://a.example/x.jpg', filename: 'x.jpg' } },
      400,
      'image.filename: unknown field',
    ],
    ['media link not https', { type: 'image', image: { link: 'http://a.example/x.jpg' } }, 422, 'image.link: must be an https URL'],
    ['media link not a URL', { type: 'video', video: { link: 'x' } }, 422, 'video.link: must be an absolute https URL'],
    ['a .pdf as an image', { type: 'image', image: { link: 'https://a.example/x.pdf' } }, 422, 'image.link: a .pdf file is not an image'],
    [
      'a sticker that is not webp',
      { type: 'sticker', sticker: { link: 'https://a.example/s.png' } },
      422,
      'sticker.link: a .png file is not a sticker',
    ],
    [
      'caption over 1024',
      { type: 'image', image: { link: 'https://a.example/x.jpg', caption: long(1025) } },
      422,
      'image.caption: must be at most 1024 characters',
    ],
    [
      'filename with a slash',
      { type: 'document', document: { link: 'https://a.example/d', filename: 'a/b.pdf' } },
      422,
      'document.filename: must be a file name',
    ],
    [
      'filename over 240',
      { type: 'document', document: { link: 'https://a.example/d', filename: `${long(240)}.pdf` } },
      422,
      'document.filename: must be at most 240 characters',
    ],
    [
      'latitude out of range',
      { type: 'location', location: { latitude: 91, longitude: 0 } },
      422,
      'location.latitude: must be from -90 to 90',
    ],
    [
      'longitude out of range',
      { type: 'location', location: { latitude: 0, longitude: -180.5 } },
      422,
      'location.longitude: must be from -180 to 180',
    ],
    ['latitude not a number', { type: 'location', location: { latitude: '1', longitude: 0 } }, 400, 'location.latitude'],
    [
      '4 buttons',
      buttons(['a', 'A'], ['b', 'B'], ['c', 'C'], ['d', 'D']),
      422,
      'interactive.action.buttons: must hold 1 to 3 buttons (got 4)',
    ],
    ['no buttons', buttons(), 422, 'interactive.action.buttons: must hold 1 to 3 buttons (got 0)'],
    [
      'button title over 20',
      buttons(['a', long(21)]),
      422,
      'interactive.action.buttons[0].reply.title: must be at most 20 characters (got 21)',
    ],
    ['button id over 256', buttons([long(257), 'A']), 422, 'interactive.action.buttons[0].reply.id: must be at most 256 characters'],
    ['button ids repeated', buttons(['a', 'A'], ['a', 'B']), 422, 'interactive.action.buttons[1].reply.id: must be unique'],
    ['button titles repeated', buttons(['a', 'A'], ['b', 'A']), 422, 'interactive.action.buttons[1].reply.title: must be unique'],
    ['button title empty', buttons(['a', '  ']), 422, 'interactive.action.buttons[0].reply.title: must not be empty'],
    [
      'button type not reply',
      {
        ...buttons(['a', 'A']),
        interactive: { ...buttons(['a', 'A']).interactive, action: { buttons: [{ type: 'url', reply: { id: 'a', title: 'A' } }] } },
      },
      400,
      'interactive.action.buttons[0].type: must be "reply"',
    ],
    [
      'interactive body over 1024',
      {
        type: 'interactive',
        interactive: {
          type: 'button',
          body: { text: long(1025) },
          action: { buttons: [{ type: 'reply', reply: { id: 'a', title: 'A' } }] },
        },
      },
      422,
      'interactive.body.text: must be at most 1024 characters',
    ],
    [
      'interactive type unknown',
      { type: 'interactive', interactive: { type: 'product', body: { text: 'x' }, action: {} } },
      400,
      'interactive.type: must be "button" or "list"',
    ],
    [
      'buttons missing',
      { type: 'interactive', interactive: { type: 'button', body: { text: 'x' }, action: {} } },
      400,
      'interactive.action.buttons: is required',
    ],
    [
      'list button missing',
      { type: 'interactive', interactive: { type: 'list', body: { text: 'x' }, action: { sections: [] } } },
      400,
      'interactive.action.button: is required',
    ],
    [
      '11 rows',
      list([{ rows: rows(6) }, { title: 'B', rows: rows(5).map((r) => ({ ...r, id: `b${r.id}` })) }]),
      422,
      'interactive.action.sections: must hold 1 to 10 rows in all (got 11)',
    ],
    [
      '11 sections',
      list(Array.from({ length: 11 }, (_, i) => ({ title: `S${i}`, rows: [{ id: `r${i}`, title: 'R' }] }))),
      422,
      'interactive.action.sections: must hold 1 to 10 sections (got 11)',
    ],
    [
      'row title over 24',
      list([{ rows: [{ id: 'a', title: long(25) }] }]),
      422,
      'interactive.action.sections[0].rows[0].title: must be at most 24 characters',
    ],
    [
      'row id over 200',
      list([{ rows: [{ id: long(201), title: 'A' }] }]),
      422,
      'interactive.action.sections[0].rows[0].id: must be at most 200 characters',
    ],
    [
      'row description over 72',
      list([{ rows: [{ id: 'a', title: 'A', description: long(73) }] }]),
      422,
      'interactive.action.sections[0].rows[0].description: must be at most 72 characters',
    ],
    [
      'section title over 24',
      list([{ title: long(25), rows: [{ id: 'a', title: 'A' }] }]),
      422,
      'interactive.action.sections[0].title: must be at most 24 characters',
    ],
    [
      'section title missing with two sections',
      list([{ title: 'A', rows: [{ id: 'a', title: 'A' }] }, { rows: [{ id: 'b', title: 'B' }] }]),
      422,
      'interactive.action.sections[1].title: is required when there is more than one section',
    ],
    [
      'row ids repeated across sections',
      list([
        { title: 'A', rows: [{ id: 'a', title: 'A' }] },
        { title: 'B', rows: [{ id: 'a', title: 'B' }] },
      ]),
      422,
      'interactive.action.sections[1].rows[0].id: must be unique',
    ],
    [
      'list button text over 20',
      list([{ rows: [{ id: 'a', title: 'A' }] }], long(21)),
      422,
      'interactive.action.button: must be at most 20 characters',
    ],
    [
      'a section without rows',
      list([
        { title: 'A', rows: [] },
        { title: 'B', rows: [{ id: 'b', title: 'B' }] },
      ]),
      422,
      'interactive.action.sections[0].rows: must hold at least 1 row',
    ],
    [
      'header without template_id',
      { body: 'hi', header: { type: 'image', link: 'https://a.example/x.jpg' } },
      400,
      'header: only with template_id',
    ],
  ]
  for (const [name, request, status, error] of cases) {
    test(`${name}: ${status}`, async () => {
      const { accountId, key } = await t.account(1000, { price: 5 })
      const res = await t.api('POST', '/messages/send', key, { to: phone(), ...request })
      expect({ status: res.status, body: res.body }).toEqual({
        status,
        body: errorEnvelope(res.headers, 'VALIDATION_ERROR', expect.stringContaining(error)),
      })
      expect(await money(t, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
      const [row] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where account_id = ${accountId}`
      expect(row!.n).toBe(0)
    })
  }

  test('header media on a template not bound to the provider: 422, nothing charged', async () => {
    const a = await boundTemplate(t, 'Halo {{name}}', {})
    const header = { type: 'image', link: 'https://cdn.example.com/promo.png' }
    const res = await t.api('POST', '/messages/send', a.key, { to: phone(), template_id: a.templateId, variables: { name: 'x' }, header })
    expect(res.status).toBe(422)
    expect(res.body.error).toContain('header: the template is not bound to an approved template')
    expect(await money(t, a.accountId)).toEqual({ balance: 10_000, ledgerSum: 10_000 })
  })
})

describe('bulk', () => {
  test('mixed types: each entry sent with its content, a bad one failed uncharged, the rest charged once each', async () => {
    const { accountId, key } = await t.account(1000, { price: 10 })
    const entries = [
      { to: phone(), body: 'plain text' },
      { to: phone(), ...KINDS[0]!.request },
      { to: phone(), ...KINDS[5]!.request },
      { to: phone(), ...buttons(['a', 'A'], ['b', 'B'], ['c', 'C'], ['d', 'D']) },
      { to: phone(), ...KINDS[7]!.request },
      { to: phone(), body: 'text with media', media_url: 'https://cdn.example.com/x.jpg' },
    ]
    const res = await t.api('POST', '/messages/bulk', key, { messages: entries })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ total: 6, sent: 5, failed: 1, total_cost: 50, balance_after: 950 })
    expect(res.body.data.results[3]).toEqual({
      to: entries[3]!.to,
      status: 'failed',
      code: 'VALIDATION_ERROR',
      error: 'messages[3].interactive.action.buttons: must hold 1 to 3 buttons (got 4)',
    })
    const stored = await t.db.sql<{ phone: string; body: string; media_url: string | null; content: any }[]>`
      select phone, body, media_url, content from messages where account_id = ${accountId} order by id`
    expect(stored.map((m) => [m.body, m.media_url, m.content?.type ?? null])).toEqual([
      ['plain text', null, null],
      ['Your order', null, 'image'],
      ['[location] Toko Budi', null, 'location'],
      ['Pick a slot', null, 'list'],
      ['text with media', 'https://cdn.example.com/x.jpg', null],
    ])
    expect(await money(t, accountId)).toEqual({ balance: 950, ledgerSum: 950 })
  })

  test('a shape error in one entry rejects the whole request with 400 naming it', async () => {
    const { accountId, key } = await t.account(1000)
    const res = await t.api('POST', '/messages/bulk', key, {
      messages: [
        { to: phone(), body: 'ok' },
        { to: phone(), type: 'image' },
      ],
    })
    expect(res.status).toBe(400)
    expect(res.body.error).toBe('messages[1].image: is required with type "image"')
    expect(await money(t, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
  })
})

describe("a type the sender's provider cannot send", () => {
  test('422 naming it, single and bulk, before anything is charged; the provider is never called', async () => {
    const sent: OutgoingMessage[] = []
    // A provider that declares images only.
    const provider: Provider = {
      name: 'twilio',
      rich: new Set(['image']),
      async send(message): Promise<HandoffResult> {
        sent.push(message)
        return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
      },
    }
    const app = await testApp({ provider })
    try {
      const { accountId, key } = await app.account(1000, { price: 10 })
      const single = await app.api('POST', '/messages/send', key, { to: phone(), ...KINDS[5]!.request })
      expect({ status: single.status, body: single.body }).toEqual({
        status: 422,
        body: errorEnvelope(
          single.headers,
          'VALIDATION_ERROR',
          "type: the sender's provider (twilio) cannot send location messages; nothing was charged",
        ),
      })
      const interactive = await app.api('POST', '/messages/send', key, { to: phone(), ...KINDS[6]!.request })
      expect(interactive.status).toBe(422)
      expect(interactive.body.error).toBe("interactive.type: the sender's provider (twilio) cannot send reply buttons; nothing was charged")
      const bulk = await app.api('POST', '/messages/bulk', key, {
        messages: [
          { to: phone(), ...KINDS[0]!.request },
          { to: phone(), ...KINDS[7]!.request },
        ],
      })
      expect(bulk.status).toBe(200)
      expect(bulk.body.data).toMatchObject({ total: 2, sent: 1, failed: 1, total_cost: 10, balance_after: 990 })
      expect(bulk.body.data.results[1].error).toBe(
        "messages[1].interactive.type: the sender's provider (twilio) cannot send list messages; nothing was charged",
      )
      expect(sent.map((m) => m.content?.type)).toEqual(['image'])
      expect(await money(app, accountId)).toEqual({ balance: 990, ledgerSum: 990 })
    } finally {
      await app.close()
    }
  })
})

describe('the dashboard', () => {
  test('the messages list shows the text rendering; the message page what it was sent as, escaped', async () => {
    const { accountId, key } = await t.account(1000)
    const request = buttons(['<b>yes</b>', 'Yes'], ['no', 'No'])
    request.interactive.body.text = 'Confirm <script>x</script>?'
    const res = await t.api('POST', '/messages/send', key, { to: phone(), ...request })
    expect(res.status).toBe(200)
    const [row] = await t.db.sql<{ id: number }[]>`select id from messages where account_id = ${accountId}`
    const member = (await dashboardUser(t, `rich-${accountId}@example.com`, 'correct horse battery', accountId)).client
    const list = await member.get('/dashboard/messages')
    expect(list.status).toBe(200)
    expect(list.text).toContain('Confirm &lt;script&gt;x&lt;/script&gt;?')
    const page = await member.get(`/dashboard/messages/${row!.id}`)
    expect(page.status).toBe(200)
    const shown = /<dd class="wrap" id="rich-content">([\s\S]*?)<\/dd>/.exec(page.text)?.[1] ?? ''
    expect(shown).toContain('interactive: ')
    expect(shown).toContain('&lt;b&gt;yes&lt;/b&gt;')
    expect(page.text).not.toContain('<b>yes</b>')
  })
})
