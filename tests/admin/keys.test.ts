import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { sha256Hex } from '../../src/lib/keys'
import { errorEnvelope } from '../helpers/envelope'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

describe('API key lifecycle', () => {
  test('create (shown once, stored as a hash), use, deactivate → 401, reactivate → works', async () => {
    const account = await t.admin('POST', '/accounts', { name: 'Lifecycle', balance: 500 })
    expect(account.status).toBe(201)
    expect(account.body.data).toMatchObject({ name: 'Lifecycle', wa_balance: 500 })
    const accountId = account.body.data.id

    const created = await t.admin('POST', `/accounts/${accountId}/keys`, { label: 'ERP' })
    expect(created.status).toBe(201)
    const key: string = created.body.data.key
    expect(key).toMatch(/^pm_[0-9A-Za-z]{40}$/)
    expect(created.body.data).toMatchObject({ label: 'ERP', active: true, prefix: key.slice(0, 9) })

    const stored = await t.db.sql`select key_hash, prefix from api_keys where id = ${created.body.data.id}`
    expect(stored[0]!.key_hash).toBe(sha256Hex(key))
    const everything = JSON.stringify(await t.db.sql`select * from api_keys`)
    expect(everything).not.toContain(key)

    const listed = await t.admin('GET', `/accounts/${accountId}/keys`)
    expect(listed.body.data.items).toHaveLength(1)
    expect(JSON.stringify(listed.body)).not.toContain(key)
    expect(listed.body.data.items[0].key).toBeUndefined()

    const balance = await t.api('GET', '/balance', key)
    expect(balance.status).toBe(200)
    expect(balance.body).toEqual({
      success: true,
      data: {
        wa_balance: 500,
        cost_per_message: 1,
        estimated_sends: 500,
        currency: 'IDR',
        // The four categories' prices (extension): nothing set, each is cost_per_message.
        prices: { marketing: 1, utility: 1, authentication: 1, service: 1 },
      },
    })

    const off = await t.admin('PATCH', `/keys/${created.body.data.id}`, { active: false })
    expect(off.status).toBe(200)
    expect(off.body.data.active).toBe(false)
    const refused = await t.api('GET', '/balance', key)
    expect(refused.status).toBe(401)
    expect(refused.body).toEqual(errorEnvelope(refused.headers, 'AUTH_INVALID_KEY'))

    await t.admin('PATCH', `/keys/${created.body.data.id}`, { active: true })
    expect((await t.api('GET', '/balance', key)).status).toBe(200)

    const used = await t.admin('GET', `/accounts/${accountId}/keys`)
    expect(used.body.data.items[0].last_used_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
  })

  test('authentication failures', async () => {
    const { key } = await t.account(0)
    const cases: [Record<string, string>, string][] = [
      [{}, 'AUTH_MISSING_HEADER'],
      [{ authorization: '' }, 'AUTH_INVALID_KEY'],
      [{ authorization: key }, 'AUTH_INVALID_KEY'],
      [{ authorization: `Basic ${key}` }, 'AUTH_INVALID_KEY'],
      [{ authorization: 'Bearer' }, 'AUTH_INVALID_KEY'],
      [{ authorization: 'Bearer pm_short' }, 'AUTH_INVALID_KEY'],
      [{ authorization: `Bearer ${key}x` }, 'AUTH_INVALID_KEY'],
      [{ authorization: `Bearer ${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}` }, 'AUTH_INVALID_KEY'], // last character changed
      [{ authorization: `Bearer ${ADMIN_TOKEN}` }, 'AUTH_INVALID_KEY'],
    ]
    for (const [headers, code] of cases) {
      const res = await t.request('GET', '/api/v1/balance', { headers })
      expect({ headers, status: res.status, code: res.body.code }).toEqual({ headers, status: 401, code })
    }
    // the scheme is case-insensitive
    expect((await t.request('GET', '/api/v1/balance', { headers: { authorization: `bearer ${key}` } })).status).toBe(200)
    expect((await t.request('GET', '/api/v1/balance', { headers: { authorization: `BEARER ${key}` } })).status).toBe(200)
  })

  test('the admin API refuses API keys and missing tokens', async () => {
    const { key } = await t.account(0)
    expect((await t.request('GET', '/admin/v1/accounts')).body.code).toBe('AUTH_MISSING_HEADER')
    const withKey = await t.request('GET', '/admin/v1/accounts', { key })
    expect([withKey.status, withKey.body.code]).toEqual([401, 'AUTH_INVALID_KEY'])
  })
})

describe('admin API', () => {
  test('top-ups, adjustments, prices and the ledger', async () => {
    const { accountId, key } = await t.account(0)
    expect((await t.admin('POST', `/accounts/${accountId}/topups`, { amount: 1000, note: 'invoice 7' })).body.data).toEqual({
      wa_balance: 1000,
    })
    expect((await t.admin('POST', `/accounts/${accountId}/adjustments`, { amount: -100, note: 'correction' })).body.data).toEqual({
      wa_balance: 900,
    })
    const tooMuch = await t.admin('POST', `/accounts/${accountId}/adjustments`, { amount: -901, note: 'x' })
    expect([tooMuch.status, tooMuch.body.code]).toEqual([422, 'VALIDATION_ERROR'])

    expect((await t.admin('PUT', '/price', { cost_per_message: 300, account_id: accountId })).status).toBe(200)
    expect((await t.api('GET', '/balance', key)).body.data).toMatchObject({ wa_balance: 900, cost_per_message: 300, estimated_sends: 3 })
    await t.api('POST', '/messages/send', key, { to: '081234567890', body: 'x' })

    const ledger = await t.admin('GET', `/accounts/${accountId}/ledger`)
    expect(ledger.body.data.total).toBe(3)
    expect(ledger.body.data.items.map((r: any) => [r.kind, r.amount, r.balance_after, r.note])).toEqual([
      ['charge', -300, 600, null],
      ['adjustment', -100, 900, 'correction'],
      ['topup', 1000, 1000, 'invoice 7'],
    ])
    expect(ledger.body.data.items[0].message_id).toEqual(expect.any(Number))
    const paged = await t.admin('GET', `/accounts/${accountId}/ledger?limit=1&offset=1`)
    expect(paged.body.data).toMatchObject({ total: 3, limit: 1, offset: 1, has_more: true })
    expect(paged.body.data.items[0].kind).toBe('adjustment')
  })

  test('prices: refund_late_failures, globally and per account, set and shown', async () => {
    const { accountId } = await t.account(0)
    const price = async (account?: number) => (await t.admin('GET', `/price${account ? `?account_id=${account}` : ''}`)).body.data
    const put = async (body: Record<string, unknown>) => {
      const res = await t.admin('PUT', '/price', body)
      expect(res.status).toBe(200)
      return res.body.data
    }
    const global = await price()
    expect(global.refund_late_failures).toBe(true)
    try {
      expect(await put({ cost_per_message: global.cost_per_message, refund_late_failures: false })).toMatchObject({
        cost_per_message: global.cost_per_message,
        account_id: null,
        account_override: false,
        refund_late_failures: false,
      })
      // An account without its own price follows the global one.
      expect(await price(accountId)).toMatchObject({ account_override: false, refund_late_failures: false })
      // A new own price without the choice starts with the one the account followed; omitted later, it stays.
      expect(await put({ cost_per_message: 300, account_id: accountId })).toMatchObject({
        cost_per_message: 300,
        account_id: accountId,
        account_override: true,
        refund_late_failures: false,
      })
      expect(await put({ cost_per_message: 300, account_id: accountId, refund_late_failures: true })).toMatchObject({
        refund_late_failures: true,
      })
      expect(await put({ cost_per_message: 320, account_id: accountId })).toMatchObject({
        cost_per_message: 320,
        refund_late_failures: true,
      })
      // The global price's choice no longer reaches it; setting the global price alone keeps its choice.
      expect(await put({ cost_per_message: global.cost_per_message })).toMatchObject({ refund_late_failures: false })
      expect(await price(accountId)).toMatchObject({ refund_late_failures: true })
      // Without its own price, it follows the global one again.
      const cleared = await t.admin('DELETE', `/price/accounts/${accountId}`)
      expect(cleared.body.data).toMatchObject({ account_override: false, refund_late_failures: false })
      const wrong = await t.admin('PUT', '/price', { cost_per_message: 5, refund_late_failures: 'no' })
      expect([wrong.status, wrong.body.code]).toEqual([400, 'VALIDATION_ERROR'])
      expect(wrong.body.error).toContain('refund_late_failures')
    } finally {
      await put({ cost_per_message: global.cost_per_message, refund_late_failures: true })
    }
  })

  test('validation and not found', async () => {
    const cases: [string, string, unknown, number][] = [
      ['POST', '/accounts', {}, 400],
      ['POST', '/accounts', { name: '' }, 422],
      ['POST', '/accounts', { name: 'x', balance: -1 }, 422],
      ['POST', '/accounts', { name: 'x', balance: 1.5 }, 400],
      ['POST', '/accounts/999999/keys', { label: 'x' }, 404],
      ['POST', '/accounts/abc/keys', { label: 'x' }, 400],
      ['POST', '/accounts/999999/topups', { amount: 5 }, 404],
      ['PATCH', '/keys/999999', { active: false }, 404],
      ['PATCH', '/keys/1', { active: 'no' }, 400],
      ['PUT', '/price', { cost_per_message: 0 }, 422],
      ['PUT', '/price', { cost_per_message: 5, account_id: 999999 }, 404],
      ['GET', '/accounts/999999', undefined, 404],
      ['GET', '/accounts?limit=0', undefined, 422],
      ['GET', '/accounts?limit=x', undefined, 400],
    ]
    const { accountId } = await t.account(0)
    cases.push(['POST', `/accounts/${accountId}/topups`, { amount: 0 }, 422])
    for (const [method, path, body, status] of cases) {
      const res = await t.admin(method, path, body)
      expect({ method, path, status: res.status, success: res.body.success }).toEqual({ method, path, status, success: false })
      expect(res.body.code).toBe(status === 404 ? 'NOT_FOUND' : 'VALIDATION_ERROR')
    }
  })
})

test('integers in JSON bodies must be JSON numbers', async () => {
  const res = await t.admin('POST', '/accounts', { name: 'x', balance: '100' })
  expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR'])
  expect(res.body.error).toBe('balance: must be an integer')
  const { accountId } = await t.account(0)
  expect((await t.admin('POST', `/accounts/${accountId}/topups`, { amount: '5' })).status).toBe(400)
  expect((await t.admin('PUT', '/price', { cost_per_message: '5' })).status).toBe(400)
})
