// Templates changed from the dashboard (issue 30) through app.handle, against the fake Graph API:
// the operator lets an account's members create, edit and delete its own senders' WhatsApp templates
// (off by default, audited), and a member does so from the member's sender page. Attacked as a tenant:
// a member of account A, even with the permission, cannot create, edit or delete on account B's sender
// nor on the deployment's default sender (404, nothing stored, nothing sent to the fake); without the
// permission its own sender's forms are 404 too. The operator edits and deletes with a confirmation
// page; the deployment's default sender has a page of its own (its templates, sync, new template).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { fakeGraph, type FakeTemplate } from '../helpers/fake-graph'
import { fakeTwilio } from '../helpers/fake-twilio'
import { META_A, META_B, assign, createSender, registerFakes, sendersEnv } from '../helpers/senders'
import { dashboardUser } from '../helpers/web'
import { TestClock } from '../../src/lib/clock'

const WABA_A = META_A.credentials.business_account_id
const WABA_B = META_B.credentials.business_account_id
const PASSWORD = 'correct horse battery'
const clock = new TestClock()
const twilio = fakeTwilio()
const graph = fakeGraph({ clock })
registerFakes(twilio, graph)
graph.accountOf.set(META_A.credentials.phone_number_id, WABA_A)
graph.accountOf.set(META_B.credentials.phone_number_id, WABA_B)

let t: TestApp
let metaA: number
let metaB: number
let shopA: { accountId: number }
let shopB: { accountId: number }
let n = 0
const email = (what: string) => `${what}-${++n}@example.com`

const fakeTemplate = (name: string): Omit<FakeTemplate, 'id'> => ({
  name,
  language: 'id',
  category: 'UTILITY',
  status: 'APPROVED',
  parameter_format: 'POSITIONAL',
  components: [{ type: 'BODY', text: `${name}: tagihan {{1}}.`, example: { body_text: [['INV-1']] } }],
})

beforeAll(async () => {
  graph.template(WABA_A, fakeTemplate('a_notice'))
  graph.template(WABA_B, fakeTemplate('b_notice'))
  t = await testApp({ env: sendersEnv(twilio, graph), clock })
  // Created: each one's templates synced at once.
  metaA = await createSender(t, 'meta', META_A)
  metaB = await createSender(t, 'meta', META_B)
  shopA = await t.account(0)
  shopB = await t.account(0)
  await assign(t, shopA.accountId, metaA, true)
  await assign(t, shopB.accountId, metaB, true)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

const NEW = (name: string) =>
  JSON.stringify({
    name,
    language: 'id',
    category: 'UTILITY',
    components: [{ type: 'BODY', text: 'Pesanan {{1}} dikirim.', example: { body_text: [['A-1']] } }],
  })

/** The editor's fields (mode=fields) for the same kind of template as NEW; `step`: the editor's `do`. */
const FIELDS = (name: string, step = 'create') => ({
  mode: 'fields',
  do: step,
  name,
  language: 'id',
  category: 'UTILITY',
  parameter_format: 'POSITIONAL',
  header_format: '',
  body_text: 'Pesanan {{1}} dikirim.',
  body_examples: 'A-1',
  footer_text: '',
  buttons: '0',
})

const templateOf = async (senderId: number, name: string) => {
  const [row] = await t.db.sql<{ id: number; status: string }[]>`
    select id, status from wa_templates where sender_id = ${senderId} and name = ${name}`
  return row ? { id: Number(row.id), status: row.status } : null
}
const count = async () => (await t.db.sql<{ n: number }[]>`select count(*)::int as n from wa_templates`)[0]!.n
const changesToMeta = () => graph.requests.filter((r) => r.method !== 'GET')

describe("a member and its account's own senders", () => {
  test('without the permission: its sender page is read-only and every change is 404, nothing stored or sent', async () => {
    const member = (await dashboardUser(t, email('member'), PASSWORD, shopA.accountId)).client
    const overview = await member.get('/dashboard')
    expect(overview.text).toContain(`href="/dashboard/my-senders/${metaA}"`)
    const page = await member.get(`/dashboard/my-senders/${metaA}`)
    expect(page.status).toBe(200)
    expect(page.text).toContain('a_notice')
    expect(page.text).not.toContain('New template')
    const own = (await templateOf(metaA, 'a_notice'))!
    const before = await count()
    graph.reset()
    expect((await member.get(`/dashboard/my-senders/${metaA}/templates/new`)).status).toBe(404)
    expect((await member.get(`/dashboard/my-senders/${metaA}/templates/${own.id}/delete`)).status).toBe(404)
    for (const [path, form] of [
      [`/dashboard/my-senders/${metaA}/templates`, { definition: NEW('member_try') }],
      [`/dashboard/my-senders/${metaA}/templates`, FIELDS('member_try')],
      [`/dashboard/my-senders/${metaA}/templates`, FIELDS('member_try', 'preview')],
      [`/dashboard/my-senders/${metaA}/templates/${own.id}/edit`, { definition: '{"components":[]}' }],
      [`/dashboard/my-senders/${metaA}/templates/${own.id}/delete`, {}],
    ] as const) {
      expect({ path, status: (await member.post(path, { _csrf: page.csrf!, ...form })).status }).toEqual({ path, status: 404 })
    }
    expect(await count()).toBe(before)
    expect(changesToMeta()).toEqual([])
  })

  test('the operator allows it (audited): the member creates, edits and deletes on its own sender, recorded as a member', async () => {
    const op = (await dashboardUser(t, email('op'), PASSWORD)).client
    const account = await op.get(`/dashboard/accounts/${shopA.accountId}`)
    expect(account.text).toContain('Let members manage templates')
    const granted = await op.post(`/dashboard/accounts/${shopA.accountId}/template-rights`, { _csrf: account.csrf!, allowed: 'yes' })
    expect(granted.status).toBe(303)
    expect((await t.admin('GET', `/accounts/${shopA.accountId}/template-rights`)).body.data).toEqual({
      account_id: shopA.accountId,
      members_create_templates: true,
    })
    expect((await t.admin('GET', `/accounts/${shopB.accountId}/template-rights`)).body.data.members_create_templates).toBe(false)

    const member = (await dashboardUser(t, email('member'), PASSWORD, shopA.accountId)).client
    const form = await member.get(`/dashboard/my-senders/${metaA}/templates/new`)
    expect(form.status).toBe(200)
    // The member's "New template" is the field editor with its preview, the JSON the advanced way, both to its sender.
    expect(form.text).toContain('id="template-editor"')
    expect(form.text).toContain('id="template-preview"')
    expect(form.text).toContain('Advanced: the template as the Cloud API&#39;s JSON')
    expect(form.text.match(new RegExp(`action="/dashboard/my-senders/${metaA}/templates"`, 'g'))?.length).toBe(2)
    expect(form.text).toContain(`href="/dashboard/my-senders/${metaA}"`)
    graph.reset()
    const created = await member.post(`/dashboard/my-senders/${metaA}/templates`, { _csrf: form.csrf!, definition: NEW('member_made') })
    expect(created.status).toBe(303)
    const made = (await templateOf(metaA, 'member_made'))!
    expect(created.location).toBe(`/dashboard/my-senders/${metaA}/templates/${made.id}`)
    expect(changesToMeta().map((r) => [r.method, r.path])).toEqual([['POST', `/v21.0/${WABA_A}/message_templates`]])

    // Meta approves it; the member edits it, then deletes it (a confirmation page first).
    graph.templates.get(WABA_A)!.find((x) => x.name === 'member_made')!.status = 'APPROVED'
    await t.admin('POST', `/senders/${metaA}/templates/sync`)
    const shown = await member.get(`/dashboard/my-senders/${metaA}/templates/${made.id}`)
    expect(shown.text).toContain('Edit this template')
    const components = [{ type: 'BODY', text: 'Pesanan {{1}} sudah dikirim.', example: { body_text: [['A-1']] } }]
    const edited = await member.post(`/dashboard/my-senders/${metaA}/templates/${made.id}/edit`, {
      _csrf: shown.csrf!,
      definition: JSON.stringify({ components }),
    })
    expect(edited.status).toBe(303)
    expect((await templateOf(metaA, 'member_made'))!.status).toBe('pending')
    const confirm = await member.get(`/dashboard/my-senders/${metaA}/templates/${made.id}/delete`)
    expect(confirm.text).toContain('Delete template member_made')
    const deleted = await member.post(`/dashboard/my-senders/${metaA}/templates/${made.id}/delete`, { _csrf: confirm.csrf! })
    expect(deleted.status).toBe(303)
    expect((await templateOf(metaA, 'member_made'))!.status).toBe('deleted')

    const history = (await t.admin('GET', `/whatsapp-templates/${made.id}`)).body.data.history
    expect(history.map((h: any) => [h.field, h.source])).toEqual([
      ['created', 'member'],
      ['status', 'sync'],
      ['components', 'member'],
      ['status', 'member'],
      ['status', 'member'],
    ])
    const audited = await t.db.sql<{ action: string; account_id: number | null; actor: string }[]>`
      select action, account_id, actor from audit_log
      where action like 'template%' and (account_id = ${shopA.accountId} or detail->>'template_id' = ${String(made.id)}) order by id`
    expect(audited.map((a) => [a.action, a.account_id === null ? null : Number(a.account_id)])).toEqual([
      ['template rights granted', shopA.accountId],
      ['template created', shopA.accountId],
      ['template edited', shopA.accountId],
      ['template deleted', shopA.accountId],
    ])

    // Field by field too: Preview makes nothing; Create submits it to Meta, recorded as the member's.
    graph.reset()
    const previewed = await member.post(`/dashboard/my-senders/${metaA}/templates`, {
      _csrf: form.csrf!,
      ...FIELDS('member_fields', 'preview'),
    })
    expect(previewed.status).toBe(200)
    expect(previewed.text).toContain('aria-label="Preview of member_fields"')
    expect(await templateOf(metaA, 'member_fields')).toBeNull()
    const refused = await member.post(`/dashboard/my-senders/${metaA}/templates`, {
      _csrf: form.csrf!,
      ...FIELDS('member_fields'),
      body_examples: '',
    })
    expect(refused.status).toBe(422)
    expect(refused.text).toContain('id="editor-body_examples-error"')
    const byFields = await member.post(`/dashboard/my-senders/${metaA}/templates`, { _csrf: form.csrf!, ...FIELDS('member_fields') })
    expect(byFields.status).toBe(303)
    const fieldsMade = (await templateOf(metaA, 'member_fields'))!
    expect(byFields.location).toBe(`/dashboard/my-senders/${metaA}/templates/${fieldsMade.id}`)
    expect(changesToMeta().map((r) => [r.method, r.path])).toEqual([['POST', `/v21.0/${WABA_A}/message_templates`]])
    const fieldsHistory = (await t.admin('GET', `/whatsapp-templates/${fieldsMade.id}`)).body.data.history
    expect(fieldsHistory.map((h: any) => [h.field, h.source])).toEqual([['created', 'member']])
  })

  test("attacker: a member of A with the permission cannot touch B's sender or the default sender: 404, nothing stored or sent", async () => {
    await t.admin('PUT', `/accounts/${shopA.accountId}/template-rights`, { members_create_templates: true })
    const member = (await dashboardUser(t, email('attacker'), PASSWORD, shopA.accountId)).client
    const home = await member.get(`/dashboard/my-senders/${metaA}`)
    const victim = (await templateOf(metaB, 'b_notice'))!
    const before = await count()
    graph.reset()
    // Reading B's sender and the default sender: 404.
    for (const path of [
      `/dashboard/my-senders/${metaB}`,
      `/dashboard/my-senders/${metaB}/templates/new`,
      `/dashboard/my-senders/${metaB}/templates/${victim.id}`,
      `/dashboard/my-senders/0/templates/new`,
      `/dashboard/senders/${metaB}/templates/${victim.id}`,
    ]) {
      expect({ path, status: (await member.get(path)).status }).toEqual({ path, status: 404 })
    }
    // Creating, editing and deleting there: 404, by every path a member could try.
    const edit = { definition: JSON.stringify({ components: [{ type: 'BODY', text: 'Hacked {{1}}.', example: { body_text: [['x']] } }] }) }
    for (const [path, form] of [
      [`/dashboard/my-senders/${metaB}/templates`, { definition: NEW('stolen') }],
      [`/dashboard/my-senders/${metaB}/templates`, FIELDS('stolen_fields')],
      [`/dashboard/my-senders/${metaB}/templates`, FIELDS('stolen_fields', 'preview')],
      ['/dashboard/my-senders/0/templates', FIELDS('stolen_default_fields')],
      [`/dashboard/senders/${metaB}/templates`, FIELDS('stolen_op_fields')],
      ['/dashboard/my-senders/0/templates', { definition: NEW('stolen_default') }],
      [`/dashboard/my-senders/${metaB}/templates/${victim.id}/edit`, edit],
      [`/dashboard/my-senders/${metaB}/templates/${victim.id}/delete`, {}],
      [`/dashboard/my-senders/${metaA}/templates/${victim.id}/edit`, edit],
      [`/dashboard/my-senders/${metaA}/templates/${victim.id}/delete`, {}],
      [`/dashboard/senders/${metaB}/templates`, { definition: NEW('stolen_op') }],
      [`/dashboard/senders/${metaB}/templates/${victim.id}/delete`, {}],
      ['/dashboard/senders/0/templates', { definition: NEW('stolen_op_default') }],
    ] as const) {
      const answer = await member.post(path, { _csrf: home.csrf!, ...form })
      expect({ path, status: answer.status }).toEqual({ path, status: 404 })
    }
    expect(await count()).toBe(before)
    expect(await templateOf(metaB, 'b_notice')).toEqual(victim)
    expect(changesToMeta()).toEqual([])
    expect(graph.templates.get(WABA_B)!.map((x) => [x.name, x.status])).toEqual([['b_notice', 'APPROVED']])
  })
})

describe('the operator', () => {
  test('edits and deletes from a template page (a confirmation page first)', async () => {
    const op = (await dashboardUser(t, email('op'), PASSWORD)).client
    const own = (await templateOf(metaA, 'a_notice'))!
    const page = await op.get(`/dashboard/senders/${metaA}/templates/${own.id}`)
    expect(page.text).toContain('Edit this template')
    expect(page.text).toContain(`href="/dashboard/senders/${metaA}/templates/${own.id}/delete"`)
    graph.reset()
    const notJson = await op.post(`/dashboard/senders/${metaA}/templates/${own.id}/edit`, { _csrf: page.csrf!, definition: '{x' })
    expect(notJson.status).toBe(422)
    expect(notJson.text).toContain('id="edit-definition-error">definition: not JSON')
    const category = await op.post(`/dashboard/senders/${metaA}/templates/${own.id}/edit`, {
      _csrf: page.csrf!,
      definition: JSON.stringify({
        category: 'MARKETING',
        components: [{ type: 'BODY', text: 'Promo {{1}}.', example: { body_text: [['x']] } }],
      }),
    })
    expect(category.status).toBe(422)
    expect(category.text).toContain('an approved template keeps its category')
    expect(changesToMeta()).toEqual([])
    const confirm = await op.get(`/dashboard/senders/${metaA}/templates/${own.id}/delete`)
    expect(confirm.status).toBe(200)
    const deleted = await op.post(`/dashboard/senders/${metaA}/templates/${own.id}/delete`, { _csrf: confirm.csrf! })
    expect(deleted.status).toBe(303)
    const after = await op.follow(deleted)
    expect(after.text).toContain('deleted: it no longer sends')
    expect(changesToMeta().map((r) => r.method)).toEqual(['DELETE'])
  })

  test("the default sender's page: its templates, the sync button and a new template; linked from the senders page", async () => {
    const op = (await dashboardUser(t, email('op'), PASSWORD)).client
    const senders = await op.get('/dashboard/senders')
    expect(senders.text).toContain('href="/dashboard/senders/0/templates"')
    const page = await op.get('/dashboard/senders/0/templates')
    expect(page.status).toBe(200)
    expect(page.text).toContain('Sync templates')
    expect(page.text).toContain('href="/dashboard/senders/0/templates/new"')
    twilio.reset()
    const synced = await op.post('/dashboard/senders/0/templates/sync', { _csrf: page.csrf! })
    expect(synced.location).toBe('/dashboard/senders/0/templates')
    expect(twilio.requests.map((r) => r.path)).toEqual(['/v1/ContentAndApprovals'])
    const form = await op.get('/dashboard/senders/0/templates/new')
    expect(form.status).toBe(200)
    // The field editor and the JSON form, both to the default sender; its Preview works there too.
    expect(form.text).toContain('id="template-editor"')
    expect(form.text.match(/action="\/dashboard\/senders\/0\/templates"/g)?.length).toBe(2)
    expect(form.text).toContain('href="/dashboard/senders/0/templates"')
    const previewed = await op.post('/dashboard/senders/0/templates', { _csrf: form.csrf!, ...FIELDS('default_fields', 'preview') })
    expect(previewed.status).toBe(200)
    expect(previewed.text).toContain('aria-label="Preview of default_fields"')
  })
})
