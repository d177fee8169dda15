// Guards of money that need two database sessions at once (PostgreSQL): statements that lock several
// accounts lock them in id order, so a refund and a charge of the same accounts cannot deadlock.
// PostgreSQL would break such a deadlock after deadlock_timeout by aborting one statement (retried),
// so instead of waiting for one, the test looks at the wait itself: while the refund waits for an
// account, `for update nowait` on the accounts after it in id order must find them free.

import { afterEach, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'
import { until } from '../helpers/wait'
import type { HandoffResult, OutgoingMessage, Provider } from '../../src/providers/provider'

let t: TestApp | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

test.skipIf(!usingPostgres())(
  'a refund of several accounts waits for them in id order, so a charge in id order cannot deadlock with it (lock order)',
  async () => {
    // The provider holds every hand-off to a number ending in 9999 until released, then refuses it.
    const gate = Promise.withResolvers<void>()
    let held = 0
    const provider: Provider = {
      name: 'twilio',
      async send(message: OutgoingMessage): Promise<HandoffResult> {
        if (!message.to.endsWith('9999')) return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
        held++
        await gate.promise
        return { ok: false, errorCode: 21610, errorMessage: 'refused' }
      },
    }
    t = await testApp({ provider })
    const app = t
    const accounts: { accountId: number; key: string }[] = []
    for (let i = 0; i < 8; i++) accounts.push(await app.account(100))
    const ids = accounts.map((a) => a.accountId)
    const lowest = Math.min(...ids)

    // One refused send per account, highest id first: the messages' order, and the table's physical
    // order (each charge rewrites its account's row), are the reverse of the accounts' ids, and the
    // hashing of a set of ids is another order. Only the refund's own `order by` is id order.
    const refused: Promise<unknown>[] = []
    for (const [i, account] of [...accounts].reverse().entries()) {
      refused.push(app.api('POST', '/messages/send', account.key, { to: '081234569999', body: 'refused' }))
      await until(
        () => held,
        (n) => n === i + 1,
        10_000,
        'the refused hand-off under way',
      )
    }

    // Another transaction holds the lowest account, as a charge of all eight (id order) does first.
    const other = await app.db.sql.reserve()
    try {
      await other`begin`
      await other`select id from accounts where id = ${lowest} for update`
      gate.resolve() // the refusals come back together: one refund statement for the eight accounts
      await until(
        async () =>
          (
            await app.db.sql<{ n: number }[]>`
            select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`
          )[0]!.n,
        (n) => n === 1,
        10_000,
        'the refund waiting for the lowest account',
      )
      // The refund waits for the lowest account: it must hold none of the others meanwhile, or this
      // transaction (the charge, next taking them in id order) and the refund wait for each other.
      const others: Record<number, string> = {}
      for (const id of ids.filter((id) => id !== lowest).sort((a, b) => a - b)) {
        others[id] = await other`select id from accounts where id = ${id} for update nowait`.then(
          () => 'free',
          () => 'held by the refund',
        )
      }
      expect(others).toEqual(Object.fromEntries(ids.filter((id) => id !== lowest).map((id) => [id, 'free'])))
      await other`commit`
    } finally {
      await other`rollback`.catch(() => {})
      other.release()
    }

    await Promise.all(refused)
    for (const id of ids) expect(await money(app, id)).toEqual({ balance: 100, ledgerSum: 100 })
  },
)
