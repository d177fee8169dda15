// The audit log of the admin API: each change of money, keys, prices, accounts and campaigns made
// with the admin token leaves a row naming who (the admin token, or the command line through it) and
// from where (the client's address); the command line itself, run as an operator runs it against
// the app, is recorded as the CLI.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { rememberClientAddress } from '../../src/http/request'

let t: TestApp
beforeAll(async () => {
  t = await testApp({ env: { TRUST_PROXY: 'true' } })
})
afterAll(() => t.close())

type Row = { actor: string; address: string | null; account_id: number | null; action: string; detail: Record<string, unknown> }
const rowsSince = async (id: number) => [
  ...(await t.db.sql<Row[]>`select actor, address, account_id, action, detail from audit_log where id > ${id} order by id`),
]
const lastId = async () => (await t.db.sql<{ id: number }[]>`select coalesce(max(id), 0)::int as id from audit_log`)[0]!.id

/** An admin request from a client behind the trusted proxy, optionally saying it is the command line. */
async function admin(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await t.app.handle(
    new Request(`http://localhost/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.7', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  )
  const json: any = await response.json()
  return { status: response.status, data: json.data }
}

describe('changes through the admin API are audited with the actor and the address', () => {
  test('account, key, top-up, adjustment, key limits, prices, campaign: one row each', async () => {
    const before = await lastId()
    const account = await admin('POST', '/accounts', { name: 'Audited', balance: 1000 })
    expect(account.status).toBe(201)
    const id: number = account.data.id
    const key = await admin('POST', `/accounts/${id}/keys`, { label: 'erp' })
    expect(key.status).toBe(201)
    expect((await admin('POST', `/accounts/${id}/topups`, { amount: 500, note: 'inv 7' })).status).toBe(201)
    expect((await admin('POST', `/accounts/${id}/adjustments`, { amount: -200, note: 'fix' })).status).toBe(201)
    expect((await admin('PATCH', `/keys/${key.data.id}`, { daily_spend_cap: 900 })).status).toBe(200)
    expect((await admin('PATCH', `/accounts/${id}`, { low_balance_threshold: 100 })).status).toBe(200)
    expect((await admin('PUT', '/price', { cost_per_message: 20, account_id: id })).status).toBe(200)
    expect((await admin('DELETE', `/price/accounts/${id}`)).status).toBe(200)

    const template = await admin('POST', `/accounts/${id}/templates`, { name: 'promo', body: 'Hi {{name}}' })
    const segment = await admin('POST', `/accounts/${id}/segments`, { name: 'vips', tag: 'vip' })
    const draft = await t.api('POST', '/campaigns', key.data.key, {
      name: 'Nov',
      template_id: template.data.id,
      segment_id: segment.data.id,
    })
    expect(draft.status).toBe(201)
    const campaignId: number = draft.body.data.campaign.id
    expect((await admin('POST', `/campaigns/${campaignId}/cancel`)).status).toBe(200)
    // A template changed, bound, unbound and deleted by its id alone is audited under its account.
    expect((await admin('PATCH', `/templates/${template.data.id}`, { body: 'Hello {{name}}' })).status).toBe(200)
    expect((await admin('PUT', `/templates/${template.data.id}/bindings/simulator`, { ref: 'promo_v1' })).status).toBe(200)
    expect((await admin('DELETE', `/templates/${template.data.id}/bindings/simulator`)).status).toBe(200)
    const spare = await admin('POST', `/accounts/${id}/templates`, { name: 'spare', body: 'Hi' })
    expect((await admin('DELETE', `/templates/${spare.data.id}`)).status).toBe(200)

    const rows = await rowsSince(before)
    expect(rows.map((r) => [r.action, r.account_id])).toEqual([
      ['account created', id],
      ['key created', id],
      ['top-up', id],
      ['adjustment', id],
      ['key changed', id],
      ['low-balance threshold set', id],
      ['account price set', id],
      ['account price cleared', id],
      ['template created', id],
      ['segment created', id],
      ['campaign cancelled', id],
      ['template changed', id],
      ['template bound', id],
      ['template unbound', id],
      ['template created', id],
      ['template deleted', id],
    ])
    for (const row of rows) expect([row.actor, row.address]).toEqual(['admin token', '203.0.113.7'])
    expect(rows[2]!.detail).toEqual({ amount: 500, note: 'inv 7' })
    expect(rows[4]!.detail).toEqual({ key_id: key.data.id, daily_spend_cap: 900 })
    expect(rows[6]!.detail).toMatchObject({ cost_per_message: 20 })
    // The key itself is never in the log.
    expect(JSON.stringify(rows)).not.toContain(key.data.key)
  })

  test('the global price, and a refused change leaves no row', async () => {
    const before = await lastId()
    expect((await admin('PUT', '/price', { cost_per_message: 0 })).status).toBe(422)
    expect((await admin('POST', '/accounts/999999/topups', { amount: 5 })).status).toBe(404)
    expect(await rowsSince(before)).toEqual([])
    const price = await admin('PUT', '/price', { cost_per_message: 15 }, { 'x-admin-client': 'cli' })
    expect(price.status).toBe(200)
    const [row] = await rowsSince(before)
    expect(row).toMatchObject({ actor: 'CLI (admin token)', address: '203.0.113.7', account_id: null, action: 'price set' })
    expect(row!.detail).toMatchObject({ cost_per_message: 15, previous: { cost_per_message: expect.any(Number) } })
  })
})

describe('the command line', () => {
  test('account create, key create, topup, price set and key limits run from the CLI are recorded as the CLI, with its address', async () => {
    // The app behind a real socket, so the address is the one the CLI connects from (no proxy header).
    const server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: (request, srv) => {
        rememberClientAddress(request, srv.requestIP(request)?.address)
        return t.app.handle(request)
      },
    })
    try {
      const cli = async (...args: string[]) => {
        const child = Bun.spawn(['bun', join(import.meta.dir, '../../src/cli/admin.ts'), '--url', server.url.origin, '--json', ...args], {
          env: { ...process.env, ADMIN_TOKEN },
          stdout: 'pipe',
          stderr: 'pipe',
        })
        const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
        expect([code, err]).toEqual([0, ''])
        return JSON.parse(out)
      }
      const before = await lastId()
      const account = await cli('account', 'create', 'From the CLI')
      const key = await cli('key', 'create', String(account.id), 'erp')
      await cli('topup', String(account.id), '250')
      await cli('price', 'set', '30', '--account', String(account.id))
      await cli('key', 'limits', String(key.id), '--cap', '500')
      const rows = await rowsSince(before)
      expect(rows.map((r) => r.action)).toEqual(['account created', 'key created', 'top-up', 'account price set', 'key changed'])
      for (const row of rows) expect([row.actor, row.address, row.account_id]).toEqual(['CLI (admin token)', '127.0.0.1', account.id])
    } finally {
      server.stop(true)
    }
  })
})
