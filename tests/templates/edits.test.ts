// Editing and deleting WhatsApp templates through the admin API, as the providers allow (issue 30),
// against the fake Graph API and the fake Twilio: Meta's edit (POST /{template-id}) of an approved,
// rejected or paused template, with Meta's refusals (another status, an approved one's category, its
// edit limit) foreseen where the service can and passed on where it cannot; Meta's deletion of one
// language (name and hsm_id); Twilio's deletion of a Content template and its refusal to edit one; the
// simulator's both. A deleted template stops sending (TEMPLATE_NOT_APPROVED naming `deleted`, nothing
// charged, nothing reaches Meta) and a running campaign of it pauses with that reason. A sender's
// templates are synced when it is created and when it is checked; a sync that fails there never fails
// the create or the check, and its error is kept and shown.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeGraph, type FakeTemplate } from '../helpers/fake-graph'
import { fakeTwilio } from '../helpers/fake-twilio'
import { META_A, META_B, SECRET_VALUES, TWILIO_A, assign, createSender, registerFakes, sendersEnv } from '../helpers/senders'
import { TestClock } from '../../src/lib/clock'

const WABA_A = META_A.credentials.business_account_id
const WABA_B = META_B.credentials.business_account_id
const clock = new TestClock()
const twilio = fakeTwilio()
const graph = fakeGraph({ clock })
registerFakes(twilio, graph)
graph.accountOf.set(META_A.credentials.phone_number_id, WABA_A)
graph.accountOf.set(META_B.credentials.phone_number_id, WABA_B)

let t: TestApp
let metaA: number
let twilioA: number
let simulator: number

beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph, { SIM_TEMPLATE_APPROVAL_MS: '1000' }), clock })
  metaA = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
  twilioA = await createSender(t, 'twilio', TWILIO_A, { recipient_gap_ms: 0 })
  simulator = await createSender(t, 'simulator', { number: '+6281100000098', credentials: {} })
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})
afterEach(() => {
  graph.reset()
  twilio.reset()
})

const body = (text: string, example: string[] = ['INV-1']) => ({ type: 'BODY', text, example: { body_text: [example] } })
let serial = 0

/** A template of Meta A's business account, synced here; its row and the fake's. */
async function metaTemplate(status = 'APPROVED', over: Partial<FakeTemplate> = {}) {
  const name = `edit_${++serial}`
  const fake = graph.template(WABA_A, {
    name,
    language: 'id',
    category: 'UTILITY',
    status,
    parameter_format: 'POSITIONAL',
    components: [body('Tagihan {{1}} jatuh tempo.')],
    ...over,
  })
  expect((await t.admin('POST', `/senders/${metaA}/templates/sync`)).status).toBe(200)
  const list = (await t.admin('GET', `/senders/${metaA}/templates`)).body.data
  graph.reset()
  return { row: list.find((x: any) => x.name === name && x.language === (over.language ?? 'id')), fake }
}

const history = async (id: number) =>
  (await t.admin('GET', `/whatsapp-templates/${id}`)).body.data.history.map((h: any) => [h.field, h.old, h.new, h.source])

describe('Meta: edit', () => {
  test('an approved template: its new components go to POST /{template-id}; it is pending until Meta approves the edit', async () => {
    const { row, fake } = await metaTemplate()
    const components = [body('Tagihan {{1}} jatuh tempo besok.')]
    const edited = await t.admin('PATCH', `/whatsapp-templates/${row.id}`, { components })
    expect(edited.status).toBe(200)
    expect(edited.body.data).toMatchObject({ id: row.id, status: 'pending', components, category: 'utility' })
    expect(graph.requests.map((r) => [r.method, r.path])).toEqual([['POST', `/v21.0/${fake.id}`]])
    expect(JSON.parse(graph.requests[0]!.body)).toEqual({ components })
    expect(graph.requests[0]!.headers.get('authorization')).toBe(`Bearer ${META_A.credentials.access_token}`)
    expect(fake).toMatchObject({ status: 'PENDING', components })
    expect(await history(row.id)).toEqual([
      ['created', null, 'approved', 'sync'],
      ['components', null, null, 'operator'],
      ['status', 'approved', 'pending', 'operator'],
    ])
    const audit = await t.db
      .sql`select action, detail from audit_log where action = 'template edited' and (detail->>'template_id')::bigint = ${row.id}`
    expect(audit).toHaveLength(1)

    // Pending: Meta edits no such template; refused before anything is sent.
    graph.reset()
    const again = await t.admin('PATCH', `/whatsapp-templates/${row.id}`, { components: [body('Lagi {{1}}.')] })
    expect(again.status).toBe(409)
    expect(again.body.error).toContain('is pending: only an approved, rejected or paused template can be edited')
    expect(graph.requests.map((r) => [r.method, r.path])).toEqual([])
  })

  test("Meta's edit limit (an approved template once a day) is Meta's refusal: 502 with its words, nothing changes here", async () => {
    const { row, fake } = await metaTemplate()
    expect((await t.admin('PATCH', `/whatsapp-templates/${row.id}`, { components: [body('Satu {{1}}.')] })).status).toBe(200)
    // Meta approves the edit; the sync says so; a second edit the same day is refused by Meta.
    fake.status = 'APPROVED'
    expect((await t.admin('POST', `/senders/${metaA}/templates/sync`)).status).toBe(200)
    graph.reset()
    graph.edits.set(fake.id, [graph.now()])
    const refused = await t.admin('PATCH', `/whatsapp-templates/${row.id}`, { components: [body('Dua {{1}}.')] })
    expect(refused.status).toBe(502)
    expect(refused.body.code).toBe('BAD_GATEWAY')
    expect(refused.body.error).toContain('Edit limit reached')
    expect(refused.body.provider_code).toBe(100)
    const now = (await t.admin('GET', `/whatsapp-templates/${row.id}`)).body.data
    expect(now).toMatchObject({ status: 'approved', components: [body('Satu {{1}}.')] })
    for (const secret of SECRET_VALUES) expect(JSON.stringify(refused.body)).not.toContain(secret)
  })

  test("foreseeable refusals never reach Meta: an approved one's category, a name, the same content, a broken part", async () => {
    const { row } = await metaTemplate()
    const cases: [Record<string, unknown>, number, string][] = [
      [{ components: [body('Baru {{1}}.')], category: 'MARKETING' }, 422, 'category: an approved template keeps its category (utility)'],
      [{ components: [body('Baru {{1}}.')], name: 'other_name' }, 422, "name: a template's name never changes"],
      [{ components: [body('Baru {{1}}.')], parameter_format: 'NAMED' }, 422, "parameter_format: an edit keeps the template's"],
      [{ components: [body('Tagihan {{1}} jatuh tempo.')] }, 422, 'nothing to edit'],
      [{ components: [{ type: 'BODY', text: '{{1}}' }] }, 422, 'components'],
    ]
    for (const [change, status, words] of cases) {
      const answer = await t.admin('PATCH', `/whatsapp-templates/${row.id}`, change)
      expect([answer.status, answer.body.error]).toEqual([status, expect.stringContaining(words)])
    }
    expect(graph.requests).toHaveLength(0)
    expect((await t.admin('PATCH', '/whatsapp-templates/999999999', { components: [body('x {{1}}')] })).status).toBe(404)
  })

  test('a rejected template may change its category: sent to Meta with the components', async () => {
    const { row, fake } = await metaTemplate('REJECTED', { rejected_reason: 'INCORRECT_CATEGORY', category: 'UTILITY' })
    const components = [body('Promo {{1}} hari ini.')]
    const edited = await t.admin('PATCH', `/whatsapp-templates/${row.id}`, { components, category: 'MARKETING' })
    expect(edited.status).toBe(200)
    expect(edited.body.data).toMatchObject({ status: 'pending', category: 'marketing', reason: null })
    expect(JSON.parse(graph.requests[0]!.body)).toEqual({ components, category: 'MARKETING' })
    expect(fake.category).toBe('MARKETING')
  })
})

describe('Meta: delete', () => {
  test('one language goes (name and hsm_id); sends of it stop, uncharged; a running campaign of it pauses naming it', async () => {
    const { row, fake } = await metaTemplate()
    const english = graph.template(WABA_A, { ...fake, id: undefined, language: 'en_US' })
    expect((await t.admin('POST', `/senders/${metaA}/templates/sync`)).status).toBe(200)
    graph.reset()

    const shop = await t.account(1_000, { price: 10 })
    await assign(t, shop.accountId, metaA, true)
    expect((await t.api('POST', '/contacts', shop.key, { name: 'Budi', phone: '081200000031', tags: 'vip' })).status).toBe(201)
    const segment = await t.admin('POST', `/accounts/${shop.accountId}/segments`, { name: 'vips', tag: 'vip' })
    const campaign = await t.api('POST', '/campaigns', shop.key, {
      name: 'due',
      template_id: row.id,
      segment_id: segment.body.data.id,
      parameters: { variables: { '1': { constant: 'INV-9' } } },
    })
    expect(campaign.status).toBe(201)
    const campaignId: number = campaign.body.data.campaign.id
    expect((await t.admin('POST', `/campaigns/${campaignId}/run`)).status).toBe(200)

    const deleted = await t.admin('DELETE', `/whatsapp-templates/${row.id}`)
    expect(deleted.status).toBe(200)
    expect(deleted.body.data).toMatchObject({ id: row.id, status: 'deleted', reason: 'deleted by the operator' })
    expect(graph.requests.map((r) => [r.method, r.path])).toEqual([['DELETE', `/v21.0/${WABA_A}/message_templates`]])
    expect(Object.fromEntries(new URLSearchParams(graph.requests[0]!.query))).toEqual({ name: fake.name, hsm_id: fake.id })
    expect(graph.requests[0]!.query).not.toContain(META_A.credentials.access_token)
    // Only that language is gone at Meta.
    expect(
      graph.templates
        .get(WABA_A)!
        .filter((x) => x.name === fake.name)
        .map((x) => x.id),
    ).toEqual([english.id])
    expect((await history(row.id)).at(-1)).toEqual(['status', 'approved', 'deleted', 'operator'])

    graph.reset()
    const send = await t.api('POST', '/messages/send', shop.key, { to: '081200000031', template_id: row.id, variables: { '1': 'INV-1' } })
    expect(send.status).toBe(422)
    expect(send.body.code).toBe('TEMPLATE_NOT_APPROVED')
    expect(send.body.error).toContain(`template ${row.id} (${fake.name}, id) is deleted`)
    await t.runWorker('campaign-runner')
    const detail = (await t.admin('GET', `/campaigns/${campaignId}`)).body.data
    expect(detail.campaign.status).toBe('paused')
    expect(detail.campaign.pause_reason).toStartWith(`TEMPLATE_NOT_APPROVED: template ${row.id} (${fake.name}, id) is deleted`)
    expect(graph.requests).toHaveLength(0)
    expect(await money(t, shop.accountId)).toEqual({ balance: 1_000, ledgerSum: 1_000 })

    // Deleting it again changes nothing and asks Meta nothing.
    expect((await t.admin('DELETE', `/whatsapp-templates/${row.id}`)).body.data.status).toBe('deleted')
    expect(graph.requests).toHaveLength(0)
  })

  test("Meta's refusal keeps the template as it was: 502", async () => {
    const { row, fake } = await metaTemplate()
    graph.templates.set(
      WABA_A,
      graph.templates.get(WABA_A)!.filter((x) => x.id !== fake.id),
    )
    const refused = await t.admin('DELETE', `/whatsapp-templates/${row.id}`)
    expect(refused.status).toBe(502)
    expect(refused.body.error).toContain('was not found')
    expect((await t.admin('GET', `/whatsapp-templates/${row.id}`)).body.data.status).toBe('approved')
  })
})

describe('Twilio and the simulator', () => {
  test('Twilio edits no Content template (422, nothing sent) and deletes one (DELETE /v1/Content/{sid})', async () => {
    const sid = twilio.content(
      TWILIO_A.credentials.account_sid,
      { friendly_name: 'due', language: 'id', variables: { '1': 'INV-1' }, types: { 'twilio/text': { body: 'Tagihan {{1}}.' } } },
      { name: 'due_notice', status: 'approved' },
    )
    expect((await t.admin('POST', `/senders/${twilioA}/templates/sync`)).status).toBe(200)
    const row = (await t.admin('GET', `/senders/${twilioA}/templates`)).body.data.find((x: any) => x.provider_ref === sid)
    twilio.reset()
    const edit = await t.admin('PATCH', `/whatsapp-templates/${row.id}`, { components: [body('Baru {{1}}.')] })
    expect(edit.status).toBe(422)
    expect(edit.body.error).toContain('twilio does not edit templates')
    expect(edit.body.error).toContain('create a new template')
    expect(twilio.requests).toHaveLength(0)

    const deleted = await t.admin('DELETE', `/whatsapp-templates/${row.id}`)
    expect(deleted.status).toBe(200)
    expect(deleted.body.data.status).toBe('deleted')
    expect(twilio.requests.map((r) => [r.method, r.path])).toEqual([['DELETE', `/v1/Content/${sid}`]])
    expect(twilio.contents.has(sid)).toBe(false)
  })

  test('a simulator template: an edit is reviewed again by the simulator; a deletion is here only', async () => {
    const created = await t.admin('POST', `/senders/${simulator}/templates`, {
      name: 'sim_edit',
      language: 'id',
      category: 'UTILITY',
      components: [body('Halo {{1}}.')],
    })
    expect(created.status).toBe(201)
    const id: number = created.body.data.id
    clock.advance(1_500)
    await t.runWorker('simulator-reports')
    expect((await t.admin('GET', `/whatsapp-templates/${id}`)).body.data.status).toBe('approved')
    const edited = await t.admin('PATCH', `/whatsapp-templates/${id}`, { components: [body('Halo lagi {{1}}.')] })
    expect(edited.body.data.status).toBe('pending')
    clock.advance(1_500)
    await t.runWorker('simulator-reports')
    expect((await t.admin('GET', `/whatsapp-templates/${id}`)).body.data.status).toBe('approved')
    const deleted = await t.admin('DELETE', `/whatsapp-templates/${id}`)
    expect(deleted.body.data.status).toBe('deleted')
    expect(graph.requests).toHaveLength(0)
    expect(twilio.requests).toHaveLength(0)
  })
})

describe('sync when a sender is created or checked', () => {
  test('a Meta sender created: its templates are synced at once; checked: synced again', async () => {
    graph.templates.delete(WABA_B)
    graph.template(WABA_B, {
      name: 'welcome',
      language: 'id',
      category: 'MARKETING',
      status: 'APPROVED',
      components: [body('Halo {{1}}.')],
    })
    const made = await t.admin('POST', '/senders', { provider: 'meta', name: 'Meta B', ...META_B })
    expect(made.status).toBe(201)
    const id: number = made.body.data.id
    expect(made.body.data.templates_sync).toEqual({ ok: true, detail: '1 listed by meta, 1 new, 0 changed, 0 unchanged, 0 gone' })
    expect((await t.admin('GET', `/senders/${id}/templates`)).body.data.map((x: any) => [x.name, x.status])).toEqual([
      ['welcome', 'approved'],
    ])

    graph.templates.get(WABA_B)![0]!.status = 'PAUSED'
    const checked = await t.admin('POST', `/senders/${id}/check`)
    expect(checked.status).toBe(200)
    expect(checked.body.data.last_check.ok).toBe(true)
    expect(checked.body.data.templates_sync).toEqual({ ok: true, detail: '1 listed by meta, 0 new, 1 changed, 0 unchanged, 0 gone' })
    const row = await t.db.sql`select trigger, ok from sender_template_syncs where sender_id = ${id}`
    expect([...row]).toEqual([{ trigger: 'checked', ok: true }])
  })

  test('a sync that fails never fails the create or the check: its error is kept and shown, no credential in it', async () => {
    // Meta refuses the listing (its business account is not this token's): the sender is created all the same.
    const made = await t.admin('POST', '/senders', {
      provider: 'meta',
      name: 'Meta elsewhere',
      ...META_A,
      number: '+6281100000077',
      credentials: { ...META_A.credentials, phone_number_id: '100000000000077', business_account_id: WABA_B },
    })
    // The fake knows no phone number 100000000000077: its check fails too, so only the create's sync is tried.
    expect(made.status).toBe(201)
    expect(made.body.data.templates_sync.ok).toBe(false)
    expect(made.body.data.templates_sync.detail).toContain('meta did not list the templates')
    for (const secret of SECRET_VALUES) expect(JSON.stringify(made.body)).not.toContain(secret)
    const [kept] = await t.db.sql`select trigger, ok, detail from sender_template_syncs where sender_id = ${made.body.data.id}`
    expect(kept).toMatchObject({ trigger: 'created', ok: false })
    // A simulator sender has nothing to sync: null.
    const sim = await t.admin('POST', '/senders', { provider: 'simulator', name: 'Sim', number: '+6281100000076', credentials: {} })
    expect(sim.body.data.templates_sync).toBeNull()
  })
})
