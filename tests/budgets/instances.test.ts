// The messaging limit across instances: several apps on one database send at once to new recipients
// of one budget with room for a few; exactly that many are charged, whatever the interleaving (each
// taker locks the budget's row before it counts). On PostgreSQL each instance has its own pool, so
// their transactions really run at once; the embedded database has one connection.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ADMIN_TOKEN, money, testApp, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'
import { readConfig } from '../../src/config'
import { openDatabase, type Database } from '../../src/db/client'
import { createApp } from '../../src/app'
import { buildDeps } from '../../src/server'

const INSTANCES = 4
const PRICE = 10
const env = { ADMIN_TOKEN, MESSAGING_LIMIT: '250', SIM_DELIVERED_MS: '50', SIM_READ_MS: '100', PROVIDER_RECIPIENT_GAP_MS: '0' }
let t: TestApp
let others: { database: Database; app: ReturnType<typeof createApp> }[] = []
beforeAll(async () => {
  t = await testApp({ env })
  for (let i = 1; i < INSTANCES; i++) {
    const database = t.db.url ? await openDatabase({ databaseUrl: t.db.url, poolMax: 5 }) : t.db
    others.push({ database, app: createApp(buildDeps(readConfig(env), database).deps) })
  }
})
afterAll(async () => {
  for (const other of others) if (other.database !== t.db) await other.database.close()
  others = []
  await t.close()
})

async function sendOn(instance: number, key: string, to: string) {
  if (instance === 0) return t.api('POST', '/messages/send', key, { to, body: 'Promo' })
  const response = await others[instance - 1]!.app.handle(
    new Request('http://localhost/api/v1/messages/send', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to, body: 'Promo' }),
    }),
  )
  return { status: response.status, body: (await response.json()) as any }
}

test(`60 sends to new recipients at once with room for 5: exactly 5 charged (${usingPostgres() ? `${INSTANCES} connection pools` : 'one embedded database'})`, async () => {
  const a = await t.account(100 * PRICE, { price: PRICE })
  await t.db.sql`insert into messaging_budgets (budget) values ('default') on conflict do nothing`
  await t.db.sql`
    insert into messaging_uses (budget, phone, first_at)
    select 'default', '+62813' || lpad(g::text, 8, '0'), now() - interval '1 hour' from generate_series(1, 245) g`
  const answers = await Promise.all(
    Array.from({ length: 60 }, (_, i) => sendOn(i % INSTANCES, a.key, `+62814${String(i).padStart(8, '0')}`)),
  )
  const statuses = answers.map((r) => r.status)
  expect({ sent: statuses.filter((s) => s === 200).length, limited: statuses.filter((s) => s === 429).length }).toEqual({
    sent: 5,
    limited: 55,
  })
  expect(answers.filter((r) => r.status === 429).every((r) => r.body.code === 'MESSAGING_LIMIT')).toBe(true)
  expect(await money(t, a.accountId)).toEqual({ balance: 95 * PRICE, ledgerSum: 95 * PRICE })
  // Every use counts a recipient charged: the 5 sends' uses stay held until their hold runs out (a
  // charged request's held use counts as kept, sql/0054), none is held for a request that charged nothing.
  const [uses] = await t.db.sql<{ n: number; heldUncharged: number }[]>`
    select count(distinct phone)::int as n,
           count(*) filter (where held_until is not null and not exists (
             select 1 from messages m where m.request_token = u.request_token))::int as "heldUncharged"
    from messaging_uses u where budget = 'default'`
  expect(uses).toEqual({ n: 250, heldUncharged: 0 })
}, 60_000)
