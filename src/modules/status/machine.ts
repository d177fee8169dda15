// The message state machine: forward only. sent → delivered → read; sent or delivered → failed;
// skipping is allowed (sent → read). A report that repeats the current state or would move
// backwards changes nothing and emits nothing. An accepted change, its timestamps and its
// message.status event (when the key has a webhook) are one statement, hence one transaction.

import type { Sql } from '../../db/client'

export type ReportedStatus = 'delivered' | 'read' | 'failed' | 'sent'

export type StatusReport = {
  sid: string
  status: ReportedStatus
  errorCode?: number | null
  errorMessage?: string | null
}

export type StatusOutcome = { changed: boolean; events: number }

/** Applies one provider report. `sql` may be a transaction. */
export async function applyStatus(sql: Sql, timezone: string, report: StatusReport): Promise<StatusOutcome> {
  const next = report.status
  const failed = next === 'failed'
  const [row] = await sql<{ changed: number; events: number }[]>`
    with target as (
      select id, status from messages where message_sid = ${report.sid} for update
    ), changed as (
      update messages m set
        status = ${next},
        delivered_at = case when ${next} in ('delivered', 'read') then coalesce(m.delivered_at, now()) else m.delivered_at end,
        read_at = case when ${next} = 'read' then now() else m.read_at end,
        failed_at = case when ${failed} then now() else m.failed_at end,
        error_code = case when ${failed} then ${report.errorCode ?? null}::int else m.error_code end,
        error_message = case when ${failed} then ${report.errorMessage ?? null}::text else m.error_message end
      from target
      where m.id = target.id
        and ((target.status = 'sent' and ${next} in ('delivered', 'read', 'failed'))
          or (target.status = 'delivered' and ${next} in ('read', 'failed')))
      returning m.id, m.api_key_id, m.phone, m.message_sid, m.status, m.error_code, m.error_message, target.status as previous
    ), event as (
      insert into webhook_events (webhook_id, api_key_id, message_id, payload)
      select 'msg_' || replace(gen_random_uuid()::text, '-', ''), c.api_key_id, c.id,
             json_build_object(
               'event', 'message.status',
               'timestamp', to_char(now() at time zone ${timezone}, 'YYYY-MM-DD HH24:MI:SS'),
               'data', json_build_object(
                 'message_sid', c.message_sid,
                 'to', c.phone,
                 'status', c.status,
                 'previous_status', c.previous,
                 'error_code', c.error_code,
                 'error_message', c.error_message
               )
             )::text
      from changed c join webhook_endpoints w on w.api_key_id = c.api_key_id
      returning id
    )
    select (select count(*) from changed)::int as changed, (select count(*) from event)::int as events`
  return { changed: row!.changed > 0, events: row!.events }
}
