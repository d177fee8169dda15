// WhatsApp templates in the dashboard through app.handle (issue 30): the operator's part of a sender's
// page (its templates, the sync button against the fake Graph API, a template's page with its history
// and preview, the "New template" form with its 422 at the field), and a member's read-only list of
// the templates its account may use. Signed out redirects, members get 404 on the operator's pages, a
// change without the dashboard's CSRF token is refused, another account's template is 404.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { fakeGraph, type FakeGraph } from '../helpers/fake-graph'
import { fakeTwilio, type FakeTwilio } from '../helpers/fake-twilio'
import { META_A, assign, createSender, registerFakes, sendersEnv } from '../helpers/senders'
import { dashboardUser, webClient } from '../helpers/web'
import { insertTemplate, type NewTemplate } from '../../src/modules/templates/catalog'
import { TestClock } from '../../src/lib/clock'

const WABA = META_A.credentials.business_account_id
const PASSWORD = 'correct horse battery'

let t: TestApp
let twilio: FakeTwilio
let graph: FakeGraph
const clock = new TestClock()
let meta: number
let simulator: number
let other: number

let n = 0
const email = (what: string) => `${what}-${++n}@example.com`

beforeAll(async () => {
  twilio = fakeTwilio()
  graph = fakeGraph({ clock })
  registerFakes(twilio, graph)
  graph.accountOf.set(META_A.credentials.phone_number_id, WABA)
  t = await testApp({ env: sendersEnv(twilio, graph), clock })
  meta = await createSender(t, 'meta', META_A)
  simulator = await createSender(t, 'simulator', { number: '+6281100000077', credentials: {} })
  other = await createSender(t, 'simulator', { number: '+6281100000078', credentials: {} })
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

const INVOICE = [
  { type: 'HEADER', format: 'TEXT', text: 'Invoice {{1}}', example: { header_text: ['INV-1001'] } },
  {
    type: 'BODY',
    text: 'Hello {{1}}, invoice {{2}} is due on {{3}}.',
    example: { body_text: [['Budi', 'INV-1001', '5 December']] },
  },
  { type: 'FOOTER', text: 'Reply STOP to opt out' },
  { type: 'BUTTONS', buttons: [{ type: 'URL', text: 'Pay now', url: 'https://pay.example.com/i/{{1}}', example: ['INV-1001'] }] },
]

async function stored(senderId: number | null, over: Partial<NewTemplate> = {}) {
  const template = await t.db.sql.begin((tx) =>
    insertTemplate(
      tx,
      t.deps.clock,
      {
        senderId,
        provider: 'simulator',
        name: `invoice_due_${++n}`,
        language: 'en_US',
        category: 'utility',
        parameterFormat: 'positional',
        components: INVOICE,
        status: 'approved',
        ...over,
      } as NewTemplate,
      'operator',
    ),
  )
  return template!
}

const operator = async () => (await dashboardUser(t, email('op'), PASSWORD)).client

describe('guards', () => {
  test('signed out: the template pages and their changes redirect to the sign-in page', async () => {
    const anon = webClient(t)
    for (const path of [
      '/dashboard/whatsapp-templates',
      '/dashboard/whatsapp-templates/1',
      `/dashboard/senders/${simulator}/templates/new`,
      `/dashboard/senders/${simulator}/templates/1`,
      '/dashboard/accounts/1/whatsapp-templates',
    ]) {
      expect({ path, location: (await anon.get(path)).location }).toEqual({ path, location: '/dashboard/sign-in' })
    }
    for (const path of [`/dashboard/senders/${simulator}/templates/sync`, `/dashboard/senders/${simulator}/templates`]) {
      expect({ path, location: (await anon.post(path, { _csrf: 'x' })).location }).toEqual({ path, location: '/dashboard/sign-in' })
    }
  })

  test("members: the operator's template pages are 404 and change nothing", async () => {
    const own = await t.account(0)
    const template = await stored(simulator)
    const member = (await dashboardUser(t, email('member'), PASSWORD, own.accountId)).client
    const home = await member.get('/dashboard/templates')
    expect(home.text).toContain('href="/dashboard/whatsapp-templates"')
    for (const path of [`/dashboard/senders/${simulator}/templates/new`, `/dashboard/senders/${simulator}/templates/${template.id}`]) {
      expect({ path, status: (await member.get(path)).status }).toEqual({ path, status: 404 })
    }
    const before = graph.requests.length
    for (const path of [`/dashboard/senders/${meta}/templates/sync`, `/dashboard/senders/${meta}/templates`]) {
      const answer = await member.post(path, { _csrf: home.csrf!, definition: '{}' })
      expect({ path, status: answer.status }).toEqual({ path, status: 404 })
    }
    expect(graph.requests.length).toBe(before)
  })

  test('a change without the CSRF token, or from another site, is refused and reaches no provider', async () => {
    const op = await operator()
    const page = await op.get(`/dashboard/senders/${meta}`)
    const before = graph.requests.length
    expect((await op.post(`/dashboard/senders/${meta}/templates/sync`, { _csrf: 'forged' })).status).toBe(403)
    expect(
      (await op.post(`/dashboard/senders/${meta}/templates/sync`, { _csrf: page.csrf! }, { 'sec-fetch-site': 'cross-site' })).status,
    ).toBe(403)
    expect((await op.post(`/dashboard/senders/${meta}/templates`, { _csrf: 'forged', definition: '{}' })).status).toBe(403)
    expect(graph.requests.length).toBe(before)
  })
})

describe("a sender's templates", () => {
  test('the sync button reads the business account and the page lists what it holds; a template page shows its history', async () => {
    graph.templates.delete(WABA)
    graph.template(WABA, {
      name: 'order_shipped',
      language: 'id',
      category: 'UTILITY',
      status: 'APPROVED',
      parameter_format: 'POSITIONAL',
      components: [{ type: 'BODY', text: 'Pesanan {{1}} sudah dikirim.', example: { body_text: [['A-1']] } }],
      quality_score: { score: 'GREEN' },
    })
    graph.template(WABA, {
      name: 'promo_december',
      language: 'id',
      category: 'MARKETING',
      status: 'REJECTED',
      rejected_reason: 'PROMOTIONAL',
      parameter_format: 'POSITIONAL',
      components: [{ type: 'BODY', text: 'Diskon akhir tahun untuk {{1}}!', example: { body_text: [['Budi']] } }],
    })
    const op = await operator()
    const page = await op.get(`/dashboard/senders/${meta}`)
    expect(page.text).toContain('No WhatsApp templates yet')
    const synced = await op.post(`/dashboard/senders/${meta}/templates/sync`, { _csrf: page.csrf! })
    expect(synced.location).toBe(`/dashboard/senders/${meta}`)
    const after = (await op.follow(synced)).text
    expect(after).toContain('Templates synced: 2 templates listed by meta, 2 new, 0 changed, 0 unchanged, 0 gone.')
    expect(after).toContain('order_shipped')
    expect(after).toMatch(/promo_december[\s\S]*rejected<\/span><span class="muted"> \(PROMOTIONAL\)/)
    const [audited] = await t.db.sql<{ action: string; detail: Record<string, unknown> }[]>`
      select action, detail from audit_log where action = 'templates synced' and detail->>'sender_id' = ${String(meta)}`
    expect(audited?.detail).toEqual({ sender_id: meta, listed: 2, created: 2, changed: 0, unchanged: 0, gone: 0, skipped: 0 })

    const id = Number(new RegExp(`/dashboard/senders/${meta}/templates/(\\d+)">order_shipped`).exec(after)![1])
    const one = await op.get(`/dashboard/senders/${meta}/templates/${id}`)
    expect(one.status).toBe(200)
    expect(one.text).toContain('<code>variables.1</code><span class="muted"> (e.g. A-1)</span>')
    expect(one.text).toContain('Pesanan <mark class="wa-param">{{1}}</mark> sudah dikirim.')
    expect(one.text).toMatch(/<td[^>]*>created<\/td>[\s\S]*<td[^>]*>approved<\/td>[\s\S]*<td[^>]*>sync<\/td>/)
    // A template of another sender is not this sender's page.
    expect((await op.get(`/dashboard/senders/${simulator}/templates/${id}`)).status).toBe(404)
  })

  test('a simulator sender has nothing to sync: said on its page, nothing changes', async () => {
    const op = await operator()
    const page = await op.get(`/dashboard/senders/${simulator}`)
    const answer = await op.post(`/dashboard/senders/${simulator}/templates/sync`, { _csrf: page.csrf! })
    expect(answer.location).toBe(`/dashboard/senders/${simulator}`)
    const after = (await op.follow(answer)).text
    expect(after).toContain('Templates not synced:')
    expect(after).toContain('keeps its templates here only')
    expect((await op.post('/dashboard/senders/999999/templates/sync', { _csrf: page.csrf! })).status).toBe(404)
  })

  test('New template: a problem is shown at the JSON field with what was typed; a good one is created and shown', async () => {
    const op = await operator()
    const form = await op.get(`/dashboard/senders/${simulator}/templates/new`)
    expect(form.status).toBe(200)
    expect(form.text).toContain('&quot;invoice_due&quot;')

    const notJson = await op.post(`/dashboard/senders/${simulator}/templates`, { _csrf: form.csrf!, definition: '{name:' })
    expect(notJson.status).toBe(422)
    expect(notJson.text).toContain('id="template-definition-error">definition: not JSON')
    expect(notJson.text).toContain('aria-invalid="true"')
    expect(notJson.text).toContain('{name:</textarea>')

    const bad = {
      name: 'pay_link',
      language: 'en_US',
      category: 'UTILITY',
      components: [
        { type: 'BODY', text: 'Invoice {{1}} is due.', example: { body_text: [['INV-1']] } },
        { type: 'BUTTONS', buttons: [{ type: 'URL', text: 'Pay', url: 'https://pay.example.com/{{1}}/x' }] },
      ],
    }
    const refused = await op.post(`/dashboard/senders/${simulator}/templates`, { _csrf: form.csrf!, definition: JSON.stringify(bad) })
    expect(refused.status).toBe(422)
    expect(refused.text).toMatch(/id="template-definition-error">components\[1\]\.buttons\[0\]\.url: /)

    const good = { ...bad, components: [bad.components[0], { type: 'FOOTER', text: 'Thank you' }] }
    const created = await op.post(`/dashboard/senders/${simulator}/templates`, { _csrf: form.csrf!, definition: JSON.stringify(good) })
    expect(created.status).toBe(303)
    const page = await op.follow(created)
    expect(page.text).toContain('Template pay_link (en_US) created: pending.')
    expect(page.text).toContain('<p class="wa-footer">Thank you</p>')
    const audited = await t.db.sql<{ detail: Record<string, unknown> }[]>`
      select detail from audit_log where action = 'template created' and detail->>'name' = 'pay_link'`
    expect(audited.map((a) => a.detail)).toEqual([
      { sender_id: simulator, template_id: expect.any(Number), name: 'pay_link', language: 'en_US', status: 'pending' },
    ])

    const again = await op.post(`/dashboard/senders/${simulator}/templates`, { _csrf: form.csrf!, definition: JSON.stringify(good) })
    expect(again.status).toBe(409)
    expect(again.text).toContain('has a template pay_link (en_US) already')
    const sender = await op.get(`/dashboard/senders/${simulator}`)
    expect(sender.text).toContain('pay_link')
  })
})

describe('the field-by-field editor', () => {
  /** The editor's fields for a template with every part: a text header, named body parameters, a footer, four buttons. */
  const fields = (csrf: string, extra: Record<string, string> = {}) => ({
    _csrf: csrf,
    mode: 'fields',
    name: 'order_ready',
    language: 'id',
    category: 'UTILITY',
    parameter_format: 'NAMED',
    header_format: 'TEXT',
    header_text: 'Pesanan {{order_id}}',
    header_example: 'A-17',
    body_text: 'Halo {{first_name}}, pesanan {{order_id}} siap diambil.',
    body_examples: 'Budi\nA-17',
    footer_text: 'Balas STOP untuk berhenti',
    buttons: '4',
    button_type_0: 'URL',
    button_text_0: 'Lacak',
    button_url_0: 'https://track.example.com/{{1}}',
    button_example_0: 'https://track.example.com/A-17',
    button_type_1: 'PHONE_NUMBER',
    button_text_1: 'Telepon',
    button_phone_1: '+6281234567890',
    button_type_2: 'COPY_CODE',
    button_code_2: 'HEMAT10',
    button_type_3: 'QUICK_REPLY',
    button_text_3: 'Terima kasih',
    ...extra,
  })

  test('makes the same Cloud API JSON as the textarea takes; a problem is shown at the field it names; Preview and buttons work without script', async () => {
    const op = await operator()
    const form = await op.get(`/dashboard/senders/${simulator}/templates/new`)
    expect(form.text).toContain('id="editor-name"')
    expect(form.text).toContain('Create and submit from JSON')
    expect(form.text).toContain('<script src="/dashboard/assets/template-editor.js" defer></script>')
    const path = `/dashboard/senders/${simulator}/templates`

    // Each problem at its own field (aria-invalid, its message beside it), what was typed kept.
    const cases: [Record<string, string>, string, RegExp][] = [
      [{ name: 'Order Ready' }, 'name', /^name: only lowercase letters/],
      [
        { body_examples: 'Budi' },
        'body_examples',
        /^components\[1\]\.example\.body_text_named_params: must give an example of \{\{order_id\}\}/,
      ],
      [{ header_text: 'Pesanan {{1}}' }, 'header_text', /^components\[0\]\.text: \{\{1\}\} is positional but parameter_format is NAMED/],
      [
        { button_url_0: 'https://track.example.com/{{1}}/x' },
        'button_url_0',
        /^components\[3\]\.buttons\[0\]\.url: may have one parameter/,
      ],
      [{ button_phone_1: 'call me' }, 'button_phone_1', /^components\[3\]\.buttons\[1\]\.phone_number: /],
      [{ button_code_2: 'WAY-TOO-LONG-CODE-1' }, 'button_code_2', /^components\[3\]\.buttons\[2\]\.example: must be at most 15/],
      [{ footer_text: 'Balas {{1}}' }, 'footer_text', /^components\[2\]\.text: a footer has no parameters/],
    ]
    for (const [change, field, message] of cases) {
      for (const step of ['create', 'preview']) {
        const refused = await op.post(path, { ...fields(form.csrf!, change), do: step })
        const shown = new RegExp(`<p class="field-error" id="editor-${field}-error">([^<]*)</p>`).exec(refused.text)?.[1]
        expect({ field, step, status: refused.status, shown: message.test(shown ?? '') }).toEqual({ field, step, status: 422, shown: true })
        expect(refused.text).toContain(`id="editor-${field}" name="${field}" aria-invalid="true"`)
        for (const typed of Object.values(change)) expect(refused.text).toContain(typed.replaceAll('&', '&amp;'))
      }
    }
    expect(await t.db.sql`select 1 from wa_templates where name = 'order_ready'`).toHaveLength(0)

    // Preview without script: the server's bubble, from the fields.
    const preview = await op.post(path, { ...fields(form.csrf!), do: 'preview' })
    expect(preview.status).toBe(200)
    expect(preview.text).toContain('aria-label="Preview of order_ready"')
    expect(preview.text).toContain('<p class="wa-header">Pesanan <mark class="wa-param">{{order_id}}</mark></p>')
    expect(preview.text).toContain('<p class="wa-footer">Balas STOP untuk berhenti</p>')

    // A button added (a quick reply to fill), one removed (the next rows move up).
    const added = await op.post(path, { ...fields(form.csrf!), do: 'add' })
    expect(added.text).toContain('name="buttons" value="5"')
    expect(added.text).toContain('id="editor-button_type_4"')
    const removed = await op.post(path, { ...fields(form.csrf!), do: 'remove:1' })
    expect(removed.text).toContain('name="buttons" value="3"')
    expect(removed.text).toContain('name="button_code_1" value="HEMAT10"')
    expect(removed.text).not.toContain('id="editor-button_type_3"')

    // Created: stored as the JSON the Cloud API takes.
    const created = await op.post(path, { ...fields(form.csrf!), do: 'create' })
    expect(created.status).toBe(303)
    const [row] = await t.db.sql<{ components: unknown; category: string; parameter_format: string; language: string }[]>`
      select components, category, parameter_format, language from wa_templates where name = 'order_ready' and sender_id = ${simulator}`
    expect(row).toEqual({
      language: 'id',
      category: 'utility',
      parameter_format: 'named',
      components: [
        {
          type: 'HEADER',
          format: 'TEXT',
          text: 'Pesanan {{order_id}}',
          example: { header_text_named_params: [{ param_name: 'order_id', example: 'A-17' }] },
        },
        {
          type: 'BODY',
          text: 'Halo {{first_name}}, pesanan {{order_id}} siap diambil.',
          example: {
            body_text_named_params: [
              { param_name: 'first_name', example: 'Budi' },
              { param_name: 'order_id', example: 'A-17' },
            ],
          },
        },
        { type: 'FOOTER', text: 'Balas STOP untuk berhenti' },
        {
          type: 'BUTTONS',
          buttons: [
            { type: 'URL', text: 'Lacak', url: 'https://track.example.com/{{1}}', example: ['https://track.example.com/A-17'] },
            { type: 'PHONE_NUMBER', text: 'Telepon', phone_number: '+6281234567890' },
            { type: 'COPY_CODE', example: 'HEMAT10' },
            { type: 'QUICK_REPLY', text: 'Terima kasih' },
          ],
        },
      ],
    })

    // A media header and an authentication template's OTP button.
    const media = await op.post(path, {
      ...fields(form.csrf!, {
        name: 'promo_image',
        parameter_format: 'POSITIONAL',
        header_format: 'IMAGE',
        header_example: '4::aW1hZ2U=:ARb',
      }),
      body_text: 'Hai {{1}}, diskon hari ini.',
      body_examples: 'Budi',
      buttons: '0',
      do: 'create',
    })
    expect(media.status).toBe(303)
    const otp = await op.post(path, {
      _csrf: form.csrf!,
      mode: 'fields',
      name: 'login_code',
      language: 'en_US',
      category: 'AUTHENTICATION',
      parameter_format: 'POSITIONAL',
      header_format: '',
      body_text: '',
      buttons: '1',
      button_type_0: 'OTP',
      button_otp_0: 'COPY_CODE',
      button_text_0: 'Copy code',
      do: 'create',
    })
    expect(otp.status).toBe(303)
    const made = await t.db.sql<{ name: string; components: any }[]>`
      select name, components from wa_templates where name in ('promo_image', 'login_code') order by name`
    expect(made.map((m) => [m.name, m.components])).toEqual([
      ['login_code', [{ type: 'BODY' }, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'COPY_CODE', text: 'Copy code' }] }]],
      [
        'promo_image',
        [
          { type: 'HEADER', format: 'IMAGE', example: { header_handle: ['4::aW1hZ2U=:ARb'] } },
          { type: 'BODY', text: 'Hai {{1}}, diskon hari ini.', example: { body_text: [['Budi']] } },
          { type: 'FOOTER', text: 'Balas STOP untuk berhenti' },
        ],
      ],
    ])
  })
})

describe("a member's templates", () => {
  test("the templates its account may use, with their parameters; another account's template is 404", async () => {
    const own = await t.account(0)
    await assign(t, own.accountId, simulator, true)
    const mine = await stored(simulator)
    const theirs = await stored(other)
    const member = (await dashboardUser(t, email('member'), PASSWORD, own.accountId)).client
    const list = await member.get('/dashboard/whatsapp-templates')
    expect(list.status).toBe(200)
    expect(list.text).toContain(mine.name)
    expect(list.text).not.toContain(theirs.name)
    expect(list.text).toContain('<code>variables.3</code><span class="muted"> (e.g. 5 December)</span>')
    expect(list.text).toContain('<code>header</code>: text {{1}}')
    expect(list.text).toContain('<code>buttons[0]</code>: URL suffix')
    expect(list.text).not.toContain('Sync templates')

    const one = await member.get(`/dashboard/whatsapp-templates/${mine.id}`)
    expect(one.status).toBe(200)
    expect(one.text).toContain('<p class="wa-header">Invoice <mark class="wa-param">{{1}}</mark></p>')
    expect(one.text).toContain('Pay now')
    expect((await member.get(`/dashboard/whatsapp-templates/${theirs.id}`)).status).toBe(404)
    expect((await member.get('/dashboard/whatsapp-templates/abc')).status).toBe(404)

    // The operator sees the account's list on its own path.
    const op = await operator()
    const seen = await op.get(`/dashboard/accounts/${own.accountId}/whatsapp-templates`)
    expect(seen.status).toBe(200)
    expect(seen.text).toContain(mine.name)
    expect((await op.get('/dashboard/whatsapp-templates')).status).toBe(404)
  })
})
