// Ends the PostgreSQL session a statement runs on, from another connection of the pool: what a group
// commit (lib/batch.ts) does when its write missed its deadline, so that the stuck statement holds no
// lock and no connection of the pool for ever. A failure is only logged.

import type { Sql } from './client'
import { errorKind, log } from '../lib/log'

/**
 * Ends the session `query` runs on (its connection's server process). The query's `state` is
 * postgres.js's: its connection's backend key, set once the query was given to the connection. Never
 * the session that asks (the embedded database has only one), never another database's or program's.
 * `what` names the late write in the log line.
 */
export function endSession(sql: Sql, query: unknown, what: string): void {
  const pid = (query as { state?: { pid?: number } | null }).state?.pid
  log.warn(`${what} not answered in time: ending their database session`, { pid: pid ?? null })
  if (!pid) return
  sql`
    select pg_terminate_backend(pid) from pg_stat_activity
    where pid = ${pid} and pid <> pg_backend_pid() and datname = current_database() and application_name = 'messaging-api'`.catch(
    (error: unknown) => log.warn('ending a database session failed', { pid, error: errorKind(error) }),
  )
}
