// A contact's own attributes (issue 30): text to text, set and shown through the API (create, read,
// change as a merge patch), the dashboard (the add form, the contact's page, CSV import and export
// with a column attr:KEY each), checked with a 422 naming the key; contactValue reads a campaign's
// parameter from a field, an attribute or a constant.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { dashboardUser, webClient } from '../helpers/web'
import { contactValue } from '../../src/modules/contacts/values'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
}, 60_000)
afterAll(() => t.close())

let phones = 0
const phone = () => `0812${String(7_000_000 + ++phones).padStart(8, '0')}`
const many = (n: number, value = 'x') => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value]))

describe('through the API', () => {
  test('a contact is created with its attributes and shows them in the answer, the list and its own GET', async () => {
    const { key } = await t.account()
    const attributes = { order_id: 'INV-1001', Due_Date_2: '5 December', note: '  spaces kept  ' }
    const made = await t.api('POST', '/contacts', key, { name: 'Budi', phone: phone(), attributes })
    expect(made.status).toBe(201)
    expect(made.body.data.attributes).toEqual(attributes)
    expect(Object.keys(made.body.data.attributes)).toEqual(['Due_Date_2', 'note', 'order_id']) // in order, whatever jsonb keeps
    const id = made.body.data.id
    const one = await t.api('GET', `/contacts/${id}`, key)
    expect(one.status).toBe(200)
    expect(one.body.data).toEqual(made.body.data)
    const list = await t.api('GET', '/contacts', key)
    expect(list.body.data.items).toEqual([made.body.data])
  })

  test('without attributes a contact has {}; an empty value means none', async () => {
    const { key } = await t.account()
    const bare = await t.api('POST', '/contacts', key, { name: 'Ani', phone: phone() })
    expect(bare.body.data.attributes).toEqual({})
    const empty = await t.api('POST', '/contacts', key, { name: 'Ani', phone: phone(), attributes: { a: '', b: 'B' } })
    expect(empty.body.data.attributes).toEqual({ b: 'B' })
  })

  test('PATCH merges: a key given is set, null or "" removes it, the others stay', async () => {
    const { key } = await t.account()
    const made = await t.api('POST', '/contacts', key, { name: 'Budi', phone: phone(), attributes: { a: '1', b: '2', c: '3' } })
    const id = made.body.data.id
    const changed = await t.api('PATCH', `/contacts/${id}`, key, { attributes: { a: 'one', b: null, c: '', d: '4' } })
    expect(changed.status).toBe(200)
    expect(changed.body.data).toEqual({ ...made.body.data, attributes: { a: 'one', d: '4' } })
    expect((await t.api('GET', `/contacts/${id}`, key)).body.data.attributes).toEqual({ a: 'one', d: '4' })
    // Removing a key it does not have changes nothing; an empty patch neither.
    expect((await t.api('PATCH', `/contacts/${id}`, key, { attributes: { zz: null } })).body.data.attributes).toEqual({ a: 'one', d: '4' })
    expect((await t.api('PATCH', `/contacts/${id}`, key, { attributes: {} })).body.data.attributes).toEqual({ a: 'one', d: '4' })
  })

  test('concurrent changes of different keys all count (the row is locked while merging)', async () => {
    const { key } = await t.account()
    const id = (await t.api('POST', '/contacts', key, { name: 'Budi', phone: phone() })).body.data.id
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => t.api('PATCH', `/contacts/${id}`, key, { attributes: { [`k${i}`]: String(i) } })),
    )
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200])
    expect((await t.api('GET', `/contacts/${id}`, key)).body.data.attributes).toEqual({
      k0: '0',
      k1: '1',
      k2: '2',
      k3: '3',
      k4: '4',
      k5: '5',
    })
  })

  test("another account's contact is 404 to GET and PATCH, and is not changed", async () => {
    const a = await t.account()
    const b = await t.account()
    const id = (await t.api('POST', '/contacts', a.key, { name: 'Budi', phone: phone(), attributes: { x: '1' } })).body.data.id
    for (const [method, body] of [['GET'], ['PATCH', { attributes: { x: '2' } }]] as const) {
      const res = await t.api(method, `/contacts/${id}`, b.key, body)
      expect(res.status).toBe(404)
      expect(res.body).toEqual(errorEnvelope(res.headers, 'NOT_FOUND', `contact ${id} not found`))
    }
    expect((await t.api('GET', `/contacts/${id}`, a.key)).body.data.attributes).toEqual({ x: '1' })
    for (const bad of ['0', '99999999999999999999']) expect((await t.api('GET', `/contacts/${bad}`, a.key)).status).toBe(404)
    expect((await t.api('GET', '/contacts/abc', a.key)).status).toBe(400)
  })

  test('422 naming the key: its characters, its length, the value, the count; nothing stored', async () => {
    const { key } = await t.account()
    const long = 'k'.repeat(65)
    const cases: [Record<string, unknown>, string][] = [
      [{ 'order-id': 'x' }, 'attributes."order-id": a key is made of letters, digits and underscores'],
      [{ ünï: 'x' }, 'attributes."ünï": a key is made of letters, digits and underscores'],
      [{ '': 'x' }, 'attributes."": a key must not be empty'],
      [{ [long]: 'x' }, `attributes."${'k'.repeat(64)}…": a key must be at most 64 characters`],
      [{ order_id: 'x'.repeat(1025) }, 'attributes.order_id: must be at most 1024 characters'],
      [{ order_id: 'a\u0000b' }, 'attributes.order_id: text must not contain NUL characters (\\u0000)'],
      [{ ...many(50), extra: 'x' }, 'attributes.extra: a contact has at most 50 attributes'],
    ]
    for (const [attributes, message] of cases) {
      const res = await t.api('POST', '/contacts', key, { name: 'Budi', phone: '081299990000', attributes })
      expect({ status: res.status, body: res.body }).toEqual({
        status: 422,
        body: errorEnvelope(res.headers, 'VALIDATION_ERROR', message),
      })
    }
    // At the limits it is accepted.
    const full = await t.api('POST', '/contacts', key, {
      name: 'Budi',
      phone: '081299990000',
      attributes: { ...many(49), ['k'.repeat(64)]: 'v'.repeat(1024) },
    })
    expect(full.status).toBe(201)
    expect(Object.keys(full.body.data.attributes)).toHaveLength(50)
    // A value that is not text is the shape's 400.
    const shape = await t.api('POST', '/contacts', key, { name: 'Budi', phone: phone(), attributes: { n: 5 } })
    expect(shape.status).toBe(400)
    expect(shape.body.error).toMatch(/^attributes/)
    expect((await t.api('POST', '/contacts', key, { name: 'Budi', phone: phone(), attributes: ['x'] })).status).toBe(400)
  })

  test('PATCH over the limit is 422 naming the first key over it, and changes nothing; removing makes room', async () => {
    const { key } = await t.account()
    const made = await t.api('POST', '/contacts', key, { name: 'Budi', phone: phone(), attributes: many(50) })
    const id = made.body.data.id
    const over = await t.api('PATCH', `/contacts/${id}`, key, { attributes: { k0: 'changed', new_one: 'x' } })
    expect(over.status).toBe(422)
    expect(over.body.error).toBe('attributes.new_one: a contact has at most 50 attributes')
    expect((await t.api('GET', `/contacts/${id}`, key)).body.data.attributes).toEqual(many(50))
    const swapped = await t.api('PATCH', `/contacts/${id}`, key, { attributes: { k0: null, new_one: 'x' } })
    expect(swapped.status).toBe(200)
    expect(swapped.body.data.attributes).toEqual({ ...many(50), k0: undefined, new_one: 'x' })
    expect((await t.api('PATCH', `/contacts/${id}`, key, { attributes: { 'bad key': 'x' } })).status).toBe(422)
    expect((await t.api('PATCH', `/contacts/${id}`, key, { name: 'x', attributes: {} })).status).toBe(400)
    expect((await t.api('PATCH', `/contacts/${id}`, key, {})).status).toBe(400)
  })

  test('constructor is a key like any other; __proto__ never gets through the JSON parser, and pollutes nothing', async () => {
    const { key } = await t.account()
    const made = await t.api('POST', '/contacts', key, {
      name: 'Budi',
      phone: phone(),
      attributes: JSON.parse('{"__proto__":{"polluted":"yes"},"constructor":"c","toString":"s"}'),
    })
    expect(made.status).toBe(201)
    expect(made.body.data.attributes).toEqual({ constructor: 'c', toString: 's' })
    const [row] = await t.db.sql<{ attributes: string }[]>`select attributes::text from contacts where id = ${made.body.data.id}`
    expect(JSON.parse(row!.attributes)).toEqual({ constructor: 'c', toString: 's' })
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })
})

let members = 0
async function member() {
  const account = await t.account()
  const user = await dashboardUser(t, `attributes-${++members}@example.com`, 'correct horse battery', account.accountId)
  return { ...account, client: user.client }
}
const notice = (text: string) => /<p class="notice" role="status">([^<]*)<\/p>/.exec(text)?.[1]
const attributesOf = async (accountId: number, phone: string) =>
  (
    await t.db.sql<{ attributes: string }[]>`select attributes::text from contacts where account_id = ${accountId} and phone = ${phone}`
  ).map((r) => JSON.parse(r.attributes))[0]

describe('in the dashboard', () => {
  test('the add form takes name = value lines; a bad line or key is shown at its field with what was typed kept', async () => {
    const m = await member()
    const page = await m.client.get('/dashboard/contacts')
    expect(page.text).toMatch(/<textarea[^>]*id="contact-attributes"/)
    const lines = 'order_id = INV-1001\r\n\r\n  due_date=5 December \nempty =\n'
    const added = await m.client.post('/dashboard/contacts', { _csrf: page.csrf!, name: 'Budi', phone: '081255550001', attributes: lines })
    expect(added.status).toBe(303)
    expect(await attributesOf(m.accountId, '+6281255550001')).toEqual({ order_id: 'INV-1001', due_date: '5 December' })
    const list = await m.client.get('/dashboard/contacts')
    expect(list.text).toContain('<li>due_date = 5 December</li><li>order_id = INV-1001</li>')

    for (const [attributes, message] of [
      ['order_id INV-1', 'attributes: line 1 has no &quot;=&quot;: write one name = value a line'],
      ['a = 1\na = 2', 'attributes: line 2: a is given twice'],
      ['order-id = 1', 'attributes: &quot;order-id&quot;: a key is made of letters, digits and underscores'],
      [`note = ${'x'.repeat(1025)}`, 'attributes: note: must be at most 1024 characters'],
    ] as const) {
      const bad = await m.client.post('/dashboard/contacts', { _csrf: page.csrf!, name: 'Ani', phone: '081255550002', attributes })
      expect(bad.status).toBe(422)
      expect(bad.text).toContain(message)
      // At the field: the textarea is marked invalid, focused and keeps what was typed.
      expect(bad.text).toMatch(/<textarea[^>]*id="contact-attributes"[^>]*aria-invalid="true"/)
      expect(bad.text).toContain(attributes.split('\n')[0]!.slice(0, 20))
    }
    expect(await attributesOf(m.accountId, '+6281255550002')).toBeUndefined()
  })

  test("the contact's page shows its attributes and its form replaces them; another account's contact is not found", async () => {
    const m = await member()
    const made = await t.api('POST', '/contacts', m.key, { name: 'Budi', phone: '081255550003', attributes: { a: '1', b: '2' } })
    const id = made.body.data.id
    const page = await m.client.get(`/dashboard/contacts/${id}`)
    expect(page.status).toBe(200)
    expect(page.text).toMatch(/<textarea[^>]*id="attributes-attributes"[^>]*>a = 1\nb = 2<\/textarea>/)
    const saved = await m.client.post(`/dashboard/contacts/${id}/attributes`, { _csrf: page.csrf!, attributes: 'a = one\nc = 3\n' })
    expect(saved.status).toBe(303)
    expect(notice((await m.client.follow(saved)).text)).toBe('Attributes of Budi saved: 2 attributes.')
    expect((await t.api('GET', `/contacts/${id}`, m.key)).body.data.attributes).toEqual({ a: 'one', c: '3' })
    const bad = await m.client.post(`/dashboard/contacts/${id}/attributes`, { _csrf: page.csrf!, attributes: 'ok = 1\nbad key = 2' })
    expect(bad.status).toBe(422)
    expect(bad.text).toContain('attributes: &quot;bad key&quot;: a key is made of letters, digits and underscores')
    expect(bad.text).toMatch(/<textarea[^>]*aria-invalid="true"[^>]*>ok = 1\nbad key = 2<\/textarea>/)
    expect((await t.api('GET', `/contacts/${id}`, m.key)).body.data.attributes).toEqual({ a: 'one', c: '3' })
    const cleared = await m.client.post(`/dashboard/contacts/${id}/attributes`, { _csrf: page.csrf!, attributes: '' })
    expect(notice((await m.client.follow(cleared)).text)).toBe('Attributes of Budi saved: 0 attributes.')
    expect((await m.client.get(`/dashboard/contacts/${id}`)).text).toContain('No attributes yet.')
    const [audit] = await t.db.sql<{ detail: unknown }[]>`
      select detail from audit_log where account_id = ${m.accountId} and action = 'contact attributes changed' order by id limit 1`
    expect(audit!.detail).toEqual({ contact_id: id, keys: ['a', 'c'] })

    const other = await member()
    expect((await other.client.get(`/dashboard/contacts/${id}`)).status).toBe(404)
    const csrf = (await other.client.get('/dashboard/contacts')).csrf!
    expect((await other.client.post(`/dashboard/contacts/${id}/attributes`, { _csrf: csrf, attributes: 'x = 1' })).status).toBe(404)
    expect((await t.api('GET', `/contacts/${id}`, m.key)).body.data.attributes).toEqual({})
    expect((await m.client.get('/dashboard/contacts/999999999999')).status).toBe(404)
    // No CSRF token, no change.
    expect((await m.client.post(`/dashboard/contacts/${id}/attributes`, { attributes: 'x = 1' })).status).toBe(403)
  })

  test('CSV import takes a column attr:KEY per attribute (an empty cell is none); the export writes them and imports again', async () => {
    const m = await member()
    const page = await m.client.get('/dashboard/contacts')
    const csv = [
      'name,phone,ATTR:order_id,attr:Due_Date,tags',
      'Budi,081255550010,INV-1,5 December,vip',
      'Ani,081255550011,,6 December,',
      `Eko,081255550012,${'x'.repeat(1025)},,`,
    ].join('\n')
    const imported = await m.client.follow(await m.client.post('/dashboard/contacts/import', { _csrf: page.csrf!, mode: 'valid', csv }))
    expect(/id="imported">(\d+)</.exec(imported.text)![1]).toBe('2')
    expect(imported.text).toContain('attributes.order_id: must be at most 1024 characters')
    expect(await attributesOf(m.accountId, '+6281255550010')).toEqual({ order_id: 'INV-1', Due_Date: '5 December' })
    expect(await attributesOf(m.accountId, '+6281255550011')).toEqual({ Due_Date: '6 December' })

    const exported = await m.client.get('/dashboard/contacts.csv')
    expect(exported.status).toBe(200)
    expect(exported.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(exported.text).toBe(
      'name,phone,email,city,tags,attr:Due_Date,attr:order_id\r\n' +
        'Budi,+6281255550010,,,vip,5 December,INV-1\r\n' +
        'Ani,+6281255550011,,,,6 December,\r\n',
    )
    // The export imports again, into another account, with the same attributes.
    const other = await member()
    const otherPage = await other.client.get('/dashboard/contacts')
    const again = await other.client.follow(
      await other.client.post('/dashboard/contacts/import', { _csrf: otherPage.csrf!, mode: 'all', csv: exported.text }),
    )
    expect(/id="imported">(\d+)</.exec(again.text)![1]).toBe('2')
    expect(await attributesOf(other.accountId, '+6281255550010')).toEqual({ order_id: 'INV-1', Due_Date: '5 December' })
    expect((await other.client.get(`/dashboard/accounts/${m.accountId}/contacts.csv`)).status).toBe(404)
  })

  test("an operator sees and changes an account's contact at its path; signed out, every new page leads to sign-in", async () => {
    const { accountId, key } = await t.account()
    const id = (await t.api('POST', '/contacts', key, { name: 'Citra', phone: phone(), attributes: { tier: 'gold' } })).body.data.id
    const op = await dashboardUser(t, `attributes-op-${++members}@example.com`, 'correct horse battery')
    const base = `/dashboard/accounts/${accountId}/contacts`
    const page = await op.client.get(`${base}/${id}`)
    expect(page.status).toBe(200)
    expect(page.text).toContain('>tier = gold</textarea>')
    const saved = await op.client.post(`${base}/${id}/attributes`, { _csrf: page.csrf!, attributes: 'tier = silver' })
    expect(saved.location).toBe(`${base}/${id}`)
    expect((await t.api('GET', `/contacts/${id}`, key)).body.data.attributes).toEqual({ tier: 'silver' })
    expect((await op.client.get(`${base}.csv`)).text).toContain('attr:tier')
    // A member of another account cannot take the operator's path.
    const m = await member()
    expect((await m.client.get(`${base}/${id}`)).status).toBe(404)

    const anon = webClient(t)
    for (const path of ['/dashboard/contacts/1', '/dashboard/contacts.csv', `${base}/${id}`, `${base}.csv`]) {
      expect((await anon.get(path)).location).toBe('/dashboard/sign-in')
    }
  })

  test("CSV import: a bad attribute column is the header's error; at most 50 attribute columns", async () => {
    const m = await member()
    const page = await m.client.get('/dashboard/contacts')
    const post = (csv: string) => m.client.post('/dashboard/contacts/import', { _csrf: page.csrf!, mode: 'valid', csv })
    const badKey = await post('name,phone,attr:order id\nA,081255550020,1')
    expect(badKey.status).toBe(422)
    expect(badKey.text).toContain('The column &quot;attr:order id&quot;: a key is made of letters, digits and underscores.')
    expect((await post('name,phone,attr:\nA,081255550020,1')).text).toContain('The column &quot;attr:&quot;: a key must not be empty.')
    expect((await post('name,phone,attr:a,attr:a\nA,081255550020,1,2')).text).toContain('The column &quot;attr:a&quot; appears twice')
    const wide = `name,phone,${Array.from({ length: 51 }, (_, i) => `attr:k${i}`).join(',')}\nA,081255550020`
    expect((await post(wide)).text).toContain('The header row has 51 attribute columns; a contact has at most 50 attributes.')
    expect(await attributesOf(m.accountId, '+6281255550020')).toBeUndefined()
  })
})

describe('contactValue', () => {
  const contact = { name: 'Budi', phone: '+6281234567890', email: null, city: 'Bandung', attributes: { order_id: 'INV-1001', empty: '' } }

  test('a field, an attribute or a constant; undefined when the contact has none', () => {
    expect(contactValue(contact, { field: 'name' })).toBe('Budi')
    expect(contactValue(contact, { field: 'phone' })).toBe('+6281234567890')
    expect(contactValue(contact, { field: 'city' })).toBe('Bandung')
    expect(contactValue(contact, { field: 'email' })).toBeUndefined()
    expect(contactValue(contact, { attribute: 'order_id' })).toBe('INV-1001')
    expect(contactValue(contact, { attribute: 'ORDER_ID' })).toBeUndefined()
    expect(contactValue(contact, { attribute: 'missing' })).toBeUndefined()
    expect(contactValue(contact, { attribute: 'empty' })).toBeUndefined()
    expect(contactValue(contact, { constant: 'Toko Maju' })).toBe('Toko Maju')
    expect(contactValue(contact, { constant: '' })).toBeUndefined()
  })

  test('only its own attributes and the four fields count', () => {
    for (const attribute of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      expect(contactValue(contact, { attribute })).toBeUndefined()
    }
    expect(contactValue(contact, { field: 'attributes' as never })).toBeUndefined()
    const own = { ...contact, attributes: JSON.parse('{"constructor":"c","__proto__":"p"}') }
    expect(contactValue(own, { attribute: 'constructor' })).toBe('c')
    expect(contactValue(own, { attribute: '__proto__' })).toBe('p')
  })

  test('reads a contact as the API shows it', async () => {
    const { key } = await t.account()
    const made = await t.api('POST', '/contacts', key, { name: 'Budi', phone: phone(), attributes: { invoice: 'INV-7' } })
    expect(contactValue(made.body.data, { attribute: 'invoice' })).toBe('INV-7')
    expect(contactValue(made.body.data, { field: 'phone' })).toBe(made.body.data.phone)
  })
})
