// Sends with `template_id` and `variables` instead of `body` (the documented extension), on the
// simulator: charged like any message, the rendered text recorded, every 400/422 rule of send and bulk,
// Idempotency-Key. Then SIM_REQUIRE_TEMPLATE: free-form messages to numbers outside their 24-hour
// window refused (63016, refunded), approved templates sent, the window opened through the admin API
// and kept in the database; and a recovered hand-off sends the template it recorded.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readConfig } from '../../src/config'
import { createApp } from '../../src/app'
import { buildDeps } from '../../src/server'
import type { HandoffResult, OutgoingMessage } from '../../src/providers/provider'
import { ADMIN_TOKEN, money, testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { boundTemplate, campaignMessages, runCampaign } from '../helpers/templates'
import { inFlight } from '../helpers/in-flight'
import { TestClock } from '../../src/lib/clock'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

const messageCount = async (app: TestApp, accountId: number) =>
  (await app.db.sql<{ n: number }[]>`select count(*)::int as n from messages where account_id = ${accountId}`)[0]!.n

/** An account (balance 1000, price 7) with the template "Hi {{name}}, {{ city }} branch". */
async function setup() {
  const a = await t.account(1000, { price: 7 })
  const made = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'branch', body: 'Hi {{name}}, {{ city }} branch' })
  return { ...a, templateId: made.body.data.id as number }
}

describe('send and bulk with template_id', () => {
  test('charged like any message; the rendered text is recorded and listed with its template', async () => {
    const a = await setup()
    const res = await t.api('POST', '/messages/send', a.key, {
      to: '0812-3000-0001',
      template_id: a.templateId,
      variables: { city: 'Bandung', name: 'Budi' },
    })
    expect(res.status).toBe(200)
    expect(res.body.data).toEqual({
      message_id: expect.stringMatching(/^SM[0-9a-f]{32}$/),
      to: '+6281230000001',
      status: 'sent',
      cost: 7,
      balance_after: 993,
    })
    const got = await t.api('GET', `/messages/${res.body.data.message_id}`, a.key)
    expect(got.body.data).toMatchObject({
      body: 'Hi Budi, Bandung branch',
      template_id: a.templateId,
      provider_template: null, // no binding for the simulator: free-form text
      cost: 7,
      refunded: false,
    })
    const ledger = await t.db.sql<{ kind: string; amount: number; message_id: number | null }[]>`
      select kind, amount, message_id from ledger where account_id = ${a.accountId} order by id`
    expect(ledger.map((r) => [r.kind, r.amount])).toEqual([
      ['topup', 1000],
      ['charge', -7],
    ])
    expect(ledger[1]!.message_id).toBe(got.body.data.id)

    // Bound for the simulator (the provider in use): it records the template it was asked to send.
    await t.admin('PUT', `/templates/${a.templateId}/bindings/simulator`, { ref: 'branch_promo', variables: ['city', 'name'] })
    const bound = await t.api('POST', '/messages/send', a.key, {
      to: '081230000002',
      template_id: a.templateId,
      variables: { name: 'Sari', city: 'Solo' },
    })
    const listed = await t.api('GET', '/messages?limit=1', a.key)
    expect(listed.body.data.items[0]).toMatchObject({
      message_sid: bound.body.data.message_id,
      body: 'Hi Sari, Solo branch',
      template_id: a.templateId,
      provider_template: { provider: 'simulator', ref: 'branch_promo', language: null, variables: ['Solo', 'Sari'] },
    })
    // A free-form send records neither.
    const plain = await t.api('POST', '/messages/send', a.key, { to: '081230000003', body: 'plain' })
    expect((await t.api('GET', `/messages/${plain.body.data.message_id}`, a.key)).body.data).toMatchObject({
      template_id: null,
      provider_template: null,
    })
    // A template without placeholders needs no variables.
    const fixed = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'fixed', body: 'Your code is ready' })
    const noVariables = await t.api('POST', '/messages/send', a.key, { to: '081230000004', template_id: fixed.body.data.id })
    expect([noVariables.status, noVariables.body.data.balance_after]).toEqual([200, 972])
    expect(await money(t, a.accountId)).toEqual({ balance: 972, ledgerSum: 972 })
  })

  test('400: a shape error names the field, whether alone or in a bulk entry, and nothing is charged', async () => {
    const a = await setup()
    const to = '081230000010'
    const id = a.templateId
    const cases: [Record<string, unknown>, string][] = [
      [{ to, body: 'x', template_id: id }, 'body: give either body or template_id, not both'],
      [{ to }, 'body: is required (or template_id)'],
      [{ to, media_url: 'https://cdn.example.com/a.png' }, 'body: is required (or template_id)'],
      [{ to, body: 'x', variables: {} }, 'variables: only with template_id'],
      [
        { to, template_id: id, variables: { name: 'a', city: 'b' }, media_url: 'https://cdn.example.com/a.png' },
        'media_url: not with template_id',
      ],
      [{ to, template_id: String(id) }, 'template_id: must be an integer'],
      [{ to, template_id: 1.5 }, 'template_id: must be an integer'],
      [{ to, template_id: id, variables: 'name=Budi' }, 'variables: must be an object'],
      [{ to, template_id: id, variables: ['Budi'] }, 'variables: must be an object'],
      [{ to, template_id: id, variables: null }, 'variables: must be an object'],
      [{ to, template_id: id, variables: { name: 5, city: 'b' } }, 'variables.name: must be a string'],
      [{ to, template_id: id, variables: { name: 'a', city: null } }, 'variables.city: must be a string'],
      [{ to, template_id: id, Variables: {} }, 'Variables: unknown field'],
    ]
    for (const [body, error] of cases) {
      const res = await t.api('POST', '/messages/send', a.key, body)
      expect({ body, status: res.status, answer: res.body }).toEqual({
        body,
        status: 400,
        answer: errorEnvelope(res.headers, 'VALIDATION_ERROR', error),
      })
      // The same entry second in a bulk: the whole request is refused, naming the entry.
      const bulk = await t.api('POST', '/messages/bulk', a.key, { messages: [{ to, body: 'fine' }, body] })
      expect({ body, status: bulk.status, error: bulk.body.error }).toEqual({ body, status: 400, error: `messages[1].${error}` })
    }
    expect(await messageCount(t, a.accountId)).toBe(0)
    expect(await money(t, a.accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
    // Authentication comes first.
    expect((await t.request('POST', '/api/v1/messages/send', { body: { to, body: 'x', template_id: id } })).status).toBe(401)
  })

  test('422: a value error names the field; in a bulk it fails that entry alone, uncharged', async () => {
    const a = await setup()
    const other = await setup()
    const id = a.templateId
    const uses = `template ${id} uses: name, city`
    const empty = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'only name', body: '{{name}}' })
    const cases: [Record<string, unknown>, string][] = [
      [{ template_id: other.templateId, variables: { name: 'a', city: 'b' } }, `template_id: template ${other.templateId} does not exist`],
      [{ template_id: 987654321, variables: {} }, 'template_id: template 987654321 does not exist'],
      [{ template_id: id, variables: { name: 'a' } }, `variables.city: missing (${uses})`],
      [{ template_id: id }, `variables.name: missing (${uses})`],
      [
        { template_id: id, variables: { name: 'a', city: 'b', email: 'c' } },
        `variables.email: not a placeholder of the template (${uses})`,
      ],
      [
        { template_id: id, variables: { name: 'a', city: 'b', 'first name': 'c' } },
        `variables."first name": not a placeholder of the template (${uses})`,
      ],
      [
        { template_id: id, variables: { name: 'x'.repeat(4090), city: 'b' } },
        `variables: the rendered text of template ${id} is 4103 characters; at most 4096`,
      ],
      [
        { template_id: empty.body.data.id, variables: { name: '  ' } },
        `variables: the rendered text of template ${empty.body.data.id} is empty`,
      ],
    ]
    for (const [fields, error] of cases) {
      const res = await t.api('POST', '/messages/send', a.key, { to: '081230000020', ...fields })
      expect({ fields, status: res.status, answer: res.body }).toEqual({
        fields,
        status: 422,
        answer: errorEnvelope(res.headers, 'VALIDATION_ERROR', error),
      })
    }
    const zero = await t.api('POST', '/messages/send', a.key, { to: '081230000020', template_id: 0 })
    expect([zero.status, zero.body.error]).toEqual([422, 'template_id: must be from 1 to 9007199254740991'])
    const phone = await t.api('POST', '/messages/send', a.key, { to: '12', template_id: id, variables: { name: 'a', city: 'b' } })
    expect([phone.status, phone.body.error]).toEqual([
      422,
      'to: not a valid Indonesian phone number: write it like 081234567890, 6281234567890 or +6281234567890',
    ])
    expect(await messageCount(t, a.accountId)).toBe(0)

    // In a bulk, each bad entry fails alone; the good ones (two templates and a body) are charged.
    const bulk = await t.api('POST', '/messages/bulk', a.key, {
      messages: [
        { to: '081230000021', template_id: id, variables: { name: 'Ani', city: 'Medan' } },
        ...cases.map(([fields]) => ({ to: '081230000022', ...fields })),
        { to: '081230000023', body: 'plain' },
        { to: '081230000024', template_id: empty.body.data.id, variables: { name: 'Eko' } },
      ],
    })
    expect(bulk.status).toBe(200)
    const n = cases.length
    expect(bulk.body.data).toMatchObject({ total: n + 3, sent: 3, failed: n, total_cost: 21, balance_after: 979 })
    cases.forEach(([, error], i) => {
      expect(bulk.body.data.results[i + 1]).toEqual({
        to: '081230000022',
        status: 'failed',
        code: 'VALIDATION_ERROR',
        error: `messages[${i + 1}].${error}`,
      })
    })
    const rows = await t.db.sql<{ phone: string; body: string; template_id: number | null }[]>`
      select phone, body, template_id from messages where account_id = ${a.accountId} order by phone`
    expect([...rows]).toEqual([
      { phone: '+6281230000021', body: 'Hi Ani, Medan branch', template_id: id },
      { phone: '+6281230000023', body: 'plain', template_id: null },
      { phone: '+6281230000024', body: 'Eko', template_id: empty.body.data.id },
    ])
    expect(await money(t, a.accountId)).toEqual({ balance: 979, ledgerSum: 979 })
  })

  test('Idempotency-Key: a repeated template send replays its answer and charges once; other variables are 422', async () => {
    const a = await setup()
    const send = (variables: Record<string, string>, path = '/messages/send') =>
      t.api(
        'POST',
        path,
        a.key,
        path === '/messages/send'
          ? { to: '081230000030', template_id: a.templateId, variables }
          : { messages: [{ to: '081230000030', template_id: a.templateId, variables }] },
        { 'Idempotency-Key': `tpl-${a.accountId}` },
      )
    const first = await send({ name: 'Budi', city: 'Bogor' })
    expect(first.status).toBe(200)
    const again = await send({ name: 'Budi', city: 'Bogor' })
    expect([again.status, again.body.data]).toEqual([200, first.body.data])
    const changed = await send({ name: 'Budi', city: 'Depok' })
    expect([changed.status, changed.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED'])
    expect((await send({ name: 'Budi', city: 'Bogor' }, '/messages/bulk')).body.code).toBe('IDEMPOTENCY_KEY_REUSED')
    expect(await messageCount(t, a.accountId)).toBe(1)
    expect(await money(t, a.accountId)).toEqual({ balance: 993, ledgerSum: 993 })
  })
})

describe('SIM_REQUIRE_TEMPLATE: free-form messages only inside the 24-hour window', () => {
  // On a test clock, which the window test moves past the 24 hours.
  const clock = new TestClock()
  let s: TestApp
  beforeAll(async () => {
    s = await testApp({ clock, runOnClock: true, env: { SIM_REQUIRE_TEMPLATE: 'true' } })
  })
  afterAll(() => s.close())

  async function strictSetup() {
    const a = await boundTemplate(s, 'Hi {{name}}, your order is ready', { simulator: { ref: 'order_ready', variables: ['name'] } })
    const unbound = await s.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'unbound', body: 'Hi {{name}}' })
    return { ...a, unboundId: unbound.body.data.id as number }
  }

  test('a free-form message to a number that has not written in: 502, refunded, 63016; an approved template goes', async () => {
    const a = await strictSetup()
    const free = await s.api('POST', '/messages/send', a.key, { to: '081240000001', body: 'Hello!' })
    expect(free.status).toBe(502)
    expect(free.body).toEqual(
      errorEnvelope(free.headers, 'BAD_GATEWAY', expect.stringContaining('outside the allowed window'), { id: expect.any(Number) }),
    )
    const [refused] = await s.db.sql`
      select status, message_sid, error_code, refunded_at is not null as refunded from messages where id = ${free.body.id}`
    expect(refused).toEqual({ status: 'failed', message_sid: null, error_code: 63016, refunded: true })

    const approved = await s.api('POST', '/messages/send', a.key, {
      to: '081240000001',
      template_id: a.templateId,
      variables: { name: 'Budi' },
    })
    expect(approved.status).toBe(200)
    const got = await s.api('GET', `/messages/${approved.body.data.message_id}`, a.key)
    expect(got.body.data.provider_template).toEqual({ provider: 'simulator', ref: 'order_ready', language: null, variables: ['Budi'] })
    // A template without a simulator binding is free-form text: refused too.
    const unbound = await s.api('POST', '/messages/send', a.key, {
      to: '081240000001',
      template_id: a.unboundId,
      variables: { name: 'Budi' },
    })
    expect([unbound.status, unbound.body.code]).toEqual([502, 'BAD_GATEWAY'])

    const bulk = await s.api('POST', '/messages/bulk', a.key, {
      messages: [
        { to: '081240000002', body: 'free' },
        { to: '081240000002', template_id: a.templateId, variables: { name: 'Sari' } },
      ],
    })
    expect(bulk.body.data.results.map((r: { status: string; code?: string }) => [r.status, r.code])).toEqual([
      ['failed', 'BAD_GATEWAY'],
      ['sent', undefined],
    ])
    expect(bulk.body.data.results[0].error).toContain('outside the allowed window')
    expect(await money(s, a.accountId)).toEqual({ balance: 9_980, ledgerSum: 9_980 })
  })

  test('a number that writes in (admin API) gets free-form messages for 24 hours; the window is in the database', async () => {
    const a = await strictSetup()
    const opened = await s.admin('POST', '/simulator/inbound', { phone: '0812-4000-0010' })
    expect(opened.status).toBe(200)
    expect(opened.body.data).toEqual({
      phone: '+6281240000010',
      sender: null,
      account_id: null,
      window_until: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
      inbound_id: expect.any(Number),
    })
    // A real inbound message to the default number (sender null), which the window is read from.
    const [row] = await s.db.sql<{ hours: number }[]>`
      select round(extract(epoch from (received_at + interval '24 hours' - ${clock.now()}::timestamptz)) / 3600)::int as hours
      from inbound_messages where phone = '+6281240000010' and sender_id is null`
    expect(row!.hours).toBe(24)
    expect((await s.api('POST', '/messages/send', a.key, { to: '081240000010', body: 'Thanks for writing!' })).status).toBe(200)
    // Another number still has no window.
    expect((await s.api('POST', '/messages/send', a.key, { to: '081240000011', body: 'Hello?' })).status).toBe(502)

    // Another instance on the same database agrees (the window is not in memory).
    const other = buildDeps(readConfig({ ADMIN_TOKEN, SIM_REQUIRE_TEMPLATE: 'true' }), s.db).deps
    const otherApp = createApp(other)
    const viaOther = await otherApp.handle(
      new Request('http://localhost/api/v1/messages/send', {
        method: 'POST',
        headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: '081240000010', body: 'From the other instance' }),
      }),
    )
    expect(viaOther.status).toBe(200)

    // After 24 hours the window is closed again, until the number writes in anew.
    await clock.advance(24 * 3_600_000 + 1_000)
    expect((await s.api('POST', '/messages/send', a.key, { to: '081240000010', body: 'Still there?' })).status).toBe(502)
    expect((await s.admin('POST', '/simulator/inbound', { phone: '+6281240000010' })).status).toBe(200)
    expect((await s.api('POST', '/messages/send', a.key, { to: '081240000010', body: 'Welcome back' })).status).toBe(200)

    // Its own rules: the phone's shape and value, and the admin token.
    const bad = await s.admin('POST', '/simulator/inbound', { phone: '12' })
    expect([bad.status, bad.body.error]).toEqual([
      422,
      'phone: not a valid Indonesian phone number: write it like 081234567890, 6281234567890 or +6281234567890',
    ])
    expect((await s.admin('POST', '/simulator/inbound', {})).body.error).toBe('phone: is required')
    expect((await s.request('POST', '/admin/v1/simulator/inbound', { body: { phone: '081240000012' } })).status).toBe(401)
  })

  test('a campaign: a bound template reaches every contact; a free-form one is refused and refunded', async () => {
    const contacts = [
      { name: 'Ani', phone: '081240000020' },
      { name: 'Eko', phone: '081240000021' },
    ]
    const bound = await boundTemplate(s, 'Promo for {{name}}', { simulator: { ref: 'promo', variables: ['name'] } }, contacts)
    const sent = await campaignMessages(s, await runCampaign(s, bound))
    expect(sent.map((m) => [m.status, m.body, m.provider_template])).toEqual([
      ['sent', 'Promo for Ani', { provider: 'simulator', ref: 'promo', language: null, variables: ['Ani'] }],
      ['sent', 'Promo for Eko', { provider: 'simulator', ref: 'promo', language: null, variables: ['Eko'] }],
    ])
    const free = await boundTemplate(s, 'Promo for {{name}}', {}, contacts)
    const refused = await campaignMessages(s, await runCampaign(s, free))
    expect(refused.map((m) => [m.status, m.refunded_at !== null])).toEqual([
      ['failed', true],
      ['failed', true],
    ])
    expect(await money(s, free.accountId)).toEqual({ balance: 10_000, ledgerSum: 10_000 })
  })
})

test('a hand-off taken over by recovery sends the template the message recorded', async () => {
  // A provider named like Twilio whose first hand-off hangs until released, one hand-off at a time.
  const seen: OutgoingMessage[] = []
  let release!: () => void
  const hanging = new Promise<void>((resolve) => (release = resolve))
  const first = Promise.withResolvers<void>()
  const provider = {
    name: 'twilio',
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      seen.push(message)
      if (seen.length === 1) {
        first.resolve()
        await hanging
      }
      return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
    },
  }
  // On a test clock that passes the lease in one move: the hung hand-off's time-out and the bulk's wait
  // are set past it, and time stands still while a statement runs.
  const clock = new TestClock()
  const flight = inFlight()
  const r = await testApp({
    provider,
    clock,
    wrapSql: flight.sql,
    env: { HANDOFF_CONCURRENCY: '1', PROVIDER_TIMEOUT_MS: '60000', BULK_WAIT_MS: '60000' },
  })
  try {
    const a = await boundTemplate(r, 'Hi {{name}}', { twilio: { ref: `HX${'b'.repeat(32)}`, variables: ['name'] } })
    const answer = r.api('POST', '/messages/bulk', a.key, {
      messages: [
        { to: '081250000001', template_id: a.templateId, variables: { name: 'One' } },
        { to: '081250000002', template_id: a.templateId, variables: { name: 'Two' } },
      ],
    })
    await first.promise // the first hand-off
    // The bulk's lease runs out while its first hand-off hangs (its holder cut off from renewing it):
    // recovery takes both messages over.
    r.deps.handoff.stop()
    await clock.advance(2 * r.config.handoffLeaseSeconds * 1000 + 1_000)
    const recovering = r.runWorker('handoff-recovery')
    await flight.idle() // recovery's claim made; its hand-offs wait for the pool
    const [claimed] = await r.db.sql`select handoff_recoveries from messages where phone = '+6281250000002'`
    expect(claimed!.handoff_recoveries).toBe(1)
    release()
    const [done] = await clock.run(Promise.all([answer, recovering]), undefined, flight.idle)
    expect(done.body.data).toMatchObject({ sent: 2, failed: 0 })
    // Each reached the provider once, as the template, whoever handed it over.
    expect(seen.map((m) => [m.to, m.template])).toEqual([
      ['+6281250000001', { ref: `HX${'b'.repeat(32)}`, language: null, variables: ['One'] }],
      ['+6281250000002', { ref: `HX${'b'.repeat(32)}`, language: null, variables: ['Two'] }],
    ])
  } finally {
    release()
    await r.close()
  }
})
