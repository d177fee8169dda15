// Provider reports that arrive before their message's SID is stored. Under load, a provider's status
// callback can beat the recording of its own answer to the send (the SID is stored only after the
// provider answered). Such a report is parked, and applied through the same forward-only state machine
// once the SID exists: by the next report for that SID, or by the parked-reports worker. Parked reports
// expire after PARKED_REPORT_TTL_SECONDS; the retention worker deletes them, unapplied.
//
// Order: every report for one SID, whether parked or arriving, is handled under one transaction-scoped
// advisory lock on that SID, and parked ones are applied oldest first before a newer one. So a
// `delivered` parked before a `read` applies as sent → delivered → read, one event per change.

import type { Sql } from '../../db/client'
import { applyStatus, applyStatuses, rounds, type StatusReport } from './machine'

/** How long a report waits for its SID; a SID not stored within an hour will not be. */
export const PARKED_REPORT_TTL_SECONDS = 3600
// The first key of the two-key advisory lock: the namespace of "one SID's reports".
const SID_LOCK = 7_240_008

export type Received = { changed: boolean; events: number; parked: boolean }

/**
 * A provider report as it arrives: applied (after any reports parked for its SID) when the SID is
 * stored, parked otherwise. A `sent` report changes nothing and is never parked.
 */
export async function receiveReport(sql: Sql, timezone: string, report: StatusReport): Promise<Received> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ known: boolean }[]>`
      select pg_advisory_xact_lock(${SID_LOCK}, hashtext(${report.sid})),
             exists (select 1 from messages where message_sid = ${report.sid}) as known`
    if (!row!.known) {
      if (report.status === 'sent') return { changed: false, events: 0, parked: false }
      await tx`
        insert into parked_reports (message_sid, status, error_code, error_message, expires_at)
        values (${report.sid}, ${report.status}, ${report.errorCode ?? null}, ${report.errorMessage ?? null},
                now() + make_interval(secs => ${PARKED_REPORT_TTL_SECONDS}))`
      return { changed: false, events: 0, parked: true }
    }
    // Expired reports for the SID are dropped with the rest, unapplied.
    const parked = await tx<Parked[]>`
      delete from parked_reports where message_sid = ${report.sid}
      returning id, message_sid, status, error_code, error_message, expires_at > now() as live`
    let events = 0
    for (const earlier of toReports(parked.filter((p) => p.live))) events += (await applyStatuses(tx, timezone, [earlier])).events
    const outcome = await applyStatus(tx, timezone, report)
    return { changed: outcome.changed, events: events + outcome.events, parked: false }
  })
}

type Parked = {
  id: number
  message_sid: string
  status: 'delivered' | 'read' | 'failed'
  error_code: number | null
  error_message: string | null
  live: boolean
}

const toReports = (rows: Parked[]): StatusReport[] =>
  [...rows]
    .sort((a, b) => a.id - b.id)
    .map((r) => ({ sid: r.message_sid, status: r.status, errorCode: r.error_code, errorMessage: r.error_message }))

/**
 * Applies up to `limit` unexpired parked reports whose SID is now stored, oldest first, in one
 * transaction. Rows another transaction holds (a report for the same SID being received) are skipped:
 * that transaction applies them.
 */
export async function applyParked(sql: Sql, timezone: string, limit: number): Promise<{ applied: number; events: number }> {
  return sql.begin(async (tx) => {
    const due = await tx<Parked[]>`
      delete from parked_reports
      where id in (
        select p.id from parked_reports p
        where p.expires_at > now() and exists (select 1 from messages m where m.message_sid = p.message_sid)
        order by p.id
        limit ${limit}
        for update skip locked
      )
      returning id, message_sid, status, error_code, error_message, true as live`
    let events = 0
    for (const round of rounds(toReports(due))) events += (await applyStatuses(tx, timezone, round)).events
    return { applied: due.length, events }
  })
}
