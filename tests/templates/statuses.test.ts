// Meta's other template statuses (issue 30), each through Meta's signed `message_template_status_update`
// webhook as the fake Graph API posts it to the service: IN_APPEAL, LIMIT_EXCEEDED, ARCHIVED and LOCKED
// become that status at once (lower case, Meta's reason kept, in the history with source meta), and a
// send of the template is then refused 422 TEMPLATE_NOT_APPROVED naming the status and the reason,
// before anything is charged and without reaching the fake; REINSTATED makes it approved again and it
// sends. FLAGGED (quality fell, a pause may follow) is recorded in the history and leaves the status as
// it is, so the template still sends (docs/guides/templates.md, "Status, category and quality changes").

import { beforeAll, describe, expect, test } from 'bun:test'
import { money, type TestApp } from '../helpers/app'
import { assign, createSender, META_A } from '../helpers/senders'
import { templateFakes, WABA_A } from '../helpers/templates'
import { TestClock } from '../../src/lib/clock'

const clock = new TestClock()
const fakes = templateFakes({ graph: { clock } })
const { graph } = fakes

let t: TestApp
let metaA: number
beforeAll(async () => {
  t = await fakes.start({ clock, runOnClock: true })
  metaA = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
  graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
}, 60_000)

let serial = 0
/**
 * An account (price 10) sending through Meta A, and a template approved at Meta's business account,
 * synced into the service through the admin API: its id as the account sees it, and Meta's.
 */
async function approvedTemplate() {
  const name = `status_${++serial}_${Math.random().toString(36).slice(2, 8)}`
  const fake = graph.template(WABA_A, {
    name,
    language: 'en_US',
    category: 'UTILITY',
    status: 'APPROVED',
    components: [{ type: 'BODY', text: 'Invoice {{1}} is due today.', example: { body_text: [['INV-1']] } }],
    quality_score: { score: 'GREEN' },
  })
  expect((await t.admin('POST', `/senders/${metaA}/templates/sync`)).status).toBe(200)
  const shop = await t.account(1_000, { price: 10 })
  await assign(t, shop.accountId, metaA, true)
  const listed = await t.api('GET', `/templates?name=${name}`, shop.key)
  expect(listed.body.data.items).toHaveLength(1)
  const id: number = listed.body.data.items[0].id
  expect(listed.body.data.items[0]).toMatchObject({ status: 'approved', sender: { id: metaA } })
  return { ...shop, id, name, fakeId: fake.id }
}

/** Meta's time of a notification: the test clock's seconds, `plus` later (each test's notifications in order). */
let tick = 0
const metaTime = () => Math.floor(clock.now().getTime() / 1000) + ++tick

/** Meta changes the template and posts the signed notification (Meta A's app secret) to the service. */
async function metaSays(fakeId: string, status: string, reason = 'NONE') {
  const answer = await graph.changeTemplate({ waba: WABA_A, id: fakeId, status, reason, time: metaTime() })
  expect(answer.status).toBe(200)
  return ((await answer.json()) as { data: { templates: number } }).data.templates
}

const messagesAtMeta = () => graph.requests.filter((r) => r.path.endsWith('/messages'))
const ledgerRows = async (accountId: number) =>
  (await t.db.sql<{ n: number }[]>`select count(*)::int as n from ledger where account_id = ${accountId}`)[0]!.n
/** The template's status changes in its history (admin API): [field, old, new, reason, source]. */
async function history(id: number) {
  const shown = await t.admin('GET', `/whatsapp-templates/${id}`)
  expect(shown.status).toBe(200)
  return (shown.body.data.history as { field: string; old: string | null; new: string | null; reason: string | null; source: string }[])
    .filter((h) => h.field !== 'created')
    .map((h) => [h.field, h.old, h.new, h.reason, h.source])
}

const send = (a: { key: string; id: number }) =>
  t.api('POST', '/messages/send', a.key, { to: '081234567890', template_id: a.id, variables: { '1': 'INV-1001' } })

describe("Meta's statuses beyond paused and disabled", () => {
  const CASES = [
    ['IN_APPEAL', 'in_appeal', 'ABUSIVE_CONTENT'],
    ['LIMIT_EXCEEDED', 'limit_exceeded', 'TEMPLATE_LIMIT_REACHED'],
    ['ARCHIVED', 'archived', 'UNUSED_FOR_A_YEAR'],
    ['LOCKED', 'locked', 'POLICY_REVIEW'],
  ] as const
  test.each(CASES)(
    '%s: the status is %s at once, in the history; a send is refused naming it, uncharged, never at Meta; REINSTATED sends again',
    async (event, status, reason) => {
      const a = await approvedTemplate()
      const before = await money(t, a.accountId)
      const rowsBefore = await ledgerRows(a.accountId)

      expect(await metaSays(a.fakeId, event, reason)).toBe(1)
      expect((await t.api('GET', `/templates/${a.id}`, a.key)).body.data).toMatchObject({ status, reason })
      expect(await history(a.id)).toEqual([['status', 'approved', status, reason, 'meta']])

      const refused = await send(a)
      expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 422, code: 'TEMPLATE_NOT_APPROVED' })
      // The check before the charge names the status and Meta's reason.
      expect(refused.body.error).toBe(
        `template_id: template ${a.id} (${a.name}, en_US) is ${status} (reason: ${reason}), not approved, so it cannot be sent; nothing was charged`,
      )
      expect(await money(t, a.accountId)).toEqual(before)
      expect(await ledgerRows(a.accountId)).toBe(rowsBefore)
      expect(messagesAtMeta()).toEqual([])

      expect(await metaSays(a.fakeId, 'REINSTATED')).toBe(1)
      expect((await t.api('GET', `/templates/${a.id}`, a.key)).body.data).toMatchObject({ status: 'approved', reason: null })
      expect(await history(a.id)).toEqual([
        ['status', 'approved', status, reason, 'meta'],
        ['status', status, 'approved', null, 'meta'],
      ])
      const sent = await send(a)
      expect({ status: sent.status, body: sent.body }).toMatchObject({ status: 200, body: { data: { status: 'sent' } } })
      expect(messagesAtMeta().map((r) => [r.status, JSON.parse(r.body).template.name])).toEqual([[200, a.name]])
      expect(await money(t, a.accountId)).toEqual({ balance: before.balance - 10, ledgerSum: before.ledgerSum - 10 })
    },
  )
})

describe('FLAGGED', () => {
  test('recorded in the history as flagged with its reason, the status kept: the template still sends, charged once', async () => {
    const a = await approvedTemplate()
    const before = await money(t, a.accountId)
    expect(await metaSays(a.fakeId, 'FLAGGED', 'LOW_QUALITY')).toBe(1)
    expect((await t.api('GET', `/templates/${a.id}`, a.key)).body.data).toMatchObject({ status: 'approved', reason: null })
    expect(await history(a.id)).toEqual([['flagged', null, null, 'LOW_QUALITY', 'meta']])

    const sent = await send(a)
    expect({ status: sent.status, body: sent.body }).toMatchObject({ status: 200, body: { data: { status: 'sent' } } })
    expect(messagesAtMeta().map((r) => r.status)).toEqual([200])
    expect(await money(t, a.accountId)).toEqual({ balance: before.balance - 10, ledgerSum: before.ledgerSum - 10 })
  })
})
