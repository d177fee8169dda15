// Every bad input is a clear 4xx in the envelope, and nothing is charged: non-JSON bodies (415),
// unknown fields (400 naming them), ids and integers beyond 2^53, NUL characters, deep or huge JSON,
// invalid UTF-8, bodies over the limit, and a static path asked with the wrong method.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ADMIN_TOKEN, money, testApp, type TestApp } from '../helpers/app'
import { MAX_BODY_BYTES } from '../../src/http/body'
import { errorEnvelope } from '../helpers/envelope'

let t: TestApp
let key: string
let accountId: number
beforeAll(async () => {
  t = await testApp()
  ;({ key, accountId } = await t.account(1000))
}, 60_000)
afterAll(() => t.close())

async function raw(
  method: string,
  path: string,
  body: RequestInit['body'] | null,
  headers: Record<string, string> = {},
  auth: string | null = null,
) {
  const token = auth ?? (path.startsWith('/admin') ? ADMIN_TOKEN : key)
  const response = await t.app.handle(
    new Request(`http://localhost${path}`, { method, body, headers: { authorization: `Bearer ${token}`, ...headers } }),
  )
  const text = await response.text()
  return { status: response.status, body: JSON.parse(text), headers: response.headers }
}

const SEND = JSON.stringify({ to: '081234567890', body: 'hello' })

async function unchanged<T>(run: () => Promise<T>): Promise<T> {
  const before = await money(t, accountId)
  const [{ n: messagesBefore }] = await t.db.sql<[{ n: number }]>`select count(*)::int as n from messages`
  const result = await run()
  expect(await money(t, accountId)).toEqual(before)
  const [{ n: messagesAfter }] = await t.db.sql<[{ n: number }]>`select count(*)::int as n from messages`
  expect(messagesAfter).toBe(messagesBefore)
  return result
}

describe('415: bodies are JSON only', () => {
  const refused = [
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=xyz',
    'text/plain',
    'text/plain; charset=utf-8',
    'application/xml',
    'application/jsonx',
    'application/json-patch+json',
    'application/json; charset=latin1',
    'application/json; charset=utf-16',
  ]

  test('any other Content-Type on an endpoint that takes a body, public or admin, is 415 and changes nothing', async () => {
    await unchanged(async () => {
      for (const contentType of refused) {
        for (const [path, body] of [
          ['/api/v1/messages/send', SEND],
          ['/api/v1/messages/bulk', JSON.stringify({ messages: [JSON.parse(SEND)] })],
          ['/api/v1/contacts', JSON.stringify({ name: 'Budi', phone: '081234567890' })],
          [`/admin/v1/accounts/${accountId}/topups`, JSON.stringify({ amount: 5 })],
        ] as const) {
          const res = await raw('POST', path, body, { 'content-type': contentType })
          expect({ contentType, path, status: res.status, code: res.body.code, success: res.body.success }).toEqual({
            contentType,
            path,
            status: 415,
            code: 'UNSUPPORTED_MEDIA_TYPE',
            success: false,
          })
          expect(res.headers.get('x-request-id')).toBeTruthy()
        }
      }
    })
  })

  test('a real form and a real multipart body are refused too, and so is a body without a Content-Type', async () => {
    await unchanged(async () => {
      const form = await raw('POST', '/api/v1/messages/send', new URLSearchParams({ to: '081234567890', body: 'hi' }))
      expect([form.status, form.body.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE'])
      const data = new FormData()
      data.set('to', '081234567890')
      data.set('body', 'hi')
      const multipart = await raw('POST', '/api/v1/messages/send', data)
      expect([multipart.status, multipart.body.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE'])
      const request = new Request('http://localhost/api/v1/messages/send', {
        method: 'POST',
        body: new Blob([SEND]),
        headers: { authorization: `Bearer ${key}` },
      })
      expect(request.headers.get('content-type')).toBeNull()
      const none = await t.app.handle(request)
      expect([none.status, ((await none.json()) as { error: string }).error]).toEqual([415, 'Content-Type must be application/json'])
    })
  })

  test('application/json with or without a UTF-8 charset, in any case, is accepted', async () => {
    for (const contentType of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;Charset="UTF-8"']) {
      const res = await raw('POST', '/api/v1/messages/send', SEND, { 'content-type': contentType })
      expect({ contentType, status: res.status }).toEqual({ contentType, status: 200 })
    }
  })

  test('a bad key is 401 whatever the Content-Type', async () => {
    const res = await raw('POST', '/api/v1/messages/send', 'to=1', { 'content-type': 'application/x-www-form-urlencoded' }, 'pm_wrong')
    expect([res.status, res.body.code]).toEqual([401, 'AUTH_INVALID_KEY'])
    const admin = await raw('POST', '/admin/v1/accounts', 'name=x', { 'content-type': 'text/plain' }, 'wrong')
    expect([admin.status, admin.body.code]).toEqual([401, 'AUTH_INVALID_KEY'])
  })
})

describe('400: unknown body fields are named', () => {
  test('at the top level, in bulk entries, and in admin bodies; nothing is sent or charged', async () => {
    const cases: [string, string, unknown, string][] = [
      ['POST', '/api/v1/messages/send', { to: '081234567890', body: 'hi', mediaUrl: 'https://a.example/x.png' }, 'mediaUrl: unknown field'],
      ['POST', '/api/v1/messages/send', { To: '081234567890', body: 'hi' }, 'To: unknown field'],
      [
        'POST',
        '/api/v1/messages/bulk',
        {
          messages: [
            { to: '081234567890', body: 'a' },
            { to: '081234567891', body: 'b' },
            { To: '081234567892', body: 'c' },
          ],
        },
        'messages[2].To: unknown field',
      ],
      ['POST', '/api/v1/messages/bulk', { messages: [{ to: '081234567890', body: 'a' }], priority: 'high' }, 'priority: unknown field'],
      ['POST', '/api/v1/contacts', { name: 'Budi', phone: '081234567890', tag: 'vip' }, 'tag: unknown field'],
      ['POST', '/api/v1/webhook', { url: 'https://hooks.example.com/x', secret: 's' }, 'secret: unknown field'],
      ['POST', `/admin/v1/accounts/${accountId}/topups`, { amount: 5, reason: 'x' }, 'reason: unknown field'],
      ['PUT', '/admin/v1/price', { cost_per_message: 5, accountId }, 'accountId: unknown field'],
      ['POST', '/admin/v1/campaigns/999999/run', { now: true }, 'now: unknown field'],
      ['POST', '/api/v1/messages/send', { to: '081234567890', body: 'hi', 'a b': 1 }, '"a b": unknown field'],
    ]
    await unchanged(async () => {
      for (const [method, path, body, error] of cases) {
        const res = await raw(method, path, JSON.stringify(body), { 'content-type': 'application/json' })
        expect({ path, status: res.status, body: res.body }).toEqual({
          path,
          status: 400,
          body: errorEnvelope(res.headers, 'VALIDATION_ERROR', error),
        })
      }
    })
  })
})

describe('ids and integers beyond the 64-bit range', () => {
  const huge = '99999999999999999999'
  test('in paths: 404 for an id no row can have, 400 for one that is not an integer (these were 500s)', async () => {
    for (const [method, path, body] of [
      ['GET', `/admin/v1/accounts/${huge}`],
      ['GET', `/admin/v1/accounts/${huge}/ledger`],
      ['GET', `/admin/v1/accounts/9223372036854775808/keys`],
      ['POST', `/admin/v1/accounts/${huge}/keys`, { label: 'x' }],
      ['POST', `/admin/v1/accounts/${huge}/topups`, { amount: 5 }],
      ['PATCH', `/admin/v1/keys/${huge}`, { active: false }],
      ['GET', `/admin/v1/keys/${huge}/deliveries`],
      ['GET', `/admin/v1/deliveries/${huge}`],
      ['POST', `/admin/v1/deliveries/${huge}/replay`],
      ['DELETE', `/admin/v1/price/accounts/${huge}`],
      ['GET', `/admin/v1/templates/-1`],
      ['POST', `/admin/v1/campaigns/0/run`],
      ['GET', `/api/v1/campaigns/${huge}`],
    ] as const) {
      const res = await raw(method, path, body ? JSON.stringify(body) : null, body ? { 'content-type': 'application/json' } : {})
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 404, code: 'NOT_FOUND' })
    }
    for (const id of ['1e3', '0x10', '1.5', 'abc', '%201', '1_000', `${huge}x`]) {
      const res = await raw('GET', `/admin/v1/accounts/${id}`, null)
      expect({ id, status: res.status, error: res.body.error }).toEqual({ id, status: 400, error: 'id: must be an integer' })
    }
  })

  test('in query strings: 422 out of range, 400 not an integer', async () => {
    const cases: [string, number, string][] = [
      [`/admin/v1/accounts/${accountId}/ledger?offset=${huge}`, 422, `offset: must be at most ${Number.MAX_SAFE_INTEGER}`],
      [`/api/v1/messages?offset=${huge}`, 422, `offset: must be at most ${Number.MAX_SAFE_INTEGER}`],
      [`/api/v1/contacts?limit=${huge}`, 422, 'limit: must be from 1 to 200'],
      [`/api/v1/messages?offset=1e300`, 400, 'offset: must be an integer'],
      [`/admin/v1/price?account_id=${huge}`, 404, `account_id ${huge} not found`],
      [`/admin/v1/price?account_id=abc`, 400, 'account_id: must be an integer'],
    ]
    for (const [path, status, error] of cases) {
      const res = await raw('GET', path, null)
      expect({ path, status: res.status, error: res.body.error }).toEqual({ path, status, error })
    }
  })

  test('in JSON bodies: 422 naming the field, nothing charged', async () => {
    await unchanged(async () => {
      const cases: [string, string, unknown, string][] = [
        ['POST', `/admin/v1/accounts/${accountId}/topups`, { amount: 1e20 }, 'amount'],
        ['POST', `/admin/v1/accounts/${accountId}/adjustments`, { amount: -1e20, note: 'x' }, 'amount'],
        ['PUT', '/admin/v1/price', { cost_per_message: 2 ** 63 }, 'cost_per_message'],
        ['PUT', '/admin/v1/price', { cost_per_message: 5, account_id: 1e20 }, 'account_id'],
        ['POST', '/api/v1/campaigns', { name: 'x', template_id: 1e20, segment_id: 1 }, 'template_id'],
      ]
      for (const [method, path, body, field] of cases) {
        const res = await raw(method, path, JSON.stringify(body), { 'content-type': 'application/json' })
        expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 422, code: 'VALIDATION_ERROR' })
        expect(res.body.error).toStartWith(`${field}: must be from `)
      }
    })
  })
})

describe('NUL characters, deep or huge JSON, invalid UTF-8, oversized bodies', () => {
  test('NUL in the query string or the path is 422 naming the parameter', async () => {
    for (const [path, error] of [
      ['/api/v1/messages?status=%00', 'status: must not contain NUL characters (\\u0000)'],
      ['/api/v1/contacts?search=a%00b', 'search: must not contain NUL characters (\\u0000)'],
      ['/api/v1/messages/SM%00', 'message_sid: must not contain NUL characters (\\u0000)'],
      [`/admin/v1/keys/1/deliveries?status=%00`, 'status: must not contain NUL characters (\\u0000)'],
    ]) {
      const res = await raw('GET', path!, null)
      expect({ path, status: res.status, error: res.body.error }).toEqual({ path, status: 422, error })
    }
  })

  test('a query parameter that is not percent-encoded UTF-8 is 400 naming it, not read as its raw text', async () => {
    for (const [path, error] of [
      ['/api/v1/contacts?search=%FF', 'search: not valid percent-encoded UTF-8'],
      ['/api/v1/messages?status=sent&date_from=%E0%A4%A', 'date_from: not valid percent-encoded UTF-8'],
      ['/api/v1/contacts?%FF=1', 'query: not valid percent-encoded UTF-8'],
    ]) {
      const res = await raw('GET', path!, null)
      expect({ path, status: res.status, error: res.body.error }).toEqual({ path, status: 400, error })
    }
    expect((await raw('GET', '/api/v1/contacts?search=%C3%A9%20a%3Db', null)).status).toBe(200)
  })

  test('100,000 levels of nesting, 20,000 values, invalid UTF-8: 400, nothing charged', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    const deepObject = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000)
    const utf8 = (bytes: number[]) => new Uint8Array([...new TextEncoder().encode('{"to":"081234567890","body":"'), ...bytes, 0x22, 0x7d])
    const cases: [RequestInit['body'], string][] = [
      [deep, 'body: nested deeper than 16 levels'],
      [`{"to":"081234567890","body":"x","extra":${deepObject}}`, 'body: nested deeper than 16 levels'],
      [`{"messages":[${'{},'.repeat(20_000)}{}]}`, 'body: more than 10000 JSON values'],
      [utf8([0xff]), 'body is not valid UTF-8'],
      [utf8([0xc0, 0x80]), 'body is not valid UTF-8'],
      [utf8([0xed, 0xa0, 0x80]), 'body is not valid UTF-8'],
      [utf8([0xe2, 0x82]), 'body is not valid UTF-8'],
      ['{"to": ', 'body is not valid JSON'],
    ]
    await unchanged(async () => {
      for (const [body, error] of cases) {
        const res = await raw('POST', '/api/v1/messages/send', body, { 'content-type': 'application/json' })
        expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: errorEnvelope(res.headers, 'VALIDATION_ERROR', error) })
      }
    })
  })

  test('a body one byte over the limit is 413 in the envelope with the request id, declared or streamed', async () => {
    const over = `{"to":"081234567890","body":"${'x'.repeat(MAX_BODY_BYTES - 30)}"}`
    expect(over.length).toBe(MAX_BODY_BYTES + 1)
    await unchanged(async () => {
      for (const path of ['/api/v1/messages/send', '/api/v1/messages/bulk', '/admin/v1/accounts']) {
        const streamed = await raw('POST', path, over, { 'content-type': 'application/json', 'x-request-id': 'over-1' })
        const declared = await raw('POST', path, 'x', { 'content-type': 'application/json', 'content-length': String(MAX_BODY_BYTES + 1) })
        for (const res of [streamed, declared]) {
          expect({ path, status: res.status, body: res.body }).toEqual({
            path,
            status: 413,
            body: errorEnvelope(res.headers, 'PAYLOAD_TOO_LARGE', `request body exceeds ${MAX_BODY_BYTES} bytes`),
          })
          expect(res.headers.get('x-request-id')).toBeTruthy()
        }
        expect(streamed.headers.get('x-request-id')).toBe('over-1')
      }
    })
  })

  test('the largest valid request fits: 1000 entries of maximal fields, every character escaped as \\uXXXX', async () => {
    const escaped = (n: number) => '\\u00e9'.repeat(n)
    const entry = {
      to: `"+62 812 3456 7890${' '.repeat(40 - 17)}"`,
      body: `"${escaped(4096)}"`,
      media_url: `"https://a.example/${escaped(2048 - 18)}"`,
    }
    // pretty-printed, as a person or a logging proxy might send it
    const item = `    {\n      "to": ${entry.to},\n      "body": ${entry.body},\n      "media_url": ${entry.media_url}\n    }`
    const body = `{\n  "messages": [\n${Array(1000).fill(item).join(',\n')}\n  ]\n}`
    expect(body.length).toBeLessThanOrEqual(MAX_BODY_BYTES)
    expect(body.length).toBeGreaterThan(MAX_BODY_BYTES * 0.98)
    const { key: broke, accountId: brokeId } = await t.account(0)
    const res = await raw('POST', '/api/v1/messages/bulk', body, { 'content-type': 'application/json' }, broke)
    // Read, parsed and validated in full: every entry is valid, and the balance (0) cannot pay.
    expect([res.status, res.body.code, res.body.error]).toEqual([402, 'INSUFFICIENT_BALANCE', expect.stringContaining('1000')])
    expect(await money(t, brokeId)).toEqual({ balance: 0, ledgerSum: 0 })
  })
})

describe('405 for a path that names a route of other methods', () => {
  test('GET /api/v1/messages/send and /bulk are 405 with Allow, not a message lookup', async () => {
    for (const path of ['/api/v1/messages/send', '/api/v1/messages/bulk']) {
      for (const auth of [key, 'pm_wrong']) {
        const res = await raw('GET', path, null, {}, auth)
        expect({ path, status: res.status, code: res.body.code, allow: res.headers.get('allow') }).toEqual({
          path,
          status: 405,
          code: 'METHOD_NOT_ALLOWED',
          allow: 'POST',
        })
      }
    }
    const real = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'lookup' })
    const lookup = await t.api('GET', `/messages/${real.body.data.message_id}`, key)
    expect([lookup.status, lookup.body.data.body]).toEqual([200, 'lookup'])
  })
})

describe('the OpenAPI document', () => {
  test('advertises application/json only for request bodies, with the 413 and 415 answers', async () => {
    const api = (await t.request('GET', '/docs/json')).body
    const admin = (await t.request('GET', '/docs/admin/json')).body
    let bodies = 0
    for (const [path, operations] of Object.entries({ ...api.paths, ...admin.paths } as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        const content = operation.requestBody?.content
        if (!content) continue
        // Provider callbacks take the provider's format (Twilio's is a form): their own tests check it. A
        // file upload takes the file itself (tests/media/upload.test.ts), and its 413 and 415 too.
        if (path.startsWith('/provider/')) continue
        if (path === '/api/v1/media') {
          expect({ path, types: Object.keys(content) }).toEqual({ path, types: expect.arrayContaining(['multipart/form-data']) })
          expect([operation.responses['413'], operation.responses['415']].every(Boolean)).toBe(true)
          continue
        }
        bodies++
        expect({ path, method, types: Object.keys(content) }).toEqual({ path, method, types: ['application/json'] })
        expect(operation.responses['415']).toBeDefined()
        expect(operation.responses['413']).toBeDefined()
      }
    }
    expect(bodies).toBeGreaterThan(10)
    const send = api.paths['/api/v1/messages/send'].post.requestBody.content['application/json'].schema
    expect(send.additionalProperties).toBe(false)
  })
})
