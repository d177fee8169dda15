// The queue depths, read from the database when Prometheus scrapes: database-wide (every instance's
// work), unlike the process's own counters. One read-only transaction over the tables of several
// modules (the only place that reads them together: it writes nothing, and each count uses an index
// the owners already keep for their workers), bounded twice so a scrape never loads the database:
// a statement_timeout, and a short cache shared by concurrent and repeated scrapes.

import type { Sql } from '../../db/client'
import type { Clock } from '../../lib/clock'
import { nowOf } from '../../db/now'
import type { Family } from '../../lib/metrics'
import { log, errorKind } from '../../lib/log'

/** How long one read is reused: scrapes (every 15 s or so, by several Prometheus servers) share it. */
export const QUEUES_CACHE_MS = 5_000
/** Beyond this, the read is cancelled and the scrape answers without the depths (messaging_queues_read_success 0). */
const STATEMENT_TIMEOUT_MS = 2_000

type Depths = {
  handoffs_queued: number
  handoffs_quarantined: number
  webhook_pending: number
  webhook_oldest_age: number
  webhook_due_lag: number
  parked_reports: number
  campaigns_sending: number
}

type Connections = { state: string; n: number; lock_waits: number }[]

const cache = new WeakMap<Sql, { at: number; families: Promise<Family[]> }>()

/**
 * The depths as metric families, read at most once per QUEUES_CACHE_MS (on the clock) per database. The
 * ages are the rows' against the clock's time, the one their created_at and next_attempt_at were written by.
 */
export function queueFamilies(sql: Sql, clock: Pick<Clock, 'monotonic' | 'sqlNow'>): Promise<Family[]> {
  const cached = cache.get(sql)
  if (cached && clock.monotonic() - cached.at < QUEUES_CACHE_MS) return cached.families
  const families = read(sql, clock)
  cache.set(sql, { at: clock.monotonic(), families })
  return families
}

async function read(sql: Sql, clock: Pick<Clock, 'sqlNow'>): Promise<Family[]> {
  const started = performance.now()
  try {
    const { depths, connections } = await sql.begin(async (tx) => {
      await tx.unsafe(`set local statement_timeout = ${STATEMENT_TIMEOUT_MS}`)
      // Each count walks a partial index: messages_handoff_due, messages_quarantined, webhook_events_due,
      // campaigns_sending; parked reports live an hour at most.
      const now = nowOf(tx, clock)
      const [depths] = await tx<Depths[]>`
        select
          (select count(*) from messages where handoff_until is not null)::float8 as handoffs_queued,
          (select count(*) from messages where quarantined_at is not null and status = 'queued')::float8 as handoffs_quarantined,
          e.pending::float8 as webhook_pending,
          coalesce(extract(epoch from ${now} - e.oldest), 0)::float8 as webhook_oldest_age,
          coalesce(extract(epoch from ${now} - e.due), 0)::float8 as webhook_due_lag,
          (select count(*) from parked_reports)::float8 as parked_reports,
          (select count(*) from campaigns where status = 'sending')::float8 as campaigns_sending
        from (
          select count(*) as pending, min(created_at) as oldest, min(next_attempt_at) filter (where next_attempt_at <= ${now}) as due
          from webhook_events where status = 'pending'
        ) e`
      // The service's connections as PostgreSQL sees them (application_name, db/client.ts), every instance's.
      const connections = await tx<Connections>`
        select coalesce(state, 'unknown') as state, count(*)::int as n, (count(*) filter (where wait_event_type = 'Lock'))::int as lock_waits
        from pg_stat_activity
        where datname = current_database() and application_name = 'messaging-api'
        group by 1`
      return { depths: depths!, connections }
    })
    return [...depthFamilies(depths), ...connectionFamilies(connections), ...readFamilies(1, started)]
  } catch (error) {
    log.warn('metrics: queue depths not read', { error: errorKind(error) })
    return readFamilies(0, started)
  }
}

/** The families a scrape reads from the database, with zero values: their names, help and labels (docs/reference/metrics.md). */
export const queueFamiliesShape = (): Family[] => [
  ...depthFamilies({
    handoffs_queued: 0,
    handoffs_quarantined: 0,
    webhook_pending: 0,
    webhook_oldest_age: 0,
    webhook_due_lag: 0,
    parked_reports: 0,
    campaigns_sending: 0,
  }),
  ...connectionFamilies([]),
  ...readFamilies(1, performance.now()),
]

const gauge = (name: string, help: string, value: number): Family => ({ name, help, type: 'gauge', samples: [{ labels: {}, value }] })

function depthFamilies(d: Depths): Family[] {
  return [
    gauge('messaging_handoffs_queued', 'Messages charged and waiting for their hand-off (database-wide)', d.handoffs_queued),
    gauge(
      'messaging_handoffs_quarantined',
      'Messages in quarantine: charged, never settled after repeated recoveries, waiting for an operator (database-wide)',
      d.handoffs_quarantined,
    ),
    gauge('messaging_webhook_events_pending', 'Webhook events waiting for delivery, retries included (database-wide)', d.webhook_pending),
    gauge(
      'messaging_webhook_oldest_pending_age_seconds',
      'Age of the oldest webhook event still pending, retries included (0: none; database-wide)',
      d.webhook_oldest_age,
    ),
    gauge(
      'messaging_webhook_due_lag_seconds',
      'How long the most overdue pending webhook event has been due for its next attempt: the delivery workers falling behind (0: none due; database-wide)',
      d.webhook_due_lag,
    ),
    gauge(
      'messaging_status_reports_parked',
      'Provider status reports that arrived before their message SID was recorded, waiting for it (database-wide)',
      d.parked_reports,
    ),
    gauge('messaging_campaigns_sending', 'Campaigns in the sending state (database-wide)', d.campaigns_sending),
  ]
}

function connectionFamilies(rows: Connections): Family[] {
  // PostgreSQL's states ("idle in transaction") as label values in the same style as the rest.
  const byState = new Map<string, number>([
    ['active', 0],
    ['idle', 0],
    ['idle_in_transaction', 0],
  ])
  for (const row of rows) {
    const state = row.state
      .replace(/[^a-z]+/gi, '_')
      .replace(/^_|_$/g, '')
      .toLowerCase()
    byState.set(state, (byState.get(state) ?? 0) + row.n)
  }
  return [
    {
      name: 'messaging_db_connections',
      help: "The service's connections to its database by state, as PostgreSQL sees them (every instance's; none for the embedded database)",
      type: 'gauge',
      samples: [...byState].map(([state, value]) => ({ labels: { state }, value })),
    },
    gauge(
      'messaging_db_lock_waits',
      "The service's connections waiting for a lock now (every instance's)",
      rows.reduce((sum, r) => sum + r.lock_waits, 0),
    ),
  ]
}

function readFamilies(success: 0 | 1, started: number): Family[] {
  return [
    gauge('messaging_queues_read_success', 'Whether the last read of the queue depths succeeded (1) or failed or timed out (0)', success),
    gauge(
      'messaging_queues_read_duration_seconds',
      'How long the last read of the queue depths took',
      (performance.now() - started) / 1000,
    ),
  ]
}
