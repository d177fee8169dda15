// A WhatsApp template's status changing while a send is under way (issue 30; found by the fault test,
// tests/chaos/templates.ts):
// - Meta's webhook pausing the template lands between the send's check and its charge: the charge
//   itself refuses it (422 TEMPLATE_NOT_APPROVED), nothing charged, nothing handed to Meta. In a bulk,
//   that template's entries fail uncharged and the others are charged and sent.
// - A request whose first run charged and died before answering is repeated (its Idempotency-Key
//   recovers it) after the template was paused: it answers how its message ended (sent), charged once,
//   never "not approved, nothing was charged" for a message that was charged and sent. Bulk likewise.

import { afterAll, afterEach, beforeAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { assign, createSender, META_A, registerFakes, sendersEnv } from '../helpers/senders'
import { changeTemplate, insertTemplate, type WaTemplate } from '../../src/modules/templates/catalog'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)
const WABA_A = META_A.credentials.business_account_id
graph.accountOf.set(META_A.credentials.phone_number_id, WABA_A)

let t: TestApp
let metaA: number
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph) })
  metaA = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})
afterEach(() => graph.reset())

let serial = 0
/** An approved template of Meta A, here and at the fake; and functions that pause it and approve it again in both, as Meta's webhooks do. */
async function template(): Promise<{ tpl: WaTemplate; pause: () => Promise<void>; approve: () => Promise<void> }> {
  const name = `race_${++serial}_${Math.random().toString(36).slice(2, 8)}`
  const components = [{ type: 'BODY', text: 'Order {{1}} has shipped', example: { body_text: [['A-1']] } }]
  const fake = graph.template(WABA_A, { name, language: 'en_US', category: 'UTILITY', status: 'APPROVED', components })
  const tpl = (await t.db.sql.begin((tx) =>
    insertTemplate(
      tx,
      t.deps.clock,
      {
        senderId: metaA,
        provider: 'meta',
        name,
        language: 'en_US',
        category: 'utility',
        parameterFormat: 'positional',
        components,
        status: 'approved',
        providerRef: fake.id,
      },
      'sync',
    ),
  ))!
  const pause = async () => {
    fake.status = 'PAUSED'
    await t.db.sql.begin((tx) => changeTemplate(tx, t.deps.clock, tpl.id, { status: 'paused', reason: 'LOW_QUALITY' }, 'meta', new Date()))
  }
  const approve = async () => {
    fake.status = 'APPROVED'
    await t.db.sql.begin((tx) => changeTemplate(tx, t.deps.clock, tpl.id, { status: 'approved' }, 'meta', new Date()))
  }
  return { tpl, pause, approve }
}

async function shop(balance = 100) {
  const a = await t.account(balance, { price: 10 })
  await assign(t, a.accountId, metaA, true)
  return a
}

const handedOver = () => graph.requests.filter((r) => r.path.endsWith('/messages')).length

test('paused between the check and the charge: the charge refuses it, nothing charged, nothing handed to Meta', async () => {
  const { tpl, pause, approve } = await template()
  const { accountId, key } = await shop()
  // Meta's webhook commits while the send is between its check and its charge.
  const charge = t.deps.chargeOne
  t.deps.chargeOne = async (request) => {
    await pause()
    return charge(request)
  }
  try {
    const answer = await t.api('POST', '/messages/send', key, { to: '081234567890', template_id: tpl.id, variables: { '1': 'A-1' } })
    expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 422, code: 'TEMPLATE_NOT_APPROVED' })
    expect(answer.body.error).toBe(
      `template_id: template ${tpl.id} (${tpl.name}, en_US) is paused, not approved, so it cannot be sent; nothing was charged`,
    )
  } finally {
    t.deps.chargeOne = charge
  }
  expect(handedOver()).toBe(0)
  expect(await money(t, accountId)).toEqual({ balance: 100, ledgerSum: 100 })
  const [messages] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where account_id = ${accountId}`
  expect(messages!.n).toBe(0)
  // Approved again, the same send goes (the refusal was the template's, nothing else's).
  await approve()
  const again = await t.api('POST', '/messages/send', key, { to: '081234567890', template_id: tpl.id, variables: { '1': 'A-1' } })
  expect(again.status).toBe(200)
})

/** Rewinds a request to the moment its first run died: charged, its answer not stored. */
const rewind = (accountId: number, idem: string) =>
  t.db.sql`update idempotency_keys set state = 'running', response_status = null, response_body = null
           where account_id = ${accountId} and key = ${idem}`

test('a request whose first run charged, repeated after the template was paused: the first answer, charged once', async () => {
  const { tpl, pause } = await template()
  const { accountId, key } = await shop()
  const body = { to: '081234567890', template_id: tpl.id, variables: { '1': 'A-2' } }
  const first = await t.api('POST', '/messages/send', key, body, { 'idempotency-key': 'race-send' })
  expect(first.status).toBe(200)
  await rewind(accountId, 'race-send')
  await pause()
  const repeated = await t.api('POST', '/messages/send', key, body, { 'idempotency-key': 'race-send' })
  expect({ status: repeated.status, body: repeated.body }).toEqual({ status: 200, body: first.body })
  expect(handedOver()).toBe(1)
  expect(await money(t, accountId)).toEqual({ balance: 90, ledgerSum: 90 })
  // A new request is refused before charging, as ever.
  const fresh = await t.api('POST', '/messages/send', key, { ...body, variables: { '1': 'A-3' } })
  expect({ status: fresh.status, code: fresh.body.code }).toEqual({ status: 422, code: 'TEMPLATE_NOT_APPROVED' })
})

test('a bulk whose first run charged, repeated after the template was paused: the first answer, charged once', async () => {
  const { tpl, pause } = await template()
  const { accountId, key } = await shop()
  const body = {
    messages: [
      { to: '081234567891', template_id: tpl.id, variables: { '1': 'B-1' } },
      { to: '081234567892', template_id: tpl.id, variables: { '1': 'B-2' } },
    ],
  }
  const first = await t.api('POST', '/messages/bulk', key, body, { 'idempotency-key': 'race-bulk' })
  expect(first.status).toBe(200)
  expect(first.body.data.results.map((r: { status: string }) => r.status)).toEqual(['sent', 'sent'])
  await rewind(accountId, 'race-bulk')
  await pause()
  const repeated = await t.api('POST', '/messages/bulk', key, body, { 'idempotency-key': 'race-bulk' })
  expect({ status: repeated.status, body: repeated.body }).toEqual({ status: 200, body: first.body })
  expect(handedOver()).toBe(2)
  expect(await money(t, accountId)).toEqual({ balance: 80, ledgerSum: 80 })
})

test('a bulk: the entries of a template paused after the checks fail uncharged at the charge; the others are charged and sent', async () => {
  const paused = await template()
  const other = await template()
  const { accountId, key } = await shop()
  // Meta's webhook commits after the bulk read its templates, before it charges (here: while it looks up its senders).
  const forSend = t.deps.senders.forSend
  t.deps.senders.forSend = async (...args) => {
    await paused.pause()
    return forSend.apply(t.deps.senders, args)
  }
  let answer
  try {
    answer = await t.api('POST', '/messages/bulk', key, {
      messages: [
        { to: '081234567893', template_id: paused.tpl.id, variables: { '1': 'C-1' } },
        { to: '081234567894', template_id: other.tpl.id, variables: { '1': 'C-2' } },
        { to: '081234567895', template_id: paused.tpl.id, variables: { '1': 'C-3' } },
      ],
    })
  } finally {
    t.deps.senders.forSend = forSend
  }
  expect(answer.status).toBe(200)
  const refused = {
    status: 'failed',
    code: 'TEMPLATE_NOT_APPROVED',
    error: expect.stringContaining(`template ${paused.tpl.id} (${paused.tpl.name}, en_US) is paused, not approved`),
  }
  expect(answer.body.data.results).toEqual([
    { to: '081234567893', ...refused },
    { to: '+6281234567894', status: 'sent', message_id: expect.any(String) },
    { to: '081234567895', ...refused },
  ])
  expect(answer.body.data).toMatchObject({ total: 3, sent: 1, failed: 2, total_cost: 10, balance_after: 90 })
  expect(handedOver()).toBe(1)
  expect(await money(t, accountId)).toEqual({ balance: 90, ledgerSum: 90 })
})
