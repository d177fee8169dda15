// The database pool as this process sees it. postgres.js keeps its connection queues to itself (no
// API, no events), so what is measured is what passes through its public surface: `sql.begin`, which
// every transaction of the service goes through. A transaction holds a connection from BEGIN to
// COMMIT, so transactions open are connections held by transactions, and the time from asking for
// one to its first statement is the wait for a free connection (plus the BEGIN round trip).
//
// Not measured: single statements outside a transaction. postgres.js pipelines them on busy
// connections (up to 100 each) and only queues them when every connection is full or in a
// transaction, with no hook to see either; a saturated pool shows as transactions waiting and as a
// slow transaction start. The connections themselves, as PostgreSQL sees them (every instance's),
// are read at scrape time (queues.ts: messaging_db_connections).

import type { Sql } from '../../db/client'
import { poolMaxConnections, poolTransactionsOpen, poolTransactionStart, poolTransactionsWaiting } from './measures'

const instrumented = new WeakSet<Sql>()

type Begin = (...args: unknown[]) => Promise<unknown>

/** Counts the transactions of `sql`; once per client, however often it is called. */
export function instrumentPool(sql: Sql): void {
  // The pool's own setting (DB_POOL_MAX, or 1 for the embedded database), as postgres.js was given it.
  poolMaxConnections.set({}, sql.options.max)
  if (instrumented.has(sql)) return
  instrumented.add(sql)
  const begin = sql.begin.bind(sql) as unknown as Begin
  const timed: Begin = (...args) => {
    // sql.begin(fn) or sql.begin(options, fn): the callback is the last argument.
    const fn = args[args.length - 1] as (tx: unknown) => unknown
    const asked = performance.now()
    let started = false
    poolTransactionsWaiting.add({}, 1)
    args[args.length - 1] = (tx: unknown) => {
      if (!started) {
        started = true
        poolTransactionsWaiting.add({}, -1)
        poolTransactionsOpen.add({}, 1)
        poolTransactionStart.observe({}, (performance.now() - asked) / 1000)
      }
      return fn(tx)
    }
    return begin(...args).finally(() => settle(started))
  }
  ;(sql as unknown as { begin: Begin }).begin = timed
}

function settle(started: boolean): void {
  if (started) poolTransactionsOpen.add({}, -1)
  else poolTransactionsWaiting.add({}, -1)
}
