// One-time passwords (issue 30 §4), through the API against the fake Graph API on a test clock: a
// verification sends its code through the account's approved authentication template (body and code
// button, as Meta's reference writes them), charged as one message; the check answers approved,
// pending (a wrong code), expired (the clock moved past its lifetime, nothing slept) and
// too_many_attempts; only a keyed digest of the code is kept; the limits per number and per account,
// and per number across accounts, answer 429 with Retry-After, nothing sent or charged; another account's verification is 404; the
// first approval records one `verification.approved` event.

import { beforeAll, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { money, testApp, type TestApp } from '../helpers/app'
import { assign, createSender, META_A } from '../helpers/senders'
import { hangingProvider, templateFakes, WABA_A } from '../helpers/templates'
import { insertTemplate, type NewTemplate, type WaTemplate } from '../../src/modules/templates/catalog'
import { inFlight } from '../helpers/in-flight'
import { dashboardUser } from '../helpers/web'

const clock = new TestClock()
const fakes = templateFakes({ graph: { clock } })
const { graph } = fakes

let t: TestApp
let metaA: number
let otp: WaTemplate
let marketing: WaTemplate
let paused: WaTemplate

const AUTH_BODY = { type: 'BODY', text: '*{{1}}* is your verification code.', example: { body_text: [['123456']] } }

let serial = 0
/** A template of Meta A, stored as a sync would and kept by the fake's WhatsApp Business Account as Meta shows it. */
async function template(t0: Omit<NewTemplate, 'senderId' | 'provider' | 'name' | 'language' | 'parameterFormat'>) {
  const name = `verify_${++serial}_${Math.random().toString(36).slice(2, 8)}`
  const row = await t.db.sql.begin((tx) =>
    insertTemplate(
      tx,
      t.deps.clock,
      { status: 'approved', language: 'en_US', parameterFormat: 'positional', ...t0, name, senderId: metaA, provider: 'meta' },
      'sync',
    ),
  )
  graph.template(WABA_A, {
    name,
    language: 'en_US',
    category: t0.category.toUpperCase() as 'AUTHENTICATION',
    status: (t0.status ?? 'approved').toUpperCase(),
    parameter_format: 'POSITIONAL',
    components: t0.components as Record<string, any>[],
  })
  return row as WaTemplate
}

beforeAll(async () => {
  t = await fakes.start({
    env: { VERIFY_PER_NUMBER: '3', VERIFY_PER_ACCOUNT: '5', WEBHOOK_ALLOW_PRIVATE: 'true' },
    clock,
    runOnClock: true,
  })
  metaA = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
  otp = await template({
    category: 'authentication',
    components: [AUTH_BODY, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'COPY_CODE', text: 'Copy code' }] }],
  })
  marketing = await template({
    category: 'marketing',
    components: [{ type: 'BODY', text: 'Use {{1}} for 10% off.', example: { body_text: [['SAVE10']] } }],
  })
  paused = await template({ category: 'authentication', status: 'paused', components: [AUTH_BODY] })
}, 60_000)

/** An account with Meta A assigned (its templates), `balance` for its messages. */
async function account(balance = 100) {
  const a = await t.account(balance)
  await assign(t, a.accountId, metaA, true)
  return a
}

const sent = () => graph.requests.filter((r) => r.path.endsWith('/messages')).map((r) => JSON.parse(r.body))
/** The code the fake Graph API received last. */
const lastCode = (): string => sent().at(-1)!.template.components[0].parameters[0].text

let numbers = 0
const newNumber = () => `0812${String(3_000_000 + ++numbers).padStart(7, '0')}`
const international = (local: string) => `+62${local.slice(1)}`

async function start(key: string, to: string, body: Record<string, unknown> = {}) {
  return t.api('POST', '/verifications', key, { to, ...body })
}
const check = (key: string, id: number, code: string) => t.api('POST', `/verifications/${id}/check`, key, { code })
const wrongOf = (code: string) => (code === '000000' ? '111111' : '000000')

describe('a verification', () => {
  test('sends its code in the body and the code button of the approved authentication template, charged as one message', async () => {
    const { accountId, key, keyId } = await account()
    const registered = await t.api('POST', '/webhook', key, { url: 'http://127.0.0.1:9/hooks', events: ['verification.approved'] })
    expect({ status: registered.status, events: registered.body.data?.events }).toEqual({ status: 200, events: ['verification.approved'] })
    const to = newNumber()
    const answer = await start(key, to)
    const sid = answer.body.data?.message_sid
    expect({ status: answer.status, body: structuredClone(answer.body) }).toMatchObject({
      status: 201,
      body: {
        success: true,
        data: { to: international(to), status: 'pending', template_id: otp.id, message_sid: expect.any(String), attempts_left: 5 },
      },
    })
    const expires = new Date(`${answer.body.data.expires_at.replace(' ', 'T')}Z`).getTime()
    expect(expires - clock.now().getTime()).toBeGreaterThan(599_000)
    expect(expires - clock.now().getTime()).toBeLessThanOrEqual(600_000)

    // Meta receives the template with the code in its body and its button.
    const [message] = sent()
    const code = lastCode()
    expect(code).toMatch(/^\d{6}$/)
    expect(message).toMatchObject({ to: international(to).slice(1), type: 'template' })
    expect(message.template).toEqual({
      name: otp.name,
      language: { code: 'en_US' },
      components: [
        { type: 'body', parameters: [{ type: 'text', text: code }] },
        { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: code }] },
      ],
    })
    expect(await money(t, accountId)).toEqual({ balance: 99, ledgerSum: 99 })

    // Only a keyed digest of the code is kept: the message it went in shows it masked.
    const shown = await t.api('GET', `/messages/${sid}`, key)
    expect({ status: shown.status, data: shown.body.data ?? shown.body }).toMatchObject({
      status: 200,
      data: {
        body: '*••••••* is your verification code.',
        provider_template: { provider: 'meta', ref: otp.name, variables: ['••••••'] },
      },
    })
    expect(JSON.stringify(shown.body.data)).not.toContain(code)
    // Only a keyed digest of the code is kept (the secrets key's id, then the MAC): what the database
    // holds is not a hash anyone can recompute from a guessed code without the key.
    const [row] = await t.db.sql<{ code_hash: string; code_salt: string }[]>`
      select code_hash, code_salt from verifications where id = ${answer.body.data.id}`
    expect(row!.code_hash).toMatch(/^[0-9a-f]{8}\.[\w-]{43}$/)
    expect(`${row!.code_hash}${row!.code_salt}`).not.toContain(code)
    const unkeyed = (text: string) => [
      new Bun.CryptoHasher('sha256').update(text).digest('hex'),
      new Bun.CryptoHasher('sha256').update(text).digest('base64url'),
    ]
    for (const guess of [...unkeyed(`${row!.code_salt}:${code}`), ...unkeyed(`verification:${row!.code_salt}\0${code}`), ...unkeyed(code)])
      expect(row!.code_hash).not.toContain(guess)

    const checked = await check(key, answer.body.data.id, code)
    expect({ status: checked.status, data: checked.body.data }).toMatchObject({
      status: 200,
      data: { id: answer.body.data.id, status: 'approved', valid: true },
    })
    // Checked again (a lost answer): approved still, one event only; a wrong code is not valid and changes nothing.
    expect((await check(key, answer.body.data.id, code)).body.data).toMatchObject({ status: 'approved', valid: true })
    expect((await check(key, answer.body.data.id, wrongOf(code))).body.data).toMatchObject({ status: 'approved', valid: false })
    const events = await t.db.sql<{ payload: string }[]>`
      select payload from webhook_events where api_key_id = ${keyId} and event = 'verification.approved'`
    expect(events.map((e) => JSON.parse(e.payload).data)).toEqual([
      { verification_id: answer.body.data.id, to: international(to), template_id: otp.id, message_sid: sid },
    ])
    expect((await t.api('GET', `/verifications/${answer.body.data.id}`, key)).body.data).toMatchObject({ status: 'approved' })
  })

  test('a wrong code leaves it pending with an attempt fewer; then the right one approves it', async () => {
    const { key } = await account()
    const answer = await start(key, newNumber(), { template_id: otp.id })
    expect(answer.status).toBe(201)
    const code = lastCode()
    const wrong = await check(key, answer.body.data.id, wrongOf(code))
    expect({ status: wrong.status, data: wrong.body.data }).toMatchObject({
      status: 200,
      data: { status: 'pending', valid: false, attempts_left: 4 },
    })
    expect((await check(key, answer.body.data.id, code)).body.data).toMatchObject({ status: 'approved', valid: true, attempts_left: 4 })
  })

  test('expires with the clock: the right code after its lifetime answers expired', async () => {
    const { key } = await account()
    const answer = await start(key, newNumber())
    const code = lastCode()
    await clock.advance(600_000)
    expect((await t.api('GET', `/verifications/${answer.body.data.id}`, key)).body.data).toMatchObject({ status: 'expired' })
    expect((await check(key, answer.body.data.id, code)).body.data).toMatchObject({ status: 'expired', valid: false })
    expect((await check(key, answer.body.data.id, code)).body.data).toMatchObject({ status: 'expired', valid: false })
  })

  test('five wrong codes lock it: too_many_attempts, and the right code no longer approves it', async () => {
    const { key } = await account()
    const answer = await start(key, newNumber())
    const code = lastCode()
    const answers: string[] = []
    for (let i = 0; i < 5; i++) answers.push((await check(key, answer.body.data.id, wrongOf(code))).body.data.status)
    expect(answers).toEqual(['pending', 'pending', 'pending', 'pending', 'too_many_attempts'])
    expect((await check(key, answer.body.data.id, code)).body.data).toMatchObject({
      status: 'too_many_attempts',
      valid: false,
      attempts_left: 0,
    })
  })

  test('concurrent checks use an attempt each: a guesser gets no more than VERIFY_MAX_ATTEMPTS codes; the right code at once approves once', async () => {
    const { key, keyId } = await account()
    await t.api('POST', '/webhook', key, { url: 'http://127.0.0.1:9/hooks', events: ['verification.approved'] })
    const guessed = await start(key, newNumber())
    const code = lastCode()
    const guesses = await Promise.all(Array.from({ length: 12 }, () => check(key, guessed.body.data.id, wrongOf(code))))
    expect(guesses.filter((g) => g.body.data.status === 'pending')).toHaveLength(4)
    expect(guesses.filter((g) => g.body.data.status === 'too_many_attempts')).toHaveLength(8)
    expect((await check(key, guessed.body.data.id, code)).body.data).toMatchObject({ status: 'too_many_attempts', valid: false })

    const right = await start(key, newNumber())
    const rightCode = lastCode()
    const answers = await Promise.all(Array.from({ length: 6 }, () => check(key, right.body.data.id, rightCode)))
    expect(answers.map((a) => a.body.data.status)).toEqual(Array(6).fill('approved'))
    const events = await t.db.sql<{ payload: string }[]>`
      select payload from webhook_events where api_key_id = ${keyId} and event = 'verification.approved'`
    expect(events.map((e) => JSON.parse(e.payload).data.verification_id)).toEqual([right.body.data.id])
  })

  test("another account's verification is 404, checked or read, and its attempts are not used", async () => {
    const a = await account()
    const b = await account()
    const answer = await start(a.key, newNumber())
    const code = lastCode()
    for (const res of [
      await check(b.key, answer.body.data.id, code),
      await t.api('GET', `/verifications/${answer.body.data.id}`, b.key),
      await check(b.key, 987_654_321, code),
    ]) {
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
    }
    expect((await check(a.key, answer.body.data.id, code)).body.data).toMatchObject({ status: 'approved', attempts_left: 5 })
  })
})

describe('limits and refusals', () => {
  test('per number and per account: 429 with Retry-After, nothing sent or charged; the window passes with the clock', async () => {
    const { accountId, key } = await account()
    const to = newNumber()
    for (let i = 0; i < 3; i++) expect((await start(key, to)).status).toBe(201)
    graph.reset()
    const limited = await start(key, to)
    expect({ status: limited.status, code: limited.body.code }).toEqual({ status: 429, code: 'RATE_LIMITED' })
    expect(limited.body.error).toContain('nothing was sent or charged')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(600)
    expect(sent()).toEqual([])
    expect(await money(t, accountId)).toEqual({ balance: 97, ledgerSum: 97 })

    // Other numbers go, up to the account's 5 in the window.
    expect((await start(key, newNumber())).status).toBe(201)
    expect((await start(key, newNumber())).status).toBe(201)
    const account5 = await start(key, newNumber())
    expect({ status: account5.status, code: account5.body.code }).toEqual({ status: 429, code: 'RATE_LIMITED' })
    expect(account5.headers.get('retry-after')).toBeTruthy()

    // Another account is not limited by this one's.
    expect((await start((await account()).key, to)).status).toBe(201)

    await clock.advance(Number(limited.headers.get('retry-after')) * 1000)
    expect((await start(key, to)).status).toBe(201)
  })

  test('a number cannot be flooded through many accounts: VERIFY_PER_NUMBER_TOTAL across them, saying nothing of the others', async () => {
    // VERIFY_PER_NUMBER is 3 here, so the deployment's limit for one number is 9 (3 × 3), whoever starts them.
    const to = newNumber()
    const first = await account()
    for (let i = 0; i < 3; i++) expect((await start(first.key, to)).status).toBe(201)
    await clock.advance(60_000)
    const second = await account()
    for (let i = 0; i < 3; i++) expect((await start(second.key, to)).status).toBe(201)
    const third = await account()
    const answers = await Promise.all(Array.from({ length: 3 }, () => start(third.key, to)))
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201])

    // A fourth account, within its own limits, is refused for this number: nothing sent or charged.
    const fourth = await account()
    graph.reset()
    const limited = await start(fourth.key, to)
    expect({ status: limited.status, code: limited.body.code }).toEqual({ status: 429, code: 'RATE_LIMITED' })
    expect(limited.body.error).toContain('nothing was sent or charged')
    expect(limited.body.error).not.toMatch(/account/)
    // Until the first account's oldest start leaves the 600 s window.
    expect(Number(limited.headers.get('retry-after'))).toBe(600 - 60)
    expect(sent()).toEqual([])
    expect(await money(t, fourth.accountId)).toEqual({ balance: 100, ledgerSum: 100 })
    // Its other numbers go.
    expect((await start(fourth.key, newNumber())).status).toBe(201)

    await clock.advance(540_000)
    expect((await start(fourth.key, to)).status).toBe(201)
  })

  test('concurrent starts for one number cannot pass its limit together', async () => {
    const { accountId, key } = await account()
    const to = newNumber()
    const answers = await Promise.all(Array.from({ length: 5 }, () => start(key, to)))
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 429, 429])
    expect(sent()).toHaveLength(3)
    expect(await money(t, accountId)).toEqual({ balance: 97, ledgerSum: 97 })
  })

  test("concurrent starts from several accounts cannot pass the number's total together", async () => {
    const to = newNumber()
    const accounts = await Promise.all(Array.from({ length: 4 }, () => account()))
    graph.reset()
    const answers = await Promise.all(accounts.flatMap((a) => Array.from({ length: 3 }, () => start(a.key, to))))
    expect(answers.filter((a) => a.status === 201)).toHaveLength(9)
    expect(answers.filter((a) => a.status === 429)).toHaveLength(3)
    expect(sent()).toHaveLength(9)
    let charged = 0
    for (const a of accounts) charged += 100 - (await money(t, a.accountId)).balance
    expect(charged).toBe(9)
  })

  test('no approved authentication template, or one that cannot carry a code: 422 naming template_id, nothing charged', async () => {
    const sim = await createSender(t, 'simulator', { number: '+6281100000088', credentials: {} }, { recipient_gap_ms: 0 })
    const bare = await t.account(10)
    await assign(t, bare.accountId, sim)
    const none = await start(bare.key, newNumber())
    expect({ status: none.status, code: none.body.code }).toEqual({ status: 422, code: 'VALIDATION_ERROR' })
    expect(none.body.error).toStartWith('template_id: the account has no approved authentication template')

    const { accountId, key } = await account(10)
    const notAuth = await start(key, newNumber(), { template_id: marketing.id })
    expect({ status: notAuth.status, error: notAuth.body.error }).toEqual({
      status: 422,
      error: expect.stringContaining('is a marketing template; a verification goes with an authentication template'),
    })
    const notApproved = await start(key, newNumber(), { template_id: paused.id })
    expect({ status: notApproved.status, code: notApproved.body.code }).toEqual({ status: 422, code: 'TEMPLATE_NOT_APPROVED' })
    const unknown = await start(key, newNumber(), { template_id: 987_654_321 })
    expect({ status: unknown.status, error: unknown.body.error }).toEqual({
      status: 422,
      error: expect.stringContaining('template_id: 987654321 is not a WhatsApp template this account may use'),
    })
    const badNumber = await start(key, 'not a number')
    expect({ status: badNumber.status, error: badNumber.body.error }).toMatchObject({ status: 422, error: expect.stringMatching(/^to: /) })
    expect(sent()).toEqual([])
    expect(await money(t, accountId)).toEqual({ balance: 10, ledgerSum: 10 })
  })

  test('a send refused before its charge (no balance) does not count against the limits', async () => {
    const { accountId, key } = await account(0)
    const to = newNumber()
    for (let i = 0; i < 4; i++) {
      const answer = await start(key, to)
      expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 402, code: 'INSUFFICIENT_BALANCE' })
    }
    expect((await t.admin('POST', `/accounts/${accountId}/topups`, { amount: 10 })).status).toBe(201)
    expect((await start(key, to)).status).toBe(201)
  })
})

test("a queued verification's code is never readable on its message: masked from the charge, sealed for a recovered hand-off only", async () => {
  // The deployment's default sender, a provider named like Meta whose first hand-off hangs until released.
  const { provider, seen, first, release } = hangingProvider()
  const clock = new TestClock()
  const flight = inFlight()
  const r = await testApp({ provider, clock, wrapSql: flight.sql, env: { HANDOFF_CONCURRENCY: '2', PROVIDER_TIMEOUT_MS: '60000' } })
  try {
    const components = [AUTH_BODY, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'COPY_CODE', text: 'Copy code' }] }]
    const name = 'otp_recovered'
    await r.db.sql.begin((tx) =>
      insertTemplate(
        tx,
        r.deps.clock,
        {
          name,
          language: 'en_US',
          category: 'authentication',
          parameterFormat: 'positional',
          components,
          senderId: null,
          provider: 'meta',
          status: 'approved',
        },
        'sync',
      ),
    )
    const a = await r.account(10)
    const answer = r.api('POST', '/verifications', a.key, { to: '081250000071' })
    await first
    const code = String((seen[0]!.template!.components![0] as any).parameters[0].text)
    expect(code).toMatch(/^\d{6}$/)
    // Charged and handed over, not yet taken: what the row keeps, what the account's API and dashboard show, has no code.
    const [row] = await r.db.sql<{ id: number; body: string; provider_template: any }[]>`
      select id, body, provider_template from messages where account_id = ${a.accountId}`
    expect(row!.body).toBe('*••••••* is your verification code.')
    expect(row!.provider_template).toMatchObject({
      variables: ['••••••'],
      components: [
        { type: 'body', parameters: [{ type: 'text', text: '••••••' }] },
        { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: '••••••' }] },
      ],
      sealedSecret: expect.stringMatching(/^v1\./),
    })
    expect(JSON.stringify(row)).not.toContain(code)
    // Its lease runs out while the hand-off hangs: recovery takes it over from the row and the provider gets the code.
    r.deps.handoff.stop()
    await clock.advance(2 * r.config.handoffLeaseSeconds * 1000 + 1_000)
    expect(await clock.run(r.runWorker('handoff-recovery'), undefined, flight.idle)).toBe(1)
    release()
    await clock.run(answer, undefined, flight.idle)
    expect(seen).toHaveLength(2)
    expect(seen[1]!.template).toEqual(seen[0]!.template)
    expect(seen[1]!.body).toBe(`*${code}* is your verification code.`)
    // Sent: the sealed copy is gone, the mask stays.
    const [after] = await r.db.sql<{ status: string; message_sid: string; body: string; provider_template: any }[]>`
      select status, message_sid, body, provider_template from messages where id = ${row!.id}`
    expect(after!.status).toBe('sent')
    expect(after!.provider_template.sealedSecret).toBeUndefined()
    expect(JSON.stringify(after)).not.toContain(code)
    // The account's API and its dashboard page of the message show it masked.
    const member = await dashboardUser(r, 'otp-member@example.com', 'a long enough password 1', a.accountId)
    const page = await member.client.get(`/dashboard/messages/${row!.id}`)
    const one = await r.api('GET', `/messages/${after!.message_sid}`, a.key)
    expect(one.body.data).toMatchObject({ body: '*••••••* is your verification code.', provider_template: { variables: ['••••••'] } })
    for (const shown of [JSON.stringify(one.body), JSON.stringify((await r.api('GET', '/messages', a.key)).body), page.text]) {
      expect(shown).not.toContain(code)
      expect(shown).not.toContain('sealedSecret')
    }
  } finally {
    release()
    await r.close()
  }
}, 60_000)
