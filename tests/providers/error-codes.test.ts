// The error codes' meanings are documented in one table (src/providers/error-codes.ts): the API
// reference shows it in the description of every `error_code` (the message, the webhook event), the
// README has the same rows, and its throttling codes are exactly those the providers treat as throttles.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ERROR_CODES } from '../../src/providers/error-codes'
import { THROTTLING_CODES } from '../../src/providers/http'
import { testApp, type TestApp } from '../helpers/app'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

/** Every `error_code` property schema in `node`, with where it is. */
function* errorCodeFields(node: unknown, at = ''): Generator<{ at: string; schema: Record<string, any> }> {
  if (!node || typeof node !== 'object') return
  for (const [key, value] of Object.entries(node)) {
    if (key === 'properties' && value && typeof value === 'object' && 'error_code' in value) {
      yield { at, schema: (value as Record<string, any>).error_code }
    }
    yield* errorCodeFields(value, `${at}/${key}`)
  }
}

test('the API reference describes every error_code with the table of codes', async () => {
  const doc = (await t.request('GET', '/docs/json')).body
  const fields = [...errorCodeFields(doc)]
  const where = fields.map((f) => f.at)
  expect(where.some((at) => at.includes('MessageStatusEvent'))).toBe(true)
  expect(where.some((at) => at.includes('/messages/{message_sid}'))).toBe(true)
  for (const { at, schema } of fields) {
    for (const c of ERROR_CODES)
      expect({ at, row: schema.description?.includes(`| ${c.code} | ${c.provider} |`) }).toEqual({ at, row: true })
  }
})

test("docs/guides/providers.md's table of error codes has the same rows", () => {
  const page = readFileSync(join(import.meta.dir, '..', '..', 'docs', 'guides', 'providers.md'), 'utf8')
  const section = page.slice(page.indexOf('## Error codes'))
  const rows = [...section.matchAll(/^\| (\d+) \| (Meta|Twilio) \| (final|throttling) \| (.+) \|$/gm)].map((m) => [
    Number(m[1]),
    m[2],
    m[3],
    m[4],
  ])
  expect(rows).toEqual(ERROR_CODES.map((c) => [c.code, c.provider, c.kind === 'throttle' ? 'throttling' : 'final', c.meaning]))
})

test('its throttling codes are exactly the ones the providers answer as throttles', () => {
  for (const provider of ['Meta', 'Twilio'] as const) {
    const documented = ERROR_CODES.filter((c) => c.provider === provider && c.kind === 'throttle').map((c) => c.code)
    expect(documented.sort()).toEqual([...THROTTLING_CODES[provider === 'Meta' ? 'meta' : 'twilio'].keys()].sort())
  }
})
