// Sending through an account's own senders, against a fake Twilio with two accounts (each its own SID,
// auth token and number) and a fake Graph API with two phone numbers (each its own token), which refuse
// any other credentials, and a From that is not the account's: every message goes with its sender's
// credentials and identity; `from` names a sender by id or number, and its absence means the
// account's default (or the deployment's number for an account without senders); a sender that is
// not the account's, or is disabled, is refused before anything is charged (a single send, a bulk
// entry, a campaign); messages record their sender and the list filters by it; a running campaign
// whose sender is disabled pauses.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import type { FakeRequest } from '../helpers/fake-rates'
import { boundTemplate } from '../helpers/templates'
import { assign, basic, ENV_TWILIO, fourSenders, META_A, META_B, registerFakes, sendersEnv, TWILIO_A, TWILIO_B } from '../helpers/senders'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph) })
  // No gap per recipient: these tests send to few numbers, and the pace has its own tests.
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  // Creating a sender syncs its WhatsApp templates: those listings are not what these tests count.
  twilio.reset()
  graph.reset()
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})
afterEach(() => {
  twilio.reset()
  graph.reset()
})

/** What a fake Twilio request went with: its path's account, its auth, its From. */
const twilioWire = (r: FakeRequest) => ({
  path: r.path,
  auth: r.headers.get('authorization'),
  account: r.account,
  from: new URLSearchParams(r.body).get('From'),
  text: r.text,
  status: r.status,
})
const twilioExpected = (sid: string, token: string, number: string, text: string) => ({
  path: `/2010-04-01/Accounts/${sid}/Messages.json`,
  auth: basic(sid, token),
  account: sid,
  from: `whatsapp:${number}`,
  text,
  status: 201,
})
const graphWire = (r: FakeRequest) => ({
  path: r.path,
  auth: r.headers.get('authorization'),
  account: r.account,
  text: r.text,
  status: r.status,
})
const graphExpected = (phoneId: string, token: string, text: string) => ({
  path: `/v21.0/${phoneId}/messages`,
  auth: `Bearer ${token}`,
  account: phoneId,
  text,
  status: 200,
})

/** An account with all four senders, Twilio A its default. */
async function accountWithAll(balance = 1000) {
  const account = await t.account(balance)
  await assign(t, account.accountId, ids.twilioA)
  await assign(t, account.accountId, ids.twilioB)
  await assign(t, account.accountId, ids.metaA)
  await assign(t, account.accountId, ids.metaB)
  return account
}

async function senderOf(messageSid: string): Promise<number | null> {
  const [row] = await t.db.sql<{ sender_id: number | null }[]>`select sender_id from messages where message_sid = ${messageSid}`
  return row!.sender_id === null ? null : Number(row!.sender_id)
}

async function ledgerOf(accountId: number) {
  return t.db.sql<{ kind: string; amount: number }[]>`select kind, amount from ledger where account_id = ${accountId} order by id`
}

describe('the sender a message goes from', () => {
  test("each send goes with its sender's credentials and identity: from by id, by number, and the default when omitted", async () => {
    const { accountId, key } = await accountWithAll()
    const sends: [string | undefined, string][] = [
      [undefined, 'default'],
      [String(ids.twilioB), 'twilio B by id'],
      [TWILIO_A.number, 'twilio A by number'],
      [META_A.number, 'meta A by number'],
      [String(ids.metaB), 'meta B by id'],
    ]
    const sids: string[] = []
    for (const [from, body] of sends) {
      const answer = await t.api('POST', '/messages/send', key, { to: '081234567890', body, ...(from === undefined ? {} : { from }) })
      expect({ body, status: answer.status }).toEqual({ body, status: 200 })
      sids.push(answer.body.data.message_id)
    }
    expect(twilio.requests.map(twilioWire)).toEqual([
      twilioExpected(TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token, TWILIO_A.number, 'default'),
      twilioExpected(TWILIO_B.credentials.account_sid, TWILIO_B.credentials.auth_token, TWILIO_B.number, 'twilio B by id'),
      twilioExpected(TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token, TWILIO_A.number, 'twilio A by number'),
    ])
    expect(graph.requests.map(graphWire)).toEqual([
      graphExpected(META_A.credentials.phone_number_id, META_A.credentials.access_token, 'meta A by number'),
      graphExpected(META_B.credentials.phone_number_id, META_B.credentials.access_token, 'meta B by id'),
    ])
    expect(await Promise.all(sids.map(senderOf))).toEqual([ids.twilioA, ids.twilioB, ids.twilioA, ids.metaA, ids.metaB])
    expect(sids.slice(3).every((sid) => sid.startsWith('wamid.'))).toBe(true)
    expect(await money(t, accountId)).toEqual({ balance: 995, ledgerSum: 995 })
  })

  test('a Twilio sender with a Messaging Service sends with MessagingServiceSid instead of From', async () => {
    const service = `MG${'5e'.repeat(16)}`
    const created = await t.admin('POST', '/senders', {
      provider: 'twilio',
      name: 'Service',
      number: '+14155550199',
      credentials: { ...TWILIO_B.credentials, messaging_service_sid: service },
      recipient_gap_ms: 0,
    })
    expect(created.status).toBe(201)
    twilio.reset() // its templates' sync at creation
    const { accountId, key } = await t.account(10)
    await assign(t, accountId, created.body.data.id)
    const answer = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'via service' })
    expect(answer.status).toBe(200)
    expect(twilio.requests).toHaveLength(1)
    const form = new URLSearchParams(twilio.requests[0]!.body)
    expect([form.get('MessagingServiceSid'), form.has('From')]).toEqual([service, false])
    expect([twilio.requests[0]!.account, twilio.requests[0]!.sender]).toEqual([TWILIO_B.credentials.account_sid, service])
  })

  test("a sender whose token the provider refuses: 502 saying the operator must fix it, the provider's words (20003, 190), refunded once, no token in it", async () => {
    const wrongTwilio = 'twilio-wrong-5ecret-111111111111'
    const wrongMeta = 'EAAwrong5ecret2222222222222'
    const tw = await t.admin('POST', '/senders', {
      provider: 'twilio',
      name: 'Wrong',
      number: '+14155550198',
      credentials: { ...TWILIO_A.credentials, auth_token: wrongTwilio },
      recipient_gap_ms: 0,
    })
    const me = await t.admin('POST', '/senders', {
      provider: 'meta',
      name: 'Wrong',
      number: '+6281100000098',
      credentials: { ...META_A.credentials, access_token: wrongMeta },
      recipient_gap_ms: 0,
    })
    // Their templates' syncs at creation (refused: the senders are made all the same) are not what this test counts.
    twilio.reset()
    graph.reset()
    const { accountId, key } = await t.account(10)
    await assign(t, accountId, tw.body.data.id)
    await assign(t, accountId, me.body.data.id)
    for (const [from, code, words] of [
      [tw.body.data.id, 20003, 'Authenticate'],
      [me.body.data.id, 190, 'Invalid OAuth access token'],
    ] as const) {
      const answer = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'refused', from: String(from) })
      expect([answer.status, answer.body.code]).toEqual([502, 'BAD_GATEWAY'])
      // It says whose to fix (the operator's) and that repeating will not help, the provider's words after it (issue 33).
      expect(answer.body.error).toStartWith(
        "the messaging provider refused the credentials of this account's sender, so nothing can be sent from it until the operator " +
          'of this service corrects them on the sender; a repeat of the request will not help (',
      )
      expect(answer.body.error).toContain(words)
      expect(answer.body.error).toEndWith('; the charge was refunded')
      const [row] = await t.db.sql<{ error_code: number; error_message: string; refunded: boolean }[]>`
        select error_code, error_message, refunded_at is not null as refunded from messages where id = ${answer.body.id}`
      expect(row).toMatchObject({ error_code: code, refunded: true })
      for (const text of [JSON.stringify(answer.body), row!.error_message]) {
        expect(text.includes(wrongTwilio) || text.includes(wrongMeta)).toBe(false)
      }
    }
    // A bulk entry says the same, refunded with the others.
    const bulk = await t.api('POST', '/messages/bulk', key, {
      messages: [{ to: '081234567891', body: 'refused', from: String(tw.body.data.id) }],
    })
    expect(bulk.body.data.results[0]).toMatchObject({ status: 'failed', code: 'BAD_GATEWAY' })
    expect(bulk.body.data.results[0].error).toStartWith("the messaging provider refused the credentials of this account's sender")
    expect(bulk.body.data.results[0].error).toEndWith('(Authenticate); refunded')
    expect(twilio.requests.map((r) => [r.status, r.code, r.account])).toEqual([
      [401, 20003, null],
      [401, 20003, null],
    ])
    expect(graph.requests.map((r) => [r.status, r.code, r.account])).toEqual([[401, 190, null]])
    // Charged and refunded exactly once each: the balance and the ledger are where they started.
    expect(await money(t, accountId)).toEqual({ balance: 10, ledgerSum: 10 })
    const rows = await t.db.sql<{ kind: string; n: number }[]>`
      select kind, count(*)::int as n from ledger where account_id = ${accountId} and kind <> 'topup' group by kind order by kind`
    expect([...rows]).toEqual([
      { kind: 'charge', n: 3 },
      { kind: 'refund', n: 3 },
    ])
  })

  test("the default moves with default: true; an account without senders sends from the deployment's number", async () => {
    const { accountId, key } = await accountWithAll()
    await assign(t, accountId, ids.metaB, true)
    const one = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'new default' })
    expect(one.status).toBe(200)
    expect(await senderOf(one.body.data.message_id)).toBe(ids.metaB)
    expect(graph.requests.map(graphWire)).toEqual([
      graphExpected(META_B.credentials.phone_number_id, META_B.credentials.access_token, 'new default'),
    ])

    const plain = await t.account(100)
    const two = await t.api('POST', '/messages/send', plain.key, { to: '081234567890', body: 'deployment' })
    expect(two.status).toBe(200)
    expect(await senderOf(two.body.data.message_id)).toBeNull()
    expect(twilio.requests.map(twilioWire)).toEqual([
      twilioExpected(ENV_TWILIO.sid, ENV_TWILIO.token, ENV_TWILIO.from.slice('whatsapp:'.length), 'deployment'),
    ])
  })

  test("a sender that is not the account's: 422, nothing charged, nothing sent", async () => {
    const own = await t.account(100)
    await assign(t, own.accountId, ids.twilioA)
    const none = await t.account(100)
    const refusals: [string, string, string][] = [
      [own.key, String(ids.twilioB), 'not one of this account'],
      [own.key, META_A.number, 'not one of this account'],
      [own.key, '+6289999999999', 'not one of this account'],
      [own.key, '999999', 'not one of this account'],
      [none.key, String(ids.twilioA), 'has no senders of its own'],
    ]
    for (const [key, from, words] of refusals) {
      const answer = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'foreign', from })
      expect({ from, status: answer.status, code: answer.body.code }).toEqual({ from, status: 422, code: 'VALIDATION_ERROR' })
      expect(answer.body.error).toContain('from:')
      expect(answer.body.error).toContain(words)
    }
    for (const account of [own, none]) {
      expect(await money(t, account.accountId)).toEqual({ balance: 100, ledgerSum: 100 })
      expect((await ledgerOf(account.accountId)).map((r) => r.kind)).toEqual(['topup'])
      const [{ n }] = (await t.db.sql`select count(*)::int as n from messages where account_id = ${account.accountId}`) as any
      expect(n).toBe(0)
    }
    expect([twilio.requests.length, graph.requests.length]).toEqual([0, 0])
  })

  test('a bulk with mixed from: each entry through its own sender, a foreign one failed and not charged', async () => {
    const { accountId, key } = await t.account(100)
    await assign(t, accountId, ids.twilioB)
    await assign(t, accountId, ids.metaA)
    const answer = await t.api('POST', '/messages/bulk', key, {
      messages: [
        { to: '081234567801', body: 'bulk default' },
        { to: '081234567802', body: 'bulk meta A', from: String(ids.metaA) },
        { to: '081234567803', body: 'bulk foreign', from: String(ids.twilioA) },
        { to: '081234567804', body: 'bulk twilio B', from: TWILIO_B.number },
        { to: '081234567805', body: 'bulk foreign meta', from: META_B.number },
      ],
    })
    expect(answer.status).toBe(200)
    expect(answer.body.data).toMatchObject({ total: 5, sent: 3, failed: 2, total_cost: 3, balance_after: 97 })
    expect(answer.body.data.results.map((r: any) => [r.status, r.code ?? null])).toEqual([
      ['sent', null],
      ['sent', null],
      ['failed', 'VALIDATION_ERROR'],
      ['sent', null],
      ['failed', 'VALIDATION_ERROR'],
    ])
    expect(answer.body.data.results[2].error).toContain('messages[2].from')
    expect(twilio.requests.map(twilioWire).sort((a, b) => a.text!.localeCompare(b.text!))).toEqual([
      twilioExpected(TWILIO_B.credentials.account_sid, TWILIO_B.credentials.auth_token, TWILIO_B.number, 'bulk default'),
      twilioExpected(TWILIO_B.credentials.account_sid, TWILIO_B.credentials.auth_token, TWILIO_B.number, 'bulk twilio B'),
    ])
    expect(graph.requests.map(graphWire)).toEqual([
      graphExpected(META_A.credentials.phone_number_id, META_A.credentials.access_token, 'bulk meta A'),
    ])
    expect(await money(t, accountId)).toEqual({ balance: 97, ledgerSum: 97 })
    const rows = await t.db.sql<{ body: string; sender_id: number }[]>`
      select body, sender_id from messages where account_id = ${accountId} order by body`
    expect(rows.map((r) => [r.body, Number(r.sender_id)])).toEqual([
      ['bulk default', ids.twilioB],
      ['bulk meta A', ids.metaA],
      ['bulk twilio B', ids.twilioB],
    ])
  })

  test('GET /messages?sender_id= lists the messages of one sender; 0 is the deployment default; another account sees none', async () => {
    const { accountId, key } = await accountWithAll()
    for (const [from, body] of [
      [String(ids.metaA), 'list meta A 1'],
      [String(ids.twilioB), 'list twilio B'],
      [String(ids.metaA), 'list meta A 2'],
    ]) {
      expect((await t.api('POST', '/messages/send', key, { to: '081234567890', body, from })).status).toBe(200)
    }
    await t.admin('DELETE', `/accounts/${accountId}/senders/${ids.twilioA}`)
    await t.admin('DELETE', `/accounts/${accountId}/senders/${ids.twilioB}`)
    await t.admin('DELETE', `/accounts/${accountId}/senders/${ids.metaA}`)
    await t.admin('DELETE', `/accounts/${accountId}/senders/${ids.metaB}`)
    expect((await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'list deployment' })).status).toBe(200)

    const listed = async (query: string) => {
      const answer = await t.api('GET', `/messages${query}`, key)
      expect(answer.status).toBe(200)
      return answer.body.data.items.map((m: any) => [m.body, m.sender_id])
    }
    expect(await listed(`?sender_id=${ids.metaA}`)).toEqual([
      ['list meta A 2', ids.metaA],
      ['list meta A 1', ids.metaA],
    ])
    expect(await listed(`?sender_id=${ids.twilioB}`)).toEqual([['list twilio B', ids.twilioB]])
    expect(await listed('?sender_id=0')).toEqual([['list deployment', null]])
    expect(await listed(`?sender_id=${ids.metaB}`)).toEqual([])
    expect((await listed('')).length).toBe(4)
    expect((await t.api('GET', '/messages?sender_id=-1', key)).status).toBe(422)
    const other = await t.account(10)
    expect((await t.api('GET', `/messages?sender_id=${ids.metaA}`, other.key)).body.data.items).toEqual([])
  })
})

describe('campaigns', () => {
  /** An account with three contacts, a template, a segment, and the given senders. */
  async function campaignAccount(senderIds: number[]) {
    const account = await boundTemplate(t, 'Halo {{name}}', {}, [
      { name: 'Ani', phone: '081234500001' },
      { name: 'Budi', phone: '081234500002' },
      { name: 'Cici', phone: '081234500003' },
    ])
    for (const id of senderIds) await assign(t, account.accountId, id)
    const segment = await t.admin('POST', `/accounts/${account.accountId}/segments`, { name: 'vips', tag: 'vip' })
    return { ...account, segmentId: segment.body.data.id as number }
  }
  const draft = (a: { key: string; templateId: number; segmentId: number }, from?: string) =>
    t.api('POST', '/campaigns', a.key, {
      name: 'promo',
      template_id: a.templateId,
      segment_id: a.segmentId,
      ...(from === undefined ? {} : { from }),
    })

  test("a campaign with from goes through that sender; without, the account's default; a foreign from is 422", async () => {
    const a = await campaignAccount([ids.twilioB, ids.metaB])
    const created = await draft(a, META_B.number)
    expect(created.status).toBe(201)
    expect(created.body.data.campaign.sender_id).toBe(ids.metaB)
    const id = created.body.data.campaign.id
    expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
    await t.runWorker('campaign-runner')
    expect((await t.admin('GET', `/campaigns/${id}`)).body.data.campaign.status).toBe('sent')
    expect(graph.requests.map(graphWire).sort((x, y) => x.text!.localeCompare(y.text!))).toEqual(
      ['Halo Ani', 'Halo Budi', 'Halo Cici'].map((text) =>
        graphExpected(META_B.credentials.phone_number_id, META_B.credentials.access_token, text),
      ),
    )
    const rows = await t.db.sql<{ sender_id: number; status: string }[]>`select sender_id, status from messages where campaign_id = ${id}`
    expect(rows.map((r) => [Number(r.sender_id), r.status])).toEqual([
      [ids.metaB, 'sent'],
      [ids.metaB, 'sent'],
      [ids.metaB, 'sent'],
    ])

    const byDefault = await draft(a)
    expect(byDefault.body.data.campaign.sender_id).toBe(ids.twilioB)
    await t.admin('POST', `/campaigns/${byDefault.body.data.campaign.id}/run`)
    await t.runWorker('campaign-runner')
    expect(twilio.requests.map(twilioWire).sort((x, y) => x.text!.localeCompare(y.text!))).toEqual(
      ['Halo Ani', 'Halo Budi', 'Halo Cici'].map((text) =>
        twilioExpected(TWILIO_B.credentials.account_sid, TWILIO_B.credentials.auth_token, TWILIO_B.number, text),
      ),
    )

    const before = await money(t, a.accountId)
    const foreign = await draft(a, String(ids.twilioA))
    expect([foreign.status, foreign.body.code]).toEqual([422, 'VALIDATION_ERROR'])
    expect(await money(t, a.accountId)).toEqual(before)
    expect(before).toEqual({ balance: 10_000 - 6 * 10, ledgerSum: 10_000 - 6 * 10 })
  })
})

describe('a disabled sender', () => {
  test('refuses new sends before charging: a single send 422 SENDER_DISABLED, a bulk entry failed uncharged', async () => {
    const { accountId, key } = await t.account(100)
    await assign(t, accountId, ids.twilioB)
    await assign(t, accountId, ids.metaB)
    expect((await t.admin('POST', `/senders/${ids.metaB}/disable`)).status).toBe(200)
    try {
      const one = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'disabled', from: String(ids.metaB) })
      expect([one.status, one.body.code]).toEqual([422, 'SENDER_DISABLED'])
      expect(one.body.error).toContain('nothing was charged')
      expect(await money(t, accountId)).toEqual({ balance: 100, ledgerSum: 100 })

      const bulk = await t.api('POST', '/messages/bulk', key, {
        messages: [
          { to: '081234567801', body: 'bulk disabled', from: META_B.number },
          { to: '081234567802', body: 'bulk enabled' },
        ],
      })
      expect(bulk.status).toBe(200)
      expect(bulk.body.data).toMatchObject({ total: 2, sent: 1, failed: 1, total_cost: 1, balance_after: 99 })
      expect(bulk.body.data.results[0]).toMatchObject({ status: 'failed', code: 'SENDER_DISABLED' })
      expect(graph.requests).toHaveLength(0)
      expect(twilio.requests.map((r) => r.text)).toEqual(['bulk enabled'])
      expect(await money(t, accountId)).toEqual({ balance: 99, ledgerSum: 99 })
      expect((await ledgerOf(accountId)).map((r) => [r.kind, r.amount])).toEqual([
        ['topup', 100],
        ['charge', -1],
      ])

      // The account's default disabled: a send without from is refused too, not sent from another number.
      await assign(t, accountId, ids.metaB, true)
      const omitted = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'default disabled' })
      expect([omitted.status, omitted.body.code]).toEqual([422, 'SENDER_DISABLED'])
      expect(await money(t, accountId)).toEqual({ balance: 99, ledgerSum: 99 })
    } finally {
      await t.admin('POST', `/senders/${ids.metaB}/enable`)
    }
    const again = await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'enabled again' })
    expect(again.status).toBe(200)
    expect(graph.requests.map((r) => r.text)).toEqual(['enabled again'])
  })

  test('a running campaign on it pauses, charging nothing more; enabled and resumed, it finishes', async () => {
    const a = await boundTemplate(t, 'Promo {{name}}', {}, [
      { name: 'Dodi', phone: '081234500011' },
      { name: 'Eka', phone: '081234500012' },
    ])
    await assign(t, a.accountId, ids.twilioA)
    const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
    const created = await t.api('POST', '/campaigns', a.key, {
      name: 'paused',
      template_id: a.templateId,
      segment_id: segment.body.data.id,
      from: String(ids.twilioA),
    })
    expect(created.status).toBe(201)
    const id = created.body.data.campaign.id
    expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
    await t.admin('POST', `/senders/${ids.twilioA}/disable`)
    try {
      await t.runWorker('campaign-runner')
      const paused = (await t.admin('GET', `/campaigns/${id}`)).body.data.campaign
      expect(paused).toMatchObject({ status: 'paused', pause_reason: `sender ${ids.twilioA} is disabled; enable it and resume` })
      expect(await money(t, a.accountId)).toEqual({ balance: 10_000, ledgerSum: 10_000 })
      expect(twilio.requests).toHaveLength(0)
      // A new campaign on it is refused at once.
      const refused = await t.api('POST', '/campaigns', a.key, {
        name: 'refused',
        template_id: a.templateId,
        segment_id: segment.body.data.id,
      })
      expect([refused.status, refused.body.code]).toEqual([422, 'SENDER_DISABLED'])
    } finally {
      await t.admin('POST', `/senders/${ids.twilioA}/enable`)
    }
    expect((await t.admin('POST', `/campaigns/${id}/resume`)).status).toBe(200)
    await t.runWorker('campaign-runner')
    expect((await t.admin('GET', `/campaigns/${id}`)).body.data.campaign.status).toBe('sent')
    expect(twilio.requests.map((r) => [r.account, r.text]).sort()).toEqual([
      [TWILIO_A.credentials.account_sid, 'Promo Dodi'],
      [TWILIO_A.credentials.account_sid, 'Promo Eka'],
    ])
    expect(await money(t, a.accountId)).toEqual({ balance: 9_980, ledgerSum: 9_980 })
  })
})
