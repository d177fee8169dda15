// Outer ring (real time): a top-up held open on another session until the charge is seen waiting for its lock in pg_stat_activity (a wait inside the database server, seen only by looking), and PgBouncer.
// A charge that races a credit (a top-up, a refund) answers 200 or 402, never 500 (issue 28, row 5).
// A charge statement locks the account's row, then updates it. When a credit holds that lock, the
// statement waits, and its snapshot is older than the credit. PostgreSQL checks the
// accounts_balance_not_negative constraint on the row that the UPDATE builds from the version its
// snapshot sees, before it notices the newer version (ledger/service.ts, staleCandidate). So a debit
// computed from that old version raised 23514, a 500, although the locked balance could pay.
//
// These tests make the race happen every time. A top-up's transaction stays open on another
// session, as another instance's would, until the send's charge statement is seen waiting for its
// lock. Then the top-up commits, so the charge's re-check falls inside the window. They run on
// PostgreSQL only: the embedded database runs one statement at a time on its single session, so a
// charge never waits for another session's lock there. The randomized test of the same race (sends,
// bulks, top-ups, refunds, all at once, in both modes) is debit-race.test.ts.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { ADMIN_TOKEN, money, testApp, type TestApp } from '../helpers/app'
import { testDatabase, usingPostgres, type TestDatabase } from '../helpers/db'
import { havePgbouncer, startPgbouncer, type Bouncer } from '../helpers/pgbouncer'
import { until } from '../helpers/wait'
import { readConfig } from '../../src/config'
import { openDatabase, type Database, type Tx } from '../../src/db/client'
import { buildDeps } from '../../src/server'
import { createApp } from '../../src/app'
import { credit } from '../../src/modules/ledger/service'

const PRICE = 1
// testApp's settings, for the instances built here.
const env = {
  ADMIN_TOKEN,
  WINDOW_CHECK: 'off',
  SIM_DELIVERED_MS: '50',
  SIM_READ_MS: '100',
  PROVIDER_RECIPIENT_GAP_MS: '0',
}

type Call = (method: string, path: string, token: string, body?: unknown) => Promise<{ status: number; body: any }>

/** Calls `app` as an HTTP client would. */
function callerOf(app: ReturnType<typeof createApp>): Call {
  return async (method, path, token, body) => {
    const response = await app.handle(
      new Request(`http://localhost${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    )
    const text = await response.text()
    return { status: response.status, body: text ? JSON.parse(text) : null }
  }
}

/** A new account with `balance`, priced PRICE, and a key, made through `call`'s admin API. */
async function accountOn(call: Call, balance: number) {
  const made = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: `race-${Math.random().toString(36).slice(2, 8)}`, balance })
  const accountId = made.body.data.id as number
  await call('PUT', '/admin/v1/price', ADMIN_TOKEN, { cost_per_message: PRICE, account_id: accountId })
  const key = await call('POST', `/admin/v1/accounts/${accountId}/keys`, ADMIN_TOKEN, { label: 'race' })
  return { accountId, key: key.body.data.key as string }
}

/**
 * Starts `request` (a charge of `accountId`) while another session holds a top-up of 1 open. The
 * top-up commits once the request's charge statement waits for its lock, and `request`'s answer is
 * returned. `url` is the database itself (not a pooler); `watch` reads pg_stat_activity.
 */
async function racingTopUp<T>(url: string, watch: Database['sql'], accountId: number, request: () => Promise<T>): Promise<T> {
  const other = postgres(url, { max: 1, onnotice: () => {} })
  try {
    let commit!: () => void
    const committing = new Promise<void>((resolve) => (commit = resolve))
    let holding!: (pid: number) => void
    const held = new Promise<number>((resolve) => (holding = resolve))
    const topUp = other.begin(async (tx) => {
      expect(await credit(tx as unknown as Tx, accountId, 'topup', 1, 'racing a charge')).not.toBeNull()
      holding((await tx<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid)
      await committing
    })
    const pid = await held
    const answer = request()
    // The only statement of a send that waits for the account's row is its charge.
    await until(
      async () =>
        (await watch<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where ${pid} = any(pg_blocking_pids(pid))`)[0]!.n,
      (n) => n === 1,
      10_000,
      'the charge to wait for the top-up',
    )
    commit()
    await topUp
    return await answer
  } finally {
    await other.end()
  }
}

async function ledgerOf(db: Database['sql'], accountId: number) {
  const rows = await db<{ kind: string; amount: number; balance_after: number }[]>`
    select kind, amount, balance_after from ledger where account_id = ${accountId} order by id`
  return [...rows]
}

describe.skipIf(!usingPostgres())('a charge waiting for a top-up that pays it (PostgreSQL)', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await testApp()
  })
  afterAll(() => t.close())
  const call: Call = (method, path, token, body) => t.request(method, path, { key: token, body })

  test('a single send from a balance of 0: 200, charged from the top-up', async () => {
    const { accountId, key } = await accountOn(call, 0)
    const answer = await racingTopUp(t.db.url!, t.db.sql, accountId, () =>
      call('POST', '/api/v1/messages/send', key, { to: '081234560001', body: 'paid by the top-up' }),
    )
    expect([answer.status, answer.body.data?.status, answer.body.data?.balance_after]).toEqual([200, 'sent', 0])
    expect(await money(t, accountId)).toEqual({ balance: 0, ledgerSum: 0 })
    expect(await ledgerOf(t.db.sql, accountId)).toEqual([
      { kind: 'topup', amount: 1, balance_after: 1 },
      { kind: 'charge', amount: -1, balance_after: 0 },
    ])
  })

  test('a bulk of 2 from a balance of 1: 200, both sent; a bulk of 3 from 1: 402, nothing charged', async () => {
    const { accountId, key } = await accountOn(call, 1)
    const bulk = (n: number) =>
      call('POST', '/api/v1/messages/bulk', key, {
        messages: Array.from({ length: n }, (_, i) => ({ to: `08123457000${i}`, body: `entry ${i}` })),
      })
    const paid = await racingTopUp(t.db.url!, t.db.sql, accountId, () => bulk(2))
    expect([paid.status, paid.body.data?.sent, paid.body.data?.balance_after]).toEqual([200, 2, 0])
    expect(await money(t, accountId)).toEqual({ balance: 0, ledgerSum: 0 })

    const short = await racingTopUp(t.db.url!, t.db.sql, accountId, () => bulk(3))
    expect([short.status, short.body.code]).toEqual([402, 'INSUFFICIENT_BALANCE'])
    expect(await money(t, accountId)).toEqual({ balance: 1, ledgerSum: 1 })
  })
})

describe.skipIf(!usingPostgres() || (!havePgbouncer() && !process.env.CI))('the same through PgBouncer (PostgreSQL)', () => {
  let db: TestDatabase
  let bouncer: Bouncer
  let pooled: Database
  let call: Call
  beforeAll(async () => {
    db = await testDatabase()
    bouncer = await startPgbouncer(db.url!)
    // Each statement is kept as a function after its first success, as behind a pooler in production.
    pooled = await openDatabase({ databaseUrl: bouncer.url, pooler: 'pgbouncer', statementFunctionsAfter: 1, poolMax: 4 })
    call = callerOf(createApp(buildDeps(readConfig(env), pooled).deps))
  })
  afterAll(async () => {
    await pooled.close()
    await bouncer.stop()
    await db.drop()
  })

  test('a single send from a balance of 0 through PgBouncer: 200', async () => {
    const { accountId, key } = await accountOn(call, 2)
    // Two sends first: the charge statement is then the pooler's function.
    for (const to of ['081234560011', '081234560012'])
      expect((await call('POST', '/api/v1/messages/send', key, { to, body: 'first' })).status).toBe(200)
    const answer = await racingTopUp(db.url!, db.sql, accountId, () =>
      call('POST', '/api/v1/messages/send', key, { to: '081234560013', body: 'paid by the top-up' }),
    )
    expect([answer.status, answer.body.data?.balance_after]).toEqual([200, 0])
    const [row] = await db.sql<{ balance: number; ledger_sum: number }[]>`
      select balance, (select sum(amount) from ledger where account_id = ${accountId})::bigint as ledger_sum from accounts where id = ${accountId}`
    expect(row).toEqual({ balance: 0, ledger_sum: 0 })
  })
})
