// Applies the due status reports a provider schedules itself (the simulator's: HandoffResult.reports,
// recorded with the hand-off). Claiming a batch (delete ... skip locked) and applying it happen in one
// transaction: a crash in between leaves the reports in place for the next run. One message's reports
// are applied in their order, whichever instances claim them. It applies the simulator's due reviews
// of WhatsApp templates too (modules/templates/reviews.ts: approved or rejected, and announced).

import type { Deps } from '../deps'
import { nowOf } from '../db/now'
import { applyStatuses, rounds } from '../modules/status/machine'
import { applyDueReviews } from '../modules/templates/reviews'
import type { Worker } from './worker'

const BATCH = 500
/** Reports fall due continuously; a short poll keeps their delay close to SIM_DELIVERED_MS/SIM_READ_MS. */
const SIMULATOR_REPORTS_POLL_MS = 100

async function applyDueReports(deps: Pick<Deps, 'sql' | 'config' | 'clock'>): Promise<{ applied: number; events: number }> {
  return deps.sql.begin(async (tx) => {
    type Report = {
      id: number
      message_sid: string
      status: 'delivered' | 'read' | 'failed'
      error_code: number | null
      error_message: string | null
      due_at: Date
    }
    // A report waits while an earlier one of its message is still there outside this batch (claimed by
    // another instance that has not committed): applied first, a read would make its delivered a step
    // backwards, and the message's delivered event would never be written.
    const due = await tx<Report[]>`
      with batch as materialized (
        select id, message_sid, due_at from simulator_reports where due_at <= ${nowOf(tx, deps.clock)} order by due_at, id limit ${BATCH} for update skip locked
      )
      delete from simulator_reports
      where id in (
        select b.id from batch b
        where not exists (
          select 1 from simulator_reports e
          where e.message_sid = b.message_sid and (e.due_at, e.id) < (b.due_at, b.id) and e.id not in (select id from batch)
        )
      )
      returning message_sid, status, error_code, error_message, due_at, id`
    // Oldest first, so one message's delivered is applied before its read; one statement per round.
    const ordered = [...due].sort((a, b) => a.due_at.getTime() - b.due_at.getTime() || a.id - b.id)
    const reports = ordered.map((r) => ({ sid: r.message_sid, status: r.status, errorCode: r.error_code, errorMessage: r.error_message }))
    let events = 0
    for (const round of rounds(reports)) events += (await applyStatuses(tx, deps.config.timezone, round, { clock: deps.clock })).events
    return { applied: due.length, events }
  })
}

export const simulatorReports: Worker = {
  name: 'simulator-reports',
  pollMs: SIMULATOR_REPORTS_POLL_MS,
  // Always on: a stored simulator sender may exist whatever PROVIDER says (an idle poll is two indexed reads).
  async runOnce(deps) {
    const { applied } = await applyDueReports(deps)
    const reviewed = await deps.sql.begin((tx) => applyDueReviews(tx, { clock: deps.clock, timezone: deps.config.timezone }))
    return applied + reviewed
  },
}
