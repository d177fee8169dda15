// The OpenAPI 3.1 documents, generated from the app's own routes (their TypeBox models and `detail`),
// so a new route appears by itself. Two documents, split by the kind each route declares
// (http/routes.ts): the integrator's (`api`: what an API key can do, with the `message.status`
// webhook) and the operator's (`admin`, provider `callback`s, `health`). The docs and the dashboard
// pages are in neither.
//
// After generation the schemas are made plain for code generators: Elysia's t.Integer (an `anyOf` of
// a numeric string and an integer, for query strings) becomes a plain integer, and so does a decimal
// path or query parameter. Every operation lists every error answer the service can give it, each
// with its possible `code` values, and every answer names the headers the service sets on it.
//
// 405: a path answers the methods its operations list; any other method (HEAD and OPTIONS included)
// gets 405 METHOD_NOT_ALLOWED with an `Allow` header (http/shell.ts), as HTTP defines it. OpenAPI has
// no place for a path's answer to the methods it lacks: a 405 under each operation would say that
// operation can answer 405 (a generated client would expect it, a contract test would accept it), and
// an operation per missing method would invent endpoints. So the paths list exactly the methods they
// answer, which is what spec-aware tools read, and the 405 itself (its body and `Allow`) is the
// reusable `components.responses.MethodNotAllowed`, which the documents' descriptions point to. No
// operation refers to it: Redocly's no-unused-components is off for that (redocly.yaml).

import { Kind } from '@sinclair/typebox'
import { ERROR_STATUS } from '../http/errors'
import { errorsOf, jsonBody, RESPONSE_HEADERS } from '../http/openapi'
import { DECIMAL } from '../http/models'
import { withoutDeclarations, type Route, type RouteKind } from '../http/routes'

type Json = Record<string, any>
export type OpenApiDocument = Json & { openapi: string; paths: Record<string, Record<string, Json>> }

type Hooks = { body?: unknown; query?: unknown; params?: unknown; headers?: unknown; response?: unknown; detail?: Json }

export type Audience = 'api' | 'admin'
export type Tag = { name: string; description?: string }

export type DocumentsOptions = {
  api: { info: Json; webhooks?: Json; schemas?: Json }
  admin: { info: Json }
  tags: Tag[]
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'])

/** Which document a kind of route belongs to; null for the docs themselves and the dashboard (pages, not API). */
const AUDIENCE: Record<RouteKind, Audience | null> = {
  api: 'api',
  admin: 'admin',
  callback: 'admin',
  health: 'admin',
  docs: null,
  page: null,
}

const SECURITY_SCHEMES = {
  api: { apiKey: { type: 'http', scheme: 'bearer', description: 'An API key, `pm_...` (created in the dashboard)' } },
  admin: {
    adminToken: {
      type: 'http',
      scheme: 'bearer',
      description: 'The admin token: `ADMIN_TOKEN`, or the one generated into `DATA_DIR/admin-token`',
    },
  },
}

/** The credentials a kind of route needs, as the shell checks them (http/shell.ts). */
function securityOf(kind: RouteKind): Json[] {
  if (kind === 'api') return [{ apiKey: [] }]
  if (kind === 'admin') return [{ adminToken: [] }]
  return []
}

/** Both documents, for the routes of the composed app served at `baseUrl` (its PUBLIC_BASE_URL). */
export function openApiDocuments(routes: Route[], options: DocumentsOptions, baseUrl: string): Record<Audience, OpenApiDocument> {
  const paths: Record<Audience, Record<string, Record<string, Json>>> = { api: {}, admin: {} }
  for (const route of routes) {
    const method = route.method.toLowerCase()
    if (!METHODS.has(method) || method === 'options' || route.path.includes('*')) continue
    const audience = AUDIENCE[route.kind]
    if (!audience) continue
    const path = openApiPath(route.path)
    ;(paths[audience][path] ??= {})[method] = operationOf(route, path)
  }
  const document = (audience: Audience, info: Json, extra: Json = {}): OpenApiDocument => {
    const responses = { MethodNotAllowed: methodNotAllowed(), ...sharedErrorAnswers(paths[audience]) }
    // The headers some answer names (the operator's document has no Idempotency-Key).
    const named = JSON.stringify([paths[audience], responses])
    const headers = Object.fromEntries(
      Object.entries(RESPONSE_HEADERS).filter(([name]) => named.includes(`"#/components/headers/${name}"`)),
    )
    return plain({
      openapi: '3.1.0',
      info,
      // The paths are absolute (`/api/v1/...`), so the server is the service's root.
      servers: [{ url: baseUrl, description: 'This service (its PUBLIC_BASE_URL)' }],
      tags: tagsUsed(paths[audience], options.tags),
      paths: paths[audience],
      ...extra,
      components: {
        ...extra.components,
        responses,
        headers,
        securitySchemes: SECURITY_SCHEMES[audience],
      },
    }) as OpenApiDocument
  }
  return {
    api: document('api', options.api.info, {
      webhooks: options.api.webhooks,
      components: { schemas: options.api.schemas },
    }),
    admin: document('admin', options.admin.info),
  }
}

/** HTTP's names of the error statuses, for the shared answers' names (`TooManyRequests`, `TooManyRequests2`...). */
const STATUS_NAMES: Record<string, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  402: 'PaymentRequired',
  403: 'Forbidden',
  404: 'NotFound',
  408: 'RequestTimeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'ContentTooLarge',
  415: 'UnsupportedMediaType',
  422: 'UnprocessableContent',
  429: 'TooManyRequests',
  500: 'InternalServerError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
}

/**
 * Error answers that several operations give word for word (mostly the shell's: credentials, HTTPS, body
 * rules, the key's rate, busy, the 500) move to `components.responses`, each operation keeping a `$ref`
 * to its own. Inline, they were two thirds of each document (578 KB for 26 paths), and Swagger UI's
 * /docs took over 20 s to show its list on a busy 2-core machine. Changes `paths` in place.
 */
function sharedErrorAnswers(paths: Record<string, Record<string, Json>>): Record<string, Json> {
  const uses = new Map<string, { status: string; answer: Json; count: number }>()
  const answers = Object.values(paths).flatMap((operations) => Object.values(operations).map((op) => op.responses as Record<string, Json>))
  for (const responses of answers) {
    for (const [status, answer] of Object.entries(responses)) {
      if (Number(status) < 400) continue
      const key = `${status} ${JSON.stringify(answer)}`
      const use = uses.get(key)
      if (use) use.count++
      else uses.set(key, { status, answer, count: 1 })
    }
  }
  const shared: Record<string, Json> = {}
  const names = new Map<string, string>()
  const taken = new Map<string, number>()
  for (const [key, { status, answer, count }] of uses) {
    if (count < 2) continue
    const base = STATUS_NAMES[status] ?? `Status${status}`
    const n = (taken.get(base) ?? 0) + 1
    taken.set(base, n)
    const name = n === 1 ? base : `${base}${n}`
    shared[name] = answer
    names.set(key, name)
  }
  for (const responses of answers) {
    for (const [status, answer] of Object.entries(responses)) {
      const name = Number(status) >= 400 ? names.get(`${status} ${JSON.stringify(answer)}`) : undefined
      if (name) responses[status] = { $ref: `#/components/responses/${name}` }
    }
  }
  return shared
}

const openApiPath = (path: string) =>
  path
    .split('/')
    .map((part) => (part.startsWith(':') ? `{${part.slice(1).replace(/\?$/, '')}}` : part))
    .join('/')

/** `getApiV1MessagesByMessageSid`: stable and unique per method and path. */
function operationId(method: string, path: string): string {
  const words = path
    .split('/')
    .flatMap((part) => (part.startsWith('{') ? ['by', ...part.slice(1, -1).split(/[^A-Za-z0-9]+/)] : part.split(/[^A-Za-z0-9]+/)))
  return method + words.map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('')
}

/** A schema as JSON: TypeBox's symbols (kinds, transforms) dropped. */
const toJson = (schema: unknown): Json => JSON.parse(JSON.stringify(schema))

function parametersOf(where: 'path' | 'query' | 'header', schema: unknown): Json[] {
  if (!schema || typeof schema !== 'object') return []
  const object = toJson(schema)
  const required = new Set<string>(object.required ?? [])
  return Object.entries((object.properties ?? {}) as Record<string, Json>).map(([name, property]) => {
    const { description, ...rest } = property
    return { name, in: where, required: where === 'path' || required.has(name), description, schema: rest }
  })
}

function responsesOf(response: unknown): Record<string, Json> {
  if (!response || typeof response !== 'object') return {}
  const byStatus = Kind in (response as object) ? { 200: response } : (response as Record<string, unknown>)
  const out: Record<string, Json> = {}
  for (const [status, schema] of Object.entries(byStatus)) {
    if (!schema || typeof schema !== 'object') continue
    const json = toJson(schema)
    const empty = json.type === 'null' || json.type === 'void' || json.type === 'undefined'
    out[status] = {
      description: json.description ?? (Number(status) < 400 ? 'Success' : 'Error'),
      ...(empty ? {} : { content: { 'application/json': { schema: json } } }),
    }
  }
  return out
}

function operationOf(route: Route, path: string): Json {
  const method = route.method.toLowerCase()
  const hooks = route.hooks as Hooks
  const { responses: detailResponses, ...detail } = withoutDeclarations(hooks.detail ?? {}) as Json
  const parameters = [
    ...parametersOf('path', hooks.params),
    ...parametersOf('query', hooks.query),
    ...parametersOf('header', hooks.headers),
  ]
  for (const match of path.matchAll(/\{([^}]+)\}/g)) {
    if (!parameters.some((p) => p.in === 'path' && p.name === match[1])) {
      parameters.unshift({ name: match[1], in: 'path', required: true, schema: { type: 'string' } })
    }
  }
  const operation: Json = {
    operationId: operationId(method, path),
    security: securityOf(route.kind),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(hooks.body ? { requestBody: jsonBody(toJson(hooks.body)) } : {}),
    // A route's `detail` may describe its body beyond its runtime model (messages/model.ts).
    ...detail,
  }
  operation.responses = withHeaders(
    route,
    operation,
    withErrorAnswers(route, operation, { ...responsesOf(hooks.response), ...detailResponses }),
  )
  return operation
}

const header = (name: keyof typeof RESPONSE_HEADERS) => ({ $ref: `#/components/headers/${name}` })

// Answered before the route runs (credentials, HTTPS, the key's rate, body rules, busy, slow), or never
// stored (a failure of ours): never a replay.
const NEVER_REPLAYED = new Set(['401', '403', '408', '413', '415', '429', '500', '503'])
// Answered before the API key is looked up: no RateLimit headers.
const BEFORE_THE_KEY = new Set(['401', '403'])

/**
 * The headers of each answer: `x-request-id` on all of them; `idempotent-replayed` where an answer
 * may be a replay (an operation that takes an Idempotency-Key, its own answers); `Retry-After` on the
 * 503 of an operation that takes a JSON body (busy: the body waited too long for its turn) and on the
 * 429 of an API key over its rate; the key's `RateLimit-Policy` and `RateLimit` on every answer of
 * the integrator's API once the key was found.
 */
function withHeaders(route: Route, operation: Json, responses: Record<string, Json>): Record<string, Json> {
  const idempotent = takesIdempotencyKey(operation)
  const busy = Boolean(operation.requestBody?.content?.['application/json'])
  const rated = route.kind === 'api'
  return Object.fromEntries(
    Object.entries(responses).map(([status, { description, headers, ...rest }]) => [
      status,
      {
        description,
        headers: {
          'x-request-id': header('RequestId'),
          ...(idempotent && !NEVER_REPLAYED.has(status) ? { 'idempotent-replayed': header('IdempotentReplayed') } : {}),
          ...((busy && status === '503') || (rated && status === '429') ? { 'Retry-After': header('RetryAfter') } : {}),
          ...(rated && !BEFORE_THE_KEY.has(status)
            ? { 'RateLimit-Policy': header('RateLimitPolicy'), RateLimit: header('RateLimit') }
            : {}),
          ...headers,
        },
        ...rest,
      },
    ]),
  )
}

const takesIdempotencyKey = (operation: Json) =>
  (operation.parameters ?? []).some((p: Json) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')

/** The 405 of any path, for the methods it does not answer (see the top of this file). */
function methodNotAllowed(): Json {
  const schema = toJson(errorsOf(405)[405])
  return {
    description: schema.description,
    headers: { Allow: header('Allow'), 'x-request-id': header('RequestId') },
    content: { 'application/json': { schema: withCodes(schema, codesOf(405)) } },
  }
}

/** An error answer's schema whose `code` is one of `codes`. */
const withCodes = (schema: Json, codes: string[]): Json => ({
  ...schema,
  properties: { ...schema.properties, code: { ...schema.properties.code, type: 'string', enum: codes } },
})

/**
 * Every error answer the service can give an operation, whether or not its route names it: the
 * shell's (authentication, HTTPS, body rules, parameters) and the 500. A route's own description
 * of a status is kept. Each error answer's `code` lists its possible values.
 */
function withErrorAnswers(route: Route, operation: Json, declared: Record<string, Json>): Record<string, Json> {
  const statuses = new Set([400, 422, 500]) // any parameter can be malformed or carry a NUL; anything can fail
  if (route.kind !== 'health') statuses.add(403) // REQUIRE_HTTPS
  const credentialed = securityOf(route.kind).length > 0 // the API and the admin API, where the shell's body rules apply
  if (credentialed) statuses.add(401)
  if (route.kind === 'api') statuses.add(429) // the API key's request rate
  if (route.path.includes(':')) statuses.add(404) // an id no record can have
  if (operation.requestBody) statuses.add(413)
  if (operation.requestBody?.content?.['application/json']) {
    statuses.add(503) // a big JSON body waits for its turn to be parsed, at most 5 s
    if (credentialed) statuses.add(415) // JSON only
    if (credentialed) statuses.add(408) // and, once its turn came, must arrive in time (callbacks read their own bodies)
  }
  const responses: Record<string, Json> = { ...declared }
  if (!Object.keys(responses).some((status) => status.startsWith('2'))) responses[200] = { description: 'Success' }
  for (const status of statuses) {
    if (responses[status]) continue
    const schema = errorsOf(status)[status]!
    responses[status] = { description: schema.description ?? 'Error', content: { 'application/json': { schema: toJson(schema) } } }
  }
  const idempotent = takesIdempotencyKey(operation)
  const body = operation.requestBody?.content?.['application/json']?.schema
  // SENDER_DISABLED where a sender can be named: a send's, a bulk entry's or a campaign's `from`.
  const namesSender = Boolean(body?.properties?.from ?? body?.properties?.messages?.items?.properties?.from)
  // WINDOW_CLOSED, TEMPLATE_NOT_APPROVED, RECIPIENT_OPTED_OUT and MESSAGING_LIMIT where one message is sent (a bulk's entries carry them in their results).
  const sendsOne = Boolean(body?.properties?.to)
  // WINDOW_CLOSED only where that message may be free-form (a `body`): a template goes whatever the window (a verification's).
  const freeForm = sendsOne && Boolean(body?.properties?.body)
  for (const [status, response] of Object.entries(responses)) {
    const schema = response.content?.['application/json']?.schema
    if (Number(status) < 400 || !schema?.properties?.code) continue
    const codes = codesOf(Number(status)).filter(
      (code) =>
        (code !== 'IDEMPOTENCY_KEY_REUSED' || idempotent) &&
        // A message without `from` goes from a sender too (the template's own, the account's default), which may be disabled.
        (code !== 'SENDER_DISABLED' || namesSender || sendsOne) &&
        (code !== 'WINDOW_CLOSED' || freeForm) &&
        (code !== 'TEMPLATE_NOT_APPROVED' || sendsOne) &&
        (code !== 'MESSAGING_LIMIT' || sendsOne) &&
        (code !== 'RECIPIENT_OPTED_OUT' || sendsOne) &&
        // SENDER_RESTRICTED where one message is sent (a bulk's entries carry it; a campaign pauses).
        (code !== 'SENDER_RESTRICTED' || sendsOne) &&
        // PRICE_ABOVE_MAX where one message with a `max_price` is sent (a bulk entry fails with it; a campaign pauses).
        (code !== 'PRICE_ABOVE_MAX' || (sendsOne && Boolean(body?.properties?.max_price))) &&
        // MEDIA_PENDING only where an inbound medium is served, and its only 409 there.
        (code !== 'MEDIA_PENDING' || /\/media(\/|$)/.test(route.path)) &&
        (code !== 'CONFLICT' || !/\/inbound\/:id\/media(\/|$)/.test(route.path)) &&
        // FORBIDDEN is a route's own refusal (a provider's bad signature): only where the route names 403.
        (code !== 'FORBIDDEN' || status in declared),
    )
    // A copy: schemas given in a route's detail may share their properties object with other answers.
    response.content['application/json'].schema = withCodes(schema, codes)
  }
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)))
}

/** The codes an error status can carry (errors.ts's table; 422 is also VALIDATION_ERROR's). */
function codesOf(status: number): string[] {
  const codes = Object.entries(ERROR_STATUS)
    .filter(([, s]) => s === status)
    .map(([code]) => code)
  if (status === 422) codes.unshift('VALIDATION_ERROR')
  return codes
}

function tagsUsed(paths: Record<string, Record<string, Json>>, table: Tag[]): Tag[] {
  const used = new Set<string>()
  for (const operations of Object.values(paths)) for (const op of Object.values(operations)) for (const tag of op.tags ?? []) used.add(tag)
  const known = table.filter((tag) => used.has(tag.name))
  const unknown = [...used].filter((name) => !table.some((tag) => tag.name === name)).map((name) => ({ name }))
  return [...known, ...unknown]
}

const NUMERIC_STRING_FORMATS = new Set(['integer', 'numeric', 'number'])

/**
 * Plain schemas for code generators, bottom-up: Elysia's `anyOf: [{type: string, format: integer},
 * {type: integer}]` becomes the integer alone, a decimal path or query parameter an integer, and a
 * union of literals of one type an `enum`.
 */
function plain(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(plain)
  if (!node || typeof node !== 'object') return node
  const out: Json = {}
  for (const [key, value] of Object.entries(node)) out[key] = key === 'examples' || key === 'example' ? value : plain(value)
  if (Array.isArray(out.anyOf) && out.anyOf.length === 2) {
    const numeric = out.anyOf.find((s: Json) => s?.type === 'integer' || s?.type === 'number')
    const text = out.anyOf.find((s: Json) => s?.type === 'string' && NUMERIC_STRING_FORMATS.has(s.format))
    if (numeric && text) {
      const { anyOf: _anyOf, ...annotations } = out
      return { ...numeric, ...annotations }
    }
  }
  if (Array.isArray(out.anyOf) && out.anyOf.length > 1) {
    const branches = out.anyOf as Json[]
    const type = branches[0]?.type
    const literals = branches.every((b) => 'const' in b && b.type === type && Object.keys(b).length === 2)
    if (literals) {
      const { anyOf: _anyOf, ...annotations } = out
      return { type, enum: branches.map((b) => b.const), ...annotations }
    }
  }
  if (out.type === 'string' && out.pattern === DECIMAL) {
    const { pattern: _pattern, examples, ...rest } = out
    return { ...rest, type: 'integer', ...(Array.isArray(examples) ? { examples: examples.map(Number) } : {}) }
  }
  return out
}
