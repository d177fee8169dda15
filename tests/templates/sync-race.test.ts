// A template sync racing Meta's webhooks and the operator (issue 30): a sync reads Meta's listing, then
// applies it; what changed here after the sync started (Meta's PAUSED webhook applied while the
// listing, read before it, was on its way; a template submitted meanwhile) is newer than the listing
// and keeps its word. The fake Graph API holds the listing's answer (holdTemplateLists) until the test
// has applied the newer word, so the race is played in this order every time; the test clock moves
// one second between the sync's start and the webhook, as time does.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { fakeGraph, type FakeGraph } from '../helpers/fake-graph'
import { fakeTwilio, type FakeTwilio } from '../helpers/fake-twilio'
import { META_A, createSender, registerFakes, sendersEnv } from '../helpers/senders'
import { TestClock } from '../../src/lib/clock'

const WABA_A = META_A.credentials.business_account_id

let t: TestApp
let twilio: FakeTwilio
let graph: FakeGraph
const clock = new TestClock()
let metaA: number

beforeAll(async () => {
  twilio = fakeTwilio()
  graph = fakeGraph({ clock })
  registerFakes(twilio, graph)
  graph.accountOf.set(META_A.credentials.phone_number_id, WABA_A)
  t = await testApp({ env: sendersEnv(twilio, graph), clock })
  graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
  metaA = await createSender(t, 'meta', META_A)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

const components = [{ type: 'BODY', text: 'Pesanan {{1}} sudah dikirim.', example: { body_text: [['A-1']] } }]

/** An approved template of Meta A at the fake, synced here: its id here and at Meta. */
async function synced(name: string): Promise<{ id: number; ref: string }> {
  const fake = graph.template(WABA_A, { name, language: 'id', category: 'UTILITY', status: 'APPROVED', components })
  expect((await t.admin('POST', `/senders/${metaA}/templates/sync`)).status).toBe(200)
  const list = await t.admin('GET', `/senders/${metaA}/templates`)
  const here = list.body.data.find((x: any) => x.name === name)
  expect(here).toMatchObject({ status: 'approved', provider_ref: fake.id })
  return { id: here.id, ref: fake.id }
}

/** Starts a sync whose listing Meta reads now and answers only when `release` is called. */
async function heldSync() {
  const hold = graph.holdTemplateLists()
  const answer = t.admin('POST', `/senders/${metaA}/templates/sync`)
  await hold.reached
  return { release: hold.release, answer }
}

test("Meta's PAUSED applied while a sync's older listing (APPROVED) is on its way: the sync leaves it paused", async () => {
  const { id, ref } = await synced('race_paused')
  const sync = await heldSync()
  // The listing says APPROVED (read at t1); Meta pauses the template at t2 and says so by webhook.
  await clock.advance(1_000)
  const webhook = await graph.changeTemplate({ waba: WABA_A, id: ref, status: 'PAUSED', reason: 'LOW_QUALITY' })
  expect(webhook.status).toBe(200)
  expect((await t.admin('GET', `/whatsapp-templates/${id}`)).body.data.status).toBe('paused')
  sync.release()
  const answer = await sync.answer
  expect(answer.status).toBe(200)
  expect(answer.body.data).toMatchObject({ changed: 0, gone: 0 })

  const one = (await t.admin('GET', `/whatsapp-templates/${id}`)).body.data
  expect(one).toMatchObject({ status: 'paused', reason: 'LOW_QUALITY' })
  // The history: Meta's pause, and no word of the sync's older APPROVED after it.
  const statuses = one.history.filter((h: any) => h.field === 'status').map((h: any) => [h.new, h.source])
  expect(statuses).toEqual([['paused', 'meta']])

  // The next sync reads Meta's listing as it now is (PAUSED): nothing to change.
  const next = await t.admin('POST', `/senders/${metaA}/templates/sync`)
  expect(next.body.data).toMatchObject({ changed: 0 })
  expect((await t.admin('GET', `/whatsapp-templates/${id}`)).body.data.status).toBe('paused')

  // Without a race the sync's word is taken: Meta approves it again, silently; the next sync reads it.
  graph.templates.get(WABA_A)!.find((x) => x.id === ref)!.status = 'APPROVED'
  await clock.advance(1_000)
  const later = await t.admin('POST', `/senders/${metaA}/templates/sync`)
  expect(later.body.data).toMatchObject({ changed: 1 })
  expect((await t.admin('GET', `/whatsapp-templates/${id}`)).body.data.status).toBe('approved')
})

test('a webhook applied before the sync started is older than its listing: the sync takes the listing', async () => {
  const { id, ref } = await synced('race_before')
  await graph.changeTemplate({ waba: WABA_A, id: ref, status: 'PAUSED', reason: 'LOW_QUALITY' })
  // Meta approves it again (no webhook reaches the service); the sync starts after the pause was applied.
  graph.templates.get(WABA_A)!.find((x) => x.id === ref)!.status = 'APPROVED'
  await clock.advance(1_000)
  const sync = await heldSync()
  await clock.advance(1_000)
  sync.release()
  expect((await sync.answer).body.data).toMatchObject({ changed: 1 })
  expect((await t.admin('GET', `/whatsapp-templates/${id}`)).body.data.status).toBe('approved')
})

test('a template submitted while the listing (read before it) is on its way is not taken for deleted', async () => {
  const sync = await heldSync()
  await clock.advance(1_000)
  const created = await t.admin('POST', `/senders/${metaA}/templates`, {
    name: 'race_submitted',
    language: 'id',
    category: 'UTILITY',
    components,
  })
  expect(created.status).toBe(201)
  sync.release()
  expect((await sync.answer).body.data).toMatchObject({ gone: 0 })
  const one = (await t.admin('GET', `/whatsapp-templates/${created.body.data.id}`)).body.data
  expect(one.status).toBe('pending')
  // The next sync lists it: still pending, as Meta has it.
  await clock.advance(1_000)
  expect((await t.admin('POST', `/senders/${metaA}/templates/sync`)).status).toBe(200)
  expect((await t.admin('GET', `/whatsapp-templates/${created.body.data.id}`)).body.data.status).toBe('pending')
})
