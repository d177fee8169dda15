// The dashboard shows the text the customer saw of a WhatsApp template (issue 30): the template filled
// with the integrator's values, header, body and footer, on the messages list, the message's page and
// the inbox (its conversation list and the conversation), for positional and named parameters, every
// value HTML-escaped (a value with `<b>&` shows as text, never as markup). Pages through app.handle,
// as a signed-in member of the account; sends through the API to the fake Graph API.

import { beforeAll, describe, expect, test } from 'bun:test'
import { type TestApp } from '../helpers/app'
import { assign, createSender, META_A } from '../helpers/senders'
import { templateFakes, WABA_A } from '../helpers/templates'
import { dashboardUser, type Page } from '../helpers/web'
import { TestClock } from '../../src/lib/clock'

const clock = new TestClock()
const fakes = templateFakes({ graph: { clock } })
const { graph } = fakes

let t: TestApp
let metaA: number
let shop: { accountId: number; key: string }
let member: Awaited<ReturnType<typeof dashboardUser>>['client']
const ids = { invoice: 0, order: 0 }

const INVOICE = {
  name: 'invoice_due',
  language: 'en_US',
  category: 'UTILITY' as const,
  parameter_format: 'POSITIONAL' as const,
  components: [
    { type: 'HEADER', format: 'TEXT', text: 'Invoice {{1}}', example: { header_text: ['INV-1'] } },
    { type: 'BODY', text: 'Invoice {{1}} of {{2}} is due on {{3}}.', example: { body_text: [['INV-1', 'Rp 1.000', '1 January']] } },
    { type: 'FOOTER', text: 'Reply STOP to opt out' },
    {
      type: 'BUTTONS',
      buttons: [{ type: 'URL', text: 'Pay', url: 'https://pay.example.com/i/{{1}}', example: ['https://pay.example.com/i/INV-1'] }],
    },
  ],
}

const ORDER = {
  name: 'order_ready',
  language: 'id',
  category: 'UTILITY' as const,
  parameter_format: 'NAMED' as const,
  components: [
    {
      type: 'BODY',
      text: 'Halo {{first_name}}, pesanan {{order_id}} siap diambil.',
      example: {
        body_text_named_params: [
          { param_name: 'first_name', example: 'Budi' },
          { param_name: 'order_id', example: 'A-1' },
        ],
      },
    },
  ],
}

const INVOICE_TO = '+6281234500001'
const ORDER_TO = '+6281234500002'
/** The text each customer saw, as sent (not escaped). */
const INVOICE_TEXT = 'Invoice INV-<b>&1\n\nInvoice INV-<b>&1 of Rp 1.250.000 & more is due on 5 December.\n\nReply STOP to opt out'
const ORDER_TEXT = 'Halo Budi <b>&, pesanan A-<i>7 siap diambil.'

/** The text as a page must show it: HTML-escaped. */
const escaped = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')
/** The markup a value would have made had it not been escaped. */
const RAW = /<b>|<i>|&1|& more/

beforeAll(async () => {
  t = await fakes.start({ clock, runOnClock: true })
  metaA = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
  for (const definition of [INVOICE, ORDER]) graph.template(WABA_A, { ...definition, status: 'APPROVED' })
  expect((await t.admin('POST', `/senders/${metaA}/templates/sync`)).status).toBe(200)
  shop = await t.account(1_000, { price: 10 })
  await assign(t, shop.accountId, metaA, true)
  for (const name of ['invoice_due', 'order_ready'] as const) {
    const [listed] = (await t.api('GET', `/templates?name=${name}`, shop.key)).body.data.items
    expect(listed.status).toBe('approved')
    ids[name === 'invoice_due' ? 'invoice' : 'order'] = listed.id
  }
  const invoice = await t.api('POST', '/messages/send', shop.key, {
    to: INVOICE_TO,
    template_id: ids.invoice,
    variables: { '1': 'INV-<b>&1', '2': 'Rp 1.250.000 & more', '3': '5 December' },
    header: 'INV-<b>&1',
    buttons: [{ index: 0, value: 'INV-1' }],
  })
  expect({ status: invoice.status, body: invoice.body }).toMatchObject({ status: 200, body: { data: { status: 'sent' } } })
  const order = await t.api('POST', '/messages/send', shop.key, {
    to: ORDER_TO,
    template_id: ids.order,
    variables: { first_name: 'Budi <b>&', order_id: 'A-<i>7' },
  })
  expect({ status: order.status, body: order.body }).toMatchObject({ status: 200, body: { data: { status: 'sent' } } })
  // What Meta got carries the values as they were given.
  const sent = graph.requests.filter((r) => r.path.endsWith('/messages')).map((r) => JSON.parse(r.body).template.components)
  expect(sent[0]).toContainEqual({ type: 'header', parameters: [{ type: 'text', text: 'INV-<b>&1' }] })
  expect(sent[1]).toEqual([
    {
      type: 'body',
      parameters: [
        { type: 'text', parameter_name: 'first_name', text: 'Budi <b>&' },
        { type: 'text', parameter_name: 'order_id', text: 'A-<i>7' },
      ],
    },
  ])
  // The API shows the same text.
  expect((await t.api('GET', `/messages/${invoice.body.data.message_id}`, shop.key)).body.data.body).toBe(INVOICE_TEXT)
  expect((await t.api('GET', `/messages/${order.body.data.message_id}`, shop.key)).body.data.body).toBe(ORDER_TEXT)
  member = (await dashboardUser(t, 'templates-text@example.com', 'correct horse battery', shop.accountId)).client
}, 60_000)

const ok = (page: Page) => {
  expect({ status: page.status, raw: RAW.test(page.text) }).toEqual({ status: 200, raw: false })
  return page.text
}
/** The href of the messages list's link to the message to `phone`. */
const messageLink = (list: string, phone: string) => new RegExp(`href="(/dashboard/messages/\\d+)">\\${phone}</a>`).exec(list)?.[1]

describe('the message pages', () => {
  test("the list previews each message's filled text; each message's page shows it whole, with its template", async () => {
    const list = ok(await member.get('/dashboard/messages'))
    expect(list).toContain(escaped('Invoice INV-<b>&1'))
    expect(list).toContain(escaped('Halo Budi <b>&, pesanan A-<i>7'))

    for (const [phone, text, id, name] of [
      [INVOICE_TO, INVOICE_TEXT, ids.invoice, 'invoice_due'],
      [ORDER_TO, ORDER_TEXT, ids.order, 'order_ready'],
    ] as const) {
      const href = messageLink(list, phone)
      expect({ phone, href }).toEqual({ phone, href: expect.stringMatching(/^\/dashboard\/messages\/\d+$/) })
      const page = ok(await member.get(href!))
      expect(page).toContain(`<p class="message-body">${escaped(text)}</p>`)
      // The WhatsApp template it was sent as, by name, linked to its page.
      expect(page).toContain(`<a href="/dashboard/whatsapp-templates/${id}">${name}</a>`)
      expect(page).not.toContain('(deleted)')
    }
    // The values Meta got, as the page lists them.
    const invoicePage = ok(await member.get(messageLink(list, INVOICE_TO)!))
    expect(invoicePage).toContain(
      escaped('meta: invoice_due (en_US), variables: INV-<b>&1 | Rp 1.250.000 & more | 5 December; button 1 = INV-1'),
    )
  })
})

describe('the inbox', () => {
  test('the conversation list and each conversation show the filled text, escaped', async () => {
    const inbox = ok(await member.get('/dashboard/inbox'))
    expect(inbox).toContain(escaped(`You sent: ${ORDER_TEXT}`))

    const invoice = ok(await member.get(`/dashboard/inbox/${INVOICE_TO.slice(1)}`))
    expect(invoice).toContain(`<div class="message-body">${escaped(INVOICE_TEXT)}</div>`)
    const order = ok(await member.get(`/dashboard/inbox/${ORDER_TO.slice(1)}`))
    expect(order).toContain(`<div class="message-body">${escaped(ORDER_TEXT)}</div>`)
  })
})
