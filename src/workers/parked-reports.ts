// Applies parked status reports (modules/status/parked.ts) whose SID has been stored since. Woken
// in-process when the send path records outcomes (and when a report is parked), and polling as the
// fallback (the SID may be stored by another instance).

import type { Worker } from './worker'
import { applyParked } from '../modules/status/receiver'

const PARKED_REPORTS_POLL_MS = 1_000
const BATCH = 500

export const parkedReports: Worker = {
  name: 'parked-reports',
  pollMs: PARKED_REPORTS_POLL_MS,
  // Outcomes are recorded many times a second under load, and almost never leave anything to apply.
  minGapMs: 50,
  async runOnce(deps) {
    const outcome = await applyParked(deps.sql, deps.config.timezone, BATCH, { clock: deps.clock })
    return outcome.applied
  },
}
