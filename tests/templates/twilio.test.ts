// Twilio's WhatsApp templates (issue 30), against the local fake Twilio (a real Bun.serve holding
// Content templates, their WhatsApp approvals and the Messages resource that checks sends against
// them): the listing reads every page of ContentAndApprovals under the configured root and maps each
// template onto the Cloud API's components, so the integrator's parameters come out of them as for a
// Meta template; a submission maps a Cloud API definition onto a Content type, creates it and asks for
// WhatsApp's approval; a send's values become ContentVariables that an approved template takes, and
// the fake refuses what Twilio refuses (21655 an unknown ContentSid, 63028 a missing variable).

import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { parametersOf } from '../../src/modules/templates/parameters'
import { createTwilio } from '../../src/providers/twilio/send'
import type { TwilioSettings } from '../../src/providers/twilio/settings'
import {
  listTwilioTemplates,
  submitTwilioTemplate,
  twilioContentVariables,
  type TwilioListedTemplate,
} from '../../src/providers/twilio/templates'
import { fakeTwilio } from '../helpers/fake-twilio'

const ACCOUNT = 'AC0123456789abcdef0123456789ab3030'
const TOKEN = 'tok_templates_0123456789abcdef0123'
const OTHER = 'AC0123456789abcdef0123456789ab4040'

const clock = new TestClock()
const fake = fakeTwilio({ clock })
afterAll(() => fake.stop())
beforeEach(() => {
  fake.reset()
  fake.contents.clear()
  fake.contentAccounts.clear()
  fake.approvals.clear()
  fake.contentPageSize = 50
  fake.accounts.clear()
  fake.account(ACCOUNT, TOKEN)
  fake.account(OTHER, 'tok_other_account_0123456789abcdef')
})

const settings = (token = TOKEN): TwilioSettings => ({
  accountSid: ACCOUNT,
  authToken: token,
  from: 'whatsapp:+14155238886',
  apiBase: fake.url,
  contentApiBase: fake.url,
})
const context = { timeoutMs: 5_000, clock }
const listed = async () => {
  const listing = await listTwilioTemplates(settings(), context)
  if (!listing.ok) throw new Error(listing.detail)
  return listing.templates
}
const byName = (templates: TwilioListedTemplate[], name: string) => templates.find((t) => t.name === name)!

describe('listing: every page of ContentAndApprovals, mapped onto the Cloud API', () => {
  test('several pages, each asked for under the configured root with the account credentials', async () => {
    fake.contentPageSize = 2
    for (let i = 1; i <= 5; i++) {
      fake.content(
        ACCOUNT,
        {
          friendly_name: `notice ${i}`,
          language: 'en',
          variables: { '1': 'Ana' },
          types: { 'twilio/text': { body: `Hi {{1}}, notice ${i}` } },
        },
        { name: `notice_${i}`, status: 'approved' },
      )
    }
    fake.content(OTHER, { friendly_name: 'theirs', language: 'en', types: { 'twilio/text': { body: 'Not yours' } } }, { name: 'theirs' })
    const templates = await listed()
    expect(templates.map((t) => t.name)).toEqual(['notice_1', 'notice_2', 'notice_3', 'notice_4', 'notice_5'])
    const pages = fake.requests.filter((r) => r.path === '/v1/ContentAndApprovals')
    expect(pages).toHaveLength(3)
    for (const page of pages) {
      expect(page.account).toBe(ACCOUNT)
      expect(page.headers.get('authorization')).toBe(`Basic ${Buffer.from(`${ACCOUNT}:${TOKEN}`).toString('base64')}`)
    }
    expect(byName(templates, 'notice_3')).toEqual({
      ref: expect.stringMatching(/^HX[0-9a-f]{32}$/),
      name: 'notice_3',
      language: 'en',
      category: 'UTILITY',
      status: 'APPROVED',
      parameterFormat: 'POSITIONAL',
      components: [{ type: 'BODY', text: 'Hi {{1}}, notice 3', example: { body_text: [['Ana']] } }],
      quality: null,
      reason: null,
    })
  })

  test("statuses in Meta's words: received is pending, unsubmitted a draft; a rejection keeps its reason", async () => {
    const text = (body: string) => ({ friendly_name: body, language: 'id', types: { 'twilio/text': { body } } })
    for (const status of ['received', 'pending', 'approved', 'rejected', 'paused', 'disabled']) {
      const sid = fake.content(ACCOUNT, text(status), { name: `t_${status}`, category: 'MARKETING' })
      fake.approve(sid, status, status === 'rejected' ? 'INVALID_FORMAT' : '')
    }
    fake.content(ACCOUNT, text('Draft body'))
    // The service's own reply-button templates (content.ts) are not WhatsApp templates.
    fake.content(ACCOUNT, {
      friendly_name: 'messaging_api_quick-reply_2',
      language: 'en',
      types: { 'twilio/quick-reply': { body: '{{1}}', actions: [] } },
    })
    // Nor is a list picker.
    fake.content(ACCOUNT, {
      friendly_name: 'menu',
      language: 'en',
      types: { 'twilio/list-picker': { body: 'Pick', button: 'Menu', items: [] } },
    })
    const templates = await listed()
    expect(templates.map((t) => [t.name, t.status, t.category, t.reason])).toEqual([
      ['t_received', 'PENDING', 'MARKETING', null],
      ['t_pending', 'PENDING', 'MARKETING', null],
      ['t_approved', 'APPROVED', 'MARKETING', null],
      ['t_rejected', 'REJECTED', 'MARKETING', 'INVALID_FORMAT'],
      ['t_paused', 'PAUSED', 'MARKETING', null],
      ['t_disabled', 'DISABLED', 'MARKETING', null],
      ['Draft body', 'DRAFT', 'UTILITY', null],
    ])
  })

  test('call-to-action, media, card, quick reply and authentication: components whose parameters a send fills', async () => {
    fake.content(
      ACCOUNT,
      {
        friendly_name: 'invoice',
        language: 'en',
        variables: { '1': 'INV-1001', '2': 'Rp 1.250.000', '3': 'INV-1001' },
        types: {
          'twilio/text': { body: 'Invoice {{1}} of {{2}} is due.' },
          'twilio/call-to-action': {
            body: 'Invoice {{1}} of {{2}} is due.',
            actions: [
              { type: 'URL', title: 'Pay now', url: 'https://pay.example.com/i/{{3}}' },
              { type: 'PHONE_NUMBER', title: 'Call us', phone: '+6221555000' },
            ],
          },
        },
      },
      { name: 'invoice_due', status: 'approved' },
    )
    fake.content(
      ACCOUNT,
      {
        friendly_name: 'receipt',
        language: 'en',
        variables: { '1': 'Ana' },
        types: { 'twilio/media': { body: 'Thanks {{1}}, your receipt.', media: ['https://cdn.example.com/receipt.pdf'] } },
      },
      { name: 'receipt' },
    )
    fake.content(
      ACCOUNT,
      {
        friendly_name: 'offer',
        language: 'en',
        variables: { '1': 'Ana', '2': 'SAVE10' },
        types: {
          'twilio/card': {
            title: 'Hello {{1}}, a gift for you',
            subtitle: 'Until Sunday',
            media: ['https://cdn.example.com/offer.jpg'],
            actions: [
              { type: 'COPY_CODE', code: '{{2}}' },
              { type: 'QUICK_REPLY', title: 'Stop', id: 'stop' },
            ],
          },
        },
      },
      { name: 'offer', category: 'MARKETING' },
    )
    fake.content(
      ACCOUNT,
      {
        friendly_name: 'yes no',
        language: 'en',
        variables: { '1': 'Tuesday' },
        types: {
          'twilio/quick-reply': {
            body: 'Confirm your visit on {{1}}?',
            actions: [
              { title: 'Yes', id: 'yes' },
              { title: 'No', id: 'no' },
            ],
          },
        },
      },
      { name: 'visit_confirm' },
    )
    fake.content(
      ACCOUNT,
      {
        friendly_name: 'otp',
        language: 'en',
        types: {
          'whatsapp/authentication': {
            add_security_recommendation: true,
            code_expiration_minutes: 10,
            actions: [{ type: 'COPY_CODE', copy_code_text: 'Copy code' }],
          },
        },
      },
      { name: 'login_code', category: 'AUTHENTICATION' },
    )
    const templates = await listed()

    const invoice = byName(templates, 'invoice_due')
    expect(invoice.components).toEqual([
      { type: 'BODY', text: 'Invoice {{1}} of {{2}} is due.', example: { body_text: [['INV-1001', 'Rp 1.250.000']] } },
      {
        type: 'BUTTONS',
        buttons: [
          {
            type: 'URL',
            text: 'Pay now',
            url: 'https://pay.example.com/i/{{3}}',
            example: ['https://pay.example.com/i/INV-1001'],
            twilio_variable: '3',
          },
          { type: 'PHONE_NUMBER', text: 'Call us', phone_number: '+6221555000' },
        ],
      },
    ])
    expect(parametersOf(invoice)).toEqual({
      body: [
        { key: '1', example: 'INV-1001' },
        { key: '2', example: 'Rp 1.250.000' },
      ],
      header: null,
      buttons: [{ index: 0, sub_type: 'url', example: 'https://pay.example.com/i/INV-1001' }],
    })

    const receipt = byName(templates, 'receipt')
    expect(receipt.components[0]).toEqual({
      type: 'HEADER',
      format: 'DOCUMENT',
      example: { header_handle: ['https://cdn.example.com/receipt.pdf'] },
      twilio_media: 'https://cdn.example.com/receipt.pdf',
    })
    // The Content template's own media: a send names none.
    expect(parametersOf(receipt)).toEqual({ body: [{ key: '1', example: 'Ana' }], header: null, buttons: [] })

    const offer = byName(templates, 'offer')
    expect(offer.category).toBe('MARKETING')
    expect(offer.components).toEqual([
      {
        type: 'HEADER',
        format: 'IMAGE',
        example: { header_handle: ['https://cdn.example.com/offer.jpg'] },
        twilio_media: 'https://cdn.example.com/offer.jpg',
      },
      { type: 'BODY', text: 'Hello {{1}}, a gift for you', example: { body_text: [['Ana']] } },
      { type: 'FOOTER', text: 'Until Sunday' },
      {
        type: 'BUTTONS',
        buttons: [
          { type: 'COPY_CODE', example: 'SAVE10', twilio_variable: '2' },
          { type: 'QUICK_REPLY', text: 'Stop' },
        ],
      },
    ])
    expect(parametersOf(offer).buttons).toEqual([{ index: 0, sub_type: 'copy_code', example: 'SAVE10' }])

    expect(parametersOf(byName(templates, 'visit_confirm'))).toEqual({
      body: [{ key: '1', example: 'Tuesday' }],
      header: null,
      buttons: [],
    })

    const otp = byName(templates, 'login_code')
    expect(otp.category).toBe('AUTHENTICATION')
    expect(parametersOf(otp)).toEqual({
      body: [{ key: '1', example: '123456' }],
      header: null,
      buttons: [{ index: 0, sub_type: 'url', otp_type: 'copy_code' }],
    })
  })

  test("a refusal says why, without the auth token (even when Twilio's answer quotes it)", async () => {
    const refused = await listTwilioTemplates(settings('tok_wrong_0123456789abcdef012345'), context)
    expect(refused).toEqual({ ok: false, detail: expect.stringContaining('Twilio answered HTTP 401') })
    expect(JSON.stringify(refused)).not.toContain('tok_wrong')
    fake.echoCredentials = true
    const echoed = await listTwilioTemplates(settings('tok_wrong_0123456789abcdef012345'), context)
    expect(echoed.ok).toBe(false)
    expect(JSON.stringify(echoed)).not.toContain('tok_wrong_0123456789abcdef012345')
  })
})

describe('submitting: a Cloud API definition becomes a Content template with an approval request', () => {
  const invoice = {
    name: 'invoice_due',
    language: 'en',
    category: 'UTILITY',
    components: [
      { type: 'BODY', text: 'Invoice {{1}} of {{2}} is due.', example: { body_text: [['INV-1001', 'Rp 1.250.000']] } },
      {
        type: 'BUTTONS',
        buttons: [{ type: 'URL', text: 'Pay now', url: 'https://pay.example.com/i/{{1}}', example: ['INV-1001'] }],
      },
    ],
  }

  test('created as twilio/call-to-action (the URL variable numbered after the body), approval asked with name and category', async () => {
    const submitted = await submitTwilioTemplate(settings(), invoice, context)
    expect(submitted).toEqual({ ok: true, ref: expect.stringMatching(/^HX[0-9a-f]{32}$/), status: 'PENDING', category: 'UTILITY' })
    if (!submitted.ok) return
    expect(fake.contents.get(submitted.ref)).toEqual({
      friendly_name: 'invoice_due',
      language: 'en',
      variables: { '1': 'INV-1001', '2': 'Rp 1.250.000', '3': 'INV-1001' },
      types: {
        'twilio/call-to-action': {
          body: 'Invoice {{1}} of {{2}} is due.',
          actions: [{ type: 'URL', title: 'Pay now', url: 'https://pay.example.com/i/{{3}}' }],
        },
      },
    })
    expect(fake.contentAccounts.get(submitted.ref)).toBe(ACCOUNT)
    const approval = fake.requests.find((r) => r.path === `/v1/Content/${submitted.ref}/ApprovalRequests/whatsapp`)!
    expect(JSON.parse(approval.body)).toEqual({ name: 'invoice_due', category: 'UTILITY' })

    // Listed pending until WhatsApp approves it, then approved; its parameters as submitted.
    expect(byName(await listed(), 'invoice_due').status).toBe('PENDING')
    fake.approve(submitted.ref, 'approved')
    const synced = byName(await listed(), 'invoice_due')
    expect(synced.status).toBe('APPROVED')
    expect(parametersOf(synced)).toEqual({
      body: [
        { key: '1', example: 'INV-1001' },
        { key: '2', example: 'Rp 1.250.000' },
      ],
      header: null,
      buttons: [{ index: 0, sub_type: 'url', example: 'https://pay.example.com/i/INV-1001' }],
    })
  })

  test('a second submission of that name and language: refused by Twilio, its code kept, no secret', async () => {
    expect((await submitTwilioTemplate(settings(), invoice, context)).ok).toBe(true)
    const again = await submitTwilioTemplate(settings(), invoice, context)
    expect(again).toEqual({ ok: false, code: 20409, detail: expect.stringContaining('exists already'), throttled: false })
    expect(JSON.stringify(again)).not.toContain(TOKEN)
  })

  test('what a Content template cannot be is refused before Twilio is asked', async () => {
    const named = { ...invoice, parameter_format: 'NAMED', components: [{ type: 'BODY', text: 'Hi {{name}}!' }] }
    const header = { ...invoice, components: [{ type: 'HEADER', format: 'TEXT', text: 'Invoice' }, invoice.components[0]] }
    for (const [definition, why] of [
      [named, 'parameter_format'],
      [header, 'components[HEADER]'],
    ] as const) {
      const refused = await submitTwilioTemplate(settings(), definition, context)
      expect(refused).toEqual({ ok: false, code: null, detail: expect.stringContaining(why), throttled: false })
    }
    expect(fake.requests).toHaveLength(0)
  })

  test('an authentication template: whatsapp/authentication with its copy-code button', async () => {
    const submitted = await submitTwilioTemplate(
      settings(),
      {
        name: 'login_code',
        language: 'en',
        category: 'AUTHENTICATION',
        components: [
          { type: 'BODY', add_security_recommendation: true },
          { type: 'FOOTER', code_expiration_minutes: 10 },
          { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'COPY_CODE', text: 'Copy code' }] },
        ],
      },
      context,
    )
    expect(submitted.ok).toBe(true)
    if (!submitted.ok) return
    expect(fake.contents.get(submitted.ref)!.types).toEqual({
      'whatsapp/authentication': {
        add_security_recommendation: true,
        code_expiration_minutes: 10,
        actions: [{ type: 'COPY_CODE', copy_code_text: 'Copy code' }],
      },
    })
  })
})

describe('sending an approved Content template: ContentVariables from the send, checked as Twilio does', () => {
  const provider = () => createTwilio(settings(), { publicBaseUrl: 'https://api.example.com', timeoutMs: 5_000, clock })
  const send = (ref: string, variables: Record<string, string>) =>
    provider().send({
      id: 1,
      to: '+628126000001',
      body: 'rendered',
      mediaUrl: null,
      template: { ref, language: null, variables: Object.keys(variables).map((k) => variables[k]!) },
    } as never)

  test('the values fill the body and the button variable; a missing one is 63028, an unknown SID 21655', async () => {
    const submitted = await submitTwilioTemplate(
      settings(),
      {
        name: 'invoice_due',
        language: 'en',
        category: 'UTILITY',
        components: [
          { type: 'BODY', text: 'Invoice {{1}} of {{2}} is due.', example: { body_text: [['INV-1', 'Rp 1']] } },
          { type: 'BUTTONS', buttons: [{ type: 'URL', text: 'Pay', url: 'https://pay.example.com/i/{{1}}', example: ['INV-1'] }] },
        ],
      },
      context,
    )
    if (!submitted.ok) throw new Error(submitted.detail)
    fake.approve(submitted.ref, 'approved')
    const template = byName(await listed(), 'invoice_due')
    const variables = twilioContentVariables(template.components, {
      variables: { '1': 'INV-1001', '2': 'Rp 1.250.000' },
      buttons: [{ index: 0, value: 'INV-1001' }],
    })
    expect(variables).toEqual({ '1': 'INV-1001', '2': 'Rp 1.250.000', '3': 'INV-1001' })

    expect(await send(submitted.ref, variables)).toEqual({ ok: true, sid: expect.stringMatching(/^SM/) })
    const form = new URLSearchParams(fake.requests.at(-1)!.body)
    expect(form.get('ContentSid')).toBe(submitted.ref)
    expect(JSON.parse(form.get('ContentVariables')!)).toEqual(variables)

    expect(await send(submitted.ref, { '1': 'INV-1001', '2': 'Rp 1.250.000' })).toMatchObject({ ok: false, errorCode: 63028 })
    expect(await send(`HX${'f'.repeat(32)}`, variables)).toMatchObject({ ok: false, errorCode: 21655 })
  })
})
