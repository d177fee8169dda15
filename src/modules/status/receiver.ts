// Provider reports that arrive before their message's SID is stored. Under load, a provider's status
// callback can beat the recording of its own answer to the send (the SID is stored only after the
// provider answered). Such a report is parked, and applied through the same forward-only state machine
// once the SID exists: by the next report for that SID, or by the parked-reports worker. Parked reports
// expire after PARKED_REPORT_TTL_SECONDS; the retention worker deletes them, unapplied.
//
// Order: every report for one SID, whether parked or arriving, is handled under one transaction-scoped
// advisory lock on that SID, and parked ones are applied oldest first before a newer one. So a
// `delivered` parked before a `read` applies as sent → delivered → read, one event per change.
//
// Every report keeps the senders its callback's signer owns, parked or not: it changes a message only
// when one of them sent it (status/machine.ts).

import type { Sql } from '../../db/client'
import { nowOf } from '../../db/now'
import { endSession } from '../../db/end-session'
import type { EventClock } from '../webhooks/events'
import { systemClock } from '../../lib/clock'
import { Batcher } from '../../lib/batch'
import { ApiError } from '../../http/errors'
import { applyStatuses, ownersLiteral, ownersOf, rounds, type Report } from './machine'
import { reportedCategory } from '../ledger/service'
import type { Pricing, SignedReport } from '../../providers/provider'

/** How long a report waits for its SID; a SID not stored within an hour will not be. */
export const PARKED_REPORT_TTL_SECONDS = 3600
// The first key of the two-key advisory lock: the namespace of "one SID's reports".
export const SID_LOCK = 7_240_008
/**
 * How long one group commit of callbacks may take. Within the 10 s a request may go without a byte
 * (Bun's idle timeout: past it the provider sees a cut connection, not an answer). Past it the
 * callbacks are answered 503 (the provider sends them again; a report applied twice changes nothing
 * the second time) and the next ones go ahead: without it, one statement that never came back (its
 * connection gone quiet) held up every later callback of the process. A batch waiting for a
 * connection through an outage (CONNECT_WAIT_SECONDS) is answered the same 503, a little sooner.
 */
export const RECEIVE_DEADLINE_MS = 8_000

export type Received = {
  /** How many of these reports changed their message (reports parked earlier, applied now, not counted). */
  changed: number
  /** Events written, for these reports and for earlier ones applied before them. */
  events: number
  /** How many were parked (their SID is not stored yet). */
  parked: number
  /** The SIDs of these reports that named a message of a sender their signer does not own: nothing changed. */
  refused: string[]
}

/**
 * Group commit of provider callbacks: the reports of callbacks that arrive while a write is in flight
 * are received together in the next transaction, so under load many callbacks share one commit. Each
 * callback stays all-or-nothing: a failed transaction of several is retried callback by callback
 * (repeating one is safe: a report that already moved its message changes nothing the second time).
 */
export function createReportReceiver(sql: Sql, timezone: string, options: { clock?: EventClock } = {}) {
  const batcher = new Batcher<SignedReport[], Received>(
    (callbacks, signal) => receiveCallbacks(sql, timezone, callbacks, { ...options, signal }),
    {
      maxBatch: 200,
      deadline: {
        ms: RECEIVE_DEADLINE_MS,
        // Real time, as a socket's timeout: how long the database takes to answer, not a time the
        // service decides by (a test clock moved past it would fail a write still in flight).
        clock: systemClock(),
        error: () =>
          new ApiError('SERVICE_UNAVAILABLE', 'the database did not answer in time; retry shortly', 503, {}, { 'retry-after': '1' }),
      },
    },
  )
  return (reports: SignedReport[]): Promise<Received> =>
    reports.length === 0 ? Promise.resolve({ changed: 0, events: 0, parked: 0, refused: [] }) : batcher.add(reports)
}

/**
 * The reports of several callbacks in one transaction, each callback's outcome counted on its own.
 * Each report is applied (after any reports parked earlier for its SID) when its SID is stored, parked
 * otherwise; a `sent` report changes nothing and is never parked. The SIDs' locks are taken in one order (by lock key), so two transactions with the same SIDs cannot
 * deadlock. `clock`: the time
 * reports are parked, expire and are applied at (the database's now() without one).
 */
async function receiveCallbacks(
  sql: Sql,
  timezone: string,
  callbacks: SignedReport[][],
  options: { clock?: EventClock; signal: AbortSignal },
): Promise<Received[]> {
  const clock = options.clock ?? { sqlNow: () => null }
  const applying = { clock }
  const outcomes: Received[] = callbacks.map(() => ({ changed: 0, events: 0, parked: 0, refused: [] }))
  const reports = callbacks.flatMap((list, from) => list.map((report) => ({ ...report, from })))
  if (reports.length === 0) return outcomes
  const sids = [...new Set(reports.map((r) => r.sid))]
  return sql.begin(async (tx) => {
    // Its callbacks were answered 503 while it waited for a connection: their retries will apply them.
    options.signal.throwIfAborted()
    // Two statements sent together (one round trip). The first takes the SIDs' locks (the aggregate
    // takes them in key order) and says which SIDs are stored. The second, a statement of its own so
    // that it sees what a transaction we waited for on those locks committed, takes the reports
    // parked earlier for the stored SIDs (expired ones are dropped with the rest, unapplied). A SID
    // stored between the two has its earlier reports applied now and this one parked after them.
    const locking = tx<{ sid: string; known: boolean }[]>`
        with locked as materialized (
          select count(pg_advisory_xact_lock(${SID_LOCK}, k)) as n
          from (select distinct hashtext(s) as k from unnest(${sids}::text[]) as s order by k) as keys
        )
        select s.sid, exists (select 1 from messages where message_sid = s.sid) as known
        from locked, unnest(${sids}::text[]) as s(sid)`
    // Past the deadline the transaction's connection is ended, whatever it waits on (rolled back
    // unless its COMMIT was in: either way the provider's retry is safe), so that it holds no lock
    // and no connection of the pool for ever.
    options.signal.addEventListener('abort', () => endSession(sql, locking, 'status reports'), { once: true })
    const [rows, parked] = await Promise.all([
      locking,
      tx<Parked[]>`
        delete from parked_reports p
        where p.message_sid = any(${sids}::text[]) and exists (select 1 from messages m where m.message_sid = p.message_sid)
        returning id, message_sid, status, error_code, error_message, signer_senders, pricing, expires_at > ${nowOf(tx, clock)} as live`,
    ])
    const known = new Set(rows.filter((r) => r.known).map((r) => r.sid))

    // A `sent` moves no status: parked only when it prices the message (Meta's), for its settlement.
    const toPark = reports.filter((r) => !known.has(r.sid) && (r.status !== 'sent' || reportedCategory(r.pricing) !== null))
    if (toPark.length > 0) {
      await tx`
        insert into parked_reports (message_sid, status, error_code, error_message, signer_senders, pricing, received_at, expires_at)
        select sid, status, error_code, error_message, signer_senders::bigint[], pricing::jsonb, ${nowOf(tx, clock)},
               ${nowOf(tx, clock)} + make_interval(secs => ${PARKED_REPORT_TTL_SECONDS})
        from unnest(${toPark.map((r) => r.sid)}::text[], ${toPark.map((r) => r.status)}::text[],
                    ${toPark.map((r) => r.errorCode ?? null) as number[]}::int[],
                    ${toPark.map((r) => r.errorMessage ?? null) as string[]}::text[],
                    ${toPark.map((r) => ownersLiteral(r.senders))}::text[],
                    ${toPark.map((r) => (r.pricing ? JSON.stringify(r.pricing) : null)) as string[]}::text[]) with ordinality
          as r(sid, status, error_code, error_message, signer_senders, pricing, n)
        order by n`
      for (const r of toPark) outcomes[r.from]!.parked++
    }

    // Events of parked reports are counted for the first callback (the caller only needs to know
    // that some were written).
    for (const round of rounds(toReports(parked.filter((p) => p.live)))) {
      outcomes[0]!.events += (await applyStatuses(tx, timezone, round, applying)).events
    }
    // Within a round each SID appears once, so its changes and events belong to one callback.
    for (const round of rounds(reports.filter((r) => known.has(r.sid)))) {
      const from = new Map(round.map((r) => [r.sid, r.from]))
      const outcome = await applyStatuses(tx, timezone, round, applying)
      for (const sid of outcome.changedSids) outcomes[from.get(sid)!]!.changed++
      for (const sid of outcome.eventSids) outcomes[from.get(sid)!]!.events++
      for (const sid of outcome.refusedSids) outcomes[from.get(sid)!]!.refused.push(sid)
    }
    return outcomes
  })
}

type Parked = {
  id: number
  message_sid: string
  status: 'sent' | 'delivered' | 'read' | 'failed'
  error_code: number | null
  error_message: string | null
  signer_senders: (number | string)[]
  pricing: Pricing | null
  live: boolean
}

const toReports = (rows: Parked[]): Report[] =>
  [...rows]
    .sort((a, b) => a.id - b.id)
    .map((r) => ({
      sid: r.message_sid,
      status: r.status,
      errorCode: r.error_code,
      errorMessage: r.error_message,
      pricing: r.pricing,
      senders: ownersOf(r.signer_senders),
    }))

/**
 * Applies the unexpired parked reports of up to `limit` SIDs now stored (those parked first first), all of
 * each SID's, oldest first, in one transaction, under the same per-SID advisory lock that receiving
 * takes: a report of that SID arriving meanwhile waits for them, and is applied after them. A SID whose
 * lock another transaction holds (a report for it being received) is skipped: that one applies them.
 */
export async function applyParked(
  sql: Sql,
  timezone: string,
  limit: number,
  options: { clock?: EventClock } = {},
): Promise<{ applied: number; events: number }> {
  const clock = options.clock ?? { sqlNow: () => null }
  // The worker is woken by every recorded hand-off and almost never finds anything: one statement
  // says so, instead of a transaction of three.
  const [found] = await sql<{ due: boolean }[]>`
    select exists (
      select 1 from parked_reports p
      where p.expires_at > ${nowOf(sql, clock)} and exists (select 1 from messages m where m.message_sid = p.message_sid)
    ) as due`
  if (!found!.due) return { applied: 0, events: 0 }
  return sql.begin(async (tx) => {
    // The lock is tried, never waited for (its holder applies the SID's reports), so this statement's
    // snapshot may predate a holder's commit: the rows that holder deleted are gone when this one's
    // delete reaches them (it finds them deleted and skips them), and it parks nothing for a stored SID.
    const due = await tx<Parked[]>`
      with candidates as materialized (
        select p.message_sid, min(p.id) as first from parked_reports p
        where p.expires_at > ${nowOf(tx, clock)} and exists (select 1 from messages m where m.message_sid = p.message_sid)
        group by p.message_sid
        order by first
        limit ${limit}
      ), locked as materialized (
        select message_sid from candidates where pg_try_advisory_xact_lock(${SID_LOCK}, hashtext(message_sid))
      )
      delete from parked_reports p
      where p.message_sid in (select message_sid from locked) and p.expires_at > ${nowOf(tx, clock)}
      returning id, message_sid, status, error_code, error_message, signer_senders, pricing, true as live`
    let events = 0
    for (const round of rounds(toReports(due))) events += (await applyStatuses(tx, timezone, round, options)).events
    return { applied: due.length, events }
  })
}
