import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { MAX_BODY_BYTES } from '../../src/http/body'
import { errorEnvelope } from '../helpers/envelope'

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
  try {
    const res = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'x' })
    expect(res.status).toBe(500)
    expect(res.body.code).toBe('INTERNAL_ERROR')
    expect(res.body.error).toContain(res.headers.get('x-request-id')!)
    expect(JSON.stringify(res.body)).not.toMatch(/ledger|relation|select|insert|at /i)
  } finally {
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

test('the OpenAPI document describes the API', async () => {
  const res = await t.request('GET', '/docs/json')
  expect(res.status).toBe(200)
  expect(res.body.openapi).toMatch(/^3\./)
  expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(['/api/v1/balance', '/api/v1/messages/send', '/admin/v1/accounts']))
  expect(res.body.paths['/api/v1/messages/send'].post.responses['402']).toBeDefined()
})
