// Removes what has outlived its use, so tables do not grow forever. Rows: expired Idempotency-Keys,
// parked status reports past their expiry, uploaded files unused for RETENTION_MEDIA_DAYS, and recipients' pace rows whose gap has long passed (one
// row per number ever messaged otherwise: a row absent is a recipient free to receive). Applied
// simulator reports need nothing here: the simulator worker deletes each report as it applies it.
// Every delete is one short statement of at most BATCH rows (`for update skip locked`, so it never
// waits on a row in use); the loop runs again at once while a step finds work, so a backlog drains
// in batches without ever holding a long lock.
//
// The history tables (partitioned by month, db/partitions.ts) lose whole months, never rows: a month
// of webhook events is dropped (with the attempts' months before it) once it ended more than
// RETENTION_WEBHOOK_DAYS ago and none of its events is pending; with RETENTION_HISTORY_MONTHS set, months
// of messages, ledger and inbound messages older than that are detached, for the operator to archive.

import type { Deps } from '../deps'
import type { Sql } from '../db/client'
import { nowOf } from '../db/now'
import type { Clock } from '../lib/clock'
import type { Worker } from './worker'
import { IDEMPOTENCY_KEY_TTL_HOURS } from '../http/idempotency'
import { detachOldHistory, dropFinishedWebhookMonths } from '../db/partitions'
import { deleteUnusedMedia } from '../modules/media/service'

const RETENTION_POLL_MS = 10 * 60_000
export const BATCH = 1000

type Deleted = {
  idempotencyKeys: number
  parkedReports: number
  recipientPaces: number
  /** Uploaded files past RETENTION_MEDIA_DAYS since their last use. */
  media: number
  /** Partitions dropped (webhook events and attempts) or detached (messages, ledger, inbound messages). */
  webhookMonths: number
  historyMonths: number
  deleted: number
}

async function expiredIdempotencyKeys(sql: Sql, clock: Clock, batch: number): Promise<number> {
  const rows = await sql`
    delete from idempotency_keys
    where (account_id, key) in (
      select account_id, key from idempotency_keys
      where created_at < ${nowOf(sql, clock)} - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})
      order by created_at
      limit ${batch}
      for update skip locked
    )
    returning 1`
  return rows.length
}

async function expiredParkedReports(sql: Sql, clock: Clock, batch: number): Promise<number> {
  const rows = await sql`
    delete from parked_reports
    where id in (select id from parked_reports where expires_at < ${nowOf(sql, clock)} order by expires_at limit ${batch} for update skip locked)
    returning 1`
  return rows.length
}

// A recipient whose next slot passed a minute ago waits for nothing: its row says no more than its
// absence would. (pace_take locks the row it reads, so a row being used is skipped.)
async function pastRecipientPaces(sql: Sql, clock: Clock, batch: number): Promise<number> {
  const now = nowOf(sql, clock)
  const rows = await sql`
    delete from recipient_paces
    where (sender, phone) in (
      select sender, phone from recipient_paces where next_at < ${now} - interval '1 minute'
      order by next_at limit ${batch} for update skip locked
    ) and next_at < ${now} - interval '1 minute'
    returning 1`
  return rows.length
}

/** One batch of each kind of row, and every month due to go; `deleted` > 0 tells the loop to run again at once. */
export async function deleteExpired(deps: Pick<Deps, 'sql' | 'config' | 'clock'>, options: { batch?: number } = {}): Promise<Deleted> {
  const batch = options.batch ?? BATCH
  // Months go by the clock's date too, never the calendar's (a test's clock decides which months are due).
  const { retentionWebhookDays: days, retentionHistoryMonths: months } = deps.config
  const idempotencyKeys = await expiredIdempotencyKeys(deps.sql, deps.clock, batch)
  const parkedReports = await expiredParkedReports(deps.sql, deps.clock, batch)
  const recipientPaces = await pastRecipientPaces(deps.sql, deps.clock, batch)
  const media = await deleteUnusedMedia(deps.sql, deps.clock, deps.config.retentionMediaDays, batch)
  const webhookMonths = days > 0 ? (await dropFinishedWebhookMonths(deps.sql, days, deps.clock)).length : 0
  const historyMonths = months > 0 ? (await detachOldHistory(deps.sql, months, deps.clock)).length : 0
  return {
    idempotencyKeys,
    parkedReports,
    recipientPaces,
    media,
    webhookMonths,
    historyMonths,
    // Rows only: every month due went in this step, nothing is left for another at once.
    deleted: idempotencyKeys + parkedReports + recipientPaces + media,
  }
}

export const retention: Worker = {
  name: 'retention',
  pollMs: RETENTION_POLL_MS,
  runOnce: async (deps) => (await deleteExpired(deps)).deleted,
}
