// Opt-outs end to end: STOP through Meta's signed webhook and Twilio's signed inbound webhook (its
// own OptOutType too) opts the customer out of the account the message reached, once however often it
// is delivered; START opts back in. A send to an opted-out phone is 422 RECIPIENT_OPTED_OUT with
// nothing charged and nothing handed to the provider; a bulk entry fails alone; another account is
// not affected. Management through the API and the admin API (CSV import and export), audited.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import twilioSdk from 'twilio'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { assign, fourSenders, META_A, registerFakes, sendersEnv, TWILIO_B } from '../helpers/senders'
import { metaMessagesBody, metaWebhookHeaders } from '../helpers/meta-webhook'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

const INBOUND_URL = 'https://api.example.com/provider/twilio/inbound'

let t: TestApp
/** accA: twilioA (its default) and metaA; accB: twilioB (its default). */
let accA: { accountId: number; key: string; keyId: number }
let accB: { accountId: number; key: string; keyId: number }
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph) })
  const ids = await fourSenders(t, { recipient_gap_ms: 0 })
  accA = await t.account(1000, { price: 10 })
  accB = await t.account(1000, { price: 10 })
  await assign(t, accA.accountId, ids.twilioA, true)
  await assign(t, accA.accountId, ids.metaA)
  await assign(t, accB.accountId, ids.twilioB, true)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

let numbers = 0
function customer() {
  const national = `8139${String(++numbers).padStart(7, '0')}`
  return { wa: `62${national}`, phone: `+62${national}`, local: `0${national}` }
}

let wamids = 0
function metaText(from: string, text: string, id = `wamid.OPTOUT${++wamids}`) {
  const body = metaMessagesBody(META_A.credentials.phone_number_id, from, [{ id, type: 'text', text: { body: text } }])
  return t.request('POST', '/provider/meta/webhook', {
    rawBody: body,
    headers: metaWebhookHeaders(body, META_A.credentials.app_secret),
  })
}

function metaPreference(from: string, value: 'stop' | 'resume', timestamp: number) {
  const body = JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '200000000000001',
        changes: [
          {
            field: 'user_preferences',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '6281100000001', phone_number_id: META_A.credentials.phone_number_id },
              contacts: [{ profile: { name: 'Budi' }, wa_id: from }],
              user_preferences: [
                {
                  wa_id: from,
                  detail: `User requested to ${value} marketing messages`,
                  category: 'marketing_messages',
                  value,
                  timestamp,
                },
              ],
            },
          },
        ],
      },
    ],
  })
  return t.request('POST', '/provider/meta/webhook', {
    rawBody: body,
    headers: metaWebhookHeaders(body, META_A.credentials.app_secret),
  })
}

let sids = 0
function twilioText(from: string, body: string, extra: Record<string, string> = {}) {
  const fields = {
    MessageSid: `SM${String(++sids).padStart(32, '0')}`,
    AccountSid: TWILIO_B.credentials.account_sid,
    From: `whatsapp:${from}`,
    To: `whatsapp:${TWILIO_B.number}`,
    Body: body,
    NumMedia: '0',
    ...extra,
  }
  const post = () =>
    t.request('POST', '/provider/twilio/inbound', {
      rawBody: new URLSearchParams(fields).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(TWILIO_B.credentials.auth_token, INBOUND_URL, fields),
      },
    })
  return post()
}

type Event = { opted_out: boolean; source: string; detail: string | null; actor: string; inbound_message_id: number | null }
const events = async (accountId: number, phone: string): Promise<Event[]> => [
  ...(await t.db.sql<Event[]>`
    select opted_out, source, detail, actor, inbound_message_id::int as inbound_message_id
    from opt_out_events where account_id = ${accountId} and phone = ${phone} order by id`),
]

const optOutsOf = async (key: string, phone?: string) =>
  (await t.api('GET', `/opt-outs${phone ? `?phone=${encodeURIComponent(phone)}` : ''}`, key)).body.data

describe('inbound STOP and START', () => {
  test("STOP through Meta's webhook opts out once (a repeat delivery changes nothing); a send is then 422, nothing charged or sent", async () => {
    const c = customer()
    const id = 'wamid.STOP-ONCE'
    expect((await metaText(c.wa, '  Stop! ', id)).status).toBe(200)
    expect((await metaText(c.wa, '  Stop! ', id)).status).toBe(200)
    expect(await events(accA.accountId, c.phone)).toEqual([
      expect.objectContaining({ opted_out: true, source: 'inbound', detail: 'STOP', actor: 'customer' }),
    ])
    const listed = await optOutsOf(accA.key, c.local)
    expect(listed.total).toBe(1)
    expect(listed.items[0]).toMatchObject({ phone: c.phone, source: 'inbound', detail: 'STOP', by: 'customer' })
    const [inbound] = await t.db.sql<{ id: number }[]>`select id::int as id from inbound_messages where provider_message_id = ${id}`
    expect(listed.items[0].inbound_message_id).toBe(inbound!.id)

    const before = await money(t, accA.accountId)
    const handed = twilio.requests.length
    const send = await t.api('POST', '/messages/send', accA.key, { to: c.local, body: 'Promo!' })
    expect(send.status).toBe(422)
    expect(send.body).toMatchObject({ success: false, code: 'RECIPIENT_OPTED_OUT' })
    expect(send.body.error).toContain(c.phone)
    expect(await money(t, accA.accountId)).toEqual(before)
    expect(before.balance).toBe(before.ledgerSum)
    expect(twilio.requests.length).toBe(handed)
    const [charged] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where phone = ${c.phone}`
    expect(charged!.n).toBe(0)
  })

  test('a START word (MULAI, any case, trailing punctuation) opts back in, recorded; sends go again', async () => {
    const c = customer()
    await metaText(c.wa, 'BERHENTI')
    expect((await t.api('POST', '/messages/send', accA.key, { to: c.local, body: 'x' })).status).toBe(422)
    await metaText(c.wa, 'mulai.')
    expect((await optOutsOf(accA.key, c.phone)).total).toBe(0)
    expect((await events(accA.accountId, c.phone)).map((e) => [e.opted_out, e.source, e.detail])).toEqual([
      [true, 'inbound', 'BERHENTI'],
      [false, 'inbound', 'MULAI'],
    ])
    const send = await t.api('POST', '/messages/send', accA.key, { to: c.local, body: 'Welcome back' })
    expect(send.status).toBe(200)
  })

  test('a text that only contains a STOP word changes nothing', async () => {
    const c = customer()
    await metaText(c.wa, 'please stop sending')
    await metaText(c.wa, 'STOP IT')
    expect(await events(accA.accountId, c.phone)).toEqual([])
  })

  test('Twilio: STOP opts out the account its number belongs to, not another; OptOutType=STOP/START is honoured (source provider)', async () => {
    const c = customer()
    const stop = await twilioText(c.phone, 'unsubscribe')
    expect(stop.status).toBe(200)
    expect(await events(accB.accountId, c.phone)).toEqual([expect.objectContaining({ source: 'inbound', detail: 'UNSUBSCRIBE' })])
    expect((await t.api('POST', '/messages/send', accB.key, { to: c.local, body: 'x' })).body.code).toBe('RECIPIENT_OPTED_OUT')
    // Account A never heard from this customer: its sends go.
    expect(await events(accA.accountId, c.phone)).toEqual([])
    expect((await t.api('POST', '/messages/send', accA.key, { to: c.local, body: 'x' })).status).toBe(200)

    // Twilio's Advanced Opt-Out: its own keyword (not one of ours) with OptOutType.
    await twilioText(c.phone, 'Resume', { OptOutType: 'START' })
    expect((await optOutsOf(accB.key, c.phone)).total).toBe(0)
    const other = customer()
    await twilioText(other.phone, 'Cancel', { OptOutType: 'STOP' })
    await twilioText(other.phone, 'help', { OptOutType: 'HELP' })
    expect((await optOutsOf(accB.key, other.phone)).items).toEqual([
      expect.objectContaining({ source: 'provider', detail: 'OptOutType=STOP', by: 'provider' }),
    ])
    expect((await events(accB.accountId, c.phone)).map((e) => [e.opted_out, e.source])).toEqual([
      [true, 'inbound'],
      [false, 'provider'],
    ])
  })
})

describe("Meta's user_preferences (marketing stop/resume)", () => {
  test('stop opts out (source provider), once however often delivered; resume opts back in; a late repeat of stop changes nothing', async () => {
    const c = customer()
    const now = Math.floor(Date.now() / 1000)
    expect((await metaPreference(c.wa, 'stop', now - 10)).status).toBe(200)
    expect((await metaPreference(c.wa, 'stop', now - 10)).status).toBe(200)
    expect((await optOutsOf(accA.key, c.phone)).items).toEqual([
      expect.objectContaining({ source: 'provider', detail: 'user_preferences=stop', by: 'provider' }),
    ])
    expect((await t.api('POST', '/messages/send', accA.key, { to: c.local, body: 'Promo' })).body.code).toBe('RECIPIENT_OPTED_OUT')
    await metaPreference(c.wa, 'resume', now - 5)
    expect((await optOutsOf(accA.key, c.phone)).total).toBe(0)
    // Meta delivers the old stop again, after the resume: it is older than the latest change.
    await metaPreference(c.wa, 'stop', now - 10)
    expect((await optOutsOf(accA.key, c.phone)).total).toBe(0)
    expect((await events(accA.accountId, c.phone)).map((e) => [e.opted_out, e.detail])).toEqual([
      [true, 'user_preferences=stop'],
      [false, 'user_preferences=resume'],
    ])
  })

  test('resume does not lift an opt-out the customer wrote (STOP)', async () => {
    const c = customer()
    await metaText(c.wa, 'STOP')
    await metaPreference(c.wa, 'resume', Math.floor(Date.now() / 1000) + 5)
    expect((await optOutsOf(accA.key, c.phone)).items).toEqual([expect.objectContaining({ source: 'inbound', detail: 'STOP' })])
  })
})

describe('refusals before charging', () => {
  test('bulk: the opted-out entry fails uncharged with RECIPIENT_OPTED_OUT, the rest go', async () => {
    const [a, out, b] = [customer(), customer(), customer()]
    expect((await t.api('POST', '/opt-outs', accA.key, { phone: out.local })).status).toBe(201)
    const before = await money(t, accA.accountId)
    const handed = twilio.requests.length
    const bulk = await t.api('POST', '/messages/bulk', accA.key, {
      messages: [
        { to: a.local, body: 'one' },
        { to: out.local, body: 'two' },
        { to: b.local, body: 'three' },
      ],
    })
    expect(bulk.status).toBe(200)
    expect(bulk.body.data).toMatchObject({ total: 3, sent: 2, failed: 1, total_cost: 20 })
    expect(bulk.body.data.results[1]).toMatchObject({ to: out.local, status: 'failed', code: 'RECIPIENT_OPTED_OUT' })
    expect(bulk.body.data.results[0].status).toBe('sent')
    expect(bulk.body.data.results[2].status).toBe('sent')
    const after = await money(t, accA.accountId)
    expect(after.balance).toBe(before.balance - 20)
    expect(after.balance).toBe(after.ledgerSum)
    expect(twilio.requests.length - handed).toBe(2)
    expect(twilio.requests.slice(handed).some((r) => r.to === `whatsapp:${out.phone}`)).toBe(false)
  })

  test('single sends at the same moment share one check, each answered for its own account and phone: the opted-out ones refused uncharged', async () => {
    const [out, free] = [customer(), customer()]
    expect((await t.api('POST', '/opt-outs', accA.key, { phone: out.local })).status).toBe(201)
    const [beforeA, beforeB] = [await money(t, accA.accountId), await money(t, accB.accountId)]
    const sends = [
      [accA, out],
      [accB, out],
      [accA, free],
      [accB, free],
      [accA, out],
    ] as const
    const answers = await Promise.all(
      sends.map(([acc, c]) => t.api('POST', '/messages/send', acc.key, { to: c.local, body: 'same moment' })),
    )
    expect(answers.map((a) => a.body.code ?? a.status)).toEqual(['RECIPIENT_OPTED_OUT', 200, 200, 200, 'RECIPIENT_OPTED_OUT'])
    const [afterA, afterB] = [await money(t, accA.accountId), await money(t, accB.accountId)]
    expect([afterA.balance, afterB.balance]).toEqual([beforeA.balance - 10, beforeB.balance - 20])
    expect([afterA.balance, afterB.balance]).toEqual([afterA.ledgerSum, afterB.ledgerSum])
  })
})

describe('management', () => {
  test('API: add (201, then 200 created false), list with phone filter and paging, remove (then 404), audited as the key', async () => {
    const [p, q] = [customer(), customer()]
    const add = await t.api('POST', '/opt-outs', accB.key, { phone: p.local })
    expect(add.status).toBe(201)
    expect(add.body.data).toMatchObject({ phone: p.phone, source: 'api', by: `API key ${accB.keyId}`, created: true })
    const again = await t.api('POST', '/opt-outs', accB.key, { phone: p.phone })
    expect([again.status, again.body.data.created]).toEqual([200, false])
    await t.api('POST', '/opt-outs', accB.key, { phone: q.phone })
    const first = await t.api('GET', '/opt-outs?limit=1', accB.key)
    expect(first.body.data).toMatchObject({ limit: 1, offset: 0, has_more: true })
    expect(first.body.data.items[0].phone).toBe(q.phone)
    expect((await optOutsOf(accB.key, p.phone)).items.map((i: { phone: string }) => i.phone)).toEqual([p.phone])
    // Another account sees none of them.
    expect((await optOutsOf(accA.key, p.phone)).total).toBe(0)
    expect((await t.api('GET', '/opt-outs?phone=12', accB.key)).status).toBe(422)
    expect((await t.api('POST', '/opt-outs', accB.key, { phone: 'nope' })).body.code).toBe('VALIDATION_ERROR')
    expect((await t.api('POST', '/opt-outs', accB.key, {})).status).toBe(400)

    const removed = await t.api('DELETE', `/opt-outs/${encodeURIComponent(p.phone)}`, accB.key)
    expect(removed.status).toBe(200)
    expect(removed.body.data).toEqual({ phone: p.phone, opted_out: false })
    const gone = await t.api('DELETE', `/opt-outs/${p.local}`, accB.key)
    expect([gone.status, gone.body.code]).toEqual([404, 'NOT_FOUND'])
    // Another account's opt-out cannot be removed through this key.
    expect((await t.api('DELETE', `/opt-outs/${q.local}`, accA.key)).status).toBe(404)

    const audited = await t.db.sql<{ actor: string; action: string; detail: { phone: string } }[]>`
      select actor, action, detail from audit_log where account_id = ${accB.accountId} and action like 'opt-out%' order by id`
    expect(audited.filter((a) => a.detail.phone === p.phone).map((a) => [a.actor, a.action])).toEqual([
      [`API key ${accB.keyId}`, 'opt-out added'],
      [`API key ${accB.keyId}`, 'opt-out removed'],
    ])
  })

  test('admin API: add, list, remove, CSV import report and export that imports again; unknown account 404; audited', async () => {
    const acc = await t.account(0)
    const [p, q, r] = [customer(), customer(), customer()]
    expect((await t.admin('POST', `/accounts/${acc.accountId}/opt-outs`, { phone: p.local })).status).toBe(201)
    const csv = [
      'phone,name',
      `${q.local},Budi`,
      `${p.phone},again`,
      'not a phone,x',
      `${q.phone},twice`,
      ',empty',
      `"${r.local}",Sari`,
    ].join('\n')
    const imported = await t.admin('POST', `/accounts/${acc.accountId}/opt-outs-csv`, { csv })
    expect(imported.status).toBe(200)
    expect(imported.body.data.accepted).toBe(2)
    expect(imported.body.data.duplicates).toBe(2)
    expect(imported.body.data.invalid).toEqual([
      { line: 4, error: expect.stringContaining('not a valid phone number') },
      { line: 6, error: 'phone: is empty' },
    ])
    const list = await t.admin('GET', `/accounts/${acc.accountId}/opt-outs`)
    expect(list.body.data.total).toBe(3)
    expect(list.body.data.items.find((i: { phone: string }) => i.phone === q.phone)).toMatchObject({
      source: 'import',
      by: 'admin token',
    })

    const exported = await t.admin('GET', `/accounts/${acc.accountId}/opt-outs-csv`)
    expect(exported.status).toBe(200)
    expect(exported.body.data.count).toBe(3)
    const lines = exported.body.data.csv.trim().split('\r\n')
    expect(lines[0]).toBe('phone,opted_out_at,source,detail,by')
    expect(
      lines
        .slice(1)
        .map((l: string) => l.split(',')[0])
        .sort(),
    ).toEqual([p.phone, q.phone, r.phone].sort())

    // The export imports again as it is: into another account, the same phones.
    const other = await t.account(0)
    const again = await t.admin('POST', `/accounts/${other.accountId}/opt-outs-csv`, { csv: exported.body.data.csv })
    expect(again.body.data).toEqual({ accepted: 3, duplicates: 0, invalid: [] })

    expect((await t.admin('DELETE', `/accounts/${acc.accountId}/opt-outs/${encodeURIComponent(p.phone)}`)).status).toBe(200)
    expect((await t.admin('GET', `/accounts/${acc.accountId}/opt-outs`)).body.data.total).toBe(2)
    expect((await t.admin('GET', '/accounts/999999/opt-outs')).status).toBe(404)
    expect((await t.admin('POST', `/accounts/${acc.accountId}/opt-outs-csv`, { csv: 'name\nBudi' })).status).toBe(422)

    const audited = await t.db.sql<{ actor: string; action: string }[]>`
      select actor, action from audit_log where account_id = ${acc.accountId} order by id`
    expect(audited.map((a) => a.action)).toEqual([
      'account created',
      'key created',
      'opt-out added',
      'opt-outs imported',
      'opt-out removed',
    ])
    expect(new Set(audited.map((a) => a.actor))).toEqual(new Set(['admin token']))
  })
})
