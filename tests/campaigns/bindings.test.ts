// Binding account templates to providers' approved templates through the admin API: each provider's
// naming rules, variables taken from the template's placeholders, one binding per provider (replaced
// by a second PUT), the campaign lock, a text change that would drop a bound placeholder, removal,
// and the routes in the operator's OpenAPI document.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

const SID = 'HX0123456789abcdef0123456789abcdef'

async function template(body = 'Hi {{name}}, see you in {{city}}') {
  const a = await t.account(0)
  const made = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'bound', body })
  return { ...a, id: made.body.data.id as number }
}

test('bind for twilio and meta at once; the template shows both; a second PUT replaces one; DELETE removes it', async () => {
  const a = await template()
  const twilio = await t.admin('PUT', `/templates/${a.id}/bindings/twilio`, { ref: SID, variables: ['city', 'name'] })
  expect(twilio.status).toBe(200)
  expect(twilio.body.data).toEqual({
    provider: 'twilio',
    ref: SID,
    language: null,
    variables: ['city', 'name'],
    updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
  })
  const meta = await t.admin('PUT', `/templates/${a.id}/bindings/meta`, { ref: 'see_you', language: 'id', variables: ['name'] })
  expect(meta.status).toBe(200)
  const shown = await t.admin('GET', `/templates/${a.id}`)
  expect(shown.body.data.bindings.map((b: { provider: string; ref: string }) => [b.provider, b.ref])).toEqual([
    ['meta', 'see_you'],
    ['twilio', SID],
  ])
  const listed = await t.admin('GET', `/accounts/${a.accountId}/templates`)
  expect(listed.body.data.items[0].bindings).toEqual(shown.body.data.bindings)

  // One binding per provider: binding again replaces it.
  const again = await t.admin('PUT', `/templates/${a.id}/bindings/twilio`, { ref: SID.replace('0123', 'ffff'), variables: [] })
  expect(again.body.data).toMatchObject({ ref: SID.replace('0123', 'ffff'), variables: [] })
  const [count] = await t.db.sql`select count(*)::int as n from template_bindings where template_id = ${a.id}`
  expect(count!.n).toBe(2)

  expect((await t.admin('DELETE', `/templates/${a.id}/bindings/twilio`)).body).toEqual({ success: true, data: { deleted: true } })
  const gone = await t.admin('DELETE', `/templates/${a.id}/bindings/twilio`)
  expect([gone.status, gone.body.error]).toEqual([404, `template ${a.id} has no twilio binding`])
  expect((await t.admin('GET', `/templates/${a.id}`)).body.data.bindings.map((b: { provider: string }) => b.provider)).toEqual(['meta'])

  // The simulator takes any name, with or without a language.
  const sim = await t.admin('PUT', `/templates/${a.id}/bindings/simulator`, { ref: 'Order-Ready.v2', language: 'en_US' })
  expect(sim.body.data).toMatchObject({ provider: 'simulator', ref: 'Order-Ready.v2', language: 'en_US', variables: [] })

  // A deleted template takes its bindings with it.
  expect((await t.admin('DELETE', `/templates/${a.id}`)).status).toBe(200)
  const [left] = await t.db.sql`select count(*)::int as n from template_bindings where template_id = ${a.id}`
  expect(left!.n).toBe(0)
})

test("422 for each provider's naming rules and for variables that are not the template's placeholders", async () => {
  const a = await template()
  const uses = `template ${a.id} (it uses: name, city)`
  const cases: [string, Record<string, unknown>, string][] = [
    ['twilio', { ref: 'HX123' }, 'ref: must be a Content SID: HX followed by 32 hex characters'],
    ['twilio', { ref: `MG${SID.slice(2)}` }, 'ref: must be a Content SID: HX followed by 32 hex characters'],
    ['twilio', { ref: SID, language: 'en_US' }, 'language: twilio templates have no language code'],
    ['meta', { ref: 'Order Ready', language: 'id' }, 'ref: must be a template name: lowercase letters, digits and underscores'],
    ['meta', { ref: 'order_ready' }, 'language: required for meta templates (e.g. en_US, id)'],
    ['meta', { ref: 'order_ready', language: 'Indonesian' }, 'language: must be a language code such as en_US or id'],
    ['simulator', { ref: 'has space' }, 'ref: must be 1 to 512 printable characters without spaces'],
    ['twilio', { ref: SID, variables: ['name', 'email'] }, `variables[1]: "email" is not a placeholder of ${uses}`],
    ['twilio', { ref: SID, variables: ['first_name'] }, `variables[0]: "first_name" is not a placeholder of ${uses}`],
    ['twilio', { ref: SID, variables: Array.from({ length: 101 }, () => 'name') }, 'variables: at most 100'],
    ['whatsapp', { ref: SID }, 'provider: must be one of simulator, twilio, meta (the providers that send approved templates)'],
  ]
  for (const [provider, body, error] of cases) {
    const res = await t.admin('PUT', `/templates/${a.id}/bindings/${provider}`, body)
    expect({ provider, body, status: res.status, answer: res.body }).toEqual({
      provider,
      body,
      status: 422,
      answer: errorEnvelope(res.headers, 'VALIDATION_ERROR', error),
    })
  }
  // Shape errors are 400; unknown templates 404; the admin token first.
  const shapes: [Record<string, unknown>, string][] = [
    [{}, 'ref: is required'],
    [{ ref: 5 }, 'ref: must be a string'],
    [{ ref: SID, variables: 'name' }, 'variables: must be an array'],
    [{ ref: SID, variables: [1] }, 'variables[0]: must be a string'],
    [{ ref: SID, Variables: [] }, 'Variables: unknown field'],
  ]
  for (const [body, error] of shapes) {
    const res = await t.admin('PUT', `/templates/${a.id}/bindings/twilio`, body)
    expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status: 400, error })
  }
  expect((await t.admin('PUT', '/templates/987654321/bindings/twilio', { ref: SID })).status).toBe(404)
  expect((await t.admin('DELETE', '/templates/987654321/bindings/twilio')).status).toBe(404)
  expect((await t.request('PUT', `/admin/v1/templates/${a.id}/bindings/twilio`, { body: { ref: SID } })).status).toBe(401)
  expect((await t.admin('GET', `/templates/${a.id}`)).body.data.bindings).toEqual([])
})

test('a bound placeholder stays in the text; a running campaign locks the bindings as it locks the text', async () => {
  const a = await template()
  await t.admin('PUT', `/templates/${a.id}/bindings/twilio`, { ref: SID, variables: ['city'] })
  const dropped = await t.admin('PATCH', `/templates/${a.id}`, { body: 'Hi {{name}}' })
  expect([dropped.status, dropped.body.error]).toEqual([
    422,
    'body: the twilio binding uses {{city}}; keep it in the text, or change the binding first',
  ])
  expect((await t.admin('PATCH', `/templates/${a.id}`, { body: 'Welcome to {{ city }}' })).status).toBe(200)

  // A paused campaign (no balance) uses it: neither its text nor its bindings change.
  await t.api('POST', '/contacts', a.key, { name: 'V', phone: '081234567890', tags: 'vip' })
  const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 's', tag: 'vip' })
  const campaign = await t.api('POST', '/campaigns', a.key, { name: 'c', template_id: a.id, segment_id: segment.body.data.id })
  const campaignId = campaign.body.data.campaign.id
  await t.admin('POST', `/campaigns/${campaignId}/run`)
  await t.runWorker('campaign-runner')
  expect((await t.admin('GET', `/campaigns/${campaignId}`)).body.data.campaign.status).toBe('paused')
  for (const [method, body] of [
    ['PUT', { ref: SID, variables: [] }],
    ['DELETE', undefined],
  ] as const) {
    const res = await t.admin(method, `/templates/${a.id}/bindings/twilio`, body)
    expect([res.status, res.body.error]).toEqual([409, `template ${a.id} is used by running campaign ${campaignId}`])
  }
  await t.admin('POST', `/campaigns/${campaignId}/cancel`)
  expect((await t.admin('DELETE', `/templates/${a.id}/bindings/twilio`)).status).toBe(200)
})

test("the binding routes are in the operator's OpenAPI document, not the integrator's", async () => {
  const admin = (await t.request('GET', '/docs/admin/json')).body
  const path = admin.paths['/admin/v1/templates/{id}/bindings/{provider}']
  expect(Object.keys(path).sort()).toEqual(['delete', 'put'])
  expect(path.put.requestBody.content['application/json'].schema.properties.variables.type).toBe('array')
  expect(Object.keys(path.put.responses).sort()).toEqual(expect.arrayContaining(['200', '400', '404', '409', '422']))
  expect(admin.paths['/admin/v1/simulator/inbound'].post).toBeDefined()
  const api = (await t.request('GET', '/docs/json')).body
  expect(Object.keys(api.paths).some((p) => p.includes('bindings'))).toBe(false)
  // The integrator's document has the extension of send and bulk.
  const send = api.paths['/api/v1/messages/send'].post.requestBody.content['application/json'].schema
  expect(send.required).toEqual(['to'])
  expect(Object.keys(send.properties)).toEqual(
    expect.arrayContaining(['to', 'body', 'media_url', 'template_id', 'variables', 'validity_seconds', 'from']),
  )
  expect(send.properties.variables.additionalProperties.type).toBe('string')
})
