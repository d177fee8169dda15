// The senders in the dashboard through app.handle: the operator's Senders page (guards, create with
// its provider's credential fields, field errors, check against a local fake of Twilio, disable and
// enable, change), an account's senders on its page (assign, make default, unassign), what members see
// on their overview, the campaign form's sender and the messages page's sender filter. Every change is
// audited, and a credential's value never shows in a page, a flash, the audit log or a log line.

import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { testApp, type TestApp } from '../helpers/app'
import { fakeTwilioAccount, type FakeTwilioAccount } from '../helpers/fake-twilio-account'
import { dashboardUser, webClient, type Page } from '../helpers/web'

let t: TestApp
let twilio: FakeTwilioAccount
const PASSWORD = 'correct horse battery'
const SID = 'AC0123456789abcdef0123456789abcdef'
const TOKEN = 'tok-SECRET-9f8e7d6c5b4a39281706f5e4d3c2b1a0'
const NEW_TOKEN = 'tok-ROTATED-00112233445566778899aabbccddeeff'
const PUBLIC = 'https://wa.example.com'
type Client = Awaited<ReturnType<typeof dashboardUser>>['client']

let n = 0
const email = (what: string) => `${what}-${++n}@example.com`
let number = 6281200000000
const nextNumber = () => `+${++number}`
const operator = async () => (await dashboardUser(t, email('op'), PASSWORD)).client
const auditOf = async (senderId: number) =>
  t.db.sql<{ action: string; actor: string; account_id: number | null; detail: unknown }[]>`
    select action, actor, account_id, detail from audit_log where detail->>'sender_id' = ${String(senderId)} order by id`
/** The id a create's redirect leads to. */
const createdId = (page: Page) => Number(/^\/dashboard\/senders\/(\d+)$/.exec(page.location ?? '')?.[1])

async function createSender(op: Client, form: Record<string, string>): Promise<Page> {
  const page = await op.get('/dashboard/senders')
  return op.post('/dashboard/senders', { _csrf: page.csrf!, ...form })
}

beforeAll(async () => {
  twilio = fakeTwilioAccount()
  twilio.tokens.set(SID, TOKEN)
  // The template sync after a check lists the fake's Content templates (none), never Twilio's own.
  t = await testApp({
    env: { TWILIO_API_BASE: twilio.url, TWILIO_CONTENT_API_BASE: twilio.url, META_API_BASE: twilio.url, PUBLIC_BASE_URL: PUBLIC },
  })
})
afterAll(async () => {
  await t.close()
  twilio.stop()
})

describe('guards', () => {
  test('signed out: the senders pages and their changes redirect to the sign-in page', async () => {
    const anon = webClient(t)
    for (const path of ['/dashboard/senders', '/dashboard/senders/1']) {
      expect({ path, location: (await anon.get(path)).location }).toEqual({ path, location: '/dashboard/sign-in' })
    }
    for (const path of [
      '/dashboard/senders',
      '/dashboard/senders/1',
      '/dashboard/senders/1/check',
      '/dashboard/senders/1/disable',
      '/dashboard/accounts/1/senders',
      '/dashboard/accounts/1/senders/1/default',
      '/dashboard/accounts/1/senders/1/unassign',
    ]) {
      expect({ path, location: (await anon.post(path, { _csrf: 'x' })).location }).toEqual({ path, location: '/dashboard/sign-in' })
    }
  })

  test('members: the senders pages and the account senders changes are 404, and change nothing; operators have them in the navigation', async () => {
    const own = await t.account(0)
    const op = await operator()
    const made = await createSender(op, { provider: 'simulator', name: 'Guarded', number: nextNumber() })
    const id = createdId(made)
    const member = (await dashboardUser(t, email('member'), PASSWORD, own.accountId)).client
    const home = await member.get('/dashboard')
    expect(home.text).not.toContain('href="/dashboard/senders"')
    for (const path of ['/dashboard/senders', `/dashboard/senders/${id}`]) {
      expect({ path, status: (await member.get(path)).status }).toEqual({ path, status: 404 })
    }
    for (const path of [
      '/dashboard/senders',
      `/dashboard/senders/${id}`,
      `/dashboard/senders/${id}/check`,
      `/dashboard/senders/${id}/disable`,
      `/dashboard/accounts/${own.accountId}/senders`,
      `/dashboard/accounts/${own.accountId}/senders/${id}/default`,
    ]) {
      const page = await member.post(path, {
        _csrf: home.csrf!,
        provider: 'simulator',
        name: 'x',
        number: nextNumber(),
        sender_id: String(id),
      })
      expect({ path, status: page.status }).toEqual({ path, status: 404 })
    }
    expect((await t.api('GET', '/senders', own.key)).body.data).toEqual([])
    expect((await t.admin('GET', `/senders/${id}`)).body.data).toMatchObject({ name: 'Guarded', disabled: false, last_check: null })
    // A change without the page's CSRF token is refused, even an operator's.
    expect((await op.post(`/dashboard/senders/${id}/disable`, { _csrf: 'wrong' })).status).toBe(403)
    const list = await op.get('/dashboard/senders')
    expect(list.text).toContain('<a href="/dashboard/senders">Senders</a>')
    expect((await op.get('/dashboard/senders/99999999')).status).toBe(404)
    expect((await op.get('/dashboard/senders/abc')).status).toBe(404)
  })
})

describe("the operator's senders", () => {
  test('a simulator sender: created once (a form sent again is refused), listed with its pace, accounts and check', async () => {
    const op = await operator()
    const phone = nextNumber()
    let page = await op.get('/dashboard/senders')
    const token = await op.formToken('/dashboard/senders')
    const form = { _csrf: page.csrf!, _once: token!, provider: 'simulator', name: 'Toko <b>Maju</b>', number: phone, rate_per_second: '5' }
    const made = await op.post('/dashboard/senders', form)
    expect(made.status).toBe(303)
    const id = createdId(made)
    page = await op.follow(made)
    expect(page.text).toContain('<h1>Sender Toko &lt;b&gt;Maju&lt;/b&gt;</h1>')
    expect(page.text).toContain(`Sender Toko &lt;b&gt;Maju&lt;/b&gt; (${phone}, simulator) created.`)
    const again = await op.post('/dashboard/senders', form)
    expect(again.location).toBe('/dashboard/senders')
    expect((await op.follow(again)).text).toContain('This form was sent already')
    const [{ count }] = await t.db.sql<[{ count: number }]>`select count(*)::int as count from senders where number = ${phone}`
    expect(count).toBe(1)

    const list = await op.get('/dashboard/senders')
    const row = list.text.slice(list.text.indexOf(`href="/dashboard/senders/${id}"`))
    expect(row).toContain('5/s, gap 0 ms')
    expect(row).toContain('not checked yet')
    // Checked with its provider (the simulator takes every sender): the answer shows on the list it came from.
    const checked = await op.post(`/dashboard/senders/${id}/check`, { _csrf: list.csrf!, back: 'list' })
    expect(checked.location).toBe('/dashboard/senders')
    const after = await op.follow(checked)
    expect(after.text).toContain('Sender Toko &lt;b&gt;Maju&lt;/b&gt; checked: ok. the simulator takes every sender.')
    expect(after.text).toMatch(/<span class="status status-ok">ok<\/span> the simulator takes every sender/)
    expect((await auditOf(id)).map((a) => a.action)).toEqual(['sender created', 'sender checked'])
  })

  test('field errors: each at its field, what was typed kept but never a secret; a taken number at the number', async () => {
    const op = await operator()
    const phone = nextNumber()
    const form = { provider: 'twilio', name: 'Toko Twilio', number: phone, twilio_account_sid: 'AC123', twilio_auth_token: TOKEN }
    let page = await createSender(op, form)
    expect(page.status).toBe(422)
    expect(page.text).toContain('credentials.account_sid: must be an account SID')
    expect(page.text).toContain('id="sender-twilio_account_sid" name="twilio_account_sid" aria-invalid="true"')
    expect(page.text).toContain('value="AC123"')
    expect(page.text).toContain('<option value="twilio" selected>')
    expect(page.text).not.toContain(TOKEN)
    page = await createSender(op, { ...form, twilio_account_sid: SID, twilio_auth_token: '' })
    expect(page.status).toBe(422)
    expect(page.text).toContain('aria-invalid="true" aria-describedby="sender-twilio_auth_token-hint sender-twilio_auth_token-error"')
    page = await createSender(op, { ...form, twilio_account_sid: SID, number: '0812' })
    expect(page.status).toBe(422)
    expect(page.text).toMatch(/id="sender-number" name="number" aria-invalid="true"/)
    expect(page.text).not.toContain(TOKEN)
    page = await createSender(op, { ...form, twilio_account_sid: SID, rate_per_second: '0' })
    expect(page.status).toBe(422)
    expect(page.text).toMatch(/id="sender-rate_per_second" name="rate_per_second" aria-invalid="true"/)
    page = await createSender(op, { ...form, twilio_account_sid: SID, recipient_gap_ms: '-1' })
    expect(page.status).toBe(422)
    expect(page.text).toMatch(/id="sender-recipient_gap_ms" name="recipient_gap_ms" aria-invalid="true"/)
    page = await createSender(op, { ...form, provider: 'carrier-pigeon' })
    expect(page.status).toBe(422)
    expect(page.text).toContain('provider: must be one of simulator, twilio, meta')
    // A Meta field typed while Twilio is chosen is not Twilio's: the service reads the chosen provider's only.
    expect((await createSender(op, { ...form, twilio_account_sid: SID, meta_access_token: 'meta-secret' })).status).toBe(303)
    page = await createSender(op, { ...form, twilio_account_sid: SID })
    expect(page.status).toBe(409)
    expect(page.text).toMatch(/id="sender-number" name="number" aria-invalid="true"/)
    expect(page.text).toContain(`a twilio sender with number ${phone} exists already`)
    expect(page.text).not.toContain(TOKEN)
  })

  test('a Twilio sender: its secret is never shown (pages, flashes, audit log, log lines); checked against the fake Twilio; changed, disabled and enabled', async () => {
    const lines: string[] = []
    const log = spyOn(console, 'log').mockImplementation((...args: unknown[]) => void lines.push(args.join(' ')))
    const error = spyOn(console, 'error').mockImplementation((...args: unknown[]) => void lines.push(args.join(' ')))
    try {
      const op = await operator()
      const phone = nextNumber()
      const made = await createSender(op, {
        provider: 'twilio',
        name: 'Toko Twilio',
        number: phone,
        twilio_account_sid: SID,
        twilio_auth_token: TOKEN,
        recipient_gap_ms: '6,000',
      })
      expect(made.status).toBe(303)
      const id = createdId(made)
      const pages: Page[] = [await op.follow(made)]
      expect(pages[0]!.text).toContain('<dd id="credentials-set">account_sid, auth_token</dd>')
      expect(pages[0]!.text).toContain(`<code>${SID}</code>`)
      // What to paste into Twilio's console, from PUBLIC_BASE_URL, each with a copy button.
      expect(pages[0]!.text).toContain('<h2 id="connect">Connect in the provider&#39;s console</h2>')
      expect(pages[0]!.text).toContain(`<code id="connect-inbound">${PUBLIC}/provider/twilio/inbound</code>`)
      expect(pages[0]!.text).toContain(`<code id="connect-status">${PUBLIC}/provider/twilio/status</code>`)
      expect(pages[0]!.text).toContain('data-copy="connect-inbound"')
      expect(pages[0]!.text).not.toContain('which the provider cannot reach')

      let page = await op.post(`/dashboard/senders/${id}/check`, { _csrf: pages[0]!.csrf! })
      page = await op.follow(page)
      pages.push(page)
      expect(twilio.requests.at(-1)).toEqual({ sid: SID, authorised: true })
      expect(page.text).toContain('Sender Toko Twilio checked: ok. Twilio account &quot;Toko Maju&quot; is active.')
      expect(page.text).toMatch(
        /<dd id="last-check"><span class="status status-ok">ok<\/span> Twilio account &quot;Toko Maju&quot; is active/,
      )

      // Changed: its name, its rate (the gap back to the provider's) and its auth token; a bad rate first.
      page = await op.post(`/dashboard/senders/${id}`, { _csrf: page.csrf!, name: 'Toko Twilio', rate_per_second: 'fast' })
      expect(page.status).toBe(422)
      expect(page.text).toMatch(/id="edit-rate_per_second" name="rate_per_second" aria-invalid="true"/)
      pages.push(page)
      page = await op.post(`/dashboard/senders/${id}`, {
        _csrf: page.csrf!,
        name: 'Toko Twilio Baru',
        rate_per_second: '12.5',
        recipient_gap_ms: '',
        twilio_account_sid: '',
        twilio_auth_token: NEW_TOKEN,
      })
      expect(page.location).toBe(`/dashboard/senders/${id}`)
      page = await op.follow(page)
      pages.push(page)
      expect(page.text).toContain('Sender Toko Twilio Baru saved: its name, its rate, its recipient gap, its auth_token changed.')
      expect(page.text).toContain('<dd>12.5/s, gap 6,000 ms</dd>')
      expect(page.text).not.toContain(NEW_TOKEN)
      page = await op.follow(
        await op.post(`/dashboard/senders/${id}`, { _csrf: page.csrf!, name: 'Toko Twilio Baru', rate_per_second: '12.5' }),
      )
      expect(page.text).toContain('Nothing to change: the sender is as it was.')
      // Twilio does not take the new token yet: the check fails, saying what Twilio answered.
      page = await op.follow(await op.post(`/dashboard/senders/${id}/check`, { _csrf: page.csrf! }))
      pages.push(page)
      expect(twilio.requests.at(-1)).toEqual({ sid: SID, authorised: false })
      // What is wrong and where to get the right one first, Twilio's words after it (issue 33).
      const fix =
        'the Account SID or Auth Token is wrong: copy both again from console.twilio.com → Account info (a subaccount: from its own page) ' +
        'and save them on this sender (Twilio answered HTTP 401 (code 20003): Authenticate)'
      expect(page.text).toContain(`<p class="notice error" role="alert">Sender Toko Twilio Baru checked: failed. ${fix}.</p>`)
      expect(page.text).toContain(`<span class="status status-failed">failed</span> ${fix}`)
      twilio.tokens.set(SID, NEW_TOKEN)
      page = await op.follow(await op.post(`/dashboard/senders/${id}/check`, { _csrf: page.csrf! }))
      expect(page.text).toContain('checked: ok.')

      page = await op.follow(await op.post(`/dashboard/senders/${id}/disable`, { _csrf: page.csrf! }))
      expect(page.text).toContain('<dd id="sender-state">disabled: new sends through it are refused</dd>')
      expect(page.text).toContain('aria-label="Enable sender Toko Twilio Baru"')
      page = await op.follow(await op.post(`/dashboard/senders/${id}/enable`, { _csrf: page.csrf!, back: 'list' }))
      expect(page.text).toContain('<h1>Senders</h1>')
      expect(page.text).toContain('Sender Toko Twilio Baru enabled: it sends again.')
      const auditPage = await op.get('/dashboard/audit')
      expect(auditPage.text).toContain('sender changed')
      pages.push(page, auditPage, await op.get(`/dashboard/senders/${id}`))

      const audit = await auditOf(id)
      expect(audit.map((a) => a.action)).toEqual([
        'sender created',
        'sender checked',
        'sender changed',
        'sender checked',
        'sender checked',
        'sender disabled',
        'sender enabled',
      ])
      expect(new Set(audit.map((a) => a.actor))).toEqual(new Set([expect.stringMatching(/^op-\d+@example.com$/)]))
      // Whatever was logged (app.handle writes no request lines: the browser test reads those) holds no credential.
      for (const secret of [TOKEN, NEW_TOKEN]) {
        for (const p of pages) expect(p.text).not.toContain(secret)
        expect(JSON.stringify(audit)).not.toContain(secret)
        expect(lines.join('\n')).not.toContain(secret)
        const [stored] = await t.db.sql<[{ n: number }]>`select count(*)::int as n from senders where credentials like ${`%${secret}%`}`
        expect(stored.n).toBe(0)
      }
    } finally {
      log.mockRestore()
      error.mockRestore()
    }
  })
})

describe("a sender's connection in its provider's console", () => {
  test('a Meta sender: the callback URL, its verify token to operators on demand, the fields to subscribe; never the app secret', async () => {
    const op = await operator()
    const appSecret = 'app-SECRET-0a1b2c3d4e5f60718293a4b5c6d7e8f9'
    const verifyToken = 'verify-me-7f6e5d4c3b2a1908'
    const made = await createSender(op, {
      provider: 'meta',
      name: 'Toko Meta',
      number: nextNumber(),
      meta_access_token: 'EAAtokenSECRET0123456789abcdefghij',
      meta_phone_number_id: '109876543210987',
      meta_app_secret: appSecret,
      meta_business_account_id: '209876543210987',
      meta_verify_token: verifyToken,
    })
    expect(made.status).toBe(303)
    const page = await op.follow(made)
    expect(page.text).toContain(`<code id="connect-callback">${PUBLIC}/provider/meta/webhook</code>`)
    // Behind a disclosure: not on the screen until asked for.
    expect(page.text).toContain(
      `<details><summary>Show the verify token (this sender&#39;s own)</summary><div class="paste"><code id="connect-verify-token">${verifyToken}</code>`,
    )
    for (const name of [
      'messages',
      'user_preferences',
      'message_template_status_update',
      'template_category_update',
      'message_template_quality_update',
      'business_capability_update',
      'account_update',
      'phone_number_quality_update',
    ])
      expect(page.text).toContain(`<li><code>${name}</code></li>`)
    expect(page.text).not.toContain(appSecret)
    expect(page.text).not.toContain('EAAtokenSECRET')
    // Meta's handshake takes what the page shows.
    const challenge = await t.app.handle(
      new Request(`http://localhost/provider/meta/webhook?hub.mode=subscribe&hub.verify_token=${verifyToken}&hub.challenge=42`),
    )
    expect([challenge.status, await challenge.text()]).toEqual([200, '42'])
  })

  test('members never see a sender page; a simulator sender has nothing to connect', async () => {
    const op = await operator()
    const made = await createSender(op, { provider: 'simulator', name: 'Toko Sim', number: nextNumber() })
    const page = await op.follow(made)
    expect(page.text).not.toContain('id="connect"')
  })
})

describe("an account's senders", () => {
  test('assigned on its account page (the first is the default), made default, unassigned; its members see them without credentials', async () => {
    const own = await t.account(10_000)
    const op = await operator()
    const a = createdId(await createSender(op, { provider: 'simulator', name: 'Toko Satu', number: nextNumber() }))
    const b = createdId(
      await createSender(op, {
        provider: 'twilio',
        name: 'Toko Dua',
        number: nextNumber(),
        twilio_account_sid: SID,
        twilio_auth_token: TOKEN,
      }),
    )
    const accountPath = `/dashboard/accounts/${own.accountId}`
    let page = await op.get(accountPath)
    expect(page.text).toContain('No senders: this account sends from the service&#39;s own number.')
    expect(page.text).toContain('<input type="checkbox" name="default" id="assign-default" checked>')
    page = await op.follow(await op.post(`${accountPath}/senders`, { _csrf: page.csrf!, sender_id: String(a) }))
    expect(page.text).toContain('Sender Toko Satu (')
    expect(page.text).toContain(') assigned: it is this account&#39;s default now.')
    page = await op.follow(await op.post(`${accountPath}/senders`, { _csrf: page.csrf!, sender_id: String(b) }))
    expect(page.text).toMatch(/Sender Toko Dua \(\+\d+\) assigned\./)
    expect((await t.api('GET', '/senders', own.key)).body.data.map((s: any) => [s.id, s.default])).toEqual([
      [a, true],
      [b, false],
    ])
    expect(page.text).toContain(`aria-label="Make default: Toko Dua (`)
    page = await op.follow(await op.post(`${accountPath}/senders/${b}/default`, { _csrf: page.csrf! }))
    expect(page.text).toMatch(/Sender Toko Dua \(\+\d+\) is this account&#39;s default now/)
    expect((await t.api('GET', '/senders', own.key)).body.data[0]).toMatchObject({ id: b, default: true })

    // The member's overview: its senders, the default marked, a disabled one said so; no credential, no SID.
    await t.admin('POST', `/senders/${a}/disable`)
    const member = (await dashboardUser(t, email('member'), PASSWORD, own.accountId)).client
    const overview = await member.get('/dashboard')
    const section = overview.text.slice(overview.text.indexOf('<h2 id="senders-title">'))
    expect(section).toContain('Toko Dua')
    expect(section).toMatch(/<td data-label="Default">default<\/td>/)
    expect(section).toContain('<span class="status status-failed">disabled</span>')
    expect(overview.text).not.toContain(TOKEN)
    expect(overview.text).not.toContain(SID)
    await t.admin('POST', `/senders/${a}/enable`)

    // Unassigning the default: the oldest other one becomes it; the last one: the service's own number again.
    page = await op.follow(await op.post(`${accountPath}/senders/${b}/unassign`, { _csrf: page.csrf! }))
    expect(page.text).toMatch(/Sender Toko Dua \(\+\d+\) unassigned: this account&#39;s default is Toko Satu/)
    page = await op.follow(await op.post(`${accountPath}/senders/${a}/unassign`, { _csrf: page.csrf! }))
    expect(page.text).toContain('this account sends from the service&#39;s own number again.')
    expect((await member.get('/dashboard')).text).not.toContain('id="senders-title"')
    // Tampering: a sender that is not the account's cannot become its default; an unknown account is 404.
    page = await op.follow(await op.post(`${accountPath}/senders/${a}/default`, { _csrf: page.csrf! }))
    expect(page.text).toContain('that sender is not this account&#39;s')
    expect((await op.post(`${accountPath}/senders/999999/unassign`, { _csrf: page.csrf! })).status).toBe(303)
    expect((await op.post('/dashboard/accounts/99999999/senders', { _csrf: page.csrf!, sender_id: String(a) })).status).toBe(404)
    expect((await t.api('GET', '/senders', own.key)).body.data).toEqual([])

    const rows = await t.db.sql<{ action: string; account_id: number }[]>`
      select action, account_id from audit_log where account_id = ${own.accountId} and action like 'sender%' order by id`
    expect(rows.map((r) => r.action)).toEqual([
      'sender assigned',
      'sender assigned',
      'sender assigned',
      'sender unassigned',
      'sender unassigned',
    ])
  })

  test("the campaign form offers the account's senders, its default chosen; a disabled or foreign one is refused at its field", async () => {
    const own = await t.account(10_000)
    const other = await t.account(0)
    const op = await operator()
    const a = createdId(await createSender(op, { provider: 'simulator', name: 'Kampanye A', number: nextNumber() }))
    const b = createdId(await createSender(op, { provider: 'simulator', name: 'Kampanye B', number: nextNumber() }))
    const foreign = createdId(await createSender(op, { provider: 'simulator', name: 'Not yours', number: nextNumber() }))
    await t.admin('PUT', `/accounts/${own.accountId}/senders/${a}`)
    await t.admin('PUT', `/accounts/${own.accountId}/senders/${b}`, { default: true })
    await t.admin('PUT', `/accounts/${other.accountId}/senders/${foreign}`)
    const template = await t.admin('POST', `/accounts/${own.accountId}/templates`, { name: 'Hi', body: 'Hi {{name}}' })
    const segment = await t.admin('POST', `/accounts/${own.accountId}/segments`, { name: 'All', tag: 'all' })
    const member = (await dashboardUser(t, email('member'), PASSWORD, own.accountId)).client
    let page = await member.get('/dashboard/campaigns')
    expect(page.text).toMatch(new RegExp(`<option value="${b}" selected>Kampanye B \\(\\+\\d+, simulator\\), default</option>`))
    expect(page.text).toMatch(new RegExp(`<option value="${a}">Kampanye A`))
    expect(page.text).not.toContain('Not yours')
    const form = { name: 'Promo', template_id: String(template.body.data.id), segment_id: String(segment.body.data.id) }
    const create = async (extra: Record<string, string>) => {
      const at = await member.get('/dashboard/campaigns')
      return member.post('/dashboard/campaigns', { _csrf: at.csrf!, ...form, ...extra })
    }
    page = await create({ sender_id: String(foreign) })
    expect(page.status).toBe(422)
    expect(page.text).toMatch(/id="campaign-sender_id" name="sender_id" aria-invalid="true"/)
    expect(page.text).toContain('is not one of this account&#39;s senders')
    await t.admin('POST', `/senders/${a}/disable`)
    page = await create({ sender_id: String(a) })
    expect(page.status).toBe(422)
    expect(page.text).toContain(`sender_id: sender ${a} (`)
    expect(page.text).toMatch(new RegExp(`<option value="${a}" selected>Kampanye A \\(\\+\\d+, simulator\\), disabled</option>`))
    await t.admin('POST', `/senders/${a}/enable`)
    const chosen = await create({ sender_id: String(a) })
    expect(chosen.status).toBe(303)
    page = await member.follow(chosen)
    expect(page.text).toMatch(/<dd id="campaign-sender">Kampanye A \(\+\d+\)<\/dd>/)
    // Without a choice (a form of before), the account's default.
    expect((await create({})).status).toBe(303)
    const campaigns = await t.db.sql<
      { sender_id: number | null }[]
    >`select sender_id from campaigns where account_id = ${own.accountId} order by id`
    expect(campaigns.map((c) => c.sender_id)).toEqual([a, b])
    const audit = await t.db.sql<{ detail: any }[]>`
      select detail from audit_log where account_id = ${own.accountId} and action = 'campaign created' order by id`
    expect(audit.map((r) => (typeof r.detail === 'string' ? JSON.parse(r.detail) : r.detail).sender_id)).toEqual([a, b])

    // An account without senders: no choice, the service's own number.
    const bare = await t.account(0)
    await t.admin('POST', `/accounts/${bare.accountId}/templates`, { name: 'Hi', body: 'Hi' })
    await t.admin('POST', `/accounts/${bare.accountId}/segments`, { name: 'All', tag: 'all' })
    const opPage = await op.get(`/dashboard/accounts/${bare.accountId}/campaigns`)
    expect(opPage.text).toContain('name="segment_id"')
    expect(opPage.text).not.toContain('name="sender_id"')
  })

  test('the messages page filters by sender (0: the service’s own number) when the account has senders; a message names its sender', async () => {
    const own = await t.account(10_000)
    const bare = await t.account(10_000)
    const op = await operator()
    const a = createdId(await createSender(op, { provider: 'simulator', name: 'Pesan A', number: nextNumber() }))
    const send = async (key: string, to: string, from?: string) => {
      const sent = await t.api('POST', '/messages/send', key, { to, body: 'hello', ...(from ? { from } : {}) })
      expect(sent.status).toBe(200)
    }
    await send(own.key, '081200000001')
    await t.admin('PUT', `/accounts/${own.accountId}/senders/${a}`)
    await send(own.key, '081200000002')
    await send(own.key, '081200000003', String(a))
    await send(bare.key, '081200000004')
    const member = (await dashboardUser(t, email('member'), PASSWORD, own.accountId)).client
    let page = await member.get('/dashboard/messages')
    expect(page.text).toContain('<select name="sender_id">')
    expect(page.text).toContain('<td data-label="From" class="wide">the service&#39;s own number</td>')
    expect(page.text).toMatch(/<td data-label="From" class="wide">Pesan A \(\+\d+\)<\/td>/)
    page = await member.get(`/dashboard/messages?sender_id=${a}`)
    expect(page.text).toContain('2 messages')
    expect(page.text).toContain(`<option value="${a}" selected>`)
    expect(page.text).not.toContain('+6281200000001')
    page = await member.get('/dashboard/messages?sender_id=0')
    expect(page.text).toContain('1 message<')
    expect(page.text).toContain('+6281200000001')
    page = await member.get('/dashboard/messages?sender_id=x')
    expect(page.status).toBe(422)
    expect(page.text).toContain('sender_id: a sender id')
    const [{ id }] = await t.db.sql<[{ id: number }]>`select id from messages where phone = '+6281200000003'`
    page = await member.get(`/dashboard/messages/${id}`)
    expect(page.text).toMatch(/<dd id="message-sender">Pesan A \(\+\d+\)<\/dd>/)
    const [{ id: first }] = await t.db.sql<[{ id: number }]>`select id from messages where phone = '+6281200000001'`
    expect((await member.get(`/dashboard/messages/${first}`)).text).toContain('<dd id="message-sender">the service&#39;s own number</dd>')
    // An account without senders: no filter, no column.
    const bareView = await op.get(`/dashboard/accounts/${bare.accountId}/messages`)
    expect(bareView.text).not.toContain('name="sender_id"')
    expect(bareView.text).not.toContain('data-label="From"')
  })
})

describe("a sender's page in the deployment's time zone", () => {
  test("its templates' last sync is shown in TIMEZONE (Asia/Jakarta), as every time on it, not in UTC", async () => {
    const clock = new TestClock(new Date('2026-12-02T19:48:38Z'))
    // An account of its own at the fake Twilio: the tests above rotate SID's token.
    const sid = 'AC00000000000000000000000000000a7a'
    twilio.tokens.set(sid, TOKEN)
    const jakarta = await testApp({
      clock,
      env: { TIMEZONE: 'Asia/Jakarta', TWILIO_API_BASE: twilio.url, TWILIO_CONTENT_API_BASE: twilio.url, PUBLIC_BASE_URL: PUBLIC },
    })
    try {
      const op = (await dashboardUser(jakarta, 'tz-op@example.com', PASSWORD)).client
      const form = await op.get('/dashboard/senders')
      const made = await op.post('/dashboard/senders', {
        _csrf: form.csrf!,
        provider: 'twilio',
        name: 'Toko Jam',
        number: nextNumber(),
        twilio_account_sid: sid,
        twilio_auth_token: TOKEN,
      })
      expect(made.status).toBe(303)
      const page = await op.get(made.location!)
      // 19:48:38 UTC is 02:48:38 the next day in Jakarta (UTC+7).
      expect(page.text).toContain('<span class="status">ok</span> 2026-12-03 02:48:38 (when it was created)')
      expect(page.text).not.toContain('2026-12-02 19:48:38')
    } finally {
      await jakarta.close()
    }
  })
})
