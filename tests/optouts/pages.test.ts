// The opt-out page through app.handle: signed out it redirects; a change without the page's CSRF
// token is refused; a member sees only their account (another account's operator path is 404 for
// them); add, remove, import (a bad CSV is 422 with a clear message; bad lines are reported) and the
// CSV download; every change audited as the user.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { dashboardUser, webClient } from '../helpers/web'

let t: TestApp
const PASSWORD = 'correct horse battery'
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

test('signed out: the opt-out pages and their changes redirect to the sign-in page', async () => {
  const anon = webClient(t)
  for (const path of ['/dashboard/opt-outs', '/dashboard/opt-outs.csv', '/dashboard/accounts/1/opt-outs']) {
    expect({ path, location: (await anon.get(path)).location }).toEqual({ path, location: '/dashboard/sign-in' })
  }
  expect((await anon.post('/dashboard/opt-outs', { phone: '081234567890' })).location).toBe('/dashboard/sign-in')
})

test("a member's opt-outs: add, find, remove, import with a report, download; CSRF and other accounts guarded; audited", async () => {
  const mine = await t.account(0)
  const theirs = await t.account(0)
  await t.admin('POST', `/accounts/${theirs.accountId}/opt-outs`, { phone: '081299990001' })
  const { client } = await dashboardUser(t, 'member-optouts@example.com', PASSWORD, mine.accountId)

  const page = await client.get('/dashboard/opt-outs')
  expect(page.status).toBe(200)
  expect(page.text).toContain('No opted-out phones.')
  expect(page.text).not.toContain('+6281299990001')

  // Without the CSRF token: refused, nothing changed.
  const forged = await client.post('/dashboard/opt-outs', { phone: '081234560001' })
  expect(forged.status).toBe(403)
  expect((await t.admin('GET', `/accounts/${mine.accountId}/opt-outs`)).body.data.total).toBe(0)

  const added = await client.post('/dashboard/opt-outs', { _csrf: page.csrf!, phone: '0812-3456-0001' })
  expect(added.status).toBe(303)
  const after = await client.follow(added)
  expect(after.text).toContain('+6281234560001 is opted out.')
  expect(after.text).toContain('dashboard')

  const bad = await client.post('/dashboard/opt-outs', { _csrf: page.csrf!, phone: 'hello' })
  expect(bad.status).toBe(422)
  expect(bad.text).toContain('phone: not a valid phone number')

  // Another account's pages: 404 for a member.
  expect((await client.get(`/dashboard/accounts/${theirs.accountId}/opt-outs`)).status).toBe(404)
  // Their phone cannot be removed from here: it is not this account's.
  const notMine = await client.post('/dashboard/opt-outs/remove', { _csrf: page.csrf!, phone: '+6281299990001' })
  expect(notMine.status).toBe(404)
  expect((await t.admin('GET', `/accounts/${theirs.accountId}/opt-outs`)).body.data.total).toBe(1)

  const unreadable = await client.post('/dashboard/opt-outs/import', { _csrf: page.csrf!, csv: 'name\nBudi' })
  expect(unreadable.status).toBe(422)
  expect(unreadable.text).toContain('no &quot;phone&quot; column')
  const empty = await client.post('/dashboard/opt-outs/import', { _csrf: page.csrf!, csv: '  ' })
  expect(empty.status).toBe(422)
  expect(empty.text).toContain('Choose a CSV file or paste the CSV text.')

  const imported = await client.post('/dashboard/opt-outs/import', {
    _csrf: page.csrf!,
    csv: 'phone\n081234560002\n081234560001\nxyz\n',
  })
  expect(imported.status).toBe(303)
  const report = await client.follow(imported)
  expect(report.text).toMatch(/id="import-accepted">\s*1/)
  expect(report.text).toMatch(/id="import-duplicates">\s*1/)
  expect(report.text).toMatch(/id="import-invalid">\s*1/)
  expect(report.text).toContain('phone: not a valid phone number')

  const csv = await client.get('/dashboard/opt-outs.csv')
  expect(csv.status).toBe(200)
  expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8')
  expect(csv.headers.get('content-disposition')).toContain('attachment')
  expect(
    csv.text
      .split('\r\n')
      .slice(1, 3)
      .map((l) => l.split(',')[0]),
  ).toEqual(['+6281234560002', '+6281234560001'])
  expect(csv.text).not.toContain('+6281299990001')

  const removed = await client.post('/dashboard/opt-outs/remove', { _csrf: page.csrf!, phone: '+6281234560001' })
  expect((await client.follow(removed)).text).toContain('+6281234560001 is opted back in')

  const audited = await t.db.sql<{ actor: string; action: string }[]>`
    select actor, action from audit_log where account_id = ${mine.accountId} and action like 'opt-out%' order by id`
  expect(audited.map((a) => [a.actor, a.action])).toEqual([
    ['member-optouts@example.com', 'opt-out added'],
    ['member-optouts@example.com', 'opt-outs imported'],
    ['member-optouts@example.com', 'opt-out removed'],
  ])

  // An operator sees any account's, on its own path.
  const op = (await dashboardUser(t, 'op-optouts@example.com', PASSWORD)).client
  const theirPage = await op.get(`/dashboard/accounts/${theirs.accountId}/opt-outs`)
  expect(theirPage.status).toBe(200)
  expect(theirPage.text).toContain('+6281299990001')
  expect((await op.get('/dashboard/opt-outs')).status).toBe(404)
})
