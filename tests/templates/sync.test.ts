// A sender's WhatsApp templates through the admin API against the fake Graph API (issue 30): a sync
// reads every page of the sender's WhatsApp Business Account and stores each template; a second sync
// records each change of status, category and quality (source `sync`), takes an edited definition and
// marks a template no longer listed `deleted`. Creating a template checks it, submits it to Meta as
// given (within Meta's creation limit) and stores it pending; a refusal stores nothing. The deployment's
// default sender (0) syncs with META_BUSINESS_ACCOUNT_ID.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { fakeGraph, type FakeGraph, type FakeTemplate } from '../helpers/fake-graph'
import { fakeTwilio, type FakeTwilio } from '../helpers/fake-twilio'
import { ENV_META, META_A, META_B, SECRET_VALUES, assign, createSender, registerFakes, sendersEnv } from '../helpers/senders'
import { TestClock } from '../../src/lib/clock'

const WABA_A = META_A.credentials.business_account_id
const WABA_B = META_B.credentials.business_account_id

let t: TestApp
let twilio: FakeTwilio
let graph: FakeGraph
const clock = new TestClock()
let metaA: number
let metaB: number
let simulator: number

beforeAll(async () => {
  twilio = fakeTwilio()
  graph = fakeGraph({ clock })
  registerFakes(twilio, graph)
  graph.accountOf.set(META_A.credentials.phone_number_id, WABA_A)
  graph.accountOf.set(META_B.credentials.phone_number_id, WABA_B)
  t = await testApp({ env: sendersEnv(twilio, graph, { WEBHOOK_ALLOW_PRIVATE: 'true' }), clock })
  metaA = await createSender(t, 'meta', META_A)
  metaB = await createSender(t, 'meta', META_B)
  simulator = await createSender(t, 'simulator', { number: '+6281100000099', credentials: {} })
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

const body = (text: string) => ({ type: 'BODY', text })

/** A template as Meta lists it. */
function listed(i: number, over: Partial<FakeTemplate> = {}): Omit<FakeTemplate, 'id'> {
  return {
    name: `order_update_${String(i).padStart(3, '0')}`,
    language: i % 2 === 0 ? 'id' : 'en_US',
    category: 'UTILITY',
    status: 'APPROVED',
    parameter_format: 'POSITIONAL',
    components: [body(`Pesanan {{1}} nomor ${i} sudah dikirim.`)],
    quality_score: { score: 'GREEN' },
    rejected_reason: 'NONE',
    ...over,
  }
}

const templateRequests = () => graph.requests.filter((r) => r.path.endsWith('/message_templates'))

describe('sync', () => {
  test('reads every page of the business account and stores each template; a second sync records what changed', async () => {
    graph.reset()
    graph.templates.delete(WABA_A)
    for (let i = 0; i < 205; i++) graph.template(WABA_A, listed(i))
    graph.template(
      WABA_A,
      listed(900, { name: 'promo_rejected', category: 'MARKETING', status: 'REJECTED', rejected_reason: 'PROMOTIONAL' }),
    )

    const first = await t.admin('POST', `/senders/${metaA}/templates/sync`)
    expect(first.status).toBe(200)
    expect(first.body.data).toEqual({
      sender_id: metaA,
      provider: 'meta',
      listed: 206,
      created: 206,
      changed: 0,
      unchanged: 0,
      gone: 0,
      skipped: [],
    })
    // Three pages of 100, each asked with the cursor of the one before, the token as bearer only.
    const pages = templateRequests()
    expect(pages.map((r) => r.method)).toEqual(['GET', 'GET', 'GET'])
    for (const page of pages) {
      expect(page.path).toBe(`/v21.0/${WABA_A}/message_templates`)
      const query = new URLSearchParams(page.query)
      expect(query.get('limit')).toBe('100')
      expect(query.get('fields')).toBe('name,language,category,status,components,parameter_format,quality_score,rejected_reason,id')
      expect(page.query).not.toContain(META_A.credentials.access_token)
      expect(page.headers.get('authorization')).toBe(`Bearer ${META_A.credentials.access_token}`)
    }
    expect(new URLSearchParams(pages[0]!.query).get('after')).toBeNull()
    expect(new URLSearchParams(pages[1]!.query).get('after')).not.toBeNull()

    const list = await t.admin('GET', `/senders/${metaA}/templates`)
    expect(list.status).toBe(200)
    expect(list.body.data).toHaveLength(206)
    const rejected = list.body.data.find((x: any) => x.name === 'promo_rejected')
    expect(rejected).toMatchObject({
      sender_id: metaA,
      provider: 'meta',
      language: 'id',
      category: 'marketing',
      status: 'rejected',
      reason: 'PROMOTIONAL',
      quality: 'green',
      parameter_format: 'positional',
      provider_ref: graph.templates.get(WABA_A)!.at(-1)!.id,
    })
    const seven = list.body.data.find((x: any) => x.name === 'order_update_007')
    expect(seven).toMatchObject({
      language: 'en_US',
      status: 'approved',
      reason: null,
      components: [body('Pesanan {{1}} nomor 7 sudah dikirim.')],
    })

    // An account that sends through A, its key registered for the event.
    const shop = await t.account(1000)
    await assign(t, shop.accountId, metaA, true)
    const registered = await t.api('POST', '/webhook', shop.key, { url: 'http://127.0.0.1:9/hook', events: ['template.status_changed'] })
    expect(registered.status).toBe(200)

    // Meta pauses one, recategorises another, lowers a third's quality, edits a fourth and deletes a fifth.
    const store = graph.templates.get(WABA_A)!
    store[7]!.status = 'PAUSED'
    store[8]!.category = 'MARKETING'
    store[9]!.quality_score = { score: 'YELLOW' }
    store[10]!.components = [body('Pesanan {{1}} sudah sampai.')]
    store.splice(11, 1)
    const second = await t.admin('POST', `/senders/${metaA}/templates/sync`)
    expect(second.body.data).toMatchObject({ listed: 205, created: 0, changed: 4, unchanged: 201, gone: 1, skipped: [] })
    // Once more: nothing changes, nothing is recorded.
    const third = await t.admin('POST', `/senders/${metaA}/templates/sync`)
    expect(third.body.data).toMatchObject({ listed: 205, created: 0, changed: 0, unchanged: 205, gone: 0 })
    // Each change of status, category or quality announced once to the account (a definition's edit is no such change).
    const events = await t.db.sql<{ payload: string }[]>`
      select payload from webhook_events where api_key_id = ${shop.keyId} and event = 'template.status_changed' order by id`
    expect(events.map((e) => JSON.parse(e.payload).data).map((d: any) => [d.name, d.field, d.old, d.new])).toEqual([
      ['order_update_007', 'status', 'approved', 'paused'],
      ['order_update_008', 'category', 'utility', 'marketing'],
      ['order_update_009', 'quality', 'green', 'yellow'],
      ['order_update_011', 'status', 'approved', 'deleted'],
    ])

    const one = await t.admin('GET', `/whatsapp-templates/${seven.id}`)
    expect(one.status).toBe(200)
    expect(one.body.data).toMatchObject({ id: seven.id, status: 'paused' })
    expect(one.body.data.history.map((h: any) => [h.field, h.old, h.new, h.source])).toEqual([
      ['created', null, 'approved', 'sync'],
      ['status', 'approved', 'paused', 'sync'],
    ])
    const rows = await t.db.sql<{ name: string; status: string; category: string; quality: string; components: any }[]>`
      select name, status, category, quality, components from wa_templates
      where sender_id = ${metaA} and name in ('order_update_008', 'order_update_009', 'order_update_010', 'order_update_011') order by name`
    expect(rows.map((r) => [r.name, r.status, r.category, r.quality])).toEqual([
      ['order_update_008', 'approved', 'marketing', 'green'],
      ['order_update_009', 'approved', 'utility', 'yellow'],
      ['order_update_010', 'approved', 'utility', 'green'],
      ['order_update_011', 'deleted', 'utility', 'green'],
    ])
    expect(rows[2]!.components).toEqual([body('Pesanan {{1}} sudah sampai.')])
    const fields = await t.db.sql<{ name: string; field: string }[]>`
      select w.name, c.field from wa_template_changes c join wa_templates w on w.id = c.template_id
      where w.sender_id = ${metaA} and c.field <> 'created' order by w.name, c.id`
    expect(fields.map((f) => `${f.name}:${f.field}`)).toEqual([
      'order_update_007:status',
      'order_update_008:category',
      'order_update_009:quality',
      'order_update_010:components',
      'order_update_011:status',
    ])
  }, 60_000)

  test("templates of a category or status the service does not know are skipped, named; one sender's sync leaves another's alone", async () => {
    graph.reset()
    graph.templates.delete(WABA_B)
    graph.template(WABA_B, listed(1))
    graph.template(WABA_B, listed(2, { category: 'TRANSACTIONAL' as never }))
    graph.template(WABA_B, listed(3, { status: 'SOMETHING_NEW' }))
    const before = await t.db.sql`select count(*)::int as n from wa_templates where sender_id = ${metaA}`
    const answer = await t.admin('POST', `/senders/${metaB}/templates/sync`)
    expect(answer.status).toBe(200)
    expect(answer.body.data).toMatchObject({ listed: 3, created: 1, gone: 0 })
    expect(answer.body.data.skipped).toEqual([
      { name: 'order_update_002', language: 'id', why: 'category "TRANSACTIONAL" is not marketing, utility or authentication' },
      { name: 'order_update_003', language: 'en_US', why: 'status "SOMETHING_NEW" is not one the service knows' },
    ])
    expect(await t.db.sql`select count(*)::int as n from wa_templates where sender_id = ${metaA}`).toEqual(before)
    // Every request for B's account carried B's token (the fake refuses any other).
    expect(templateRequests().every((r) => r.status === 200)).toBe(true)
  })

  test('a listing Meta refuses changes nothing: 502 with its words, no credential in them', async () => {
    graph.reset()
    graph.echoCredentials = true
    const stored = graph.phones.get(META_B.credentials.phone_number_id)!
    const token = stored.token
    stored.token = 'EAArotatedTokenZZZZZZZZZZZZZZZZZZZZZZZ'
    try {
      const before = await t.db.sql`select id, status, updated_at from wa_templates where sender_id = ${metaB} order by id`
      const answer = await t.admin('POST', `/senders/${metaB}/templates/sync`)
      expect(answer.status).toBe(502)
      expect(answer.body.code).toBe('BAD_GATEWAY')
      expect(answer.body.error).toContain('Meta answered HTTP 401')
      for (const secret of SECRET_VALUES) expect(JSON.stringify(answer.body)).not.toContain(secret)
      expect(await t.db.sql`select id, status, updated_at from wa_templates where sender_id = ${metaB} order by id`).toEqual(before)
    } finally {
      stored.token = token
    }
  })

  test("a simulator sender's templates live here only; sender 0 (a Twilio default) syncs from Twilio; an unknown sender is 404", async () => {
    const sim = await t.admin('POST', `/senders/${simulator}/templates/sync`)
    expect(sim.status).toBe(422)
    expect(sim.body.error).toContain('keeps its templates here only')
    // The deployment's Twilio account has no Content templates in the fake (tests/templates/twilio-sync.test.ts syncs some).
    const deployment = await t.admin('POST', '/senders/0/templates/sync')
    expect(deployment.status).toBe(200)
    expect(deployment.body.data).toMatchObject({ sender_id: 0, provider: 'twilio', listed: 0 })
    expect((await t.admin('GET', '/senders/0/templates')).body.data).toEqual([])
    expect((await t.admin('POST', '/senders/999999/templates/sync')).status).toBe(404)
    expect((await t.admin('GET', '/senders/999999/templates')).status).toBe(404)
  })
})

const invoiceDue = (name = 'invoice_due') => ({
  name,
  language: 'id',
  category: 'UTILITY',
  components: [
    { type: 'HEADER', format: 'TEXT', text: 'Tagihan {{1}}', example: { header_text: ['INV-1001'] } },
    {
      type: 'BODY',
      text: 'Tagihan {{1}} sebesar {{2}} jatuh tempo {{3}}.',
      example: { body_text: [['INV-1001', 'Rp 1.250.000', '5 Desember']] },
    },
    { type: 'FOOTER', text: 'Toko Maju' },
    {
      type: 'BUTTONS',
      buttons: [{ type: 'URL', text: 'Bayar', url: 'https://pay.example.com/i/{{1}}', example: ['https://pay.example.com/i/INV-1001'] }],
    },
  ],
  allow_category_change: true,
})

describe('create and submit', () => {
  test("a Meta sender's template goes to Meta as given and is stored pending with Meta's id; a second of that name is 409", async () => {
    graph.reset()
    const definition = invoiceDue()
    const created = await t.admin('POST', `/senders/${metaA}/templates`, definition)
    expect(created.status).toBe(201)
    const [submitted] = templateRequests()
    expect(submitted).toMatchObject({ method: 'POST', path: `/v21.0/${WABA_A}/message_templates`, status: 200 })
    expect(JSON.parse(submitted!.body)).toEqual(definition)
    expect(submitted!.headers.get('authorization')).toBe(`Bearer ${META_A.credentials.access_token}`)
    const atMeta = graph.templates.get(WABA_A)!.find((x) => x.name === 'invoice_due')!
    expect(created.body.data).toMatchObject({
      sender_id: metaA,
      provider: 'meta',
      name: 'invoice_due',
      language: 'id',
      category: 'utility',
      parameter_format: 'positional',
      status: 'pending',
      quality: 'unknown',
      provider_ref: atMeta.id,
      components: definition.components,
    })
    const one = await t.admin('GET', `/whatsapp-templates/${created.body.data.id}`)
    expect(one.body.data.history).toMatchObject([{ field: 'created', old: null, new: 'pending', source: 'operator' }])

    graph.reset()
    const again = await t.admin('POST', `/senders/${metaA}/templates`, definition)
    expect(again.status).toBe(409)
    expect(templateRequests()).toHaveLength(0)

    // Meta approves it; the next sync says so.
    atMeta.status = 'APPROVED'
    const synced = await t.admin('POST', `/senders/${metaA}/templates/sync`)
    expect(synced.body.data.changed).toBe(1)
    expect((await t.admin('GET', `/whatsapp-templates/${created.body.data.id}`)).body.data.status).toBe('approved')
  })

  test('a definition that breaks a rule is 422 naming the part, and never reaches Meta', async () => {
    graph.reset()
    const cases: [Record<string, unknown>, string][] = [
      [{ ...invoiceDue(), name: 'Invoice Due' }, 'name:'],
      [{ ...invoiceDue(), category: 'PROMO' }, 'category:'],
      [{ ...invoiceDue(), components: [{ type: 'FOOTER', text: 'x' }] }, 'components: must have a BODY'],
      [
        { ...invoiceDue(), components: [{ type: 'BODY', text: 'Halo {{order_id}}' }] },
        'components[0].text: {{order_id}} is a named parameter',
      ],
      [{ ...invoiceDue(), components: [{ type: 'BODY', text: 'x' }, { type: 'CAROUSEL_X' }] }, 'components[1].type:'],
    ]
    for (const [definition, part] of cases) {
      const answer = await t.admin('POST', `/senders/${metaA}/templates`, definition)
      expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 422, code: 'VALIDATION_ERROR' })
      expect(answer.body.error).toContain(part)
    }
    expect(templateRequests()).toHaveLength(0)
  })

  test("Meta's refusal stores nothing: 502 with its code; past its creation limit, 503 until the hour has passed", async () => {
    graph.reset()
    // The account has it already at Meta (not yet synced here): Meta refuses.
    graph.template(WABA_B, { ...listed(0), name: 'already_there', status: 'PENDING' })
    const refused = await t.admin('POST', `/senders/${metaB}/templates`, invoiceDue('already_there'))
    expect(refused.status).toBe(502)
    expect(refused.body).toMatchObject({ code: 'BAD_GATEWAY', provider_code: 100 })
    expect(refused.body.error).toContain('Content in this language already exists')

    // Meta's words may quote the request's token: the answer never does.
    graph.echoCredentials = true
    const echoed = await t.admin('POST', `/senders/${metaB}/templates`, invoiceDue('already_there'))
    expect(echoed.status).toBe(502)
    expect(echoed.body.error).toContain('Content in this language already exists')
    expect(echoed.body.error).toContain('[redacted]')
    for (const secret of SECRET_VALUES) expect(JSON.stringify(echoed.body)).not.toContain(secret)
    graph.echoCredentials = false

    graph.creationLimit = 2
    expect((await t.admin('POST', `/senders/${metaB}/templates`, invoiceDue('limit_one'))).status).toBe(201)
    expect((await t.admin('POST', `/senders/${metaB}/templates`, invoiceDue('limit_two'))).status).toBe(201)
    const over = await t.admin('POST', `/senders/${metaB}/templates`, invoiceDue('limit_three'))
    expect(over.status).toBe(503)
    expect(over.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', provider_code: 4 })
    const names = await t.db.sql<{ name: string }[]>`
      select name from wa_templates where sender_id = ${metaB} and name in ('already_there', 'limit_one', 'limit_two', 'limit_three') order by name`
    expect(names.map((n) => n.name)).toEqual(['limit_one', 'limit_two'])
    await clock.advance(3_600_000)
    expect((await t.admin('POST', `/senders/${metaB}/templates`, invoiceDue('limit_three'))).status).toBe(201)
  })

  test("a simulator sender's template is stored pending without any provider call", async () => {
    graph.reset()
    const created = await t.admin('POST', `/senders/${simulator}/templates`, {
      name: 'order_code',
      language: 'en_US',
      category: 'AUTHENTICATION',
      components: [
        { type: 'BODY', add_security_recommendation: true },
        { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'COPY_CODE' }] },
      ],
    })
    expect(created.status).toBe(201)
    expect(created.body.data).toMatchObject({
      sender_id: simulator,
      provider: 'simulator',
      category: 'authentication',
      status: 'pending',
      provider_ref: null,
    })
    expect(graph.requests).toHaveLength(0)
    const list = await t.admin('GET', `/senders/${simulator}/templates`)
    expect(list.body.data.map((x: any) => x.name)).toEqual(['order_code'])
    expect((await t.admin('GET', `/whatsapp-templates/${created.body.data.id}`)).body.data.sender_id).toBe(simulator)
    // An id that names no WhatsApp template.
    expect((await t.admin('GET', '/whatsapp-templates/999999')).status).toBe(404)
  })
})

describe("the deployment's default Meta sender", () => {
  test('syncs and submits with META_BUSINESS_ACCOUNT_ID; without it, 422 naming the variable', async () => {
    const waba = '300000000000009'
    graph.phone(ENV_META.phoneNumberId, 'EAAenvMetaToken5ecretQQQQQQQQQQQQQQ')
    graph.accountOf.set(ENV_META.phoneNumberId, waba)
    graph.templates.delete(waba)
    graph.template(waba, listed(1, { name: 'hello_default' }))
    const env = {
      ...sendersEnv(twilio, graph),
      PROVIDER: 'meta',
      META_ACCESS_TOKEN: 'EAAenvMetaToken5ecretQQQQQQQQQQQQQQ',
    }
    const without = await testApp({ env, clock })
    try {
      const answer = await without.admin('POST', '/senders/0/templates/sync')
      expect(answer.status).toBe(422)
      expect(answer.body.error).toContain('META_BUSINESS_ACCOUNT_ID')
      // The periodic sync (every 5 minutes by default) passes by a sender its creation has just synced,
      // and a Meta default sender without META_BUSINESS_ACCOUNT_ID cannot reach its templates.
      await createSender(without, 'meta', META_A)
      graph.reset()
      expect(await without.runWorker('template-sync')).toBe(0)
      expect(templateRequests()).toEqual([])
    } finally {
      await without.close()
    }
    const app = await testApp({ env: { ...env, META_BUSINESS_ACCOUNT_ID: waba }, clock })
    try {
      graph.reset()
      const synced = await app.admin('POST', '/senders/0/templates/sync')
      expect(synced.status).toBe(200)
      expect(synced.body.data).toMatchObject({ sender_id: 0, provider: 'meta', listed: 1, created: 1 })
      expect(templateRequests()[0]!.path).toBe(`/v21.0/${waba}/message_templates`)
      const list = await app.admin('GET', '/senders/0/templates')
      expect(list.body.data).toMatchObject([{ name: 'hello_default', sender_id: 0, status: 'approved' }])
      const created = await app.admin('POST', '/senders/0/templates', invoiceDue())
      expect(created.status).toBe(201)
      expect(created.body.data).toMatchObject({ sender_id: 0, status: 'pending' })
      const [row] = await app.db.sql`select sender_id from wa_templates where id = ${created.body.data.id}`
      expect(row).toEqual({ sender_id: null })
    } finally {
      await app.close()
    }
  }, 60_000)

  test('TEMPLATE_SYNC_MINUTES: the periodic sync reads every Meta sender and the default one; one failing leaves the others synced', async () => {
    const waba = '300000000000009'
    const env = {
      ...sendersEnv(twilio, graph),
      PROVIDER: 'meta',
      META_ACCESS_TOKEN: 'EAAenvMetaToken5ecretQQQQQQQQQQQQQQ',
      META_BUSINESS_ACCOUNT_ID: waba,
      TEMPLATE_SYNC_MINUTES: '5',
    }
    const app = await testApp({ env, clock })
    try {
      // B's business account is not B's number's: Meta refuses B's listing (its sync at creation fails too, the sender is made).
      graph.accountOf.set(META_B.credentials.phone_number_id, '999999999999999')
      let a: number
      let b: number
      try {
        a = await createSender(app, 'meta', META_A)
        b = await createSender(app, 'meta', META_B)
        await createSender(app, 'simulator', { number: '+6281100000098', credentials: {} })
        // Within the 5 minutes after their creation's sync (which another instance could have made),
        // the periodic sync lists only the default sender, which keeps no last sync.
        graph.reset()
        expect(await app.runWorker('template-sync')).toBe(0)
        expect(templateRequests().map((r) => r.path.split('/')[2])).toEqual([waba])
        await clock.advance(5 * 60_000)
        graph.reset()
        expect(await app.runWorker('template-sync')).toBe(0)
      } finally {
        graph.accountOf.set(META_B.credentials.phone_number_id, WABA_B)
      }
      const asked = new Set(templateRequests().map((r) => r.path.split('/')[2]))
      expect(asked).toEqual(new Set([waba, WABA_A, WABA_B]))
      const counts = await app.db.sql<{ sender: number; n: number }[]>`
        select coalesce(sender_id, 0)::int as sender, count(*)::int as n from wa_templates group by 1 order by 1`
      expect([...counts]).toEqual([
        { sender: 0, n: graph.templates.get(waba)!.length },
        { sender: a, n: graph.templates.get(WABA_A)!.length },
      ])
      expect(counts.some((c) => c.sender === b)).toBe(false)
    } finally {
      await app.close()
    }
  }, 60_000)
})
