// Keeps the history tables partitioned (db/partitions.ts): converts a table still plain (an installation
// from before partitioning: bounded steps while the service serves, resumed by the next run if this one
// stopped), and creates the months ahead. Hourly; the months ahead are also checked at every start
// (migrate). Several instances: a session advisory lock on a direct connection lets one of them convert
// (without one, behind a pooler, the steps still check the state first and the swap takes its own lock).

import type { Deps } from '../deps'
import type { Worker } from './worker'
import { CONVERSION_LOCK, convertHistory, ensurePartitions, HISTORY_TABLES } from '../db/partitions'
import { log } from '../lib/log'

const PARTITIONS_POLL_MS = 60 * 60_000

async function convertOnce(deps: Pick<Deps, 'sql' | 'directSql' | 'config' | 'clock'>): Promise<number> {
  const embedded = !deps.config.databaseUrl
  const onStep = (table: string, step: string) => log.info('partitioning history', { table, step })
  const run = async () => {
    const converted = await convertHistory(deps.sql, { concurrently: !embedded, onStep, clock: deps.clock })
    if (converted.length > 0 && (await plainTables(deps)) === 0) log.info('history partitioned', { tables: converted.join(',') })
    return converted.length
  }
  if (!deps.directSql) return run()
  const session = await deps.directSql.reserve()
  try {
    const [row] = await session<{ ok: boolean }[]>`select pg_try_advisory_lock(${CONVERSION_LOCK}) as ok`
    if (!row!.ok) return 0
    try {
      return await run()
    } finally {
      await session`select pg_advisory_unlock(${CONVERSION_LOCK})`
    }
  } finally {
    session.release()
  }
}

async function plainTables(deps: Pick<Deps, 'sql'>): Promise<number> {
  const [row] = await deps.sql<{ n: number }[]>`
    select count(*)::int as n from pg_class c
    where c.relname = any(${[...HISTORY_TABLES]}::text[]) and c.relkind = 'r' and c.relnamespace = current_schema()::regnamespace`
  return row!.n
}

export const partitions: Worker = {
  name: 'partitions',
  pollMs: PARTITIONS_POLL_MS,
  runOnce: async (deps) => {
    if ((await plainTables(deps)) > 0) await convertOnce(deps)
    await ensurePartitions(deps.sql, deps.clock.now())
    return 0
  },
}
