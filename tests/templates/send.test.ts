// Sending a WhatsApp template (issue 30), through the API against the fake Graph API and the fake
// Twilio: positional, named, header (text and media) and button parameters reach the fake exactly as
// Meta's reference writes them (Twilio: ContentSid with ContentVariables); the template goes from its
// own sender when `from` is absent, outside the 24-hour window; every refusal the service can foresee
// (not approved, another sender, a parameter missing, unknown, empty or too long, a button's value
// missing) is 422 naming it, costs nothing and never reaches the provider; what Meta refuses itself
// (its template paused there first) is refunded. The fake's own refusals (132001, 132000, 131008,
// 132015, 132016) answer in Meta's error shape.

import { beforeAll, describe, expect, test } from 'bun:test'
import { dashboardUser } from '../helpers/web'
import { money, testApp, type TestApp } from '../helpers/app'
import { type FakeTemplate } from '../helpers/fake-graph'
import { assign, createSender, META_A, META_B, TWILIO_A } from '../helpers/senders'
import { hangingProvider, templateFakes, WABA_A } from '../helpers/templates'
import { insertTemplate, type NewTemplate, type WaTemplate } from '../../src/modules/templates/catalog'
import { metaMessage } from '../../src/providers/meta/send'
import { TestClock } from '../../src/lib/clock'
import { inFlight } from '../helpers/in-flight'

const fakes = templateFakes()
const { twilio, graph } = fakes

let t: TestApp
let metaA: number
let metaB: number
let twilioA: number
beforeAll(async () => {
  t = await fakes.start()
  metaA = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
  metaB = await createSender(t, 'meta', META_B, { recipient_gap_ms: 0 })
  twilioA = await createSender(t, 'twilio', TWILIO_A, { recipient_gap_ms: 0 })
  // Creating a sender syncs its WhatsApp templates: those listings are not what these tests count.
  twilio.reset()
  graph.reset()
}, 60_000)

let serial = 0
/** A template stored for a sender (and, for Meta A, kept by the fake's WhatsApp Business Account as Meta shows it). */
async function template(senderId: number | null, t0: Omit<NewTemplate, 'senderId' | 'provider' | 'name'> & { name?: string }) {
  const name = t0.name ?? `tpl_${++serial}_${Math.random().toString(36).slice(2, 8)}`
  const provider = senderId === twilioA ? 'twilio' : senderId === metaA || senderId === metaB ? 'meta' : 'simulator'
  const row = await t.db.sql.begin((tx) =>
    insertTemplate(tx, t.deps.clock, { status: 'approved', ...t0, name, senderId, provider }, 'sync'),
  )
  if (senderId === metaA) {
    graph.template(WABA_A, {
      name,
      language: t0.language,
      category: t0.category.toUpperCase() as FakeTemplate['category'],
      status: (t0.status ?? 'approved').toUpperCase(),
      parameter_format: t0.parameterFormat === 'named' ? 'NAMED' : 'POSITIONAL',
      components: t0.components as Record<string, any>[],
    })
  }
  return row as WaTemplate
}

/** An account with Meta A (its templates) and Twilio A (its default) assigned. */
async function account(balance = 100) {
  const a = await t.account(balance)
  await assign(t, a.accountId, twilioA, true)
  await assign(t, a.accountId, metaA)
  return a
}

const sentBody = (i = 0) => JSON.parse(graph.requests.filter((r) => r.path.endsWith('/messages'))[i]!.body)

const INVOICE = {
  language: 'en_US',
  category: 'utility' as const,
  parameterFormat: 'positional' as const,
  components: [
    { type: 'HEADER', format: 'TEXT', text: 'Invoice {{1}}', example: { header_text: ['INV-1'] } },
    {
      type: 'BODY',
      text: 'Invoice {{1}} of {{2}} is due on {{3}}.',
      example: { body_text: [['INV-1', 'Rp 1.000', '1 January']] },
    },
    { type: 'FOOTER', text: 'Reply STOP to opt out' },
    {
      type: 'BUTTONS',
      buttons: [
        { type: 'URL', text: 'Pay', url: 'https://pay.example.com/i/{{1}}', example: ['https://pay.example.com/i/INV-1'] },
        { type: 'QUICK_REPLY', text: 'Questions' },
      ],
    },
  ],
}

const ORDER = {
  language: 'id',
  category: 'marketing' as const,
  parameterFormat: 'named' as const,
  components: [
    { type: 'HEADER', format: 'IMAGE', example: { header_handle: ['https://example.com/h.jpg'] } },
    {
      type: 'BODY',
      text: 'Hi {{first_name}}, order {{order_id}} ships today.',
      example: {
        body_text_named_params: [
          { param_name: 'first_name', example: 'Budi' },
          { param_name: 'order_id', example: 'A-1' },
        ],
      },
    },
    { type: 'BUTTONS', buttons: [{ type: 'COPY_CODE', example: 'SAVE10' }] },
  ],
}

describe('a WhatsApp template reaches Meta exactly as its reference writes it', () => {
  test('positional body, text header and URL button: from its own sender, outside the window, charged once', async () => {
    const tpl = await template(metaA, INVOICE)
    const { accountId, key } = await account()
    const answer = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      template_id: tpl.id,
      variables: { '1': 'INV-1001', '2': 'Rp 1.250.000', '3': '5 December' },
      header: 'INV-1001',
      buttons: [{ index: 0, value: 'INV-1001' }],
    })
    expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200, body: { data: { status: 'sent' } } })
    expect(graph.requests).toHaveLength(1)
    expect(graph.requests[0]!.path).toBe(`/v21.0/${META_A.credentials.phone_number_id}/messages`)
    expect(sentBody()).toEqual({
      messaging_product: 'whatsapp',
      to: '6281234567890',
      type: 'template',
      template: {
        name: tpl.name,
        language: { code: 'en_US' },
        components: [
          { type: 'header', parameters: [{ type: 'text', text: 'INV-1001' }] },
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'INV-1001' },
              { type: 'text', text: 'Rp 1.250.000' },
              { type: 'text', text: '5 December' },
            ],
          },
          { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: 'INV-1001' }] },
        ],
      },
    })
    const [row] = await t.db.sql<{ body: string; template_id: number; sender_id: number; provider_template: any }[]>`
      select body, template_id, sender_id, provider_template from messages where message_sid = ${answer.body.data.message_id}`
    expect({ ...row!, template_id: Number(row!.template_id), sender_id: Number(row!.sender_id) }).toMatchObject({
      body: 'Invoice INV-1001\n\nInvoice INV-1001 of Rp 1.250.000 is due on 5 December.\n\nReply STOP to opt out',
      template_id: tpl.id,
      sender_id: metaA,
      provider_template: { provider: 'meta', ref: tpl.name, language: 'en_US', templateId: tpl.id, category: 'utility' },
    })
    // What a recovered hand-off sends: the same components, kept with the message.
    expect(row!.provider_template.components).toEqual(sentBody().template.components)
    const shown = await t.api('GET', `/messages/${answer.body.data.message_id}`, key)
    expect(shown.body.data.body).toBe(row!.body)
    expect(await money(t, accountId)).toEqual({ balance: 99, ledgerSum: 99 })
  })

  test('named body parameters, image header and a copy-code button', async () => {
    const tpl = await template(metaA, ORDER)
    const { key } = await account()
    const answer = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      from: String(metaA),
      template_id: tpl.id,
      variables: { order_id: 'A-1001', first_name: 'Budi' },
      header: { type: 'image', link: 'https://cdn.example.com/promo.jpg' },
      buttons: [{ index: 0, value: 'SAVE10' }],
    })
    expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200 })
    expect(sentBody().template).toEqual({
      name: tpl.name,
      language: { code: 'id' },
      components: [
        { type: 'header', parameters: [{ type: 'image', image: { link: 'https://cdn.example.com/promo.jpg' } }] },
        {
          type: 'body',
          parameters: [
            { type: 'text', parameter_name: 'first_name', text: 'Budi' },
            { type: 'text', parameter_name: 'order_id', text: 'A-1001' },
          ],
        },
        { type: 'button', sub_type: 'copy_code', index: '0', parameters: [{ type: 'coupon_code', coupon_code: 'SAVE10' }] },
      ],
    })
  })

  test("an authentication template: the code fills the body and its code button (OTP or Meta's URL form)", async () => {
    const { key } = await account()
    for (const button of [
      { type: 'OTP', otp_type: 'COPY_CODE', text: 'Copy code' },
      { type: 'URL', text: 'Copy code', url: 'https://www.whatsapp.com/otp/code/?otp_type=COPY_CODE&code=otp{{1}}' },
    ]) {
      graph.reset()
      const tpl = await template(metaA, {
        language: 'en_US',
        category: 'authentication',
        parameterFormat: 'positional',
        components: [
          { type: 'BODY', text: '*{{1}}* is your verification code.', example: { body_text: [['123456']] } },
          { type: 'BUTTONS', buttons: [button] },
        ],
      })
      const answer = await t.api('POST', '/messages/send', key, { to: '081234567890', template_id: tpl.id, variables: { '1': '482913' } })
      expect({ type: button.type, status: answer.status, body: answer.body }).toMatchObject({ type: button.type, status: 200 })
      expect(sentBody().template.components).toEqual([
        { type: 'body', parameters: [{ type: 'text', text: '482913' }] },
        { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: '482913' }] },
      ])
      const long = await t.api('POST', '/messages/send', key, {
        to: '081234567890',
        template_id: tpl.id,
        variables: { '1': '1234567890123456' },
      })
      expect({ status: long.status, error: long.body.error }).toEqual({
        status: 422,
        error: expect.stringContaining('variables.1 (the code of button 0): must be at most 15 characters'),
      })
    }
  })

  test('a simulator sender: the template goes, its text is what the message keeps', async () => {
    const sim = await createSender(t, 'simulator', { number: '+6281100000077', credentials: {} }, { recipient_gap_ms: 0 })
    const a = await t.account(10)
    await assign(t, a.accountId, sim)
    const tpl = await template(sim, { ...INVOICE, components: INVOICE.components.slice(1, 3) })
    const answer = await t.api('POST', '/messages/send', a.key, {
      to: '081234567890',
      template_id: tpl.id,
      variables: { '1': 'INV-7', '2': 'Rp 5', '3': 'Friday' },
    })
    expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200 })
    const shown = await t.api('GET', `/messages/${answer.body.data.message_id}`, a.key)
    expect(shown.body.data).toMatchObject({
      body: 'Invoice INV-7 of Rp 5 is due on Friday.\n\nReply STOP to opt out',
      provider_template: { provider: 'simulator', ref: tpl.name, language: 'en_US', variables: ['INV-7', 'Rp 5', 'Friday'] },
    })
  })

  test("Twilio: the template's Content SID with its ContentVariables; from naming a sender that has the same template sends its own", async () => {
    const sid = `HX${'ab'.repeat(16)}`
    const definition = {
      name: `order_ships_${Math.random().toString(36).slice(2, 8)}`,
      language: 'en',
      category: 'utility' as const,
      parameterFormat: 'positional' as const,
      components: [{ type: 'BODY', text: 'Order {{1}} ships on {{2}}', example: { body_text: [['1', 'Monday']] } }],
    }
    const tpl = await template(twilioA, { ...definition, providerRef: sid })
    const onMeta = await template(metaA, definition)
    const { accountId, key } = await account()
    const sends = [
      { template_id: tpl.id, variables: { '1': 'A-1001', '2': 'Friday' } },
      // Meta A's template of that name and language, sent from Twilio A: Twilio A's own goes.
      { template_id: onMeta.id, from: TWILIO_A.number, variables: { '1': 'A-1002', '2': 'Monday' } },
    ]
    for (const send of sends) {
      const answer = await t.api('POST', '/messages/send', key, { to: '081234567890', ...send })
      expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200 })
      const [row] = await t.db.sql<
        { template_id: number }[]
      >`select template_id from messages where message_sid = ${answer.body.data.message_id}`
      expect(Number(row!.template_id)).toBe(tpl.id)
    }
    expect(graph.requests).toHaveLength(0)
    expect(
      twilio.requests.map((r) => {
        const form = new URLSearchParams(r.body)
        return [form.get('ContentSid'), JSON.parse(form.get('ContentVariables')!), form.has('Body')]
      }),
    ).toEqual([
      [sid, { '1': 'A-1001', '2': 'Friday' }, false],
      [sid, { '1': 'A-1002', '2': 'Monday' }, false],
    ])
    // The message's page says what Twilio got: the Content SID and its ContentVariables.
    const member = (await dashboardUser(t, `twilio-page-${accountId}@example.com`, 'correct horse battery', accountId)).client
    const [first] = await t.db.sql<{ id: number }[]>`select id from messages where account_id = ${accountId} order by id limit 1`
    expect((await member.get(`/dashboard/messages/${first!.id}`)).text).toContain(
      `twilio: ${sid}, ContentVariables: 1 = A-1001 | 2 = Friday`,
    )
  })

  test('bulk: each entry checked on its own; refused entries fail uncharged and never reach the fake', async () => {
    const tpl = await template(metaA, INVOICE)
    const paused = await template(metaA, { ...INVOICE, status: 'paused', reason: 'LOW_QUALITY' })
    const { accountId, key } = await account()
    const full = { variables: { '1': 'I-1', '2': 'Rp 1', '3': 'today' }, header: 'I-1', buttons: [{ index: 0, value: 'I-1' }] }
    const answer = await t.api('POST', '/messages/bulk', key, {
      messages: [
        { to: '081234567890', template_id: tpl.id, ...full },
        { to: '081234567891', template_id: tpl.id, ...full, buttons: [] },
        { to: '081234567892', template_id: paused.id, ...full },
      ],
    })
    expect(answer.status).toBe(200)
    expect(answer.body.data.results.map((r: any) => [r.status, r.code ?? null])).toEqual([
      ['sent', null],
      ['failed', 'VALIDATION_ERROR'],
      ['failed', 'TEMPLATE_NOT_APPROVED'],
    ])
    expect(answer.body.data.results[1].error).toContain('messages[1].buttons: button 0 of template')
    expect(answer.body.data.results[2].error).toContain('is paused (reason: LOW_QUALITY)')
    expect(graph.requests).toHaveLength(1)
    expect(await money(t, accountId)).toEqual({ balance: 99, ledgerSum: 99 })
  })
})

describe('every foreseeable refusal: 422 naming it, nothing charged, nothing sent', () => {
  test('not approved, another sender, and each parameter rule', async () => {
    const tpl = await template(metaA, INVOICE)
    const pending = await template(metaA, { ...INVOICE, status: 'pending' })
    const rejected = await template(metaA, { ...INVOICE, status: 'rejected', reason: 'INVALID_FORMAT' })
    const onB = await template(metaB, INVOICE)
    const { accountId, key } = await account()
    const good = {
      to: '081234567890',
      template_id: tpl.id,
      variables: { '1': 'INV-1', '2': 'Rp 1', '3': 'today' },
      header: 'INV-1',
      buttons: [{ index: 0, value: 'INV-1' }],
    }
    const cases: [string, Record<string, unknown>, string, string][] = [
      [
        'pending',
        { template_id: pending.id },
        'TEMPLATE_NOT_APPROVED',
        `template_id: template ${pending.id} (${pending.name}, en_US) is pending`,
      ],
      ['rejected', { template_id: rejected.id }, 'TEMPLATE_NOT_APPROVED', 'is rejected (reason: INVALID_FORMAT), not approved'],
      // Meta B is not the account's: its template is as unknown as a missing one.
      ['another tenant', { template_id: onB.id }, 'VALIDATION_ERROR', `template_id: template ${onB.id} does not exist`],
      [
        'from another sender',
        { from: String(twilioA) },
        'TEMPLATE_NOT_APPROVED',
        `from: template ${tpl.id} (${tpl.name}, en_US) is approved for sender ${metaA}, and sender ${twilioA} has no template ${tpl.name} in en_US`,
      ],
      ['missing', { variables: { '1': 'INV-1', '2': 'Rp 1' } }, 'VALIDATION_ERROR', 'variables.3: missing'],
      ['unknown', { variables: { ...good.variables, '4': 'x' } }, 'VALIDATION_ERROR', 'variables.4: not a parameter of template'],
      ['empty', { variables: { ...good.variables, '2': ' ' } }, 'VALIDATION_ERROR', 'variables.2: must not be empty'],
      ['new line', { variables: { ...good.variables, '2': 'a\nb' } }, 'VALIDATION_ERROR', 'variables.2: must not contain a new line'],
      ['body too long', { variables: { ...good.variables, '2': 'x'.repeat(1100) } }, 'VALIDATION_ERROR', 'WhatsApp takes at most 1024'],
      ['header missing', { header: undefined }, 'VALIDATION_ERROR', 'header: missing'],
      ['header too long', { header: 'x'.repeat(60) }, 'VALIDATION_ERROR', 'header: the header of template'],
      ['header media', { header: { type: 'image', link: 'https://cdn.example.com/a.jpg' } }, 'VALIDATION_ERROR', 'header: must be a text'],
      ['button missing', { buttons: undefined }, 'VALIDATION_ERROR', 'buttons: button 0 of template'],
      [
        'button unknown',
        { buttons: [...good.buttons, { index: 1, value: 'x' }] },
        'VALIDATION_ERROR',
        'buttons[1].index: button 1 of template',
      ],
      [
        'button twice',
        { buttons: [...good.buttons, { index: 0, value: 'x' }] },
        'VALIDATION_ERROR',
        'buttons[1].index: button 0 is given twice',
      ],
      ['url with space', { buttons: [{ index: 0, value: 'a b' }] }, 'VALIDATION_ERROR', 'buttons[0].value: must not contain spaces'],
    ]
    for (const [name, change, code, words] of cases) {
      const answer = await t.api('POST', '/messages/send', key, { ...good, ...change })
      expect({ name, status: answer.status, code: answer.body.code }).toEqual({ name, status: 422, code })
      expect({ name, error: answer.body.error }).toEqual({ name, error: expect.stringContaining(words) })
    }
    expect(graph.requests).toHaveLength(0)
    expect(twilio.requests).toHaveLength(0)
    expect(await money(t, accountId)).toEqual({ balance: 100, ledgerSum: 100 })
    // The good one goes.
    expect((await t.api('POST', '/messages/send', key, good)).status).toBe(200)
  })

  test('an account template takes neither a text header nor buttons', async () => {
    const { accountId, key } = await account()
    const created = await t.admin('POST', `/accounts/${accountId}/templates`, { name: 'hello', body: 'Hello {{name}}' })
    expect(created.status).toBe(201)
    for (const [change, words] of [
      [{ header: 'x' }, 'header: a text header is for a WhatsApp template only'],
      [{ buttons: [{ index: 0, value: 'x' }] }, 'buttons: only with a WhatsApp template'],
    ] as const) {
      const answer = await t.api('POST', '/messages/send', key, {
        to: '081234567890',
        template_id: created.body.data.id,
        variables: { name: 'Budi' },
        ...change,
      })
      expect({ status: answer.status, error: answer.body.error }).toEqual({ status: 422, error: expect.stringContaining(words) })
    }
  })
})

describe("what Meta refuses itself, in Meta's error shape", () => {
  test("the template paused at Meta before the service heard of it: 132015, refunded, Meta's words", async () => {
    const tpl = await template(metaA, INVOICE)
    graph.templates.get(WABA_A)!.find((x) => x.name === tpl.name)!.status = 'PAUSED'
    const { accountId, key } = await account()
    const answer = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      template_id: tpl.id,
      variables: { '1': 'INV-1', '2': 'Rp 1', '3': 'today' },
      header: 'INV-1',
      buttons: [{ index: 0, value: 'INV-1' }],
    })
    expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 502, code: 'BAD_GATEWAY' })
    expect(answer.body.error).toContain('(#132015) Template is Paused')
    expect(graph.requests.map((r) => r.code)).toEqual([132015])
    expect(await money(t, accountId)).toEqual({ balance: 100, ledgerSum: 100 })
  })

  test('the fake refuses as Meta does: 132001, 132000, 131008, 132016', async () => {
    const waba = '299999999999999'
    const phone = '199999999999999'
    graph.accountOf.set(phone, waba)
    graph.template(waba, {
      name: 'invoice',
      language: 'en_US',
      category: 'UTILITY',
      status: 'APPROVED',
      components: INVOICE.components,
    })
    graph.template(waba, { name: 'old', language: 'en_US', category: 'UTILITY', status: 'DISABLED', components: [] })
    const post = async (template: Record<string, unknown>) => {
      // Any token goes for a phone number the fake does not check (none registered with this id would be 400 code 100).
      const response = await fetch(`${graph.apiBase}/${phone}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
        body: JSON.stringify({ messaging_product: 'whatsapp', to: '6281234567890', type: 'template', template }),
      })
      return { status: response.status, body: (await response.json()) as any }
    }
    const header = { type: 'header', parameters: [{ type: 'text', text: 'I' }] }
    const body = { type: 'body', parameters: [1, 2, 3].map((n) => ({ type: 'text', text: String(n) })) }
    const button = { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: 'I' }] }
    // Registered phones make the fake check tokens: this one is checked too.
    graph.phone(phone, 'x')
    try {
      const cases: [Record<string, unknown>, number, string][] = [
        [{ name: 'nope', language: { code: 'en_US' } }, 132001, 'template name (nope) does not exist in en_US'],
        [{ name: 'invoice', language: { code: 'id' } }, 132001, 'template name (invoice) does not exist in id'],
        [{ name: 'old', language: { code: 'en_US' } }, 132016, 'Template old is disabled'],
        [
          { name: 'invoice', language: { code: 'en_US' }, components: [header, { type: 'body', parameters: [] }, button] },
          132000,
          'body: number of localizable_params (0)',
        ],
        [
          { name: 'invoice', language: { code: 'en_US' }, components: [header, body] },
          131008,
          'Button at index 0 of type Url requires a parameter',
        ],
      ]
      for (const [template, code, details] of cases) {
        const answer = await post(template)
        expect({ code, status: answer.status, error: answer.body.error }).toMatchObject({
          code,
          status: 400,
          error: {
            code,
            message: expect.stringMatching(new RegExp(`^\\(#${code}\\) `)),
            error_data: { details: expect.stringContaining(details) },
          },
        })
      }
      expect((await post({ name: 'invoice', language: { code: 'en_US' }, components: [header, body, button] })).status).toBe(200)
    } finally {
      graph.phones.delete(phone)
      graph.accountOf.delete(phone)
    }
  })
})

test("a hand-off taken over by recovery sends the same template components, from the message's record", async () => {
  // The deployment's default sender, a provider named like Meta whose first hand-off hangs until released.
  const { provider, seen, first, release } = hangingProvider()
  const clock = new TestClock()
  const flight = inFlight()
  const r = await testApp({
    provider,
    clock,
    wrapSql: flight.sql,
    env: { HANDOFF_CONCURRENCY: '1', PROVIDER_TIMEOUT_MS: '60000', BULK_WAIT_MS: '60000' },
  })
  try {
    const tpl = (await r.db.sql.begin((tx) =>
      insertTemplate(tx, r.deps.clock, { ...INVOICE, name: 'invoice_due', senderId: null, provider: 'meta', status: 'approved' }, 'sync'),
    ))!
    const a = await r.account(100)
    const entry = (to: string, invoice: string) => ({
      to,
      template_id: tpl.id,
      variables: { '1': invoice, '2': 'Rp 1', '3': 'today' },
      header: invoice,
      buttons: [{ index: 0, value: invoice }],
    })
    const answer = r.api('POST', '/messages/bulk', a.key, { messages: [entry('081250000001', 'I-1'), entry('081250000002', 'I-2')] })
    await first
    // The bulk's lease runs out while its first hand-off hangs: recovery takes the second over.
    r.deps.handoff.stop()
    await clock.advance(2 * r.config.handoffLeaseSeconds * 1000 + 1_000)
    const recovering = r.runWorker('handoff-recovery')
    await flight.idle() // recovery's claim made; its hand-off waits for the pool
    const [claimed] = await r.db.sql`select handoff_recoveries from messages where phone = '+6281250000002'`
    expect(claimed!.handoff_recoveries).toBe(1)
    release()
    const [done] = await clock.run(Promise.all([answer, recovering]), undefined, flight.idle)
    expect(done.body.data).toMatchObject({ sent: 2, failed: 0 })
    const components = (invoice: string) => [
      { type: 'header', parameters: [{ type: 'text', text: invoice }] },
      {
        type: 'body',
        parameters: [
          { type: 'text', text: invoice },
          { type: 'text', text: 'Rp 1' },
          { type: 'text', text: 'today' },
        ],
      },
      { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: invoice }] },
    ]
    expect(seen.map((m) => [m.to, metaMessage(m)])).toEqual(
      ['I-1', 'I-2'].map((invoice, i) => [
        `+628125000000${i + 1}`,
        {
          messaging_product: 'whatsapp',
          to: `628125000000${i + 1}`,
          type: 'template',
          template: { name: 'invoice_due', language: { code: 'en_US' }, components: components(invoice) },
        },
      ]),
    )
  } finally {
    release()
    await r.close()
  }
}, 60_000)
