// The client libraries follow the OpenAPI document (made offline from the routes by clients/openapi.ts,
// as /docs/json serves it): the TypeScript client's generated types are the document's own (a route
// changed without `bun clients/openapi.ts` fails here, and tsc then checks the client against the new
// types), and every operation the Python and PHP clients call exists with that method and path, with
// the parameters, list fields, error fields and webhook headers they rely on.

import { beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { integratorDocument, SCHEMA_FILE, typescriptTypes } from '../../clients/openapi'
import { answersInline } from '../helpers/openapi'

const CLIENTS = join(import.meta.dir, '..', '..', 'clients')

/** Each client's calls, read from its source: `METHOD /path/{param}` as the client writes them. */
const SOURCES = {
  typescript: { file: 'typescript/src/index.ts', call: /this\.http\.(GET|POST|PUT|PATCH|DELETE)\('([^']+)'/g },
  python: { file: 'python/prepaid_messaging.py', call: /self\._request\("(GET|POST|PUT|PATCH|DELETE)", "([^"]+)"/g },
  php: { file: 'php/src/Client.php', call: /\$this->request\('(GET|POST|PUT|PATCH|DELETE)', '([^']+)'/g },
}

/** What every client offers (issue 33): balance, send, bulk, quote, messages and their pages, templates. */
const OPERATIONS = [
  'GET /api/v1/balance',
  'GET /api/v1/messages',
  'GET /api/v1/messages/{message_sid}',
  'GET /api/v1/templates',
  'GET /api/v1/templates/{id}',
  'POST /api/v1/messages/bulk',
  'POST /api/v1/messages/quote',
  'POST /api/v1/messages/send',
]

function operationsOf(client: keyof typeof SOURCES): string[] {
  const { file, call } = SOURCES[client]
  const source = readFileSync(join(CLIENTS, file), 'utf8')
  return [...new Set([...source.matchAll(call)].map((m) => `${m[1]} ${m[2]}`))].sort()
}

let document: Record<string, any>
const operation = (method: string, path: string) => document.paths[path]?.[method.toLowerCase()]
const jsonData = (op: any, status: string) => op.responses[status].content['application/json'].schema.properties.data

beforeAll(async () => {
  document = await integratorDocument()
}, 120_000)

describe('the client libraries and the OpenAPI document', () => {
  test("the TypeScript client's schema.d.ts is generated from the current document", async () => {
    const fresh = await typescriptTypes(document)
    // Not toBe: a 600 kB diff helps nobody; the fix is one command.
    if (readFileSync(SCHEMA_FILE, 'utf8') !== fresh)
      throw new Error('clients/typescript/src/schema.d.ts is stale: run `bun clients/openapi.ts`')
  }, 60_000)

  for (const client of Object.keys(SOURCES) as (keyof typeof SOURCES)[]) {
    test(`${client}: every operation it calls is in the document with that method and path`, () => {
      const calls = operationsOf(client)
      expect(calls).toEqual(OPERATIONS)
      expect(calls.filter((call) => !operation(...(call.split(' ') as [string, string])))).toEqual([])
    })
  }

  test('the parameters, fields and headers the clients rely on are in the document', () => {
    const names = (op: any, where: string) => (op.parameters ?? []).filter((p: any) => p.in === where).map((p: any) => p.name)
    // Idempotency-Key on send and bulk.
    for (const path of ['/api/v1/messages/send', '/api/v1/messages/bulk'])
      expect(names(operation('POST', path), 'header')).toContain('idempotency-key')
    // The path parameters the clients fill.
    expect(names(operation('GET', '/api/v1/messages/{message_sid}'), 'path')).toEqual(['message_sid'])
    expect(names(operation('GET', '/api/v1/templates/{id}'), 'path')).toEqual(['id'])
    // Lists: limit and offset in, {items, total, limit, offset} out (the clients' page walk reads items and total).
    for (const path of ['/api/v1/messages', '/api/v1/templates']) {
      const op = operation('GET', path)
      expect(names(op, 'query')).toEqual(expect.arrayContaining(['limit', 'offset']))
      expect(jsonData(op, '200').required).toEqual(expect.arrayContaining(['items', 'total', 'limit', 'offset']))
    }
    // Bulk takes `messages`; quote answers `total_cost`; send and bulk answer inside `data`.
    expect(operation('POST', '/api/v1/messages/bulk').requestBody.content['application/json'].schema.required).toContain('messages')
    expect(jsonData(operation('POST', '/api/v1/messages/quote'), '200').required).toContain('total_cost')
    // Every error answer of every operation they call carries what the exceptions carry.
    for (const call of OPERATIONS) {
      const [method, path] = call.split(' ') as [string, string]
      const op = { path, method: method.toLowerCase() }
      // Shared answers (`$ref` to components.responses) read in place.
      for (const [status, response] of Object.entries<any>(answersInline(document).paths[op.path][op.method].responses)) {
        if (Number(status) < 400) continue
        const schema = response.content['application/json'].schema
        expect({ call, status, required: schema.required }).toEqual({
          call,
          status,
          required: expect.arrayContaining(['success', 'error', 'code', 'request_id']),
        })
      }
    }
    // The webhook's signature headers, as verifyWebhook reads them.
    expect(document.webhooks['message.status'].post.parameters.map((p: any) => `${p.in} ${p.name}`)).toEqual(
      expect.arrayContaining(['header webhook-id', 'header webhook-timestamp', 'header webhook-signature']),
    )
  })
})
