// After a commit that wrote webhook events: wake this process's delivery loop and its listen streams
// (admin webhook listen) at once and, on a real PostgreSQL, every other instance's through NOTIFY
// (PGlite has no cross-session NOTIFY; polling covers it).

import type { Deps } from '../../deps'

export const EVENTS_CHANNEL = 'webhook_events'

const inProcess = new Set<() => void>()

/** Calls `wake` after every eventsCommitted of this process until the returned function is called. */
export function onEventsCommitted(wake: () => void): () => void {
  inProcess.add(wake)
  return () => inProcess.delete(wake)
}

export function eventsCommitted(deps: Pick<Deps, 'sql' | 'config' | 'wake'>): void {
  deps.wake('webhook-delivery')
  for (const wake of inProcess) wake()
  if (deps.config.databaseUrl) deps.sql.notify(EVENTS_CHANNEL, '').catch(() => {})
}
