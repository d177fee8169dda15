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
import { Batcher } from '../../lib/batch'
import { applyStatuses, rounds, type StatusReport } from './machine'

/** How long a report waits for its SID; a SID not stored within an hour will not be. */
export const PARKED_REPORT_TTL_SECONDS = 3600
// The first key of the two-key advisory lock: the namespace of "one SID's reports".
const SID_LOCK = 7_240_008

export type Received = { changed: boolean; events: number; parked: boolean }

// Reports that arrive together share one transaction (group commit, see lib/batch.ts): under load,
// many callbacks cost one lock statement, one parked-reports statement and one state-machine
// statement, not five round trips each. A lone report waits for nobody.
const receivers = new WeakMap<Sql, Map<string, Batcher<StatusReport, Received>>>()

/**
 * A provider report as it arrives: applied (after any reports parked for its SID) when the SID is
 * stored, parked otherwise. A `sent` report changes nothing and is never parked.
 */
export function receiveReport(sql: Sql, timezone: string, report: StatusReport): Promise<Received> {
  let byZone = receivers.get(sql)
  if (!byZone) receivers.set(sql, (byZone = new Map()))
  let batcher = byZone.get(timezone)
  if (!batcher) byZone.set(timezone, (batcher = new Batcher((reports) => receiveReports(sql, timezone, reports))))
  return batcher.add(report)
}

/**
 * Many reports in one transaction, each handled as receiveReport describes; a SID may appear more
 * than once (its reports apply in the given order). Every SID's lock is taken first, in one order
 * (so batches cannot deadlock); the statements after it see what the previous holders committed.
 */
export async function receiveReports(sql: Sql, timezone: string, reports: StatusReport[]): Promise<Received[]> {
  return sql.begin(async (tx) => {
    const sids = [...new Set(reports.map((r) => r.sid))]
    // Sent together (one round trip), run one after the other: the second statement's snapshot is
    // taken once the first has every lock, so it sees what the previous holders committed.
    const locking = tx`
      select pg_advisory_xact_lock(${SID_LOCK}, h)
      from (select distinct hashtext(sid) as h from unnest(${sids}::text[]) as sid order by 1) as ordered`
    // Unknown SIDs park their reports (`sent` changes nothing: never parked); known ones take theirs
    // out, to be applied first. Expired reports for the SID are dropped with the rest, unapplied.
    const parking = reports.filter((r) => r.status !== 'sent')
    // One row per known SID (id null), then each parked report taken out for a known SID.
    const taking = tx<(Omit<Parked, 'id'> & { id: number | null })[]>`
      with known as materialized (
        select sid from unnest(${sids}::text[]) as sid where exists (select 1 from messages m where m.message_sid = sid)
      ), park as (
        insert into parked_reports (message_sid, status, error_code, error_message, expires_at)
        select r.sid, r.status, r.error_code, r.error_message, now() + make_interval(secs => ${PARKED_REPORT_TTL_SECONDS})
        from unnest(${parking.map((r) => r.sid)}::text[], ${parking.map((r) => r.status)}::text[],
                    ${parking.map((r) => r.errorCode ?? null) as number[]}::int[],
                    ${parking.map((r) => r.errorMessage ?? null) as string[]}::text[])
             with ordinality as r(sid, status, error_code, error_message, ord)
        where r.sid not in (select sid from known)
        order by r.ord
      ), taken as (
        delete from parked_reports where message_sid in (select sid from known)
        returning id, message_sid, status, error_code, error_message, expires_at > now() as live
      )
      select null::bigint as id, sid as message_sid, null as status, null::int as error_code, null as error_message, null::boolean as live
      from known
      union all
      select id, message_sid, status, error_code, error_message, live from taken`
    const [, rows] = await Promise.all([locking, taking])
    const known = new Set(rows.map((r) => r.message_sid))
    const earlier = toReports(rows.filter((r): r is Parked => r.id !== null && r.live === true))
    // Each SID's parked reports, oldest first, then the arriving ones in order; one statement per round.
    const outcomes = new Map<StatusReport, { changed: boolean; events: number }>()
    for (const round of rounds([...earlier, ...reports.filter((r) => known.has(r.sid))])) {
      const applied = await applyStatuses(tx, timezone, round)
      const changed = new Set(applied.changedSids)
      const withEvent = new Set(applied.eventSids)
      for (const r of round) outcomes.set(r, { changed: changed.has(r.sid), events: withEvent.has(r.sid) ? 1 : 0 })
    }
    // A parked report's event is counted with the first arriving report for its SID.
    const parkedEvents = new Map<string, number>()
    for (const r of earlier) parkedEvents.set(r.sid, (parkedEvents.get(r.sid) ?? 0) + outcomes.get(r)!.events)
    return reports.map((r) => {
      if (!known.has(r.sid)) return { changed: false, events: 0, parked: r.status !== 'sent' }
      const own = outcomes.get(r)!
      const events = own.events + (parkedEvents.get(r.sid) ?? 0)
      parkedEvents.delete(r.sid)
      return { changed: own.changed, events, parked: false }
    })
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
  // The worker is woken by every recorded hand-off and almost never finds anything: one statement
  // says so, instead of a transaction of three.
  const [found] = await sql<{ due: boolean }[]>`
    select exists (
      select 1 from parked_reports p
      where p.expires_at > now() and exists (select 1 from messages m where m.message_sid = p.message_sid)
    ) as due`
  if (!found!.due) return { applied: 0, events: 0 }
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
