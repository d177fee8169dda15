// The integrator's WhatsApp templates (issue 30): GET /api/v1/templates and /api/v1/templates/{id} show
// the templates an account may send (its senders', or the deployment's for an account without senders),
// each with its sender and the parameters a send must fill; another account's template is 404. Templates
// are stored through catalog.insertTemplate (their creation endpoints are the admin API's).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { TestClock } from '../../src/lib/clock'
import { insertTemplate, type NewTemplate } from '../../src/modules/templates/catalog'
import { checkDefinition } from '../../src/modules/templates/components'

let t: TestApp
const clock = new TestClock(new Date('2026-12-01T03:00:00Z'))

const ORDER_COMPONENTS = [
  { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['A-17'] } },
  { type: 'BODY', text: 'Hello {{1}}, your order {{2}} ships soon.', example: { body_text: [['Ana', 'A-17']] } },
  { type: 'FOOTER', text: 'Reply STOP to stop' },
  {
    type: 'BUTTONS',
    buttons: [
      { type: 'QUICK_REPLY', text: 'Thanks' },
      { type: 'URL', text: 'Track', url: 'https://example.com/track/{{1}}', example: ['https://example.com/track/A-17'] },
      { type: 'COPY_CODE', example: 'SAVE10' },
    ],
  },
]

const NAMED_COMPONENTS = [
  { type: 'HEADER', format: 'IMAGE', example: { header_handle: ['4::aW1hZ2U='] } },
  {
    type: 'BODY',
    text: 'Hi {{first_name}}, your receipt is attached.',
    example: { body_text_named_params: [{ param_name: 'first_name', example: 'Ana' }] },
  },
]

/** Stores a template as the admin API would (checked first), advancing the clock so the list's order is by creation. */
async function store(senderId: number | null, over: Partial<NewTemplate> & { name: string }) {
  const t0 = { senderId, provider: 'simulator', language: 'en_US', category: 'utility' as const, parameterFormat: 'positional' as const }
  const template = { ...t0, components: ORDER_COMPONENTS, status: 'approved' as const, ...over }
  const checked = checkDefinition({
    name: template.name,
    language: template.language,
    category: template.category.toUpperCase(),
    parameter_format: template.parameterFormat.toUpperCase(),
    components: template.components,
  })
  expect(checked.ok ? null : checked.problem).toBeNull()
  await clock.advance(1000)
  const stored = await insertTemplate(t.deps.sql, t.deps.clock, template, 'operator')
  return stored!.id
}

let a: { accountId: number; key: string }
let b: { accountId: number; key: string }
let none: { accountId: number; key: string }
const ids = {} as Record<'order' | 'receipt' | 'otherOrder' | 'deployment' | 'rejected', number>
let senderA: number
let senderB: number

beforeAll(async () => {
  t = await testApp({ clock })
  const sender = async (number: string) => {
    const created = await t.admin('POST', '/senders', { provider: 'simulator', name: `Own ${number}`, number, credentials: {} })
    expect(created.status).toBe(201)
    return Number(created.body.data.id)
  }
  senderA = await sender('+6281100007001')
  senderB = await sender('+6281100007002')
  a = await t.account(100)
  b = await t.account(100)
  none = await t.account(100)
  expect((await t.admin('PUT', `/accounts/${a.accountId}/senders/${senderA}`)).status).toBe(200)
  expect((await t.admin('PUT', `/accounts/${b.accountId}/senders/${senderB}`)).status).toBe(200)
  ids.order = await store(senderA, { name: 'order_update', category: 'marketing' })
  ids.receipt = await store(senderA, {
    name: 'receipt',
    language: 'id',
    parameterFormat: 'named',
    components: NAMED_COMPONENTS,
    status: 'pending',
  })
  ids.rejected = await store(senderA, { name: 'order_update', language: 'id', status: 'rejected', reason: 'INVALID_FORMAT' })
  ids.otherOrder = await store(senderB, { name: 'order_update' })
  ids.deployment = await store(null, { name: 'order_update', quality: 'green' })
})
afterAll(async () => {
  await t?.close()
})

const names = (body: any) => body.data.items.map((i: any) => i.id)

describe('GET /api/v1/templates/{id}', () => {
  test("a template of the account's sender: its parts, its sender and what a send must fill", async () => {
    const got = await t.api('GET', `/templates/${ids.order}`, a.key)
    expect(got.status).toBe(200)
    expect(got.body).toEqual({
      success: true,
      data: {
        id: ids.order,
        name: 'order_update',
        language: 'en_US',
        category: 'marketing',
        status: 'approved',
        reason: null,
        quality: 'unknown',
        parameter_format: 'positional',
        sender: { id: senderA, number: '+6281100007001' },
        parameters: {
          body: [
            { key: '1', example: 'Ana' },
            { key: '2', example: 'A-17' },
          ],
          header: { type: 'text', key: '1', example: 'A-17' },
          buttons: [
            { index: 1, sub_type: 'url', example: 'https://example.com/track/A-17' },
            { index: 2, sub_type: 'copy_code', example: 'SAVE10' },
          ],
        },
        components: ORDER_COMPONENTS,
        updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
      },
    })
  })

  test('a named template with a media header; a rejected one with its reason', async () => {
    const receipt = await t.api('GET', `/templates/${ids.receipt}`, a.key)
    expect(receipt.body.data).toMatchObject({
      status: 'pending',
      parameter_format: 'named',
      parameters: { body: [{ key: 'first_name', example: 'Ana' }], header: { type: 'image', example: '4::aW1hZ2U=' }, buttons: [] },
    })
    const rejected = await t.api('GET', `/templates/${ids.rejected}`, a.key)
    expect(rejected.body.data).toMatchObject({ status: 'rejected', reason: 'INVALID_FORMAT', language: 'id' })
  })

  test("another account's template, the deployment's for an account with senders, a missing id: 404 alike", async () => {
    for (const [key, id] of [
      [a.key, ids.otherOrder],
      [a.key, ids.deployment],
      [b.key, ids.order],
      [none.key, ids.order],
      [a.key, 999_999_999],
      [a.key, 0],
    ] as const) {
      const got = await t.api('GET', `/templates/${id}`, key)
      expect([got.status, got.body.code, got.body.error]).toEqual([404, 'NOT_FOUND', `template ${id} not found`])
    }
    expect((await t.api('GET', '/templates/abc', a.key)).status).toBe(400)
    expect((await t.request('GET', `/api/v1/templates/${ids.order}`, { key: null })).status).toBe(401)
  })

  test("an account without senders of its own sees the deployment's (sender null)", async () => {
    const got = await t.api('GET', `/templates/${ids.deployment}`, none.key)
    expect(got.body.data).toMatchObject({ id: ids.deployment, sender: null, quality: 'green' })
  })
})

describe('GET /api/v1/templates', () => {
  test("the account's templates, newest first, in the list shape", async () => {
    const list = await t.api('GET', '/templates', a.key)
    expect(list.status).toBe(200)
    expect(names(list.body)).toEqual([ids.rejected, ids.receipt, ids.order])
    expect(list.body.data).toMatchObject({ total: 3, limit: 50, offset: 0, has_more: false })
    expect(list.body.data.items[2].parameters.buttons).toHaveLength(2)
    expect(names((await t.api('GET', '/templates', b.key)).body)).toEqual([ids.otherOrder])
    expect(names((await t.api('GET', '/templates', none.key)).body)).toEqual([ids.deployment])
  })

  test('filters status, name and language; pages with has_more', async () => {
    const q = async (query: string) => (await t.api('GET', `/templates?${query}`, a.key)).body
    expect(names(await q('status=approved'))).toEqual([ids.order])
    expect(names(await q('name=order_update'))).toEqual([ids.rejected, ids.order])
    expect(names(await q('name=order_update&language=id'))).toEqual([ids.rejected])
    expect(names(await q('language=id&status=pending'))).toEqual([ids.receipt])
    expect(names(await q('name=nothing'))).toEqual([])
    const page = await q('limit=2&offset=1')
    expect(names(page)).toEqual([ids.receipt, ids.order])
    expect(page.data).toMatchObject({ total: 3, limit: 2, offset: 1, has_more: false })
    expect((await q('limit=1')).data).toMatchObject({ total: 3, has_more: true })
  })

  test('an unknown status or a bad page is 422 naming it', async () => {
    const bad = await t.api('GET', '/templates?status=live', a.key)
    expect([bad.status, bad.body.code]).toEqual([422, 'VALIDATION_ERROR'])
    expect(bad.body.error).toStartWith('status: must be one of draft, pending, approved')
    expect((await t.api('GET', '/templates?limit=500', a.key)).status).toBe(422)
  })
})

test("the integrator's OpenAPI document describes both routes with the parameters' model", async () => {
  const api = (await t.request('GET', '/docs/json')).body
  const list = api.paths['/api/v1/templates'].get
  expect(list.parameters.map((p: any) => p.name).sort()).toEqual(['language', 'limit', 'name', 'offset', 'status'])
  const item = list.responses['200'].content['application/json'].schema.properties.data.properties.items.items
  expect(Object.keys(item.properties.parameters.properties).sort()).toEqual(['body', 'buttons', 'header'])
  expect(item.properties.sender).toBeDefined()
  const one = api.paths['/api/v1/templates/{id}'].get
  expect(Object.keys(one.responses)).toEqual(expect.arrayContaining(['200', '401', '404']))
})
