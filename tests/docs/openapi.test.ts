// The two OpenAPI documents as served: valid OpenAPI 3.1 by an independent validator, split by who
// may call what (every route of the app in exactly one of them, the dashboard and the docs in
// neither), every error answer with its codes, integers as plain integers, and the message.status
// webhook as a real delivery sends it (headers and body checked against the document).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { validate, compileErrors } from '@readme/openapi-parser'
import { testApp, type TestApp } from '../helpers/app'
import { deliverAll } from '../helpers/delivery'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { reportStatus } from '../helpers/reports'
import { answersInline } from '../helpers/openapi'
import { ERROR_STATUS } from '../../src/http/errors'
import { TestClock } from '../../src/lib/clock'

type Json = Record<string, any>

let t: TestApp
const clock = new TestClock()
let tls: TestTls
let rx: Receiver
let api: Json
let admin: Json
let served: { api: Json; admin: Json }
const PUBLIC_BASE_URL = 'https://messaging.acme.test'

beforeAll(async () => {
  tls = makeTestTls()
  rx = startReceiver(tls)
  t = await testApp({
    clock,
    runOnClock: true,
    env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile, PUBLIC_BASE_URL: PUBLIC_BASE_URL },
  })
  const [a, b] = [await t.request('GET', '/docs/json'), await t.request('GET', '/docs/admin/json')]
  expect([a.status, b.status]).toEqual([200, 200])
  served = { api: a.body, admin: b.body }
  api = answersInline(a.body)
  admin = answersInline(b.body)
}, 60_000)

afterAll(async () => {
  await t.close()
  rx.stop()
  tls.remove()
}, 30_000)

const operations = (doc: Json) =>
  Object.entries(doc.paths as Record<string, Record<string, Json>>).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ path, method, op })),
  )

/** Every schema object in `node` (anything with a type, an anyOf or properties), with where it is. */
function* schemas(node: unknown, at = ''): Generator<{ at: string; schema: Json }> {
  if (Array.isArray(node)) {
    for (const [i, item] of node.entries()) yield* schemas(item, `${at}[${i}]`)
    return
  }
  if (!node || typeof node !== 'object') return
  const object = node as Json
  if ('type' in object || 'anyOf' in object || 'properties' in object) yield { at, schema: object }
  for (const [key, value] of Object.entries(object)) if (key !== 'examples' && key !== 'example') yield* schemas(value, `${at}/${key}`)
}

describe('both documents', () => {
  test('are valid OpenAPI 3.1 (@readme/openapi-parser)', async () => {
    for (const doc of [served.api, served.admin]) {
      expect(doc.openapi).toBe('3.1.0')
      const result = await validate(structuredClone(doc) as never)
      expect(result.valid ? 'valid' : compileErrors(result)).toBe('valid')
    }
  })

  test('share the error answers several operations give word for word, as components.responses', () => {
    for (const doc of [served.api, served.admin]) {
      const refs = Object.values(doc.paths as Json).flatMap((ops) =>
        Object.values(ops as Json).flatMap((op) =>
          Object.values((op as Json).responses as Json)
            .map((r) => (r as Json).$ref)
            .filter(Boolean),
        ),
      )
      const shared = Object.keys(doc.components.responses).filter((name) => name !== 'MethodNotAllowed')
      // Every shared answer is used by two operations at least, and every operation's 401 is one of them.
      for (const name of shared)
        expect({ name, uses: refs.filter((r) => r === `#/components/responses/${name}`).length >= 2 }).toEqual({ name, uses: true })
      for (const ops of Object.values(doc.paths as Json))
        for (const op of Object.values(ops as Json))
          if ((op as Json).responses['401']) expect((op as Json).responses['401'].$ref).toMatch(/^#\/components\/responses\/Unauthorized/)
      // Small enough for Swagger UI to list quickly: 578 KB (api) and 1,001 KB (admin) inline, under 300 KB each shared.
      expect(JSON.stringify(doc).length).toBeLessThan(400_000)
    }
  })

  test('hold every route of the app exactly once: /api in the integrator’s, the rest in the operator’s, pages in neither', () => {
    const documented = new Map<string, string>()
    for (const [name, doc] of [
      ['api', api],
      ['admin', admin],
    ] as const) {
      for (const { path, method } of operations(doc)) {
        const key = `${method.toUpperCase()} ${path}`
        expect(documented.has(key) ? `${key} twice` : key).toBe(key)
        documented.set(key, name)
      }
    }
    let routes = 0
    for (const route of t.app.routes) {
      const path = route.path.replace(/:([^/]+)/g, '{$1}')
      const where = documented.get(`${route.method} ${path}`)
      if (path === '/docs' || path.startsWith('/docs/') || path === '/dashboard' || path.startsWith('/dashboard/')) {
        expect({ path, where }).toEqual({ path, where: undefined })
        continue
      }
      routes++
      expect({ path, where }).toEqual({ path, where: path.startsWith('/api/') ? 'api' : 'admin' })
    }
    expect(routes).toBe(documented.size)
    expect(operations(api).every(({ path }) => path.startsWith('/api/v1/'))).toBe(true)
    expect([...documented.keys()]).toEqual(
      expect.arrayContaining([
        'GET /api/v1/balance',
        'POST /api/v1/messages/send',
        'POST /admin/v1/accounts',
        'POST /provider/twilio/status',
      ]),
    )
  })

  test('every operation names its credentials and lists every error answer with its possible codes', () => {
    const codesByStatus = new Map<number, Set<string>>()
    for (const [code, status] of Object.entries(ERROR_STATUS)) codesByStatus.set(status, (codesByStatus.get(status) ?? new Set()).add(code))
    codesByStatus.get(422)!.add('VALIDATION_ERROR')
    for (const doc of [api, admin]) {
      for (const { path, method, op } of operations(doc)) {
        const where = `${method} ${path}`
        // GET /metrics takes the admin token outside /admin/v1 (Prometheus' conventional path).
        const adminPath = path.startsWith('/admin/v1/') || path === '/metrics'
        const security = path.startsWith('/api/v1/') ? [{ apiKey: [] }] : adminPath ? [{ adminToken: [] }] : []
        expect({ where, security: op.security }).toEqual({ where, security })
        const statuses = Object.keys(op.responses).map(Number)
        // Every operation: malformed parameters, a refused value, our own failure; with credentials, 401.
        expect({ where, statuses }).toEqual({ where, statuses: expect.arrayContaining([400, 422, 500, ...(security.length ? [401] : [])]) })
        if (op.requestBody?.content?.['application/json'] && security.length) {
          expect({ where, statuses }).toEqual({ where, statuses: expect.arrayContaining([413, 415, 503]) })
        }
        for (const status of statuses.filter((s) => s >= 400)) {
          const schema = op.responses[status].content['application/json'].schema
          expect({ where, status, required: schema.required }).toEqual({
            where,
            status,
            required: expect.arrayContaining(['success', 'error', 'code']),
          })
          const codes: string[] = schema.properties.code.enum
          expect({ where, status, codes: codes.length > 0 }).toEqual({ where, status, codes: true })
          for (const code of codes)
            expect({ where, status, code, known: codesByStatus.get(status)?.has(code) }).toMatchObject({ known: true })
        }
      }
    }
    const send = api.paths['/api/v1/messages/send'].post.responses
    expect(send['401'].content['application/json'].schema.properties.code.enum).toEqual(['AUTH_MISSING_HEADER', 'AUTH_INVALID_KEY'])
    expect(send['402'].content['application/json'].schema.properties.code.enum).toEqual(['INSUFFICIENT_BALANCE', 'SPEND_CAP_REACHED'])
    expect(send['422'].content['application/json'].schema.properties.code.enum).toEqual([
      'VALIDATION_ERROR',
      'IDEMPOTENCY_KEY_REUSED',
      'SENDER_DISABLED',
      'SENDER_RESTRICTED',
      'RECIPIENT_OPTED_OUT',
      'WINDOW_CLOSED',
      'TEMPLATE_NOT_APPROVED',
      'PRICE_ABOVE_MAX',
    ])
    // WINDOW_CLOSED only where one message is sent: a bulk's entries carry it in their results.
    expect(api.paths['/api/v1/messages/bulk'].post.responses['422'].content['application/json'].schema.properties.code.enum).not.toContain(
      'WINDOW_CLOSED',
    )
    expect(send['502'].content['application/json'].schema.properties.code.enum).toEqual(['BAD_GATEWAY'])
    // A verification's start answers what a template send does (no free-form body: never WINDOW_CLOSED), and its own limits.
    const codes = (responses: Record<string, Json>) =>
      Object.fromEntries(
        Object.entries(responses)
          .filter(([status]) => Number(status) >= 400)
          .map(([status, r]) => [status, r.content['application/json'].schema.properties.code.enum]),
      )
    const verify = api.paths['/api/v1/verifications'].post.responses
    expect(codes(verify)).toMatchObject({
      '402': ['INSUFFICIENT_BALANCE', 'SPEND_CAP_REACHED'],
      '409': ['CONFLICT'],
      '422': ['VALIDATION_ERROR', 'SENDER_DISABLED', 'SENDER_RESTRICTED', 'RECIPIENT_OPTED_OUT', 'TEMPLATE_NOT_APPROVED'],
      '429': ['RATE_LIMITED', 'MESSAGING_LIMIT'],
      '502': ['BAD_GATEWAY'],
    })
    expect(Object.keys(verify['429'].headers)).toContain('Retry-After')
    expect(verify['429'].description).toContain('VERIFY_PER_NUMBER')
    const checkCodes = codes(api.paths['/api/v1/verifications/{id}/check'].post.responses)
    expect(checkCodes).toMatchObject({ '404': ['NOT_FOUND'], '422': ['VALIDATION_ERROR'], '429': ['RATE_LIMITED'] })
    expect(Object.keys(checkCodes)).not.toContain('402')
    // IDEMPOTENCY_KEY_REUSED only where an Idempotency-Key is taken.
    const contacts = api.paths['/api/v1/contacts'].post.responses
    expect(contacts['422'].content['application/json'].schema.properties.code.enum).toEqual(['VALIDATION_ERROR'])
  })

  test('integers are plain integers: no numeric strings, no formats, no anyOf around them', () => {
    for (const doc of [api, admin]) {
      for (const { at, schema } of schemas(doc)) {
        expect({ at, format: schema.format }).toEqual({ at, format: undefined })
        if (Array.isArray(schema.anyOf)) {
          const types = schema.anyOf.map((s: Json) => s.type)
          expect({ at, types, mixed: types.includes('string') && (types.includes('integer') || types.includes('number')) }).toMatchObject({
            mixed: false,
          })
        }
      }
    }
    const balance = api.paths['/api/v1/balance'].get.responses['200'].content['application/json'].schema.properties.data.properties
    for (const field of ['wa_balance', 'cost_per_message', 'estimated_sends']) expect(balance[field].type).toBe('integer')
    const list = api.paths['/api/v1/messages'].get.parameters
    expect(list.find((p: Json) => p.name === 'limit').schema).toEqual({ type: 'integer' })
    expect(api.paths['/api/v1/campaigns/{id}'].get.parameters[0]).toMatchObject({ name: 'id', in: 'path', schema: { type: 'integer' } })
  })

  test('name the service’s PUBLIC_BASE_URL as their server (the paths start with /api/v1 or /admin/v1)', () => {
    for (const doc of [api, admin]) expect(doc.servers).toEqual([{ url: PUBLIC_BASE_URL, description: expect.any(String) }])
  })

  test('the integrator’s page links the operator’s, and the other way round', () => {
    expect(api.info.description).toContain('(/docs/admin)')
    expect(admin.info.description).toContain('(/docs)')
    expect(api.components.securitySchemes).toEqual({ apiKey: expect.objectContaining({ type: 'http', scheme: 'bearer' }) })
    expect(admin.components.securitySchemes).toEqual({ adminToken: expect.objectContaining({ type: 'http', scheme: 'bearer' }) })
    expect(admin.webhooks).toBeUndefined()
  })
})

/** Checks `value` against the document's schema (the JSON Schema subset the documents use). */
function conforms(value: unknown, schema: Json | boolean, doc: Json, at = 'body'): string[] {
  if (schema === true) return []
  if (schema === false) return [`${at}: not allowed`]
  if (schema.$ref)
    return conforms(
      value,
      schema.$ref
        .split('/')
        .slice(1)
        .reduce((node: Json, key: string) => node[key], doc),
      doc,
      at,
    )
  if (schema.anyOf) {
    return schema.anyOf.some((s: Json) => conforms(value, s, doc, at).length === 0)
      ? []
      : [`${at}: ${JSON.stringify(value)} matches no branch`]
  }
  if (schema.oneOf) {
    const matching = (schema.oneOf as Json[]).filter((s) => conforms(value, s, doc, at).length === 0).length
    if (matching !== 1) return [`${at}: ${JSON.stringify(value)} matches ${matching} branches of oneOf, not 1`]
  }
  const type = value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value
  if (schema.type && schema.type !== type && !(schema.type === 'number' && type === 'integer'))
    return [`${at}: ${type}, not ${schema.type}`]
  if ('const' in schema && value !== schema.const) return [`${at}: ${JSON.stringify(value)}, not ${schema.const}`]
  if (schema.enum && !schema.enum.includes(value)) return [`${at}: ${JSON.stringify(value)} not in ${schema.enum}`]
  const errors: string[] = []
  if (type === 'object') {
    const object = value as Json
    for (const name of schema.required ?? []) if (!(name in object)) errors.push(`${at}.${name}: missing`)
    for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) {
      if (name in object) errors.push(...conforms(object[name], property, doc, `${at}.${name}`))
    }
    if (schema.additionalProperties === false) {
      for (const name of Object.keys(object)) if (!(name in (schema.properties ?? {}))) errors.push(`${at}.${name}: unknown`)
    }
  }
  if (type === 'array' && schema.items)
    (value as unknown[]).forEach((item, i) => errors.push(...conforms(item, schema.items, doc, `${at}[${i}]`)))
  return errors
}

/** The headers a documented answer names, with the component each refers to (`RequestId`...). */
const headersOf = (response: Json): Record<string, string> =>
  Object.fromEntries(Object.entries((response.headers ?? {}) as Record<string, Json>).map(([name, h]) => [name, h.$ref?.split('/').pop()]))

/** The header name a document gives a component (`x-request-id` for RequestId), from where the documents use it. */
function headerNamed(component: string): string {
  for (const doc of [api, admin])
    for (const { op } of operations(doc))
      for (const response of Object.values(op.responses as Record<string, Json>))
        for (const [name, ref] of Object.entries(headersOf(response))) if (ref === component) return name
  for (const [name, ref] of Object.entries(headersOf(api.components.responses.MethodNotAllowed))) if (ref === component) return name
  throw new Error(`no answer names ${component}`)
}

describe('the headers of the answers, and 405', () => {
  test('every answer of every operation names x-request-id, and the service sends it under that name', async () => {
    for (const doc of [api, admin]) {
      expect(doc.components.headers.RequestId.required).toBe(true)
      for (const { path, method, op } of operations(doc)) {
        for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
          expect({ path, method, status, header: headersOf(response)['x-request-id'] }).toEqual({
            path,
            method,
            status,
            header: 'RequestId',
          })
        }
      }
    }
    const { key } = await t.account(0)
    const name = headerNamed('RequestId')
    for (const answer of [
      await t.api('GET', '/balance', key),
      await t.api('GET', '/balance', 'pm_wrong'),
      await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'no credit' }),
      await t.request('GET', '/healthz'),
      await t.request('GET', '/admin/v1/accounts'),
    ]) {
      expect({ status: answer.status, id: answer.headers.get(name) }).toEqual({
        status: answer.status,
        id: expect.stringMatching(/^[\w.-]{1,64}$/),
      })
    }
  })

  test('the busy 503 of an operation with a JSON body names Retry-After (the service sends it: tests/http/server.outer.test.ts)', () => {
    for (const doc of [api, admin]) {
      for (const { path, method, op } of operations(doc)) {
        const busy = op.responses['503']
        if (!op.requestBody?.content?.['application/json'] || !busy) continue
        expect({ path, method, header: headersOf(busy)['Retry-After'] }).toEqual({ path, method, header: 'RetryAfter' })
      }
    }
    expect(headersOf(admin.paths['/readyz'].get.responses['503'])['Retry-After']).toBeUndefined()
  })

  test("every API operation names its 429 RATE_LIMITED with Retry-After, and the key's RateLimit headers on every answer after the key is found", async () => {
    for (const { path, method, op } of operations(api)) {
      const where = `${method} ${path}`
      const limited = op.responses['429']
      // A single send (a verification's code is one) may also meet its sender's messaging limit.
      const sendsOne = where === 'post /api/v1/messages/send' || where === 'post /api/v1/verifications'
      const codes = sendsOne ? ['RATE_LIMITED', 'MESSAGING_LIMIT'] : ['RATE_LIMITED']
      expect({ where, codes: limited?.content['application/json'].schema.properties.code.enum }).toEqual({ where, codes })
      for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
        const headers = headersOf(response)
        const rated = status !== '401' && status !== '403'
        expect({ where, status, policy: headers['RateLimit-Policy'], now: headers.RateLimit }).toEqual({
          where,
          status,
          policy: rated ? 'RateLimitPolicy' : undefined,
          now: rated ? 'RateLimit' : undefined,
        })
      }
      expect({ where, retry: headersOf(limited)['Retry-After'] }).toEqual({ where, retry: 'RetryAfter' })
      // A body over 1 MiB that arrives too slowly once its turn came is 408.
      if (op.requestBody) {
        expect({ where, codes: op.responses['408']?.content['application/json'].schema.properties.code.enum }).toEqual({
          where,
          codes: ['REQUEST_TIMEOUT'],
        })
      }
    }
    // The operator's API has no key, so no key's rate.
    for (const { path, method, op } of operations(admin)) {
      expect({ where: `${method} ${path}`, limited: op.responses['429'] }).toEqual({ where: `${method} ${path}`, limited: undefined })
      for (const response of Object.values(op.responses as Record<string, Json>)) expect(headersOf(response).RateLimit).toBeUndefined()
    }
    // The names the document gives are the ones the service sends.
    const { key } = await t.account(0)
    const answer = await t.api('GET', '/balance', key)
    expect(answer.headers.get(headerNamed('RateLimitPolicy'))).toMatch(/^"default";q=\d+;w=60$/)
    expect(answer.headers.get(headerNamed('RateLimit'))).toMatch(/^"default";r=\d+;t=\d+$/)
  })

  test('send and bulk name the replay header on the answers a replay can give, and a replay carries it', async () => {
    const replayable = ['200', '400', '402', '409', '422']
    for (const path of ['/api/v1/messages/send', '/api/v1/messages/bulk']) {
      const responses = api.paths[path].post.responses as Record<string, Json>
      const named = Object.keys(responses).filter((status) => headersOf(responses[status]!)['idempotent-replayed'] === 'IdempotentReplayed')
      expect({ path, named }).toEqual({ path, named: expect.arrayContaining(replayable) })
      // Answered before the route runs: never a stored answer.
      for (const status of ['401', '413', '415', '503'])
        expect({ path, status, named: named.includes(status) }).toEqual({ path, status, named: false })
      expect(api.paths[path].post.description).toContain('`idempotent-replayed: true`')
    }
    expect(headersOf(api.paths['/api/v1/contacts'].post.responses['201'])).toEqual({
      'x-request-id': 'RequestId',
      'RateLimit-Policy': 'RateLimitPolicy',
      RateLimit: 'RateLimit',
    })

    const name = headerNamed('IdempotentReplayed')
    expect(api.components.headers.IdempotentReplayed.schema.enum).toEqual(['true'])
    const { key } = await t.account(1000)
    for (const body of [
      { to: '081234567890', body: 'once' },
      { to: '12345', body: 'refused once' },
    ]) {
      const headers = { 'idempotency-key': `docs-${crypto.randomUUID()}` }
      const first = await t.api('POST', '/messages/send', key, body, headers)
      const again = await t.api('POST', '/messages/send', key, body, headers)
      expect({ status: again.status, first: first.headers.get(name), again: again.headers.get(name) }).toEqual({
        status: first.status,
        first: null,
        again: 'true',
      })
    }
  })

  test('each path lists exactly the methods it answers: any other is the documented 405, with Allow naming those', async () => {
    const documented = api.components.responses.MethodNotAllowed
    expect(admin.components.responses.MethodNotAllowed).toEqual(documented)
    const schema = documented.content['application/json'].schema
    expect(schema.properties.code.enum).toEqual(['METHOD_NOT_ALLOWED'])
    expect(headersOf(documented)).toEqual({ Allow: 'Allow', 'x-request-id': 'RequestId' })
    for (const doc of [api, admin]) {
      expect(doc.info.description).toContain('components.responses.MethodNotAllowed')
      for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
        const methods = Object.keys(item).map((m) => m.toUpperCase())
        const other = ['DELETE', 'PATCH', 'PUT', 'POST', 'GET'].find((m) => !methods.includes(m))!
        const answer = await t.request(other, path.replace(/\{[^}]+\}/g, '1'))
        const allow = answer.headers.get('allow')?.split(', ').sort()
        expect({ path, other, status: answer.status, allow }).toEqual({ path, other, status: 405, allow: [...methods].sort() })
        expect({ path, errors: conforms(answer.body, schema, doc) }).toEqual({ path, errors: [] })
      }
    }
    // The check can fail: another code is caught.
    expect(conforms({ success: false, error: 'x', code: 'NOT_FOUND', request_id: 'x' }, schema, api).length).toBeGreaterThan(0)
  })
})

describe('the send and bulk bodies', () => {
  test('say what the service enforces: exactly one of body and template_id, variables only with it, media_url only without', async () => {
    const to = '081234567890'
    const entries: Json[] = [
      { to, body: 'text' },
      { to, body: 'text', media_url: 'https://files.acme.test/a.png' },
      { to, template_id: 999999 },
      { to, template_id: 999999, variables: { name: 'Budi' } },
      { to },
      { to, variables: { name: 'Budi' } },
      { to, body: 'text', template_id: 999999 },
      { to, body: 'text', variables: { name: 'Budi' } },
      { to, template_id: 999999, media_url: 'https://files.acme.test/a.png' },
    ]
    const bodies: { path: string; body: Json }[] = [
      ...entries.map((entry) => ({ path: '/messages/send', body: entry })),
      ...entries.map((entry) => ({ path: '/messages/bulk', body: { messages: [entry] } })),
      { path: '/messages/bulk', body: { messages: [entries[0], entries[6]] } },
    ]
    const { key } = await t.account(1000)
    const accepted: boolean[] = []
    for (const { path, body } of bodies) {
      const schema = api.paths[`/api/v1${path}`].post.requestBody.content['application/json'].schema
      const documented = conforms(body, schema, api).length === 0
      const answer = await t.api('POST', path, key, body)
      // 400 is a shape the service refuses; anything else (200, or 422 for the unknown template) took the shape.
      expect({ path, body, documented }).toEqual({ path, body, documented: answer.status !== 400 })
      accepted.push(answer.status !== 400)
    }
    // Both kinds of body were tried.
    expect(new Set(accepted)).toEqual(new Set([true, false]))
    // The documents' examples show one valid body of each shape (they used to show one with both).
    for (const path of ['/messages/send', '/messages/bulk']) {
      const content = api.paths[`/api/v1${path}`].post.requestBody.content['application/json']
      for (const [name, example] of Object.entries(content.examples as Record<string, Json>)) {
        const answer = await t.api('POST', path, key, example.value)
        const errors = conforms(example.value, content.schema, api)
        expect({ path, name, errors, accepted: answer.status !== 400 }).toEqual({ path, name, errors: [], accepted: true })
      }
    }
  })
})

describe('the message.status webhook', () => {
  test('is described with its headers and payload, as a real delivery sends them (delivered, then failed with a code)', async () => {
    const hook = api.webhooks['message.status'].post
    const headers = hook.parameters.filter((p: Json) => p.in === 'header')
    expect(headers.map((p: Json) => p.name)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature'])
    const body = hook.requestBody.content['application/json'].schema
    expect(body).toEqual({ $ref: '#/components/schemas/MessageStatusEvent' })

    const { key } = await t.account(1000)
    expect((await t.api('POST', '/webhook', key, { url: rx.url() })).status).toBe(200)
    const sids: string[] = []
    for (const to of ['081234567001', '081234567002']) {
      const sent = await t.api('POST', '/messages/send', key, { to, body: 'hello' })
      expect(sent.status).toBe(200)
      sids.push(sent.body.data.message_id)
    }
    await reportStatus(t, sids[0]!, 'delivered')
    await reportStatus(t, sids[1]!, 'failed', { errorCode: 63016, errorMessage: 'undeliverable' })
    // The deliveries go over real HTTPS, stepped: each step ends when its outcomes are recorded, and the
    // clock (the attempts' time limit) stands still meanwhile, however long the network takes.
    await deliverAll(t)
    const received = rx.requests
    expect(received.length).toBe(2)
    for (const request of received) {
      for (const header of headers) {
        expect({ header: header.name, present: header.name in request.headers }).toEqual({ header: header.name, present: true })
        const value = request.headers[header.name]!
        if (header.schema.type === 'integer') expect(value).toMatch(/^[0-9]+$/)
        if (header.schema.pattern) expect(value).toMatch(new RegExp(header.schema.pattern))
      }
      expect(conforms(JSON.parse(request.body), body, api)).toEqual([])
    }
    const failed = received.map((r) => JSON.parse(r.body)).find((b) => b.data.status === 'failed')
    expect(failed.data.error_code).toBe(63016)
    // The check itself can fail: a payload that breaks the document is caught.
    expect(conforms({ event: 'message.status', timestamp: 'x', data: { error_code: '63016' } }, body, api).length).toBeGreaterThan(0)
  })
})
