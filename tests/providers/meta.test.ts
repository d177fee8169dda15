// The Meta WhatsApp Cloud API provider against a local fake Graph API (a real HTTP server on
// loopback), driven through POST /messages/send and /messages/bulk: the exact request, the wamid as
// message_id, and every way the hand-off can fail (each one a 502 or a failed bulk entry, with the
// charge refunded and Meta's error code kept). Through the provider interface: which answers are
// throttling (130429, 131056, 80007, any 429, with their Retry-After) rather than failures. Also its
// settings, read at start. The app, its provider's time limit and the fake's limits are on a test
// clock: time passes only when the test moves it.

import { TestClock } from '../../src/lib/clock'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { ConfigError, readConfig } from '../../src/config'
import { providerOf } from '../../src/server'
import { money, testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { boundTemplate, campaignMessages, runCampaign } from '../helpers/templates'
import { fakeGraph, graphError } from '../helpers/fake-graph'
import { closedPort, type FakeRequest } from '../helpers/fake-rates'

const ACCESS_TOKEN = 'EAAGm0PX4ZCpsBAsecret_meta_token_0123456789'
const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'meta_app_secret_0123456789abcdef'
const VERIFY_TOKEN = 'verify-me-please'
const API_PATH = `/v21.0/${PHONE_NUMBER_ID}/messages`

const clock = new TestClock()
const fake = fakeGraph({ clock })
const fakeUrl = fake.url
/** A Graph API error answer, as Meta writes them. */
const refused = (status: number, code: number, message: string) => () => graphError(status, code, message)

const metaEnv = (apiBase: string): Record<string, string> => ({
  PROVIDER: 'meta',
  META_ACCESS_TOKEN: ACCESS_TOKEN,
  META_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
  META_APP_SECRET: APP_SECRET,
  META_VERIFY_TOKEN: VERIFY_TOKEN,
  META_API_BASE: apiBase,
})

let t: TestApp
beforeAll(async () => {
  // Requests and worker steps run on the clock (a hand-off's pace slots are sleeps on it); PROVIDER_TIMEOUT_MS passes when the test moves it.
  t = await testApp({ env: { ...metaEnv(`${fakeUrl}/v21.0`), PROVIDER_TIMEOUT_MS: '2000' }, clock, runOnClock: true })
})
afterAll(async () => {
  await t.close()
  fake.stop()
})
beforeEach(() => fake.reset())

type Row = { status: string; message_sid: string | null; error_code: number | null; error_message: string | null; refunded_at: Date | null }
const rowsOf = (app: TestApp, accountId: number) =>
  app.db.sql<
    Row[]
  >`select status, message_sid, error_code, error_message, refunded_at from messages where account_id = ${accountId} order by id`

/** Sends one message that the fake (or the network) fails, and checks the failure is complete. */
async function expectRefundedFailure(app: TestApp = t) {
  const { accountId, key } = await app.account(1000, { price: 100 })
  const res = await app.api('POST', '/messages/send', key, { to: '081234567890', body: 'hello' })
  expect(res.status).toBe(502)
  expect(res.body).toEqual(errorEnvelope(res.headers, 'BAD_GATEWAY', expect.any(String), { id: expect.any(Number) }))
  expect(await money(app, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
  const rows = await rowsOf(app, accountId)
  expect(rows).toHaveLength(1)
  const row = rows[0]!
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
  expect(JSON.stringify(res.body)).not.toContain(ACCESS_TOKEN)
  expect(row.error_message ?? '').not.toContain(ACCESS_TOKEN)
  return { res, row }
}

describe('Meta send', () => {
  test('PROVIDER=meta wires the Meta provider', () => {
    expect(t.deps.provider.name).toBe('meta')
  })

  test('posts the exact JSON to {phone number id}/messages with the bearer token; the wamid becomes message_id', async () => {
    const { accountId, key } = await t.account(1000, { price: 100 })
    const body = 'halo 👋\nbaris dua & "kutip" = 100%'
    const res = await t.api('POST', '/messages/send', key, { to: '0812-3456-7890', body })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ to: '+6281234567890', status: 'sent', cost: 100, balance_after: 900 })

    expect(fake.requests).toHaveLength(1)
    const r = fake.requests[0]!
    expect(r.method).toBe('POST')
    expect(r.path).toBe(API_PATH)
    expect(r.headers.get('authorization')).toBe(`Bearer ${ACCESS_TOKEN}`)
    expect(r.headers.get('content-type')).toStartWith('application/json')
    expect(JSON.parse(r.body)).toEqual({ messaging_product: 'whatsapp', to: '6281234567890', type: 'text', text: { body } })

    const wamid = fake.ids.at(-1)!
    expect(res.body.data.message_id).toBe(wamid)
    expect([...(await rowsOf(t, accountId))]).toEqual([
      { status: 'sent', message_sid: wamid, error_code: null, error_message: null, refunded_at: null },
    ])
    expect(await money(t, accountId)).toEqual({ balance: 900, ledgerSum: 900 })
    // The message is found by its wamid, as by any SID.
    const got = await t.api('GET', `/messages/${encodeURIComponent(wamid)}`, key)
    expect([got.status, got.body.data.message_sid, got.body.data.status]).toEqual([200, wamid, 'sent'])
  })

  test('a media_url goes as an image (jpg, jpeg, png) or a document (anything else) with the body as caption', async () => {
    const { key } = await t.account(10_000, { price: 100 })
    const cases: [string, Record<string, unknown>][] = [
      ['https://cdn.example.com/promo.jpg', { type: 'image', image: { link: 'https://cdn.example.com/promo.jpg', caption: 'see' } }],
      ['https://cdn.example.com/a/B.JPEG?v=2', { type: 'image', image: { link: 'https://cdn.example.com/a/B.JPEG?v=2', caption: 'see' } }],
      ['https://cdn.example.com/p.png#x', { type: 'image', image: { link: 'https://cdn.example.com/p.png#x', caption: 'see' } }],
      [
        'https://cdn.example.com/files/Invoice%20101.pdf?sig=abc',
        {
          type: 'document',
          document: { link: 'https://cdn.example.com/files/Invoice%20101.pdf?sig=abc', caption: 'see', filename: 'Invoice 101.pdf' },
        },
      ],
      [
        'https://cdn.example.com/clip.mp4',
        { type: 'document', document: { link: 'https://cdn.example.com/clip.mp4', caption: 'see', filename: 'clip.mp4' } },
      ],
      ['https://cdn.example.com/', { type: 'document', document: { link: 'https://cdn.example.com/', caption: 'see' } }],
    ]
    for (const [mediaUrl, expected] of cases) {
      fake.requests = []
      const res = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'see', media_url: mediaUrl })
      expect(res.status).toBe(200)
      expect(JSON.parse(fake.requests[0]!.body)).toEqual({ messaging_product: 'whatsapp', to: '6281234567890', ...expected })
    }
  })

  test('bulk: every entry is its own request; refused entries fail with their Meta code and are refunded', async () => {
    const { accountId, key } = await t.account(1000, { price: 100 })
    fake.answer = (_, sent) => {
      if (sent?.to === '6281234560002') return refused(400, 131026, 'Message undeliverable')()
      if (sent?.to === '6281234560003') return new Response('<html>upstream error</html>', { status: 503 })
      return undefined
    }
    const res = await t.api('POST', '/messages/bulk', key, {
      messages: [
        { to: '081234560001', body: 'one' },
        { to: '081234560002', body: 'two' },
        { to: '081234560003', body: 'three' },
        { to: '081234560004', body: 'four' },
      ],
    })
    expect(res.status).toBe(200)
    const results = res.body.data.results
    expect(results.map((r: { status: string }) => r.status)).toEqual(['sent', 'failed', 'failed', 'sent'])
    expect(results[0].message_id).toMatch(/^wamid\./)
    expect(results[1]).toMatchObject({ to: '+6281234560002', status: 'failed', code: 'BAD_GATEWAY' })
    expect(fake.requests).toHaveLength(4)
    expect(fake.requests.map((r) => JSON.parse(r.body).to).sort()).toEqual([
      '6281234560001',
      '6281234560002',
      '6281234560003',
      '6281234560004',
    ])
    const rows = await t.db.sql<Row[]>`
      select status, message_sid, error_code, error_message, refunded_at from messages where account_id = ${accountId} order by phone`
    expect(rows.map((r) => [r.status, r.error_code, r.error_message])).toEqual([
      ['sent', null, null],
      ['failed', 131026, 'Message undeliverable'],
      ['failed', null, 'HTTP 503'],
      ['sent', null, null],
    ])
    expect(rows.map((r) => r.refunded_at !== null)).toEqual([false, true, true, false])
    expect(await money(t, accountId)).toEqual({ balance: 800, ledgerSum: 800 })
  })
})

describe('Meta refuses or fails: 502, refunded', () => {
  test('a 4xx with Meta error object: its code and message are kept', async () => {
    fake.answer = refused(400, 131030, '(#131030) Recipient phone number not in allowed list')
    const { row } = await expectRefundedFailure()
    expect(row).toMatchObject({ error_code: 131030, error_message: '(#131030) Recipient phone number not in allowed list' })
  })

  test('an expired token (401, code 190)', async () => {
    fake.answer = refused(401, 190, 'Error validating access token: Session has expired')
    const { row } = await expectRefundedFailure()
    expect(row).toMatchObject({ error_code: 190, error_message: 'Error validating access token: Session has expired' })
  })

  test('a 5xx with Meta error object (code 131000), and one without a body', async () => {
    fake.answer = refused(500, 131000, 'Something went wrong')
    expect((await expectRefundedFailure()).row).toMatchObject({ error_code: 131000, error_message: 'Something went wrong' })
    fake.answer = () => new Response(null, { status: 502 })
    expect((await expectRefundedFailure()).row).toMatchObject({ error_code: null, error_message: 'HTTP 502' })
  })

  test('an error whose message echoes the token: the token is redacted', async () => {
    fake.answer = (request) => refused(401, 190, `Invalid OAuth access token - ${request.headers.get('authorization')}`)()
    const { row } = await expectRefundedFailure()
    expect(row.error_message).toBe('Invalid OAuth access token - Bearer [redacted]')
  })

  test('malformed answers: not JSON, no messages, an empty list, an id that is not text', async () => {
    for (const answer of [
      () => new Response('OK', { status: 200 }),
      () => Response.json({ messaging_product: 'whatsapp' }),
      () => Response.json({ messaging_product: 'whatsapp', messages: [] }),
      () => Response.json({ messaging_product: 'whatsapp', messages: [{ id: 12345 }] }),
      () => Response.json({ messaging_product: 'whatsapp', messages: [{ id: 'has spaces in it' }] }),
      () => Response.json([{ id: 'wamid.x' }]),
    ]) {
      fake.answer = answer
      const { row } = await expectRefundedFailure()
      expect(row).toMatchObject({ error_code: null, error_message: 'Meta answered HTTP 200 without a message id' })
    }
  })

  test('a redirect is not followed', async () => {
    fake.answer = () => new Response(null, { status: 302, headers: { location: `${fakeUrl}/elsewhere` } })
    expect((await expectRefundedFailure()).row).toMatchObject({ error_code: null, error_message: 'HTTP 302' })
    expect(fake.requests.map((r) => r.path)).toEqual([API_PATH])
  })

  test('no answer within PROVIDER_TIMEOUT_MS', async () => {
    // The fake holds the request (and accepts it, late, once the test lets it go) while the clock passes the limit.
    let arrive!: () => void
    let letGo!: () => void
    const arrived = new Promise<void>((resolve) => (arrive = resolve))
    const released = new Promise<void>((resolve) => (letGo = resolve))
    fake.answer = async () => {
      arrive()
      await released
      return undefined
    }
    const failing = expectRefundedFailure()
    await arrived
    await clock.advance(2_000)
    const { row } = await failing
    // The provider's own deadline and the hand-off's are the same setting: either may speak first.
    expect(row.error_code).toBeNull()
    expect(row.error_message).toMatch(/did not answer within (2000 ms|2 s)$/)
    expect(fake.requests).toHaveLength(1)
    letGo()
  })

  test('connection refused', async () => {
    const u = await testApp({ env: metaEnv(`http://127.0.0.1:${closedPort()}/v21.0`) })
    try {
      const { row } = await expectRefundedFailure(u)
      expect(row.error_code).toBeNull()
      expect(row.error_message).toMatch(/^could not reach Meta/)
    } finally {
      await u.close()
    }
  })
})

describe('throttling answers through the provider interface: not failures, with their Retry-After', () => {
  const message = (id: number, to = '+6281234567890') => ({ id, to, body: `throttled ${id}`, mediaUrl: null })
  const provider = () => providerOf(readConfig(metaEnv(fake.apiBase)), t.db.sql, clock)

  test('130429 (sender), 131056 (recipient), 80007 (account): throttles, with Retry-After or without', async () => {
    const cases = [
      [130429, '(#130429) Rate limit hit', 'sender'],
      [131056, '(#131056) (Business Account, Consumer Account) pair rate limit hit', 'recipient'],
      [80007, '(#80007) Rate limit issues', 'account'],
    ] as const
    for (const [code, text, scope] of cases) {
      for (const [headers, retryAfterMs] of [
        [{ 'retry-after': '7' }, 7_000],
        [{}, null],
      ] as const) {
        fake.answer = () => graphError(400, code, text, headers)
        expect(await provider().send(message(1))).toEqual({
          ok: false,
          errorCode: code,
          errorMessage: text,
          throttle: { scope, retryAfterMs },
        })
      }
    }
  })

  test('an HTTP 429 is a throttle of the sender whatever its code (or none); a code keeps its own scope', async () => {
    fake.answer = () => graphError(429, 4, '(#4) Application request limit reached', { 'retry-after': '2' })
    expect(await provider().send(message(1))).toEqual({
      ok: false,
      errorCode: 4,
      errorMessage: '(#4) Application request limit reached',
      throttle: { scope: 'sender', retryAfterMs: 2_000 },
    })
    fake.answer = () => new Response(null, { status: 429 })
    expect(await provider().send(message(2))).toEqual({
      ok: false,
      errorCode: null,
      errorMessage: 'HTTP 429',
      throttle: { scope: 'sender', retryAfterMs: null },
    })
    fake.answer = () => graphError(429, 131056, 'pair rate limit hit')
    expect(await provider().send(message(3))).toMatchObject({ throttle: { scope: 'recipient', retryAfterMs: null } })
  })

  test('other refusals stay plain failures, Retry-After or not: 131026, 131047, 131049, 131048, 131031, 368, 131042, 190', async () => {
    for (const code of [131026, 131047, 131049, 131048, 131031, 368, 131042, 190]) {
      fake.answer = () => graphError(code === 368 ? 403 : 400, code, `refused ${code}`, { 'retry-after': '5' })
      const result = await provider().send(message(code))
      expect(result).toEqual({ ok: false, errorCode: code, errorMessage: `refused ${code}` })
      expect('throttle' in result).toBe(false)
    }
  })

  test('a throttle keeps the token out of its text', async () => {
    fake.answer = (request) => graphError(400, 130429, `Rate limit hit for ${request.headers.get('authorization')}`)
    expect(await provider().send(message(1))).toEqual({
      ok: false,
      errorCode: 130429,
      errorMessage: 'Rate limit hit for Bearer [redacted]',
      throttle: { scope: 'sender', retryAfterMs: null },
    })
  })

  test('the fake enforces a rate (130429) and a gap per recipient (131056) with Retry-After; each message accepted once', async () => {
    fake.limits.perSecond = 3
    fake.limits.recipientGapMs = 1_500
    const sender = provider()
    // Two to one recipient: the second breaks the pair rate.
    const first = await sender.send(message(1, '+6281200000001'))
    const second = await sender.send(message(2, '+6281200000001'))
    expect(first.ok).toBe(true)
    expect(second).toEqual({
      ok: false,
      errorCode: 131056,
      errorMessage: '(#131056) (Business Account, Consumer Account) pair rate limit hit',
      throttle: { scope: 'recipient', retryAfterMs: expect.any(Number) },
    })
    // Whole seconds: what is left of the 1.5 s gap, rounded up.
    expect(second.ok ? null : second.throttle!.retryAfterMs).toBeOneOf([1_000, 2_000])
    // Three more recipients within the second: the third of them is over the 3 per second.
    const others = await Promise.all([3, 4, 5].map((id) => sender.send(message(id, `+628120000000${id}`))))
    expect(others.filter((r) => r.ok)).toHaveLength(2)
    expect(others.find((r) => !r.ok)).toEqual({
      ok: false,
      errorCode: 130429,
      errorMessage: '(#130429) Rate limit hit',
      throttle: { scope: 'sender', retryAfterMs: 1_000 },
    })
    expect(fake.requests.slice(0, 2).map((r) => [r.status, r.code])).toEqual([
      [200, null],
      [400, 131056],
    ])
    expect(
      fake.requests
        .slice(2)
        .map((r) => `${r.status} ${r.code}`)
        .sort(),
    ).toEqual(['200 null', '200 null', '400 130429'])
    expect(fake.accepted.times('throttled 1')).toBe(1)
    expect(fake.accepted.times('throttled 2')).toBe(0)
    expect(fake.accepted.total).toBe(3)
  })
})

describe('templates through the provider interface', () => {
  test('an approved template goes as type "template" with its language and body parameters in order', async () => {
    const provider = providerOf(readConfig(metaEnv(`${fakeUrl}/v21.0`)), t.db.sql, clock)
    const result = await provider.send({
      id: 1,
      to: '+6281234567890',
      body: 'Hi Budi, your order 1001 has shipped',
      template: { ref: 'order_shipped', language: 'id', variables: ['Budi', '1001'] },
    })
    expect(result).toEqual({ ok: true, sid: expect.stringMatching(/^wamid\./) })
    expect(JSON.parse(fake.requests[0]!.body)).toEqual({
      messaging_product: 'whatsapp',
      to: '6281234567890',
      type: 'template',
      template: {
        name: 'order_shipped',
        language: { code: 'id' },
        components: [
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'Budi' },
              { type: 'text', text: '1001' },
            ],
          },
        ],
      },
    })
    fake.requests = []
    await provider.send({ id: 2, to: '+6281234567890', body: 'Hello', template: { ref: 'hello_world', language: 'en_US', variables: [] } })
    expect(JSON.parse(fake.requests[0]!.body)).toEqual({
      messaging_product: 'whatsapp',
      to: '6281234567890',
      type: 'template',
      template: { name: 'hello_world', language: { code: 'en_US' } },
    })
  })
})

describe('settings', () => {
  const configError = (env: Record<string, string>) => {
    try {
      readConfig(env)
    } catch (error) {
      if (error instanceof ConfigError) return error.message
      throw error
    }
    return null
  }

  test('PROVIDER=meta needs each META_* credential, named in one line', () => {
    const full = metaEnv('https://graph.example.com/v21.0')
    for (const name of ['META_ACCESS_TOKEN', 'META_PHONE_NUMBER_ID', 'META_APP_SECRET', 'META_VERIFY_TOKEN']) {
      const { [name]: _, ...without } = full
      expect(configError(without)).toBe(`${name}: required when PROVIDER=meta`)
      expect(configError({ ...full, [name]: '' })).toBe(`${name}: required when PROVIDER=meta`)
    }
    expect(configError({ ...full, META_PHONE_NUMBER_ID: '+1 555' })).toBe(
      'META_PHONE_NUMBER_ID: expected the phone number id (digits), got "+1 555"',
    )
    expect(configError({ ...full, META_API_BASE: 'graph.facebook.com' })).toBe('META_API_BASE: not a valid URL: "graph.facebook.com"')
    expect(configError({ ...full, PROVIDER: 'whatsapp' })).toBe('PROVIDER: expected one of simulator, twilio, meta, got "whatsapp"')
  })

  test('META_API_BASE defaults to the Graph API v27.0; other providers need no META_* setting', () => {
    const { META_API_BASE: _, ...env } = metaEnv('')
    expect(readConfig(env).providers.meta.apiBase).toBe('https://graph.facebook.com/v27.0')
    expect(readConfig({}).providers.meta).toEqual({
      accessToken: '',
      phoneNumberId: '',
      appSecret: '',
      verifyToken: '',
      businessAccountId: '',
      apiBase: 'https://graph.facebook.com/v27.0',
    })
    // Another version (or a partner's root) is one variable away.
    expect(readConfig({ ...env, META_API_BASE: 'https://graph.facebook.com/v28.0' }).providers.meta.apiBase).toBe(
      'https://graph.facebook.com/v28.0',
    )
  })

  test('META_BUSINESS_ACCOUNT_ID: digits, else one line naming it', () => {
    expect(readConfig({ ...metaEnv(''), META_BUSINESS_ACCOUNT_ID: '200000000000009' }).providers.meta.businessAccountId).toBe(
      '200000000000009',
    )
    expect(configError({ ...metaEnv(''), META_BUSINESS_ACCOUNT_ID: 'waba-1' })).toBe(
      'META_BUSINESS_ACCOUNT_ID: expected the WhatsApp Business Account id (digits), got "waba-1"',
    )
  })

  test('the service refuses to start without a META_* setting, with one line naming it', async () => {
    const { META_APP_SECRET: _, ...env } = metaEnv(fakeUrl)
    const child = Bun.spawn(['bun', `${import.meta.dir}/../../src/main.ts`], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    expect(await child.exited).toBe(2)
    expect(await new Response(child.stderr).text()).toBe('configuration error: META_APP_SECRET: required when PROVIDER=meta\n')
    expect(await new Response(child.stdout).text()).toBe('')
  })
})

describe('approved templates through the API', () => {
  const templateOf = (r: FakeRequest) => JSON.parse(r.body)
  const parameters = (...texts: string[]) => [{ type: 'body', parameters: texts.map((text) => ({ type: 'text', text })) }]

  test('a campaign whose template is bound sends type "template" with its language and body parameters in the bound order', async () => {
    const a = await boundTemplate(
      t,
      'Halo {{name}}, pesanan Anda di {{city}} siap',
      { meta: { ref: 'order_ready', language: 'id', variables: ['city', 'name', 'city'] }, twilio: { ref: 'HX' + 'a'.repeat(32) } },
      [
        { name: 'Budi', phone: '081200000001', city: 'Bandung' },
        { name: 'Sari', phone: '081200000002', city: 'Solo' },
      ],
    )
    const campaignId = await runCampaign(t, a)
    const sent = fake.requests.map(templateOf).sort((x, y) => x.to.localeCompare(y.to))
    expect(sent).toEqual([
      {
        messaging_product: 'whatsapp',
        to: '6281200000001',
        type: 'template',
        template: { name: 'order_ready', language: { code: 'id' }, components: parameters('Bandung', 'Budi', 'Bandung') },
      },
      {
        messaging_product: 'whatsapp',
        to: '6281200000002',
        type: 'template',
        template: { name: 'order_ready', language: { code: 'id' }, components: parameters('Solo', 'Sari', 'Solo') },
      },
    ])
    const rows = await campaignMessages(t, campaignId)
    expect(rows.map((r) => [r.status, r.body, r.template_id, r.provider_template])).toEqual([
      [
        'sent',
        'Halo Budi, pesanan Anda di Bandung siap',
        a.templateId,
        { provider: 'meta', ref: 'order_ready', language: 'id', variables: ['Bandung', 'Budi', 'Bandung'] },
      ],
      [
        'sent',
        'Halo Sari, pesanan Anda di Solo siap',
        a.templateId,
        { provider: 'meta', ref: 'order_ready', language: 'id', variables: ['Solo', 'Sari', 'Solo'] },
      ],
    ])
    expect(await money(t, a.accountId)).toEqual({ balance: 9_980, ledgerSum: 9_980 })
  })

  test('send and bulk with template_id: the template with its parameters; without a Meta binding, free-form text', async () => {
    const a = await boundTemplate(t, 'Invoice {{name}} is due', { meta: { ref: 'invoice_due', language: 'en_US', variables: ['name'] } })
    const unbound = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'plain', body: 'Hello {{name}}' })
    const one = await t.api('POST', '/messages/send', a.key, { to: '081200000003', template_id: a.templateId, variables: { name: '#88' } })
    expect(one.status).toBe(200)
    expect(one.body.data.message_id).toMatch(/^wamid\./)
    const bulk = await t.api('POST', '/messages/bulk', a.key, {
      messages: [
        { to: '081200000004', template_id: unbound.body.data.id, variables: { name: 'Ani' } },
        { to: '081200000005', template_id: a.templateId, variables: { name: '#89' } },
      ],
    })
    expect(bulk.body.data).toMatchObject({ sent: 2, failed: 0, total_cost: 20 })
    const byTo = new Map(fake.requests.map((r) => [templateOf(r).to, templateOf(r)]))
    expect(byTo.get('6281200000003')).toEqual({
      messaging_product: 'whatsapp',
      to: '6281200000003',
      type: 'template',
      template: { name: 'invoice_due', language: { code: 'en_US' }, components: parameters('#88') },
    })
    expect(byTo.get('6281200000004')).toEqual({
      messaging_product: 'whatsapp',
      to: '6281200000004',
      type: 'text',
      text: { body: 'Hello Ani' },
    })
    expect(byTo.get('6281200000005').template.components).toEqual(parameters('#89'))
    expect(await money(t, a.accountId)).toEqual({ balance: 9_970, ledgerSum: 9_970 })
  })
})
