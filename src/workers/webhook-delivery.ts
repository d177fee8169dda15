// Delivers the message.status events of the outbox (webhook_events) to each key's callback URL.
//
// Claim: due pending events whose lease is free or expired, never one while an earlier event of the
// same message is still pending (so one message's events arrive in order), `for update skip locked`
// so instances never claim the same row, each claim stamped with a fresh lease_token and a 30 s
// lease; attempts is counted at the claim, so an attempt cut short by a crash still counts.
// The HTTP requests run outside any transaction. Each outcome (the attempt row and the event's new
// state) is one statement guarded by `lease_token = <mine> and lease_until >= <now>`: a worker whose
// lease ran out records nothing, and the event is simply claimed again (at-least-once).
//
// The service runs a pipeline rather than claim-all/deliver-all/record-all cycles: it claims only
// what it can start at once (up to CONCURRENCY requests in flight), records outcomes as they finish
// (batched: whatever finished while the previous write ran goes in the next one), and claims again as
// soon as half the slots are free. A receiver that times out then holds only its own slots, never a
// whole batch. Tests drive this same pipeline (startWebhookDelivery, or one step of it: runOnce).
//
// Time comes from deps.clock: due times, leases and the next attempt's time in SQL (db/now.ts), the
// attempt's finish, the claims' gathering and the receiver's time limit.

import type { Deps } from '../deps'
import type { Sql } from '../db/client'
import { nowOf } from '../db/now'
import type { Clock } from '../lib/clock'
import { attemptDelivery, webhookCa, type AttemptResult } from '../modules/webhooks/sender'
import { onEventsCommitted } from '../modules/webhooks/notify'
import { log } from '../lib/log'
import { startLoop, type Loop } from './loop'
import { observeWebhookAttempt } from '../http/metrics/measures'
import type { Worker } from './worker'

/** Covers the longest attempt (a 5 s DNS lookup, then a 5 s request) and recording its outcome. */
export const LEASE_SECONDS = 30
export const MAX_ATTEMPTS = 8
/** Seconds to wait after failed attempt n (1-based), before ±20% jitter; the 8th failure is final. */
export const RETRY_DELAYS_S = [5, 300, 1800, 7200, 18000, 36000, 36000] as const
/** A receiver's Retry-After is honoured up to the schedule's longest step. */
const MAX_RETRY_AFTER_S = 36000
const CONCURRENCY = 64
/** Retries come due without a commit to wake the loop: polled this often. */
const WEBHOOK_DELIVERY_POLL_MS = 1000
/**
 * After a claim that took less than it could (nothing else was due), the next claim waits until this
 * long after it: the events committed meanwhile share one claim (a write transaction) instead of one
 * each. A full claim is followed at once, so a backlog is not slowed.
 */
export const CLAIM_GATHER_MS = 20

type Claimed = {
  id: number
  webhook_id: string
  payload: string
  attempts: number
  url: string | null
  signing_secret: string | null
  token: string
}

type Outcome = {
  id: number
  token: string
  kind: 'delivered' | 'retry' | 'gone'
  url: string | null
  status_code: number | null
  latency_ms: number
  error: string | null
  /** The schedule's delay after this attempt (before jitter), or the receiver's Retry-After. */
  delay_s: number
  jitter: boolean
  /** When the attempt ended, on the clock's monotonic scale. */
  finishedAt: number
}

type DeliveryDeps = Pick<Deps, 'sql' | 'config' | 'listen' | 'clock'>

async function claim(sql: Sql, clock: Clock, limit: number): Promise<Claimed[]> {
  const token = crypto.randomUUID()
  const now = nowOf(sql, clock)
  const rows = await sql<Omit<Claimed, 'token'>[]>`
    with due as (
      select e.id from webhook_events e
      where e.status = 'pending' and e.next_attempt_at <= ${now}
        and (e.lease_until is null or e.lease_until < ${now})
        and not exists (
          select 1 from webhook_events p where p.message_id = e.message_id and p.status = 'pending' and p.id < e.id
        )
      order by e.next_attempt_at, e.id
      limit ${limit}
      for update skip locked
    ), claimed as (
      update webhook_events e
      set attempts = e.attempts + 1, lease_token = ${token}, lease_until = ${now} + make_interval(secs => ${LEASE_SECONDS})
      from due
      where e.id = due.id
      returning e.id, e.webhook_id, e.payload, e.attempts, e.api_key_id
    )
    select c.id, c.webhook_id, c.payload, c.attempts, w.url, w.signing_secret
    from claimed c left join webhook_endpoints w on w.api_key_id = c.api_key_id
    order by c.id`
  return rows.map((row) => ({ ...row, token }))
}

async function attempt(event: Claimed, deps: DeliveryDeps, ca: string[] | undefined): Promise<Outcome> {
  const base = { id: event.id, token: event.token }
  if (event.url === null || event.signing_secret === null) {
    observeWebhookAttempt('no_endpoint')
    return {
      ...base,
      kind: 'gone',
      url: null,
      status_code: null,
      latency_ms: 0,
      error: 'webhook registration removed',
      delay_s: 0,
      jitter: false,
      finishedAt: deps.clock.monotonic(),
    }
  }
  let result: AttemptResult
  const started = performance.now()
  try {
    result = await attemptDelivery(
      { url: event.url, secret: event.signing_secret },
      { webhookId: event.webhook_id, payload: event.payload },
      { allowPrivate: deps.config.webhookAllowPrivate, ca, clock: deps.clock },
    )
  } catch {
    result = { ok: false, statusCode: null, latencyMs: 0, error: 'internal error', retryAfterSeconds: null }
  }
  observeWebhookAttempt(result.ok ? 'delivered' : 'failed', (performance.now() - started) / 1000)
  const retryAfter = result.retryAfterSeconds === null ? null : Math.min(MAX_RETRY_AFTER_S, Math.max(1, result.retryAfterSeconds))
  return {
    ...base,
    kind: result.ok ? 'delivered' : 'retry',
    url: event.url,
    status_code: result.statusCode,
    latency_ms: result.latencyMs,
    error: result.error,
    delay_s: retryAfter ?? RETRY_DELAYS_S[Math.min(event.attempts, RETRY_DELAYS_S.length) - 1] ?? RETRY_DELAYS_S[0],
    jitter: retryAfter === null,
    finishedAt: deps.clock.monotonic(),
  }
}

/**
 * Records many outcomes in one statement. Each row applies only while its lease is still ours; the
 * attempt row is written with the event update or not at all. The next attempt is timed from the end
 * of the failed one (`finished_ago_ms`), in the clock's time.
 */
async function record(sql: Sql, clock: Clock, outcomes: Outcome[]): Promise<{ unblocked: boolean }> {
  const finished = clock.monotonic()
  const now = nowOf(sql, clock)
  const rows = outcomes.map((o) => ({
    id: o.id,
    token: o.token,
    kind: o.kind,
    url: o.url,
    status_code: o.status_code,
    latency_ms: o.latency_ms,
    error: o.error,
    delay_s: o.delay_s,
    jitter: o.jitter,
    finished_ago_ms: Math.max(0, Math.round(finished - o.finishedAt)),
  }))
  const done = await sql<RecordedRow[]>`
    with o as (
      select * from jsonb_to_recordset(${sql.json(rows)}) as o(
        id bigint, token uuid, kind text, url text, status_code integer, latency_ms integer, error text,
        delay_s double precision, jitter boolean, finished_ago_ms integer)
    ), done as (
      update webhook_events e set
        status = case
          when o.kind = 'delivered' then 'delivered'
          when o.kind = 'gone' or e.attempts >= ${MAX_ATTEMPTS} then 'failed'
          else 'pending' end,
        delivered_at = case when o.kind = 'delivered' then ${now} end,
        next_attempt_at = case
          when o.kind = 'retry' and e.attempts < ${MAX_ATTEMPTS} then
            ${now} - make_interval(secs => o.finished_ago_ms / 1000.0)
              + make_interval(secs => o.delay_s * case when o.jitter then 0.8 + random() * 0.4 else 1 end)
          else e.next_attempt_at end,
        last_error = case when o.kind = 'delivered' then null else o.error end,
        lease_token = null,
        lease_until = null
      from o
      where e.id = o.id and e.lease_token = o.token and e.lease_until >= ${now} and e.status = 'pending'
      returning e.id, e.status, e.attempts, e.message_id, e.api_key_id, e.webhook_id, e.next_attempt_at
    ), logged as (
      insert into webhook_attempts (event_id, attempt, url, status_code, latency_ms, error)
      select d.id, d.attempts, o.url, o.status_code, o.latency_ms, o.error
      from done d join o on o.id = d.id
      where o.kind <> 'gone'
    )
    select d.id, d.status, d.attempts, d.api_key_id, d.webhook_id, d.next_attempt_at,
      d.status <> 'pending' and exists (
        select 1 from webhook_events n where n.message_id = d.message_id and n.status = 'pending' and n.id > d.id
      ) as unblocks
    from done d`
  const lost = outcomes.length - done.length
  if (lost > 0) log.warn('webhook outcomes not recorded: lease expired', { lost })
  const byId = new Map(outcomes.map((o) => [o.id, o]))
  for (const row of done) {
    const outcome = byId.get(row.id)!
    if (outcome.kind !== 'delivered') warnFailed(row, outcome)
  }
  return { unblocked: done.some((row) => row.unblocks) }
}

type RecordedRow = {
  id: number
  status: string
  attempts: number
  api_key_id: number
  webhook_id: string
  next_attempt_at: Date
  unblocks: boolean
}

/**
 * One line per failed attempt, for whoever watches the service's output: which event of which key,
 * the receiver's status or the connection/TLS/DNS error, and when it is tried next. Never the URL
 * (it may carry a token), the body or the secret.
 */
function warnFailed(row: RecordedRow, outcome: Outcome): void {
  log.warn('webhook delivery attempt failed', {
    delivery_id: row.id,
    webhook_id: row.webhook_id,
    key_id: row.api_key_id,
    attempt: row.attempts,
    status_code: outcome.status_code,
    error: outcome.error,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at.toISOString() : null,
    gave_up: row.status === 'failed',
  })
}

/** Gives back claimed events that were never attempted (stop came during the claim): the lease is freed and the claim's count undone. */
async function release(sql: Sql, events: Claimed[]): Promise<void> {
  if (events.length === 0) return
  const rows = events.map((e) => ({ id: e.id, token: e.token }))
  await sql`
    update webhook_events e set lease_token = null, lease_until = null, attempts = e.attempts - 1
    from jsonb_to_recordset(${sql.json(rows)}) as r(id bigint, token uuid)
    where e.id = r.id and e.lease_token = r.token and e.status = 'pending'`
}

/** The service's delivery pipeline (see the top of the file). */
class Pipeline {
  private inFlight = 0
  private readonly running = new Set<Promise<void>>()
  private outcomes: Outcome[] = []
  private flushing: Promise<void> | undefined
  private capacityWaiter: (() => void) | undefined
  // Monotonic time of the last short claim; none yet (a test clock's monotonic time starts at 0).
  private lastShortClaim = Number.NEGATIVE_INFINITY
  /** Events claimed and started, for runOnce's count. */
  started = 0
  stopping = false
  onUnblocked: () => void = () => {}

  constructor(
    private readonly deps: DeliveryDeps,
    private readonly ca: string[] | undefined,
    private readonly concurrency: number,
  ) {}

  /** One loop step: claim what fits and start it. The returned count > 0 makes the loop step again at once. */
  async step(): Promise<number> {
    if (this.stopping) return 0
    if (this.inFlight > this.concurrency / 2) {
      // Claiming one slot at a time would cost a statement per delivery: wait for half the slots.
      await new Promise<void>((resolve) => (this.capacityWaiter = resolve))
      return 1
    }
    const gather = this.lastShortClaim + CLAIM_GATHER_MS - this.deps.clock.monotonic()
    if (gather > 0) {
      await this.deps.clock.sleep(gather)
      if (this.stopping) return 0
    }
    const free = this.concurrency - this.inFlight
    const events = await claim(this.deps.sql, this.deps.clock, free)
    if (this.stopping) {
      // stop() came while claiming: give these back rather than start them.
      await release(this.deps.sql, events)
      return 0
    }
    for (const event of events) this.start(event)
    // A short claim means nothing else is due now: sleep until woken or the next poll.
    if (events.length < free) {
      this.lastShortClaim = this.deps.clock.monotonic()
      return 0
    }
    return events.length
  }

  private start(event: Claimed): void {
    this.inFlight++
    this.started++
    const task = attempt(event, this.deps, this.ca)
      .then(
        (outcome) => {
          this.outcomes.push(outcome)
          this.flush()
        },
        // attempt() turns every failure into an outcome; should it throw anyway, the lease runs out
        // and the event is claimed again.
        (error) => log.error('webhook attempt crashed', { error: error instanceof Error ? error.message.slice(0, 200) : 'unknown' }),
      )
      .finally(() => {
        this.inFlight--
        this.running.delete(task)
        if (this.capacityWaiter && (this.inFlight <= this.concurrency / 2 || this.stopping)) {
          const wake = this.capacityWaiter
          this.capacityWaiter = undefined
          wake()
        }
      })
    this.running.add(task)
  }

  /** Writes every finished outcome; outcomes that finish meanwhile wait for the next write. */
  private flush(): void {
    if (this.flushing) return
    this.flushing = (async () => {
      while (this.outcomes.length > 0) {
        const batch = this.outcomes.splice(0, 1000)
        for (let attemptNo = 0; ; attemptNo++) {
          try {
            const recorded = await record(this.deps.sql, this.deps.clock, batch)
            if (recorded.unblocked && !this.stopping) this.onUnblocked()
            break
          } catch (error) {
            // Not recorded: the leases run out and the events are sent again (at-least-once).
            if (attemptNo >= 2) {
              log.warn('webhook outcomes not recorded', {
                count: batch.length,
                error: error instanceof Error ? error.message.slice(0, 200) : 'unknown',
              })
              break
            }
            await this.deps.clock.sleep(250 * 2 ** attemptNo)
          }
        }
      }
      this.flushing = undefined
    })()
  }

  /** Stops claiming; lets in-flight attempts finish (each bounded by its timeouts) and records them. */
  async drain(): Promise<void> {
    this.stopping = true
    const waiter = this.capacityWaiter
    this.capacityWaiter = undefined
    waiter?.()
    while (this.running.size > 0 || this.flushing) {
      await Promise.all([...this.running])
      await this.flushing
    }
  }
}

/**
 * Starts the delivery loop: woken by the NOTIFY of every commit that wrote or replayed events, from this
 * instance or any other on the database (modules/webhooks/notify.ts), and polling every second for
 * retries coming due (and for everything where no LISTEN can be made). stop() finishes the attempts in
 * flight and records them before it resolves.
 */
export function startWebhookDelivery(deps: DeliveryDeps, options: { concurrency?: number; pollMs?: number } = {}): Loop {
  const pipeline = new Pipeline(deps, webhookCa(deps.config.webhookCaFile), options.concurrency ?? CONCURRENCY)
  const unlisten = onEventsCommitted(deps, () => loop.wake())
  // A stop never waits for a subscription still being made (its LISTEN connection waiting out a database
  // outage): a step waiting for it ends, and the subscription is dropped when it comes.
  let stopped = false
  const subscription: { unsubscribe?: () => Promise<void> } = {}
  const { promise: stopping, resolve: stop } = Promise.withResolvers<void>()
  void unlisten.then((u) => {
    if (stopped) void u().catch(() => {})
    else subscription.unsubscribe = u
  })
  // Steps begin once the subscription holds: what was committed before it, the first step finds; what
  // is committed after it wakes the loop.
  const loop = startLoop(
    webhookDelivery.name,
    async () => {
      await Promise.race([unlisten, stopping])
      return stopped ? 0 : pipeline.step()
    },
    {
      pollMs: options.pollMs ?? WEBHOOK_DELIVERY_POLL_MS,
      clock: deps.clock,
    },
  )
  pipeline.onUnblocked = () => loop.wake()
  return {
    name: webhookDelivery.name,
    wake: () => loop.wake(),
    async stop() {
      pipeline.stopping = true
      stopped = true
      stop()
      await Promise.all([loop.stop(), pipeline.drain()])
      await pipeline.drain()
      await subscription.unsubscribe?.().catch(() => {})
    },
  }
}

/**
 * One step of the pipeline, finished: claims what is due now (up to CONCURRENCY), attempts it and
 * records every outcome before it resolves. The number of events attempted. An event a recorded
 * outcome unblocks (the next one of its message) is left to the next step.
 */
export async function deliverDue(deps: DeliveryDeps, options: { concurrency?: number } = {}): Promise<number> {
  const pipeline = new Pipeline(deps, webhookCa(deps.config.webhookCaFile), options.concurrency ?? CONCURRENCY)
  await pipeline.step()
  await pipeline.drain()
  return pipeline.started
}

export const webhookDelivery: Worker = {
  name: 'webhook-delivery',
  pollMs: WEBHOOK_DELIVERY_POLL_MS,
  start: (deps) => startWebhookDelivery(deps),
  runOnce: (deps) => deliverDue(deps),
}
