// A Twilio sender's WhatsApp templates through the admin API against the fake Twilio (issue 30): a
// sync reads every page of its account's ContentAndApprovals and stores each WhatsApp template with
// its status in the service's words (received: pending; unsubmitted: draft), its category and its
// Content SID; a second sync records what Twilio changed (source `sync`). Creating one maps the Cloud
// API definition onto a Content type, creates it under the sender's own account and asks WhatsApp's
// approval; what a Content template cannot be (named parameters, a text header) is 422 before Twilio
// is asked. The deployment's default sender (0) syncs from the environment's Twilio account.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { templateSync } from '../../src/workers/template-sync'
import { startWorker } from '../../src/workers'
import { testApp, type TestApp } from '../helpers/app'
import { fakeGraph } from '../helpers/fake-graph'
import { fakeTwilio } from '../helpers/fake-twilio'
import { createSender, ENV_TWILIO, registerFakes, sendersEnv, TWILIO_A, TWILIO_B } from '../helpers/senders'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)
const A = TWILIO_A.credentials.account_sid

let t: TestApp
let twilioA: number
let twilioB: number
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph) })
  twilioA = await createSender(t, 'twilio', TWILIO_A)
  twilioB = await createSender(t, 'twilio', TWILIO_B)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

const text = (name: string, body: string) => ({
  friendly_name: name,
  language: 'id',
  variables: { '1': 'A-1' },
  types: { 'twilio/text': { body } },
})
const contentRequests = () => twilio.requests.filter((r) => r.path.startsWith('/v1/'))

describe('sync', () => {
  test('every page of the account; statuses in the service words; a second sync records what Twilio changed', async () => {
    twilio.reset()
    twilio.contentPageSize = 2
    const sids: string[] = []
    for (const [i, status] of ['approved', 'received', 'rejected', 'paused', 'approved'].entries()) {
      const sid = twilio.content(A, text(`order ${i}`, `Pesanan {{1}} nomor ${i} sudah dikirim.`), {
        name: `order_update_${i}`,
        category: i === 4 ? 'MARKETING' : 'UTILITY',
      })
      twilio.approve(sid, status, status === 'rejected' ? 'INVALID_FORMAT' : '')
      sids.push(sid)
    }
    twilio.content(A, text('draft order', 'Pesanan {{1}} draf.'))
    twilio.content(TWILIO_B.credentials.account_sid, text('not A', 'Bukan milik A {{1}}.'), { name: 'belongs_to_b' })

    const first = await t.admin('POST', `/senders/${twilioA}/templates/sync`)
    expect(first.status).toBe(200)
    expect(first.body.data).toEqual({
      sender_id: twilioA,
      provider: 'twilio',
      listed: 6,
      created: 6,
      changed: 0,
      unchanged: 0,
      gone: 0,
      skipped: [],
    })
    const pages = contentRequests()
    expect(pages).toHaveLength(3)
    for (const page of pages) {
      expect(page.path).toBe('/v1/ContentAndApprovals')
      expect(page.account).toBe(A)
    }

    const list = await t.admin('GET', `/senders/${twilioA}/templates`)
    const rows = list.body.data.map((x: any) => [x.name, x.status, x.category, x.reason, x.provider_ref])
    expect(rows).toEqual([
      ['draft order', 'draft', 'utility', null, expect.stringMatching(/^HX/)],
      ['order_update_0', 'approved', 'utility', null, sids[0]],
      ['order_update_1', 'pending', 'utility', null, sids[1]],
      ['order_update_2', 'rejected', 'utility', 'INVALID_FORMAT', sids[2]],
      ['order_update_3', 'paused', 'utility', null, sids[3]],
      ['order_update_4', 'approved', 'marketing', null, sids[4]],
    ])
    expect(list.body.data.find((x: any) => x.name === 'order_update_0')).toMatchObject({
      sender_id: twilioA,
      provider: 'twilio',
      language: 'id',
      parameter_format: 'positional',
      quality: 'unknown',
      components: [{ type: 'BODY', text: 'Pesanan {{1}} nomor 0 sudah dikirim.', example: { body_text: [['A-1']] } }],
    })

    // WhatsApp approves the pending one and pauses the first; the other account's sync is its own.
    twilio.approve(sids[1]!, 'approved')
    twilio.approve(sids[0]!, 'paused')
    const second = await t.admin('POST', `/senders/${twilioA}/templates/sync`)
    expect(second.body.data).toMatchObject({ listed: 6, created: 0, changed: 2, unchanged: 4, gone: 0 })
    const paused = (await t.admin('GET', `/senders/${twilioA}/templates`)).body.data.find((x: any) => x.name === 'order_update_0')
    const one = await t.admin('GET', `/whatsapp-templates/${paused.id}`)
    expect(one.body.data.history.map((h: any) => [h.field, h.old, h.new, h.source])).toEqual([
      ['created', null, 'approved', 'sync'],
      ['status', 'approved', 'paused', 'sync'],
    ])
    const b = await t.admin('POST', `/senders/${twilioB}/templates/sync`)
    expect(b.body.data).toMatchObject({ listed: 1, created: 1 })
  }, 60_000)

  test('a listing Twilio refuses changes nothing: 502 with its words, no credential in them', async () => {
    twilio.reset()
    twilio.echoCredentials = true
    twilio.answer = (request) =>
      new URL(request.url).pathname === '/v1/ContentAndApprovals'
        ? Response.json({ code: 20003, message: 'Authenticate', status: 401 }, { status: 401 })
        : undefined
    const answer = await t.admin('POST', `/senders/${twilioA}/templates/sync`)
    expect(answer.status).toBe(502)
    expect(answer.body.error).toContain('Authenticate')
    expect(JSON.stringify(answer.body)).not.toContain(TWILIO_A.credentials.auth_token)
    twilio.reset()
  })

  test("the deployment's default sender (0) syncs from the environment's Twilio account", async () => {
    twilio.reset()
    twilio.content(ENV_TWILIO.sid, text('deployment', 'Halo {{1}} dari deployment.'), { name: 'deployment_hello', status: 'approved' })
    const answer = await t.admin('POST', '/senders/0/templates/sync')
    expect(answer.status).toBe(200)
    expect(answer.body.data).toMatchObject({ sender_id: 0, provider: 'twilio', listed: 1, created: 1 })
    expect(contentRequests().every((r) => r.account === ENV_TWILIO.sid)).toBe(true)
    const list = await t.admin('GET', '/senders/0/templates')
    expect(list.body.data.map((x: any) => [x.name, x.status])).toEqual([['deployment_hello', 'approved']])
  })
})

describe('create and submit', () => {
  const invoice = (name: string) => ({
    name,
    language: 'id',
    category: 'UTILITY',
    components: [
      { type: 'BODY', text: 'Tagihan {{1}} sebesar {{2}} jatuh tempo.', example: { body_text: [['INV-1001', 'Rp 1.250.000']] } },
      {
        type: 'BUTTONS',
        buttons: [{ type: 'URL', text: 'Bayar', url: 'https://pay.example.com/i/{{1}}', example: ['https://pay.example.com/i/INV-1001'] }],
      },
    ],
  })

  test("created as a Content template under the sender's account, approval asked, stored pending with its SID; synced once approved", async () => {
    twilio.reset()
    const created = await t.admin('POST', `/senders/${twilioA}/templates`, invoice('invoice_due'))
    expect(created.status).toBe(201)
    const sid = created.body.data.provider_ref
    expect(created.body.data).toMatchObject({ sender_id: twilioA, provider: 'twilio', name: 'invoice_due', status: 'pending' })
    expect(sid).toMatch(/^HX[0-9a-f]{32}$/)
    expect(contentRequests().map((r) => [r.method, r.path, r.account, r.status])).toEqual([
      ['POST', '/v1/Content', A, 201],
      ['POST', `/v1/Content/${sid}/ApprovalRequests/whatsapp`, A, 201],
    ])
    expect(twilio.contents.get(sid)!.types).toEqual({
      'twilio/call-to-action': {
        body: 'Tagihan {{1}} sebesar {{2}} jatuh tempo.',
        actions: [{ type: 'URL', title: 'Bayar', url: 'https://pay.example.com/i/{{3}}' }],
      },
    })
    expect(JSON.parse(contentRequests()[1]!.body)).toEqual({ name: 'invoice_due', category: 'UTILITY' })

    twilio.approve(sid, 'approved')
    const synced = await t.admin('POST', `/senders/${twilioA}/templates/sync`)
    expect(synced.status).toBe(200)
    const one = await t.admin('GET', `/whatsapp-templates/${created.body.data.id}`)
    expect(one.body.data).toMatchObject({ status: 'approved', provider_ref: sid })
  })

  test('what a Content template cannot be is 422 naming it, and never reaches Twilio', async () => {
    twilio.reset()
    const named = {
      name: 'named_one',
      language: 'id',
      category: 'UTILITY',
      parameter_format: 'NAMED',
      components: [
        {
          type: 'BODY',
          text: 'Halo {{first_name}}, terima kasih.',
          example: { body_text_named_params: [{ param_name: 'first_name', example: 'Budi' }] },
        },
      ],
    }
    const header = {
      ...invoice('text_header'),
      components: [{ type: 'HEADER', format: 'TEXT', text: 'Tagihan' }, invoice('x').components[0]],
    }
    for (const [definition, part] of [
      [named, 'parameter_format'],
      [header, 'components[HEADER]'],
    ] as const) {
      const answer = await t.admin('POST', `/senders/${twilioA}/templates`, definition)
      expect({ status: answer.status, error: answer.body.error }).toEqual({ status: 422, error: expect.stringContaining(part) })
    }
    expect(contentRequests()).toHaveLength(0)
  })

  test("Twilio's refusal of the approval request stores nothing: 502 with its code", async () => {
    twilio.reset()
    // A Content template of that name, made in Twilio's console and not synced yet: Twilio refuses the approval request.
    twilio.content(TWILIO_B.credentials.account_sid, text('twice', 'Tagihan {{1}}.'), { name: 'twice' })
    const refused = await t.admin('POST', `/senders/${twilioB}/templates`, invoice('twice'))
    expect(refused.status).toBe(502)
    expect(refused.body.error).toContain('exists already')
    expect(refused.body).toMatchObject({ code: 'BAD_GATEWAY', provider_code: 20409 })
    expect(JSON.stringify(refused.body)).not.toContain(TWILIO_B.credentials.auth_token)
    expect((await t.admin('GET', `/senders/${twilioB}/templates`)).body.data.filter((x: any) => x.name === 'twice')).toHaveLength(0)
  })
})

describe('the periodic sync (TEMPLATE_SYNC_MINUTES)', () => {
  test("its loop: nothing at the instance's start, the first sync one interval later, then every interval", async () => {
    const clock = new TestClock()
    const app = await testApp({ env: sendersEnv(twilio, graph), clock })
    twilio.reset()
    const listings = () => contentRequests().filter((r) => r.path === '/v1/ContentAndApprovals').length
    const loop = startWorker(app.deps, templateSync)
    try {
      // The loop sleeps first (a sync at the start would be made before its first sleep).
      await clock.nextSleep()
      expect(listings()).toBe(0)
      await clock.advance(5 * 60_000 - 1)
      expect(listings()).toBe(0)
      await clock.advance(1)
      await clock.nextSleep(true)
      expect(listings()).toBe(1)
      await clock.advance(5 * 60_000)
      await clock.nextSleep(true)
      expect(listings()).toBe(2)
    } finally {
      await loop.stop()
      await app.close()
    }
  }, 60_000)

  test('reads every Twilio sender and the Twilio default, each from its own account, by default every 5 minutes', async () => {
    const clock = new TestClock()
    const app = await testApp({ env: sendersEnv(twilio, graph), clock })
    try {
      const a = await createSender(app, 'twilio', TWILIO_A)
      twilio.reset()
      twilio.content(ENV_TWILIO.sid, text('periodic default', 'Halo {{1}}.'), { name: 'periodic_default', status: 'approved' })
      twilio.content(A, text('periodic a', 'Halo {{1}} dari A.'), { name: 'periodic_a', status: 'approved' })
      // A's creation synced it: within 5 minutes only the default (which keeps no last sync) is listed.
      expect(await app.runWorker('template-sync')).toBe(0)
      expect(new Set(contentRequests().map((r) => r.account))).toEqual(new Set([ENV_TWILIO.sid]))
      await clock.advance(5 * 60_000)
      twilio.reset()
      expect(await app.runWorker('template-sync')).toBe(0)
      expect(new Set(contentRequests().map((r) => r.account))).toEqual(new Set([ENV_TWILIO.sid, A]))
      const rows = await app.db.sql<{ sender: number; name: string }[]>`
        select coalesce(sender_id, 0)::int as sender, name from wa_templates where name like 'periodic_%' order by name`
      expect([...rows]).toEqual([
        { sender: a, name: 'periodic_a' },
        { sender: 0, name: 'periodic_default' },
      ])
    } finally {
      await app.close()
    }
  }, 60_000)
})
