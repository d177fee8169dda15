// The message state machine: forward only. sent → delivered → read; sent or delivered → failed;
// skipping is allowed (sent → read). A report that repeats the current state or would move
// backwards changes nothing and emits nothing. A provider callback's report names the senders its
// signer owns (SignedReport): it changes a message only when one of them sent it, and one that names
// another sender's message changes nothing (refused, for the caller's log). An accepted change, its timestamps, the refund of a
// failure (ledger/service.ts's statusMoney: once, since failed is final), the settlement Meta's
// `pricing` asks for (once: settled_at; a report that moves no status may still settle) and its
// message.status event (when the key has a webhook or a listener) are one statement, hence one transaction.

import type { Db } from '../../db/client'
import type { SenderRef, StatusReport } from '../../providers/provider'
import { insertAccountEvents, insertEvents, statusPayload, type EventClock } from '../webhooks/events'
import { nowOf } from '../../db/now'
import { messageUserId } from '../customers/service'
import {
  refundsWhenFailing,
  reportedCategory,
  settlementDifference,
  settlementTakes,
  settlesByProvider,
  statusMoney,
} from '../ledger/service'
import { balanceMoved } from '../../http/metrics/measures'

/**
 * A report to apply: a provider callback's names the senders its verified signature speaks for
 * (`senders`, null for the default number); one the service makes itself (the simulator's) has none.
 */
export type Report = StatusReport & { senders?: SenderRef[] }

/**
 * Counts, and the SIDs that changed, those that got an event, and those refused: a message of a sender
 * the report's signer does not own (each SID once per call).
 */
export type StatusesOutcome = { changed: number; events: number; changedSids: string[]; eventSids: string[]; refusedSids: string[] }

/**
 * Applies many reports in one statement; each message may appear only once (callers split repeats
 * into rounds, oldest first). Locks the messages, moves those whose move is forward, refunds those
 * it fails (unless their price keeps late failures charged; their accounts locked in id order after
 * the messages), and writes one event per change for keys with a webhook or a listener (a failure's
 * says whether it was refunded); its events announce themselves at commit (sql/0034). `clock`: the time of the changes and their
 * events (deps.clock); without one, the database's now().
 */
export async function applyStatuses(
  sql: Db,
  timezone: string,
  reports: Report[],
  options: { clock?: EventClock } = {},
): Promise<StatusesOutcome> {
  if (reports.length === 0) return { changed: 0, events: 0, changedSids: [], eventSids: [], refusedSids: [] }
  const clock = options.clock ?? { sqlNow: () => null }
  const now = nowOf(sql, clock)
  // A report's owners as an array literal of sender ids, 0 for the default number (null: a report of
  // the service's own, which any message takes).
  const owners = reports.map((r) => (r.senders ? ownersLiteral(r.senders) : null))
  const [row] = await sql<
    {
      changed_sids: string[]
      event_sids: string[]
      refused_sids: string[]
      late_refunds: number
      late_refunded: number
      settlements: number
      settled: number
    }[]
  >`
    with input as (
      select * from unnest(${reports.map((r) => r.sid)}::text[], ${reports.map((r) => r.status)}::text[],
                           ${reports.map((r) => r.errorCode ?? null) as number[]}::int[],
                           ${reports.map((r) => r.errorMessage ?? null) as string[]}::text[],
                           ${owners as string[]}::text[],
                           ${reports.map((r) => (r.status === 'failed' ? null : reportedCategory(r.pricing))) as string[]}::text[])
        as r(sid, next, error_code, error_message, owners, reported)
    ), found as (
      select m.id, m.message_sid, r.owners is null or coalesce(m.sender_id, 0) = any(r.owners::bigint[]) as owned
      from messages m join input r on m.message_sid = r.sid
    ), locked as materialized (
      select m.id, m.account_id, m.status, m.cost, m.category, r.next, r.error_code, r.error_message, r.reported,
             ((m.status = 'sent' and r.next in ('delivered', 'read', 'failed'))
               or (m.status = 'delivered' and r.next in ('read', 'failed'))) as moves,
             r.next = 'failed' and ${refundsWhenFailing(sql, 'm')} as refunds,
             -- Settled once: a report that prices a message not settled yet, still charged (never a failed one).
             r.reported is not null and m.settled_at is null and m.status in ('sent', 'delivered', 'read') as settles,
             ${settlementDifference(sql, 'm', sql`r.reported`)} as difference,
             r.reported is not null and ${settlesByProvider(sql, 'm', sql`r.reported`)} as by_provider
      from messages m join input r on m.message_sid = r.sid
      where m.id in (select id from found where owned)
      order by m.id -- one lock order for every batch: concurrent batches cannot deadlock
      for update of m
    ), target as (
      select id, account_id, status, cost, category, next, error_code, error_message, reported, moves, settles, by_provider,
             moves and refunds as refund, case when settles then difference else 0 end as diff
      from locked
    ), ${settlementTakes(sql, 'target')}, changed as (
      update messages m set
        status = case when t.moves then t.next else m.status end,
        delivered_at = case when t.moves and t.next in ('delivered', 'read') then coalesce(m.delivered_at, ${now}) else m.delivered_at end,
        read_at = case when t.moves and t.next = 'read' then ${now} else m.read_at end,
        failed_at = case when t.moves and t.next = 'failed' then ${now} else m.failed_at end,
        error_code = case when t.moves and t.next = 'failed' then t.error_code else m.error_code end,
        error_message = case when t.moves and t.next = 'failed' then t.error_message else m.error_message end,
        refunded_at = case when t.refund then ${now} else m.refunded_at end,
        settled_at = case when t.settles then ${now} else m.settled_at end,
        settled_category = case when t.settles then t.reported else m.settled_category end,
        category = case when t.settles and t.by_provider then t.reported else m.category end,
        cost = m.cost + case when t.diff < 0 then t.diff else coalesce(k.taken, 0) end,
        unsettled = m.unsettled + case when t.diff > 0 then t.diff - coalesce(k.taken, 0) else 0 end
      from target t left join settle_takes k on k.id = t.id
      where m.id = t.id and (t.moves or t.settles)
      returning m.id, m.account_id, m.api_key_id, m.phone, m.sender_id, m.message_sid, m.status, m.cost, m.error_code, m.error_message,
                m.category, m.unsettled, t.status as previous, t.refund as refunded, t.moves,
                -- A settlement that changed what the message shows (its category, its cost, or a part not taken).
                t.settles and t.by_provider and t.reported <> t.category as settled,
                t.category as previous_category, t.cost as previous_cost
    ), ${statusMoney(sql, 'target', timezone, clock)}, changed_events as (
      select c.api_key_id, c.id as message_id, c.id as ord,
             ${statusPayload(
               sql,
               timezone,
               sql`c.message_sid, c.phone, c.status, c.previous, c.error_code, c.error_message, false,
                   case when c.status = 'failed' then c.refunded end, ${messageUserId(sql, sql`c.sender_id`, sql`c.phone`)}`,
               clock,
             )} as payload
      from changed c where c.moves
    ), event as (${insertEvents(sql, 'changed_events', { clock })}), settled_events as (
      -- message.settled (an extension), for the account's registrations that chose it: once, as settled_at is set once.
      select c.account_id, 'message.settled' as event, c.id as ord,
             '{"message_sid":' || to_json(c.message_sid)::text || ',"to":' || to_json(c.phone)::text ||
             ',"category":' || to_json(c.category)::text || ',"previous_category":' || to_json(c.previous_category)::text ||
             ',"cost":' || c.cost || ',"previous_cost":' || c.previous_cost || ',"unsettled":' || c.unsettled || '}' as data
      from changed c where c.settled
    ), settled_event as (${insertAccountEvents(sql, timezone, 'settled_events', clock)})
    select array(select message_sid from changed where moves) as changed_sids,
           array(select message_sid from found where not owned) as refused_sids,
           array(select c.message_sid from event e join changed c on c.id = e.message_id) as event_sids,
           (select count(*)::int from target where refund) as late_refunds,
           (select coalesce(sum(cost), 0)::bigint from target where refund) as late_refunded,
           (select count(*)::int from status_movements where kind = 'settlement') as settlements,
           (select coalesce(sum(amount), 0)::bigint from status_movements where kind = 'settlement') as settled`
  const { changed_sids: changedSids, event_sids: eventSids, refused_sids: refusedSids } = row!
  balanceMoved('refund', row!.late_refunds, row!.late_refunded)
  balanceMoved('settlement', row!.settlements, row!.settled)
  return { changed: changedSids.length, events: eventSids.length, changedSids, eventSids, refusedSids }
}

/** Senders as SQL keeps a signer's: an array literal of their ids, 0 for the default number (ids start at 1). */
export const ownersLiteral = (senders: SenderRef[]): string => `{${senders.map((id) => id ?? 0).join(',')}}`

/** The senders of such an array, as a report names them. */
export const ownersOf = (ids: (number | string)[]): SenderRef[] => ids.map((id) => (Number(id) === 0 ? null : Number(id)))

/** Splits reports into rounds in which each message appears once, keeping each message's order. */
export function rounds<R extends StatusReport>(reports: R[]): R[][] {
  const out: R[][] = []
  const seen = new Map<string, number>()
  for (const report of reports) {
    const round = seen.get(report.sid) ?? 0
    seen.set(report.sid, round + 1)
    ;(out[round] ??= []).push(report)
  }
  return out
}
