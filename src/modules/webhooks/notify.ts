// How the delivery worker and the listen streams (admin webhook listen) hear of new webhook events at
// once instead of at their next poll. The writer does nothing: the table announces them (sql/0034, a
// trigger on webhook_events), so the statement that writes an event, or replays one, queues a NOTIFY
// on `webhook_events` that is delivered at its commit, once per transaction, to every session that
// LISTENs: this instance's and every other instance's on the same database. Each subscriber here rides
// on the process's one LISTEN (Database.listen). Without one (behind a pooler without
// DATABASE_DIRECT_URL, or while the LISTEN cannot be made) the subscribers poll, as they always do too.

import type { Deps } from '../../deps'
import { log } from '../../lib/log'

export const EVENTS_CHANNEL = 'webhook_events'

/**
 * Calls `wake` after every commit that wrote or replayed webhook events, from any instance, until the
 * returned function is called. Resolves once the subscription holds (or could not be made: then it
 * logs why and the caller's poll is all there is).
 */
export async function onEventsCommitted(deps: Pick<Deps, 'listen'>, wake: () => void): Promise<() => Promise<void>> {
  if (!deps.listen) return async () => {}
  try {
    return await deps.listen(EVENTS_CHANNEL, () => wake())
  } catch (error) {
    log.warn('LISTEN webhook_events failed; polling only', {
      error: error instanceof Error ? error.message.slice(0, 200) : 'unknown',
    })
    return async () => {}
  }
}
