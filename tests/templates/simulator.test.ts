// The simulator reviews WhatsApp templates as Meta does (issue 30 §5): a template submitted through the
// admin API to the deployment's default sender (PROVIDER=simulator) or to a stored simulator sender is
// stored `pending`, and the simulator-reports worker approves it SIM_TEMPLATE_APPROVAL_MS later (not
// before), or rejects it with Meta's reason INVALID_FORMAT when its name starts with `reject_`; once,
// recorded with source `simulator` and announced as `template.status_changed` to the accounts that may
// use it. A send of the template is refused before charging until it is approved, and goes after.
// Time moves with the test clock; the worker is stepped.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { assign, createSender } from '../helpers/senders'
import { TestClock } from '../../src/lib/clock'
import { changeTemplate } from '../../src/modules/templates/catalog'

const APPROVAL_MS = 60_000
const clock = new TestClock()

let t: TestApp
type Tenant = { accountId: number; key: string; keyId: number }
/** Without senders of its own: it sends through the deployment's default sender (the simulator). */
let shopD: Tenant
/** With a stored simulator sender assigned. */
let shopS: Tenant
let simulator: number

beforeAll(async () => {
  t = await testApp({ env: { SIM_TEMPLATE_APPROVAL_MS: String(APPROVAL_MS), WEBHOOK_ALLOW_PRIVATE: 'true' }, clock })
  simulator = await createSender(t, 'simulator', { number: '+6281100000097', credentials: {} })
  shopD = await t.account(100)
  shopS = await t.account(100)
  await assign(t, shopS.accountId, simulator, true)
  for (const [i, shop] of [shopD, shopS].entries()) {
    const registered = await t.api('POST', '/webhook', shop.key, {
      url: `https://localhost:9/shop${i}`,
      events: ['template.status_changed'],
    })
    expect(registered.status).toBe(200)
  }
}, 60_000)
afterAll(async () => {
  await t.close()
})

/** Moves the test clock by `ms` and steps the simulator's worker. */
async function after(ms: number) {
  await clock.advance(ms)
  await t.runWorker('simulator-reports')
}

const definition = (name: string) => ({
  name,
  language: 'en_US',
  category: 'UTILITY',
  components: [{ type: 'BODY', text: 'Your order {{1}} is ready for pickup.', example: { body_text: [['A-1']] } }],
})

async function submit(senderId: number, name: string) {
  const created = await t.admin('POST', `/senders/${senderId}/templates`, definition(name))
  expect(created.status).toBe(201)
  expect(created.body.data).toMatchObject({ name, provider: 'simulator', status: 'pending', provider_ref: null })
  return created.body.data as { id: number; name: string }
}

const statusOf = async (id: number) => (await t.admin('GET', `/whatsapp-templates/${id}`)).body.data

/** The template events a key got for template `id`: their data. */
const eventsOf = async (shop: Tenant, id: number) =>
  (
    await t.db.sql<{ payload: string }[]>`
      select payload from webhook_events where api_key_id = ${shop.keyId} and event = 'template.status_changed' order by id`
  )
    .map((e) => (JSON.parse(e.payload) as { data: Record<string, unknown> }).data)
    .filter((d) => d.template_id === id)

/** Its status changes as the admin API shows its history: old, new, reason, who said so. */
const statusChanges = async (id: number) =>
  ((await statusOf(id)).history as { field: string; old: string | null; new: string | null; reason: string | null; source: string }[])
    .filter((h) => h.field === 'status')
    .map((h) => [h.old, h.new, h.reason, h.source])

describe("the simulator's review", () => {
  test('approved after SIM_TEMPLATE_APPROVAL_MS and not before; a send is refused uncharged while pending, accepted after', async () => {
    const tpl = await submit(0, 'order_ready')
    const send = () => t.api('POST', '/messages/send', shopD.key, { to: '081234567890', template_id: tpl.id, variables: { '1': 'A-1001' } })

    const refused = await send()
    expect(refused.status).toBe(422)
    expect(refused.body.code).toBe('TEMPLATE_NOT_APPROVED')
    expect(refused.body.error).toContain(`template ${tpl.id} (order_ready, en_US) is pending`)
    expect(await money(t, shopD.accountId)).toEqual({ balance: 100, ledgerSum: 100 })

    await after(APPROVAL_MS - 1)
    expect((await statusOf(tpl.id)).status).toBe('pending')
    expect(await eventsOf(shopD, tpl.id)).toEqual([])

    await after(1)
    expect(await statusOf(tpl.id)).toMatchObject({ status: 'approved', reason: null })
    expect(await statusChanges(tpl.id)).toEqual([['pending', 'approved', null, 'simulator']])
    expect(await eventsOf(shopD, tpl.id)).toEqual([
      {
        template_id: tpl.id,
        name: 'order_ready',
        language: 'en_US',
        sender_id: null,
        field: 'status',
        old: 'pending',
        new: 'approved',
        reason: null,
      },
    ])
    // Only the accounts that may use the deployment's template hear of it.
    expect(await eventsOf(shopS, tpl.id)).toEqual([])

    // Once: later steps change nothing.
    await after(APPROVAL_MS)
    expect(await statusChanges(tpl.id)).toHaveLength(1)
    expect(await eventsOf(shopD, tpl.id)).toHaveLength(1)

    const accepted = await send()
    expect(accepted.status).toBe(200)
    expect(accepted.body.data.status).toBe('sent')
    expect(await money(t, shopD.accountId)).toEqual({ balance: 99, ledgerSum: 99 })
    const [message] = await t.db.sql<{ body: string }[]>`select body from messages where message_sid = ${accepted.body.data.message_id}`
    expect(message!.body).toBe('Your order A-1001 is ready for pickup.')
  })

  test('a name starting with reject_ is rejected with INVALID_FORMAT, announced, and stays unsendable', async () => {
    const tpl = await submit(simulator, 'reject_promo')
    await after(APPROVAL_MS)
    expect(await statusOf(tpl.id)).toMatchObject({ status: 'rejected', reason: 'INVALID_FORMAT' })
    expect(await statusChanges(tpl.id)).toEqual([['pending', 'rejected', 'INVALID_FORMAT', 'simulator']])
    expect(await eventsOf(shopS, tpl.id)).toEqual([
      {
        template_id: tpl.id,
        name: 'reject_promo',
        language: 'en_US',
        sender_id: simulator,
        field: 'status',
        old: 'pending',
        new: 'rejected',
        reason: 'INVALID_FORMAT',
      },
    ])
    expect(await eventsOf(shopD, tpl.id)).toEqual([])
    const refused = await t.api('POST', '/messages/send', shopS.key, {
      to: '081234567890',
      template_id: tpl.id,
      variables: { '1': 'A-1' },
    })
    expect(refused.status).toBe(422)
    expect(refused.body.code).toBe('TEMPLATE_NOT_APPROVED')
    expect(refused.body.error).toContain('is rejected (reason: INVALID_FORMAT), not approved')
    expect(await money(t, shopS.accountId)).toEqual({ balance: 100, ledgerSum: 100 })
  })

  test('two workers stepping at once apply a review once; a template no longer pending keeps its status', async () => {
    const a = await submit(simulator, 'twice_stepped')
    const b = await submit(simulator, 'deleted_meanwhile')
    // An operator's deletion before the review falls due (no route deletes one yet: the catalog's writer).
    await t.db.sql.begin((tx) => changeTemplate(tx, clock, b.id, { status: 'deleted' }, 'operator'))
    await clock.advance(APPROVAL_MS)
    await Promise.all([t.runWorker('simulator-reports'), t.runWorker('simulator-reports')])
    expect(await statusChanges(a.id)).toEqual([['pending', 'approved', null, 'simulator']])
    expect(await eventsOf(shopS, a.id)).toHaveLength(1)
    expect((await statusOf(b.id)).status).toBe('deleted')
    expect(await statusChanges(b.id)).toEqual([['pending', 'deleted', null, 'operator']])
    expect(await t.db.sql`select 1 from simulator_template_reviews`).toHaveLength(0)
  })
})
