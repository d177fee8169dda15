// The operator's view of webhook deliveries: the events of a key, each event's attempt log, and replay.
// A replay keeps the event's webhook-id (receivers that de-duplicate on it see a repeat of the same
// event, which is what a replay is), resets the attempt count so it gets the full retry schedule
// again, and makes it due at once. Events recorded only for listeners (status listen_only: the key had
// no URL while `admin webhook listen` ran) are not deliveries: none of these calls shows or replays them.

import type { Sql } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import { ApiError, badValue } from '../../http/errors'
import { pageOf, type DateRange, type Page } from '../../lib/validate'

const STATUSES = ['pending', 'delivered', 'failed'] as const
type DeliveryStatus = (typeof STATUSES)[number]

type DeliveryRow = {
  id: number
  webhook_id: string
  api_key_id: number
  event: string
  message_sid: string | null
  status: DeliveryStatus
  attempts: number
  next_attempt_at: Date
  last_error: string | null
  created_at: Date
  delivered_at: Date | null
  payload: string
}

const deliveryView = (row: DeliveryRow) => ({
  id: row.id,
  webhook_id: row.webhook_id,
  api_key_id: row.api_key_id,
  event: row.event,
  message_sid: row.message_sid,
  status: row.status,
  attempts: row.attempts,
  next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
  last_error: row.last_error,
  created_at: row.created_at,
  delivered_at: row.delivered_at,
  payload: JSON.parse(row.payload),
})

async function requireKey(sql: Sql, id: number): Promise<void> {
  const [row] = await sql`select 1 from api_keys where id = ${id}`
  if (!row) throw new ApiError('NOT_FOUND', `API key ${id} not found`)
}

function requireStatus(value: string | undefined): DeliveryStatus | undefined {
  if (value === undefined) return undefined
  if (!(STATUSES as readonly string[]).includes(value)) throw badValue(`status: must be one of ${STATUSES.join(', ')}`)
  return value as DeliveryStatus
}

export async function listDeliveries(
  sql: Sql,
  keyId: number,
  statusFilter: string | undefined,
  p: Page,
  range: DateRange = { from: null, before: null },
) {
  const status = requireStatus(statusFilter)
  await requireKey(sql, keyId)
  const statuses = status ? [status] : [...STATUSES]
  // created_at bounds; `before` is exclusive, the end of date_to's second.
  const created = (alias: string) => sql`
    ${range.from ? sql`and ${sql(alias)}.created_at >= ${range.from}` : sql``}
    ${range.before ? sql`and ${sql(alias)}.created_at < ${range.before}` : sql``}`
  // One ordered index range per status (webhook_events_by_key), merged: a key with millions of events
  // pages without sorting them all.
  const rows = await sql<DeliveryRow[]>`
    select e.id, e.webhook_id, e.api_key_id, e.event, m.message_sid, e.status, e.attempts, e.next_attempt_at, e.last_error,
           e.created_at, e.delivered_at, e.payload
    from unnest(${statuses}::text[]) s(status)
    cross join lateral (
      select * from webhook_events w
      where w.api_key_id = ${keyId} and w.status = s.status ${created('w')}
      order by w.id desc
      limit ${p.limit + p.offset}
    ) e
    left join messages m on m.id = e.message_id
    order by e.id desc
    limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`
    select count(*)::int as n from webhook_events c
    where c.api_key_id = ${keyId} and c.status = any(${statuses}::text[]) ${created('c')}`
  return pageOf(rows.map(deliveryView), count!.n, p)
}

/** Every webhook delivery (event) of one message, oldest first (the dashboard's message page). */
export async function listMessageDeliveries(sql: Sql, messageId: number) {
  const rows = await sql<DeliveryRow[]>`
    select e.id, e.webhook_id, e.api_key_id, e.event, m.message_sid, e.status, e.attempts, e.next_attempt_at, e.last_error,
           e.created_at, e.delivered_at, e.payload
    from webhook_events e join messages m on m.id = e.message_id
    where e.message_id = ${messageId} and e.status <> 'listen_only'
    order by e.id`
  return rows.map(deliveryView)
}

async function deliveryRow(sql: Sql, id: number): Promise<DeliveryRow> {
  const [row] = await sql<DeliveryRow[]>`
    select e.id, e.webhook_id, e.api_key_id, e.event, m.message_sid, e.status, e.attempts, e.next_attempt_at, e.last_error,
           e.created_at, e.delivered_at, e.payload
    from webhook_events e left join messages m on m.id = e.message_id
    where e.id = ${id} and e.status <> 'listen_only'`
  if (!row) throw new ApiError('NOT_FOUND', `delivery ${id} not found`)
  return row
}

export async function getDelivery(sql: Sql, id: number) {
  return deliveryView(await deliveryRow(sql, id))
}

type AttemptRow = {
  id: number
  attempt: number
  url: string
  status_code: number | null
  latency_ms: number
  error: string | null
  created_at: Date
}

export async function listAttempts(sql: Sql, eventId: number, p: Page) {
  await deliveryRow(sql, eventId)
  const rows = await sql<AttemptRow[]>`
    select id, attempt, url, status_code, latency_ms, error, created_at from webhook_attempts
    where event_id = ${eventId}
    order by id desc
    limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_attempts where event_id = ${eventId}`
  return pageOf(rows, count!.n, p)
}

/**
 * Sets one delivery pending and due now, whatever its status. An attempt in flight (a live lease) is
 * left to finish: 409, since resetting it under the worker would send it twice at once.
 */
export async function replayDelivery(sql: Sql, clock: Clock, id: number) {
  const now = nowOf(sql, clock)
  const [row] = await sql`
    update webhook_events set status = 'pending', attempts = 0, next_attempt_at = ${now}, last_error = null,
      delivered_at = null, lease_token = null, lease_until = null
    where id = ${id} and status <> 'listen_only' and (lease_until is null or lease_until < ${now})
    returning id`
  if (!row) {
    await deliveryRow(sql, id) // 404 when it does not exist
    throw new ApiError('CONFLICT', `delivery ${id} is being attempted right now; replay it when the attempt has finished`)
  }
  return getDelivery(sql, id)
}

/** Replays every failed delivery of a key created at or after `from`. */
export async function replayFailedSince(sql: Sql, clock: Clock, keyId: number, from: Date) {
  await requireKey(sql, keyId)
  const [row] = await sql<{ n: number }[]>`
    with replayed as (
      update webhook_events set status = 'pending', attempts = 0, next_attempt_at = ${nowOf(sql, clock)}, last_error = null,
        lease_token = null, lease_until = null
      where api_key_id = ${keyId} and status = 'failed' and created_at >= ${from}
      returning 1
    )
    select count(*)::int as n from replayed`
  return { replayed: row!.n }
}

/** Failed deliveries of every account, newest first, with their account and key (the operator's list). */
export async function listFailedDeliveries(sql: Sql, p: Page) {
  const rows = await sql<(DeliveryRow & { account_id: number; account_name: string; key_label: string })[]>`
    select e.id, e.webhook_id, e.api_key_id, e.event, m.message_sid, e.status, e.attempts, e.next_attempt_at, e.last_error,
           e.created_at, e.delivered_at, e.payload, k.account_id, a.name as account_name, k.label as key_label
    from webhook_events e
    join api_keys k on k.id = e.api_key_id
    join accounts a on a.id = k.account_id
    left join messages m on m.id = e.message_id
    where e.status = 'failed'
    order by e.id desc
    limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_events where status = 'failed'`
  return pageOf(
    rows.map((r) => ({ ...deliveryView(r), account_id: r.account_id, account_name: r.account_name, key_label: r.key_label })),
    count!.n,
    p,
  )
}

/** The account a key belongs to (for scoping and the audit log); 404 when the key does not exist. */
export async function accountOfKey(sql: Sql, keyId: number): Promise<number> {
  const [row] = await sql<{ account_id: number }[]>`select account_id from api_keys where id = ${keyId}`
  if (!row) throw new ApiError('NOT_FOUND', `API key ${keyId} not found`)
  return row.account_id
}
