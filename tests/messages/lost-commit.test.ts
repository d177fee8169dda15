// A charge whose COMMIT answer is lost: a TCP proxy between the service and PostgreSQL lets the
// group-commit charge statement commit, then cuts the connection instead of answering. The service
// cannot know whether it committed; it runs the charge again, and the request tokens make the second
// run find the first charge. Every request is charged exactly once. (PostgreSQL only: the embedded
// database has a single connection, which the proxy cannot share.)

import { afterAll, expect, test } from 'bun:test'
import { readConfig } from '../../src/config'
import { createApp } from '../../src/app'
import { buildDeps } from '../../src/server'
import { openDatabase } from '../../src/db/client'
import { ADMIN_TOKEN } from '../helpers/app'
import { testDatabase, usingPostgres } from '../helpers/db'
import { startPgProxy } from '../helpers/pg-proxy'

const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

test.skipIf(!usingPostgres())('a lost COMMIT answer of a group-commit charge: each request charged once', async () => {
  const db = await testDatabase()
  cleanups.push(() => db.drop())
  const target = new URL(db.url!)
  // The charge statement of concurrent single sends is the one that locks accounts for a charge.
  const proxy = await startPgProxy({ host: target.hostname, port: Number(target.port || 5432) }, 'request_item = 1')
  cleanups.push(() => proxy.close())
  const proxied = new URL(db.url!)
  proxied.port = String(proxy.port)
  const database = await openDatabase({ databaseUrl: proxied.toString(), poolMax: 4 })
  cleanups.push(() => database.close())

  const { deps } = buildDeps(readConfig({ ADMIN_TOKEN }), database)
  const app = createApp(deps)
  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const response = await app.handle(
      new Request(`http://localhost${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    )
    return { status: response.status, body: (await response.json()) as any }
  }
  const keys: string[] = []
  const accounts: number[] = []
  for (let i = 0; i < 4; i++) {
    const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: `lost-${i}`, balance: 100 })
    accounts.push(account.body.data.id)
    keys.push((await call('POST', `/admin/v1/accounts/${account.body.data.id}/keys`, ADMIN_TOKEN, { label: 'k' })).body.data.key)
  }

  // Two sends per account at once: the charges go out together in one group-commit write.
  const sends = keys.flatMap((key, i) =>
    [0, 1].map((j) => call('POST', '/api/v1/messages/send', key, { to: `08123456780${i}`, body: `m${j}` })),
  )
  const answers = await Promise.all(sends)
  expect(proxy.cuts()).toBe(1)
  expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200))

  const rows = await db.sql<{ id: number; balance: number; charges: number; messages: number; ledger_sum: number }[]>`
    select a.id, a.balance,
           (select count(*)::int from ledger l where l.account_id = a.id and l.kind = 'charge') as charges,
           (select count(*)::int from messages m where m.account_id = a.id) as messages,
           (select sum(amount)::int from ledger l where l.account_id = a.id) as ledger_sum
    from accounts a order by a.id`
  expect(rows.map((r) => ({ ...r, id: 0 }))).toEqual(Array(4).fill({ id: 0, balance: 98, charges: 2, messages: 2, ledger_sum: 98 }))
})
