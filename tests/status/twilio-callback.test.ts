// Twilio's status callbacks through POST /provider/twilio/status. Messages are sent for real through
// POST /messages/send to a local fake Twilio, and every callback is signed with the official `twilio`
// package, independently of our own signature code.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import twilio from 'twilio'
import { createApp } from '../../src/app'
import { testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { usingPostgres } from '../helpers/db'
import { eventWakes } from '../helpers/event-wakes'
import { MAX_BODY_BYTES } from '../../src/http/body'
import { TestClock } from '../../src/lib/clock'

const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef'
const AUTH_TOKEN = 'tok_5ecret_auth_token_0123456789ab'
const FROM = 'whatsapp:+14155238886'
const CALLBACK_URL = 'https://api.example.com/provider/twilio/status'
const PATH = '/provider/twilio/status'

const randomSid = () => `SM${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('hex')}`
const fake = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  fetch: () => Response.json({ sid: randomSid(), status: 'queued' }, { status: 201 }),
})

let t: TestApp
// Time passes between two reports when the test moves it.
const clock = new TestClock()
beforeAll(async () => {
  t = await testApp({
    runOnClock: true,
    clock,
    env: {
      PROVIDER: 'twilio',
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      TWILIO_FROM: FROM,
      TWILIO_API_BASE: `http://127.0.0.1:${fake.port}`,
      PUBLIC_BASE_URL: 'https://api.example.com',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    },
  })
}, 60_000)
afterAll(async () => {
  await t.close()
  fake.stop(true)
})

type Sent = { sid: string; keyId: number; messageId: number }

/** A message sent through the API with a key that has a webhook registered (unless told otherwise). */
async function sent(options: { webhook?: boolean } = {}): Promise<Sent> {
  const { key, keyId } = await t.account(1000, { price: 100 })
  if (options.webhook !== false) {
    await t.db
      .sql`insert into webhook_endpoints (api_key_id, url, signing_secret) values (${keyId}, 'https://hooks.example.com/x', 'whsec_dGVzdA==')`
  }
  const res = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'halo' })
  expect(res.status).toBe(200)
  const sid: string = res.body.data.message_id
  expect(sid).toMatch(/^SM[0-9a-f]{32}$/)
  const [row] = await t.db.sql<{ id: number }[]>`select id from messages where message_sid = ${sid}`
  return { sid, keyId, messageId: Number(row!.id) }
}

/** The fields Twilio posts for a WhatsApp message status, in Twilio's (unsorted) order. */
function fields(sid: string, status: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ChannelPrefix: 'whatsapp',
    ApiVersion: '2010-04-01',
    MessageStatus: status,
    SmsSid: sid,
    SmsStatus: status,
    ChannelInstallSid: 'XE0123456789abcdef0123456789abcdef',
    To: 'whatsapp:+6281234567890',
    From: FROM,
    MessageSid: sid,
    AccountSid: ACCOUNT_SID,
    ChannelToAddress: '+6281234567890',
    ...extra,
  }
}

const sign = (params: Record<string, string>, token = AUTH_TOKEN, url = CALLBACK_URL) =>
  twilio.getExpectedTwilioSignature(token, url, params)

/** POSTs a form body; signed over `params` unless a signature (or null: no header) is given. */
async function callback(params: Record<string, string>, options: { signature?: string | null; body?: string; contentType?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': options.contentType ?? 'application/x-www-form-urlencoded' }
  const signature = options.signature === undefined ? sign(params) : options.signature
  if (signature !== null) headers['x-twilio-signature'] = signature
  return t.request('POST', PATH, { rawBody: options.body ?? new URLSearchParams(params).toString(), headers })
}

/** Signed callbacks posted to an app of the test's own (other deps or config than `t`'s). */
const poster = (app: ReturnType<typeof createApp>) => (params: Record<string, string>) =>
  app.handle(
    new Request(`http://localhost${PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': sign(params) },
      body: new URLSearchParams(params).toString(),
    }),
  )

async function report(sid: string, status: string, extra: Record<string, string> = {}) {
  const res = await callback(fields(sid, status, extra))
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toStartWith('application/json')
  return res.body as { success: true; data: { changed: boolean } }
}

type Row = {
  status: string
  delivered_at: Date | null
  read_at: Date | null
  failed_at: Date | null
  error_code: number | null
  error_message: string | null
}
async function row(sid: string): Promise<Row> {
  const [r] = await t.db.sql<
    Row[]
  >`select status, delivered_at, read_at, failed_at, error_code, error_message from messages where message_sid = ${sid}`
  return r!
}

async function events(messageId: number) {
  const rows = await t.db.sql<
    { payload: string; api_key_id: number }[]
  >`select payload, api_key_id from webhook_events where message_id = ${messageId} order by id`
  return rows.map((r) => ({ keyId: Number(r.api_key_id), ...JSON.parse(r.payload) }))
}

const statusEvents = async (messageId: number) => (await events(messageId)).map((e) => [e.data.previous_status, e.data.status])

describe('accepted reports', () => {
  test('delivered: the message is delivered, delivered_at set, one event from sent', async () => {
    const m = await sent()
    expect(await report(m.sid, 'delivered')).toEqual({ success: true, data: { changed: true } })
    const r = await row(m.sid)
    expect(r).toMatchObject({ status: 'delivered', read_at: null, failed_at: null, error_code: null, error_message: null })
    expect(r.delivered_at).toBeInstanceOf(Date)
    const all = await events(m.messageId)
    expect(all).toHaveLength(1)
    expect(all[0]).toMatchObject({
      keyId: m.keyId,
      event: 'message.status',
      data: {
        message_sid: m.sid,
        to: '+6281234567890',
        status: 'delivered',
        previous_status: 'sent',
        error_code: null,
        error_message: null,
      },
    })
  })

  test('the API shows the reported state', async () => {
    const { key } = await t.account(1000, { price: 100 })
    const res = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'halo' })
    const sid = res.body.data.message_id
    await report(sid, 'read')
    const shown = await t.api('GET', `/messages/${sid}`, key)
    expect(shown.body.data).toMatchObject({ status: 'read', delivered_at: expect.any(String), read_at: expect.any(String) })
  })

  test('delivered then read: read_at set, delivered_at kept, one event per change', async () => {
    const m = await sent()
    await report(m.sid, 'delivered')
    const { delivered_at } = await row(m.sid)
    await clock.advance(10)
    expect((await report(m.sid, 'read')).data.changed).toBe(true)
    const r = await row(m.sid)
    expect(r.status).toBe('read')
    expect(r.delivered_at).toEqual(delivered_at)
    expect(r.read_at).toBeInstanceOf(Date)
    expect(await statusEvents(m.messageId)).toEqual([
      ['sent', 'delivered'],
      ['delivered', 'read'],
    ])
  })

  test('read straight from sent: delivered_at and read_at both set, one event', async () => {
    const m = await sent()
    expect((await report(m.sid, 'read')).data.changed).toBe(true)
    const r = await row(m.sid)
    expect(r.status).toBe('read')
    expect(r.delivered_at).toBeInstanceOf(Date)
    expect(r.read_at).toBeInstanceOf(Date)
    expect(await statusEvents(m.messageId)).toEqual([['sent', 'read']])
  })

  test('undelivered with ErrorCode 30008: failed, error_code 30008, one event carrying the error (and the refund)', async () => {
    const m = await sent()
    expect((await report(m.sid, 'undelivered', { ErrorCode: '30008' })).data.changed).toBe(true)
    const r = await row(m.sid)
    expect(r).toMatchObject({ status: 'failed', error_code: 30008, error_message: 'undelivered', delivered_at: null })
    expect(r.failed_at).toBeInstanceOf(Date)
    const all = await events(m.messageId)
    expect(all.map((e) => e.data)).toEqual([
      {
        message_sid: m.sid,
        to: '+6281234567890',
        status: 'failed',
        previous_status: 'sent',
        error_code: 30008,
        error_message: 'undelivered',
        refunded: true,
      },
    ])
  })

  test('failed after delivered, with ErrorMessage: stored as given (spaces, & and = survive the form encoding)', async () => {
    const m = await sent()
    await report(m.sid, 'delivered')
    const text = 'Unknown error & more = 50% "quoted"'
    expect((await report(m.sid, 'failed', { ErrorCode: '63016', ErrorMessage: text })).data.changed).toBe(true)
    const r = await row(m.sid)
    expect(r).toMatchObject({ status: 'failed', error_code: 63016, error_message: text })
    expect(r.delivered_at).toBeInstanceOf(Date)
    expect(await statusEvents(m.messageId)).toEqual([
      ['sent', 'delivered'],
      ['delivered', 'failed'],
    ])
  })

  test('failed with a non-numeric or out-of-range ErrorCode stores error_code null', async () => {
    for (const code of ['abc', '12x', '-5', '99999999999', '']) {
      const m = await sent({ webhook: false })
      expect((await report(m.sid, 'failed', { ErrorCode: code })).data.changed).toBe(true)
      expect(await row(m.sid)).toMatchObject({ status: 'failed', error_code: null, error_message: 'failed' })
    }
  })

  test('a key without a webhook: the change is applied and no event is written', async () => {
    const m = await sent({ webhook: false })
    expect((await report(m.sid, 'delivered')).data.changed).toBe(true)
    expect((await row(m.sid)).status).toBe('delivered')
    expect(await events(m.messageId)).toEqual([])
  })

  // The delivery loop wakes on the NOTIFY the event's statement sends at commit (sql/0034), heard here
  // on the same LISTEN the loop subscribes to.
  test('an accepted change that wrote an event wakes the webhook delivery loop; no change wakes nothing', async () => {
    const wakes = await eventWakes(t.db)
    try {
      const post = poster(createApp(t.deps))
      const m = await sent()
      const before = await wakes.settled()
      expect((await post(fields(m.sid, 'delivered'))).status).toBe(200)
      expect(await wakes.settled()).toBe(before + 1)
      expect((await post(fields(m.sid, 'delivered'))).status).toBe(200)
      expect((await post(fields(m.sid, 'sending'))).status).toBe(200)
      expect(await wakes.settled()).toBe(before + 1)
    } finally {
      await wakes.stop()
    }
  })

  // Other instances sharing the database hear of the new event by NOTIFY, sent with the callback's commit.
  test.skipIf(!usingPostgres())(
    'on PostgreSQL, a change that wrote an event is announced by NOTIFY; no change announces nothing',
    async () => {
      const heard: string[] = []
      // Each NOTIFY heard is an event: a test awaits the next one instead of polling.
      let next: (() => void) | undefined
      const nextHeard = () => new Promise<void>((resolve) => (next = resolve))
      const listener = await t.db.sql.listen('webhook_events', (payload) => {
        heard.push(payload)
        next?.()
      })
      try {
        const post = poster(createApp(t.deps))
        const m = await sent()
        let heardOne = nextHeard()
        expect((await post(fields(m.sid, 'delivered'))).status).toBe(200)
        await heardOne
        expect(heard).toHaveLength(1)
        expect((await post(fields(m.sid, 'delivered'))).status).toBe(200)
        // A change of another message, committed after it, announces itself: NOTIFYs arrive in commit
        // order, so one from the repeat would have arrived first.
        const other = await sent()
        heardOne = nextHeard()
        expect((await post(fields(other.sid, 'delivered'))).status).toBe(200)
        await heardOne
        expect(heard).toHaveLength(2)
      } finally {
        await listener.unlisten()
      }
    },
  )
})

describe('reports that change nothing get 200', () => {
  test('queued, accepted, sending, sent, and unknown statuses: no change, no event', async () => {
    const m = await sent()
    const before = await row(m.sid)
    for (const status of ['queued', 'accepted', 'sending', 'sent', 'scheduled', 'canceled', 'receiving', 'bogus', '']) {
      expect(await report(m.sid, status)).toEqual({ success: true, data: { changed: false } })
    }
    expect(await row(m.sid)).toEqual(before)
    expect(before.status).toBe('sent')
    expect(await events(m.messageId)).toEqual([])
  })

  test('a repeat: no change, timestamps kept, no second event', async () => {
    const m = await sent()
    await report(m.sid, 'delivered')
    const first = await row(m.sid)
    await clock.advance(10)
    expect((await report(m.sid, 'delivered')).data.changed).toBe(false)
    expect(await row(m.sid)).toEqual(first)
    await report(m.sid, 'read')
    const read = await row(m.sid)
    await clock.advance(10)
    expect((await report(m.sid, 'read')).data.changed).toBe(false)
    expect(await row(m.sid)).toEqual(read)
    expect(await statusEvents(m.messageId)).toHaveLength(2)
  })

  test('backwards (read, then delivered, sent or failed): no change, no event', async () => {
    const m = await sent()
    await report(m.sid, 'read')
    const before = await row(m.sid)
    for (const status of ['delivered', 'sent', 'failed', 'undelivered']) {
      expect((await report(m.sid, status, { ErrorCode: '30008' })).data.changed).toBe(false)
    }
    expect(await row(m.sid)).toEqual(before)
    expect(await statusEvents(m.messageId)).toEqual([['sent', 'read']])
  })

  test('failed is final: later delivered/read reports change nothing', async () => {
    const m = await sent()
    await report(m.sid, 'undelivered', { ErrorCode: '30008' })
    const before = await row(m.sid)
    for (const status of ['delivered', 'read', 'failed']) {
      expect((await report(m.sid, status, { ErrorCode: '30003' })).data.changed).toBe(false)
    }
    expect(await row(m.sid)).toEqual(before)
    expect(await statusEvents(m.messageId)).toEqual([['sent', 'failed']])
  })

  test('an unknown SID: 200, no message or event changes; the report is parked for when the SID is stored', async () => {
    const [{ count: before }] = await t.db.sql<[{ count: number }]>`select count(*)::int as count from webhook_events`
    const sid = randomSid()
    expect(await report(sid, 'delivered')).toEqual({ success: true, data: { changed: false } })
    const [{ count: after }] = await t.db.sql<[{ count: number }]>`select count(*)::int as count from webhook_events`
    expect(after).toBe(before)
    const parked = await t.db.sql`select status from parked_reports where message_sid = ${sid}`
    expect([...parked]).toEqual([{ status: 'delivered' }])
  })
})

describe('callbacks arriving together (group commit)', () => {
  test('share transactions, and each answers for its own reports: one change and one event per change', async () => {
    const messages = await Promise.all(Array.from({ length: 8 }, () => sent()))
    // Every report twice, delivered and read of one message racing each other.
    const posts = messages.flatMap((m) => ['delivered', 'read', 'delivered', 'read'].map((status) => ({ m, status })))
    const answers = await Promise.all(
      posts.map(async ({ m, status }) => ({ m, status, changed: (await report(m.sid, status)).data.changed })),
    )
    for (const m of messages) {
      const mine = answers.filter((a) => a.m === m)
      expect(mine.filter((a) => a.status === 'read' && a.changed)).toHaveLength(1)
      expect(mine.filter((a) => a.status === 'delivered' && a.changed).length).toBeLessThanOrEqual(1)
      const changes = await statusEvents(m.messageId)
      expect(changes).toHaveLength(mine.filter((a) => a.changed).length)
      expect(changes.at(-1)).toEqual([expect.any(String), 'read'])
      expect((await row(m.sid)).status).toBe('read')
    }
    // Rows written by one transaction carry its id (xmin): fewer transactions than messages means
    // callbacks of several messages were committed together.
    const [{ transactions }] = await t.db.sql<[{ transactions: number }]>`
      select count(distinct xmin::text)::int as transactions from messages where id = any(${messages.map((m) => m.messageId)}::bigint[])`
    expect(transactions).toBeLessThan(messages.length)
  })
})

describe('signature', () => {
  /** Asserts a 403 FORBIDDEN envelope, and that the message and its events are as they were. */
  async function expectForbidden(m: Sent, res: { status: number; body: any; headers: Headers }) {
    expect(res.status).toBe(403)
    expect(res.body).toEqual(errorEnvelope(res.headers, 'FORBIDDEN'))
    expect(await row(m.sid)).toMatchObject({ status: 'sent', delivered_at: null, read_at: null, failed_at: null, error_code: null })
    expect(await events(m.messageId)).toEqual([])
  }

  test('a tampered field (signed as delivered, posted as read)', async () => {
    const m = await sent()
    const signed = fields(m.sid, 'delivered')
    await expectForbidden(m, await callback(fields(m.sid, 'read'), { signature: sign(signed) }))
  })

  test('a tampered ErrorCode on a failure report', async () => {
    const m = await sent()
    const signed = fields(m.sid, 'undelivered', { ErrorCode: '30008' })
    await expectForbidden(m, await callback(fields(m.sid, 'undelivered', { ErrorCode: '30007' }), { signature: sign(signed) }))
  })

  test('a field added after signing (every field counts, not only the ones we read)', async () => {
    const m = await sent()
    const signed = fields(m.sid, 'delivered')
    await expectForbidden(m, await callback({ ...signed, Extra: 'x' }, { signature: sign(signed) }))
  })

  test('a field removed after signing', async () => {
    const m = await sent()
    const signed = fields(m.sid, 'delivered')
    const { ChannelPrefix: _dropped, ...rest } = signed
    await expectForbidden(m, await callback(rest, { signature: sign(signed) }))
  })

  test('signed for another URL (scheme, host, path, query)', async () => {
    const m = await sent()
    const params = fields(m.sid, 'delivered')
    for (const url of [
      'http://api.example.com/provider/twilio/status',
      'https://evil.example.com/provider/twilio/status',
      'https://api.example.com/provider/twilio/status/',
      'https://api.example.com/provider/other/status',
      'https://api.example.com/provider/twilio/status?x=1',
      'http://localhost/provider/twilio/status',
    ]) {
      await expectForbidden(m, await callback(params, { signature: sign(params, AUTH_TOKEN, url) }))
    }
  })

  test('a missing or empty header', async () => {
    const m = await sent()
    const params = fields(m.sid, 'delivered')
    await expectForbidden(m, await callback(params, { signature: null }))
    await expectForbidden(m, await callback(params, { signature: '' }))
  })

  test('signed with the wrong token', async () => {
    const m = await sent()
    const params = fields(m.sid, 'delivered')
    await expectForbidden(m, await callback(params, { signature: sign(params, 'tok_wrong_auth_token_0123456789ab') }))
    await expectForbidden(m, await callback(params, { signature: sign(params, `${AUTH_TOKEN}x`) }))
  })

  test('garbage signatures, and the right one altered (case, padding, truncation, another encoding)', async () => {
    const m = await sent()
    const params = fields(m.sid, 'delivered')
    const good = sign(params)
    const hex = Buffer.from(good, 'base64').toString('hex')
    for (const signature of ['x', 'not base64!', good.toLowerCase(), `${good}=`, `${good}${good}`, good.slice(0, -1), hex]) {
      expect(signature).not.toBe(good)
      await expectForbidden(m, await callback(params, { signature }))
    }
  })

  test('a JSON body, even with a signature over the same fields', async () => {
    const m = await sent()
    const params = fields(m.sid, 'delivered')
    await expectForbidden(m, await callback(params, { body: JSON.stringify(params), contentType: 'application/json' }))
  })

  test('a bad signature gets 403 whatever the body (authentication before validation)', async () => {
    const m = await sent()
    await expectForbidden(m, await callback({}, { signature: 'bad', body: 'not a form %%%' }))
    const res = await callback({}, { signature: null, body: '' })
    expect(res.status).toBe(403)
  })

  test('the signature of the exact form sent verifies, with the content-type charset and field order free', async () => {
    const m = await sent()
    const params = fields(m.sid, 'delivered')
    const reordered = Object.fromEntries(Object.entries(params).reverse())
    const res = await callback(reordered, { signature: sign(params), contentType: 'application/x-www-form-urlencoded; charset=utf-8' })
    expect(res.status).toBe(200)
    expect(res.body.data.changed).toBe(true)
  })

  test('a validly signed report without MessageSid or MessageStatus is 400', async () => {
    const noSid = { MessageStatus: 'delivered', AccountSid: ACCOUNT_SID }
    const res = await callback(noSid)
    expect(res.status).toBe(400)
    expect(res.body).toEqual(errorEnvelope(res.headers, 'VALIDATION_ERROR', 'MessageSid: is required'))
    const noStatus = { MessageSid: randomSid(), AccountSid: ACCOUNT_SID }
    const res2 = await callback(noStatus)
    expect(res2.status).toBe(400)
    expect(res2.body.error).toBe('MessageStatus: is required')
  })
})

describe('the route', () => {
  test('needs no API key, lives outside /api/v1, and other methods get 405', async () => {
    const get = await t.request('GET', PATH)
    expect(get.status).toBe(405)
    expect(get.body.code).toBe('METHOD_NOT_ALLOWED')
    expect(
      (await t.request('POST', `/api/v1${PATH}`, { rawBody: '', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status,
    ).toBe(404)
  })

  test('a body past the size limit, streamed without a length, is refused 413 before it is read whole', async () => {
    const chunk = new Uint8Array(1024 * 1024).fill(0x61) // 'a'
    let sent = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 2 * MAX_BODY_BYTES) return controller.close()
        sent += chunk.byteLength
        controller.enqueue(chunk)
      },
    })
    const res = await t.app.handle(
      new Request(`http://localhost${PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'x' },
        body,
      }),
    )
    expect(res.status).toBe(413)
    expect(await res.json()).toEqual(errorEnvelope(res.headers, 'PAYLOAD_TOO_LARGE'))
    // Reading stopped at the limit: far less than the stream would have given.
    expect(sent).toBeLessThan(MAX_BODY_BYTES + 4 * chunk.byteLength)
  })

  test('is in the admin OpenAPI document under "Provider callbacks", without credentials', async () => {
    expect((await t.request('GET', '/docs/json')).body.paths[PATH]).toBeUndefined()
    const doc = await t.request('GET', '/docs/admin/json')
    const op = doc.body.paths[PATH].post
    expect(op.tags).toEqual(['Provider callbacks'])
    expect(op.security).toEqual([])
    expect(Object.keys(op.requestBody.content)).toEqual(['application/x-www-form-urlencoded'])
    expect(Object.keys(op.responses).sort()).toEqual(['200', '400', '403', '404', '413', '422', '500'])
    expect(op.responses['403'].content['application/json'].schema.properties.code.enum).toEqual(['HTTPS_REQUIRED', 'FORBIDDEN'])
  })
})

describe('without a Twilio auth token (PROVIDER=simulator)', () => {
  test('the route answers 404 NOT_FOUND, whatever the signature', async () => {
    // The same database, configured as the default simulator without Twilio credentials.
    const twilio = { ...t.config.providers.twilio, accountSid: '', authToken: '', from: '' }
    const config = { ...t.config, provider: 'simulator' as const, providers: { ...t.config.providers, twilio } }
    const app = createApp({ ...t.deps, config })
    const m = await sent()
    const params = fields(m.sid, 'delivered')
    for (const signature of [sign(params), sign(params, ''), 'x']) {
      const res = await app.handle(
        new Request(`http://localhost${PATH}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
          body: new URLSearchParams(params).toString(),
        }),
      )
      expect(res.status).toBe(404)
      expect(await res.json()).toEqual(errorEnvelope(res.headers, 'NOT_FOUND'))
    }
    expect((await row(m.sid)).status).toBe('sent')
  })
})
