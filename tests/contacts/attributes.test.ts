// A contact's own attributes (issue 30): text to text, set and shown through the API (create, read,
// change as a merge patch), checked with a 422 naming the key; contactValue reads a campaign's
// parameter from a field, an attribute or a constant.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
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
