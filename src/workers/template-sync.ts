// Syncs every sender's WhatsApp templates from its provider every TEMPLATE_SYNC_MINUTES (5 by default;
// 0: only on demand, POST /admin/v1/senders/{id}/templates/sync). Twilio says nothing when WhatsApp
// pauses or disables a template, so without this a Twilio sender's paused template stays `approved` here.
// Each instance runs its own loop, and passes by a sender someone synced within the interval (the
// senders' last syncs are in PostgreSQL); two instances that meet anyway cost two listings, never a
// double change (a sync is idempotent: a second one finds nothing new and records nothing).

import type { Deps } from '../deps'
import { log } from '../lib/log'
import { syncEverySender } from '../modules/templates/submission'
import { startLoop } from './loop'
import type { Worker } from './worker'

/** How often the loop looks when the periodic sync is off (it does nothing then). */
const IDLE_POLL_MS = 60 * 60_000

async function syncOnce(deps: Deps): Promise<number> {
  if (deps.config.templateSyncMinutes === 0) return 0
  const minutes = deps.config.templateSyncMinutes
  const done = await syncEverySender(deps, minutes, (senderId, why) => log.warn('template sync failed', { sender_id: senderId, why }))
  if (done.synced + done.failed > 0) log.info('templates synced', { senders: done.synced, failed: done.failed })
  // Never again at once: the next sync is a poll away.
  return 0
}

export const templateSync: Worker = {
  name: 'template-sync',
  pollMs: IDLE_POLL_MS,
  start: (deps) => {
    const pollMs = deps.config.templateSyncMinutes > 0 ? deps.config.templateSyncMinutes * 60_000 : IDLE_POLL_MS
    // The first sync comes one interval after the start, not at it: a deploy restarting every instance
    // does not list every provider's templates at once (a sender is synced when created or checked).
    return startLoop('template-sync', () => syncOnce(deps), { pollMs, firstAfterMs: pollMs, clock: deps.clock })
  },
  runOnce: syncOnce,
}
