// `template.status_changed` delivered and replayed like every other event (issue 30): an integrator's
// registration chooses it; Meta pauses the template (its signed webhook, from the fake Graph API) and
// the change reaches a real HTTPS receiver on loopback, signed with the registration's secret (Standard
// Webhooks); the operator's replay (POST /admin/v1/deliveries/{id}/replay) delivers the same event
// again: the same webhook-id, the same bytes, verified by the same secret. A registration of another
// account (another sender's tenant) that chose the event too never receives it, replayed or not; nor
// does a registration of the same account that did not choose it.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { type TestApp } from '../helpers/app'
import { assign, createSender, META_A, META_B } from '../helpers/senders'
import { templateFakes, WABA_A } from '../helpers/templates'
import { deliverAll } from '../helpers/delivery'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { TestClock } from '../../src/lib/clock'

const clock = new TestClock()
const fakes = templateFakes({ graph: { clock } })
const { graph } = fakes

let t: TestApp
let tls: TestTls
let rx: Receiver
let metaA: number
let metaB: number
beforeAll(async () => {
  tls = makeTestTls()
  rx = startReceiver(tls, clock)
  t = await fakes.start({ clock, runOnClock: true, env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile } })
  metaA = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
  metaB = await createSender(t, 'meta', META_B, { recipient_gap_ms: 0 })
  graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
}, 60_000)
afterAll(() => {
  rx.stop()
  tls.remove()
})

/** An account given `senderId`, its key registered for template.status_changed at `path`: its signing secret. */
async function integrator(senderId: number, path: string) {
  const shop = await t.account(1_000)
  await assign(t, shop.accountId, senderId, true)
  const registered = await t.api('POST', '/webhook', shop.key, { url: rx.url('localhost', path), events: ['template.status_changed'] })
  expect(registered.status).toBe(200)
  expect(registered.body.data.events).toEqual(['template.status_changed'])
  return { ...shop, secret: registered.body.data.signing_secret as string }
}

test('a status change reaches the registration signed; the replay delivers the same event again; another account hears nothing', async () => {
  const shop = await integrator(metaA, '/shop-a')
  const other = await integrator(metaB, '/shop-b')
  // The same account's other key, registered for message statuses only (the default): not for it either.
  const statusesOnly = await t.admin('POST', `/accounts/${shop.accountId}/keys`, { label: 'statuses only' })
  const plain = await t.api('POST', '/webhook', statusesOnly.body.data.key, { url: rx.url('localhost', '/shop-a-statuses') })
  expect(plain.body.data.events).toEqual(['message.status'])
  const fake = graph.template(WABA_A, {
    name: 'invoice_due',
    language: 'id',
    category: 'UTILITY',
    status: 'APPROVED',
    components: [{ type: 'BODY', text: 'Tagihan {{1}} jatuh tempo hari ini.', example: { body_text: [['INV-1']] } }],
  })
  expect((await t.admin('POST', `/senders/${metaA}/templates/sync`)).status).toBe(200)
  const [listed] = (await t.api('GET', '/templates?name=invoice_due', shop.key)).body.data.items
  expect(listed).toMatchObject({ name: 'invoice_due', status: 'approved' })
  const templateId: number = listed.id
  // The sync stored it (announced to nobody: it is new); nothing waits to be delivered yet.
  await deliverAll(t)
  rx.reset()

  const paused = await graph.changeTemplate({ waba: WABA_A, id: fake.id, status: 'PAUSED', reason: 'LOW_QUALITY' })
  expect(paused.status).toBe(200)
  await deliverAll(t)

  const [first, ...more] = rx.requests
  expect(more).toEqual([])
  expect(first!.path).toBe('/shop-a')
  const event = new Webhook(shop.secret).verify(first!.body, first!.headers) as Record<string, unknown>
  expect(event).toEqual({
    event: 'template.status_changed',
    timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
    data: {
      template_id: templateId,
      name: 'invoice_due',
      language: 'id',
      sender_id: metaA,
      field: 'status',
      old: 'approved',
      new: 'paused',
      reason: 'LOW_QUALITY',
    },
  })
  // The other account's secret does not verify it: it was signed for this registration only.
  expect(() => new Webhook(other.secret).verify(first!.body, first!.headers)).toThrow()

  // The key's delivery log holds it, delivered; the other key's holds nothing.
  const log = await t.admin('GET', `/keys/${shop.keyId}/deliveries`)
  expect(log.body.data.items).toHaveLength(1)
  const delivery = log.body.data.items[0]
  expect(delivery).toMatchObject({ event: 'template.status_changed', status: 'delivered', attempts: 1, message_sid: null })
  expect(delivery.webhook_id).toBe(first!.headers['webhook-id'])
  expect((await t.admin('GET', `/keys/${other.keyId}/deliveries`)).body.data.items).toEqual([])
  expect((await t.admin('GET', `/keys/${statusesOnly.body.data.id}/deliveries`)).body.data.items).toEqual([])

  // The operator replays it: a second time later, the same event.
  await clock.advance(60_000)
  const replayed = await t.admin('POST', `/deliveries/${delivery.id}/replay`)
  expect(replayed.status).toBe(200)
  expect(replayed.body.data).toMatchObject({ id: delivery.id, webhook_id: delivery.webhook_id, status: 'pending', attempts: 0 })
  await deliverAll(t)

  expect(rx.requests.map((r) => r.path)).toEqual(['/shop-a', '/shop-a'])
  const second = rx.requests[1]!
  expect(second.headers['webhook-id']).toBe(first!.headers['webhook-id'])
  expect(second.body).toBe(first!.body)
  // Signed anew at its own time, with the same secret.
  expect(Number(second.headers['webhook-timestamp'])).toBeGreaterThan(Number(first!.headers['webhook-timestamp']))
  expect(new Webhook(shop.secret).verify(second.body, second.headers)).toEqual(event)
  expect(rx.byId(delivery.webhook_id)).toHaveLength(2)
  expect((await t.admin('GET', `/deliveries/${delivery.id}`)).body.data).toMatchObject({ status: 'delivered', attempts: 1 })

  // The other account's registration, which chose the event too, never received anything.
  expect(rx.requests.filter((r) => r.path === '/shop-b')).toEqual([])
  const [others] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from webhook_events where api_key_id = ${other.keyId}`
  expect(others!.n).toBe(0)
})
