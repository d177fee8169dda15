// After a commit that wrote webhook events: wake this process's delivery loop at once and, on a real
// PostgreSQL, every other instance's through NOTIFY (PGlite has no cross-session NOTIFY; polling covers it).

import type { Deps } from '../../deps'

export const EVENTS_CHANNEL = 'webhook_events'

export function eventsCommitted(deps: Pick<Deps, 'sql' | 'config' | 'wake'>): void {
  deps.wake('webhook-delivery')
  if (deps.config.databaseUrl) deps.sql.notify(EVENTS_CHANNEL, '').catch(() => {})
}
