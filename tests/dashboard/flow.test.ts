// How dashboard forms behave, through app.handle: every change answers with a redirect to a page that
// says what it did; creating and money-moving forms happen once (a replayed post is refused and
// nothing is booked twice); secrets shown once after the redirect are never in the database in clear;
// problems are shown at their field with what was typed; lengths are refused, not cut; the audit log
// records the client's address; the ledger says who booked a row; an unknown path is a 404 inside the
// layout; pages name the account they are about; operators manage an account's keys; lost links are
// made again from the Users page.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN_TOKEN, money, testApp, type TestApp } from '../helpers/app'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { dashboardUser, webClient, type Page } from '../helpers/web'
import { readConfig } from '../../src/config'
import { startService } from '../../src/server'

let t: TestApp
const PASSWORD = 'correct horse battery'
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

let n = 0
const email = (what: string) => `${what}-${++n}@example.com`
const operator = () => dashboardUser(t, email('op'), PASSWORD)
const count = async (query: Promise<{ n: number }[]>) => (await query)[0]!.n
/** The opening tag of the form control named `name` (of the form whose ids start with `form`). */
const control = (page: Page, form: string, name: string) =>
  new RegExp(`<(?:input|textarea|select)[^>]*id="${form}-${name}"[^>]*>`).exec(page.text)?.[0]
const actions = async (accountId: number) =>
  (await t.db.sql<{ action: string }[]>`select action from audit_log where account_id = ${accountId} order by id`).map((a) => a.action)

describe('exactly once', () => {
  test('a replayed top-up is refused with a notice and booked once, also when the two arrive together; no token, no top-up', async () => {
    const op = await operator()
    const { accountId } = await t.account(1000)
    const page = await op.client.get(`/dashboard/accounts/${accountId}`)
    const action = `/dashboard/accounts/${accountId}/topups`
    const form = { _csrf: page.csrf!, _once: (await op.client.formToken(action))!, amount: '5,000', note: 'transfer 17' }

    const first = await op.client.post(action, form)
    expect([first.status, first.location]).toEqual([303, `/dashboard/accounts/${accountId}`])
    const shown = await op.client.follow(first)
    expect(shown.text).toContain('<p class="notice" role="status">Top-up of 5,000 IDR booked; balance 6,000 IDR.</p>')

    const replay = await op.client.post(action, form)
    expect([replay.status, replay.location]).toEqual([303, `/dashboard/accounts/${accountId}`])
    const refused = await op.client.follow(replay)
    // It says what happened and where to see it (issue 33: Back, then the same form sent again).
    expect(refused.text).toContain(
      `This top-up was already booked when its form was first sent; it was not booked again. To book another, fill in the form below. <a href="/dashboard/accounts/${accountId}/ledger">See it in this account&#39;s ledger.</a>`,
    )
    expect(refused.text).not.toContain('role="status">Top-up')
    const topups = () => count(t.db.sql`select count(*)::int as n from ledger where account_id = ${accountId} and note = 'transfer 17'`)
    expect(await topups()).toBe(1)
    expect(await money(t, accountId)).toEqual({ balance: 6000, ledgerSum: 6000 })

    // Two posts with one token at the same moment (a double click): one is booked.
    const twice = { ...form, _once: (await op.client.formToken(action))! }
    const both = await Promise.all([op.client.post(action, twice), op.client.post(action, twice)])
    expect(both.map((p) => p.status)).toEqual([303, 303])
    expect(await topups()).toBe(2)
    expect(await money(t, accountId)).toEqual({ balance: 11000, ledgerSum: 11000 })

    // No token, a made-up one, or another session's: refused like a forged form; nothing booked.
    const other = await operator()
    await other.client.get(`/dashboard/accounts/${accountId}`)
    const foreign = (await other.client.formToken(action))!
    for (const once of ['', 'x.y', `${foreign.split('.')[0]}.${'0'.repeat(32)}`, foreign]) {
      expect({ once, status: (await op.client.post(action, { ...form, _once: once })).status }).toEqual({ once, status: 403 })
    }
    expect(await topups()).toBe(2)
    expect(await actions(accountId)).toEqual(['account created', 'key created', 'top-up', 'top-up'])
  })

  test('a reload after creating a key makes no second key; the key is shown once and never stored in clear', async () => {
    const own = await t.account(0)
    const member = await dashboardUser(t, email('keys'), PASSWORD, own.accountId)
    await member.client.get('/dashboard/keys')
    const form = {
      _csrf: (await member.client.get('/dashboard/keys')).csrf!,
      _once: (await member.client.formToken('/dashboard/keys'))!,
      label: 'ERP',
    }
    const made = await member.client.post('/dashboard/keys', form)
    expect([made.status, made.location]).toEqual([303, '/dashboard/keys'])
    // Until it is shown, the key waits sealed: it is not in the database in clear.
    const flashesOf = () => t.db.sql<{ sealed: Uint8Array }[]>`
      select sealed from dashboard_flashes where session_hash in (select token_hash from sessions where user_id = ${member.id})`
    const waiting = await flashesOf()
    expect(waiting.length).toBe(1)
    const shown = await member.client.follow(made)
    const key = /id="new-key">([^<]+)</.exec(shown.text)![1]!
    expect(key).toMatch(/^pm_/)
    expect(Buffer.from(waiting[0]!.sealed).includes(key)).toBe(false)
    expect(Buffer.from(waiting[0]!.sealed).includes(key.slice(3, 20))).toBe(false)
    expect((await flashesOf()).length).toBe(0) // deleted as it was shown
    expect(shown.text).toContain('Copy key')
    expect((await member.client.get('/dashboard/keys')).text).not.toContain(key)

    const again = await member.client.follow(await member.client.post('/dashboard/keys', form))
    expect(again.text).toContain('This form was sent already')
    expect(again.text).not.toContain('id="new-key"')
    expect(await count(t.db.sql`select count(*)::int as n from api_keys where account_id = ${own.accountId} and label = 'ERP'`)).toBe(1)
    expect((await t.api('GET', '/balance', key)).status).toBe(200)
  })

  test('an account, a contact and an invitation sent twice are made once', async () => {
    const op = await operator()
    await op.client.get('/dashboard/accounts')
    const accountForm = {
      _csrf: (await op.client.get('/dashboard/accounts')).csrf!,
      _once: (await op.client.formToken('/dashboard/accounts'))!,
      name: 'Toko Sekali',
      balance: '1.000',
    }
    const made = await op.client.post('/dashboard/accounts', accountForm)
    expect(made.status).toBe(303)
    const again = await op.client.post('/dashboard/accounts', accountForm)
    expect([again.status, again.location]).toEqual([303, '/dashboard/accounts'])
    expect((await op.client.follow(again)).text).toContain('This form was sent already')
    expect(await count(t.db.sql`select count(*)::int as n from accounts where name = 'Toko Sekali'`)).toBe(1)
    const accountId = Number(made.location!.split('/').pop())
    expect(await money(t, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })

    const page = await op.client.get(`/dashboard/accounts/${accountId}/contacts`)
    const contact = {
      _csrf: page.csrf!,
      _once: (await op.client.formToken(`/dashboard/accounts/${accountId}/contacts`))!,
      name: 'Budi',
      phone: '0812-1111-2222',
    }
    expect((await op.client.post(`/dashboard/accounts/${accountId}/contacts`, contact)).status).toBe(303)
    expect((await op.client.follow(await op.client.post(`/dashboard/accounts/${accountId}/contacts`, contact))).text).toContain(
      'This form was sent already',
    )
    expect(await count(t.db.sql`select count(*)::int as n from contacts where account_id = ${accountId}`)).toBe(1)

    const account = await op.client.get(`/dashboard/accounts/${accountId}`)
    const invite = {
      _csrf: account.csrf!,
      _once: (await op.client.formToken(`/dashboard/accounts/${accountId}/invites`))!,
      email: 'once@toko.example',
    }
    const link = /id="invite-link">([^<]+)</.exec(
      (await op.client.follow(await op.client.post(`/dashboard/accounts/${accountId}/invites`, invite))).text,
    )![1]!
    await op.client.post(`/dashboard/accounts/${accountId}/invites`, invite)
    // Refused before it made another link, so the one shown still works.
    expect((await webClient(t).useLink(link, PASSWORD)).status).toBe(303)
    expect(await actions(accountId)).toEqual(['account created', 'contact created', 'member invited', 'password set'])
  })

  test('a form a rule refuses does not use its token: corrected, the same form goes through', async () => {
    const op = await operator()
    const { accountId } = await t.account(0)
    const page = await op.client.get(`/dashboard/accounts/${accountId}`)
    const action = `/dashboard/accounts/${accountId}/topups`
    const once = (await op.client.formToken(action))!
    expect((await op.client.post(action, { _csrf: page.csrf!, _once: once, amount: 'lots' })).status).toBe(422)
    expect((await op.client.post(action, { _csrf: page.csrf!, _once: once, amount: '2.500' })).status).toBe(303)
    expect(await money(t, accountId)).toEqual({ balance: 2500, ledgerSum: 2500 })
  })
})

describe('notices', () => {
  test('each change says what it did on the page its redirect leads to, once', async () => {
    const own = await t.account(0)
    const member = await dashboardUser(t, email('notice'), PASSWORD, own.accountId)
    await member.client.get('/dashboard/keys')
    const csrf = (await member.client.get('/dashboard/keys')).csrf!
    const said = async (path: string, form: Record<string, string>) => {
      const answer = await member.client.post(path, { _csrf: csrf, ...form })
      expect({ path, status: answer.status }).toEqual({ path, status: 303 })
      return /<p class="notice" role="status">([^<]*)<\/p>/.exec((await member.client.follow(answer)).text)?.[1]
    }
    expect(await said(`/dashboard/keys/${own.keyId}/active`, { active: 'false' })).toBe(
      'Key test deactivated: requests with it are refused from now on.',
    )
    expect((await member.client.get('/dashboard/keys')).text).not.toContain('deactivated: requests')
    expect(await said(`/dashboard/keys/${own.keyId}/active`, { active: 'true' })).toBe(
      'Key test activated: requests with it are accepted again.',
    )
    await member.client.get('/dashboard/contacts')
    expect(await said('/dashboard/contacts', { name: 'Ani', phone: '081233334444' })).toBe('Contact Ani (+6281233334444) added.')
    await member.client.get('/dashboard/templates')
    expect(await said('/dashboard/templates', { name: 'promo', body: 'Hi {{name}}' })).toBe('Template promo created.')
    expect(await said('/dashboard/segments', { name: 'all', tag: 'vip' })).toBe('Segment all created: 0 contacts tagged vip now.')
    await member.client.get('/dashboard/webhook')
    expect(await said(`/dashboard/webhook/keys/${own.keyId}`, { url: 'https://93.184.216.34/in' })).toBe(
      'A URL for key test is now https://93.184.216.34/in: its events go there.',
    )
    const op = await operator()
    const price = await op.client.get('/dashboard/price')
    const set = await op.client.follow(await op.client.post('/dashboard/price', { _csrf: price.csrf!, cost_per_message: '1,250' }))
    expect(set.text).toMatch(/The global price is now 1,250 IDR per message \(it was [\d,]+ IDR\)\./)
    await t.admin('PUT', '/price', { cost_per_message: 350 })
  })
})

describe('problems at their field', () => {
  test('the message under its field, linked by aria-describedby, aria-invalid and autofocus on it; what was typed stays', async () => {
    const op = await operator()
    const { accountId } = await t.account(0)
    const page = await op.client.get(`/dashboard/accounts/${accountId}`)
    const bad = await op.client.post(`/dashboard/accounts/${accountId}/topups`, { _csrf: page.csrf!, amount: 'lots', note: 'from Budi' })
    expect(bad.status).toBe(422)
    const amount = control(bad, 'topup', 'amount')!
    expect(amount).toContain('aria-invalid="true"')
    expect(amount).toContain('aria-describedby="topup-amount-error"')
    expect(amount).toContain(' autofocus')
    expect(amount).toContain('value="lots"')
    expect(bad.text).toContain('<p class="field-error" id="topup-amount-error">amount: must be a whole number of IDR, like 5000</p>')
    const note = control(bad, 'topup', 'note')!
    expect(note).toContain('value="from Budi"')
    expect(note).not.toContain('aria-invalid')
    expect(bad.text.match(/ autofocus/g)!.length).toBe(1)
    // The other forms of the page are as they were.
    expect(control(bad, 'invite', 'email')).not.toContain('aria-invalid')

    // A contact: the phone is the problem, the name stays.
    const member = await dashboardUser(t, email('fields'), PASSWORD, accountId)
    const contacts = await member.client.get('/dashboard/contacts')
    const contact = await member.client.post('/dashboard/contacts', { _csrf: contacts.csrf!, name: 'Budi <b>', phone: '12' })
    expect(contact.status).toBe(422)
    expect(control(contact, 'contact', 'phone')).toContain('aria-describedby="contact-phone-error"')
    expect(control(contact, 'contact', 'name')).toContain('value="Budi &lt;b&gt;"')
    expect(contact.text).toContain(
      'id="contact-phone-error">phone: not a valid Indonesian phone number: write it like 081234567890, 6281234567890 or +6281234567890</p>',
    )
    // A problem that names no field of the form is shown at the top of that form.
    const invited = await op.client.post(`/dashboard/accounts/${accountId}/invites`, { _csrf: page.csrf!, email: 'same@example.com' })
    expect(invited.status).toBe(303)
    const again = await op.client.post(`/dashboard/accounts/${accountId}/invites`, { _csrf: page.csrf!, email: 'same@example.com' })
    expect(again.status).toBe(409)
    expect(again.text).toMatch(
      /<form class="inline card" method="post" action="[^"]+\/invites">(<input[^>]*>){2}<p class="notice error" role="alert">a user with the e-mail same@example.com exists<\/p>/,
    )
    expect(control(again, 'invite', 'email')).toContain('value="same@example.com"')
  })

  test('amounts as people type them: 5000, 5,000 and 5.000; not 5.5 or 5,00', async () => {
    const op = await operator()
    const { accountId } = await t.account(0)
    const page = await op.client.get(`/dashboard/accounts/${accountId}`)
    const topUp = (amount: string) => op.client.post(`/dashboard/accounts/${accountId}/topups`, { _csrf: page.csrf!, amount })
    for (const amount of ['5000', '5,000', '5.000', ' 1,000,000 '])
      expect({ amount, status: (await topUp(amount)).status }).toEqual({ amount, status: 303 })
    for (const amount of ['5.5', '5,00', '5,000.00', '-5', ''])
      expect({ amount, status: (await topUp(amount)).status }).toEqual({ amount, status: 422 })
    expect(await money(t, accountId)).toEqual({ balance: 1_015_000, ledgerSum: 1_015_000 })
  })
})

describe('lengths', () => {
  test('a 20,000-character name is refused at its field, in the dashboard and the admin API; a note over 200 is refused, not cut', async () => {
    const op = await operator()
    const page = await op.client.get('/dashboard/accounts')
    expect(control(page, 'account', 'name')).toContain('maxlength="200"')
    const long = 'x'.repeat(20_000)
    const refused = await op.client.post('/dashboard/accounts', { _csrf: page.csrf!, name: long })
    expect(refused.status).toBe(422)
    expect(refused.text).toContain('<h1>Accounts</h1>')
    expect(control(refused, 'account', 'name')).toContain('aria-invalid="true"')
    expect(refused.text).toContain('id="account-name-error">name: must be at most 200 characters</p>')
    expect(await count(t.db.sql`select count(*)::int as n from accounts where length(name) > 200`)).toBe(0)
    expect((await t.admin('POST', '/accounts', { name: long })).status).toBe(422)

    const { accountId } = await t.account(0)
    const account = await op.client.get(`/dashboard/accounts/${accountId}`)
    expect(control(account, 'topup', 'note')).toContain('maxlength="200"')
    const note = 'n'.repeat(201)
    const tooLong = await op.client.post(`/dashboard/accounts/${accountId}/topups`, { _csrf: account.csrf!, amount: '10', note })
    expect(tooLong.status).toBe(422)
    expect(tooLong.text).toContain('id="topup-note-error">note: must be at most 200 characters</p>')
    const api = await t.admin('POST', `/accounts/${accountId}/topups`, { amount: 10, note })
    expect([api.status, api.body.error]).toEqual([422, 'note: must be at most 200 characters'])
    expect((await t.admin('POST', `/accounts/${accountId}/adjustments`, { amount: 10, note })).status).toBe(422)
    expect((await t.admin('POST', `/accounts/${accountId}/topups`, { amount: 10, note: note.slice(1) })).status).toBe(201)
    expect(await count(t.db.sql`select max(length(note))::int as n from ledger where account_id = ${accountId}`)).toBe(200)

    const keys = await op.client.get(`/dashboard/accounts/${accountId}/keys`)
    expect(control(keys, 'key', 'label')).toContain('maxlength="200"')
  })
})

describe('the audit log records where a change came from', () => {
  test('under TRUST_PROXY the first X-Forwarded-For address; without it the header is not believed', async () => {
    const proxied = await testApp({ env: { TRUST_PROXY: 'true' } })
    try {
      const op = await dashboardUser(proxied, email('proxied'), PASSWORD)
      const page = await op.client.get('/dashboard/accounts')
      const made = await op.client.post(
        '/dashboard/accounts',
        { _csrf: page.csrf!, name: 'Behind a proxy' },
        { 'x-forwarded-for': '203.0.113.9, 10.0.0.1' },
      )
      expect(made.status).toBe(303)
      const [row] = await proxied.db.sql<{ address: string | null }[]>`select address from audit_log where action = 'account created'`
      expect(row!.address).toBe('203.0.113.9')
      expect((await op.client.get('/dashboard/audit')).text).toContain('<td data-label="From" class="wide">203.0.113.9</td>')
    } finally {
      await proxied.close()
    }
    const op = await operator()
    const page = await op.client.get('/dashboard/accounts')
    await op.client.post('/dashboard/accounts', { _csrf: page.csrf!, name: 'Not behind a proxy' }, { 'x-forwarded-for': '203.0.113.9' })
    const [row] = await t.db.sql<{ address: string | null }[]>`
      select address from audit_log where action = 'account created' and detail->>'name' = 'Not behind a proxy'`
    expect(row!.address).toBe(null) // app.handle has no socket, and the header is not trusted
  })

  test("a real server records its socket's address (127.0.0.1), shown under From", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dashboard-address-'))
    const pg = usingPostgres() ? await createMigratedPostgresDatabase() : null
    await premigrate(dataDir)
    const service = await startService(
      readConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        ADMIN_TOKEN,
        LOG_LEVEL: 'error',
        ...(pg ? { DATABASE_URL: pg.url } : {}),
      }),
    )
    try {
      const made = await fetch(`${service.url}/admin/v1/operators`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'socket@example.com' }),
      }).then((r) => r.json() as Promise<any>)
      const browser = webClient(service.url)
      expect((await browser.useLink(made.data.link, PASSWORD)).status).toBe(303)
      const page = await browser.get('/dashboard/accounts')
      expect((await browser.post('/dashboard/accounts', { _csrf: page.csrf!, name: 'Over a socket' })).status).toBe(303)
      const rows = await service.deps.sql<{ action: string; address: string | null }[]>`
        select action, address from audit_log where action in ('password set', 'account created') order by id`
      expect(rows.map((r) => [r.action, r.address])).toEqual([
        ['password set', '127.0.0.1'],
        ['account created', '127.0.0.1'],
      ])
      expect((await browser.get('/dashboard/audit')).text).toContain('<td data-label="From" class="wide">127.0.0.1</td>')
    } finally {
      await service.stop()
      await pg?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 60_000)
})

describe('the ledger says who booked a row', () => {
  test('a dashboard top-up names its operator; one through the admin API says so; in the page and the CSV', async () => {
    const { accountId } = await t.account(100)
    const op = await operator()
    const opEmail = (await t.db.sql<{ email: string }[]>`select email from users where id = ${op.id}`)[0]!.email
    const page = await op.client.get(`/dashboard/accounts/${accountId}`)
    await op.client.post(`/dashboard/accounts/${accountId}/topups`, { _csrf: page.csrf!, amount: '700', note: 'by hand' })
    const member = await dashboardUser(t, email('ledger'), PASSWORD, accountId)
    const ledger = await member.client.get('/dashboard/ledger')
    expect(ledger.text).toContain('<th scope="col" class="wrap">By</th>')
    const byOf = (note: string) =>
      new RegExp(`<td data-label="Note">${note}</td><td data-label="Message"></td><td data-label="By" class="wrap">([^<]*)</td>`).exec(
        ledger.text,
      )?.[1]
    expect(byOf('by hand')).toBe(opEmail)
    expect(byOf('opening balance')).toBe('admin API or CLI')
    const csv = (await member.client.get('/dashboard/ledger.csv')).text.trimEnd().split('\r\n')
    expect(csv[0]!.endsWith(',note,created_by')).toBe(true)
    expect(csv[1]).toEndWith(`,700,800,,by hand,${opEmail}`)
    expect(csv[2]).toEndWith(',100,100,,opening balance,admin API or CLI')
    const api = await t.admin('GET', `/accounts/${accountId}/ledger`)
    expect(api.body.data.items.map((r: any) => r.created_by)).toEqual([opEmail, null])
  })
})

describe('an unknown page', () => {
  test('is a 404 inside the layout with the navigation when signed in, without it when not', async () => {
    const own = await t.account(0)
    const member = await dashboardUser(t, email('lost'), PASSWORD, own.accountId)
    const page = await member.client.get('/dashboard/no-such-page')
    expect(page.status).toBe(404)
    expect(page.text).toContain('<h1>Not found</h1>')
    expect(page.text).toContain('<nav aria-label="Main"><a href="/dashboard">Overview</a>')
    expect(page.text).toContain('action="/dashboard/sign-out"')
    const op = await operator()
    expect((await op.client.get('/dashboard/accounts/1/nothing/here')).text).toContain('<a href="/dashboard/accounts">Accounts</a>')
    const anonymous = await webClient(t).get('/dashboard/no-such-page')
    expect(anonymous.status).toBe(404)
    expect(anonymous.text).toContain('<h1>Not found</h1>')
    expect(anonymous.text).not.toContain('<nav')
  })
})

describe('pages name their account', () => {
  test("a member's overview names the account and whom to ask for a top-up", async () => {
    const made = await t.admin('POST', '/accounts', { name: 'Toko <Maju>', balance: 0 })
    const member = await dashboardUser(t, email('overview'), PASSWORD, made.body.data.id)
    const page = await member.client.get('/dashboard')
    expect(page.text).toContain('<h1>Overview</h1>')
    expect(page.text).toContain(`Account <strong>Toko &lt;Maju&gt;</strong> <span class="muted">#${made.body.data.id}</span>`)
    expect(page.text).toMatch(/To top up the balance, ask the operator of this service/)
  })

  test("an operator's pages of an account link back to it; a message links its campaign and template", async () => {
    const made = await t.admin('POST', '/accounts', { name: 'Toko Kampanye', balance: 10_000 })
    const id = made.body.data.id as number
    const op = await operator()
    const back = `<p class="account-link">Account <a href="/dashboard/accounts/${id}">Toko Kampanye</a></p>`
    for (const sub of ['overview', 'keys', 'messages', 'ledger', 'contacts', 'templates', 'campaigns', 'webhook']) {
      const page = await op.client.get(`/dashboard/accounts/${id}/${sub}`)
      expect({ sub, status: page.status, back: page.text.includes(back) }).toEqual({ sub, status: 200, back: true })
    }
    // A campaign's message, on the operator's and on the member's page.
    const templates = await op.client.get(`/dashboard/accounts/${id}/templates`)
    await op.client.post(`/dashboard/accounts/${id}/templates`, { _csrf: templates.csrf!, name: 'Hello', body: 'Hi {{name}}' })
    await op.client.post(`/dashboard/accounts/${id}/segments`, { _csrf: templates.csrf!, name: 'VIP', tag: 'vip' })
    await t.db.sql`insert into contacts (account_id, name, phone, tags) values (${id}, 'Ani', '+6281255556666', '{vip}')`
    const [ids] = await t.db.sql<{ template: number; segment: number }[]>`
      select (select id from templates where account_id = ${id}) as template, (select id from segments where account_id = ${id}) as segment`
    await op.client.get(`/dashboard/accounts/${id}/campaigns`)
    const created = await op.client.post(`/dashboard/accounts/${id}/campaigns`, {
      _csrf: templates.csrf!,
      name: 'Launch',
      template_id: String(ids!.template),
      segment_id: String(ids!.segment),
    })
    const campaignId = Number(created.location!.split('/').pop())
    expect((await op.client.follow(created)).text).toContain('Campaign Launch created as a draft')
    await op.client.post(`/dashboard/accounts/${id}/campaigns/${campaignId}/run`, { _csrf: templates.csrf! })
    await t.runWorker('campaign-runner')
    const [message] = await t.db.sql<{ id: number }[]>`select id from messages where campaign_id = ${campaignId}`
    const opMessage = await op.client.get(`/dashboard/accounts/${id}/messages/${message!.id}`)
    expect(opMessage.text).toContain(`<a href="/dashboard/accounts/${id}/campaigns/${campaignId}">Launch</a>`)
    expect(opMessage.text).toContain(`<a href="/dashboard/accounts/${id}/templates/${ids!.template}">Hello</a>`)
    expect(opMessage.text).toContain(back)
    const member = await dashboardUser(t, email('campaign'), PASSWORD, id)
    const own = await member.client.get(`/dashboard/messages/${message!.id}`)
    expect(own.text).toContain(`<a href="/dashboard/campaigns/${campaignId}">Launch</a>`)
    expect(own.text).toContain(`<a href="/dashboard/templates/${ids!.template}">Hello</a>`)
    expect(own.text).not.toContain('class="account-link"')
  })
})

describe("an operator manages an account's keys", () => {
  test('list, create (shown once), deactivate and activate at /dashboard/accounts/:id/keys; another account key is 404', async () => {
    const own = await t.account(100)
    const other = await t.account(100)
    const op = await operator()
    const account = await op.client.get(`/dashboard/accounts/${own.accountId}`)
    expect(account.text).toContain(`href="/dashboard/accounts/${own.accountId}/keys"`)
    let page = await op.client.get(`/dashboard/accounts/${own.accountId}/keys`)
    expect(page.status).toBe(200)
    expect(page.text).toMatch(/<h1>API keys · acct-\w+<\/h1>/)
    expect(page.text).toContain(`action="/dashboard/accounts/${own.accountId}/keys/${own.keyId}/active"`)
    page = await op.client.follow(
      await op.client.post(`/dashboard/accounts/${own.accountId}/keys`, { _csrf: page.csrf!, label: 'Ops made' }),
    )
    const key = /id="new-key">([^<]+)</.exec(page.text)![1]!
    expect((await t.api('GET', '/balance', key)).status).toBe(200)
    const [made] = await t.db.sql<{ id: number }[]>`select id from api_keys where account_id = ${own.accountId} and label = 'Ops made'`
    const state = (id: number, active: boolean) =>
      op.client.post(`/dashboard/accounts/${own.accountId}/keys/${id}/active`, { _csrf: page.csrf!, active: String(active) })
    expect((await state(made!.id, false)).location).toBe(`/dashboard/accounts/${own.accountId}/keys`)
    expect((await t.api('GET', '/balance', key)).status).toBe(401)
    expect((await state(made!.id, true)).status).toBe(303)
    expect((await t.api('GET', '/balance', key)).status).toBe(200)
    expect((await state(other.keyId, false)).status).toBe(404)
    expect((await t.api('GET', '/balance', other.key)).status).toBe(200)
    // Members have their own path only; operators have no member path.
    const member = await dashboardUser(t, email('keys-member'), PASSWORD, own.accountId)
    expect((await member.client.get(`/dashboard/accounts/${own.accountId}/keys`)).status).toBe(404)
    expect((await op.client.get('/dashboard/keys')).status).toBe(404)
    expect((await op.client.get('/dashboard/accounts/99999999/keys')).status).toBe(404)
    expect(await actions(own.accountId)).toEqual([
      'account created',
      'key created',
      'key created',
      'key deactivated',
      'key activated',
      'member invited',
      'password set',
    ])
  })
})

describe('a lost link', () => {
  test('the Users page makes a new one: an invitation before a password is set, a reset after; the old one stops working', async () => {
    const { accountId } = await t.account(0)
    const op = await operator()
    const account = await op.client.get(`/dashboard/accounts/${accountId}`)
    const invited = await op.client.follow(
      await op.client.post(`/dashboard/accounts/${accountId}/invites`, { _csrf: account.csrf!, email: 'lost@toko.example' }),
    )
    const first = /id="invite-link">([^<]+)</.exec(invited.text)![1]!
    const [user] = await t.db.sql<{ id: number }[]>`select id from users where email = 'lost@toko.example'`
    const users = await op.client.get('/dashboard/users')
    expect(users.text).toMatch(
      new RegExp(
        `>lost@toko.example</td><td data-label="Role">member</td><td data-label="Account"><a href="/dashboard/accounts/${accountId}">`,
      ),
    )
    expect(users.text).toContain('aria-label="Make a new link for lost@toko.example">New link</button>')
    const renewed = await op.client.follow(await op.client.post(`/dashboard/users/${user!.id}/link`, { _csrf: users.csrf! }))
    expect(renewed.text).toContain('A new invitation for lost@toko.example: pass this link on')
    const second = /id="user-link">([^<]+)</.exec(renewed.text)![1]!
    expect(second).not.toBe(first)
    expect((await webClient(t).useLink(first, PASSWORD)).status).toBe(404)
    const member = webClient(t)
    expect((await member.useLink(second, PASSWORD)).status).toBe(303)
    expect((await member.get('/dashboard')).status).toBe(200)

    const reset = await op.client.follow(await op.client.post(`/dashboard/users/${user!.id}/link`, { _csrf: users.csrf! }))
    expect(reset.text).toContain('Password-reset link for lost@toko.example')
    expect(await actions(accountId)).toEqual([
      'account created',
      'key created',
      'member invited',
      'invitation link made',
      'password set',
      'password reset link made',
    ])
  })
})
