// Dashboard users in the admin API: the list (and finding one by e-mail), and a new single-use link
// for a user who lost theirs: an invitation before the password is set, a reset after; earlier links
// stop working, only the hash is stored, and the audit log records it.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sha256Hex } from '../../src/lib/keys'
import { testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { dashboardUser, webClient } from '../helpers/web'

const PASSWORD = 'a long enough password'

let t: TestApp
beforeAll(async () => {
  t = await testApp({ env: { PUBLIC_BASE_URL: 'https://messaging.example.com' } })
})
afterAll(() => t.close())

const pathOf = (link: string) => new URL(link).pathname
const linkPage = (link: string) => t.app.handle(new Request(`http://localhost${pathOf(link)}`))
const auditOf = async (userId: number) => [
  ...(await t.db.sql<{ actor: string; account_id: number | null; action: string; detail: { user_id: number; email: string } }[]>`
    select actor, account_id, action, detail from audit_log where detail->>'user_id' = ${String(userId)} order by id`),
]

describe('POST /admin/v1/users/{id}/link', () => {
  test('a member who never set a password gets a new invitation; the earlier link stops working; audited', async () => {
    const { accountId } = await t.account(0)
    const invited = await t.admin('POST', `/accounts/${accountId}/members`, { email: 'Lost@Example.com' })
    expect(invited.status).toBe(201)
    const first: string = invited.body.data.link
    expect((await linkPage(first)).status).toBe(200)

    const made = await t.admin('POST', `/users/${invited.body.data.id}/link`)
    expect(made.status).toBe(201)
    expect(made.body).toEqual({
      success: true,
      data: {
        id: invited.body.data.id,
        email: 'lost@example.com',
        role: 'member',
        account_id: accountId,
        kind: 'invite',
        link: expect.stringMatching(/^https:\/\/messaging\.example\.com\/dashboard\/link\/[A-Za-z0-9]{43}$/),
      },
    })
    const link: string = made.body.data.link
    expect(link).not.toBe(first)
    const page = await linkPage(link)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('lost@example.com')
    expect((await linkPage(first)).status).toBe(404)

    // Only the hash is stored.
    const token = link.split('/').pop()!
    const [stored] = await t.db.sql<{ kind: string; n: number }[]>`
      select kind, count(*) over ()::int as n from user_links where token_hash = ${sha256Hex(token)}`
    expect(stored).toEqual({ kind: 'invite', n: 1 })
    expect(JSON.stringify(await t.db.sql`select * from user_links`)).not.toContain(token)

    expect(await auditOf(invited.body.data.id)).toEqual([
      {
        actor: 'admin token',
        account_id: accountId,
        action: 'invitation link made',
        detail: { user_id: invited.body.data.id, email: 'lost@example.com' },
      },
    ])

    // The new link sets the password and signs in.
    const set = await webClient(t).useLink(link, PASSWORD)
    expect(set.status).toBe(303)
  })

  test('a user with a password gets a reset link: it works once, and following it ends their sessions', async () => {
    const operator = await dashboardUser(t, 'reset-me@example.com', PASSWORD)
    expect((await operator.client.get('/dashboard/users')).status).toBe(200)

    const made = await t.admin('POST', `/users/${operator.id}/link`)
    expect(made.status).toBe(201)
    expect(made.body.data).toMatchObject({
      id: operator.id,
      email: 'reset-me@example.com',
      role: 'operator',
      account_id: null,
      kind: 'reset',
    })
    const again = await t.admin('POST', `/users/${operator.id}/link`)
    expect(again.body.data.kind).toBe('reset')
    expect((await linkPage(made.body.data.link)).status).toBe(404) // replaced by the newer one

    const browser = webClient(t)
    expect((await browser.useLink(again.body.data.link, 'another long password')).status).toBe(303)
    expect((await linkPage(again.body.data.link)).status).toBe(404) // used
    expect((await operator.client.get('/dashboard/users')).status).toBe(303) // the old session ended
    expect((await webClient(t).signIn('reset-me@example.com', 'another long password')).status).toBe(303)

    expect((await auditOf(operator.id)).map((a) => [a.actor, a.account_id, a.action])).toEqual([
      ['admin token', null, 'password reset link made'],
      ['admin token', null, 'password reset link made'],
    ])
  })

  test('an unknown user is 404 NOT_FOUND, a deactivated one 409 CONFLICT; neither makes a link', async () => {
    const links = async () => (await t.db.sql<{ n: number }[]>`select count(*)::int as n from user_links`)[0]!.n
    const before = await links()
    for (const id of ['999999', '0']) {
      const missing = await t.admin('POST', `/users/${id}/link`)
      expect(missing.status).toBe(404)
      expect(missing.body).toEqual(errorEnvelope(missing.headers, 'NOT_FOUND', `user ${id} not found`))
    }

    const operator = await dashboardUser(t, 'deactivator@example.com', PASSWORD)
    const { accountId } = await t.account(0)
    const member = await t.admin('POST', `/accounts/${accountId}/members`, { email: 'gone@example.com' })
    const users = await operator.client.get('/dashboard/users')
    const off = await operator.client.post(`/dashboard/users/${member.body.data.id}/active`, { _csrf: users.csrf!, active: 'false' })
    expect(off.status).toBe(303)
    const counted = await links()

    const refused = await t.admin('POST', `/users/${member.body.data.id}/link`)
    expect(refused.status).toBe(409)
    expect(refused.body).toEqual(errorEnvelope(refused.headers, 'CONFLICT', expect.stringContaining('deactivated')))
    expect(await links()).toBe(counted)
    expect(counted).toBeGreaterThan(before)
    expect((await auditOf(member.body.data.id)).map((a) => a.action)).toEqual(['user deactivated'])
  })

  test('the admin token is required', async () => {
    const refused = await t.request('POST', '/admin/v1/users/1/link')
    expect(refused.status).toBe(401)
    expect(refused.body).toEqual(errorEnvelope(refused.headers, 'AUTH_MISSING_HEADER'))
  })
})

describe('GET /admin/v1/users', () => {
  test('every user oldest first with whether a password is set; `email` finds one in any case', async () => {
    const { accountId } = await t.account(0)
    const member = await t.admin('POST', `/accounts/${accountId}/members`, { email: 'Listed@Example.com' })
    const all = await t.admin('GET', '/users?limit=200')
    expect(all.status).toBe(200)
    expect(all.body.success).toBe(true)
    const ids = all.body.data.items.map((u: { id: number }) => u.id)
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    expect(all.body.data).toMatchObject({ total: ids.length, limit: 200, offset: 0, has_more: false })
    expect(all.body.data.items.find((u: { email: string }) => u.email === 'reset-me@example.com')).toMatchObject({
      role: 'operator',
      account_id: null,
      active: true,
      password_set: true,
    })

    const found = await t.admin('GET', `/users?email=${encodeURIComponent(' LISTED@example.COM ')}`)
    expect(found.body).toEqual({
      success: true,
      data: {
        items: [
          {
            id: member.body.data.id,
            email: 'listed@example.com',
            role: 'member',
            account_id: accountId,
            active: true,
            password_set: false,
            created_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
          },
        ],
        total: 1,
        limit: 50,
        offset: 0,
        has_more: false,
      },
    })
    expect((await t.admin('GET', '/users?email=nobody@example.com')).body.data).toMatchObject({ items: [], total: 0 })
    const bad = await t.admin('GET', '/users?limit=0')
    expect(bad.status).toBe(422)
  })

  test("the operator's OpenAPI document describes the link endpoint", async () => {
    const document = (await (await t.app.handle(new Request('http://localhost/docs/admin/json'))).json()) as any
    const operation = document.paths['/admin/v1/users/{id}/link'].post
    expect(operation.summary).toContain('earlier unused links of the user stop working')
    expect(operation.description).toContain('`invite`')
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['201', '404', '409']))
    expect(document.paths['/admin/v1/users'].get).toBeDefined()
  })
})
