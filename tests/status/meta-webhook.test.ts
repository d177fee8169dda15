// Meta's webhooks through /provider/meta/webhook: the status notifications (POST, signed with
// X-Hub-Signature-256) and the subscription handshake (GET). Messages are sent for real through POST
// /messages/send to a local fake Graph API; every notification is signed here with node:crypto,
// independently of the service's signature code (and two vectors were computed outside it).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { createApp } from '../../src/app'
import { testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { metaSignature } from '../helpers/meta-webhook'

const APP_SECRET = 'meta_app_secret_0123456789abcdef'
const VERIFY_TOKEN = 'verify-me-please'
const PHONE_NUMBER_ID = '106540352242922'
const PATH = '/provider/meta/webhook'

let wamids = 0
const fake = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  fetch: () =>
    Response.json({
      messaging_product: 'whatsapp',
      messages: [{ id: `wamid.HBgNNjI4MTIzNDU2Nzg5MBUCABEYEj${(++wamids).toString(16).padStart(8, '0')}A=` }],
    }),
})

let t: TestApp
beforeAll(async () => {
  t = await testApp({
    env: {
      PROVIDER: 'meta',
      META_ACCESS_TOKEN: 'meta-token',
      META_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
      META_APP_SECRET: APP_SECRET,
      META_VERIFY_TOKEN: VERIFY_TOKEN,
      META_API_BASE: `http://127.0.0.1:${fake.port}/v21.0`,
    },
  })
}, 60_000)
afterAll(async () => {
  await t.close()
  fake.stop(true)
})

type Sent = { sid: string; keyId: number }

/** A message sent through the API with a key that has a webhook registered. */
async function sent(): Promise<Sent> {
  const { key, keyId } = await t.account(1000, { price: 100 })
  await t.db
    .sql`insert into webhook_endpoints (api_key_id, url, signing_secret) values (${keyId}, 'https://hooks.example.com/x', 'whsec_dGVzdA==')`
  const res = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'halo' })
  expect(res.status).toBe(200)
  expect(res.body.data.message_id).toMatch(/^wamid\./)
  return { sid: res.body.data.message_id, keyId }
}

/** One of Meta's statuses, with the fields Meta sends around the ones we read. */
function status(id: string, value: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    status: value,
    timestamp: '1750857384',
    recipient_id: '6281234567890',
    conversation: { id: 'a75d17ad06104c51166f948319b03c6a', origin: { type: 'utility' } },
    pricing: { billable: true, pricing_model: 'CBP', category: 'utility' },
    ...extra,
  }
}

const metadata = { display_phone_number: '15550783881', phone_number_id: PHONE_NUMBER_ID }
const statusChange = (statuses: unknown[]) => ({ field: 'messages', value: { messaging_product: 'whatsapp', metadata, statuses } })
const inboundChange = () => ({
  field: 'messages',
  value: {
    messaging_product: 'whatsapp',
    metadata,
    contacts: [{ profile: { name: 'Budi' }, wa_id: '6281234567890' }],
    messages: [{ from: '6281234567890', id: 'wamid.inbound01', timestamp: '1750857390', type: 'text', text: { body: 'halo juga' } }],
  },
})
const notification = (...changes: unknown[][]) => ({
  object: 'whatsapp_business_account',
  entry: changes.map((c, i) => ({ id: `10229012934039${i}`, changes: c })),
})

const sign = (body: string, secret = APP_SECRET) => metaSignature(body, secret)

/** POSTs a raw body; signed with the app secret unless a signature (or null: no header) is given. */
function post(body: string, options: { signature?: string | null; contentType?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': options.contentType ?? 'application/json' }
  const signature = options.signature === undefined ? sign(body) : options.signature
  if (signature !== null) headers['x-hub-signature-256'] = signature
  return t.request('POST', PATH, { rawBody: body, headers })
}
const notify = (payload: unknown) => post(JSON.stringify(payload))

type Row = {
  status: string
  delivered_at: Date | null
  read_at: Date | null
  error_code: number | null
  error_message: string | null
  settled_category: string | null
  settled_at: Date | null
  unsettled: number
  xmin: string
}
const row = async (sid: string) =>
  (
    await t.db.sql<Row[]>`
    select status, delivered_at, read_at, error_code, error_message, settled_category, settled_at, unsettled, xmin::text
    from messages where message_sid = ${sid}`
  )[0]!

/** The message.status events of a SID, as [previous_status, status], in order. */
const eventsOf = async (sid: string) =>
  (
    await t.db.sql<{ payload: string }[]>`
      select e.payload from webhook_events e join messages m on m.id = e.message_id where m.message_sid = ${sid} order by e.id`
  ).map((e) => [JSON.parse(e.payload).data.previous_status, JSON.parse(e.payload).data.status])

const eventCount = async () => (await t.db.sql<{ n: number }[]>`select count(*)::int as n from webhook_events`)[0]!.n

describe('status notifications', () => {
  test('delivered: the message is delivered, one event; the answer is 200 changed', async () => {
    const m = await sent()
    const res = await notify(notification([statusChange([status(m.sid, 'delivered')])]))
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, data: { changed: true } })
    expect(await row(m.sid)).toMatchObject({ status: 'delivered', delivered_at: expect.any(Date), read_at: null })
    expect(await eventsOf(m.sid)).toEqual([['sent', 'delivered']])
  })

  test('a batch: every status of every change of every entry, in one transaction; inbound messages stored besides, other fields ignored', async () => {
    const a = await sent()
    const b = await sent()
    const c = await sent()
    const before = await eventCount()
    const res = await notify(
      notification(
        [
          statusChange([status(a.sid, 'sent'), status(a.sid, 'delivered')]),
          inboundChange(),
          { field: 'message_template_status_update', value: { event: 'APPROVED', message_template_name: 'order_shipped' } },
        ],
        [
          statusChange([
            status(b.sid, 'failed', {
              errors: [
                {
                  code: 131047,
                  title: 'Re-engagement message',
                  message: 'Re-engagement message',
                  error_data: { details: 'Message failed to send because more than 24 hours have passed' },
                },
              ],
            }),
            status('wamid.NOT_OURS_0123456789', 'delivered'),
            status(a.sid, 'read'),
          ]),
          statusChange([status(c.sid, 'sent')]),
        ],
      ),
    )
    expect(res.status).toBe(200)
    // The inbound message is stored by modules/inbound (tests/inbound): new here unless another test stored it first.
    expect(res.body).toEqual({ success: true, data: { changed: true, inbound: expect.any(Number) } })

    const [ra, rb, rc] = [await row(a.sid), await row(b.sid), await row(c.sid)]
    expect(ra).toMatchObject({ status: 'read', delivered_at: expect.any(Date), read_at: expect.any(Date), error_code: null })
    expect(rb).toMatchObject({ status: 'failed', error_code: 131047, error_message: 'Re-engagement message', delivered_at: null })
    expect(rc.status).toBe('sent')
    expect(await eventsOf(a.sid)).toEqual([
      ['sent', 'delivered'],
      ['delivered', 'read'],
    ])
    expect(await eventsOf(b.sid)).toEqual([['sent', 'failed']])
    expect(await eventsOf(c.sid)).toEqual([])
    expect((await eventCount()) - before).toBe(3)
    // One transaction: both changed messages and the three events were written by the same one.
    const events = await t.db.sql<{ xmin: string }[]>`
      select e.xmin::text from webhook_events e join messages m on m.id = e.message_id where m.message_sid in ${t.db.sql([a.sid, b.sid])}`
    expect(new Set([ra.xmin, rb.xmin, ...events.map((e) => e.xmin)]).size).toBe(1)
    // c's `sent` moved no status; its `pricing` (utility, at the same price as the service it was charged) settled it, once.
    expect(rc).toMatchObject({ settled_category: 'utility', settled_at: expect.any(Date), unsettled: 0 })
  })

  test('out of order: read before delivered (across callbacks and within one): read, one event, the late delivered changes nothing', async () => {
    const m = await sent()
    expect((await notify(notification([statusChange([status(m.sid, 'read')])]))).body.data).toEqual({ changed: true })
    expect((await notify(notification([statusChange([status(m.sid, 'delivered')])]))).body.data).toEqual({ changed: false })
    expect(await row(m.sid)).toMatchObject({ status: 'read', delivered_at: expect.any(Date), read_at: expect.any(Date) })
    expect(await eventsOf(m.sid)).toEqual([['sent', 'read']])

    const n = await sent()
    const res = await notify(notification([statusChange([status(n.sid, 'read'), status(n.sid, 'delivered'), status(n.sid, 'sent')])]))
    expect(res.body.data).toEqual({ changed: true })
    expect((await row(n.sid)).status).toBe('read')
    expect(await eventsOf(n.sid)).toEqual([['sent', 'read']])
  })

  test('failed: without errors the code is null; failed is final; a failed after read changes nothing', async () => {
    const m = await sent()
    await notify(notification([statusChange([status(m.sid, 'failed')])]))
    expect(await row(m.sid)).toMatchObject({ status: 'failed', error_code: null, error_message: 'failed' })
    await notify(notification([statusChange([status(m.sid, 'delivered'), status(m.sid, 'read')])]))
    expect((await row(m.sid)).status).toBe('failed')
    expect(await eventsOf(m.sid)).toEqual([['sent', 'failed']])

    const n = await sent()
    await notify(notification([statusChange([status(n.sid, 'read')])]))
    const late = await notify(
      notification([statusChange([status(n.sid, 'failed', { errors: [{ code: 131026, title: 'Message undeliverable' }] })])]),
    )
    expect(late.body.data).toEqual({ changed: false })
    expect(await row(n.sid)).toMatchObject({ status: 'read', error_code: null })
    expect(await eventsOf(n.sid)).toEqual([['sent', 'read']])
  })

  test('a repeat changes nothing and emits nothing', async () => {
    const m = await sent()
    const payload = notification([statusChange([status(m.sid, 'delivered')])])
    expect((await notify(payload)).body.data).toEqual({ changed: true })
    const first = await row(m.sid)
    expect((await notify(payload)).body.data).toEqual({ changed: false })
    expect((await row(m.sid)).delivered_at).toEqual(first.delivered_at)
    expect(await eventsOf(m.sid)).toEqual([['sent', 'delivered']])
  })

  test('unknown ids, inbound messages, other fields, other objects and statuses we do not know: 200, no message changes', async () => {
    const m = await sent()
    const before = await eventCount()
    for (const payload of [
      notification([statusChange([status('wamid.UNKNOWN_abcdef', 'delivered'), status('wamid.UNKNOWN_abcdef', 'read')])]),
      notification([inboundChange()]),
      notification([{ field: 'account_update', value: { event: 'VERIFIED_ACCOUNT' } }]),
      notification([statusChange([status(m.sid, 'deleted'), status(m.sid, 'warning'), { status: 'delivered' }, 'x', null])]),
      notification([statusChange([])], []),
      { object: 'page', entry: 'not a list' },
      {},
    ]) {
      const res = await notify(payload)
      expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { success: true, data: { changed: false } } })
    }
    // An inbound message is stored once, however often it comes.
    expect(await t.db.sql`select 1 from inbound_messages where provider_message_id = 'wamid.inbound01'`).toHaveLength(1)
    expect((await row(m.sid)).status).toBe('sent')
    expect(await eventCount()).toBe(before)
    expect(await t.db.sql`select 1 from messages where message_sid = 'wamid.UNKNOWN_abcdef'`).toHaveLength(0)
  })
})

describe('signature', () => {
  const refused = async (res: { status: number; body: any; headers: Headers }, sid: string) => {
    expect(res.status).toBe(403)
    expect(res.body).toEqual(errorEnvelope(res.headers, 'FORBIDDEN'))
    expect((await row(sid)).status).toBe('sent')
    expect(await eventsOf(sid)).toEqual([])
  }

  test('missing, empty, wrong secret, another algorithm, malformed or altered: 403, nothing changes', async () => {
    const m = await sent()
    const body = JSON.stringify(notification([statusChange([status(m.sid, 'delivered')])]))
    const right = sign(body)
    const hex = right.slice('sha256='.length)
    for (const signature of [
      null,
      '',
      sign(body, 'another-secret'),
      sign(body, ''),
      `sha1=${createHmac('sha1', APP_SECRET).update(body).digest('hex')}`,
      hex,
      `sha256=${hex.slice(0, 63)}`,
      `sha256=${hex}0`,
      `sha256=${hex.slice(0, 63)}${hex[63] === '0' ? '1' : '0'}`,
      `sha256=${Buffer.from(hex, 'hex').toString('base64')}`,
      `sha256=${'0'.repeat(64)}`,
      `${right}, ${right}`,
    ]) {
      await refused(await post(body, { signature }), m.sid)
    }
  })

  test('a body altered after signing (signed as delivered, posted as read), or with whitespace added', async () => {
    const m = await sent()
    const signed = JSON.stringify(notification([statusChange([status(m.sid, 'delivered')])]))
    const posted = JSON.stringify(notification([statusChange([status(m.sid, 'read')])]))
    await refused(await post(posted, { signature: sign(signed) }), m.sid)
    await refused(await post(`${signed}\n`, { signature: sign(signed) }), m.sid)
    await refused(await post(JSON.stringify(JSON.parse(signed), null, 2), { signature: sign(signed) }), m.sid)
  })

  test('a bad signature gets 403 whatever the body (not JSON, another content type)', async () => {
    const m = await sent()
    await refused(await post('not json', { signature: sign('something else') }), m.sid)
    await refused(await post('a=b', { signature: null, contentType: 'application/x-www-form-urlencoded' }), m.sid)
  })

  test('vectors computed outside the service verify, over the raw bytes (non-ASCII text kept as sent)', async () => {
    const empty = '{"object":"whatsapp_business_account","entry":[]}'
    const vector1 = 'sha256=5dab83dc79c7c0317844c60de42cb7cfc34c8e7abbe691c45dced64985a29939'
    expect(sign(empty)).toBe(vector1)
    expect((await post(empty, { signature: vector1 })).status).toBe(200)
    expect((await post(empty, { signature: vector1.toUpperCase().replace('SHA256=', 'sha256=') })).status).toBe(200)

    const inbound =
      '{"object":"whatsapp_business_account","entry":[{"id":"0","changes":[{"field":"messages","value":{"messages":[{"from":"6281234567890","text":{"body":"halo é 👋"}}]}}]}]}'
    const vector2 = 'sha256=1d65a449b1f50cfe84fc2f0d7d1f5f50033a2e7473b8796982716f9d459b67f6'
    expect(sign(inbound)).toBe(vector2)
    // The signature verifies; the change is then refused for naming no number (a part that names nothing
    // its signer owns never falls to the default number), not for its signature.
    expect(await post(inbound, { signature: vector2 })).toMatchObject({
      status: 403,
      body: { success: false, error: 'a messages change names no metadata.phone_number_id' },
    })
    // The same text with the non-ASCII characters escaped is other bytes: another signature.
    const escaped = inbound.replace('é', '\\u00e9')
    expect(await post(escaped, { signature: vector2 })).toMatchObject({
      status: 403,
      body: { error: 'X-Hub-Signature-256 does not match' },
    })
  })

  test('validly signed but unreadable: not JSON or not an object is 400, another content type 415; nothing changes', async () => {
    const m = await sent()
    for (const body of ['not json', '[1,2]', '"text"', 'null', '']) {
      const res = await post(body)
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 400, code: 'VALIDATION_ERROR' })
    }
    const payload = JSON.stringify(notification([statusChange([status(m.sid, 'delivered')])]))
    const res = await post(payload, { contentType: 'text/plain' })
    expect([res.status, res.body.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE'])
    expect((await row(m.sid)).status).toBe('sent')
    // application/json with a charset is JSON
    expect((await post(payload, { contentType: 'application/json; charset=utf-8' })).body.data).toEqual({ changed: true })
  })
})

describe('subscription handshake', () => {
  const handshake = (query: Record<string, string>) => t.request('GET', `${PATH}?${new URLSearchParams(query)}`)

  test('the right verify token: the challenge comes back as plain text', async () => {
    const res = await handshake({ 'hub.mode': 'subscribe', 'hub.verify_token': VERIFY_TOKEN, 'hub.challenge': '1158201444' })
    expect(res.status).toBe(200)
    expect(res.body).toBe(1158201444) // the helper parses JSON where it can: the text is exactly the challenge
    expect(res.headers.get('content-type')).toStartWith('text/plain')
    const text = await t.app.handle(
      new Request(`http://localhost${PATH}?hub.mode=subscribe&hub.challenge=abc-123&hub.verify_token=${encodeURIComponent(VERIFY_TOKEN)}`),
    )
    expect([text.status, await text.text()]).toEqual([200, 'abc-123'])
  })

  test('a wrong or missing token, another mode, or no challenge: 403', async () => {
    const queries: Record<string, string>[] = [
      { 'hub.mode': 'subscribe', 'hub.verify_token': 'wrong', 'hub.challenge': '1' },
      { 'hub.mode': 'subscribe', 'hub.verify_token': `${VERIFY_TOKEN}x`, 'hub.challenge': '1' },
      { 'hub.mode': 'subscribe', 'hub.verify_token': '', 'hub.challenge': '1' },
      { 'hub.mode': 'subscribe', 'hub.challenge': '1' },
      { 'hub.mode': 'unsubscribe', 'hub.verify_token': VERIFY_TOKEN, 'hub.challenge': '1' },
      { 'hub.verify_token': VERIFY_TOKEN, 'hub.challenge': '1' },
      { 'hub.mode': 'subscribe', 'hub.verify_token': VERIFY_TOKEN },
    ]
    for (const query of queries) {
      const res = await handshake(query)
      expect({ query, status: res.status, code: res.body.code }).toEqual({ query, status: 403, code: 'FORBIDDEN' })
    }
  })
})

describe('the route', () => {
  test('needs no API key, and other methods get 405', async () => {
    const res = await t.request('PUT', PATH, { rawBody: '{}' })
    expect([res.status, res.body.code, res.headers.get('allow')]).toEqual([405, 'METHOD_NOT_ALLOWED', 'GET, POST'])
  })

  test('is in the operator\'s OpenAPI document under "Provider callbacks", without API-key security', async () => {
    const doc = (await t.request('GET', '/docs/admin/json')).body
    const { get, post: notified } = doc.paths[PATH]
    for (const op of [get, notified]) {
      expect(op.tags).toEqual(['Provider callbacks'])
      expect(op.security).toEqual([])
    }
    expect(Object.keys(notified.requestBody.content)).toEqual(['application/json'])
    expect(Object.keys(notified.responses).sort()).toEqual(['200', '400', '403', '404', '413', '415', '422', '500', '503'])
    expect(Object.keys(get.responses).sort()).toEqual(['200', '400', '403', '404', '422', '500'])
    expect(Object.keys(get.responses['200'].content)).toEqual(['text/plain'])
  })

  test('without META_APP_SECRET and META_VERIFY_TOKEN (another provider) both answer 404, whatever is sent', async () => {
    const meta = { ...t.config.providers.meta, accessToken: '', phoneNumberId: '', appSecret: '', verifyToken: '' }
    const app = createApp({ ...t.deps, config: { ...t.config, provider: 'simulator', providers: { ...t.config.providers, meta } } })
    const m = await sent()
    const body = JSON.stringify(notification([statusChange([status(m.sid, 'delivered')])]))
    for (const signature of [sign(body), sign(body, '')]) {
      const res = await app.handle(
        new Request(`http://localhost${PATH}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
          body,
        }),
      )
      expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([404, 'NOT_FOUND'])
    }
    const res = await app.handle(new Request(`http://localhost${PATH}?hub.mode=subscribe&hub.verify_token=&hub.challenge=1`))
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([404, 'NOT_FOUND'])
    expect((await row(m.sid)).status).toBe('sent')
  })
})
