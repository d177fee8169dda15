// The one writer of webhook events (the outbox, `webhook_events`). Whoever makes an event (a status
// change, a test event, an inbound message, a low balance) hands its rows to `insertEvents` or
// `insertAccountEvents`, inside its own statement, so the event commits with what caused it. The rule of
// an event's target lives only here:
// - a key whose registration chose the event's type gets a delivery (`pending`, sent by the delivery
//   worker); a registration that did not choose it gets nothing (test events go to every registration);
// - a key without a registration that someone is listening to (`admin webhook listen`) gets every
//   event for its listeners only (`listen_only`, never delivered): a developer on a laptop sees the
//   customers' replies as well as the statuses; a listener of a registered key sees what the
//   registration receives;
// - a key with neither gets no event.
// message.status events belong to the key that sent the message; the others (`accountEvent`) to the
// account: one row per key of the account whose registration chose that type. So does the shape of a
// webhook-id.
//
// The writer does nothing more: the table announces new events at the commit (sql/0034's trigger, a
// NOTIFY that wakes the delivery worker and the listeners of every instance at once: notify.ts).

import type { Db, Fragment } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import { ApiError } from '../../http/errors'
import type { EventType } from './model'

/** The clock an event's time comes from (its stamp, its first due time); none: the database's now(). */
export type EventClock = Pick<Clock, 'sqlNow'>
const DATABASE_NOW: EventClock = { sqlNow: () => null }

/** A new event's `webhook-id`, as SQL: msg_ + 32 hex digits, the same on every attempt and replay. */
export const newWebhookId = (sql: Db): Fragment => sql`'msg_' || replace(gen_random_uuid()::text, '-', '')`

/**
 * A `message.status` payload stamped now, as SQL (message_status_payload of sql/0011 and sql/0015:
 * compact JSON in the spec's field order). `fields`: message_sid, to, status, previous_status,
 * error_code, error_message, test, and optionally refunded (a boolean, shown after error_message;
 * null or left out: not shown).
 */
export const statusPayload = (sql: Db, timezone: string, fields: Fragment, clock: EventClock = DATABASE_NOW): Fragment =>
  sql`message_status_payload(to_char(${nowOf(sql, clock)} at time zone ${timezone}, 'YYYY-MM-DD HH24:MI:SS'), ${fields})`

/**
 * The part of a statement that records `message.status` events: `source` names a CTE of the same
 * statement with the columns `api_key_id`, `message_id` (null for a test event), `payload` and `ord`
 * (the order of the rows, so one message's events get ids in the order they happened). `test`: test
 * events, which go to every registration whatever it chose. Returns the rows written: `id`,
 * `webhook_id`, `api_key_id`, `message_id`, `status`.
 */
export const insertEvents = (sql: Db, source: string, options: { test?: boolean; clock?: EventClock } = {}): Fragment => sql`
  insert into webhook_events (webhook_id, api_key_id, message_id, payload, status, created_at, next_attempt_at)
  select ${newWebhookId(sql)}, s.api_key_id, s.message_id, s.payload,
         case when w.api_key_id is null then 'listen_only' else 'pending' end,
         ${nowOf(sql, options.clock ?? DATABASE_NOW)}, ${nowOf(sql, options.clock ?? DATABASE_NOW)}
  from ${sql(source)} s
  left join webhook_endpoints w on w.api_key_id = s.api_key_id
  left join webhook_listeners l on l.api_key_id = s.api_key_id and l.listening_until > ${nowOf(sql, options.clock ?? DATABASE_NOW)}
  where (w.api_key_id is not null and (${options.test === true}::boolean or 'message.status' = any(w.events)))
     or (w.api_key_id is null and l.api_key_id is not null)
  order by s.ord
  returning id, webhook_id, api_key_id, message_id, status`

/**
 * The part of a statement that records account events (every type but message.status): `source` names
 * a CTE of the same statement with the columns `account_id`, `event` (its type), `data` (the JSON text
 * of `data`, compact) and `ord`. One `pending` event per key of the account whose registration chose
 * that type, and one `listen_only` event per key of the account without a registration that is being
 * listened to; its body the spec's envelope (event, timestamp, data) as compact JSON. Returns `id`,
 * `api_key_id`.
 */
export const insertAccountEvents = (sql: Db, timezone: string, source: string, clock: EventClock = DATABASE_NOW): Fragment => sql`
  insert into webhook_events (webhook_id, api_key_id, message_id, payload, status, event, created_at, next_attempt_at)
  select ${newWebhookId(sql)}, k.id, null,
         '{"event":' || to_json(s.event::text)::text
           || ',"timestamp":' || to_json(to_char(${nowOf(sql, clock)} at time zone ${timezone}, 'YYYY-MM-DD HH24:MI:SS'))::text
           || ',"data":' || s.data || '}',
         case when w.api_key_id is null then 'listen_only' else 'pending' end, s.event, ${nowOf(sql, clock)}, ${nowOf(sql, clock)}
  from ${sql(source)} s
  join api_keys k on k.account_id = s.account_id
  left join webhook_endpoints w on w.api_key_id = k.id
  left join webhook_listeners l on l.api_key_id = k.id and l.listening_until > ${nowOf(sql, clock)}
  where (w.api_key_id is not null and s.event = any(w.events))
     or (w.api_key_id is null and l.api_key_id is not null)
  order by s.ord, k.id
  returning id, api_key_id`

/**
 * Records an account event inside the caller's transaction (so it commits with what caused it): one
 * delivery per key of the account whose registration chose `type` (and one event per listened-to key
 * without a registration). `data` becomes the body's `data` as
 * JSON.stringify writes it (its keys in their order). The number of events recorded.
 */
export async function accountEvent(
  tx: Db,
  timezone: string,
  accountId: number,
  type: EventType,
  data: object,
  clock: EventClock = DATABASE_NOW,
): Promise<number> {
  const [row] = await tx<{ n: number }[]>`
    with source as (
      select ${accountId}::bigint as account_id, ${type}::text as event, ${JSON.stringify(data)}::text as data, 1 as ord
    ), event as (${insertAccountEvents(tx, timezone, 'source', clock)})
    select count(*)::int as n from event`
  return row!.n
}

/** The test event's body (see sendTestEvent), as SQL: a `message.status` of no real message, marked test. */
export const testPayload = (sql: Db, timezone: string, clock: EventClock = DATABASE_NOW): Fragment =>
  statusPayload(sql, timezone, sql`'test', 'test', 'delivered', 'sent', null, null, true`, clock)

/**
 * A test event through the normal outbox: signed and retried like any delivery, shaped as a
 * `message.status` event of no real message, with `data.test: true` (and message_id null). It goes
 * where any event of the key goes (see the top of this file); 404 when the key has neither a URL nor a
 * listener.
 */
export async function sendTestEvent(sql: Db, timezone: string, keyId: number, clock: EventClock = DATABASE_NOW) {
  const [row] = await sql<{ id: number; webhook_id: string; url: string | null }[]>`
    with source as (
      select k.id as api_key_id, null::bigint as message_id, ${testPayload(sql, timezone, clock)} as payload, 1 as ord
      from api_keys k where k.id = ${keyId}
    ), event as (${insertEvents(sql, 'source', { test: true, clock })})
    select e.id, e.webhook_id, w.url from event e left join webhook_endpoints w on w.api_key_id = e.api_key_id`
  if (!row) throw new ApiError('NOT_FOUND', `API key ${keyId} has no webhook URL and no listener`)
  return row
}
