// Files without public links (issue 32 §3): POST /api/v1/media by raw body and multipart, the type
// checked by its bytes, WhatsApp's size limits, another tenant's file 404 everywhere; a send by
// `media_id` through a Meta sender (the fake Graph API: uploaded once for two sends, again after Meta's
// 30 days on the test clock) and through a Twilio sender (the fake Twilio fetches the signed link;
// an expired or forged link is refused), nothing charged for a refused media_id; a template's header
// media by media_id through Meta (an account template bound to Meta, and a WhatsApp template).

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { TestClock } from '../../src/lib/clock'
import { assign, createSender, META_A, registerFakes, sendersEnv, TWILIO_A } from '../helpers/senders'
import { boundTemplate } from '../helpers/templates'
import { insertTemplate } from '../../src/modules/templates/catalog'

const clock = new TestClock(new Date('2026-12-01T00:00:00Z'))
const twilio = fakeTwilio()
const graph = fakeGraph({ clock })
registerFakes(twilio, graph)

const PDF = new TextEncoder().encode('%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n')
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1])
const WEBP = (size: number) => {
  const bytes = new Uint8Array(size)
  bytes.set(new TextEncoder().encode('RIFF'), 0)
  bytes.set(new TextEncoder().encode('WEBPVP8 '), 8)
  return bytes
}

let t: TestApp
let metaSender: number
let twilioSender: number
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph), clock, runOnClock: true })
  metaSender = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
  twilioSender = await createSender(t, 'twilio', TWILIO_A, { recipient_gap_ms: 0 })
  twilio.callback = { publicBaseUrl: t.config.publicBaseUrl, deliver: (request) => t.app.handle(request) }
  twilio.reset()
  graph.reset()
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})
afterEach(() => {
  twilio.reset()
  graph.reset()
})

async function call(request: Request) {
  const response = await t.app.handle(request)
  const text = await response.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: response.status, body, headers: response.headers }
}

/** POST /api/v1/media with the raw bytes as the body. */
const uploadRaw = (key: string, bytes: Uint8Array, type: string | null, headers: Record<string, string> = {}) =>
  call(
    new Request('http://localhost/api/v1/media', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, ...(type ? { 'content-type': type } : {}), ...headers },
      body: bytes,
    }),
  )

/** POST /api/v1/media as multipart/form-data with a `file` part. */
function uploadForm(key: string, bytes: Uint8Array, type: string, name: string) {
  const form = new FormData()
  form.set('file', new Blob([bytes], { type }), name)
  return call(new Request('http://localhost/api/v1/media', { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form }))
}

describe('uploads', () => {
  test('a raw body and a multipart file are kept and answered {id, type, size}; GET shows them to their account only', async () => {
    const { key } = await t.account(0)
    const raw = await uploadRaw(key, PDF, 'application/pdf', { 'content-disposition': 'attachment; filename="invoice-88.pdf"' })
    expect({ status: raw.status, body: raw.body }).toMatchObject({
      status: 201,
      body: { success: true, data: { type: 'application/pdf', kind: 'document', size: PDF.byteLength, filename: 'invoice-88.pdf' } },
    })
    expect(raw.body.data.id).toMatch(/^med_[\w-]{22}$/)
    const form = await uploadForm(key, PNG, 'image/png', 'photo.png')
    expect({ status: form.status, body: form.body }).toMatchObject({
      status: 201,
      body: { data: { type: 'image/png', kind: 'image', size: PNG.byteLength, filename: 'photo.png' } },
    })
    const shown = await t.api('GET', `/media/${raw.body.data.id}`, key)
    expect({ status: shown.status, id: shown.body.data?.id }).toEqual({ status: 200, id: raw.body.data.id })

    // Another tenant's own key: 404, as an unknown id.
    const other = await t.account(0)
    const theirs = await t.api('GET', `/media/${raw.body.data.id}`, other.key)
    expect({ status: theirs.status, code: theirs.body.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
  })

  test('the type is checked by the bytes: a mismatch is 422 naming both; a type WhatsApp does not send 415; no key 401', async () => {
    const { key } = await t.account(0)
    const lie = await uploadRaw(key, PDF, 'image/png')
    expect({ status: lie.status, code: lie.body.code }).toEqual({ status: 422, code: 'VALIDATION_ERROR' })
    expect(lie.body.error).toContain('image/png')
    expect(lie.body.error).toContain('application/pdf')
    const formLie = await uploadForm(key, PNG, 'application/pdf', 'x.pdf')
    expect({ status: formLie.status, code: formLie.body.code }).toEqual({ status: 422, code: 'VALIDATION_ERROR' })
    const gif = await uploadRaw(key, new TextEncoder().encode('GIF89a....'), 'image/gif')
    expect({ status: gif.status, code: gif.body.code }).toEqual({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' })
    // No type: the bytes say it.
    const sniffed = await uploadRaw(key, PDF, 'application/octet-stream')
    expect({ status: sniffed.status, type: sniffed.body.data?.type }).toEqual({ status: 201, type: 'application/pdf' })
    const anonymous = await call(new Request('http://localhost/api/v1/media', { method: 'POST', body: PDF }))
    expect(anonymous.status).toBe(401)
  })

  test("over its kind's limit: 413 in the envelope (a sticker's 500 KiB), raw and multipart", async () => {
    const { key } = await t.account(0)
    const fits = await uploadRaw(key, WEBP(500 * 1024), 'image/webp')
    expect({ status: fits.status, kind: fits.body.data?.kind }).toEqual({ status: 201, kind: 'sticker' })
    const big = await uploadRaw(key, WEBP(500 * 1024 + 1), 'image/webp')
    expect({ status: big.status, success: big.body.success, code: big.body.code }).toEqual({
      status: 413,
      success: false,
      code: 'PAYLOAD_TOO_LARGE',
    })
    expect(big.body.error).toContain('sticker')
    const bigForm = await uploadForm(key, WEBP(500 * 1024 + 1), 'image/webp', 's.webp')
    expect({ status: bigForm.status, code: bigForm.body.code }).toEqual({ status: 413, code: 'PAYLOAD_TOO_LARGE' })
  })
})

describe('sends by media_id', () => {
  test("another tenant's media_id is 404 and charges nothing; a file of another kind 422", async () => {
    const owner = await t.account(0)
    const file = (await uploadRaw(owner.key, PDF, 'application/pdf')).body.data.id
    const { accountId, key } = await t.account(1000, { price: 10 })
    await assign(t, accountId, metaSender, true)
    const before = await money(t, accountId)
    const theirs = await t.api('POST', '/messages/send', key, { to: '081234567890', type: 'document', document: { media_id: file } })
    expect({ status: theirs.status, code: theirs.body.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
    expect(theirs.body.error).toContain('document.media_id')
    const mine = (await uploadRaw(key, PNG, 'image/png')).body.data.id
    const wrongKind = await t.api('POST', '/messages/send', key, { to: '081234567890', type: 'document', document: { media_id: mine } })
    expect({ status: wrongKind.status, code: wrongKind.body.code }).toEqual({ status: 422, code: 'VALIDATION_ERROR' })
    expect(await money(t, accountId)).toEqual(before)
    expect(graph.requests).toEqual([])
  })

  test('through Meta: uploaded to Graph once for two sends, sent by its Graph id, uploaded again after 30 days', async () => {
    const { accountId, key } = await t.account(1000, { price: 10 })
    await assign(t, accountId, metaSender, true)
    const file = (await uploadRaw(key, PDF, 'application/pdf', { 'content-disposition': 'attachment; filename="inv.pdf"' })).body.data.id
    const send = () =>
      t.api('POST', '/messages/send', key, { to: '081234567890', type: 'document', document: { media_id: file, caption: 'Invoice' } })
    const first = await send()
    const second = await send()
    expect([first.status, second.status]).toEqual([200, 200])
    const uploads = () => graph.requests.filter((r) => r.path.endsWith('/media') && r.method === 'POST')
    expect(uploads().length).toBe(1)
    const [graphId] = [...graph.uploads.keys()]
    expect(graph.uploads.get(graphId!)).toMatchObject({ phoneNumberId: META_A.credentials.phone_number_id, type: 'application/pdf' })
    expect(Buffer.from(graph.uploads.get(graphId!)!.bytes).equals(Buffer.from(PDF))).toBe(true)
    const sent = graph.requests.filter((r) => r.path.endsWith('/messages')).map((r) => JSON.parse(r.body).document)
    expect(sent).toEqual([
      { id: graphId, caption: 'Invoice', filename: 'inv.pdf' },
      { id: graphId, caption: 'Invoice', filename: 'inv.pdf' },
    ])
    const shown = await t.api('GET', `/messages/${first.body.data.message_id}`, key)
    expect(shown.body.data.content).toMatchObject({ media_id: file })

    // Meta keeps an upload 30 days: past them the file goes up again, and the new id is sent.
    await clock.advance(30 * 86_400_000)
    const later = await send()
    expect(later.status).toBe(200)
    expect(uploads().length).toBe(2)
    const lastId = JSON.parse(graph.requests.filter((r) => r.path.endsWith('/messages')).at(-1)!.body).document.id
    expect(lastId).not.toBe(graphId)
  })

  test('through Twilio: MediaUrl is a signed link the fake fetches with the right type; expired or forged links are 403', async () => {
    const { accountId, key } = await t.account(1000, { price: 10 })
    await assign(t, accountId, twilioSender, true)
    const file = (await uploadRaw(key, PNG, 'image/png')).body.data.id
    const sent = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      type: 'image',
      image: { media_id: file, caption: 'Photo' },
    })
    expect(sent.status).toBe(200)
    expect(twilio.fetched.length).toBe(1)
    const fetched = twilio.fetched[0]!
    expect({ status: fetched.status, type: fetched.type }).toEqual({ status: 200, type: 'image/png' })
    expect(Buffer.from(fetched.bytes).equals(Buffer.from(PNG))).toBe(true)
    const link = new URL(fetched.url)
    expect(link.pathname).toBe(`/media/${file}`)

    const forged = new URL(link)
    forged.searchParams.set('expires', String(Number(link.searchParams.get('expires')) + 3600))
    const bad = await call(new Request(forged.toString()))
    expect({ status: bad.status, code: bad.body.code }).toEqual({ status: 403, code: 'FORBIDDEN' })
    const otherFile = new URL(link)
    otherFile.pathname = `/media/med_${'A'.repeat(22)}`
    expect((await call(new Request(otherFile.toString()))).status).toBe(403)

    await clock.advance(24 * 3600_000 + 1000)
    const expired = await call(new Request(link.toString()))
    expect({ status: expired.status, code: expired.body.code }).toEqual({ status: 403, code: 'FORBIDDEN' })
    expect(expired.body.error).toContain('expired')
  })

  test('the simulator takes media_id too', async () => {
    const { key } = await t.account(1000, { price: 10 })
    const file = (await uploadRaw(key, PNG, 'image/png')).body.data.id
    // This account has no senders: the deployment's default (Twilio here) would fetch; use a simulator sender.
    const sim = await t.admin('POST', '/senders', { provider: 'simulator', name: 'Sim', number: '+6281100007999' })
    const { accountId, key: simKey } = await t.account(1000, { price: 10 })
    await assign(t, accountId, Number(sim.body.data.id), true)
    const own = (await uploadRaw(simKey, PNG, 'image/png')).body.data.id
    const sent = await t.api('POST', '/messages/send', simKey, { to: '081234567890', type: 'image', image: { media_id: own } })
    expect({ status: sent.status, state: sent.body.data?.status }).toEqual({ status: 200, state: 'sent' })
    expect(file).not.toBe(own)
  })
})

describe('template header media by media_id', () => {
  /** Meta's messages the fake took, as sent. */
  const sentMessages = () => graph.requests.filter((r) => r.path.endsWith('/messages')).map((r) => JSON.parse(r.body))
  const uploads = () => graph.requests.filter((r) => r.path.endsWith('/media') && r.method === 'POST')

  test("an account template bound to Meta: the header's file uploaded once, sent by its Graph id with the file's name", async () => {
    const a = await boundTemplate(t, 'Katalog untuk {{name}}', { meta: { ref: 'katalog', language: 'id', variables: ['name'] } })
    await assign(t, a.accountId, metaSender, true)
    const file = (await uploadRaw(a.key, PDF, 'application/pdf', { 'content-disposition': 'attachment; filename="katalog.pdf"' })).body.data
      .id
    const send = () =>
      t.api('POST', '/messages/send', a.key, {
        to: '081234567890',
        template_id: a.templateId,
        variables: { name: 'Budi' },
        header: { type: 'document', media_id: file },
      })
    const [first, second] = [await send(), await send()]
    expect([first.status, second.status]).toEqual([200, 200])
    expect(uploads().length).toBe(1)
    const [graphId] = [...graph.uploads.keys()]
    for (const sent of sentMessages()) {
      expect(sent.template.components).toEqual([
        { type: 'header', parameters: [{ type: 'document', document: { id: graphId, filename: 'katalog.pdf' } }] },
        { type: 'body', parameters: [{ type: 'text', text: 'Budi' }] },
      ])
    }
    const shown = await t.api('GET', `/messages/${first.body.data.message_id}`, a.key)
    expect(shown.body.data.content).toEqual({ header: { type: 'document', media_id: file, filename: 'katalog.pdf' } })
  })

  test("a WhatsApp template's image header (issue 30): sent by its Graph id in the components built at the charge", async () => {
    const { accountId, key } = await t.account(1000, { price: 10 })
    await assign(t, accountId, metaSender, true)
    const name = `promo_${Math.random().toString(36).slice(2, 8)}`
    const components = [
      { type: 'HEADER', format: 'IMAGE', example: { header_handle: ['https://example.com/h.jpg'] } },
      { type: 'BODY', text: 'Promo minggu ini.' },
    ]
    const tpl = await t.db.sql.begin((tx) =>
      insertTemplate(
        tx,
        t.deps.clock,
        {
          status: 'approved',
          language: 'id',
          category: 'marketing',
          parameterFormat: 'positional',
          components,
          name,
          senderId: metaSender,
          provider: 'meta',
        },
        'sync',
      ),
    )
    graph.template(META_A.credentials.business_account_id, {
      name,
      language: 'id',
      category: 'MARKETING',
      status: 'APPROVED',
      parameter_format: 'POSITIONAL',
      components,
    })
    const file = (await uploadRaw(key, PNG, 'image/png')).body.data.id
    const sent = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      template_id: tpl!.id,
      header: { type: 'image', media_id: file },
    })
    expect({ status: sent.status, body: sent.body }).toMatchObject({ status: 200 })
    const [graphId] = [...graph.uploads.keys()]
    expect(sentMessages()[0].template.components).toEqual([{ type: 'header', parameters: [{ type: 'image', image: { id: graphId } }] }])
    // What a recovered hand-off would send is stored with our id, resolved again at each hand-off.
    const [row] = await t.db.sql<
      { provider_template: any }[]
    >`select provider_template from messages where message_sid = ${sent.body.data.message_id}`
    expect(row!.provider_template.components[0].parameters[0]).toEqual({ type: 'image', image: { media_id: file } })
  })

  test("another account's file is 404, a file of another kind 422, both uncharged; Twilio takes no header media (422)", async () => {
    const owner = await t.account(0)
    const theirs = (await uploadRaw(owner.key, PDF, 'application/pdf')).body.data.id
    const a = await boundTemplate(t, 'Katalog {{name}}', { meta: { ref: 'katalog', language: 'id', variables: ['name'] } })
    await assign(t, a.accountId, metaSender, true)
    const mine = (await uploadRaw(a.key, PNG, 'image/png')).body.data.id
    const before = await money(t, a.accountId)
    const send = (header: Record<string, unknown>, key = a.key, templateId = a.templateId) =>
      t.api('POST', '/messages/send', key, { to: '081234567890', template_id: templateId, variables: { name: 'Budi' }, header })
    const other = await send({ type: 'document', media_id: theirs })
    expect({ status: other.status, code: other.body.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
    expect(other.body.error).toContain('header.media_id')
    const kind = await send({ type: 'document', media_id: mine })
    expect({ status: kind.status, code: kind.body.code }).toEqual({ status: 422, code: 'VALIDATION_ERROR' })
    expect(kind.body.error).toContain('header.media_id: file')
    const both = await send({ type: 'image', media_id: mine, link: 'https://cdn.example.com/a.jpg' })
    expect({ status: both.status, code: both.body.code }).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    expect(await money(t, a.accountId)).toEqual(before)
    expect(graph.requests).toEqual([])

    const viaTwilio = await boundTemplate(t, 'Katalog {{name}}', { twilio: { ref: `HX${'ab'.repeat(16)}`, variables: ['name'] } })
    await assign(t, viaTwilio.accountId, twilioSender, true)
    const own = (await uploadRaw(viaTwilio.key, PNG, 'image/png')).body.data.id
    const refused = await send({ type: 'image', media_id: own }, viaTwilio.key, viaTwilio.templateId)
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 422, code: 'VALIDATION_ERROR' })
    expect(refused.body.error).toContain('cannot send template header media')
  })
})
