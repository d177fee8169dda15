// Outer ring (real time): several instances' connection pools race at PostgreSQL's row locks, seen only by watching pg_stat_activity.
// A key's daily spend cap across instances (tests/messages/spend-cap.test.ts has the rest): concurrent
// sends through several instances on one database never charge past it, and charge statements all
// begun before the first commits each see the count the one before left (the key's row lock).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ADMIN_TOKEN, money, testApp, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'
import { until } from '../helpers/wait'
import { openDatabase, type Database } from '../../src/db/client'
import { readConfig } from '../../src/config'
import { buildDeps } from '../../src/server'
import { createApp } from '../../src/app'

// 14 hours ahead of UTC: its day is not UTC's for most of the day.
const TZ = 'Pacific/Kiritimati'
const PRICE = 100
let t: TestApp
beforeAll(async () => {
  t = await testApp({ env: { TIMEZONE: TZ } })
})
afterAll(() => t.close())

/** An account with `balance`, a key whose daily cap is `cap` messages at PRICE, and the key's id. */
async function capped(cap: number, balance = 100 * PRICE) {
  const a = await t.account(balance, { price: PRICE })
  const set = await t.admin('PATCH', `/keys/${a.keyId}`, { daily_spend_cap: cap * PRICE })
  expect(set.status).toBe(200)
  return a
}

const send = (key: string, to = '081234567890') => t.api('POST', '/messages/send', key, { to, body: 'hello' })
const spentToday = async (keyId: number) => (await t.admin('GET', `/keys/${keyId}`)).body.data.spent_today as number
const messagesOf = async (accountId: number) =>
  (await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where account_id = ${accountId}`)[0]!.n

describe('across instances', () => {
  const INSTANCES = 4
  let others: { database: Database; app: ReturnType<typeof createApp> }[] = []
  beforeAll(async () => {
    // More instances on the same database: on PostgreSQL each has its own connections, so their
    // charge statements run at once and meet at the account's and the key's row locks.
    for (let i = 1; i < INSTANCES; i++) {
      const database = t.db.url ? await openDatabase({ databaseUrl: t.db.url, poolMax: 5 }) : t.db
      const config = readConfig({ ADMIN_TOKEN, TIMEZONE: TZ, SIM_DELIVERED_MS: '50', SIM_READ_MS: '100' })
      others.push({ database, app: createApp(buildDeps(config, database).deps) })
    }
  })
  afterAll(async () => {
    for (const other of others) if (other.database !== t.db) await other.database.close()
    others = []
  })

  /** Statements of this database waiting for a lock. */
  const waiting = async () =>
    (
      await t.db.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where datname = current_database() and cardinality(pg_blocking_pids(pid)) > 0`
    )[0]!.n
  const waitFor = (n: number, what: string) => until(waiting, (w) => w === n, 10_000, what)

  /** A transaction of its own holding an account's row, as a charge in flight does. */
  async function holding(accountId: number) {
    const session = await t.db.sql.reserve()
    await session`begin`
    await session`select id from accounts where id = ${accountId} for update`
    let held = true
    return {
      async release() {
        if (!held) return
        held = false
        await session`commit`
        session.release()
      },
    }
  }

  const sendOn = async (instance: number, key: string, i: number) => {
    if (instance === 0) return send(key, `0812345${String(i).padStart(5, '0')}`)
    const response = await others[instance - 1]!.app.handle(
      new Request('http://localhost/api/v1/messages/send', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: `0812345${String(i).padStart(5, '0')}`, body: 'hello' }),
      }),
    )
    return { status: response.status, body: (await response.json()) as any }
  }

  test(`60 concurrent sends on one key with a cap of 10 messages: exactly 10 charged (${usingPostgres() ? `${INSTANCES} connection pools` : 'one embedded database'})`, async () => {
    const a = await capped(10)
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => sendOn(i % INSTANCES, a.key, i)))
    const statuses = answers.map((r) => r.status)
    expect({ sent: statuses.filter((s) => s === 200).length, capped: statuses.filter((s) => s === 402).length }).toEqual({
      sent: 10,
      capped: 50,
    })
    expect(answers.filter((r) => r.status === 402).every((r) => r.body.code === 'SPEND_CAP_REACHED')).toBe(true)
    expect(await messagesOf(a.accountId)).toBe(10)
    expect(await money(t, a.accountId)).toEqual({ balance: 90 * PRICE, ledgerSum: 90 * PRICE })
    expect(await spentToday(a.keyId)).toBe(10 * PRICE)
    const [row] = await t.db.sql<{ spent_today: number }[]>`select spent_today from api_keys where id = ${a.keyId}`
    expect(row!.spent_today).toBe(10 * PRICE)
  })

  // Each instance charges its single sends one statement at a time (group commit), so the test makes
  // every instance's statement start before any of them commits: each instance's first statement
  // waits for another account, held; meanwhile 15 sends per instance on the capped key queue behind
  // it; released, each instance's next statement (its 15) waits for the capped account, held too;
  // released, they run one after the other, each begun before the others' commits. Only the key's
  // row lock gives each the key's count as the one before left it.
  test.skipIf(!usingPostgres())(
    'charge statements all begun before the first commits: each sees the count the one before left (key row lock)',
    async () => {
      const a = await capped(10)
      const b = await t.account(100 * PRICE, { price: PRICE })
      const first = await holding(b.accountId)
      const second = await holding(a.accountId)
      let sends: Promise<{ status: number; body: any }>[] = []
      try {
        const blockers = Array.from({ length: INSTANCES }, (_, i) => sendOn(i, b.key, i))
        await waitFor(INSTANCES, "each instance's first charge waiting for the other account")
        sends = Array.from({ length: 15 * INSTANCES }, (_, i) => sendOn(i % INSTANCES, a.key, i))
        await until(
          async () => (await t.db.sql<{ used: number }[]>`select used from api_key_windows where api_key_id = ${a.keyId}`)[0]?.used,
          (used) => used === 15 * INSTANCES,
          10_000,
          'the sends on the capped key past their key lookup',
        )
        await Bun.sleep(300) // from the key lookup to the charge's queue: the body's rules, no database
        await first.release()
        expect((await Promise.all(blockers)).map((r) => r.status)).toEqual(Array(INSTANCES).fill(200))
        await waitFor(INSTANCES, "each instance's charge of the capped key's sends waiting for its account")
      } finally {
        await first.release()
        await second.release()
      }
      const statuses = (await Promise.all(sends)).map((r) => r.status)
      expect({ sent: statuses.filter((s) => s === 200).length, capped: statuses.filter((s) => s === 402).length }).toEqual({
        sent: 10,
        capped: 50,
      })
      expect(await messagesOf(a.accountId)).toBe(10)
      expect(await money(t, a.accountId)).toEqual({ balance: 90 * PRICE, ledgerSum: 90 * PRICE })
      expect(await spentToday(a.keyId)).toBe(10 * PRICE)
    },
  )
})
