// Meta's template webhooks (issue 30): `message_template_status_update`, `template_category_update`
// (its two forms) and `message_template_quality_update`, signed as Meta signs them (node:crypto,
// independently of the service's code) and posted to the real route. Each changes only the templates
// of the senders whose WhatsApp Business Account its entry names, among those whose secret signed it
// (a tenant signing with its own secret for another's account changes nothing); once however often it
// is delivered, in Meta's order whatever the delivery's; and each real change is announced as a
// `template.status_changed` event to the accounts that may use the template, in the same transaction.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { assign, ENV_META, fourSenders, META_A, META_B, registerFakes, sendersEnv } from '../helpers/senders'
import { metaWebhookHeaders } from '../helpers/meta-webhook'
import { deliverAll } from '../helpers/delivery'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { TestClock } from '../../src/lib/clock'
import { getTemplateRow, insertTemplate, templateHistory, type WaTemplate } from '../../src/modules/templates/catalog'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)
const clock = new TestClock()

/** The deployment's default number's WhatsApp Business Account. */
const ENV_WABA = '200000000000009'
const WABA_A = META_A.credentials.business_account_id
const WABA_B = META_B.credentials.business_account_id

let t: TestApp
let tls: TestTls
let rx: Receiver
let ids: Awaited<ReturnType<typeof fourSenders>>
type Tenant = { accountId: number; key: string; keyId: number }
/** Meta A's account (the victim of the forgeries). */
let shopA: Tenant
/** Meta B's account (holds Meta B's secret: the attacker). */
let shopB: Tenant
/** An account without senders: it sends through the deployment's number, and may use its templates. */
let shopD: Tenant

beforeAll(async () => {
  tls = makeTestTls()
  rx = startReceiver(tls)
  t = await testApp({
    env: sendersEnv(twilio, graph, { META_BUSINESS_ACCOUNT_ID: ENV_WABA, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile }),
    clock,
  })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  shopA = await t.account(10_000)
  shopB = await t.account(10_000)
  shopD = await t.account(10_000)
  await assign(t, shopA.accountId, ids.metaA, true)
  await assign(t, shopB.accountId, ids.metaB, true)
  for (const [i, shop] of [shopA, shopB, shopD].entries()) {
    const registered = await t.api('POST', '/webhook', shop.key, {
      url: rx.url('localhost', `/shop${i}`),
      events: ['template.status_changed'],
    })
    expect(registered.status).toBe(200)
    expect(registered.body.data.events).toEqual(['template.status_changed'])
  }
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
  rx.stop()
  tls.remove()
})

let refs = 900_000
/** A template of `senderId` (null: the deployment's), as a sync would have stored it: approved, green, Meta's id. */
async function template(senderId: number | null, name: string, o: { category?: 'utility' | 'marketing' } = {}): Promise<WaTemplate> {
  const row = await insertTemplate(
    t.db.sql,
    clock,
    {
      senderId,
      provider: 'meta',
      name,
      language: 'id',
      category: o.category ?? 'utility',
      parameterFormat: 'positional',
      components: [{ type: 'BODY', text: 'Pesanan {{1}} sudah dikirim', example: { body_text: [['INV-1001']] } }],
      status: 'approved',
      quality: 'green',
      providerRef: String(++refs),
    },
    'sync',
  )
  return row!
}

/** Meta's time now (whole seconds), `plus` seconds later. */
const metaTime = (plus = 0) => Math.floor(clock.now().getTime() / 1000) + plus

function notification(waba: string, field: string, value: Record<string, unknown>, time = metaTime()) {
  return { object: 'whatsapp_business_account', entry: [{ id: waba, time, changes: [{ field, value }] }] }
}
const which = (tpl: WaTemplate) => ({
  message_template_id: Number(tpl.provider_ref),
  message_template_name: tpl.name,
  message_template_language: tpl.language,
})
const statusUpdate = (tpl: WaTemplate, event: string, extra: Record<string, unknown> = {}) => ({
  event,
  ...which(tpl),
  reason: 'NONE',
  message_template_category: tpl.category.toUpperCase(),
  ...extra,
})

async function post(body: unknown, secret: string) {
  const raw = JSON.stringify(body)
  const answer = await t.request('POST', '/provider/meta/webhook', { rawBody: raw, headers: metaWebhookHeaders(raw, secret) })
  expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200 })
  return answer.body.data as { changed: boolean; templates?: number }
}

const row = async (tpl: WaTemplate) => (await getTemplateRow(t.db.sql, tpl.id))!
const history = async (tpl: WaTemplate) =>
  (await templateHistory(t.db.sql, tpl.id)).filter((h) => h.field !== 'created').map((h) => [h.field, h.old_value, h.new_value, h.source])
/** The template events of a key, oldest first: their data. */
const eventsOf = async (shop: Tenant, tpl: WaTemplate) =>
  (
    await t.db.sql<{ event: string; payload: string }[]>`
      select event, payload from webhook_events where api_key_id = ${shop.keyId} and event = 'template.status_changed' order by id`
  )
    .map((e) => JSON.parse(e.payload) as { event: string; timestamp: string; data: Record<string, unknown> })
    .filter((e) => e.data.template_id === tpl.id)

describe('status', () => {
  test('PAUSED: the status and reason change at once, recorded with source meta, announced to the accounts that may use it', async () => {
    const tpl = await template(ids.metaA, 'order_shipped')
    const answer = await post(
      notification(
        WABA_A,
        'message_template_status_update',
        statusUpdate(tpl, 'PAUSED', { other_info: { title: 'FIRST_PAUSE', description: 'Paused for 3 hours: low quality' } }),
      ),
      META_A.credentials.app_secret,
    )
    expect(answer).toEqual({ changed: false, templates: 1 })
    expect(await row(tpl)).toMatchObject({ status: 'paused', reason: 'FIRST_PAUSE: Paused for 3 hours: low quality' })
    expect(await history(tpl)).toEqual([['status', 'approved', 'paused', 'meta']])
    const [event, ...more] = await eventsOf(shopA, tpl)
    expect(more).toEqual([])
    expect(event!.event).toBe('template.status_changed')
    expect(event!.timestamp).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
    expect(event!.data).toEqual({
      template_id: tpl.id,
      name: 'order_shipped',
      language: 'id',
      sender_id: ids.metaA,
      field: 'status',
      old: 'approved',
      new: 'paused',
      reason: 'FIRST_PAUSE: Paused for 3 hours: low quality',
    })
    // Only the accounts that may use it hear of it.
    expect(await eventsOf(shopB, tpl)).toEqual([])
    expect(await eventsOf(shopD, tpl)).toEqual([])
  })

  test('a repeated delivery changes once and announces once', async () => {
    const tpl = await template(ids.metaA, 'invoice_due')
    const body = notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'REJECTED', { reason: 'INVALID_FORMAT' }))
    expect(await post(body, META_A.credentials.app_secret)).toEqual({ changed: false, templates: 1 })
    for (let i = 0; i < 3; i++) expect(await post(body, META_A.credentials.app_secret)).toEqual({ changed: false, templates: 0 })
    expect(await row(tpl)).toMatchObject({ status: 'rejected', reason: 'INVALID_FORMAT' })
    expect(await history(tpl)).toEqual([['status', 'approved', 'rejected', 'meta']])
    expect((await eventsOf(shopA, tpl)).map((e) => e.data.new)).toEqual(['rejected'])
  })

  test('deliveries at once (Meta retrying while the first is being answered) change once', async () => {
    const tpl = await template(ids.metaA, 'racing_change')
    const body = notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'PAUSED'))
    const answers = await Promise.all(Array.from({ length: 5 }, () => post(body, META_A.credentials.app_secret)))
    expect(answers.map((a) => a.templates).reduce((a, b) => a! + b!, 0)).toBe(1)
    expect(await history(tpl)).toEqual([['status', 'approved', 'paused', 'meta']])
    expect(await eventsOf(shopA, tpl)).toHaveLength(1)
  })

  test("Meta's order, not the delivery's: an older notification delivered late changes nothing; REINSTATED is approved again", async () => {
    const tpl = await template(ids.metaA, 'payment_received')
    const paused = notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'PAUSED'), metaTime(20))
    const approvedEarlier = notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'APPROVED'), metaTime(10))
    expect((await post(paused, META_A.credentials.app_secret)).templates).toBe(1)
    expect((await post(approvedEarlier, META_A.credentials.app_secret)).templates).toBe(0)
    expect((await row(tpl)).status).toBe('paused')
    const reinstated = notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'REINSTATED'), metaTime(30))
    expect((await post(reinstated, META_A.credentials.app_secret)).templates).toBe(1)
    expect((await row(tpl)).status).toBe('approved')
    expect(await history(tpl)).toEqual([
      ['status', 'approved', 'paused', 'meta'],
      ['status', 'paused', 'approved', 'meta'],
    ])
    // Several entries of one notification apply oldest first, whatever their order in the body.
    const batch = {
      object: 'whatsapp_business_account',
      entry: [
        { id: WABA_A, time: metaTime(50), changes: [{ field: 'message_template_status_update', value: statusUpdate(tpl, 'DISABLED') }] },
        { id: WABA_A, time: metaTime(40), changes: [{ field: 'message_template_status_update', value: statusUpdate(tpl, 'PAUSED') }] },
      ],
    }
    expect((await post(batch, META_A.credentials.app_secret)).templates).toBe(2)
    expect((await row(tpl)).status).toBe('disabled')
    expect((await eventsOf(shopA, tpl)).map((e) => [e.data.old, e.data.new])).toEqual([
      ['approved', 'paused'],
      ['paused', 'approved'],
      ['approved', 'paused'],
      ['paused', 'disabled'],
    ])
  })

  test("a notification that changed nothing still counts in Meta's order: an older one delivered after it changes nothing", async () => {
    // Meta paused the template at 10:01 and approved it again at 10:02; the approval arrives first, while
    // the template is still approved here (it changes nothing), then the pause, late: it is older.
    const tpl = await template(ids.metaA, 'noop_then_stale')
    const pausedEarlier = notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'PAUSED'), metaTime(60))
    const approved = notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'APPROVED'), metaTime(70))
    expect((await post(approved, META_A.credentials.app_secret)).templates).toBe(0)
    expect((await post(pausedEarlier, META_A.credentials.app_secret)).templates).toBe(0)
    expect((await row(tpl)).status).toBe('approved')
    // Likewise a quality and a category said again, then an older change of them delivered late.
    const green = notification(
      WABA_A,
      'message_template_quality_update',
      { ...which(tpl), previous_quality_score: 'RED', new_quality_score: 'GREEN' },
      metaTime(90),
    )
    const redEarlier = notification(
      WABA_A,
      'message_template_quality_update',
      { ...which(tpl), previous_quality_score: 'GREEN', new_quality_score: 'RED' },
      metaTime(80),
    )
    expect((await post(green, META_A.credentials.app_secret)).templates).toBe(0)
    expect((await post(redEarlier, META_A.credentials.app_secret)).templates).toBe(0)
    expect((await row(tpl)).quality).toBe('green')
    // What changed nothing is not in the history, nor announced.
    expect(await history(tpl)).toEqual([])
    expect(await eventsOf(shopA, tpl)).toEqual([])
    // A newer change still applies.
    const pausedLater = notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'PAUSED'), metaTime(100))
    expect((await post(pausedLater, META_A.credentials.app_secret)).templates).toBe(1)
    expect(await history(tpl)).toEqual([['status', 'approved', 'paused', 'meta']])
  })

  test('FLAGGED is recorded once (a repeat records nothing) and leaves the status; an unknown word changes nothing', async () => {
    const tpl = await template(ids.metaA, 'flash_sale')
    const flagged = notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'FLAGGED'))
    expect((await post(flagged, META_A.credentials.app_secret)).templates).toBe(1)
    expect((await post(flagged, META_A.credentials.app_secret)).templates).toBe(0)
    const unknown = notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'UNARCHIVED'), metaTime(5))
    expect((await post(unknown, META_A.credentials.app_secret)).templates).toBe(0)
    expect((await row(tpl)).status).toBe('approved')
    expect(await history(tpl)).toEqual([['flagged', null, null, 'meta']])
    expect((await eventsOf(shopA, tpl)).map((e) => [e.data.field, e.data.old, e.data.new])).toEqual([['flagged', null, null]])
  })

  test("without Meta's template id, the template is found by name and language", async () => {
    const tpl = await template(ids.metaA, 'no_id_given')
    const { message_template_id: _, ...value } = statusUpdate(tpl, 'PAUSED')
    expect((await post(notification(WABA_A, 'message_template_status_update', value), META_A.credentials.app_secret)).templates).toBe(1)
    expect((await row(tpl)).status).toBe('paused')
  })

  test('a template the sender does not have yet (not synced) is acknowledged and changes nothing', async () => {
    const answer = await post(
      notification(WABA_A, 'message_template_status_update', {
        event: 'APPROVED',
        message_template_id: 123456789,
        message_template_name: 'never_synced',
        message_template_language: 'id',
        reason: 'NONE',
      }),
      META_A.credentials.app_secret,
    )
    expect(answer).toEqual({ changed: false, templates: 0 })
  })
})

describe('tenants: a change names the account its signer owns, or changes nothing', () => {
  test("signed with Meta B's own secret, naming Meta A's account: 200, nothing changes, nothing is announced", async () => {
    const tpl = await template(ids.metaA, 'forged_target')
    // Meta B has a template of that name too: a notification about another account changes not even the signer's own.
    const signers = await template(ids.metaB, 'forged_target')
    const forged = notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'DISABLED'))
    expect(await post(forged, META_B.credentials.app_secret)).toEqual({ changed: false, templates: 0 })
    expect((await row(signers)).status).toBe('approved')
    // The deployment's account, with a tenant's secret: nothing either.
    const deployment = await template(null, 'forged_deployment')
    const forgedDefault = notification(ENV_WABA, 'message_template_status_update', statusUpdate(deployment, 'DISABLED'))
    expect(await post(forgedDefault, META_B.credentials.app_secret)).toEqual({ changed: false, templates: 0 })
    for (const [tpl_, shop] of [
      [tpl, shopA],
      [deployment, shopD],
    ] as const) {
      expect((await row(tpl_)).status).toBe('approved')
      expect(await history(tpl_)).toEqual([])
      expect(await eventsOf(shop, tpl_)).toEqual([])
    }
  })

  test("Meta B naming its own account but Meta A's template id and name changes only its own template of that name", async () => {
    const victims = await template(ids.metaA, 'same_name')
    const own = await template(ids.metaB, 'same_name')
    const value = statusUpdate(victims, 'PAUSED')
    expect(await post(notification(WABA_B, 'message_template_status_update', value), META_B.credentials.app_secret)).toEqual({
      changed: false,
      templates: 1,
    })
    expect((await row(victims)).status).toBe('approved')
    expect((await row(own)).status).toBe('paused')
    expect(await eventsOf(shopA, victims)).toEqual([])
    expect((await eventsOf(shopB, own)).map((e) => e.data.new)).toEqual(['paused'])
  })

  test("the deployment's templates: its own secret and META_BUSINESS_ACCOUNT_ID; announced to the accounts without senders", async () => {
    const tpl = await template(null, 'otp_login')
    expect(
      (await post(notification(ENV_WABA, 'message_template_status_update', statusUpdate(tpl, 'PAUSED')), ENV_META.appSecret)).templates,
    ).toBe(1)
    expect((await row(tpl)).status).toBe('paused')
    expect((await eventsOf(shopD, tpl)).map((e) => [e.data.sender_id, e.data.new])).toEqual([[null, 'paused']])
    expect(await eventsOf(shopA, tpl)).toEqual([])
    expect(await eventsOf(shopB, tpl)).toEqual([])
  })
})

describe('category', () => {
  test('the impending notice (correct_category; new_category still the current one) changes nothing but the history, once', async () => {
    const tpl = await template(ids.metaA, 'promo_reminder')
    const impending = notification(WABA_A, 'template_category_update', {
      ...which(tpl),
      correct_category: 'MARKETING',
      new_category: 'UTILITY',
      category_update_timestamp: metaTime(86_400),
    })
    expect(await post(impending, META_A.credentials.app_secret)).toEqual({ changed: false, templates: 0 })
    expect(await post(impending, META_A.credentials.app_secret)).toEqual({ changed: false, templates: 0 })
    expect((await row(tpl)).category).toBe('utility')
    const notes = (await templateHistory(t.db.sql, tpl.id)).filter((h) => h.field !== 'created')
    expect(notes).toHaveLength(1)
    expect(notes[0]).toMatchObject({ field: 'category_notice', old_value: 'utility', new_value: 'marketing', source: 'meta' })
    expect(notes[0]!.reason).toStartWith('Meta will change the category to marketing on ')
    expect(await eventsOf(shopA, tpl)).toEqual([])
  })

  test('the completed notice (previous_category) changes the category, once, announced', async () => {
    const tpl = await template(ids.metaA, 'loyalty_points')
    const completed = notification(
      WABA_A,
      'template_category_update',
      { ...which(tpl), previous_category: 'UTILITY', new_category: 'MARKETING' },
      metaTime(60),
    )
    expect((await post(completed, META_A.credentials.app_secret)).templates).toBe(1)
    expect((await post(completed, META_A.credentials.app_secret)).templates).toBe(0)
    expect((await row(tpl)).category).toBe('marketing')
    expect(await history(tpl)).toEqual([['category', 'utility', 'marketing', 'meta']])
    expect((await eventsOf(shopA, tpl)).map((e) => [e.data.field, e.data.old, e.data.new])).toEqual([['category', 'utility', 'marketing']])
  })
})

describe('quality', () => {
  test('new_quality_score changes the quality, once, announced; a stale score changes nothing', async () => {
    const tpl = await template(ids.metaA, 'delivery_eta')
    const yellow = notification(
      WABA_A,
      'message_template_quality_update',
      { previous_quality_score: 'GREEN', new_quality_score: 'YELLOW', ...which(tpl) },
      metaTime(100),
    )
    const greenEarlier = notification(
      WABA_A,
      'message_template_quality_update',
      { previous_quality_score: 'UNKNOWN', new_quality_score: 'GREEN', ...which(tpl) },
      metaTime(90),
    )
    expect((await post(yellow, META_A.credentials.app_secret)).templates).toBe(1)
    expect((await post(yellow, META_A.credentials.app_secret)).templates).toBe(0)
    expect((await post(greenEarlier, META_A.credentials.app_secret)).templates).toBe(0)
    expect((await row(tpl)).quality).toBe('yellow')
    expect(await history(tpl)).toEqual([['quality', 'green', 'yellow', 'meta']])
    expect((await eventsOf(shopA, tpl)).map((e) => [e.data.field, e.data.old, e.data.new])).toEqual([['quality', 'green', 'yellow']])
  })
})

describe('event choice', () => {
  test('a registration that did not choose template.status_changed gets none', async () => {
    const other = await t.admin('POST', `/accounts/${shopA.accountId}/keys`, { label: 'statuses only' })
    const key = other.body.data.key as string
    const keyId = other.body.data.id as number
    expect((await t.api('POST', '/webhook', key, { url: rx.url('localhost', '/other') })).body.data.events).toEqual(['message.status'])
    const tpl = await template(ids.metaA, 'unchosen')
    expect(
      (await post(notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'PAUSED')), META_A.credentials.app_secret))
        .templates,
    ).toBe(1)
    expect((await eventsOf({ ...shopA, key, keyId }, tpl)).length).toBe(0)
    expect((await eventsOf(shopA, tpl)).length).toBe(1)
  })
})

describe('delivery', () => {
  test('delivered like every event: the spec envelope as compact JSON, Standard Webhooks signature, in the delivery log', async () => {
    const created = await t.admin('POST', `/accounts/${shopA.accountId}/keys`, { label: 'receiver' })
    const keyId = created.body.data.id as number
    const registered = await t.api('POST', '/webhook', created.body.data.key, {
      url: rx.url('localhost', '/templates'),
      events: ['template.status_changed'],
    })
    expect(registered.status).toBe(200)
    const tpl = await template(ids.metaA, 'delivered_change')
    await post(
      notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'DISABLED', { disable_info: { disable_date: metaTime() } })),
      META_A.credentials.app_secret,
    )
    await deliverAll(t)
    const [request, ...more] = rx.requests.filter((r) => r.path === '/templates')
    expect(more).toEqual([])
    const event = new Webhook(registered.body.data.signing_secret).verify(request!.body, request!.headers) as Record<string, unknown>
    expect(event).toMatchObject({
      event: 'template.status_changed',
      data: { template_id: tpl.id, name: 'delivered_change', field: 'status', old: 'approved', new: 'disabled', reason: null },
    })
    expect(request!.body).toStartWith('{"event":"template.status_changed","timestamp":"')
    const log = await t.admin('GET', `/keys/${keyId}/deliveries`)
    expect(log.body.data.items).toHaveLength(1)
    expect(log.body.data.items[0]).toMatchObject({ event: 'template.status_changed', status: 'delivered', message_sid: null })
  })
})

describe("the fake Graph API's template webhooks", () => {
  test("Meta pauses, rates and reinstates a template of its own accord: the fake's store and the service agree", async () => {
    graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
    graph.accountOf.set(META_A.credentials.phone_number_id, WABA_A)
    const fakeTemplate = graph.template(WABA_A, {
      name: 'order_ready',
      language: 'id',
      category: 'UTILITY',
      status: 'APPROVED',
      components: [{ type: 'BODY', text: 'Pesanan {{1}} siap diambil', example: { body_text: [['INV-1001']] } }],
      quality_score: { score: 'GREEN' },
    })
    const stored = await insertTemplate(
      t.db.sql,
      clock,
      {
        senderId: ids.metaA,
        provider: 'meta',
        name: 'order_ready',
        language: 'id',
        category: 'utility',
        parameterFormat: 'positional',
        components: fakeTemplate.components,
        status: 'approved',
        quality: 'green',
        providerRef: fakeTemplate.id,
      },
      'sync',
    )
    const change = async (o: Omit<Parameters<typeof graph.changeTemplate>[0], 'waba' | 'id'>) => {
      const answer = await graph.changeTemplate({ waba: WABA_A, id: fakeTemplate.id, ...o })
      expect(answer.status).toBe(200)
      return ((await answer.json()) as { data: { templates: number } }).data.templates
    }
    expect(await change({ quality: 'RED', time: metaTime(300) })).toBe(1)
    expect(await change({ status: 'PAUSED', reason: 'NONE', time: metaTime(301) })).toBe(1)
    expect(await change({ impendingCategory: 'MARKETING', time: metaTime(302) })).toBe(0)
    expect(await change({ status: 'REINSTATED', time: metaTime(303) })).toBe(1)
    expect(fakeTemplate).toMatchObject({ status: 'APPROVED', category: 'UTILITY', quality_score: { score: 'RED' } })
    expect(await row(stored!)).toMatchObject({ status: 'approved', category: 'utility', quality: 'red', reason: null })
    expect(await history(stored!)).toEqual([
      ['quality', 'green', 'red', 'meta'],
      ['status', 'approved', 'paused', 'meta'],
      ['category_notice', 'utility', 'marketing', 'meta'],
      ['status', 'paused', 'approved', 'meta'],
    ])
  })
})

describe('sends follow the status at once', () => {
  test('from the webhook on, a paused template is refused before charging (nothing sent); reinstated, it sends again', async () => {
    graph.accountOf.set(META_A.credentials.phone_number_id, WABA_A)
    const tpl = await template(ids.metaA, 'shipping_update')
    graph.template(WABA_A, {
      id: tpl.provider_ref!,
      name: tpl.name,
      language: tpl.language,
      category: 'UTILITY',
      status: 'APPROVED',
      components: tpl.components as Record<string, any>[],
    })
    const send = () =>
      t.api('POST', '/messages/send', shopA.key, { to: '081234567001', template_id: tpl.id, variables: { '1': 'INV-1001' } })
    const sends = () => graph.requests.filter((r) => r.path.endsWith('/messages')).length
    const before = await money(t, shopA.accountId)
    const sentBefore = sends()

    await post(
      notification(
        WABA_A,
        'message_template_status_update',
        statusUpdate(tpl, 'PAUSED', { other_info: { title: 'FIRST_PAUSE', description: 'Low quality' } }),
        metaTime(500),
      ),
      META_A.credentials.app_secret,
    )
    const refused = await send()
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 422, code: 'TEMPLATE_NOT_APPROVED' })
    expect(refused.body.error).toContain('is paused (reason: FIRST_PAUSE: Low quality)')
    expect(await money(t, shopA.accountId)).toEqual(before)
    expect(sends()).toBe(sentBefore)

    await post(
      notification(WABA_A, 'message_template_status_update', statusUpdate(tpl, 'REINSTATED'), metaTime(501)),
      META_A.credentials.app_secret,
    )
    const sent = await send()
    expect({ status: sent.status, body: sent.body }).toMatchObject({ status: 200, body: { data: { status: 'sent' } } })
    expect(sends()).toBe(sentBefore + 1)
    expect((await money(t, shopA.accountId)).balance).toBeLessThan(before.balance)
  })
})

describe('sync', () => {
  // Last: a sync of Meta A's account marks every template of the sender it does not list as deleted.
  test('a sync that finds a template changed (or gone) announces it like a webhook, with source sync', async () => {
    graph.accountOf.set(META_A.credentials.phone_number_id, WABA_A)
    const fakeTemplate = graph.template(WABA_A, {
      name: 'synced_change',
      language: 'id',
      category: 'UTILITY',
      status: 'APPROVED',
      components: [{ type: 'BODY', text: 'Tagihan {{1}} jatuh tempo', example: { body_text: [['INV-1001']] } }],
      quality_score: { score: 'GREEN' },
    })
    expect((await t.admin('POST', `/senders/${ids.metaA}/templates/sync`)).status).toBe(200)
    const [synced] = await t.db.sql<{ id: number }[]>`
      select id from wa_templates where sender_id = ${ids.metaA} and name = 'synced_change'`
    const stored = (await getTemplateRow(t.db.sql, Number(synced!.id)))!
    expect(await eventsOf(shopA, stored)).toEqual([])
    fakeTemplate.status = 'PAUSED'
    expect((await t.admin('POST', `/senders/${ids.metaA}/templates/sync`)).status).toBe(200)
    expect((await row(stored)).status).toBe('paused')
    expect(await history(stored)).toEqual([['status', 'approved', 'paused', 'sync']])
    expect((await eventsOf(shopA, stored)).map((e) => [e.data.field, e.data.old, e.data.new])).toEqual([['status', 'approved', 'paused']])
    expect(await eventsOf(shopB, stored)).toEqual([])
    // A template the account no longer lists is deleted, and that is announced too.
    const gone = (
      await t.db.sql<{ id: number }[]>`
      select id from wa_templates where sender_id = ${ids.metaA} and name = 'delivery_eta'`
    )[0]!
    const goneRow = (await getTemplateRow(t.db.sql, Number(gone.id)))!
    expect(goneRow.status).toBe('deleted')
    expect((await eventsOf(shopA, goneRow)).at(-1)!.data).toMatchObject({ field: 'status', new: 'deleted' })
  })
})
