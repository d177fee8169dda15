// Senders in the admin API, against a fake Twilio and a fake Graph API that know each sender's
// credentials: create (credentials checked against the provider's fields, 409 for a number taken),
// get, list and change them without a credential ever in an answer, check them with the provider,
// disable and enable, assign to accounts with the default rules, GET /api/v1/senders for a key, and
// audit rows that name what changed but hold no credential value.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import {
  assign,
  basic,
  createSender,
  META_A,
  META_B,
  registerFakes,
  SECRET_VALUES,
  sendersEnv,
  TWILIO_A,
  TWILIO_B,
} from '../helpers/senders'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

let t: TestApp
let ids: { twilioA: number; twilioB: number; metaA: number; metaB: number }
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph) })
  ids = {
    twilioA: await createSender(t, 'twilio', TWILIO_A),
    twilioB: await createSender(t, 'twilio', TWILIO_B),
    metaA: await createSender(t, 'meta', META_A),
    metaB: await createSender(t, 'meta', META_B),
  }
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

let numbers = 0
/** A number no sender has yet. */
const freshNumber = () => `+6281299${String(++numbers).padStart(5, '0')}`

/** No secret value anywhere in `value` (an answer, a row). */
function expectNoSecret(value: unknown, extra: string[] = []) {
  const text = JSON.stringify(value)
  for (const secret of [...SECRET_VALUES, ...extra]) expect({ secret, found: text.includes(secret) }).toEqual({ secret, found: false })
}

describe('create', () => {
  test("credentials are checked against the provider's fields: unknown, missing, malformed are 422, nothing stored", async () => {
    const before = (await t.admin('GET', '/senders')).body.data.length
    const cases: [Record<string, unknown>, string][] = [
      [{ provider: 'twilio', credentials: { ...TWILIO_A.credentials, api_key: 'SKxyz' } }, 'credentials.api_key'],
      [{ provider: 'twilio', credentials: { account_sid: TWILIO_A.credentials.account_sid } }, 'credentials.auth_token'],
      [{ provider: 'twilio', credentials: { ...TWILIO_A.credentials, account_sid: 'AC123' } }, 'credentials.account_sid'],
      [
        { provider: 'twilio', credentials: { ...TWILIO_A.credentials, messaging_service_sid: 'MGnot-hex' } },
        'credentials.messaging_service_sid',
      ],
      [{ provider: 'meta', credentials: { ...META_A.credentials, phone_number_id: '10abc' } }, 'credentials.phone_number_id'],
      [{ provider: 'meta', credentials: { access_token: META_A.credentials.access_token } }, 'credentials.'],
      [{ provider: 'meta', credentials: { ...META_A.credentials, app_secret: '   ' } }, 'credentials.app_secret'],
      [{ provider: 'simulator', credentials: { token: 'x' } }, 'credentials.token'],
      [{ provider: 'carrier-pigeon', credentials: {} }, 'provider'],
      [{ provider: 'twilio', credentials: TWILIO_A.credentials, number: '0812' }, 'number'],
    ]
    for (const [body, field] of cases) {
      const answer = await t.admin('POST', '/senders', { name: 'Bad', number: freshNumber(), ...body })
      expect({ body, status: answer.status, code: answer.body.code }).toEqual({ body, status: 422, code: 'VALIDATION_ERROR' })
      expect(answer.body.error).toContain(field)
      expectNoSecret(answer.body)
    }
    expect((await t.admin('GET', '/senders')).body.data).toHaveLength(before)
  })

  test('a number the provider has a sender for already is 409; the same number with another provider is not', async () => {
    const again = await t.admin('POST', '/senders', { provider: 'twilio', name: 'Again', ...TWILIO_A })
    expect([again.status, again.body.code]).toEqual([409, 'CONFLICT'])
    expect(again.body.error).toContain(`sender ${ids.twilioA}`)
    // Written another way, it is still the same number.
    const spaced = await t.admin('POST', '/senders', {
      provider: 'twilio',
      name: 'Spaced',
      number: '+1 415-555-0101',
      credentials: TWILIO_A.credentials,
    })
    expect(spaced.status).toBe(409)
    const simulator = await t.admin('POST', '/senders', { provider: 'simulator', name: 'Sim', number: TWILIO_A.number })
    expect(simulator.status).toBe(201)
    expect(simulator.body.data).toMatchObject({ provider: 'simulator', number: TWILIO_A.number, credentials_set: [] })
  })

  test('the answer lists which credential fields are set, never their values; identity is the non-secret id', async () => {
    const number = freshNumber()
    const created = await t.admin('POST', '/senders', {
      provider: 'twilio',
      name: '  Toko Maju  ',
      number,
      credentials: { ...TWILIO_A.credentials, messaging_service_sid: `MG${'c'.repeat(32)}` },
      rate_per_second: 12.5,
    })
    expect(created.status).toBe(201)
    expect(created.body.data).toEqual({
      id: expect.any(Number),
      provider: 'twilio',
      name: 'Toko Maju',
      number,
      identity: TWILIO_A.credentials.account_sid,
      credentials_set: ['account_sid', 'auth_token', 'messaging_service_sid'],
      rate_per_second: 12.5,
      recipient_gap_ms: 6000, // Twilio's own default: PROVIDER_RECIPIENT_GAP_MS is the deployment's sender's
      disabled: false,
      messaging_limit: null,
      portfolio: null,
      budget: { messaging_limit: null, used: 0, frees_at: null },
      last_check: null,
      late_failures: 'keep',
      accounts: [],
      // Its health as Meta reports it (issue 32): nothing known yet, its tier the operator's.
      health: {
        flagged: false,
        history: [],
        messaging_limit_source: 'operator',
        quality: null,
        restricted: null,
        restrictions: [],
        throughput: null,
      },
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
      // A Twilio sender's WhatsApp templates are synced when it is created (tests/templates/edits.test.ts).
      templates_sync: { ok: true, detail: expect.stringMatching(/^\d+ listed by twilio, /) },
    })
    expectNoSecret(created.body)
    const meta = await t.admin('GET', `/senders/${ids.metaA}`)
    expect(meta.body.data).toMatchObject({
      provider: 'meta',
      identity: META_A.credentials.phone_number_id,
      credentials_set: ['access_token', 'phone_number_id', 'app_secret', 'business_account_id', 'verify_token'],
    })
    expectNoSecret(meta.body)
  })
})

describe('get, list, change', () => {
  test('get and list show every sender with its accounts and no credential; an unknown one is 404', async () => {
    const list = await t.admin('GET', '/senders')
    expect(list.status).toBe(200)
    const byId = new Map(list.body.data.map((s: any) => [s.id, s]))
    for (const id of Object.values(ids)) expect(byId.has(id)).toBe(true)
    expectNoSecret(list.body)
    for (const sender of list.body.data) expect(Object.keys(sender)).not.toContain('credentials')
    expect((await t.admin('GET', '/senders/999999')).status).toBe(404)
  })

  test('patch changes the name and pace; credentials given replace those stored, the others stay, still unseen', async () => {
    const id = await createSender(t, 'meta', { number: freshNumber(), credentials: META_B.credentials })
    const renamed = await t.admin('PATCH', `/senders/${id}`, { name: 'Warung Baru', rate_per_second: 20, recipient_gap_ms: 1500 })
    expect(renamed.status).toBe(200)
    expect(renamed.body.data).toMatchObject({ name: 'Warung Baru', rate_per_second: 20, recipient_gap_ms: 1500 })
    const back = await t.admin('PATCH', `/senders/${id}`, { rate_per_second: null, recipient_gap_ms: null })
    expect(back.body.data).toMatchObject({ name: 'Warung Baru', rate_per_second: 80, recipient_gap_ms: 6000 })

    // A new token for the same number: it replaces the stored one (the check now goes with it).
    const rotated = await t.admin('PATCH', `/senders/${id}`, { credentials: { access_token: META_A.credentials.access_token } })
    expect(rotated.status).toBe(200)
    expect(rotated.body.data.credentials_set).toEqual([
      'access_token',
      'phone_number_id',
      'app_secret',
      'business_account_id',
      'verify_token',
    ])
    expectNoSecret(rotated.body)
    // An empty string removes an optional field; a required one cannot go, and an unknown one is refused.
    const dropped = await t.admin('PATCH', `/senders/${id}`, { credentials: { verify_token: '' } })
    expect(dropped.body.data.credentials_set).not.toContain('verify_token')
    expect((await t.admin('PATCH', `/senders/${id}`, { credentials: { app_secret: '' } })).status).toBe(422)
    expect((await t.admin('PATCH', `/senders/${id}`, { credentials: { auth_token: 'x' } })).status).toBe(422)
    // The phone number id is its identity: changing it changes what its callbacks are matched by.
    const moved = await t.admin('PATCH', `/senders/${id}`, { credentials: { phone_number_id: '100000000000077' } })
    expect(moved.body.data.identity).toBe('100000000000077')
    expect((await t.admin('PATCH', '/senders/999999', { name: 'x' })).status).toBe(404)
  })
})

describe('check', () => {
  test("right credentials: ok, with what the provider said; the fakes saw each sender's own credentials", async () => {
    twilio.reset()
    graph.reset()
    const a = await t.admin('POST', `/senders/${ids.twilioA}/check`)
    expect(a.status).toBe(200)
    expect(a.body.data.last_check).toEqual({ at: expect.any(String), ok: true, detail: 'Twilio account "Toko A" is active' })
    const m = await t.admin('POST', `/senders/${ids.metaB}/check`)
    expect(m.body.data.last_check).toMatchObject({ ok: true })
    expect(m.body.data.last_check.detail).toContain('Warung B')
    expect(m.body.data.last_check.detail).toContain('quality YELLOW')
    // After a check that passes, the sender's WhatsApp templates are synced with the same credentials (the Content API, Meta's templates edge).
    const syncs = [...twilio.requests, ...graph.requests].filter((r) => r.path.startsWith('/v1/') || r.path.endsWith('/message_templates'))
    expect(syncs.map((r) => r.headers.get('authorization'))).toEqual([
      basic(TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token),
      `Bearer ${META_B.credentials.access_token}`,
    ])
    twilio.requests = twilio.requests.filter((r) => !syncs.includes(r))
    graph.requests = graph.requests.filter((r) => !syncs.includes(r))
    expect(twilio.requests.map((r) => [r.method, r.path, r.headers.get('authorization'), r.account, r.status])).toEqual([
      [
        'GET',
        `/2010-04-01/Accounts/${TWILIO_A.credentials.account_sid}.json`,
        basic(TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token),
        TWILIO_A.credentials.account_sid,
        200,
      ],
    ])
    expect(graph.requests.map((r) => [r.method, r.path, r.headers.get('authorization'), r.account, r.status])).toEqual([
      [
        'GET',
        `/v21.0/${META_B.credentials.phone_number_id}`,
        `Bearer ${META_B.credentials.access_token}`,
        META_B.credentials.phone_number_id,
        200,
      ],
    ])
    // Kept: the sender shows its last check.
    expect((await t.admin('GET', `/senders/${ids.twilioA}`)).body.data.last_check).toMatchObject({ ok: true })
  })

  test("a wrong token: last_check.ok false with the provider's message, and no secret in it", async () => {
    const wrongTwilio = 'wrong-twilio-token-5ecret-000000'
    const wrongMeta = 'EAAwrongMetaToken5ecret000000'
    const tw = await createSender(t, 'twilio', {
      number: freshNumber(),
      credentials: { ...TWILIO_B.credentials, auth_token: wrongTwilio },
    })
    const me = await createSender(t, 'meta', { number: freshNumber(), credentials: { ...META_A.credentials, access_token: wrongMeta } })
    const a = await t.admin('POST', `/senders/${tw}/check`)
    expect(a.status).toBe(200)
    // What is wrong and what to do first, the provider's own words after it (issue 33).
    expect(a.body.data.last_check).toEqual({
      at: expect.any(String),
      ok: false,
      detail:
        'the Account SID or Auth Token is wrong: copy both again from console.twilio.com → Account info (a subaccount: from its own page) ' +
        'and save them on this sender (Twilio answered HTTP 401 (code 20003): Authenticate)',
    })
    const m = await t.admin('POST', `/senders/${me}/check`)
    expect(m.body.data.last_check).toMatchObject({ ok: false })
    expect(m.body.data.last_check.detail).toStartWith(
      'the access token expired or is not valid: make a System User token that does not expire',
    )
    expect(m.body.data.last_check.detail).toContain('(Meta answered HTTP 401 (code 190): Invalid OAuth access token')
    // A phone number id the token's business does not have: the id is what to look at.
    const unknown = await createSender(t, 'meta', {
      number: freshNumber(),
      credentials: { ...META_A.credentials, phone_number_id: '987650000000001' },
    })
    const u = await t.admin('POST', `/senders/${unknown}/check`)
    expect(u.body.data.last_check.detail).toStartWith('the phone number id is wrong, or the token cannot see it: copy it again from')
    expect(u.body.data.last_check.detail).toContain('(Meta answered HTTP 400 (code 100): ')
    for (const answer of [a, m]) expectNoSecret(answer.body, [wrongTwilio, wrongMeta])
    const [stored] = await t.db.sql<{ detail: string }[]>`select string_agg(check_detail, ' ') as detail from senders`
    expectNoSecret(stored, [wrongTwilio, wrongMeta])

    // A suspended account answers, but is not ok.
    twilio.account(`AC${'d4'.repeat(16)}`, 'suspended-token-5ecret-0000000000', { status: 'suspended', friendlyName: 'Closed shop' })
    const suspended = await createSender(t, 'twilio', {
      number: freshNumber(),
      credentials: { account_sid: `AC${'d4'.repeat(16)}`, auth_token: 'suspended-token-5ecret-0000000000' },
    })
    const s = await t.admin('POST', `/senders/${suspended}/check`)
    expect(s.body.data.last_check).toMatchObject({ ok: false, detail: 'Twilio account "Closed shop" is suspended' })
    expect((await t.admin('POST', '/senders/999999/check')).status).toBe(404)
  })
})

describe('disable, assign, the API view', () => {
  test('disable and enable show in the admin answer and in the account view', async () => {
    const { accountId, key } = await t.account(10)
    await assign(t, accountId, ids.metaA)
    const disabled = await t.admin('POST', `/senders/${ids.metaA}/disable`)
    expect([disabled.status, disabled.body.data.disabled]).toEqual([200, true])
    expect((await t.api('GET', '/senders', key)).body.data).toEqual([expect.objectContaining({ id: ids.metaA, disabled: true })])
    // Twice is the same.
    expect((await t.admin('POST', `/senders/${ids.metaA}/disable`)).body.data.disabled).toBe(true)
    const enabled = await t.admin('POST', `/senders/${ids.metaA}/enable`)
    expect([enabled.status, enabled.body.data.disabled]).toEqual([200, false])
    expect((await t.api('GET', '/senders', key)).body.data).toEqual([expect.objectContaining({ id: ids.metaA, disabled: false })])
    expect((await t.admin('POST', '/senders/999999/disable')).status).toBe(404)
  })

  test("assign and unassign: the first is the default, default: true moves it, the default's removal makes the oldest other one default", async () => {
    const { accountId } = await t.account(10)
    const view = async () => ((await t.admin('GET', `/accounts/${accountId}/senders`)).body.data as any[]).map((s) => [s.id, s.default])
    expect(await view()).toEqual([])
    await assign(t, accountId, ids.twilioA)
    expect(await view()).toEqual([[ids.twilioA, true]])
    await assign(t, accountId, ids.twilioB)
    await assign(t, accountId, ids.metaA)
    expect(await view()).toEqual([
      [ids.twilioA, true],
      [ids.twilioB, false],
      [ids.metaA, false],
    ])
    // Assigning again without `default` keeps it as it is.
    await assign(t, accountId, ids.twilioA)
    expect((await view())[0]).toEqual([ids.twilioA, true])
    await assign(t, accountId, ids.metaA, true)
    expect(await view()).toEqual([
      [ids.metaA, true],
      [ids.twilioA, false],
      [ids.twilioB, false],
    ])
    // The sender shows its accounts.
    expect((await t.admin('GET', `/senders/${ids.metaA}`)).body.data.accounts).toContainEqual({ account_id: accountId, default: true })
    const after = await t.admin('DELETE', `/accounts/${accountId}/senders/${ids.metaA}`)
    expect(after.status).toBe(200)
    expect(after.body.data.map((s: any) => [s.id, s.default])).toEqual([
      [ids.twilioA, true],
      [ids.twilioB, false],
    ])
    await t.admin('DELETE', `/accounts/${accountId}/senders/${ids.twilioB}`)
    expect(await view()).toEqual([[ids.twilioA, true]])
    expect((await t.admin('DELETE', `/accounts/${accountId}/senders/${ids.twilioB}`)).status).toBe(404)
    expect((await t.admin('PUT', `/accounts/999999/senders/${ids.twilioA}`)).status).toBe(404)
    expect((await t.admin('PUT', `/accounts/${accountId}/senders/999999`)).status).toBe(404)
  })

  test("GET /api/v1/senders: the key's account's senders, default first, without credentials; another account's are not there", async () => {
    const mine = await t.account(10)
    const theirs = await t.account(10)
    await assign(t, mine.accountId, ids.twilioB)
    await assign(t, mine.accountId, ids.metaB, true)
    await assign(t, theirs.accountId, ids.twilioA)
    const answer = await t.api('GET', '/senders', mine.key)
    expect(answer.status).toBe(200)
    expect(answer.body.data).toEqual([
      { id: ids.metaB, provider: 'meta', name: `meta ${META_B.number}`, number: META_B.number, default: true, disabled: false },
      { id: ids.twilioB, provider: 'twilio', name: `twilio ${TWILIO_B.number}`, number: TWILIO_B.number, default: false, disabled: false },
    ])
    expectNoSecret(answer.body)
    expect((await t.api('GET', '/senders', theirs.key)).body.data.map((s: any) => s.id)).toEqual([ids.twilioA])
    const none = await t.account(10)
    expect((await t.api('GET', '/senders', none.key)).body.data).toEqual([])
    expect((await t.request('GET', '/api/v1/senders')).status).toBe(401)
  })
})

test('audit rows name every change and hold no credential value', async () => {
  const rows = await t.db.sql<{ action: string; actor: string; detail: unknown }[]>`
    select action, actor, detail from audit_log where action like 'sender%' order by id`
  const actions = new Set(rows.map((r) => r.action))
  for (const action of [
    'sender created',
    'sender changed',
    'sender checked',
    'sender disabled',
    'sender enabled',
    'sender assigned',
    'sender unassigned',
  ]) {
    expect(actions.has(action)).toBe(true)
  }
  expect(rows.every((r) => r.actor === 'admin token')).toBe(true)
  const created = rows.find((r) => r.action === 'sender created' && (r.detail as any).sender_id === ids.twilioA)
  expect(created?.detail).toEqual({
    sender_id: ids.twilioA,
    provider: 'twilio',
    number: TWILIO_A.number,
    credentials_set: ['account_sid', 'auth_token'],
    late_failures: 'keep',
  })
  const [all] = await t.db.sql<{ text: string }[]>`select coalesce(string_agg(detail::text, ' '), '') as text from audit_log`
  expectNoSecret(all!.text, ['wrong-twilio-token-5ecret-000000', 'EAAwrongMetaToken5ecret000000'])
})
