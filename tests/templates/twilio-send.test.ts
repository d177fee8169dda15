// Sending a Twilio sender's WhatsApp template through the API (issue 30), against the fake Twilio
// holding the account's Content templates and their approvals (so it checks each send as Twilio does:
// an unknown ContentSid is 21655, a variable missing 63028). A template listed from Twilio keeps
// Twilio's own variable numbers (a URL button's may come before the body's); one kept as it was
// submitted has its buttons numbered after the body, as the submission made them. Either way the
// fake receives the ContentSid with every variable filled.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { assign, createSender, registerFakes, sendersEnv, TWILIO_A } from '../helpers/senders'
import { insertTemplate, type WaTemplate } from '../../src/modules/templates/catalog'
import type { TwilioSettings } from '../../src/providers/twilio/settings'
import { listTwilioTemplates, submitTwilioTemplate, type TwilioListedTemplate } from '../../src/providers/twilio/templates'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

let t: TestApp
let twilioA: number
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph) })
  twilioA = await createSender(t, 'twilio', TWILIO_A, { recipient_gap_ms: 0 })
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})
afterEach(() => twilio.reset())

const settings: TwilioSettings = {
  accountSid: TWILIO_A.credentials.account_sid,
  authToken: TWILIO_A.credentials.auth_token,
  from: `whatsapp:${TWILIO_A.number}`,
  apiBase: twilio.url,
  contentApiBase: twilio.url,
}
const context = () => ({ timeoutMs: 5_000, clock: t.deps.clock })

/** Twilio A's template of that name, as its Content API lists it. */
async function listed(name: string): Promise<TwilioListedTemplate> {
  const listing = await listTwilioTemplates(settings, context())
  if (!listing.ok) throw new Error(listing.detail)
  return listing.templates.find((x) => x.name === name)!
}

/** Stores a template for Twilio A, as a sync or a submission would (status approved). */
async function store(name: string, components: Record<string, unknown>[], ref: string): Promise<WaTemplate> {
  const row = await t.db.sql.begin((tx) =>
    insertTemplate(
      tx,
      t.deps.clock,
      {
        senderId: twilioA,
        provider: 'twilio',
        name,
        language: 'en',
        category: 'utility',
        parameterFormat: 'positional',
        components,
        status: 'approved',
        providerRef: ref,
      },
      'sync',
    ),
  )
  return row!
}

async function account() {
  const a = await t.account(100)
  await assign(t, a.accountId, twilioA, true)
  return a
}

const lastForm = () => new URLSearchParams(twilio.requests.filter((r) => r.path.endsWith('/Messages.json')).at(-1)!.body)

describe("a Twilio template's send fills every Content variable", () => {
  test('listed from Twilio: the URL button keeps its own variable ({{1}}), the body its {{2}} and {{3}}', async () => {
    const sid = twilio.content(
      TWILIO_A.credentials.account_sid,
      {
        friendly_name: 'invoice link first',
        language: 'en',
        variables: { '1': 'INV-1', '2': 'INV-1', '3': 'Rp 1' },
        types: {
          'twilio/call-to-action': {
            body: 'Invoice {{2}} of {{3}} is due.',
            actions: [{ type: 'URL', title: 'Pay', url: 'https://pay.example.com/i/{{1}}' }],
          },
        },
      },
      { name: 'invoice_link_first', status: 'approved' },
    )
    const fromTwilio = await listed('invoice_link_first')
    const tpl = await store(fromTwilio.name, fromTwilio.components, fromTwilio.ref)
    const { key } = await account()

    const parameters = await t.api('GET', `/templates/${tpl.id}`, key)
    expect(parameters.body.data.parameters).toEqual({
      body: [
        { key: '2', example: 'INV-1' },
        { key: '3', example: 'Rp 1' },
      ],
      header: null,
      buttons: [{ index: 0, sub_type: 'url', example: 'https://pay.example.com/i/INV-1' }],
    })

    const answer = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      template_id: tpl.id,
      variables: { '2': 'INV-1001', '3': 'Rp 1.250.000' },
      buttons: [{ index: 0, value: 'INV-1001' }],
    })
    expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200 })
    const form = lastForm()
    expect([form.get('ContentSid'), JSON.parse(form.get('ContentVariables')!)]).toEqual([
      sid,
      { '1': 'INV-1001', '2': 'INV-1001', '3': 'Rp 1.250.000' },
    ])
    expect(twilio.requests.at(-1)!.status).toBe(201)
  })

  test('kept as submitted: the button numbered after the body, as the Content template was made', async () => {
    const definition = {
      name: 'order_shipped',
      language: 'en',
      category: 'UTILITY',
      components: [
        { type: 'BODY', text: 'Order {{1}} ships on {{2}}.', example: { body_text: [['A-1', 'Monday']] } },
        { type: 'BUTTONS', buttons: [{ type: 'URL', text: 'Track', url: 'https://track.example.com/{{1}}', example: ['A-1'] }] },
      ],
    }
    const submitted = await submitTwilioTemplate(settings, definition, context())
    if (!submitted.ok) throw new Error(submitted.detail)
    twilio.approve(submitted.ref, 'approved')
    const tpl = await store(definition.name, definition.components, submitted.ref)
    const { key } = await account()

    const answer = await t.api('POST', '/messages/send', key, {
      to: '081234567891',
      template_id: tpl.id,
      variables: { '1': 'A-1001', '2': 'Friday' },
      buttons: [{ index: 0, value: 'A-1001' }],
    })
    expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200 })
    expect(JSON.parse(lastForm().get('ContentVariables')!)).toEqual({ '1': 'A-1001', '2': 'Friday', '3': 'A-1001' })
    expect(twilio.requests.at(-1)!.status).toBe(201)
  })

  test("a media template: the Content template's own media, which the send does not name", async () => {
    const sid = twilio.content(
      TWILIO_A.credentials.account_sid,
      {
        friendly_name: 'receipt',
        language: 'en',
        variables: { '1': 'Ana' },
        types: { 'twilio/media': { body: 'Thanks {{1}}, your receipt.', media: ['https://cdn.example.com/receipt.pdf'] } },
      },
      { name: 'receipt_doc', status: 'approved' },
    )
    const fromTwilio = await listed('receipt_doc')
    const tpl = await store(fromTwilio.name, fromTwilio.components, fromTwilio.ref)
    const { key } = await account()
    expect((await t.api('GET', `/templates/${tpl.id}`, key)).body.data.parameters).toEqual({
      body: [{ key: '1', example: 'Ana' }],
      header: null,
      buttons: [],
    })
    const answer = await t.api('POST', '/messages/send', key, { to: '081234567892', template_id: tpl.id, variables: { '1': 'Budi' } })
    expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200 })
    const form = lastForm()
    expect([form.get('ContentSid'), JSON.parse(form.get('ContentVariables')!), form.has('MediaUrl')]).toEqual([sid, { '1': 'Budi' }, false])
    expect(twilio.requests.at(-1)!.status).toBe(201)
  })
})
