// Contacts, templates and segments, campaigns in the dashboard, through app.handle: guards, each
// account's own data only (ids of another account are 404), the operator's view of any account,
// CSRF, CSV import in both modes, the engine's rules shown as errors, a campaign run to the end with
// its progress JSON equal to the admin API's stats, and escaping.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { dashboardUser, webClient } from '../helpers/web'
import { drain } from '../helpers/worker-steps'
import { TestClock } from '../../src/lib/clock'

// The simulator reports at once: its reports are due as soon as the hand-off records them, whichever
// clock stamps them; the test applies them by the worker's steps.
const clock = new TestClock()
let t: TestApp
const PASSWORD = 'correct horse battery'
beforeAll(async () => {
  t = await testApp({ clock, env: { SIM_DELIVERED_MS: '0', SIM_READ_MS: '0' } })
})
afterAll(() => t.close())

type Client = ReturnType<typeof webClient>

/** A multipart form post the way the browser sends the import form (a file input), with the form's single-use token. */
async function postMultipart(client: Client, path: string, fields: Record<string, string>, file?: { name: string; text: string }) {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  const token = '_once' in fields ? undefined : await client.formToken(path)
  if (token) form.append('_once', token)
  if (file) form.append('file', new File([file.text], file.name, { type: 'text/csv' }))
  const headers = new Headers({ 'sec-fetch-site': 'same-origin' })
  headers.set('cookie', [...client.jar].map(([k, v]) => `${k}=${v}`).join('; '))
  const response = await t.app.handle(new Request(`http://localhost${path}`, { method: 'POST', headers, body: form }))
  return { status: response.status, text: await response.text(), location: response.headers.get('location') }
}

const count = async (query: Promise<{ n: number }[]>) => (await query)[0]!.n
const actions = async (accountId: number) =>
  (await t.db.sql<{ action: string }[]>`select action from audit_log where account_id = ${accountId} order by id`).map((a) => a.action)

let memberSeq = 0
async function member(balance = 0) {
  const account = await t.account(balance)
  const user = await dashboardUser(t, `member${++memberSeq}@example.com`, PASSWORD, account.accountId)
  return { ...account, client: user.client }
}

describe('guards', () => {
  test('signed out: every page, the progress JSON and every change redirect to sign-in', async () => {
    const anon = webClient(t)
    for (const path of [
      '/dashboard/contacts',
      '/dashboard/templates',
      '/dashboard/templates/1',
      '/dashboard/campaigns',
      '/dashboard/campaigns/1',
      '/dashboard/campaigns/1/progress',
      '/dashboard/accounts/1/contacts',
      '/dashboard/accounts/1/campaigns/1/progress',
    ]) {
      const page = await anon.get(path)
      expect({ path, status: page.status, location: page.location }).toEqual({ path, status: 303, location: '/dashboard/sign-in' })
    }
    for (const path of [
      '/dashboard/contacts',
      '/dashboard/contacts/import',
      '/dashboard/templates',
      '/dashboard/templates/1/delete',
      '/dashboard/segments',
      '/dashboard/campaigns',
      '/dashboard/campaigns/1/run',
      '/dashboard/accounts/1/campaigns/1/cancel',
    ]) {
      const page = await anon.post(path, { _csrf: 'x' })
      expect({ path, status: page.status, location: page.location }).toEqual({ path, status: 303, location: '/dashboard/sign-in' })
    }
  })

  test("members get 404 on operator paths, operators on members' paths and on accounts that do not exist", async () => {
    const m = await member()
    for (const path of [`/dashboard/accounts/${m.accountId}/contacts`, `/dashboard/accounts/${m.accountId}/campaigns`]) {
      expect({ path, status: (await m.client.get(path)).status }).toEqual({ path, status: 404 })
    }
    const op = await dashboardUser(t, 'guard-op@example.com', PASSWORD)
    for (const path of ['/dashboard/contacts', '/dashboard/templates', '/dashboard/campaigns', '/dashboard/accounts/999999/contacts']) {
      expect({ path, status: (await op.client.get(path)).status }).toEqual({ path, status: 404 })
    }
  })
})

describe('contacts', () => {
  test('add, search, escaping; only the own account; the operator sees any account; CSRF', async () => {
    const m = await member()
    const other = await member()
    let page = await m.client.get('/dashboard/contacts')
    expect(page.text).toContain('<h1>Contacts</h1>')
    expect(page.text).toContain('<input type="file" name="file"')
    page = await m.client.post('/dashboard/contacts', {
      _csrf: page.csrf!,
      name: '<script>alert(1)</script>',
      phone: '0812-1111-0001',
      email: 'x@example.com',
      city: 'Bandung',
      tags: 'vip, reseller',
    })
    expect([page.status, page.location]).toEqual([303, '/dashboard/contacts'])
    page = await m.client.get('/dashboard/contacts')
    expect(page.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(page.text).not.toContain('<script>alert')
    expect(page.text).toContain('+6281211110001')
    expect(page.text).toContain('vip, reseller')

    // The service's rules, shown on the page.
    const bad = await m.client.post('/dashboard/contacts', { _csrf: page.csrf!, name: 'Budi', phone: '12' })
    expect(bad.status).toBe(422)
    expect(bad.text).toContain('phone: not a valid Indonesian phone number: write it like 081234567890, 6281234567890 or +6281234567890')
    const dup = await m.client.post('/dashboard/contacts', { _csrf: page.csrf!, name: 'Again', phone: '+6281211110001' })
    expect(dup.status).toBe(409)
    expect(dup.text).toContain('already exists')

    // Without the token: refused, nothing added.
    expect((await m.client.post('/dashboard/contacts', { _csrf: 'wrong', name: 'Sneaky', phone: '081211110002' })).status).toBe(403)
    expect(await count(t.db.sql`select count(*)::int as n from contacts where name = 'Sneaky'`)).toBe(0)

    // Another account's contacts never show; search finds by name and by the 08xx form.
    const op = await other.client.get('/dashboard/contacts')
    await other.client.post('/dashboard/contacts', { _csrf: op.csrf!, name: 'Other Person', phone: '081233330001' })
    expect((await m.client.get('/dashboard/contacts')).text).not.toContain('Other Person')
    expect((await m.client.get('/dashboard/contacts?q=script')).text).toContain('alert(1)')
    expect((await m.client.get('/dashboard/contacts?q=nobody')).text).not.toContain('alert(1)')
    expect((await m.client.get('/dashboard/contacts?q=0812-1111')).text).toContain('alert(1)')
    expect((await m.client.get('/dashboard/contacts?q=a&q=b&page=x')).status).toBe(200)

    // The operator sees and changes any account's contacts at its own path.
    const operator = await dashboardUser(t, 'contacts-op@example.com', PASSWORD)
    const opPage = await operator.client.get(`/dashboard/accounts/${other.accountId}/contacts`)
    expect(opPage.status).toBe(200)
    expect(opPage.text).toContain('Other Person')
    expect(opPage.text).not.toContain('alert(1)')
    const added = await operator.client.post(`/dashboard/accounts/${other.accountId}/contacts`, {
      _csrf: opPage.csrf!,
      name: 'Added By Operator',
      phone: '081233330002',
    })
    expect(added.location).toBe(`/dashboard/accounts/${other.accountId}/contacts`)
    expect(await count(t.db.sql`select count(*)::int as n from contacts where account_id = ${other.accountId}`)).toBe(2)
    expect(await actions(m.accountId)).toEqual(['account created', 'key created', 'member invited', 'password set', 'contact created'])
    expect(await actions(other.accountId)).toEqual([
      'account created',
      'key created',
      'member invited',
      'password set',
      'contact created',
      'contact created',
    ])
  })

  test('pagination: 50 a page, with links', async () => {
    const m = await member()
    const phones = Array.from({ length: 55 }, (_, i) => `+62813${String(i).padStart(8, '0')}`)
    await t.db.sql`
      insert into contacts (account_id, name, phone)
      select ${m.accountId}, 'Person ' || v.i, v.phone from unnest(${phones}::text[]) with ordinality as v(phone, i)`
    const first = await m.client.get('/dashboard/contacts')
    expect(first.text).toContain('55 contacts')
    expect(first.text).toContain('Page 1 of 2')
    expect(first.text).toContain('href="/dashboard/contacts?page=2"')
    const second = await m.client.get('/dashboard/contacts?page=2')
    expect((second.text.match(/<tr><td data-label="Name"><a href="\/dashboard\/contacts\/\d+">Person/g) ?? []).length).toBe(5)
  })

  const CSV = [
    'Phone,Name,email,tags,city', // any order, any case
    '0812-2222-0001,Ani,ani@example.com,"vip, jakarta",Jakarta',
    '0812-2222-0002,,,,', // no name
    'not a phone,Budi,,,',
    '0812-2222-0003,Citra,not-an-email,,',
    '0812 2222 0001,Dewi,,,', // the same number as line 2
    '', // blank lines are skipped, but counted
    '081222220004,"Eko ""the boss"", Jr.",,vip,Bandung',
    '081299990001,Existing Already,,,',
    '081222220005,Fajar,,,,extra',
  ].join('\r\n')

  test('CSV import, "import the valid rows": every bad row with its line and reason, the rest imported in one go', async () => {
    const m = await member()
    let page = await m.client.get('/dashboard/contacts')
    await m.client.post('/dashboard/contacts', { _csrf: page.csrf!, name: 'Existing', phone: '081299990001' })
    const result = await m.client.follow(
      await postMultipart(m.client, '/dashboard/contacts/import', { _csrf: page.csrf!, mode: 'valid' }, { name: 'c.csv', text: CSV }),
    )
    expect(result.status).toBe(200)
    expect(result.text).toContain('<h1>Contact import</h1>')
    expect(/id="imported">(\d+)</.exec(result.text)![1]).toBe('2')
    expect(/id="bad-rows">(\d+)</.exec(result.text)![1]).toBe('6')
    const rows = [...result.text.matchAll(/<tr><td data-label="Line">(\d+)<\/td><td data-label="Reason">([^<]*)<\/td><\/tr>/g)].map((r) => [
      Number(r[1]),
      r[2],
    ])
    expect(rows).toEqual([
      [3, 'name: must not be empty'],
      [4, 'phone: not a valid Indonesian phone number: write it like 081234567890, 6281234567890 or +6281234567890'],
      [5, 'email: not a valid e-mail address'],
      [6, 'phone: +6281222220001 already appears on line 2'],
      [9, 'phone: a contact with +6281299990001 already exists'],
      [10, '6 fields, but the header row has 5 columns'],
    ])
    const imported = await t.db.sql<{ name: string; phone: string; email: string | null; city: string | null; tags: string[] }[]>`
      select name, phone, email, city, tags from contacts where account_id = ${m.accountId} and name <> 'Existing' order by phone`
    expect([...imported]).toEqual([
      { name: 'Ani', phone: '+6281222220001', email: 'ani@example.com', city: 'Jakarta', tags: ['vip', 'jakarta'] },
      { name: 'Eko "the boss", Jr.', phone: '+6281222220004', email: null, city: 'Bandung', tags: ['vip'] },
    ])
    expect(await actions(m.accountId)).toEqual([
      'account created',
      'key created',
      'member invited',
      'password set',
      'contact created',
      'contacts imported',
    ])
  })

  test('CSV import, "import nothing if any row is bad": bad rows reported, nothing imported; a clean file is imported whole', async () => {
    const m = await member()
    const page = await m.client.get('/dashboard/contacts')
    const refusedAll = await postMultipart(
      m.client,
      '/dashboard/contacts/import',
      { _csrf: page.csrf!, mode: 'all' },
      { name: 'c.csv', text: CSV },
    )
    expect(refusedAll.status).toBe(422)
    expect(refusedAll.text).toContain('Nothing was imported: 5 rows are bad.')
    expect(refusedAll.text).toContain(
      '<tr><td data-label="Line">4</td><td data-label="Reason">phone: not a valid Indonesian phone number: write it like 081234567890, 6281234567890 or +6281234567890</td></tr>',
    )
    expect(await count(t.db.sql`select count(*)::int as n from contacts where account_id = ${m.accountId}`)).toBe(0)

    // The pasted-text field works too (here a clean file, urlencoded form).
    const clean = 'name,phone\nGood One,081244440001\nGood Two,081244440002\n'
    const ok = await m.client.follow(await m.client.post('/dashboard/contacts/import', { _csrf: page.csrf!, mode: 'all', csv: clean }))
    expect(ok.status).toBe(200)
    expect(ok.text).toContain('2 contacts imported.')
    expect(await count(t.db.sql`select count(*)::int as n from contacts where account_id = ${m.accountId}`)).toBe(2)

    // Existing numbers make the whole file bad in this mode.
    const again = await m.client.post('/dashboard/contacts/import', { _csrf: page.csrf!, mode: 'all', csv: `${clean}New,081244440003\n` })
    expect(again.status).toBe(422)
    expect(again.text).toContain(
      '<tr><td data-label="Line">2</td><td data-label="Reason">phone: a contact with +6281244440001 already exists</td></tr>',
    )
    expect(await count(t.db.sql`select count(*)::int as n from contacts where account_id = ${m.accountId}`)).toBe(2)
  })

  test('CSV import: header errors, the row cap, the CSRF token and the operator path', async () => {
    const m = await member()
    const page = await m.client.get('/dashboard/contacts')
    const noPhone = await m.client.post('/dashboard/contacts/import', { _csrf: page.csrf!, mode: 'valid', csv: 'name,email\nA,a@x.io' })
    expect(noPhone.status).toBe(422)
    expect(noPhone.text).toContain('The header row has no &quot;phone&quot; column')
    const unknown = await m.client.post('/dashboard/contacts/import', { _csrf: page.csrf!, mode: 'valid', csv: 'name,phone,age\nA,0812,3' })
    expect(unknown.text).toContain('Unknown column &quot;age&quot;')
    const big = ['name,phone', ...Array.from({ length: 10_001 }, (_, i) => `P${i},+62813${String(i).padStart(8, '0')}`)].join('\n')
    const capped = await postMultipart(
      m.client,
      '/dashboard/contacts/import',
      { _csrf: page.csrf!, mode: 'valid' },
      { name: 'big.csv', text: big },
    )
    expect(capped.status).toBe(422)
    expect(capped.text).toContain('The CSV has 10,001 rows; at most 10,000 can be imported at once.')
    const noFile = await postMultipart(m.client, '/dashboard/contacts/import', { _csrf: page.csrf!, mode: 'valid' })
    expect(noFile.text).toContain('Choose a CSV file or paste the CSV text.')
    const forged = await postMultipart(
      m.client,
      '/dashboard/contacts/import',
      { _csrf: 'nope', mode: 'valid' },
      { name: 'c.csv', text: CSV },
    )
    expect(forged.status).toBe(403)
    expect(await count(t.db.sql`select count(*)::int as n from contacts where account_id = ${m.accountId}`)).toBe(0)

    const op = await dashboardUser(t, 'import-op@example.com', PASSWORD)
    const opPage = await op.client.get(`/dashboard/accounts/${m.accountId}/contacts`)
    const done = await op.client.follow(
      await postMultipart(
        op.client,
        `/dashboard/accounts/${m.accountId}/contacts/import`,
        { _csrf: opPage.csrf!, mode: 'valid' },
        { name: 'c.csv', text: 'name,phone\nOp Import,081255550001' },
      ),
    )
    expect(done.status).toBe(200)
    expect(done.text).toContain(`href="/dashboard/accounts/${m.accountId}/contacts"`)
    expect(await count(t.db.sql`select count(*)::int as n from contacts where account_id = ${m.accountId}`)).toBe(1)
  })
})

describe('templates and segments', () => {
  test("the engine's rules shown as errors; edit and delete; segment size; another account's ids are 404", async () => {
    const m = await member()
    const other = await member()
    let page = await m.client.get('/dashboard/templates')
    expect(page.text).toContain('<h1>Templates and segments</h1>')
    const csrf = page.csrf!
    const bad = await m.client.post('/dashboard/templates', { _csrf: csrf, name: 'promo', body: 'Hi {{first_name}}' })
    expect(bad.status).toBe(422)
    expect(bad.text).toContain('body: unknown placeholder {{first_name}}')
    expect(bad.text).toContain('Hi {{first_name}}') // the text typed is kept in the form
    expect((await m.client.post('/dashboard/templates', { _csrf: csrf, name: '<b>promo</b>', body: 'Hi {{name}}' })).status).toBe(303)
    const [template] = await t.db.sql<{ id: number }[]>`select id from templates where account_id = ${m.accountId}`
    page = await m.client.get('/dashboard/templates')
    expect(page.text).toContain('&lt;b&gt;promo&lt;/b&gt;')

    const edit = await m.client.get(`/dashboard/templates/${template!.id}`)
    expect(edit.status).toBe(200)
    const badEdit = await m.client.post(`/dashboard/templates/${template!.id}`, { _csrf: csrf, name: 'promo', body: 'Hello {{nama}}' })
    expect(badEdit.status).toBe(422)
    expect(badEdit.text).toContain('unknown placeholder {{nama}}')
    expect(
      (await m.client.post(`/dashboard/templates/${template!.id}`, { _csrf: csrf, name: 'promo', body: 'Hello {{name}} in {{city}}' }))
        .status,
    ).toBe(303)

    // Segments: created with a size, tag rules from the service.
    const contacts = await m.client.get('/dashboard/contacts')
    for (const [i, tags] of ['VIP', 'vip, x', 'other'].entries()) {
      await m.client.post('/dashboard/contacts', { _csrf: contacts.csrf!, name: `c${i}`, phone: `08126666000${i}`, tags })
    }
    const comma = await m.client.post('/dashboard/segments', { _csrf: csrf, name: 'bad', tag: 'a,b' })
    expect(comma.status).toBe(422)
    expect(comma.text).toContain('tag: must not contain a comma')
    expect((await m.client.post('/dashboard/segments', { _csrf: csrf, name: 'vips', tag: 'vip' })).status).toBe(303)
    page = await m.client.get('/dashboard/templates')
    expect(page.text).toContain('<td data-label="Contacts" class="segment-size">2</td>')
    const [segment] = await t.db.sql<{ id: number }[]>`select id from segments where account_id = ${m.accountId}`

    // Another account's template and segment: 404 to see, change or delete, and unchanged.
    const o = await other.client.get('/dashboard/templates')
    await other.client.post('/dashboard/templates', { _csrf: o.csrf!, name: 'theirs', body: 'Theirs' })
    await other.client.post('/dashboard/segments', { _csrf: o.csrf!, name: 'theirs', tag: 'x' })
    const [theirT] = await t.db.sql<{ id: number }[]>`select id from templates where account_id = ${other.accountId}`
    const [theirS] = await t.db.sql<{ id: number }[]>`select id from segments where account_id = ${other.accountId}`
    expect((await m.client.get(`/dashboard/templates/${theirT!.id}`)).status).toBe(404)
    expect((await m.client.post(`/dashboard/templates/${theirT!.id}`, { _csrf: csrf, name: 'mine', body: 'x' })).status).toBe(404)
    expect((await m.client.post(`/dashboard/templates/${theirT!.id}/delete`, { _csrf: csrf })).status).toBe(404)
    expect((await m.client.post(`/dashboard/segments/${theirS!.id}/delete`, { _csrf: csrf })).status).toBe(404)
    expect((await m.client.get('/dashboard/templates/abc')).status).toBe(404)
    expect(await count(t.db.sql`select count(*)::int as n from templates where id = ${theirT!.id} and name = 'theirs'`)).toBe(1)
    expect(await count(t.db.sql`select count(*)::int as n from segments where id = ${theirS!.id}`)).toBe(1)
    // Without the token: nothing deleted.
    expect((await m.client.post(`/dashboard/templates/${template!.id}/delete`, { _csrf: 'no' })).status).toBe(403)

    // In use by a campaign: neither is deleted, the page says why.
    const camp = await m.client.get('/dashboard/campaigns')
    expect(
      (
        await m.client.post('/dashboard/campaigns', {
          _csrf: camp.csrf!,
          name: 'uses them',
          template_id: String(template!.id),
          segment_id: String(segment!.id),
        })
      ).status,
    ).toBe(303)
    const used = await m.client.post(`/dashboard/templates/${template!.id}/delete`, { _csrf: csrf })
    expect(used.status).toBe(409)
    expect(used.text).toMatch(/template \d+ is used by campaign \d+/)
    const usedSegment = await m.client.post(`/dashboard/segments/${segment!.id}/delete`, { _csrf: csrf })
    expect(usedSegment.status).toBe(409)
    expect(usedSegment.text).toMatch(/segment \d+ is used by campaign \d+/)

    // Unused ones are deleted.
    await m.client.post('/dashboard/templates', { _csrf: csrf, name: 'spare', body: 'x' })
    await m.client.post('/dashboard/segments', { _csrf: csrf, name: 'spare', tag: 'spare' })
    const [spareT] = await t.db.sql<{ id: number }[]>`select id from templates where account_id = ${m.accountId} and name = 'spare'`
    const [spareS] = await t.db.sql<{ id: number }[]>`select id from segments where account_id = ${m.accountId} and name = 'spare'`
    expect((await m.client.post(`/dashboard/templates/${spareT!.id}/delete`, { _csrf: csrf })).status).toBe(303)
    expect((await m.client.post(`/dashboard/segments/${spareS!.id}/delete`, { _csrf: csrf })).status).toBe(303)
    expect(await count(t.db.sql`select count(*)::int as n from templates where account_id = ${m.accountId}`)).toBe(1)

    // The operator edits the account's templates at its own path.
    const op = await dashboardUser(t, 'templates-op@example.com', PASSWORD)
    const opPage = await op.client.get(`/dashboard/accounts/${other.accountId}/templates`)
    expect(opPage.text).toContain('theirs')
    expect(
      (
        await op.client.post(`/dashboard/accounts/${other.accountId}/templates/${theirT!.id}`, {
          _csrf: opPage.csrf!,
          name: 'renamed',
          body: 'Hi',
        })
      ).location,
    ).toBe(`/dashboard/accounts/${other.accountId}/templates`)
    expect((await op.client.get(`/dashboard/accounts/${other.accountId}/templates/${template!.id}`)).status).toBe(404)

    expect(await actions(m.accountId)).toEqual([
      'account created',
      'key created',
      'member invited',
      'password set',
      'template created',
      'template changed',
      'contact created',
      'contact created',
      'contact created',
      'segment created',
      'campaign created',
      'template created',
      'segment created',
      'template deleted',
      'segment deleted',
    ])
  })
})

describe('approved templates', () => {
  const SID = 'HX0123456789abcdef0123456789abcdef'

  test('bind and remove on the template page: the rules shown as errors, CSRF, 404s, the operator path, the audit log', async () => {
    const m = await member(100)
    const other = await member()
    const list = await m.client.get('/dashboard/templates')
    const csrf = list.csrf!
    await m.client.post('/dashboard/templates', { _csrf: csrf, name: 'order', body: 'Hi {{name}} in {{city}}' })
    const [template] = await t.db.sql<{ id: number }[]>`select id from templates where account_id = ${m.accountId}`
    const id = template!.id
    const bindings = () =>
      t.db.sql<{ provider: string; ref: string; language: string | null; variables: string[] }[]>`
        select provider, ref, language, variables from template_bindings where template_id = ${id} order by provider`

    const edit = await m.client.get(`/dashboard/templates/${id}`)
    expect(edit.text).toContain('<h2>Approved templates</h2>')
    for (const provider of ['simulator', 'twilio', 'meta']) {
      expect(edit.text).toContain(`action="/dashboard/templates/${id}/bindings/${provider}"`)
    }
    expect(edit.text).toContain('simulator (in use)')
    expect(edit.text).toContain('Not bound: sent as free-form text.')

    // Variables as typed: commas or spaces, with or without braces.
    const bound = await m.client.post(`/dashboard/templates/${id}/bindings/twilio`, { _csrf: csrf, ref: SID, variables: '{{city}}, name' })
    expect([bound.status, bound.location]).toEqual([303, `/dashboard/templates/${id}`])
    expect([...(await bindings())]).toEqual([{ provider: 'twilio', ref: SID, language: null, variables: ['city', 'name'] }])
    expect((await m.client.get(`/dashboard/templates/${id}`)).text).toContain(`Bound to twilio: ${SID}, variables: city, name.`)
    expect((await m.client.get('/dashboard/templates')).text).toContain(`twilio: ${SID}`)

    // The service's rules, shown on the page with what was typed.
    const noLanguage = await m.client.post(`/dashboard/templates/${id}/bindings/meta`, {
      _csrf: csrf,
      ref: 'order_in',
      language: '',
      variables: 'name',
    })
    expect(noLanguage.status).toBe(422)
    expect(noLanguage.text).toContain('language: required for meta templates')
    expect(noLanguage.text).toContain('value="order_in"')
    const notPlaceholder = await m.client.post(`/dashboard/templates/${id}/bindings/meta`, {
      _csrf: csrf,
      ref: 'order_in',
      language: 'id',
      variables: 'name, email',
    })
    expect(notPlaceholder.status).toBe(422)
    expect(notPlaceholder.text).toContain('variables[1]: &quot;email&quot; is not a placeholder of template')

    // Without the token, for another account's template, or a provider without templates: nothing changes.
    expect((await m.client.post(`/dashboard/templates/${id}/bindings/meta`, { _csrf: 'no', ref: 'x', language: 'id' })).status).toBe(403)
    expect((await m.client.post(`/dashboard/templates/${id}/bindings/whatsapp`, { _csrf: csrf, ref: 'x' })).status).toBe(404)
    const o = await other.client.get('/dashboard/templates')
    const theirs = await other.client.post(`/dashboard/templates/${id}/bindings/simulator`, { _csrf: o.csrf!, ref: 'mine' })
    expect(theirs.status).toBe(404)
    expect((await other.client.post(`/dashboard/templates/${id}/bindings/twilio/delete`, { _csrf: o.csrf! })).status).toBe(404)
    expect((await bindings()).map((b) => b.provider)).toEqual(['twilio'])

    // The operator binds at the account's own path; the member removes the Twilio binding.
    const op = await dashboardUser(t, 'bindings-op@example.com', PASSWORD)
    const opPage = await op.client.get(`/dashboard/accounts/${m.accountId}/templates/${id}`)
    expect(opPage.status).toBe(200)
    const opBound = await op.client.post(`/dashboard/accounts/${m.accountId}/templates/${id}/bindings/meta`, {
      _csrf: opPage.csrf!,
      ref: 'order_in',
      language: 'id',
      variables: 'name city',
    })
    expect(opBound.location).toBe(`/dashboard/accounts/${m.accountId}/templates/${id}`)
    const removed = await m.client.post(`/dashboard/templates/${id}/bindings/twilio/delete`, { _csrf: csrf })
    expect([removed.status, removed.location]).toEqual([303, `/dashboard/templates/${id}`])
    expect([...(await bindings())]).toEqual([{ provider: 'meta', ref: 'order_in', language: 'id', variables: ['name', 'city'] }])

    const audit = await t.db.sql<{ action: string; detail: Record<string, unknown> }[]>`
      select action, detail from audit_log where account_id = ${m.accountId} and action like 'template %' order by id`
    expect(audit.map((a) => [a.action, a.detail.provider ?? null])).toEqual([
      ['template created', null],
      ['template bound', 'twilio'],
      ['template bound', 'meta'],
      ['template unbound', 'twilio'],
    ])
    expect(audit[1]!.detail).toEqual({ template_id: id, provider: 'twilio', ref: SID, language: null, variables: ['city', 'name'] })

    // A message sent as the simulator's approved template shows it on its page.
    await m.client.post(`/dashboard/templates/${id}/bindings/simulator`, { _csrf: csrf, ref: 'order_in', variables: 'city' })
    const sent = await t.api('POST', '/messages/send', m.key, {
      to: '081277770001',
      template_id: id,
      variables: { name: 'Ani', city: 'Bogor' },
    })
    expect(sent.status).toBe(200)
    const [message] = await t.db.sql<{ id: number }[]>`select id from messages where account_id = ${m.accountId}`
    const shown = await m.client.get(`/dashboard/messages/${message!.id}`)
    expect(shown.text).toContain('Hi Ani in Bogor')
    expect(shown.text).toContain(`<a href="/dashboard/templates/${id}">order</a>`)
    expect(shown.text).toContain('simulator: order_in, variables: Bogor')
  })
})

describe('campaigns', () => {
  async function setup(balance: number, contacts: number) {
    const m = await member(balance)
    const phones = Array.from({ length: contacts }, (_, i) => `+62814${String(i).padStart(8, '0')}`)
    await t.db.sql`
      insert into contacts (account_id, name, phone, tags)
      select ${m.accountId}, 'Person ' || v.i, v.phone, '{vip}' from unnest(${phones}::text[]) with ordinality as v(phone, i)`
    const page = await m.client.get('/dashboard/templates')
    await m.client.post('/dashboard/templates', { _csrf: page.csrf!, name: 'promo', body: 'Hi {{name}}' })
    await m.client.post('/dashboard/segments', { _csrf: page.csrf!, name: 'vips', tag: 'vip' })
    await m.client.get('/dashboard/campaigns') // the form to create campaigns
    const [ids] = await t.db.sql<{ template: number; segment: number }[]>`
      select (select id from templates where account_id = ${m.accountId}) as template, (select id from segments where account_id = ${m.accountId}) as segment`
    return { ...m, csrf: page.csrf!, templateId: ids!.template, segmentId: ids!.segment }
  }

  const progress = async (client: Client, path: string) => {
    const page = await client.get(path)
    expect(page.headers.get('content-type')).toContain('application/json')
    return JSON.parse(page.text)
  }

  test('create, run now, workers stepped to the end: the progress JSON equals the admin API stats; the page shows the numbers', async () => {
    const a = await setup(10_000, 30)
    const form = { _csrf: a.csrf, name: '<script>x</script> promo', template_id: String(a.templateId), segment_id: String(a.segmentId) }
    const badTime = await a.client.post('/dashboard/campaigns', { ...form, schedule_at: 'tomorrow' })
    expect(badTime.status).toBe(422)
    expect(badTime.text).toContain('schedule_at: must be a timestamp YYYY-MM-DD HH:MM:SS')
    const created = await a.client.post('/dashboard/campaigns', form)
    expect(created.status).toBe(303)
    const id = Number(created.location!.split('/').pop())
    let page = await a.client.get(`/dashboard/campaigns/${id}`)
    expect(page.text).toContain('&lt;script&gt;x&lt;/script&gt; promo')
    expect(page.text).not.toContain('<script>x')
    expect(page.text).toContain('<script src="/dashboard/assets/campaign.js" defer></script>')
    expect(page.text).toContain(`data-progress-url="/dashboard/campaigns/${id}/progress"`)
    expect(page.text).toContain('<dd id="campaign-status">draft</dd>')
    expect(page.text).toContain('<div class="value" id="count-total">30</div>')
    expect(page.text).toMatch(/<progress id="progress-bar" max="30" value="0">/)

    // The list shows it with its status and counts.
    const list = await a.client.get('/dashboard/campaigns')
    expect(list.text).toContain(`href="/dashboard/campaigns/${id}"`)
    expect(list.text).toContain('<td data-label="Status">draft</td>')

    const run = await a.client.post(`/dashboard/campaigns/${id}/run`, { _csrf: a.csrf })
    expect([run.status, run.location]).toEqual([303, `/dashboard/campaigns/${id}`])
    const again = await a.client.post(`/dashboard/campaigns/${id}/run`, { _csrf: a.csrf })
    expect(again.status).toBe(409)
    expect(again.text).toContain('only a draft can be run')

    await drain(t, clock, 'campaign-runner')
    await drain(t, clock, 'simulator-reports')
    const p = await progress(a.client, `/dashboard/campaigns/${id}/progress`)
    const admin = await t.admin('GET', `/campaigns/${id}`)
    expect(p).toEqual({ status: 'sent', pause_reason: null, stats: admin.body.data.stats, pending: 0 })
    expect(p.stats).toEqual({
      total: 30,
      sent: 30,
      delivered: 30,
      read: 30,
      failed: 0,
      window_closed: 0,
      opted_out: 0,
      missing_values: 0,
      user_id_only: 0,
    })
    page = await a.client.get(`/dashboard/campaigns/${id}`)
    expect(page.text).toContain('<dd id="campaign-status">sent</dd>')
    expect(page.text).toContain('<div class="value" id="count-read">30</div>')
    expect(page.text).toMatch(/<progress id="progress-bar" max="30" value="30">/)
    expect(page.text).not.toContain('Run now')
    expect(page.text).not.toContain('Cancel campaign')

    const script = await a.client.get('/dashboard/assets/campaign.js')
    expect(script.status).toBe(200)
    expect(script.headers.get('content-type')).toContain('text/javascript')
    expect(script.text).toContain('data-progress-url')
    expect(await actions(a.accountId)).toContain('campaign run')
  })

  test("scheduled, paused and resumed, cancelled; another account's campaign is 404; the operator's path", async () => {
    const a = await setup(0, 5) // no balance: the run pauses
    const base = { _csrf: a.csrf, template_id: String(a.templateId), segment_id: String(a.segmentId) }
    const later = await a.client.post('/dashboard/campaigns', { ...base, name: 'later', schedule_at: '2999-01-01 09:00:00' })
    const laterId = Number(later.location!.split('/').pop())
    let page = await a.client.get(`/dashboard/campaigns/${laterId}`)
    expect(page.text).toContain('Run at its schedule')
    await a.client.post(`/dashboard/campaigns/${laterId}/run`, { _csrf: a.csrf })
    expect((await progress(a.client, `/dashboard/campaigns/${laterId}/progress`)).status).toBe('scheduled')
    expect((await a.client.post(`/dashboard/campaigns/${laterId}/cancel`, { _csrf: 'no' })).status).toBe(403)
    expect((await a.client.post(`/dashboard/campaigns/${laterId}/cancel`, { _csrf: a.csrf })).status).toBe(303)
    expect((await progress(a.client, `/dashboard/campaigns/${laterId}/progress`)).status).toBe('cancelled')

    // No balance: it pauses with the reason; resume after a top-up.
    const now = await a.client.post('/dashboard/campaigns', { ...base, name: 'now' })
    const nowId = Number(now.location!.split('/').pop())
    await a.client.post(`/dashboard/campaigns/${nowId}/run`, { _csrf: a.csrf })
    await clock.run(t.runWorker('campaign-runner'))
    page = await a.client.get(`/dashboard/campaigns/${nowId}`)
    expect(page.text).toContain('<dd id="campaign-status">paused</dd>')
    expect(page.text).toContain('insufficient balance')
    expect(page.text).toContain('>Resume</button>')

    // Another account: the campaign, its progress and its changes are 404, and nothing changes.
    const b = await member()
    const bPage = await b.client.get('/dashboard/campaigns')
    for (const path of [`/dashboard/campaigns/${nowId}`, `/dashboard/campaigns/${nowId}/progress`]) {
      expect({ path, status: (await b.client.get(path)).status }).toEqual({ path, status: 404 })
    }
    for (const action of ['run', 'resume', 'cancel']) {
      expect((await b.client.post(`/dashboard/campaigns/${nowId}/${action}`, { _csrf: bPage.csrf! })).status).toBe(404)
    }
    expect((await t.admin('GET', `/campaigns/${nowId}`)).body.data.campaign.status).toBe('paused')
    // A template of another account cannot be used for a campaign.
    await b.client.get('/dashboard/templates') // b has no campaign form: a single-use token of another of its forms
    const foreign = await b.client.post('/dashboard/campaigns', {
      _csrf: bPage.csrf!,
      _once: (await b.client.formToken('/dashboard/templates'))!,
      name: 'x',
      template_id: String(a.templateId),
      segment_id: String(a.segmentId),
    })
    expect(foreign.status).toBe(422)

    // The operator tops up and resumes at the account's own path.
    const op = await dashboardUser(t, 'campaigns-op@example.com', PASSWORD)
    const opAccount = await op.client.get(`/dashboard/accounts/${a.accountId}`)
    await op.client.post(`/dashboard/accounts/${a.accountId}/topups`, { _csrf: opAccount.csrf!, amount: '100000' })
    const opPage = await op.client.get(`/dashboard/accounts/${a.accountId}/campaigns/${nowId}`)
    expect(opPage.text).toContain(`data-progress-url="/dashboard/accounts/${a.accountId}/campaigns/${nowId}/progress"`)
    const resumed = await op.client.post(`/dashboard/accounts/${a.accountId}/campaigns/${nowId}/resume`, { _csrf: opPage.csrf! })
    expect(resumed.location).toBe(`/dashboard/accounts/${a.accountId}/campaigns/${nowId}`)
    await clock.run(t.runWorker('campaign-runner'))
    const p = await progress(op.client, `/dashboard/accounts/${a.accountId}/campaigns/${nowId}/progress`)
    expect(p.status).toBe('sent')
    expect(p.stats.total).toBe(5)
    expect((await op.client.get(`/dashboard/accounts/${b.accountId}/campaigns/${nowId}`)).status).toBe(404)
    expect(await actions(a.accountId)).toEqual(
      expect.arrayContaining(['campaign created', 'campaign run', 'campaign cancelled', 'top-up', 'campaign resumed']),
    )
  })
})
