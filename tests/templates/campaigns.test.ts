// Campaigns of a WhatsApp template (issue 30): the campaign maps each parameter the template needs to
// a contact's field, one of its attributes or a constant (422 naming a parameter unmapped, unknown or
// badly sourced); the worker fills each recipient's values and the fake Graph API receives them in
// Meta's reference shape, from the template's own sender; a recipient without a value is skipped,
// uncharged, and counted; a template paused by Meta's webhook pauses the campaign before anything more
// is charged, and its approval resumes it by itself (the scheduler's step). Old account templates in
// campaigns are covered by tests/campaigns/*.

import { beforeAll, describe, expect, test } from 'bun:test'
import { money, type TestApp } from '../helpers/app'
import { type FakeTemplate } from '../helpers/fake-graph'
import { assign, createSender, META_A, META_B, TWILIO_A } from '../helpers/senders'
import { templateFakes, WABA_A } from '../helpers/templates'
import { errorEnvelope } from '../helpers/envelope'
import { dashboardUser } from '../helpers/web'
import { insertTemplate, type NewTemplate, type WaTemplate } from '../../src/modules/templates/catalog'

const fakes = templateFakes()
const { graph } = fakes

let t: TestApp
let metaA: number
let metaB: number
let twilioA: number
beforeAll(async () => {
  t = await fakes.start()
  metaA = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
  metaB = await createSender(t, 'meta', META_B, { recipient_gap_ms: 0 })
  twilioA = await createSender(t, 'twilio', TWILIO_A, { recipient_gap_ms: 0 })
  graph.callback = { publicBaseUrl: 'https://api.example.com', deliver: (r: Request) => t.app.handle(r) }
}, 60_000)

let serial = 0
/** A template of Meta A, approved, kept by the fake's WhatsApp Business Account as Meta shows it. */
async function template(t0: Omit<NewTemplate, 'senderId' | 'provider' | 'name'>) {
  const name = `camp_${++serial}_${Math.random().toString(36).slice(2, 8)}`
  const fake = graph.template(WABA_A, {
    name,
    language: t0.language,
    category: t0.category.toUpperCase() as FakeTemplate['category'],
    status: (t0.status ?? 'approved').toUpperCase(),
    parameter_format: t0.parameterFormat === 'named' ? 'NAMED' : 'POSITIONAL',
    components: t0.components as Record<string, any>[],
  })
  const row = await t.db.sql.begin((tx) =>
    insertTemplate(tx, t.deps.clock, { status: 'approved', ...t0, name, senderId: metaA, provider: 'meta', providerRef: fake.id }, 'sync'),
  )
  return { tpl: row as WaTemplate, fakeId: fake.id }
}

const ORDER = {
  language: 'en_US',
  category: 'utility' as const,
  parameterFormat: 'positional' as const,
  components: [
    { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['A-1'] } },
    { type: 'BODY', text: 'Hi {{1}}, order {{2}} is ready in {{3}}.', example: { body_text: [['Budi', 'A-1', 'Jakarta']] } },
    { type: 'FOOTER', text: 'Reply STOP to opt out' },
    {
      type: 'BUTTONS',
      buttons: [
        { type: 'URL', text: 'Track', url: 'https://track.example.com/{{1}}', example: ['https://track.example.com/A-1'] },
        { type: 'COPY_CODE', example: 'SAVE10' },
      ],
    },
  ],
}

const NAMED = {
  language: 'id',
  category: 'marketing' as const,
  parameterFormat: 'named' as const,
  components: [
    {
      type: 'BODY',
      text: 'Halo {{first_name}}, pesanan {{order_id}} siap.',
      example: {
        body_text_named_params: [
          { param_name: 'first_name', example: 'Budi' },
          { param_name: 'order_id', example: 'A-1' },
        ],
      },
    },
  ],
}

const ORDER_PARAMETERS = {
  variables: { '1': { field: 'name' }, '2': { attribute: 'order_id' }, '3': { field: 'city' } },
  header: { attribute: 'order_id' },
  buttons: { '0': { attribute: 'order_id' }, '1': { constant: 'SALE10' } },
}

/** An account (price 10) with Meta A assigned (Twilio A its default), `contacts` tagged "vip" and a segment of them. */
async function shop(contacts: { name: string; phone: string; city?: string; attributes?: Record<string, string> }[], balance = 1_000) {
  const a = await t.account(balance, { price: 10 })
  await assign(t, a.accountId, twilioA, true)
  await assign(t, a.accountId, metaA)
  for (const c of contacts) {
    const made = await t.api('POST', '/contacts', a.key, { ...c, tags: 'vip' })
    expect(made.status).toBe(201)
  }
  const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
  return { ...a, segmentId: segment.body.data.id as number }
}

async function stats(id: number) {
  return (await t.admin('GET', `/campaigns/${id}`)).body.data
}

const sentBodies = () => graph.requests.filter((r) => r.path.endsWith('/messages')).map((r) => JSON.parse(r.body))

describe('the mapping is checked when the campaign is created', () => {
  test('every parameter mapped, none other, each source one of three: else 422 naming it', async () => {
    const { tpl } = await template(ORDER)
    const a = await shop([])
    const create = (parameters: unknown, extra: Record<string, unknown> = {}) =>
      t.api('POST', '/campaigns', a.key, { name: 'wa', template_id: tpl.id, segment_id: a.segmentId, parameters, ...extra })
    const what = `template ${tpl.id} (${tpl.name})`
    const cases: [unknown, string][] = [
      [undefined, `parameters.variables.1: missing (${what} takes: 1, 2, 3)`],
      [
        { ...ORDER_PARAMETERS, variables: { '1': { field: 'name' }, '2': { field: 'name' } } },
        `parameters.variables.3: missing (${what} takes: 1, 2, 3)`,
      ],
      [
        { ...ORDER_PARAMETERS, variables: { ...ORDER_PARAMETERS.variables, '4': { field: 'name' } } },
        `parameters.variables.4: not a parameter of ${what} (its parameters: 1, 2, 3)`,
      ],
      [{ ...ORDER_PARAMETERS, header: undefined }, `parameters.header: missing (${what}'s header takes its {{1}})`],
      [{ ...ORDER_PARAMETERS, buttons: { '0': { constant: 'x' } } }, `parameters.buttons.1: missing (button 1 of ${what} takes a value)`],
      [
        { ...ORDER_PARAMETERS, buttons: { ...ORDER_PARAMETERS.buttons, '2': { constant: 'x' } } },
        `parameters.buttons.2: button 2 of ${what} takes no value (buttons that do: 0, 1)`,
      ],
      [
        { ...ORDER_PARAMETERS, variables: { ...ORDER_PARAMETERS.variables, '1': { field: 'birthday' } } },
        'parameters.variables.1.field: must be one of name, phone, email, city (got "birthday")',
      ],
      [
        { ...ORDER_PARAMETERS, variables: { ...ORDER_PARAMETERS.variables, '1': { field: 'name', constant: 'x' } } },
        'parameters.variables.1: give exactly one of field, attribute or constant',
      ],
      [
        { ...ORDER_PARAMETERS, variables: { ...ORDER_PARAMETERS.variables, '2': { attribute: 'order-id' } } },
        'parameters.variables.2.attribute: must be 1 to 64 letters, digits or underscores',
      ],
      [{ ...ORDER_PARAMETERS, header: { constant: ' ' } }, 'parameters.header.constant: must not be empty'],
    ]
    for (const [parameters, error] of cases) {
      const res = await create(parameters)
      expect({ parameters, status: res.status, body: res.body }).toEqual({
        parameters,
        status: 422,
        body: errorEnvelope(res.headers, 'VALIDATION_ERROR', error),
      })
    }
    // Another sender than the template's own.
    const other = await create(ORDER_PARAMETERS, { from: String(twilioA) })
    expect([other.status, other.body.code, other.body.error]).toEqual([
      422,
      'TEMPLATE_NOT_APPROVED',
      `from: template ${tpl.id} (${tpl.name}, en_US) is approved for sender ${metaA}, and sender ${twilioA} has no template ` +
        `${tpl.name} in en_US; leave out from to send it from its own sender; nothing was charged`,
    ])
    // Another of the account's senders with a template of the same name and language: that one, as a single send.
    const twin = await insertTemplate(
      t.db.sql,
      t.deps.clock,
      { ...ORDER, status: 'approved', name: tpl.name, senderId: twilioA, provider: 'twilio', providerRef: `HX${'ab'.repeat(16)}` },
      'sync',
    )
    const fromTwin = await create(ORDER_PARAMETERS, { from: String(twilioA) })
    expect([fromTwin.status, fromTwin.body.data?.campaign?.template_id, fromTwin.body.data?.campaign?.sender_id]).toEqual([
      201,
      twin!.id,
      twilioA,
    ])
    // A template of a sender the account does not have is no template of it.
    const b = await t.account(1_000)
    await assign(t, b.accountId, metaB, true)
    const bSegment = await t.admin('POST', `/accounts/${b.accountId}/segments`, { name: 'vips', tag: 'vip' })
    const foreign = await t.api('POST', '/campaigns', b.key, {
      name: 'x',
      template_id: tpl.id,
      segment_id: bSegment.body.data.id,
      parameters: ORDER_PARAMETERS,
    })
    expect([foreign.status, foreign.body.error]).toEqual([422, `template_id: template ${tpl.id} does not exist`])
    // An account template takes no parameters.
    const old = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'old', body: 'Hi {{name}}' })
    const mixed = await t.api('POST', '/campaigns', a.key, {
      name: 'x',
      template_id: old.body.data.id,
      segment_id: a.segmentId,
      parameters: ORDER_PARAMETERS,
    })
    expect([mixed.status, mixed.body.error]).toEqual([
      422,
      `parameters: only with a WhatsApp template (template ${old.body.data.id} is an account template)`,
    ])

    // Mapped right: a draft from the template's own sender, its mapping shown.
    const made = await create(ORDER_PARAMETERS)
    expect(made.status).toBe(201)
    expect(made.body.data.campaign).toMatchObject({ template_id: tpl.id, sender_id: metaA, parameters: ORDER_PARAMETERS, status: 'draft' })
    const shown = await t.api('GET', `/campaigns/${made.body.data.campaign.id}`, a.key)
    expect(shown.body.data.campaign.parameters).toEqual(ORDER_PARAMETERS)
    expect(shown.body.data.stats.missing_values).toBe(0)
  })
})

describe('running it', () => {
  test("each recipient's values reach Meta in its reference shape; one without a value is skipped uncharged", async () => {
    const { tpl } = await template(ORDER)
    const a = await shop([
      { name: 'Budi', phone: '081200000001', city: 'Jakarta', attributes: { order_id: 'A-100' } },
      { name: 'Sari', phone: '081200000002', city: 'Bandung', attributes: { order_id: 'B-200' } },
      { name: 'Tono', phone: '081200000003', city: 'Medan' }, // no order_id: skipped
    ])
    const made = await t.api('POST', '/campaigns', a.key, {
      name: 'orders',
      template_id: tpl.id,
      segment_id: a.segmentId,
      parameters: ORDER_PARAMETERS,
    })
    expect(made.status).toBe(201)
    const id: number = made.body.data.campaign.id
    expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
    await t.runWorker('campaign-runner')

    const detail = await stats(id)
    expect(detail.campaign.status).toBe('sent')
    expect(detail.stats).toMatchObject({ total: 3, sent: 2, failed: 0, missing_values: 1, window_closed: 0 })
    expect(await money(t, a.accountId)).toEqual({ balance: 1_000 - 20, ledgerSum: 1_000 - 20 })

    const bodies = sentBodies().sort((x, y) => x.to.localeCompare(y.to))
    expect(graph.requests.every((r) => !r.path.endsWith('/messages') || r.path.includes(META_A.credentials.phone_number_id))).toBe(true)
    const expected = (to: string, name: string, order: string, city: string) => ({
      messaging_product: 'whatsapp',
      to,
      type: 'template',
      template: {
        name: tpl.name,
        language: { code: 'en_US' },
        components: [
          { type: 'header', parameters: [{ type: 'text', text: order }] },
          {
            type: 'body',
            parameters: [
              { type: 'text', text: name },
              { type: 'text', text: order },
              { type: 'text', text: city },
            ],
          },
          { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: order }] },
          { type: 'button', sub_type: 'copy_code', index: '1', parameters: [{ type: 'coupon_code', coupon_code: 'SALE10' }] },
        ],
      },
    })
    expect(bodies).toEqual([expected('6281200000001', 'Budi', 'A-100', 'Jakarta'), expected('6281200000002', 'Sari', 'B-200', 'Bandung')])

    // The messages keep the text the customer saw and what the provider got (a recovered hand-off sends the same).
    const messages = await t.db.sql<{ phone: string; body: string; template_id: number; provider_template: any }[]>`
      select phone, body, template_id, provider_template from messages where campaign_id = ${id} order by phone`
    expect(messages.map((m) => [m.phone, m.body, m.template_id])).toEqual([
      ['+6281200000001', 'Order A-100\n\nHi Budi, order A-100 is ready in Jakarta.\n\nReply STOP to opt out', tpl.id],
      ['+6281200000002', 'Order B-200\n\nHi Sari, order B-200 is ready in Bandung.\n\nReply STOP to opt out', tpl.id],
    ])
    expect(messages[0]!.provider_template).toMatchObject({ provider: 'meta', ref: tpl.name, language: 'en_US', templateId: tpl.id })
  })

  test('named parameters go with their names; the template goes outside the 24-hour window', async () => {
    const { tpl } = await template(NAMED)
    const a = await shop([{ name: 'Budi', phone: '081200000011', attributes: { order_id: 'N-1' } }])
    const made = await t.api('POST', '/campaigns', a.key, {
      name: 'named',
      template_id: tpl.id,
      segment_id: a.segmentId,
      parameters: { variables: { first_name: { field: 'name' }, order_id: { attribute: 'order_id' } } },
    })
    expect(made.status).toBe(201)
    const id: number = made.body.data.campaign.id
    await t.admin('POST', `/campaigns/${id}/run`)
    await t.runWorker('campaign-runner')
    expect((await stats(id)).stats).toMatchObject({ total: 1, sent: 1, window_closed: 0, missing_values: 0 })
    expect(sentBodies()[0].template.components).toEqual([
      {
        type: 'body',
        parameters: [
          { type: 'text', parameter_name: 'first_name', text: 'Budi' },
          { type: 'text', parameter_name: 'order_id', text: 'N-1' },
        ],
      },
    ])
  })
})

describe("the template's status", () => {
  test('paused by Meta: the campaign pauses before charging; approved again: it resumes by itself', async () => {
    const { tpl, fakeId } = await template(NAMED)
    const a = await shop([
      { name: 'Budi', phone: '081200000021', attributes: { order_id: 'P-1' } },
      { name: 'Sari', phone: '081200000022', attributes: { order_id: 'P-2' } },
    ])
    const made = await t.api('POST', '/campaigns', a.key, {
      name: 'paused',
      template_id: tpl.id,
      segment_id: a.segmentId,
      parameters: { variables: { first_name: { field: 'name' }, order_id: { attribute: 'order_id' } } },
    })
    const id: number = made.body.data.campaign.id

    const base = Math.floor(t.deps.clock.now().getTime() / 1000)
    const paused = await graph.changeTemplate({ waba: WABA_A, id: fakeId, status: 'PAUSED', reason: 'LOW_QUALITY', time: base + 1 })
    expect(paused.status).toBe(200)
    expect((await t.api('GET', `/templates/${tpl.id}`, a.key)).body.data.status).toBe('paused')

    await t.admin('POST', `/campaigns/${id}/run`)
    await t.runWorker('campaign-runner')
    let detail = await stats(id)
    expect(detail.campaign.status).toBe('paused')
    expect(detail.campaign.pause_reason).toStartWith(`TEMPLATE_NOT_APPROVED: template ${tpl.id} (${tpl.name}, id) is paused`)
    expect(detail.stats).toMatchObject({ sent: 0, failed: 0 })
    expect(sentBodies()).toEqual([])
    expect(await money(t, a.accountId)).toEqual({ balance: 1_000, ledgerSum: 1_000 })

    // The scheduler leaves it paused while the template is.
    await t.runWorker('campaign-scheduler')
    expect((await stats(id)).campaign.status).toBe('paused')

    const approved = await graph.changeTemplate({ waba: WABA_A, id: fakeId, status: 'APPROVED', time: base + 2 })
    expect(approved.status).toBe(200)
    await t.runWorker('campaign-scheduler')
    await t.runWorker('campaign-runner')
    detail = await stats(id)
    expect(detail.campaign).toMatchObject({ status: 'sent', pause_reason: null })
    expect(detail.stats).toMatchObject({ total: 2, sent: 2 })
    expect(
      sentBodies()
        .map((b) => b.to)
        .sort(),
    ).toEqual(['6281200000021', '6281200000022'])
    expect(await money(t, a.accountId)).toEqual({ balance: 980, ledgerSum: 980 })
  })
})

describe('the dashboard', () => {
  test('the campaign form shows a select per parameter; a missing attribute key is refused at the form; the page shows the mapping', async () => {
    const { tpl } = await template(ORDER)
    const a = await shop([{ name: 'Budi', phone: '081200000031', city: 'Solo', attributes: { order_id: 'D-1' } }])
    const { client } = await dashboardUser(
      t,
      `h8-${Math.random().toString(36).slice(2, 8)}@example.com`,
      'correct horse battery',
      a.accountId,
    )
    const list = await client.get('/dashboard/campaigns')
    expect(list.status).toBe(200)
    expect(list.text).toContain(`${tpl.name} (en_US, approved)`)
    const page = await client.get(`/dashboard/campaigns?wa_template=${tpl.id}`)
    expect(page.status).toBe(200)
    for (const label of [
      'Header {{1}}',
      'Body {{1}}',
      'Body {{2}}',
      'Body {{3}}',
      'Button 1 (URL&#39;s {{1}})',
      'Button 2 (coupon code)',
    ]) {
      expect(page.text).toContain(label)
    }
    expect(page.text).toContain('name="from:variables.2"')
    expect(page.text).toContain(`<input type="hidden" name="template_id" value="${tpl.id}"`)

    const form = {
      _csrf: page.csrf!,
      name: 'dash orders',
      template_id: String(tpl.id),
      segment_id: String(a.segmentId),
      sender_id: String(metaA),
      'from:header': 'attribute',
      'value:header': 'order_id',
      'from:variables.1': 'name',
      'from:variables.2': 'attribute',
      'value:variables.2': '',
      'from:variables.3': 'city',
      'from:buttons.0': 'attribute',
      'value:buttons.0': 'order_id',
      'from:buttons.1': 'constant',
      'value:buttons.1': 'SALE10',
    }
    const refused = await client.post('/dashboard/campaigns', form)
    expect(refused.status).toBe(422)
    expect(refused.text).toContain('parameters.variables.2.attribute: must be 1 to 64 letters, digits or underscores')
    expect(refused.text).toContain('name="value:buttons.1"')
    expect(refused.text).toContain('value="SALE10"')

    const created = await client.post('/dashboard/campaigns', { ...form, _csrf: refused.csrf!, 'value:variables.2': 'order_id' })
    expect(created.status).toBe(303)
    const id = Number(created.location!.split('/').pop())
    const shown = await t.api('GET', `/campaigns/${id}`, a.key)
    expect(shown.body.data.campaign).toMatchObject({ template_id: tpl.id, sender_id: metaA, parameters: ORDER_PARAMETERS })
    const detail = await client.get(`/dashboard/campaigns/${id}`)
    expect(detail.text).toContain('{{2}}: attribute order_id')
    expect(detail.text).toContain('button 2: constant &quot;SALE10&quot;')
    expect(detail.text).toContain('Skipped: value missing')
  })
})

describe('a media header', () => {
  const PROMO = {
    language: 'en_US',
    category: 'marketing' as const,
    parameterFormat: 'positional' as const,
    components: [
      { type: 'HEADER', format: 'IMAGE', example: { header_handle: ['4::aW1hZ2UvanBlZw==:ARb'] } },
      { type: 'BODY', text: 'Hi {{1}}, our sale starts today.', example: { body_text: [['Budi']] } },
    ],
  }
  const LINK = 'https://cdn.example.com/promo.jpg'

  test("takes one link for the campaign, checked at creation; every recipient's message carries it to Meta as its reference shows", async () => {
    const { tpl } = await template(PROMO)
    const a = await shop([
      { name: 'Budi', phone: '081200000041' },
      { name: 'Sari', phone: '081200000042' },
    ])
    const create = (header: unknown) =>
      t.api('POST', '/campaigns', a.key, {
        name: 'promo',
        template_id: tpl.id,
        segment_id: a.segmentId,
        parameters: { variables: { '1': { field: 'name' } }, ...(header === undefined ? {} : { header }) },
      })
    const what = `template ${tpl.id} (${tpl.name})`
    const cases: [unknown, number, string][] = [
      [
        undefined,
        422,
        `parameters.header: missing (${what}'s header is a image: give {"type": "image", "link": "https://…"} or {"type": "image", "media_id": "med_…"})`,
      ],
      [
        { type: 'image' },
        422,
        "parameters.header: give the image's link (a public https URL) or media_id (a file from POST /api/v1/media), one of them",
      ],
      [{ type: 'video', link: LINK }, 422, `parameters.header.type: must be "image" (${what}'s header is one; got "video")`],
      [{ type: 'image', link: 'ftp://cdn.example.com/x.jpg' }, 422, 'parameters.header.link: '],
    ]
    for (const [header, status, error] of cases) {
      const res = await create(header)
      expect({ header, status: res.status, code: res.body.code, error: String(res.body.error).slice(0, error.length) }).toEqual({
        header,
        status,
        code: 'VALIDATION_ERROR',
        error,
      })
    }
    const source = await create({ constant: LINK })
    expect([source.status, source.body.code]).toEqual([422, 'VALIDATION_ERROR'])
    expect(await money(t, a.accountId)).toEqual({ balance: 1_000, ledgerSum: 1_000 })

    const made = await create({ type: 'image', link: LINK })
    expect(made.status).toBe(201)
    expect(made.body.data.campaign.parameters).toEqual({ variables: { '1': { field: 'name' } }, header: { type: 'image', link: LINK } })
    const id: number = made.body.data.campaign.id
    expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
    await t.runWorker('campaign-runner')
    expect((await stats(id)).stats).toMatchObject({ total: 2, sent: 2, failed: 0, missing_values: 0 })
    expect(await money(t, a.accountId)).toEqual({ balance: 1_000 - 20, ledgerSum: 1_000 - 20 })
    const components = (name: string) => [
      { type: 'header', parameters: [{ type: 'image', image: { link: LINK } }] },
      { type: 'body', parameters: [{ type: 'text', text: name }] },
    ]
    expect(
      sentBodies()
        .map((b) => [b.to, b.template])
        .sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    ).toEqual([
      ['6281200000041', { name: tpl.name, language: { code: 'en_US' }, components: components('Budi') }],
      ['6281200000042', { name: tpl.name, language: { code: 'en_US' }, components: components('Sari') }],
    ])
    // The messages keep the media with them, as a single send's (a recovered hand-off sends the same).
    const kept = await t.db.sql<{ content: unknown }[]>`select content from messages where campaign_id = ${id}`
    expect(kept.map((m) => m.content)).toEqual([
      { type: 'template', header: { type: 'image', link: LINK } },
      { type: 'template', header: { type: 'image', link: LINK } },
    ])
  })

  test('the dashboard form asks for its link; the campaign page shows it', async () => {
    const { tpl } = await template(PROMO)
    const a = await shop([{ name: 'Budi', phone: '081200000043' }])
    const { client } = await dashboardUser(
      t,
      `h30-media-${Math.random().toString(36).slice(2, 8)}@example.com`,
      'correct horse battery',
      a.accountId,
    )
    const page = await client.get(`/dashboard/campaigns?wa_template=${tpl.id}`)
    expect(page.text).toContain('Header image: its https link, or an uploaded file&#39;s id (med_…), the same for every recipient')
    expect(page.text).toContain('name="value:header"')
    expect(page.text).not.toContain('name="from:header"')
    const form = {
      _csrf: page.csrf!,
      name: 'dash promo',
      template_id: String(tpl.id),
      segment_id: String(a.segmentId),
      sender_id: String(metaA),
      'from:variables.1': 'name',
      'value:header': 'http://cdn.example.com/promo.jpg',
    }
    const refused = await client.post('/dashboard/campaigns', form)
    expect(refused.status).toBe(422)
    expect(refused.text).toContain('parameters.header.link: ')
    expect(refused.text).toContain('value="http://cdn.example.com/promo.jpg"')
    const created = await client.post('/dashboard/campaigns', { ...form, _csrf: refused.csrf!, 'value:header': LINK })
    expect(created.status).toBe(303)
    const id = Number(created.location!.split('/').pop())
    expect((await t.api('GET', `/campaigns/${id}`, a.key)).body.data.campaign.parameters.header).toEqual({ type: 'image', link: LINK })
    expect((await client.get(`/dashboard/campaigns/${id}`)).text).toContain(`header: image ${LINK}`)
  })

  const JPEG = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0xff, 0xd9])
  const PDF = new TextEncoder().encode('%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n')
  const upload = async (key: string, bytes: Uint8Array, type: string) => {
    const response = await t.app.handle(
      new Request('http://localhost/api/v1/media', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': type },
        body: bytes,
      }),
    )
    expect(response.status).toBe(201)
    return ((await response.json()) as { data: { id: string } }).data.id
  }

  test("takes an uploaded file by media_id: the account's own and of the header's kind, uploaded to Meta once, not deleted until the campaign is done", async () => {
    const { tpl } = await template(PROMO)
    const a = await shop([
      { name: 'Budi', phone: '081200000044' },
      { name: 'Sari', phone: '081200000045' },
    ])
    const other = await t.account(100)
    const image = await upload(a.key, JPEG, 'image/jpeg')
    const pdf = await upload(a.key, PDF, 'application/pdf')
    const theirs = await upload(other.key, JPEG, 'image/jpeg')
    const create = (header: unknown) =>
      t.api('POST', '/campaigns', a.key, {
        name: 'promo',
        template_id: tpl.id,
        segment_id: a.segmentId,
        parameters: { variables: { '1': { field: 'name' } }, header },
      })
    // Another account's file is unknown here (404), as with a send; a file of another kind is 422; a link and an id both, 422.
    const foreign = await create({ type: 'image', media_id: theirs })
    expect([foreign.status, foreign.body.code]).toEqual([404, 'NOT_FOUND'])
    expect(foreign.body.error).toStartWith(`parameters.header.media_id: no file ${theirs} in this account`)
    const wrongKind = await create({ type: 'image', media_id: pdf })
    expect([wrongKind.status, wrongKind.body.error]).toEqual([
      422,
      `parameters.header.media_id: file ${pdf} is a document (application/pdf), not an image; nothing was charged`,
    ])
    expect((await create({ type: 'image', media_id: image, link: LINK })).status).toBe(422)

    const made = await create({ type: 'image', media_id: image })
    expect(made.status).toBe(201)
    expect(made.body.data.campaign.parameters.header).toEqual({ type: 'image', media_id: image })
    const id: number = made.body.data.campaign.id
    // Not deleted while the campaign may still send it (retention keeps it too: tests/media/lifetime.test.ts).
    const remove = () =>
      t.app.handle(
        new Request(`http://localhost/api/v1/media/${image}`, { method: 'DELETE', headers: { authorization: `Bearer ${a.key}` } }),
      )
    expect((await remove()).status).toBe(409)

    expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
    await t.runWorker('campaign-runner')
    expect((await stats(id)).stats).toMatchObject({ total: 2, sent: 2, failed: 0 })
    // Uploaded to the sender's number once, both recipients' headers naming Meta's id for it.
    const uploads = graph.requests.filter((r) => r.path.endsWith('/media') && r.method === 'POST')
    expect(uploads).toHaveLength(1)
    const graphId = [...graph.uploads.entries()].find(([, u]) => u.type === 'image/jpeg')![0]
    expect(sentBodies().map((b) => b.template.components[0])).toEqual([
      { type: 'header', parameters: [{ type: 'image', image: { id: graphId } }] },
      { type: 'header', parameters: [{ type: 'image', image: { id: graphId } }] },
    ])
    // Sent: the file may go now.
    expect((await remove()).status).toBe(204)
  })
})
