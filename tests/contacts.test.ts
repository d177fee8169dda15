import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from './helpers/app'
import { errorEnvelope } from './helpers/envelope'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
}, 60_000)
afterAll(() => t.close())

const contact = (phone: string, extra: Record<string, unknown> = {}) => ({ name: 'Budi Santoso', phone, ...extra })

describe('POST /contacts', () => {
  test('201 with the normalised phone, trimmed fields and tags as an array', async () => {
    const { key } = await t.account()
    const res = await t.api('POST', '/contacts', key, {
      name: '  Budi Santoso ',
      phone: '0812-3456-7890',
      email: 'budi@example.com',
      city: 'Bandung',
      tags: ' vip, reseller,,vip , ,jakarta ',
    })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      success: true,
      data: {
        id: expect.any(Number),
        name: 'Budi Santoso',
        phone: '+6281234567890',
        email: 'budi@example.com',
        city: 'Bandung',
        tags: ['vip', 'reseller', 'jakarta'],
        attributes: {},
        // Extension (issue 32): a WhatsApp user id, when Meta named one in an inbound message.
        user_id: null,
        created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
      },
    })
  })

  test('optional fields absent or blank come back as null and []', async () => {
    const { key } = await t.account()
    const bare = await t.api('POST', '/contacts', key, contact('6281234567891'))
    expect(bare.status).toBe(201)
    expect(bare.body.data).toMatchObject({ phone: '+6281234567891', email: null, city: null, tags: [] })
    const blank = await t.api('POST', '/contacts', key, contact('+6281234567892', { email: '', city: '  ', tags: ' , ' }))
    expect(blank.status).toBe(201)
    expect(blank.body.data).toMatchObject({ email: null, city: null, tags: [] })
  })

  test('409 CONFLICT for the same normalised phone in the account, whatever its form', async () => {
    const { key } = await t.account()
    expect((await t.api('POST', '/contacts', key, contact('081234567893'))).status).toBe(201)
    for (const phone of ['081234567893', '6281234567893', '+62 812-3456-7893']) {
      const res = await t.api('POST', '/contacts', key, contact(phone, { name: 'Someone else' }))
      expect(res.status).toBe(409)
      expect(res.body).toEqual(errorEnvelope(res.headers, 'CONFLICT', expect.stringMatching(/^phone: /)))
    }
  })

  test('the same phone in another account is not a duplicate', async () => {
    const a = await t.account()
    const b = await t.account()
    expect((await t.api('POST', '/contacts', a.key, contact('081234567894'))).status).toBe(201)
    expect((await t.api('POST', '/contacts', b.key, contact('081234567894'))).status).toBe(201)
  })

  test('concurrent creates of one number: one 201, the rest 409', async () => {
    const { key } = await t.account()
    const results = await Promise.all(Array.from({ length: 5 }, () => t.api('POST', '/contacts', key, contact('081234567895'))))
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409])
  })

  test('validation: 400 for shape, 422 for values, each naming the field', async () => {
    const { key, accountId } = await t.account()
    const cases: [unknown, number, RegExp][] = [
      [{ phone: '081234567890' }, 400, /^name: is required/],
      [{ name: 'A' }, 400, /^phone: is required/],
      [{ name: 5, phone: '081234567890' }, 400, /^name: must be a string/],
      [{ name: 'A', phone: 81234567890 }, 400, /^phone: must be a string/],
      [{ name: 'A', phone: '081234567890', email: 5 }, 400, /^email: must be a string/],
      [{ name: 'A', phone: '081234567890', city: true }, 400, /^city: must be a string/],
      [{ name: 'A', phone: '081234567890', tags: ['vip'] }, 400, /^tags: must be a string/],
      [[], 400, /body must be a JSON object/],
      ['text', 400, /body must be a JSON object/],
      [{ name: '', phone: '081234567890' }, 422, /^name: must not be empty/],
      [{ name: '   ', phone: '081234567890' }, 422, /^name: must not be empty/],
      [{ name: 'x'.repeat(201), phone: '081234567890' }, 422, /^name: must be at most 200/],
      [{ name: 'A', phone: '12345' }, 422, /^phone: not a valid Indonesian phone number/],
      [{ name: 'A', phone: '0212345678' }, 422, /^phone: not a valid Indonesian phone number/],
      [{ name: 'A', phone: '081234567890', email: 'not-an-email' }, 422, /^email: not a valid e-mail address/],
      [{ name: 'A', phone: '081234567890', email: 'a@b' }, 422, /^email: not a valid e-mail address/],
      [{ name: 'A', phone: '081234567890', email: 'a b@example.com' }, 422, /^email: not a valid e-mail address/],
      [{ name: 'A', phone: '081234567890', email: `${'a'.repeat(250)}@example.com` }, 422, /^email: must be at most 254/],
      [{ name: 'A', phone: '081234567890', city: 'x'.repeat(201) }, 422, /^city: must be at most 200/],
      [{ name: 'A', phone: '081234567890', tags: 'x'.repeat(101) }, 422, /^tags: each tag must be at most 100/],
      [{ name: 'A', phone: '081234567890', tags: Array.from({ length: 51 }, (_, i) => `t${i}`).join(',') }, 422, /^tags: at most 50/],
    ]
    for (const [body, status, message] of cases) {
      const res = await t.api('POST', '/contacts', key, body)
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status, code: 'VALIDATION_ERROR' })
      expect(res.body.error).toMatch(message)
    }
    const bad = await t.request('POST', '/api/v1/contacts', { key, rawBody: '{"name": ', headers: { 'content-type': 'application/json' } })
    expect(bad.status).toBe(400)
    expect(bad.body).toEqual(errorEnvelope(bad.headers, 'VALIDATION_ERROR', 'body is not valid JSON'))
    const [count] = await t.db.sql`select count(*)::int as n from contacts where account_id = ${accountId}`
    expect(count!.n).toBe(0)
  })

  test('401 before validation', async () => {
    const missing = await t.request('POST', '/api/v1/contacts', { body: { name: 1 } })
    expect(missing.status).toBe(401)
    expect(missing.body.code).toBe('AUTH_MISSING_HEADER')
    const wrong = await t.request('POST', '/api/v1/contacts', { key: 'pm_' + 'x'.repeat(40), body: contact('081234567890') })
    expect(wrong.status).toBe(401)
    expect(wrong.body.code).toBe('AUTH_INVALID_KEY')
  })
})

describe('GET /contacts', () => {
  test('401 without a key or with a deactivated one', async () => {
    expect((await t.request('GET', '/api/v1/contacts')).body.code).toBe('AUTH_MISSING_HEADER')
    const { key, keyId } = await t.account()
    await t.admin('PATCH', `/keys/${keyId}`, { active: false })
    const res = await t.api('GET', '/contacts', key)
    expect(res.status).toBe(401)
    expect(res.body.code).toBe('AUTH_INVALID_KEY')
  })

  test('an empty account lists nothing', async () => {
    const { key } = await t.account()
    const res = await t.api('GET', '/contacts', key)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, data: { items: [], total: 0, limit: 50, offset: 0, has_more: false } })
  })

  test('newest first, ties broken by id; offset counts records; total counts all', async () => {
    const { key, accountId } = await t.account()
    // Five rows with one creation time and two older ones: the order must still be stable.
    await t.db.sql`
      insert into contacts (account_id, name, phone, created_at)
      select ${accountId}, 'same ' || g, '+628110000000' || g, '2025-01-01 00:00:00+00'
      from generate_series(1, 5) g`
    await t.db.sql`
      insert into contacts (account_id, name, phone, created_at)
      values (${accountId}, 'old', '+62811000000099', '2024-01-01 00:00:00+00'),
             (${accountId}, 'new', '+62811000000098', '2026-01-01 00:00:00+00')`
    const all = await t.api('GET', '/contacts', key)
    expect(all.body.data.total).toBe(7)
    expect(all.body.data.items.map((c: { name: string }) => c.name)).toEqual([
      'new',
      'same 5',
      'same 4',
      'same 3',
      'same 2',
      'same 1',
      'old',
    ])
    const ids = all.body.data.items.map((c: { id: number }) => c.id)
    expect(all.body.data.items[1].created_at).toBe('2025-01-01 00:00:00')

    const pages: number[] = []
    for (let offset = 0; offset < 7; offset += 2) {
      const res = await t.api('GET', `/contacts?limit=2&offset=${offset}`, key)
      expect(res.body.data).toMatchObject({ total: 7, limit: 2, offset, has_more: offset + 2 < 7 })
      pages.push(...res.body.data.items.map((c: { id: number }) => c.id))
    }
    expect(pages).toEqual(ids)
    const past = await t.api('GET', '/contacts?offset=7', key)
    expect(past.body.data).toEqual({ items: [], total: 7, limit: 50, offset: 7, has_more: false })
  })

  test('search: case-insensitive substring of name, phone or e-mail', async () => {
    const { key } = await t.account()
    const make = (name: string, phone: string, email?: string) => t.api('POST', '/contacts', key, { name, phone, email, city: 'Medan' })
    await make('Budi Santoso', '081211110001', 'budi@example.com')
    await make('Siti Aminah', '081222220002', 'siti@Mail.example')
    await make('Agus Budiman', '081233330003')
    await make('Dewi 100%_done', '081244440004', 'dewi@example.com')
    const names = async (search: string) => {
      const res = await t.api('GET', `/contacts?search=${encodeURIComponent(search)}`, key)
      expect(res.status).toBe(200)
      expect(res.body.data.total).toBe(res.body.data.items.length)
      return res.body.data.items.map((c: { name: string }) => c.name).sort()
    }
    expect(await names('budi')).toEqual(['Agus Budiman', 'Budi Santoso'])
    expect(await names('BUDI')).toEqual(['Agus Budiman', 'Budi Santoso'])
    expect(await names('mail.EXAMPLE')).toEqual(['Siti Aminah'])
    expect(await names('@example.com')).toEqual(['Budi Santoso', 'Dewi 100%_done'])
    expect(await names('22220')).toEqual(['Siti Aminah'])
    expect(await names('+6281233')).toEqual(['Agus Budiman'])
    expect(await names('0812-3333')).toEqual(['Agus Budiman'])
    expect(await names('0812')).toHaveLength(4)
    expect(await names('%')).toEqual(['Dewi 100%_done'])
    expect(await names('_')).toEqual(['Dewi 100%_done'])
    expect(await names('medan')).toEqual([]) // city is not searched
    expect(await names('nobody')).toEqual([])
    expect(await names('  ')).toHaveLength(4) // blank search lists everything
    const paged = await t.api('GET', '/contacts?search=budi&limit=1&offset=1', key)
    expect(paged.body.data).toMatchObject({ total: 2, limit: 1, offset: 1 })
    expect(paged.body.data.items).toHaveLength(1)
  })

  test('query validation: 400 for non-integers, 422 for out-of-range values', async () => {
    const { key } = await t.account()
    const cases: [string, number, RegExp][] = [
      ['limit=abc', 400, /^limit: must be an integer/],
      ['offset=1.5', 400, /^offset: must be an integer/],
      ['limit=0', 422, /^limit: must be from 1 to 200/],
      ['limit=201', 422, /^limit: must be from 1 to 200/],
      ['offset=-1', 422, /^offset: must not be negative/],
      [`search=${'x'.repeat(201)}`, 422, /^search: must be at most 200/],
    ]
    for (const [query, status, message] of cases) {
      const res = await t.api('GET', `/contacts?${query}`, key)
      expect({ query, status: res.status, code: res.body.code }).toEqual({ query, status, code: 'VALIDATION_ERROR' })
      expect(res.body.error).toMatch(message)
    }
    expect((await t.api('GET', '/contacts?limit=200', key)).status).toBe(200)
    expect((await t.api('GET', '/contacts?limit=1', key)).status).toBe(200)
  })

  test("tenant isolation: a key sees only its own account's contacts", async () => {
    const a = await t.account()
    const b = await t.account()
    await t.api('POST', '/contacts', a.key, contact('081255550001', { name: 'Only in A' }))
    const listB = await t.api('GET', '/contacts', b.key)
    expect(listB.body.data).toMatchObject({ items: [], total: 0 })
    const searchB = await t.api('GET', '/contacts?search=only', b.key)
    expect(searchB.body.data.total).toBe(0)
    const listA = await t.api('GET', '/contacts', a.key)
    expect(listA.body.data.items.map((c: { name: string }) => c.name)).toEqual(['Only in A'])
  })
})
