// The dashboard's rules through app.handle: who sees which page, sessions and their cookie, CSRF,
// throttling, escaping, and that changes are recorded (ledger author, audit log).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { dashboardUser, webClient } from '../helpers/web'
import { TestClock } from '../../src/lib/clock'

const clock = new TestClock()
let t: TestApp
const PASSWORD = 'correct horse battery'
beforeAll(async () => {
  t = await testApp({ clock })
})
afterAll(() => t.close())

const GUARDED = ['/dashboard', '/dashboard/keys', '/dashboard/accounts', '/dashboard/accounts/1']

describe('signed out', () => {
  test('every page redirects to the sign-in page; every change is refused the same way', async () => {
    const anon = webClient(t)
    for (const path of GUARDED) {
      const page = await anon.get(path)
      expect({ path, status: page.status, location: page.location }).toEqual({ path, status: 303, location: '/dashboard/sign-in' })
    }
    for (const path of ['/dashboard/keys', '/dashboard/accounts', '/dashboard/accounts/1/topups', '/dashboard/sign-out']) {
      const page = await anon.post(path, { _csrf: 'x' })
      expect({ path, status: page.status, location: page.location }).toEqual({ path, status: 303, location: '/dashboard/sign-in' })
    }
  })

  test('the sign-in page and the stylesheet are public; pages carry the security headers', async () => {
    const page = await webClient(t).get('/dashboard/sign-in')
    expect(page.status).toBe(200)
    expect(page.text).toContain('<h1>Sign in</h1>')
    expect(page.text).toMatch(/<label>E-mail<input type="email"/)
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(page.headers.get('cache-control')).toBe('no-store')
    expect(page.headers.get('referrer-policy')).toBe('same-origin')
    expect(page.headers.get('x-content-type-options')).toBe('nosniff')
    const css = await webClient(t).get('/dashboard/assets/style.css')
    expect(css.status).toBe(200)
    expect(css.headers.get('content-type')).toContain('text/css')
  })

  test('an unknown dashboard path is a page, not the API envelope', async () => {
    const page = await webClient(t).get('/dashboard/no-such-page')
    expect(page.status).toBe(404)
    expect(page.headers.get('content-type')).toContain('text/html')
    expect(page.text).toContain('<h1>Not found</h1>')
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
  })

  test('over plain HTTP on a non-loopback address the sign-in page says HTTPS is needed', async () => {
    const response = await t.app.handle(new Request('http://dashboard.example.com/dashboard/sign-in'))
    expect(await response.text()).toContain('open the dashboard through https://')
    const local = await t.app.handle(new Request('http://localhost/dashboard/sign-in'))
    expect(await local.text()).not.toContain('open the dashboard through https://')
  })
})

describe('operators and members', () => {
  test('the first operator: a one-time link sets the password and signs in with a __Host- session cookie', async () => {
    const made = await t.admin('POST', '/operators', { email: 'Ops@Example.com' })
    expect(made.status).toBe(201)
    expect(made.body.data).toMatchObject({ email: 'ops@example.com', role: 'operator', account_id: null })
    expect(made.body.data.link).toMatch(/\/dashboard\/link\/[A-Za-z0-9]{43}$/)
    expect((await t.admin('POST', '/operators', { email: 'ops@example.com' })).status).toBe(409)
    // Only the link's hash is stored.
    const token = made.body.data.link.split('/').pop()
    const [stored] = await t.db.sql`select count(*)::int as n from user_links where token_hash = ${token}`
    expect(stored!.n).toBe(0)

    const browser = webClient(t)
    const form = await browser.get(new URL(made.body.data.link).pathname)
    expect(form.text).toContain('ops@example.com')
    expect((await browser.useLink(made.body.data.link, 'too short')).status).toBe(422)
    const set = await browser.useLink(made.body.data.link, PASSWORD)
    expect(set.status).toBe(303)
    const cookie = set.headers.getSetCookie().find((c) => c.startsWith('__Host-session='))!
    expect(cookie).toMatch(/^__Host-session=[A-Za-z0-9]{43}; Path=\/; HttpOnly; Secure; SameSite=Strict; Max-Age=43200$/)
    expect((await browser.useLink(made.body.data.link, PASSWORD)).status).toBe(404) // used up
    const home = await browser.get('/dashboard')
    expect(home.location).toBe('/dashboard/accounts')
    expect((await browser.get('/dashboard/accounts')).text).toContain('<h1>Accounts</h1>')
    // Sessions are stored hashed too.
    const sessionToken = cookie.split(';')[0]!.split('=')[1]!
    const [raw] = await t.db.sql`select count(*)::int as n from sessions where token_hash = ${sessionToken}`
    expect(raw!.n).toBe(0)
  })

  test('an operator creates an account, tops it up (the ledger row names them) and invites a member who sees only that account', async () => {
    const op = await dashboardUser(t, 'op2@example.com', PASSWORD)
    let page = await op.client.get('/dashboard/accounts')
    page = await op.client.post('/dashboard/accounts', { _csrf: page.csrf!, name: '<script>alert(1)</script> Toko', balance: '1000' })
    expect(page.status).toBe(303)
    const accountId = Number(page.location!.split('/').pop())
    page = await op.client.get(`/dashboard/accounts/${accountId}`)
    expect(page.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt; Toko')
    expect(page.text).not.toContain('<script>alert')
    expect(
      (await op.client.post(`/dashboard/accounts/${accountId}/topups`, { _csrf: page.csrf!, amount: '500', note: 'bank transfer' })).status,
    ).toBe(303)
    const [row] = await t.db.sql<{ amount: number; created_by: number; balance: number }[]>`
      select l.amount, l.created_by, a.balance from ledger l join accounts a on a.id = l.account_id
      where l.account_id = ${accountId} order by l.id desc limit 1`
    expect(row).toEqual({ amount: 500, created_by: op.id, balance: 1500 })
    const bad = await op.client.post(`/dashboard/accounts/${accountId}/topups`, { _csrf: page.csrf!, amount: '-5' })
    expect(bad.status).toBe(422)

    const invited = await op.client.follow(
      await op.client.post(`/dashboard/accounts/${accountId}/invites`, { _csrf: page.csrf!, email: 'member@toko.example' }),
    )
    const link = /id="invite-link">([^<]+)</.exec(invited.text)![1]!
    const member = webClient(t)
    expect((await member.useLink(link, PASSWORD)).status).toBe(303)
    const overview = await member.get('/dashboard')
    expect(overview.text).toContain('<h1>Overview</h1>')
    expect(overview.text).toContain('1,500')
    // Operator pages and other accounts do not exist for a member.
    for (const path of ['/dashboard/accounts', `/dashboard/accounts/${accountId}`, '/dashboard/accounts/1']) {
      expect({ path, status: (await member.get(path)).status }).toEqual({ path, status: 404 })
    }
    const audit = await t.db.sql<
      { action: string; actor: string }[]
    >`select action, actor from audit_log where account_id = ${accountId} order by id`
    expect(audit.map((a) => a.action)).toEqual(['account created', 'top-up', 'member invited', 'password set'])
    expect(audit[1]!.actor).toBe('op2@example.com')
  })

  test("a member's keys: created and shown once, deactivated and activated; another account's key id is 404", async () => {
    const own = await t.account(100)
    const other = await t.account(100)
    const member = await dashboardUser(t, 'keys@example.com', PASSWORD, own.accountId)
    let page = await member.client.get('/dashboard/keys')
    page = await member.client.follow(await member.client.post('/dashboard/keys', { _csrf: page.csrf!, label: 'ERP' }))
    const key = /id="new-key">([^<]+)</.exec(page.text)![1]!
    expect((await t.api('GET', '/balance', key)).status).toBe(200)
    const listed = await member.client.get('/dashboard/keys')
    expect(listed.text).not.toContain(key)
    const [made] = await t.db.sql<{ id: number }[]>`select id from api_keys where account_id = ${own.accountId} and label = 'ERP'`
    expect((await member.client.post(`/dashboard/keys/${made!.id}/active`, { _csrf: page.csrf!, active: 'false' })).status).toBe(303)
    expect((await t.api('GET', '/balance', key)).status).toBe(401)
    expect((await member.client.post(`/dashboard/keys/${made!.id}/active`, { _csrf: page.csrf!, active: 'true' })).status).toBe(303)
    expect((await t.api('GET', '/balance', key)).status).toBe(200)
    // Tampering with the id: another account's key is not found and stays active.
    expect((await member.client.post(`/dashboard/keys/${other.keyId}/active`, { _csrf: page.csrf!, active: 'false' })).status).toBe(404)
    expect((await t.api('GET', '/balance', other.key)).status).toBe(200)
    const actions = await t.db.sql<{ action: string }[]>`select action from audit_log where account_id = ${own.accountId} order by id`
    expect(actions.map((a) => a.action)).toEqual([
      'account created',
      'key created',
      'member invited',
      'password set',
      'key created',
      'key deactivated',
      'key activated',
    ])
  })
})

describe('CSRF, throttling and sign-out', () => {
  test('a change without the form token, from another site, or without origin information is refused', async () => {
    const op = await dashboardUser(t, 'csrf@example.com', PASSWORD)
    const page = await op.client.get('/dashboard/accounts')
    const form = { _csrf: page.csrf!, name: 'csrf test' }
    expect((await op.client.post('/dashboard/accounts', { ...form, _csrf: 'wrong' })).status).toBe(403)
    expect((await op.client.post('/dashboard/accounts', form, { 'sec-fetch-site': 'cross-site' })).status).toBe(403)
    expect((await op.client.post('/dashboard/accounts', form, { origin: 'https://evil.example' })).status).toBe(403)
    expect((await op.client.post('/dashboard/accounts', form, { origin: 'http://localhost' })).status).toBe(303)
    const [{ n }] = await t.db.sql<[{ n: number }]>`select count(*)::int as n from accounts where name = 'csrf test'`
    expect(n).toBe(1)
    // Sign-in too: its token comes with the page, in a cookie of its own.
    const fresh = webClient(t)
    expect((await fresh.post('/dashboard/sign-in', { _csrf: 'x', email: 'csrf@example.com', password: PASSWORD })).status).toBe(403)
  })

  test('5 failed sign-ins lock the e-mail for 15 minutes; unknown e-mails get the same answer', async () => {
    await dashboardUser(t, 'locked@example.com', PASSWORD)
    const browser = webClient(t)
    const unknown = await browser.signIn('nobody@example.com', 'wrong password!')
    const wrong = await browser.signIn('locked@example.com', 'wrong password!')
    expect(unknown.status).toBe(401)
    expect(wrong.status).toBe(401)
    expect(unknown.text.replace(/value="[^"]*"/g, '')).toBe(wrong.text.replace(/value="[^"]*"/g, ''))
    for (let i = 0; i < 4; i++) await browser.signIn('locked@example.com', 'wrong password!')
    const locked = await browser.signIn('locked@example.com', PASSWORD)
    expect(locked.status).toBe(429)
    expect(locked.text).toContain('Too many failed sign-ins')
    expect(browser.jar.has('__Host-session')).toBe(false)
  })

  test('sign-out ends the session: the old cookie is refused afterwards', async () => {
    const op = await dashboardUser(t, 'bye@example.com', PASSWORD)
    const page = await op.client.get('/dashboard/accounts')
    const oldCookie = op.client.jar.get('__Host-session')!
    const out = await op.client.post('/dashboard/sign-out', { _csrf: page.csrf! })
    expect(out.location).toBe('/dashboard/sign-in')
    const replay = await t.app.handle(
      new Request('http://localhost/dashboard/accounts', { headers: { cookie: `__Host-session=${oldCookie}` } }),
    )
    expect(replay.status).toBe(303)
    expect(replay.headers.get('location')).toBe('/dashboard/sign-in')
  })

  test('sessions end after 30 idle minutes and after 12 hours whatever the activity', async () => {
    const idle = await dashboardUser(t, 'idle@example.com', PASSWORD)
    await clock.advance(31 * 60_000)
    expect((await idle.client.get('/dashboard/accounts')).status).toBe(303)
    // Active every 29 minutes: the session lives on, until 12 hours and a minute after it began.
    const old = await dashboardUser(t, 'old@example.com', PASSWORD)
    for (let visit = 1; visit <= 24; visit++) {
      await clock.advance(29 * 60_000)
      expect((await old.client.get('/dashboard/accounts')).status).toBe(200)
    }
    await clock.advance(12 * 3_600_000 + 60_000 - 24 * 29 * 60_000)
    expect((await old.client.get('/dashboard/accounts')).status).toBe(303)
  })
})
