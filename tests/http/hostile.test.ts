// Property: whatever a client with a valid API key or admin token sends to any route of the public or
// admin API, a hostile request is a 4xx in the envelope (never a 5xx) and moves no money. The routes
// come from the app's own route table, so a route added later is covered without editing this test.
//
// Seeded and reproducible: FUZZ_SEED=<n> replays a run, FUZZ_REQUESTS=<n> changes its length. A
// failure prints its seed.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { MAX_BODY_BYTES } from '../../src/http/body'
import { seeded, type Random } from '../helpers/random'

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 3000)

type Schema = {
  type?: string
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  anyOf?: Schema[]
  pattern?: string
}
type Route = { method: string; path: string; hooks: { body?: Schema; query?: Schema; params?: Schema } }

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const

// Values that no route may accept where an integer or an id is expected.
const HOSTILE_INTEGERS = [
  '-1',
  'abc',
  '99999999999999999999',
  '9223372036854775808',
  '18446744073709551616',
  '1e300',
  '1.5',
  '0x10',
  '',
  '%00',
  '9'.repeat(400),
  '%E0%A4%A',
]
// (in a path, not the empty one: /campaigns/ is the list, another route)
const HOSTILE_IDS = [...HOSTILE_INTEGERS.filter((v) => v !== ''), '0']
/** Paths whose sender id 0 is a real one (the deployment's default sender, README "WhatsApp templates"). */
const ZERO_IS_A_SENDER = /^\/admin\/v1\/senders\/:id\/templates/
const HOSTILE_TIMESTAMPS = [
  '0999-01-01 00:00:00',
  '2026-02-30 00:00:00',
  '2026-01-01T00:00:00',
  'yesterday',
  '',
  '%00',
  '99999-01-01 00:00:00',
]
const HOSTILE_STRINGS = ['%00', 'a%00b', '%FF%00', '%E0%A4%A%00']
const HOSTILE_JSON_INTEGERS = [1e20, -1e20, 2 ** 64, 2 ** 63, Number.MAX_SAFE_INTEGER + 2]
/** Routes whose body is a file, not JSON. */
const FILE_UPLOADS = new Set(['POST /api/v1/media'])

const CONTENT_TYPES = [
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'text/plain',
  'text/plain; charset=utf-8',
  'application/xml',
  'application/json; charset=latin1',
  'application/jsonx',
  'application/octet-stream',
]

/** A plausible value for a body schema: right shape, arbitrary content. */
function sample(schema: Schema | undefined, rng: Random): unknown {
  if (!schema) return {}
  if (schema.anyOf) return sample(rng.pick(schema.anyOf), rng)
  switch (schema.type) {
    case 'object': {
      const out: Record<string, unknown> = {}
      for (const [key, child] of Object.entries(schema.properties ?? {})) {
        if (schema.required?.includes(key) || rng.chance(0.5)) out[key] = sample(child, rng)
      }
      return out
    }
    case 'array':
      return Array.from({ length: 1 + rng.int(0, 2) }, () => sample(schema.items, rng))
    case 'string':
      return rng.pick(['x', '081234567890', 'https://a.example/x.png', '2030-01-01 00:00:00', 'Budi', 'vip'])
    case 'integer':
    case 'number':
      return 1 + rng.int(0, 4)
    case 'boolean':
      return rng.chance(0.5)
    case 'null':
      return null
    default:
      return 'x'
  }
}

type Slot = { holder: Record<string, unknown> | unknown[]; key: string | number; schema: Schema | undefined }

/** Every field of `value` with the schema it answers to. */
function slots(value: unknown, schema: Schema | undefined, out: Slot[] = []): Slot[] {
  if (schema?.anyOf) {
    const member = schema.anyOf.find((m) => (Array.isArray(value) ? m.type === 'array' : m.type === typeof value)) ?? schema.anyOf[0]
    return slots(value, member, out)
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      out.push({ holder: value, key: i, schema: schema?.items })
      slots(item, schema?.items, out)
    })
  } else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      out.push({ holder: value as Record<string, unknown>, key, schema: schema?.properties?.[key] })
      slots(child, schema?.properties?.[key], out)
    }
  }
  return out
}

const objectsIn = (value: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] => {
  if (Array.isArray(value)) value.forEach((v) => objectsIn(v, out))
  else if (value !== null && typeof value === 'object') {
    out.push(value as Record<string, unknown>)
    Object.values(value).forEach((v) => objectsIn(v, out))
  }
  return out
}

const leafType = (schema: Schema | undefined): string | undefined =>
  schema?.anyOf ? schema.anyOf.map(leafType).find((t) => t && t !== 'null') : schema?.type

/** The JSON types a field takes: a wrong-type value must be none of them (`null` is right for a nullable field). */
const acceptedTypes = (schema: Schema | undefined): Set<string> =>
  new Set(schema?.anyOf ? schema.anyOf.flatMap((m) => [...acceptedTypes(m)]) : schema?.type ? [schema.type] : [])
const jsonType = (value: unknown): string =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'array'
      : typeof value === 'number'
        ? Number.isInteger(value)
          ? 'integer'
          : 'number'
        : typeof value

const DEEP = '\u0001DEEP\u0001'

type Hostile = { kind: string; method: string; path: string; headers: Record<string, string>; body: Uint8Array | string | null }

/** A request with at least one defect the route must refuse. */
function hostile(route: Route, rng: Random, ids: { valid: string }, methodsFor: (path: string) => string[]): Hostile {
  const params = Object.keys(route.hooks.params?.properties ?? {})
  const query = route.hooks.query?.properties ?? {}
  const takesBody = route.method !== 'GET'
  const kinds = [
    'method',
    ...(params.length ? ['id'] : []),
    ...(Object.keys(query).length ? ['query'] : []),
    ...(takesBody ? ['body'] : []),
  ]
  const kind = rng.pick(kinds)

  const fill = (hostileParams: boolean) =>
    route.path.replace(/:(\w+)/g, (_, name: string) =>
      hostileParams
        ? rng.pick(
            name.endsWith('sid')
              ? ['SM%00', 'x'.repeat(3000), '%FF%FE', 'SM' + '0'.repeat(32)]
              : ZERO_IS_A_SENDER.test(route.path)
                ? HOSTILE_IDS.filter((v) => v !== '0')
                : HOSTILE_IDS,
          )
        : name.endsWith('sid')
          ? 'SMnotreal'
          : ids.valid,
    )
  let path = fill(kind === 'id')
  let method = route.method
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  let body: Uint8Array | string | null = null

  if (kind === 'method') {
    const allowed = new Set(methodsFor(path.split('?')[0]!))
    method = rng.pick(METHODS.filter((m) => !allowed.has(m)))
  }
  if (kind === 'query') {
    const names = Object.keys(query)
    const chosen = names.filter(() => rng.chance(0.5))
    if (chosen.length === 0) chosen.push(rng.pick(names))
    const parts = chosen.map((name) => {
      const schema = query[name]!
      const values = schema.pattern ? HOSTILE_INTEGERS : name.startsWith('date_') ? HOSTILE_TIMESTAMPS : HOSTILE_STRINGS
      return `${name}=${rng.pick(values).replaceAll(' ', '%20')}`
    })
    path += `?${parts.join('&')}`
  }
  if (takesBody && method !== 'GET') {
    const value = sample(route.hooks.body, rng)
    let text: string | null = null
    if (kind === 'body') {
      // A file upload takes any body its Content-Type names a WhatsApp media type of (text/plain is a document):
      // another Content-Type is no defect there (tests/media/upload.test.ts holds its own refusals).
      const defects = ['unknown', 'type', 'nul', 'integer', 'deep', 'content-type', 'utf8', 'garbage', 'too-large', 'not-object']
      const defect = rng.pick(FILE_UPLOADS.has(`${route.method} ${route.path}`) ? defects.filter((d) => d !== 'content-type') : defects)
      const fields = slots(value, route.hooks.body).filter((s) => !Array.isArray(s.holder))
      const strings = fields.filter((s) => leafType(s.schema) === 'string')
      const integers = fields.filter((s) => leafType(s.schema) === 'integer')
      const objects = objectsIn(value)
      if (defect === 'type' && fields.length > 0) {
        const slot = rng.pick(fields)
        const type = leafType(slot.schema)
        const wrong = (
          type === 'string'
            ? [5, true, {}, [], null]
            : type === 'integer'
              ? ['5', 1.5, true, {}]
              : type === 'boolean'
                ? ['true', 1]
                : ['x', 5]
        ).filter((candidate) => !acceptedTypes(slot.schema).has(jsonType(candidate)))
        ;(slot.holder as Record<string, unknown>)[slot.key] = rng.pick(wrong.length > 0 ? wrong : [{}])
      } else if (defect === 'nul' && strings.length > 0) {
        const slot = rng.pick(strings)
        ;(slot.holder as Record<string, unknown>)[slot.key] = `a\u0000b`
      } else if (defect === 'integer' && integers.length > 0) {
        const slot = rng.pick(integers)
        ;(slot.holder as Record<string, unknown>)[slot.key] = rng.pick(HOSTILE_JSON_INTEGERS)
      } else if (defect === 'deep') {
        const target = objects.length > 0 ? rng.pick(objects) : null
        if (target) target[rng.pick(Object.keys(target).concat('extra'))] = DEEP
        text = JSON.stringify(target ? value : { extra: DEEP })
        const depth = rng.pick([17, 100, 100_000])
        text = text.replace(JSON.stringify(DEEP), '['.repeat(depth) + ']'.repeat(depth))
      } else if (defect === 'content-type') {
        headers['content-type'] = rng.pick(CONTENT_TYPES)
        if (rng.chance(0.2)) delete headers['content-type']
      } else if (defect === 'utf8') {
        const json = new TextEncoder().encode(JSON.stringify({ ...(value as object), note: 'QQ' }))
        const at = json.indexOf(0x51) // the first Q of the added field
        json.set(
          rng.pick([
            [0xff, 0xfe],
            [0xc0, 0x80],
            [0xed, 0xa0],
          ]),
          at,
        )
        body = json
      } else if (defect === 'garbage') {
        text = rng.pick(['{', '{"a":', 'nul', '[1,2', '{"a" 1}', '\u0000', "{'a':1}", '{"a":1}}'])
      } else if (defect === 'too-large') {
        headers['content-length'] = String(MAX_BODY_BYTES + 1 + rng.int(0, 999))
      } else if (defect === 'not-object') {
        text = JSON.stringify(rng.pick([[value], 'text', 5, true]))
      } else {
        // unknown field (also the fallback of a defect the body has no field for), at any depth
        const target = objects.length > 0 ? rng.pick(objects) : null
        const name = rng.pick(['mediaUrl', 'To', 'extra', 'id', '__proto__x', 'a b', 'x'.repeat(300)])
        if (target) target[name] = 1
        else text = JSON.stringify({ [name]: 1 })
      }
    }
    if (body === null) body = text ?? JSON.stringify(value)
  }
  return { kind, method, path, headers, body }
}

let t: TestApp
let key: string
let accountId: number

beforeAll(async () => {
  t = await testApp()
  ;({ key, accountId } = await t.account(10_000))
  const ok = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'before the storm' })
  expect(ok.status).toBe(200)
}, 60_000)
afterAll(() => t.close())

async function snapshot() {
  const [row] = await t.db.sql<Record<string, string>[]>`
    select (select coalesce(sum(balance), 0)::text from accounts) as balances,
           (select coalesce(sum(amount), 0)::text from ledger) as ledger_sum,
           (select count(*)::text from ledger) as ledger_rows,
           (select count(*)::text from messages) as messages,
           (select count(*)::text from messages where status = 'queued') as queued,
           (select string_agg(coalesce(account_id::text, '-') || ':' || cost_per_message, ',' order by id) from prices) as prices,
           (select count(*)::text from accounts) as accounts,
           (select count(*)::text from api_keys where active) as active_keys`
  return row
}

test(`hostile requests to every route (seed ${SEED}): 4xx in the envelope, nothing charged`, async () => {
  const rng = seeded(SEED)
  const routes = (t.app.routes as unknown as Route[]).filter((r) => /^\/(api|admin)\/v1\//.test(r.path))
  expect(routes.length).toBeGreaterThan(25)
  const methodsFor = (path: string) =>
    routes.filter((r) => new RegExp(`^${r.path.replace(/:[^/]+/g, '[^/]+')}$`).test(path)).map((r) => r.method)
  const before = await snapshot()
  const failures: string[] = []
  const covered = new Set<string>()
  const kinds = new Map<string, number>()

  for (let i = 0; i < REQUESTS && failures.length < 10; i++) {
    const route = routes[i % routes.length]!
    const request = hostile(route, rng, { valid: String(accountId) }, methodsFor)
    const admin = route.path.startsWith('/admin/')
    const headers: Record<string, string> = { authorization: `Bearer ${admin ? ADMIN_TOKEN : key}`, ...request.headers }
    const response = await t.app.handle(
      new Request(`http://localhost${request.path}`, {
        method: request.method,
        headers,
        body: request.method === 'GET' ? null : request.body,
      }),
    )
    const text = await response.text()
    let parsed: { success?: unknown; code?: unknown; error?: unknown } | undefined
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = undefined
    }
    const sentBody = request.body instanceof Uint8Array ? new TextDecoder().decode(request.body) : (request.body ?? '')
    const shown = `${request.kind} ${request.method} ${request.path.slice(0, 120)} ${JSON.stringify(request.headers)} ${sentBody.slice(0, 120)}`
    const problems = [
      response.status >= 500 && `status ${response.status}`,
      (response.status < 400 || response.status >= 500) && `not a 4xx: ${response.status}`,
      (!parsed || parsed.success !== false || typeof parsed.code !== 'string' || typeof parsed.error !== 'string') &&
        `not the envelope: ${text.slice(0, 200)}`,
      !response.headers.get('x-request-id') && 'no x-request-id',
    ].filter(Boolean)
    if (problems.length > 0) failures.push(`seed ${SEED}, request ${i}: ${shown} -> ${problems.join('; ')}`)
    covered.add(`${route.method} ${route.path}`)
    kinds.set(request.kind, (kinds.get(request.kind) ?? 0) + 1)
  }

  const after = await snapshot()
  if (failures.length > 0 || JSON.stringify(after) !== JSON.stringify(before)) {
    console.log(`hostile request test failed; replay with FUZZ_SEED=${SEED}`)
  }
  expect(failures).toEqual([])
  expect({ seed: SEED, ...after }).toEqual({ seed: SEED, ...before })
  expect(covered.size).toBe(routes.length)
  expect([...kinds.keys()].sort()).toEqual(['body', 'id', 'method', 'query'])
}, 60_000)
