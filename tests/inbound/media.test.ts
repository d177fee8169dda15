// Media of inbound messages, fetched from a fake Graph API and a fake Twilio (each checking the
// credentials of the sender the message reached) once, checked and kept: served back byte for byte at
// our own link with safe headers, to the account's keys only; refused past MEDIA_MAX_BYTES, for a type
// not allowed or first bytes not of its type; retried after a 5xx, not after a 4xx; fetched once even
// by two instances at once; the provider's URL never in our answers once kept.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import twilioSdk from 'twilio'
import { createHash } from 'node:crypto'
import { testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { assign, fourSenders, META_A, META_B, registerFakes, sendersEnv, TWILIO_A, TWILIO_B } from '../helpers/senders'
import { buildDeps } from '../../src/server'
import { inboundMedia } from '../../src/workers/inbound-media'
import { startLoop } from '../../src/workers/loop'
import { TestClock } from '../../src/lib/clock'
import { nowOf } from '../../src/db/now'
import { dashboardMediaPath } from '../../src/modules/inbound/media-view'
import { dashboardUser, webClient } from '../helpers/web'
import { metaMessagesBody, metaWebhookHeaders } from '../helpers/meta-webhook'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

const MAX = 64 * 1024
const INBOUND_URL = 'https://api.example.com/provider/twilio/inbound'

const clock = new TestClock()
let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
let acc: { accountId: number; key: string }
let other: { accountId: number; key: string }
beforeAll(async () => {
  t = await testApp({ clock, env: sendersEnv(twilio, graph, { MEDIA_MAX_BYTES: String(MAX) }) })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  acc = await t.account(1000)
  other = await t.account(1000)
  await assign(t, acc.accountId, ids.metaA, true)
  await assign(t, acc.accountId, ids.twilioA)
  await assign(t, other.accountId, ids.metaB, true)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

// Real-looking files: the first bytes are what the checks read.
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('JFIF jpeg body '.repeat(50)), Buffer.from([0xff, 0xd9])])
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('png body '.repeat(40))])
const PDF = Buffer.from('%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n')
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

let numbers = 0
const customer = () => {
  const national = `8139${String(++numbers).padStart(7, '0')}`
  return { wa: `62${national}`, phone: `+62${national}` }
}
let tags = 0
const wamid = () => `wamid.HBgNNjI4MTM5MBUCABIYmedia${++tags}`

function metaWebhook(phoneNumberId: string, secret: string, from: string, message: Record<string, unknown>) {
  const body = metaMessagesBody(phoneNumberId, from, [message])
  return t.request('POST', '/provider/meta/webhook', {
    rawBody: body,
    headers: metaWebhookHeaders(body, secret),
  })
}

/** A Meta media message to META_A (the account's default): the id of the stored inbound message. */
async function metaMedia(type: string, media: Record<string, unknown>): Promise<{ id: number; phone: string }> {
  const c = customer()
  const answer = await metaWebhook(META_A.credentials.phone_number_id, META_A.credentials.app_secret, c.wa, {
    id: wamid(),
    type,
    [type]: media,
  })
  expect(answer.body).toMatchObject({ success: true, data: { inbound: 1 } })
  const [row] = await t.db.sql<{ id: number }[]>`select id::int as id from inbound_messages where phone = ${c.phone}`
  return { id: row!.id, phone: c.phone }
}

/** Runs the worker until it finds nothing due. */
async function drain() {
  while ((await t.runWorker('inbound-media')) > 0) {}
}

const get = (path: string, key = acc.key, headers: Record<string, string> = {}) =>
  t.app.handle(new Request(`http://localhost/api/v1${path}`, { headers: { authorization: `Bearer ${key}`, ...headers } }))

const stored = async (inboundId: number) => [
  ...(await t.db.sql<
    { position: number; status: string; error: string | null; attempts: number; size: number | null; stored: number | null }[]
  >`
    select position, status, error, attempts, size::int as size, octet_length(bytes) as stored
    from inbound_media where inbound_message_id = ${inboundId} order by position`),
]

describe('Meta', () => {
  test('an image: pending, then fetched once with the number’s token and served back byte for byte at our link', async () => {
    graph.medium({ id: 'media-img-100', token: META_A.credentials.access_token, bytes: JPEG, type: 'image/jpeg' })
    const { id, phone } = await metaMedia('image', { id: 'media-img-100', mime_type: 'image/jpeg', sha256: 'x', caption: 'Fotonya' })
    const link = `https://api.example.com/api/v1/inbound/${id}/media`

    const before = await t.api('GET', `/inbound/${id}`, acc.key)
    expect(before.body.data.content).toMatchObject({
      media_id: 'media-img-100',
      media_url: link,
      media_status: 'pending',
      media_size: null,
    })
    const pending = await get(`/inbound/${id}/media`)
    expect(pending.status).toBe(409)
    expect(pending.headers.get('retry-after')).toBe('5')
    expect(await pending.json()).toMatchObject({ success: false, code: 'MEDIA_PENDING', error: expect.stringContaining('being fetched') })

    await drain()
    expect(await t.runWorker('inbound-media')).toBe(0)
    expect(graph.mediaRequests('media-img-100')).toEqual({ node: 1, download: 1 })
    expect(await stored(id)).toEqual([{ position: 0, status: 'kept', error: null, attempts: 1, size: JPEG.length, stored: JPEG.length }])

    const served = await get(`/inbound/${id}/media`)
    expect(served.status).toBe(200)
    expect(Buffer.from(await served.arrayBuffer()).equals(JPEG)).toBe(true)
    expect(Object.fromEntries(served.headers)).toMatchObject({
      'content-type': 'image/jpeg',
      'content-length': String(JPEG.length),
      'content-disposition': `inline; filename="inbound-${id}-0.jpg"; filename*=UTF-8''inbound-${id}-0.jpg`,
      'x-content-type-options': 'nosniff',
      'cache-control': 'private, max-age=31536000, immutable',
      etag: `"${sha(JPEG)}"`,
    })
    const again = await get(`/inbound/${id}/media`, acc.key, { 'if-none-match': `"${sha(JPEG)}"` })
    expect([again.status, (await again.arrayBuffer()).byteLength]).toEqual([304, 0])
    expect((await get(`/inbound/${id}/media/0`)).status).toBe(200)
    expect((await get(`/inbound/${id}/media/1`)).status).toBe(404)

    // Every answer shows our link, never the provider's.
    const one = await t.api('GET', `/inbound/${id}`, acc.key)
    expect(one.body.data.content).toEqual({
      media_id: 'media-img-100',
      media_url: link,
      mime_type: 'image/jpeg',
      caption: 'Fotonya',
      filename: null,
      media_status: 'kept',
      media_size: JPEG.length,
      media_sha256: sha(JPEG),
      media_error: null,
    })
    const list = await t.api('GET', `/inbound?phone=${encodeURIComponent(phone)}`, acc.key)
    const talk = await t.api('GET', `/conversations/${encodeURIComponent(phone)}`, acc.key)
    expect(list.body.data.items[0].content.media_url).toBe(link)
    expect(talk.body.data.items[0]).toMatchObject({ direction: 'inbound', media_url: link, content: { media_status: 'kept' } })
    for (const answer of [one, list, talk]) expect(JSON.stringify(answer.body)).not.toContain(graph.url)
  })

  test("another account's key, an unknown message: 404; no key: 401", async () => {
    graph.medium({ id: 'media-img-101', token: META_A.credentials.access_token, bytes: PNG, type: 'image/png' })
    const { id } = await metaMedia('image', { id: 'media-img-101', mime_type: 'image/png' })
    await drain()
    expect((await get(`/inbound/${id}/media`)).status).toBe(200)
    const foreign = await get(`/inbound/${id}/media`, other.key)
    expect(foreign.status).toBe(404)
    expect(await foreign.json()).toMatchObject({ success: false, code: 'NOT_FOUND' })
    expect((await get(`/inbound/99999999/media`)).status).toBe(404)
    expect((await get(`/inbound/${id}/media/10`)).status).toBe(404)
    const malformed = await get(`/inbound/${id}/media/x`)
    expect([malformed.status, ((await malformed.json()) as { code: string }).code]).toEqual([400, 'VALIDATION_ERROR'])
    const anonymous = await t.app.handle(new Request(`http://localhost/api/v1/inbound/${id}/media`))
    expect([anonymous.status, ((await anonymous.json()) as { code: string }).code]).toEqual([401, 'AUTH_MISSING_HEADER'])
  })

  test('a document: kept, served as an attachment with its file name sanitised', async () => {
    graph.medium({ id: 'media-doc-100', token: META_A.credentials.access_token, bytes: PDF, type: 'application/pdf' })
    const { id } = await metaMedia('document', {
      id: 'media-doc-100',
      mime_type: 'application/pdf',
      filename: '../../etc/nota "Mei"\r\n;x.pdf',
      caption: 'Nota',
    })
    await drain()
    const served = await get(`/inbound/${id}/media`)
    expect(served.status).toBe(200)
    expect(Buffer.from(await served.arrayBuffer()).equals(PDF)).toBe(true)
    expect(served.headers.get('content-type')).toBe('application/pdf')
    expect(served.headers.get('content-disposition')).toBe(`attachment; filename="nota Meix.pdf"; filename*=UTF-8''nota%20Meix.pdf`)
  })

  test('over MEDIA_MAX_BYTES: refused while reading (no length announced) or at once (announced), nothing stored', async () => {
    const big = Buffer.concat([JPEG, Buffer.alloc(MAX * 3, 7)])
    graph.medium({ id: 'media-big-1', token: META_A.credentials.access_token, bytes: big, type: 'image/jpeg', chunked: true, fileSize: 10 })
    graph.medium({ id: 'media-big-2', token: META_A.credentials.access_token, bytes: big, type: 'image/jpeg' })
    const streamed = await metaMedia('image', { id: 'media-big-1', mime_type: 'image/jpeg' })
    const announced = await metaMedia('image', { id: 'media-big-2', mime_type: 'image/jpeg' })
    await drain()
    expect(await stored(streamed.id)).toEqual([
      {
        position: 0,
        status: 'failed',
        error: `the medium is over MEDIA_MAX_BYTES (${MAX} bytes): refused while reading`,
        attempts: 1,
        size: null,
        stored: null,
      },
    ])
    expect(await stored(announced.id)).toEqual([
      {
        position: 0,
        status: 'failed',
        error: `the medium is ${big.length} bytes, over MEDIA_MAX_BYTES (${MAX})`,
        attempts: 1,
        size: null,
        stored: null,
      },
    ])
    const refused = await get(`/inbound/${streamed.id}/media`)
    expect(refused.status).toBe(410)
    expect(await refused.json()).toMatchObject({ success: false, code: 'MEDIA_FAILED', error: expect.stringContaining('MEDIA_MAX_BYTES') })
    const view = await t.api('GET', `/inbound/${announced.id}`, acc.key)
    expect(view.body.data.content).toMatchObject({ media_status: 'failed', media_error: expect.stringContaining('MEDIA_MAX_BYTES') })
  })

  test('a type not allowed for its kind, or first bytes not of the type: refused, not retried', async () => {
    const token = META_A.credentials.access_token
    graph.medium({ id: 'media-gif', token, bytes: Buffer.from('GIF89a....'), type: 'image/gif' })
    graph.medium({ id: 'media-fake-png', token, bytes: Buffer.from('<html><script>alert(1)</script></html>'), type: 'image/png' })
    graph.medium({ id: 'media-exe-doc', token, bytes: Buffer.from('MZ\x90\x00 not a pdf'), type: 'application/pdf' })
    // The download's own Content-Type is what is checked: an image node whose download says text/html.
    graph.medium({ id: 'media-html', token, bytes: JPEG, type: 'image/jpeg', contentType: 'text/html' })
    const gif = await metaMedia('image', { id: 'media-gif', mime_type: 'image/gif' })
    const png = await metaMedia('image', { id: 'media-fake-png', mime_type: 'image/png' })
    const doc = await metaMedia('document', { id: 'media-exe-doc', mime_type: 'application/pdf', filename: 'x.pdf' })
    const html = await metaMedia('image', { id: 'media-html', mime_type: 'image/jpeg' })
    await drain()
    const errors = async (id: number) => (await stored(id)).map((r) => [r.status, r.error, r.attempts, r.stored])
    expect(await errors(gif.id)).toEqual([
      ['failed', 'type image/gif is not allowed for an image (allowed: image/jpeg, image/png)', 1, null],
    ])
    expect(await errors(png.id)).toEqual([['failed', 'the first bytes are not those of image/png', 1, null]])
    expect(await errors(doc.id)).toEqual([['failed', 'the first bytes are not those of application/pdf', 1, null]])
    expect(await errors(html.id)).toEqual([
      ['failed', 'type text/html is not allowed for an image (allowed: image/jpeg, image/png)', 1, null],
    ])
  })

  test('a 5xx is retried with backoff, then kept; a 4xx (an unknown media id) is not retried', async () => {
    graph.medium({ id: 'media-flaky', token: META_A.credentials.access_token, bytes: JPEG, type: 'image/jpeg', failTimes: 2 })
    const flaky = await metaMedia('image', { id: 'media-flaky', mime_type: 'image/jpeg' })
    const gone = await metaMedia('image', { id: 'media-nobody-has', mime_type: 'image/jpeg' })
    await drain()
    expect((await stored(flaky.id))[0]).toMatchObject({
      status: 'pending',
      attempts: 1,
      error: 'Meta answered the media download with HTTP 500',
    })
    expect((await stored(gone.id))[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: expect.stringContaining('Meta refused the media lookup (HTTP 4'),
    })
    // Backed off in SQL: not due yet; 30 s after the first failure, 2 min after the second.
    const [due] = await t.db.sql<{ seconds: number }[]>`
      select extract(epoch from run_at - ${nowOf(t.db.sql, clock)})::int as seconds from inbound_media where inbound_message_id = ${flaky.id}`
    expect(due!.seconds).toBeGreaterThan(20)
    expect(due!.seconds).toBeLessThanOrEqual(30)
    for (const [attempts, backoff] of [
      [2, 30_000],
      [3, 120_000],
    ] as const) {
      await clock.advance(backoff)
      await drain()
      expect((await stored(flaky.id))[0]!.attempts).toBe(attempts)
    }
    expect((await stored(flaky.id))[0]).toMatchObject({ status: 'kept', error: null, stored: JPEG.length })
    expect(graph.mediaRequests('media-flaky')).toEqual({ node: 3, download: 3 })
    expect(Buffer.from(await (await get(`/inbound/${flaky.id}/media`)).arrayBuffer()).equals(JPEG)).toBe(true)
  })

  test("the token of another number is refused by Meta (190): the medium fails, naming Meta's refusal", async () => {
    // Registered with META_B's token, but the message reached META_A: the fetch carries A's token.
    graph.medium({ id: 'media-of-b', token: META_B.credentials.access_token, bytes: JPEG, type: 'image/jpeg' })
    const { id } = await metaMedia('image', { id: 'media-of-b', mime_type: 'image/jpeg' })
    await drain()
    expect((await stored(id))[0]).toMatchObject({ status: 'failed', error: expect.stringContaining('HTTP 401, code 190') })
  })
})

describe('Twilio', () => {
  test('two media: each fetched once with the account’s Basic auth, the redirect followed without it; served at /media/{n}', async () => {
    const c = customer()
    const A = TWILIO_A.credentials
    const message = `MM${'4'.repeat(32)}`
    const sids = [`ME${'a'.repeat(32)}`, `ME${'b'.repeat(32)}`]
    const urls = [
      twilio.medium({ account: A.account_sid, message, sid: sids[0]!, bytes: JPEG, type: 'image/jpeg' }),
      twilio.medium({ account: A.account_sid, message, sid: sids[1]!, bytes: PDF, type: 'application/pdf' }),
    ]
    const fields = {
      MessageSid: message,
      AccountSid: A.account_sid,
      From: `whatsapp:${c.phone}`,
      To: `whatsapp:${TWILIO_A.number}`,
      ProfileName: 'Rina',
      Body: 'Dua berkas',
      NumMedia: '2',
      MediaUrl0: urls[0]!,
      MediaContentType0: 'image/jpeg',
      MediaUrl1: urls[1]!,
      MediaContentType1: 'application/pdf',
    }
    const answer = await t.request('POST', '/provider/twilio/inbound', {
      rawBody: new URLSearchParams(fields).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(A.auth_token, INBOUND_URL, fields),
      },
    })
    expect(answer.status).toBe(200)
    const [row] = await t.db.sql<{ id: number; account_id: number }[]>`
      select id::int as id, account_id::int as account_id from inbound_messages where phone = ${c.phone}`
    expect(row!.account_id).toBe(acc.accountId)
    await drain()
    expect(twilio.mediaRequests(sids[0]!)).toEqual({ api: 1, storage: 1 })
    expect(twilio.mediaRequests(sids[1]!)).toEqual({ api: 1, storage: 1 })
    const api = twilio.requests.find((r) => r.path.endsWith(`/Media/${sids[0]}`))!
    const storage = twilio.requests.find((r) => r.path === `/storage/${sids[0]}`)!
    expect(api.headers.get('authorization')).toBe(`Basic ${Buffer.from(`${A.account_sid}:${A.auth_token}`).toString('base64')}`)
    expect(storage.headers.get('authorization')).toBeNull()

    const first = await get(`/inbound/${row!.id}/media/0`)
    const second = await get(`/inbound/${row!.id}/media/1`)
    expect(Buffer.from(await first.arrayBuffer()).equals(JPEG)).toBe(true)
    expect(first.headers.get('content-type')).toBe('image/jpeg')
    expect(Buffer.from(await second.arrayBuffer()).equals(PDF)).toBe(true)
    expect(second.headers.get('content-disposition')).toBe(
      `attachment; filename="inbound-${row!.id}-1.pdf"; filename*=UTF-8''inbound-${row!.id}-1.pdf`,
    )
    const view = await t.api('GET', `/inbound/${row!.id}`, acc.key)
    const base = `https://api.example.com/api/v1/inbound/${row!.id}/media`
    expect(view.body.data.content).toMatchObject({
      media_id: sids[0],
      media_url: base,
      media_status: 'kept',
      media: [
        { media_id: sids[0], media_url: `${base}/0`, media_status: 'kept', mime_type: 'image/jpeg', media_size: JPEG.length },
        { media_id: sids[1], media_url: `${base}/1`, media_status: 'kept', mime_type: 'application/pdf', media_size: PDF.length },
      ],
    })
    // The raw form fields keep everything but the provider's URLs, which are ours once kept.
    expect(view.body.data.raw).toMatchObject({ MediaUrl0: `${base}/0`, MediaUrl1: `${base}/1`, NumMedia: '2' })
    expect(JSON.stringify(view.body)).not.toContain(twilio.url)
  })
})

/** A Twilio message with media to TWILIO_A, signed with its token; the stored message's id. */
async function twilioMedia(message: string, media: { url: string; type: string }[]): Promise<number> {
  const c = customer()
  const A = TWILIO_A.credentials
  const fields: Record<string, string> = {
    MessageSid: message,
    AccountSid: A.account_sid,
    From: `whatsapp:${c.phone}`,
    To: `whatsapp:${TWILIO_A.number}`,
    NumMedia: String(media.length),
    ...Object.fromEntries(
      media.flatMap((m, i) => [
        [`MediaUrl${i}`, m.url],
        [`MediaContentType${i}`, m.type],
      ]),
    ),
  }
  const answer = await t.request('POST', '/provider/twilio/inbound', {
    rawBody: new URLSearchParams(fields).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(A.auth_token, INBOUND_URL, fields),
    },
  })
  expect(answer.status).toBe(200)
  const [row] = await t.db.sql<{ id: number }[]>`select id::int as id from inbound_messages where phone = ${c.phone}`
  return row!.id
}

describe('Twilio refusals', () => {
  test("a MediaUrl off the Twilio API gets no credentials and no request; another account's medium is Twilio's 401", async () => {
    const before = twilio.requests.length
    const foreign = await twilioMedia(`MM${'5'.repeat(32)}`, [{ url: 'http://127.0.0.1:9/steal.jpg', type: 'image/jpeg' }])
    const B = TWILIO_B.credentials
    const url = twilio.medium({
      account: B.account_sid,
      message: `MM${'6'.repeat(32)}`,
      sid: `ME${'c'.repeat(32)}`,
      bytes: JPEG,
      type: 'image/jpeg',
    })
    const otherAccount = await twilioMedia(`MM${'7'.repeat(32)}`, [{ url, type: 'image/jpeg' }])
    await drain()
    expect((await stored(foreign))[0]).toMatchObject({ status: 'failed', error: 'the MediaUrl is not on the Twilio API (TWILIO_API_BASE)' })
    expect((await stored(otherAccount))[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: 'Twilio answered the media download with HTTP 401',
    })
    expect(twilio.requests.slice(before).map((r) => [r.path, r.status])).toEqual([[new URL(url).pathname, 401]])
  })
})

describe('several instances', () => {
  test('two instances working at once fetch each medium exactly once', async () => {
    const second = buildDeps(t.deps.config, t.db, { clock }).deps
    const media = Array.from({ length: 10 }, (_, i) =>
      graph.medium({ id: `media-race-${i}`, token: META_A.credentials.access_token, bytes: PNG, type: 'image/png' }),
    )
    const stored_ = []
    for (const m of media) stored_.push(await metaMedia('image', { id: m.id, mime_type: 'image/png' }))
    // Both instances' workers step at once until nothing is due.
    for (;;) {
      const done = await Promise.all(
        [inboundMedia, inboundMedia, inboundMedia].map((w, i) => ('runOnce' in w ? w.runOnce(i === 0 ? t.deps : second) : 0)),
      )
      if (done.every((n) => n === 0)) break
    }
    for (const m of media) expect(graph.mediaRequests(m.id)).toEqual({ node: 1, download: 1 })
    for (const s of stored_) expect((await stored(s.id))[0]).toMatchObject({ status: 'kept', attempts: 1 })
    second.handoff.stop()
  })
})

describe('the dashboard and the wake-up', () => {
  test('a signed-in operator, and a member of the account, get the medium at its dashboard link; a member of another account 404', async () => {
    graph.medium({ id: 'media-dash-1', token: META_A.credentials.access_token, bytes: PNG, type: 'image/png' })
    const { id } = await metaMedia('image', { id: 'media-dash-1', mime_type: 'image/png' })
    await drain()
    const path = dashboardMediaPath(id)
    expect(path).toBe(`/dashboard/inbound/${id}/media/0`)
    expect((await webClient(t).get(path)).status).toBe(303) // signed out: to the sign-in page
    const operator = await dashboardUser(t, 'media-op@example.com', 'correct horse battery 1')
    const member = await dashboardUser(t, 'media-member@example.com', 'correct horse battery 2', acc.accountId)
    const stranger = await dashboardUser(t, 'media-stranger@example.com', 'correct horse battery 3', other.accountId)
    for (const user of [operator, member]) {
      const page = await user.client.get(path)
      expect([page.status, page.headers.get('content-type'), page.headers.get('x-content-type-options')]).toEqual([
        200,
        'image/png',
        'nosniff',
      ])
      expect(page.text.length).toBeGreaterThan(0)
    }
    expect((await stranger.client.get(path)).status).toBe(404)
    expect((await member.client.get(`/dashboard/inbound/${id}/media/1`)).status).toBe(404)
  })

  test('storing a message with media wakes the worker: kept without waiting for its poll', async () => {
    const loop = startLoop('inbound-media', () => t.runWorker('inbound-media'), { pollMs: 60_000, clock: t.deps.clock })
    t.loops.set('inbound-media', loop)
    try {
      await clock.nextSleep() // its first step found nothing: it now sleeps for a minute unless woken
      // Its next sleep comes once the woken step and the one after it (finding nothing) are done; the
      // clock stands still, so the minute's poll never comes: only the wake-up can run the step.
      const idle = clock.nextSleep(true)
      graph.medium({ id: 'media-woken', token: META_A.credentials.access_token, bytes: JPEG, type: 'image/jpeg' })
      const { id } = await metaMedia('image', { id: 'media-woken', mime_type: 'image/jpeg' })
      await idle
      expect((await stored(id))[0]!.status).toBe('kept')
    } finally {
      t.loops.delete('inbound-media')
      await loop.stop()
    }
  })
})
