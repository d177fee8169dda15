// A new template with the name and language of a deleted one (issue 30): Meta keeps them from a new
// template for 30 days after the deletion ("New English (US) content can't be added while the existing
// English (US) content is being deleted", error_subcode 2388023). When the service knows the deletion's
// time (it deleted the template, or Meta's webhook said so) it answers 409 CONFLICT before asking Meta;
// when it does not (a sync found the template gone, or it never had it), Meta's refusal is answered the
// same way, 409 CONFLICT with Meta's words and code. After the 30 days the name and language are taken
// again: a new template beside the deleted one, which keeps its history.

import { afterAll, afterEach, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { fakeGraph } from '../helpers/fake-graph'
import { fakeTwilio } from '../helpers/fake-twilio'
import { META_A, createSender, registerFakes, sendersEnv } from '../helpers/senders'
import { TestClock } from '../../src/lib/clock'

const WABA_A = META_A.credentials.business_account_id
const DAY = 86_400_000
const clock = new TestClock()
const twilio = fakeTwilio()
const graph = fakeGraph({ clock })
registerFakes(twilio, graph)
graph.accountOf.set(META_A.credentials.phone_number_id, WABA_A)

let t: TestApp
let metaA: number

beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph), clock })
  graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
  metaA = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})
afterEach(() => graph.reset())

const definition = (name: string, language = 'en_US') => ({
  name,
  language,
  category: 'UTILITY',
  components: [{ type: 'BODY', text: 'Invoice {{1}} is due.', example: { body_text: [['INV-1']] } }],
})
const creations = () => graph.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/message_templates')).length
const create = (name: string, language?: string) => t.admin('POST', `/senders/${metaA}/templates`, definition(name, language))

test('deleted here less than 30 days ago: 409 CONFLICT before asking Meta; after 30 days a new template beside the deleted one', async () => {
  const first = await create('invoice_reuse')
  expect(first.status).toBe(201)
  expect((await t.admin('DELETE', `/whatsapp-templates/${first.body.data.id}`)).body.data.status).toBe('deleted')

  await clock.advance(29 * DAY)
  const before = creations()
  const refused = await create('invoice_reuse')
  expect(refused.status).toBe(409)
  expect(refused.body).toMatchObject({ success: false, code: 'CONFLICT' })
  expect(refused.body.error).toContain('was deleted less than 30 days ago')
  expect(refused.body.error).toContain('use another name, or wait (until ')
  expect(creations()).toBe(before)
  // A name never deleted is created as usual.
  expect((await create('invoice_other')).status).toBe(201)

  await clock.advance(DAY + 60_000)
  const again = await create('invoice_reuse')
  expect(again.status).toBe(201)
  expect(again.body.data).toMatchObject({ name: 'invoice_reuse', language: 'en_US', status: 'pending' })
  expect(again.body.data.id).not.toBe(first.body.data.id)
  const old = (await t.admin('GET', `/whatsapp-templates/${first.body.data.id}`)).body.data
  expect(old.status).toBe('deleted')
  expect(old.history.map((h: any) => h.new)).toEqual(['pending', 'deleted'])
  const list = (await t.admin('GET', `/senders/${metaA}/templates`)).body.data.filter((x: any) => x.name === 'invoice_reuse')
  expect(list.map((x: any) => x.status).sort()).toEqual(['deleted', 'pending'])
  // A sync takes Meta's new template for the new row, and leaves the deleted one as it is.
  const sync = await t.admin('POST', `/senders/${metaA}/templates/sync`)
  expect(sync.status).toBe(200)
  const synced = (await t.admin('GET', `/senders/${metaA}/templates`)).body.data.filter((x: any) => x.name === 'invoice_reuse')
  expect(synced.map((x: any) => [x.id, x.status]).sort()).toEqual(
    [
      [first.body.data.id, 'deleted'],
      [again.body.data.id, 'pending'],
    ].sort(),
  )
})

test("Meta's PENDING_DELETION said by webhook: 409 CONFLICT before asking Meta", async () => {
  const first = await create('invoice_pending_deletion')
  expect(first.status).toBe(201)
  const ref = first.body.data.provider_ref
  expect((await graph.changeTemplate({ waba: WABA_A, id: ref, status: 'PENDING_DELETION' })).status).toBe(200)
  expect((await t.admin('GET', `/whatsapp-templates/${first.body.data.id}`)).body.data.status).toBe('pending_deletion')
  const before = creations()
  const refused = await create('invoice_pending_deletion')
  expect(refused.status).toBe(409)
  expect(refused.body.code).toBe('CONFLICT')
  expect(refused.body.error).toContain('is being deleted at meta')
  expect(creations()).toBe(before)
})

test("deleted at Meta without the service knowing when: Meta's refusal (2388023) is 409 CONFLICT with its words, nothing stored", async () => {
  // Deleted in WhatsApp Manager: the next sync finds it gone, not when it went.
  const fake = graph.template(WABA_A, {
    name: 'invoice_gone',
    language: 'en_US',
    category: 'UTILITY',
    status: 'APPROVED',
    components: definition('x').components,
  })
  expect((await t.admin('POST', `/senders/${metaA}/templates/sync`)).status).toBe(200)
  graph.templates.set(
    WABA_A,
    graph.templates.get(WABA_A)!.filter((x) => x !== fake),
  )
  graph.deletedNames.set(WABA_A, new Map([['invoice_gone', graph.now()]]))
  await clock.advance(60_000)
  const sync = await t.admin('POST', `/senders/${metaA}/templates/sync`)
  expect(sync.body.data.gone).toBe(1)

  const before = creations()
  const refused = await create('invoice_gone')
  expect(creations()).toBe(before + 1)
  expect(refused.status).toBe(409)
  expect(refused.body).toMatchObject({ success: false, code: 'CONFLICT', provider_code: 100 })
  expect(refused.body.error).toContain('its name and language are taken at meta')
  expect(refused.body.error).toContain("New English (US) content can't be added while the existing English (US) content is being deleted")
  const list = (await t.admin('GET', `/senders/${metaA}/templates`)).body.data.filter((x: any) => x.name === 'invoice_gone')
  expect(list.map((x: any) => x.status)).toEqual(['deleted'])

  // A name the service never had, deleted at Meta: the same answer.
  graph.deletedNames.get(WABA_A)!.set('invoice_never_here', graph.now())
  const never = await create('invoice_never_here', 'id')
  expect(never.status).toBe(409)
  expect(never.body.error).toContain("New Indonesian content can't be added")
})
