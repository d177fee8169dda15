import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { MAX_BODY_BYTES } from '../../src/http/body'
import { errorEnvelope } from '../helpers/envelope'
import { answersInline } from '../helpers/openapi'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

test('unknown route: 404 NOT_FOUND in the envelope, with a request id', async () => {
  const { key } = await t.account(0)
  const res = await t.api('GET', '/nothing-here', key)
  expect(res.status).toBe(404)
  expect(res.body).toEqual(errorEnvelope(res.headers, 'NOT_FOUND'))
  expect(res.headers.get('x-request-id')).toBeTruthy()
})

test('wrong method: 405 METHOD_NOT_ALLOWED with Allow', async () => {
  const res = await t.request('DELETE', '/api/v1/balance')
  expect(res.status).toBe(405)
  expect(res.body.code).toBe('METHOD_NOT_ALLOWED')
  expect(res.headers.get('allow')).toBe('GET')
})

test('too large: 413 in the envelope', async () => {
  const { key } = await t.account(0)
  const res = await t.request('POST', '/api/v1/messages/send', {
    key,
    rawBody: JSON.stringify({ to: '081234567890', body: 'x'.repeat(MAX_BODY_BYTES) }),
  })
  expect(res.status).toBe(413)
  expect(res.body.code).toBe('PAYLOAD_TOO_LARGE')
})

test('an internal error is a 500 INTERNAL_ERROR that shows no internals', async () => {
  const { key, accountId } = await t.account(100)
  // Break the schema under the running app: the send's SQL now fails.
  await t.db.sql`alter table ledger rename to ledger_gone`
  // Its log line says what kind of error it was and where in the service it was thrown, nothing more.
  const logged: string[] = []
  const write = console.error
  console.error = (...args: unknown[]) => void logged.push(args.map(String).join(' '))
  try {
    const res = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'x' })
    console.error = write
    const line = logged.find((l) => l.includes('unhandled error'))
    expect(line).toMatch(/ error=PostgresError:42P01 at=[\w/.-]+\.tsx?:\d+( |$)/)
    expect(line).not.toMatch(/ledger_gone|relation|select |insert /i)
    expect(res.status).toBe(500)
    expect(res.body.code).toBe('INTERNAL_ERROR')
    expect(res.body.error).toContain(res.headers.get('x-request-id')!)
    expect(res.body.request_id).toBe(res.headers.get('x-request-id'))
    expect(JSON.stringify(res.body)).not.toMatch(/ledger|relation|select|insert|at /i)
  } finally {
    console.error = write
    await t.db.sql`alter table ledger_gone rename to ledger`
  }
  const [row] = await t.db.sql`select balance from accounts where id = ${accountId}`
  expect(row!.balance).toBe(100)
})

test('a request id sent by the client is echoed', async () => {
  const res = await t.request('GET', '/healthz', { headers: { 'x-request-id': 'abc-123' } })
  expect(res.headers.get('x-request-id')).toBe('abc-123')
  expect(res.body).toEqual({ success: true, data: { status: 'ok' } })
  expect((await t.request('GET', '/readyz')).status).toBe(200)
})

test('the OpenAPI documents describe the API and the admin API', async () => {
  const res = await t.request('GET', '/docs/json')
  expect(res.status).toBe(200)
  expect(res.body.openapi).toMatch(/^3\./)
  expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(['/api/v1/balance', '/api/v1/messages/send']))
  expect(res.body.paths['/api/v1/messages/send'].post.responses['402']).toBeDefined()
  const admin = await t.request('GET', '/docs/admin/json')
  expect(admin.status).toBe(200)
  expect(Object.keys(admin.body.paths)).toContain('/admin/v1/accounts')
})

test('every error answer names its request: request_id in the body, the same as x-request-id', async () => {
  const { key } = await t.account(0)
  const rich = await t.account(1000)
  expect((await t.api('POST', '/contacts', rich.key, { name: 'A', phone: '081234567890' })).status).toBe(201)
  const json = { 'content-type': 'application/json' }
  type Options = { body?: unknown; rawBody?: string; key?: string | null; headers?: Record<string, string> }
  const cases: [string, string, Options, number, string][] = [
    ['GET', '/api/v1/nothing-here', { key }, 404, 'NOT_FOUND'],
    ['DELETE', '/api/v1/balance', { key }, 405, 'METHOD_NOT_ALLOWED'],
    [
      'POST',
      '/api/v1/messages/send',
      { key, rawBody: '{}', headers: { ...json, 'content-length': String(MAX_BODY_BYTES + 1) } },
      413,
      'PAYLOAD_TOO_LARGE',
    ],
    ['POST', '/api/v1/messages/send', { key, rawBody: 'to=1', headers: { 'content-type': 'text/plain' } }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['POST', '/api/v1/messages/send', { key, rawBody: '{"to": ', headers: json }, 400, 'VALIDATION_ERROR'],
    ['POST', '/api/v1/messages/send', { key, body: { to: '12', body: 'x' } }, 422, 'VALIDATION_ERROR'],
    ['GET', '/api/v1/balance', {}, 401, 'AUTH_MISSING_HEADER'],
    ['GET', '/admin/v1/accounts', { key: 'not-the-admin-token' }, 401, 'AUTH_INVALID_KEY'],
    ['GET', '/api/v1/messages/SMnothing', { key }, 404, 'NOT_FOUND'],
    ['POST', '/api/v1/messages/send', { key, body: { to: '081234567890', body: 'x' } }, 402, 'INSUFFICIENT_BALANCE'],
    ['POST', '/api/v1/contacts', { key: rich.key, body: { name: 'B', phone: '081234567890' } }, 409, 'CONFLICT'],
    ['POST', '/api/v1/messages/send', { key: rich.key, body: { to: '081234569999', body: 'x' } }, 502, 'BAD_GATEWAY'],
    ['GET', '/admin/v1/accounts/999999', { key: ADMIN_TOKEN }, 404, 'NOT_FOUND'],
  ]
  for (const [i, [method, path, options, status, code]] of cases.entries()) {
    const id = `case-${i}`
    const res = await t.request(method, path, { ...options, headers: { ...options.headers, 'x-request-id': id } })
    expect({ path, status: res.status, code: res.body.code, success: res.body.success, request_id: res.body.request_id }).toEqual({
      path,
      status,
      code,
      success: false,
      request_id: id,
    })
    expect(res.headers.get('x-request-id')).toBe(id)
    expect(Object.keys(res.body).at(-1)).toBe('request_id')
  }
  // Without an id from the client, the generated one, the same in both places.
  const res = await t.request('GET', '/api/v1/balance')
  expect(res.body).toEqual(errorEnvelope(res.headers, 'AUTH_MISSING_HEADER'))
  expect(res.body.request_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
})

test('/readyz answers 503 in the envelope, with the request id, while the migrations are not all there', async () => {
  await t.db.sql`alter table schema_migrations rename to schema_migrations_away`
  try {
    const res = await t.request('GET', '/readyz')
    expect(res.status).toBe(503)
    expect(res.body).toEqual(errorEnvelope(res.headers, 'SERVICE_UNAVAILABLE'))
  } finally {
    await t.db.sql`alter table schema_migrations_away rename to schema_migrations`
  }
  expect((await t.request('GET', '/readyz')).status).toBe(200)
})

test('a CORS preflight gets a 405 that says why (server to server, no CORS), without any CORS header', async () => {
  const preflight = {
    origin: 'https://app.example.com',
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'authorization, content-type',
  }
  for (const path of ['/api/v1/balance', '/api/v1/messages/send', '/api/v1/messages/SM123', '/admin/v1/accounts']) {
    const res = await t.request('OPTIONS', path, { headers: preflight })
    expect({ path, status: res.status }).toEqual({ path, status: 405 })
    expect(res.body).toEqual(
      errorEnvelope(
        res.headers,
        'METHOD_NOT_ALLOWED',
        `OPTIONS is not allowed on ${path}: this API does not answer CORS preflights; it is called server to server ` +
          '(an API key must never be in a browser), so call it from your own backend',
      ),
    )
    expect(res.headers.get('allow')).toBeTruthy()
    expect([...res.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([])
  }
})

test('the OpenAPI document: request_id in every error, the refused send with its id, lists with has_more', async () => {
  // The integrator's document holds /api/v1, the operator's /admin/v1.
  const docs = {
    api: answersInline((await t.request('GET', '/docs/json')).body),
    admin: answersInline((await t.request('GET', '/docs/admin/json')).body),
  }
  const schemaOf = (path: string, method: string, status: number) =>
    docs[path.startsWith('/admin/') ? 'admin' : 'api'].paths[path][method].responses[String(status)].content['application/json'].schema
  for (const [path, method, status] of [
    ['/api/v1/balance', 'get', 401],
    ['/api/v1/messages/send', 'post', 422],
    ['/api/v1/messages/send', 'post', 413],
    ['/admin/v1/accounts', 'get', 401],
  ] as const) {
    const schema = schemaOf(path, method, status)
    expect({ path, status, required: schema.required }).toEqual({ path, status, required: ['success', 'error', 'code', 'request_id'] })
  }
  const refused = schemaOf('/api/v1/messages/send', 'post', 502)
  expect(refused.required).toEqual(['success', 'error', 'code', 'request_id', 'id'])
  expect(refused.properties.id.type).toBe('integer')
  const list = schemaOf('/api/v1/messages', 'get', 200).properties.data
  expect(list.required).toContain('has_more')
  expect(list.properties.items.items.required).toContain('refunded')
  for (const path of ['/api/v1/contacts', '/api/v1/campaigns', '/admin/v1/accounts']) {
    expect({ path, required: schemaOf(path, 'get', 200).properties.data.required }).toEqual({
      path,
      required: ['items', 'total', 'limit', 'offset', 'has_more'],
    })
  }
})
