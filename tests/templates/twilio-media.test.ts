// A Twilio sender's WhatsApp template whose header media URL has a variable (issue 32), through the API
// against the fake Twilio. Twilio's Content templates keep the media URL in the template, a static prefix
// and a variable suffix (`https://cdn.example.com/invoices/{{2}}`); a send fills the suffix through
// ContentVariables. The service takes `header: {link}` under the prefix (the rest is the variable), or
// an uploaded file (`media_id`) when the template was approved with this service's own media URL (the
// hand-off fills the variable with the rest of the file's signed link, made then). A link elsewhere,
// a link with nothing after the prefix, an uploaded file under another prefix and any header for a
// template whose media is fixed are 422 before anything is charged, and the fake gets nothing. The fake
// plays by Twilio's rules: a variable media URL's variable missing is 21656, and each message it takes
// is kept with its media URL resolved, which the tests read.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { assign, createSender, registerFakes, sendersEnv, TWILIO_A } from '../helpers/senders'
import { insertTemplate } from '../../src/modules/templates/catalog'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)
const A = TWILIO_A.credentials.account_sid
const PREFIX = 'https://cdn.example.com/invoices/'
const PDF = new TextEncoder().encode('%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n')

let t: TestApp
let twilioA: number
/** The synced templates' ids and Content SIDs, by name. */
const ids = new Map<string, number>()
const sids = new Map<string, string>()
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph) })
  twilioA = await createSender(t, 'twilio', TWILIO_A, { recipient_gap_ms: 0 })
  twilio.callback = { publicBaseUrl: t.config.publicBaseUrl, deliver: (request) => t.app.handle(request) }
  const contents: [string, Record<string, unknown>, Record<string, string>][] = [
    [
      'invoice_doc',
      { 'twilio/media': { body: 'Hi {{1}}, your invoice is attached.', media: [`${PREFIX}{{2}}`] } },
      { '1': 'Ana', '2': 'INV-1.pdf' },
    ],
    [
      'receipt_fixed',
      { 'twilio/media': { body: 'Hi {{1}}, your receipt.', media: ['https://cdn.example.com/receipt.pdf'] } },
      { '1': 'Ana' },
    ],
    [
      // Approved with this service's own media URL: an uploaded file's signed link fills it.
      'statement_own',
      { 'twilio/card': { title: 'Your statement, {{1}}.', media: [`${t.config.publicBaseUrl}/media/{{2}}`] } },
      { '1': 'Ana', '2': 'statement.pdf' },
    ],
  ]
  for (const [name, types, variables] of contents) {
    const sid = twilio.content(A, { friendly_name: name, language: 'en', variables, types }, { name, status: 'approved' })
    sids.set(name, sid)
  }
  const synced = await t.admin('POST', `/senders/${twilioA}/templates/sync`)
  expect(synced.status).toBe(200)
  for (const row of (await t.admin('GET', `/senders/${twilioA}/templates`)).body.data) ids.set(row.name, row.id)
  twilio.reset()
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})
afterEach(() => twilio.reset())

async function account() {
  const a = await t.account(100)
  await assign(t, a.accountId, twilioA, true)
  return a
}

const messagesSent = () => twilio.requests.filter((r) => r.path.endsWith('/Messages.json'))
const charged = async (accountId: number) =>
  Number((await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where account_id = ${accountId}`)[0]!.n)

describe("a Twilio template's variable header media", () => {
  test('a link under the prefix: the rest goes as its ContentVariable, Twilio resolves the URL, charged once', async () => {
    const { accountId, key } = await account()
    const parameters = await t.api('GET', `/templates/${ids.get('invoice_doc')}`, key)
    expect(parameters.body.data.parameters).toEqual({
      body: [{ key: '1', example: 'Ana' }],
      header: { type: 'document', example: `${PREFIX}INV-1.pdf`, link_prefix: PREFIX },
      buttons: [],
    })
    const answer = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      template_id: ids.get('invoice_doc'),
      variables: { '1': 'Budi' },
      header: { type: 'document', link: `${PREFIX}INV-1001.pdf` },
    })
    expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200, body: { data: { status: 'sent' } } })
    expect(twilio.messages.map((m) => [m.contentSid, m.contentVariables, m.media])).toEqual([
      [sids.get('invoice_doc')!, { '1': 'Budi', '2': 'INV-1001.pdf' }, [`${PREFIX}INV-1001.pdf`]],
    ])
    expect(messagesSent().map((r) => r.status)).toEqual([201])
    expect(await money(t, accountId)).toEqual({ balance: 100 - answer.body.data.cost, ledgerSum: 100 - answer.body.data.cost })
    expect([answer.body.data.cost > 0, await charged(accountId)]).toEqual([true, 1])
    const shown = await t.api('GET', `/messages/${answer.body.data.message_id}`, key)
    expect(shown.body.data.content).toEqual({ header: { type: 'document', link: `${PREFIX}INV-1001.pdf` } })
  })

  test('a link elsewhere or with nothing after the prefix: 422 naming header.link and the prefix; nothing charged or sent', async () => {
    const { accountId, key } = await account()
    for (const link of ['https://files.example.org/invoices/INV-1001.pdf', 'https://cdn.example.com/other/INV-1001.pdf', PREFIX]) {
      const answer = await t.api('POST', '/messages/send', key, {
        to: '081234567890',
        template_id: ids.get('invoice_doc'),
        variables: { '1': 'Budi' },
        header: { type: 'document', link },
      })
      expect([answer.status, answer.body.code]).toEqual([422, 'VALIDATION_ERROR'])
      expect(answer.body.error).toStartWith(`header.link: template ${ids.get('invoice_doc')} (invoice_doc) was approved with the media URL`)
      expect(answer.body.error).toContain(`must start with ${PREFIX} and name the file after it`)
      expect(answer.body.error).toEndWith('nothing was charged')
    }
    // Twilio sends no document file name: refused rather than dropped.
    const named = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      template_id: ids.get('invoice_doc'),
      variables: { '1': 'Budi' },
      header: { type: 'document', link: `${PREFIX}INV-1001.pdf`, filename: 'invoice.pdf' },
    })
    expect([named.status, named.body.error]).toEqual([422, expect.stringContaining("header.filename: Twilio does not send a document's")])
    expect(messagesSent()).toEqual([])
    expect(await money(t, accountId)).toEqual({ balance: 100, ledgerSum: 100 })
    expect(await charged(accountId)).toBe(0)
  })

  test('bulk: each entry judged on its own; the one outside the prefix fails uncharged', async () => {
    const { accountId, key } = await account()
    const entry = (to: string, link: string) => ({
      to,
      template_id: ids.get('invoice_doc'),
      variables: { '1': 'Budi' },
      header: { type: 'document', link },
    })
    const answer = await t.api('POST', '/messages/bulk', key, {
      messages: [entry('081234567890', `${PREFIX}INV-7.pdf`), entry('081234567891', 'https://elsewhere.example.com/INV-8.pdf')],
    })
    expect(answer.status).toBe(200)
    expect(answer.body.data.results.map((r: any) => [r.status, r.code ?? null])).toEqual([
      ['sent', null],
      ['failed', 'VALIDATION_ERROR'],
    ])
    expect(answer.body.data.results[1].error).toContain(`messages[1].header.link: template ${ids.get('invoice_doc')}`)
    expect(twilio.messages.map((m) => m.media)).toEqual([[`${PREFIX}INV-7.pdf`]])
    expect(await charged(accountId)).toBe(1)
  })

  test('a fixed media: a header is 422 (the template fixes it), none goes with the template own file', async () => {
    const { accountId, key } = await account()
    const refused = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      template_id: ids.get('receipt_fixed'),
      variables: { '1': 'Budi' },
      header: { type: 'document', link: 'https://cdn.example.com/receipt.pdf' },
    })
    expect([refused.status, refused.body.code, refused.body.error]).toEqual([
      422,
      'VALIDATION_ERROR',
      `header: the media of template ${ids.get('receipt_fixed')} (receipt_fixed) is fixed by the template ` +
        '(https://cdn.example.com/receipt.pdf); send it without header; nothing was charged',
    ])
    expect(messagesSent()).toEqual([])
    expect(await money(t, accountId)).toEqual({ balance: 100, ledgerSum: 100 })
    const sent = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      template_id: ids.get('receipt_fixed'),
      variables: { '1': 'Budi' },
    })
    expect(sent.status).toBe(200)
    expect(twilio.messages.map((m) => m.media)).toEqual([['https://cdn.example.com/receipt.pdf']])
  })

  test('kept as submitted (a media header with its sample, no twilio_media until a sync): its media is fixed too', async () => {
    const { accountId, key } = await account()
    const sid = twilio.content(
      A,
      {
        friendly_name: 'promo',
        language: 'en',
        types: { 'twilio/media': { body: 'Promo.', media: ['https://cdn.example.com/promo.jpg'] } },
      },
      { name: 'promo_submitted', status: 'approved' },
    )
    const components = [
      { type: 'HEADER', format: 'IMAGE', example: { header_handle: ['https://cdn.example.com/promo.jpg'] } },
      { type: 'BODY', text: 'Promo.' },
    ]
    const tpl = await t.db.sql.begin((tx) =>
      insertTemplate(
        tx,
        t.deps.clock,
        {
          senderId: twilioA,
          provider: 'twilio',
          name: 'promo_submitted',
          language: 'en',
          category: 'marketing',
          parameterFormat: 'positional',
          components,
          status: 'approved',
          providerRef: sid,
        },
        'operator',
      ),
    )
    expect((await t.api('GET', `/templates/${tpl!.id}`, key)).body.data.parameters.header).toBeNull()
    const refused = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      template_id: tpl!.id,
      header: { type: 'image', link: 'https://cdn.example.com/promo.jpg' },
    })
    expect([refused.status, refused.body.error]).toEqual([422, expect.stringContaining('is fixed by the template; send it without header')])
    expect(messagesSent()).toEqual([])
    const sent = await t.api('POST', '/messages/send', key, { to: '081234567890', template_id: tpl!.id })
    expect(sent.status).toBe(200)
    expect(twilio.messages.map((m) => [m.contentSid, m.media])).toEqual([[sid, ['https://cdn.example.com/promo.jpg']]])
    expect(await charged(accountId)).toBe(1)
  })

  test("media_id: under the service's own media URL the hand-off fills the signed link; under another prefix 422", async () => {
    const { accountId, key } = await account()
    const upload = await t.app.handle(
      new Request('http://localhost/api/v1/media', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/pdf' },
        body: PDF,
      }),
    )
    const file = ((await upload.json()) as any).data.id as string
    const own = `${t.config.publicBaseUrl}/media/`
    const sent = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      template_id: ids.get('statement_own'),
      variables: { '1': 'Budi' },
      header: { type: 'document', media_id: file },
    })
    expect({ status: sent.status, body: sent.body }).toMatchObject({ status: 200 })
    const [message] = twilio.messages
    expect(message!.media[0]).toStartWith(`${own}${file}?expires=`)
    expect(message!.contentVariables).toEqual({ '1': 'Budi', '2': message!.media[0]!.slice(own.length) })
    // Twilio fetched the file by that link from the service.
    expect(twilio.fetched.map((f) => [f.url, f.status, f.type])).toEqual([[message!.media[0]!, 200, 'application/pdf']])

    const refused = await t.api('POST', '/messages/send', key, {
      to: '081234567890',
      template_id: ids.get('invoice_doc'),
      variables: { '1': 'Budi' },
      header: { type: 'document', media_id: file },
    })
    expect([refused.status, refused.body.code]).toEqual([422, 'VALIDATION_ERROR'])
    expect(refused.body.error).toStartWith(
      `header.media_id: the media of template ${ids.get('invoice_doc')} (invoice_doc) must be under ${PREFIX}…`,
    )
    expect(refused.body.error).toContain(`Twilio would fetch this file from ${own}${file}?expires=…`)
    expect(twilio.messages).toHaveLength(1)
    expect(await money(t, accountId)).toEqual({ balance: 100 - sent.body.data.cost, ledgerSum: 100 - sent.body.data.cost })
  })
})

describe('a campaign of it: the same rule when it is created, its link filled for every recipient', () => {
  test('a link outside the prefix and a header for fixed media are 422; under the prefix every recipient gets it', async () => {
    const { accountId, key } = await t.account(1_000)
    await assign(t, accountId, twilioA, true)
    for (const [name, phone] of [
      ['Budi', '081200000001'],
      ['Sari', '081200000002'],
    ]) {
      expect((await t.api('POST', '/contacts', key, { name, phone, tags: 'vip' })).status).toBe(201)
    }
    const segment = (await t.admin('POST', `/accounts/${accountId}/segments`, { name: 'vips', tag: 'vip' })).body.data.id
    const create = (template: string, header: Record<string, unknown>) =>
      t.api('POST', '/campaigns', key, {
        name: 'invoices',
        template_id: ids.get(template),
        segment_id: segment,
        parameters: { variables: { '1': { field: 'name' } }, header },
      })
    const elsewhere = await create('invoice_doc', { type: 'document', link: 'https://files.example.org/INV-5.pdf' })
    expect([elsewhere.status, elsewhere.body.code]).toEqual([422, 'VALIDATION_ERROR'])
    expect(elsewhere.body.error).toContain(`parameters.header.link: template ${ids.get('invoice_doc')} (invoice_doc) was approved`)
    const fixed = await create('receipt_fixed', { type: 'document', link: 'https://cdn.example.com/receipt.pdf' })
    expect([fixed.status, fixed.body.error]).toEqual([422, expect.stringContaining('parameters.header: the media of template')])

    const made = await create('invoice_doc', { type: 'document', link: `${PREFIX}MONTHLY-12.pdf` })
    expect(made.status).toBe(201)
    expect((await t.admin('POST', `/campaigns/${made.body.data.campaign.id}/run`)).status).toBe(200)
    await t.runWorker('campaign-runner')
    expect(twilio.messages.map((m) => [m.to, m.contentVariables, m.media]).sort()).toEqual([
      ['whatsapp:+6281200000001', { '1': 'Budi', '2': 'MONTHLY-12.pdf' }, [`${PREFIX}MONTHLY-12.pdf`]],
      ['whatsapp:+6281200000002', { '1': 'Sari', '2': 'MONTHLY-12.pdf' }, [`${PREFIX}MONTHLY-12.pdf`]],
    ])
  })
})

describe('the fake Twilio plays by the Content API rules', () => {
  test("a send without the media URL's variable is 400 21656, and nothing is kept", async () => {
    const auth = `Basic ${Buffer.from(`${A}:${TWILIO_A.credentials.auth_token}`).toString('base64')}`
    const send = (variables: Record<string, string>) =>
      fetch(`${twilio.url}/2010-04-01/Accounts/${A}/Messages.json`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          To: 'whatsapp:+6281234567890',
          From: `whatsapp:${TWILIO_A.number}`,
          ContentSid: sids.get('invoice_doc')!,
          ContentVariables: JSON.stringify(variables),
        }).toString(),
      })
    for (const variables of [{ '1': 'Budi' }, { '1': 'Budi', '2': '' }] as Record<string, string>[]) {
      const refused = await send(variables)
      expect([refused.status, ((await refused.json()) as any).code]).toEqual([400, 21656])
    }
    expect(twilio.messages).toEqual([])
    const taken = await send({ '1': 'Budi', '2': 'INV-9.pdf' })
    expect(taken.status).toBe(201)
    expect(twilio.messages.map((m) => m.media)).toEqual([[`${PREFIX}INV-9.pdf`]])
  })
})
