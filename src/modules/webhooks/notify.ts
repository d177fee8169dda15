// After a commit that wrote webhook events: wake this process's delivery loop and its listen streams
// (admin webhook listen) at once and, on a real PostgreSQL, every other instance's through NOTIFY
// (PGlite has no cross-session NOTIFY; polling covers it). Status changes (provider callbacks, the
// simulator's and parked reports) queue their NOTIFY in the statement that writes the events, so it is
// sent by their own commit; other writers of events get one sent after theirs.

import type { Deps } from '../../deps'
import type { Sql } from '../../db/client'

export const EVENTS_CHANNEL = 'webhook_events'

const inProcess = new Set<() => void>()

/** Calls `wake` after every eventsCommitted of this process until the returned function is called. */
export function onEventsCommitted(wake: () => void): () => void {
  inProcess.add(wake)
  return () => inProcess.delete(wake)
}

// A NOTIFY after the commit is a statement (and a transaction) of its own: under load, commits that come while one is in
// flight share the next one. Each commit is still followed by a NOTIFY sent after it.
const notifying = new WeakMap<Sql, { again: boolean }>()

function notifyEvents(sql: Sql): void {
  const inFlight = notifying.get(sql)
  if (inFlight) {
    inFlight.again = true
    return
  }
  const state = { again: false }
  notifying.set(sql, state)
  void sql
    .notify(EVENTS_CHANNEL, '')
    .catch(() => {})
    .finally(() => {
      notifying.delete(sql)
      if (state.again) notifyEvents(sql)
    })
}

/**
 * The client to LISTEN on, or undefined: the embedded database (nothing else to hear), or PostgreSQL
 * behind a pooler without DATABASE_DIRECT_URL (a LISTEN there would hear nothing: callers poll).
 */
export const listenerOf = (deps: Pick<Deps, 'config' | 'directSql'>): Sql | undefined =>
  deps.config.databaseUrl ? deps.directSql : undefined

/**
 * Whether status changes announce themselves in their own commit (`applyStatuses(..., { notify })`):
 * on PostgreSQL, where other instances listen; PGlite has none to tell.
 */
export const notifies = (deps: Pick<Deps, 'config'>): boolean => Boolean(deps.config.databaseUrl)

/** `notified`: the commit carried its own NOTIFY (pg_notify in the transaction); only this process is woken. */
export function eventsCommitted(deps: Pick<Deps, 'sql' | 'config' | 'wake'>, options: { notified?: boolean } = {}): void {
  deps.wake('webhook-delivery')
  for (const wake of inProcess) wake()
  if (deps.config.databaseUrl && !options.notified) notifyEvents(deps.sql)
}
