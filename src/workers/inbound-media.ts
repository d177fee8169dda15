// Fetches the media of inbound messages once each (modules/inbound/media.ts): claims due media in one
// statement (`for update skip locked`, a lease in run_at), so any number of instances fetch each medium
// once; fetches and reads them outside any transaction; records each outcome (kept, retried later with
// backoff in SQL, or failed). Woken after an inbound message with media is stored, polling as the fallback.

import type { Worker } from './worker'
import { claimDue, fetchMedium, record } from '../modules/inbound/media'

const INBOUND_MEDIA_POLL_MS = 2_000
/** Media fetched at once by one instance (each up to MEDIA_MAX_BYTES in memory while it is read). */
const BATCH = 4

export const inboundMedia: Worker = {
  name: 'inbound-media',
  pollMs: INBOUND_MEDIA_POLL_MS,
  async runOnce(deps) {
    const claimed = await claimDue(deps.sql, deps.clock, BATCH)
    await Promise.all(claimed.map(async (medium) => record(deps.sql, deps.clock, medium, await fetchMedium(deps, medium))))
    return claimed.length
  },
}
