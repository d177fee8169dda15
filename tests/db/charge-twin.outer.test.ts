// Outer ring (real time): two PostgreSQL sessions race for an account's row lock; the test waits until both wait for it.
// A charge and its twin (the same request token, db/partitions.ts's monthly partitions): the first run
// still uncommitted when the twin took its snapshot, the twin finds no charge with the token and goes
// on to write its own. Their messages take the token's time as created_at (ledger/service.ts,
// tokenTime), so both land in one month, where the unique (request_token, request_item, created_at)
// refuses the second: charged once. PostgreSQL only: the embedded database runs one session.
//
// The interleaving is made, not hoped for: a transaction holds the account's row, both runs start, and
// the row is let go only once both statements wait for it (PostgreSQL's own view of its sessions).

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, money, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'
import { until } from '../helpers/wait'
import { chargeSingles, type SingleCharge } from '../../src/modules/ledger/service'
import { retrying } from '../../src/db/retry'

let t: TestApp
beforeAll(async () => {
  if (usingPostgres()) t = await testApp()
}, 60_000)
afterAll(() => t?.close(), 30_000)

test.skipIf(!usingPostgres())(
  'a charge and its twin racing it (the same request token, uncommitted when the twin looked): charged once',
  async () => {
    const a = await t.account(1000, { price: 100 })
    const request: SingleCharge = {
      accountId: a.accountId,
      keyId: a.keyId,
      requestToken: Bun.randomUUIDv7(),
      lease: { token: crypto.randomUUID(), seconds: 60 },
      message: { phone: '+6281234567890', body: 'twin', mediaUrl: null, validitySeconds: 60 },
    }
    // The account held locked: both runs take their snapshot (no charge with the token yet) and wait
    // for it; the first then commits, and the second finds the account free but not the first's rows.
    const locked = Promise.withResolvers<void>()
    const release = Promise.withResolvers<void>()
    const held = t.db.sql.begin(async (tx) => {
      await tx`select 1 from accounts where id = ${a.accountId} for update`
      locked.resolve()
      await release.promise
    })
    await locked.promise
    const runs = [1, 2].map(() => retrying(() => chargeSingles(t.db.sql, 'UTC', [request])))
    await until(
      async () =>
        (
          await t.db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and cardinality(pg_blocking_pids(pid)) > 0`
        )[0]!.n,
      (n) => n === 2,
      30_000,
      'both runs to wait for the account',
    )
    release.resolve()
    await held
    const [first, second] = await Promise.all(runs)
    expect(first![0]).toMatchObject({ cost: 100 })
    expect(second![0]).toMatchObject({ cost: 100 })
    const [n] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where request_token = ${request.requestToken}`
    expect(n!.n).toBe(1)
    expect(await money(t, a.accountId)).toEqual({ balance: 900, ledgerSum: 900 })
  },
)
