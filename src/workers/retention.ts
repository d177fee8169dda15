// Deletes rows that have outlived their use, so tables do not grow forever: expired Idempotency-Keys,
// finished webhook events (with their attempt log) older than RETENTION_WEBHOOK_DAYS, and parked
// status reports past their expiry, and recipients' pace rows whose gap has long passed (one row per
// number ever messaged otherwise: a row absent is a recipient free to receive). Money records (messages, ledger) are never deleted, and neither
// is a webhook event still pending or retrying. Applied simulator reports need nothing here: the
// simulator worker deletes each report as it applies it.
//
// Every delete is one short statement of at most BATCH rows (`for update skip locked`, so it never
// waits on a row in use); the loop runs again at once while a step finds work, so a backlog drains
// in batches without ever holding a long lock.

import type { Deps } from '../deps'
import type { Sql } from '../db/client'
import type { Worker } from './worker'
import { IDEMPOTENCY_KEY_TTL_HOURS } from '../http/idempotency'

const RETENTION_POLL_MS = 10 * 60_000
export const BATCH = 1000

type Deleted = { idempotencyKeys: number; webhookEvents: number; parkedReports: number; recipientPaces: number; deleted: number }

async function expiredIdempotencyKeys(sql: Sql, batch: number): Promise<number> {
  const rows = await sql`
    delete from idempotency_keys
    where (account_id, key) in (
      select account_id, key from idempotency_keys
      where created_at < now() - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})
      order by created_at
      limit ${batch}
      for update skip locked
    )
    returning 1`
  return rows.length
}

// A finished event's last activity is delivered_at, or for a failed one the due time of its last
// attempt (a replay resets it to the replay's moment); the index webhook_events_finished serves both.
// Its attempts go with it (webhook_attempts.event_id is `on delete cascade`); events reference
// messages, never the reverse, so nothing else points at them. The status is checked again on the
// locked row, so an event replayed meanwhile (pending again) is kept.
async function finishedWebhookEvents(sql: Sql, batch: number, days: number): Promise<number> {
  const rows = await sql`
    delete from webhook_events
    where id in (
      select id from webhook_events
      where status <> 'pending' and coalesce(delivered_at, next_attempt_at) < now() - make_interval(days => ${days})
      order by coalesce(delivered_at, next_attempt_at)
      limit ${batch}
      for update skip locked
    ) and status <> 'pending'
    returning 1`
  return rows.length
}

async function expiredParkedReports(sql: Sql, batch: number): Promise<number> {
  const rows = await sql`
    delete from parked_reports
    where id in (select id from parked_reports where expires_at < now() order by expires_at limit ${batch} for update skip locked)
    returning 1`
  return rows.length
}

// A recipient whose next slot passed a minute ago waits for nothing: its row says no more than its
// absence would. (pace_take locks the row it reads, so a row being used is skipped.)
async function pastRecipientPaces(sql: Sql, batch: number): Promise<number> {
  const rows = await sql`
    delete from recipient_paces
    where (sender, phone) in (
      select sender, phone from recipient_paces where next_at < now() - interval '1 minute'
      order by next_at limit ${batch} for update skip locked
    ) and next_at < now() - interval '1 minute'
    returning 1`
  return rows.length
}

/** One batch of each kind; `deleted` > 0 tells the loop to run again at once. */
export async function deleteExpired(deps: Pick<Deps, 'sql' | 'config'>, options: { batch?: number } = {}): Promise<Deleted> {
  const batch = options.batch ?? BATCH
  const days = deps.config.retentionWebhookDays
  const idempotencyKeys = await expiredIdempotencyKeys(deps.sql, batch)
  const webhookEvents = days > 0 ? await finishedWebhookEvents(deps.sql, batch, days) : 0
  const parkedReports = await expiredParkedReports(deps.sql, batch)
  const recipientPaces = await pastRecipientPaces(deps.sql, batch)
  return {
    idempotencyKeys,
    webhookEvents,
    parkedReports,
    recipientPaces,
    deleted: idempotencyKeys + webhookEvents + parkedReports + recipientPaces,
  }
}

export const retention: Worker = {
  name: 'retention',
  pollMs: RETENTION_POLL_MS,
  runOnce: async (deps) => (await deleteExpired(deps)).deleted,
}
