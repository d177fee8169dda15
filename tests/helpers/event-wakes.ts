// The wake-ups the delivery worker and the listen streams hear (src/modules/webhooks/notify.ts): a
// NOTIFY on webhook_events at the commit of whatever wrote or replayed events, from any instance. A test
// counts them on its database. `settled()` sends a NOTIFY of the test's own and waits for it:
// notifications arrive in commit order, so by then every earlier commit's has been heard (an event
// awaited, never a while).

import type { Database } from '../../src/db/client'
import { EVENTS_CHANNEL } from '../../src/modules/webhooks/notify'

/** The payload of the test's own NOTIFY (the table's are empty). */
const MARK = 'test-mark'

export type EventWakes = {
  /** How many wake-ups were heard, once every commit before this call has been. */
  settled(): Promise<number>
  stop(): Promise<void>
}

export async function eventWakes(db: Pick<Database, 'sql' | 'listen'>): Promise<EventWakes> {
  let heard = 0
  let marked: (() => void) | undefined
  const stop = await db.listen!(EVENTS_CHANNEL, (payload) => {
    if (payload === MARK) marked?.()
    else heard++
  })
  return {
    async settled() {
      const mark = new Promise<void>((resolve) => (marked = resolve))
      await db.sql.notify(EVENTS_CHANNEL, MARK)
      await mark
      return heard
    },
    stop,
  }
}
