// The Twilio provider against a local fake Twilio (a real HTTP server on loopback), driven through
// POST /messages/send: what goes over the wire, and every way the hand-off can fail (each one a
// 502 with the charge refunded). Through the provider interface: which answers are throttling (429,
// 20429, 63018, with their Retry-After) rather than failures. The provider's time limit and the fake's
// limits are on a test clock: time passes only when the test moves it.

import { TestClock } from '../../src/lib/clock'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { readConfig } from '../../src/config'
import type { Provider } from '../../src/providers/provider'
import { providerOf } from '../../src/server'
import { money, testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { boundTemplate, campaignMessages, runCampaign } from '../helpers/templates'
import { fakeTwilio, twilioError } from '../helpers/fake-twilio'
import { closedPort, type FakeRequest } from '../helpers/fake-rates'

const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef'
const AUTH_TOKEN = 'tok_5ecret_auth_token_0123456789ab'
const FROM = 'whatsapp:+14155238886'
const PUBLIC_BASE_URL = 'https://api.example.com'
const MESSAGES_PATH = `/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`

const clock = new TestClock()
const fake = fakeTwilio({ clock })
const fakeUrl = fake.url
const form = (r: FakeRequest) => new URLSearchParams(r.body)

const twilioEnv = (apiBase: string) => ({
  PROVIDER: 'twilio',
  TWILIO_ACCOUNT_SID: ACCOUNT_SID,
  TWILIO_AUTH_TOKEN: AUTH_TOKEN,
  TWILIO_FROM: FROM,
  TWILIO_API_BASE: apiBase,
  PUBLIC_BASE_URL,
})

let t: TestApp
beforeAll(async () => {
  t = await testApp({ env: twilioEnv(fakeUrl) })
})
afterAll(async () => {
  await t.close()
  fake.stop()
})
beforeEach(() => fake.reset())

/** Sends one message that the fake (or the provider) fails, and checks the failure is complete. */
async function expectRefundedFailure(app: TestApp, to = '081234567890') {
  const { accountId, key } = await app.account(1000, { price: 100 })
  const res = await app.api('POST', '/messages/send', key, { to, body: 'hello' })
  expect(res.status).toBe(502)
  expect(res.body).toEqual(errorEnvelope(res.headers, 'BAD_GATEWAY', expect.any(String), { id: expect.any(Number) }))
  expect(await money(app, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
  const rows = await app.db.sql<
    {
      id: number
      status: string
      message_sid: string | null
      error_code: number | null
      error_message: string | null
      refunded_at: Date | null
    }[]
  >`
    select id, status, message_sid, error_code, error_message, refunded_at from messages where account_id = ${accountId}`
  expect(rows).toHaveLength(1)
  const row = rows[0]!
  expect(res.body.id).toBe(row.id)
  expect(row).toMatchObject({ status: 'failed', message_sid: null })
  expect(row.refunded_at).toBeInstanceOf(Date)
  const ledger = await app.db.sql<
    { kind: string; amount: number }[]
  >`select kind, amount from ledger where account_id = ${accountId} order by id`
  expect(ledger.map((r) => [r.kind, r.amount])).toEqual([
    ['topup', 1000],
    ['charge', -100],
    ['refund', 100],
  ])
  // The token never leaks, neither to the client nor into the stored message.
  expect(JSON.stringify(res.body)).not.toContain(AUTH_TOKEN)
  expect(row.error_message ?? '').not.toContain(AUTH_TOKEN)
  return { res, row }
}

describe('Twilio send', () => {
  test('PROVIDER=twilio wires the Twilio provider', () => {
    expect(t.deps.provider.name).toBe('twilio')
  })

  test('posts the exact form to the Messages resource with Basic auth; the answer sid becomes message_sid', async () => {
    const { accountId, key } = await t.account(1000, { price: 100 })
    const res = await t.api('POST', '/messages/send', key, { to: '0812-3456-7890', body: 'halo 👋\nbaris dua & "kutip" = 100%' })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ to: '+6281234567890', status: 'sent', cost: 100, balance_after: 900 })

    expect(fake.requests).toHaveLength(1)
    const r = fake.requests[0]!
    expect(r.method).toBe('POST')
    expect(r.path).toBe(MESSAGES_PATH)
    expect(r.headers.get('authorization')).toBe(`Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64')}`)
    expect(r.headers.get('content-type')).toStartWith('application/x-www-form-urlencoded')
    const fields = form(r)
    expect([...fields.keys()].sort()).toEqual(['Body', 'From', 'StatusCallback', 'To'])
    expect(Object.fromEntries(fields)).toEqual({
      To: 'whatsapp:+6281234567890',
      From: FROM,
      Body: 'halo 👋\nbaris dua & "kutip" = 100%',
      StatusCallback: 'https://api.example.com/provider/twilio/status',
    })

    const sid = fake.ids.at(-1)
    expect(res.body.data.message_id).toBe(sid)
    const [row] = await t.db.sql`select status, message_sid from messages where account_id = ${accountId}`
    expect(row).toMatchObject({ status: 'sent', message_sid: sid })
    expect(await money(t, accountId)).toEqual({ balance: 900, ledgerSum: 900 })
  })

  test('MediaUrl is sent only when media_url is given', async () => {
    const { key } = await t.account(1000, { price: 100 })
    const withMedia = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      body: 'pic',
      media_url: 'https://cdn.example.com/a.png?x=1&y=2',
    })
    const without = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'text' })
    expect([withMedia.status, without.status]).toEqual([200, 200])
    expect(fake.requests).toHaveLength(2)
    expect(form(fake.requests[0]!).getAll('MediaUrl')).toEqual(['https://cdn.example.com/a.png?x=1&y=2'])
    expect(form(fake.requests[1]!).has('MediaUrl')).toBe(false)
    expect([...form(fake.requests[0]!).keys()].sort()).toEqual(['Body', 'From', 'MediaUrl', 'StatusCallback', 'To'])
  })

  test("400 with Twilio's error JSON: 502, refunded, Twilio's code and message stored", async () => {
    fake.answer = () => twilioError(400, 21211, "Invalid 'To' Phone Number")
    const { res, row } = await expectRefundedFailure(t)
    expect(row).toMatchObject({ error_code: 21211, error_message: "Invalid 'To' Phone Number" })
    expect(res.body.error).toContain("Invalid 'To' Phone Number")
    expect(fake.requests).toHaveLength(1)
  })

  test('500 with a non-JSON body: 502, refunded, error "HTTP 500" without a code', async () => {
    fake.answer = () => new Response('<html>Internal Server Error</html>', { status: 500, headers: { 'content-type': 'text/html' } })
    const { row } = await expectRefundedFailure(t)
    expect(row).toMatchObject({ error_code: null, error_message: 'HTTP 500' })
  })

  test('an error JSON whose code is not a number keeps the message but stores no code', async () => {
    fake.answer = () => Response.json({ code: 'oops', message: 'Service unavailable' }, { status: 503 })
    const { row } = await expectRefundedFailure(t)
    expect(row).toMatchObject({ error_code: null, error_message: 'Service unavailable' })
  })

  test('2xx without a valid sid: 502, refunded', async () => {
    const answers: (() => Response)[] = [
      () => Response.json({ status: 'queued' }, { status: 201 }),
      () => Response.json({ sid: 42 }, { status: 201 }),
      () => Response.json({ sid: '' }, { status: 201 }),
      () => Response.json({ sid: 'SM<script>' }, { status: 200 }),
      () => new Response('not json', { status: 201 }),
      () => new Response(null, { status: 204 }),
      () => Response.json(['SM0123456789abcdef0123456789abcdef'], { status: 201 }),
    ]
    for (const answer of answers) {
      fake.answer = answer
      const { row } = await expectRefundedFailure(t)
      expect(row.error_code).toBeNull()
      expect(row.error_message).toMatch(/without a valid message SID/)
    }
  })

  test('an oversized answer is not read whole and counts as a failure', async () => {
    fake.answer = () =>
      new Response(JSON.stringify({ sid: 'SM0123456789abcdef0123456789abcdef', pad: 'x'.repeat(200_000) }), { status: 201 })
    await expectRefundedFailure(t)
  })

  test('a 302 redirect is not followed and counts as a failure', async () => {
    fake.answer = (request) =>
      new URL(request.url).pathname === '/elsewhere'
        ? undefined
        : new Response(null, { status: 302, headers: { location: `${fakeUrl}/elsewhere` } })
    const { row } = await expectRefundedFailure(t)
    expect(row).toMatchObject({ error_code: null, error_message: 'HTTP 302' })
    expect(fake.requests.map((r) => r.path)).toEqual([MESSAGES_PATH])
  })

  test('the auth token never reaches the error message, even when Twilio echoes it', async () => {
    fake.answer = (request) =>
      Response.json(
        { code: 20003, message: `Authenticate failed for ${request.headers.get('authorization')} token ${AUTH_TOKEN}` },
        { status: 401 },
      )
    const { row } = await expectRefundedFailure(t)
    expect(row.error_code).toBe(20003)
    expect(row.error_message).toContain('[redacted]')
    expect(row.error_message).not.toContain(Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64'))
  })
})

describe('Twilio unreachable or slow', () => {
  // One app whose provider is swapped per test, so the failure modes that need their own
  // provider (closed port, short timeout) share one database.
  let current: Provider
  let u: TestApp
  /** The Twilio provider through the registry, as the service builds it. */
  const twilioAt = (apiBase: string, timeoutMs = 10_000) =>
    providerOf(readConfig({ ...twilioEnv(apiBase), PROVIDER_TIMEOUT_MS: String(timeoutMs) }), u.db.sql, clock)
  beforeAll(async () => {
    u = await testApp({ provider: { name: 'twilio', send: (message) => current.send(message) }, clock, runOnClock: true })
  })

  /**
   * The fake holds its answer (a refusal, should it ever come) until `letGo`; `arrived` once the send
   * reached it. Only the clock passing the time limit can end the provider's wait.
   */
  function heldAnswer(answer: () => Response) {
    let arrive!: () => void
    let letGo!: () => void
    const arrived = new Promise<void>((resolve) => (arrive = resolve))
    const released = new Promise<void>((resolve) => (letGo = resolve))
    return { arrived, letGo, answer: async () => (arrive(), await released, answer()) }
  }
  afterAll(() => u.close())

  test('connection refused: 502, refunded', async () => {
    current = twilioAt(`http://127.0.0.1:${closedPort()}`)
    const { row } = await expectRefundedFailure(u)
    expect(row.error_code).toBeNull()
    expect(row.error_message).toMatch(/^could not reach Twilio/)
  })

  test('no answer within the timeout: 502, refunded, and the request is not waited on', async () => {
    // Late, it answers a refusal: an acceptance after the test would land in whichever test runs then.
    const late = heldAnswer(() => new Response(null, { status: 503 }))
    fake.answer = late.answer
    current = twilioAt(fakeUrl, 300)
    const failing = expectRefundedFailure(u)
    await late.arrived
    await clock.advance(300)
    // The failure is back while the fake still holds its answer (a request waited on would hang here:
    // the fake lets its answer go only after this). The clock moved only the time limit's 300 ms.
    const { row } = await failing
    expect(row).toMatchObject({ error_code: null, error_message: 'Twilio did not answer within 300 ms' })
    expect(fake.requests).toHaveLength(1)
    late.letGo()
  })

  test('headers in time but the body stalls past the timeout: 502, refunded', async () => {
    let stalled!: () => void
    let letGo!: () => void
    const stalling = new Promise<void>((resolve) => (stalled = resolve))
    const released = new Promise<void>((resolve) => (letGo = resolve))
    fake.answer = () => {
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode('{"sid":"SM0123456789abcdef'))
          stalled()
          await released
          controller.enqueue(new TextEncoder().encode('0123456789abcdef"}'))
          controller.close()
        },
      })
      return new Response(stream, { status: 201, headers: { 'content-type': 'application/json' } })
    }
    current = twilioAt(fakeUrl, 300)
    const failing = expectRefundedFailure(u)
    await stalling
    await clock.advance(300)
    const { row } = await failing
    expect(row.error_message).toBe('Twilio did not answer within 300 ms')
    letGo()
  })
})

describe('throttling answers through the provider interface: not failures, with their Retry-After', () => {
  const message = (id: number) => ({ id, to: '+6281234567890', body: `throttled ${id}`, mediaUrl: null })
  const send = (id = 1) => providerOf(readConfig(twilioEnv(fakeUrl)), t.db.sql, clock).send(message(id))

  test('20429 and 63018 (HTTP 429): throttles of the sender, code and text kept, with Retry-After in seconds or without', async () => {
    for (const [code, text] of [
      [20429, 'Too Many Requests'],
      [63018, 'Rate limit exceeded for Channel'],
    ] as const) {
      for (const [headers, retryAfterMs] of [
        [{ 'retry-after': '3' }, 3_000],
        [{}, null],
      ] as const) {
        fake.answer = () => twilioError(429, code, text, headers)
        expect(await send()).toEqual({ ok: false, errorCode: code, errorMessage: text, throttle: { scope: 'sender', retryAfterMs } })
      }
    }
  })

  test('63018 is a throttle whatever the HTTP status (a 400 here)', async () => {
    fake.answer = () => twilioError(400, 63018, 'Rate limit exceeded for Channel')
    expect(await send()).toEqual({
      ok: false,
      errorCode: 63018,
      errorMessage: 'Rate limit exceeded for Channel',
      throttle: { scope: 'sender', retryAfterMs: null },
    })
  })

  test('a bare HTTP 429 (no JSON) is a throttle; Retry-After as an HTTP date, in the past, unreadable or huge', async () => {
    const cases: [string | null, (ms: number | null) => void][] = [
      [new Date(clock.now().getTime() + 5_000).toUTCString(), (ms) => expect(ms).toBeWithin(3_000, 5_001)],
      ['Thu, 01 Jan 2015 00:00:00 GMT', (ms) => expect(ms).toBe(0)],
      ['1.5', (ms) => expect(ms).toBe(1_500)],
      ['soon', (ms) => expect(ms).toBeNull()],
      ['-3', (ms) => expect(ms).toBeNull()],
      ['86400', (ms) => expect(ms).toBe(3_600_000)],
      [null, (ms) => expect(ms).toBeNull()],
    ]
    for (const [header, check] of cases) {
      fake.answer = () => new Response('slow down', { status: 429, headers: header === null ? {} : { 'retry-after': header } })
      const result = await send()
      expect(result).toMatchObject({ ok: false, errorCode: null, errorMessage: 'HTTP 429', throttle: { scope: 'sender' } })
      check(result.ok ? null : result.throttle!.retryAfterMs)
    }
  })

  test('other refusals stay plain failures, Retry-After or not: 21610, 63016, 21211; a 503 without Retry-After', async () => {
    for (const [status, code, headers] of [
      [400, 21610, { 'retry-after': '5' }],
      [400, 63016, { 'retry-after': '5' }],
      [400, 21211, {}],
      [503, 20500, {}],
    ] as const) {
      fake.answer = () => twilioError(status, code, `refused ${code}`, headers)
      const result = await send()
      expect(result).toEqual({ ok: false, errorCode: code, errorMessage: `refused ${code}` })
      expect('throttle' in result).toBe(false)
    }
  })

  test('a 503 that says when to come back (Retry-After) is a throttle of the sender', async () => {
    fake.answer = () => twilioError(503, 20500, 'Service unavailable', { 'retry-after': '30' })
    expect(await send()).toEqual({
      ok: false,
      errorCode: 20500,
      errorMessage: 'Service unavailable',
      throttle: { scope: 'sender', retryAfterMs: 30_000 },
    })
  })

  test('the fake enforces a rate: beyond it 429 + 20429 with Retry-After, each message accepted once', async () => {
    fake.limits.perSecond = 2
    const results = await Promise.all([1, 2, 3].map((id) => send(id)))
    expect(results.filter((r) => r.ok)).toHaveLength(2)
    const refused = results.find((r) => !r.ok)!
    expect(refused).toEqual({
      ok: false,
      errorCode: 20429,
      errorMessage: 'Too Many Requests',
      throttle: { scope: 'sender', retryAfterMs: 1000 },
    })
    expect(fake.requests.map((r) => r.status).sort()).toEqual([201, 201, 429])
    expect(fake.accepted.total).toBe(2)
    // After its Retry-After, the refused message goes through, once.
    await clock.advance(1_000)
    const again = await send(results.indexOf(refused) + 1)
    expect(again.ok).toBe(true)
    expect(fake.accepted.duplicates()).toEqual([])
    expect(fake.accepted.total).toBe(3)
  })
})

describe('templates through the provider interface', () => {
  test('an approved Content template goes as ContentSid and ContentVariables ({"1": …, "2": …}), without Body', async () => {
    const provider = providerOf(readConfig(twilioEnv(fakeUrl)), t.db.sql, clock)
    const result = await provider.send({
      id: 1,
      to: '+6281234567890',
      body: 'Hi Budi, your order 1001 has shipped',
      template: { ref: 'HX0123456789abcdef0123456789abcdef', language: null, variables: ['Budi', '1001 "express"'] },
    })
    expect(result).toEqual({ ok: true, sid: expect.stringMatching(/^SM[0-9a-f]{32}$/) })
    expect(fake.requests).toHaveLength(1)
    const fields = form(fake.requests[0]!)
    expect([...fields.keys()].sort()).toEqual(['ContentSid', 'ContentVariables', 'From', 'StatusCallback', 'To'])
    expect(fields.get('ContentSid')).toBe('HX0123456789abcdef0123456789abcdef')
    expect(JSON.parse(fields.get('ContentVariables')!)).toEqual({ '1': 'Budi', '2': '1001 "express"' })
  })
})

describe('approved templates through the API', () => {
  const SID = 'HX0123456789abcdef0123456789abcdef'
  const fieldsOf = (r: FakeRequest) => Object.fromEntries(form(r))

  test('a campaign whose template is bound sends ContentSid and ContentVariables in the bound order; the message keeps the text', async () => {
    const a = await boundTemplate(
      t,
      'Hi {{name}}, the {{city}} store has your order',
      // Variables in the Content template's order, not the text's; the Meta binding is not the provider in use.
      { twilio: { ref: SID, variables: ['city', 'name'] }, meta: { ref: 'order_ready', language: 'id', variables: ['name'] } },
      [
        { name: 'Budi', phone: '081200000001', city: 'Bandung' },
        { name: 'Sari "S"', phone: '081200000002' },
      ],
    )
    const campaignId = await runCampaign(t, a)
    expect(fake.requests).toHaveLength(2)
    const sent = fake.requests.map(fieldsOf).sort((x, y) => x.To!.localeCompare(y.To!))
    expect(sent).toEqual([
      {
        To: 'whatsapp:+6281200000001',
        From: FROM,
        ContentSid: SID,
        ContentVariables: JSON.stringify({ '1': 'Bandung', '2': 'Budi' }),
        StatusCallback: 'https://api.example.com/provider/twilio/status',
      },
      {
        To: 'whatsapp:+6281200000002',
        From: FROM,
        ContentSid: SID,
        ContentVariables: JSON.stringify({ '1': '', '2': 'Sari "S"' }),
        StatusCallback: 'https://api.example.com/provider/twilio/status',
      },
    ])
    const rows = await campaignMessages(t, campaignId)
    expect(rows.map((r) => [r.status, r.body, r.template_id, r.provider_template])).toEqual([
      [
        'sent',
        'Hi Budi, the Bandung store has your order',
        a.templateId,
        { provider: 'twilio', ref: SID, language: null, variables: ['Bandung', 'Budi'] },
      ],
      [
        'sent',
        'Hi Sari "S", the  store has your order',
        a.templateId,
        { provider: 'twilio', ref: SID, language: null, variables: ['', 'Sari "S"'] },
      ],
    ])
    expect(await money(t, a.accountId)).toEqual({ balance: 9_980, ledgerSum: 9_980 })
  })

  test('a template bound for another provider only goes as free-form text (Body)', async () => {
    const a = await boundTemplate(t, 'Hi {{name}}', { meta: { ref: 'hello', language: 'en_US', variables: ['name'] } }, [
      { name: 'Ani', phone: '081200000003' },
    ])
    const campaignId = await runCampaign(t, a)
    expect(fake.requests.map(fieldsOf)).toEqual([
      { To: 'whatsapp:+6281200000003', From: FROM, Body: 'Hi Ani', StatusCallback: 'https://api.example.com/provider/twilio/status' },
    ])
    const [row] = await campaignMessages(t, campaignId)
    expect([row!.body, row!.template_id, row!.provider_template]).toEqual(['Hi Ani', a.templateId, null])
  })

  test('send and bulk with template_id: the Content template with the values in the bound order, charged, the text recorded', async () => {
    const a = await boundTemplate(t, 'Order {{name}} ships to {{city}}', { twilio: { ref: SID, variables: ['name', 'city'] } })
    const one = await t.api('POST', '/messages/send', a.key, {
      to: '081200000004',
      template_id: a.templateId,
      variables: { city: 'Medan', name: '#1001' },
    })
    expect(one.status).toBe(200)
    expect(one.body.data).toMatchObject({ to: '+6281200000004', status: 'sent', cost: 10, balance_after: 9_990 })
    const bulk = await t.api('POST', '/messages/bulk', a.key, {
      messages: [
        { to: '081200000005', template_id: a.templateId, variables: { name: '#1002', city: 'Solo' } },
        { to: '081200000006', body: 'free text' },
      ],
    })
    expect(bulk.body.data).toMatchObject({ total: 2, sent: 2, failed: 0, total_cost: 20, balance_after: 9_970 })
    const byTo = new Map(fake.requests.map((r) => [form(r).get('To'), fieldsOf(r)]))
    expect(byTo.get('whatsapp:+6281200000004')).toMatchObject({ ContentSid: SID, ContentVariables: '{"1":"#1001","2":"Medan"}' })
    expect(byTo.get('whatsapp:+6281200000004')!.Body).toBeUndefined()
    expect(byTo.get('whatsapp:+6281200000005')).toMatchObject({ ContentSid: SID, ContentVariables: '{"1":"#1002","2":"Solo"}' })
    expect(byTo.get('whatsapp:+6281200000006')).toMatchObject({ Body: 'free text' })
    const got = await t.api('GET', `/messages/${one.body.data.message_id}`, a.key)
    expect(got.body.data).toMatchObject({
      body: 'Order #1001 ships to Medan',
      template_id: a.templateId,
      provider_template: { provider: 'twilio', ref: SID, language: null, variables: ['#1001', 'Medan'] },
    })
    expect(await money(t, a.accountId)).toEqual({ balance: 9_970, ledgerSum: 9_970 })
  })

  test('a template send Twilio refuses (63016) is a 502, refunded, with the code kept', async () => {
    const a = await boundTemplate(t, 'Hi {{name}}', { twilio: { ref: SID, variables: ['name'] } })
    fake.answer = () => twilioError(400, 63016, 'outside the allowed window')
    const res = await t.api('POST', '/messages/send', a.key, { to: '081200000007', template_id: a.templateId, variables: { name: 'X' } })
    expect([res.status, res.body.code]).toEqual([502, 'BAD_GATEWAY'])
    const [row] = await t.db.sql`select status, error_code, refunded_at is not null as refunded from messages where id = ${res.body.id}`
    expect(row).toEqual({ status: 'failed', error_code: 63016, refunded: true })
    expect(await money(t, a.accountId)).toEqual({ balance: 10_000, ledgerSum: 10_000 })
  })
})
