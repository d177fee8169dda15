// Handing charged messages to the provider, outside any transaction, and recording each outcome:
// accepted → sent with its SID; refused, failed or timed out → failed and refunded.
//
// Only the holder of a message's hand-off lease hands it over. A charge (or a recovery claim) takes
// the lease for its messages, sized from the queue ahead of them; right before each attempt the
// holder renews it for one attempt plus the recording of its outcome, and skips the message if the
// renewal does not come back (its lease expired and someone else took it over). Bulk, campaign and
// recovery hand-offs share one bounded pool (HANDOFF_CONCURRENCY) and the optional
// PROVIDER_MAX_PER_SECOND cap. Claims and outcomes are written through group-commit writers, so
// under load many share one statement; an outcome write that fails is retried with backoff.

import type { Sql } from '../../db/client'
import type { HandoffResult, OutgoingMessage, Provider, ScheduledReport } from '../../providers/provider'
import { RateLimiter, Semaphore } from '../../lib/limit'
import { Batcher } from '../../lib/batch'
import { retrying } from '../../db/retry'
import { log } from '../../lib/log'
import { refundFailed, type Failure, type Lease } from '../ledger/service'

export type Handoff = {
  /** A lease for `n` messages about to be charged, long enough for the queue ahead of them. */
  lease(n: number): Lease
  /**
   * One message, not through the pool (a single send is already bounded by its HTTP request).
   * `fresh`: the lease was taken just now by the charge, so there is nothing to renew.
   */
  one(message: OutgoingMessage, lease: Lease, fresh: boolean): Promise<HandoffResult>
  /** Many messages through the shared pool; resolves when every outcome is recorded. */
  many(messages: OutgoingMessage[], lease: Lease): Promise<Map<number, HandoffResult>>
}

/** How long a message whose hand-off someone else holds is waited for, at most. */
const OUTCOME_WAIT_POLL_MS = 250

export function createHandoff(
  sql: Sql,
  provider: Provider,
  options: { concurrency: number; maxPerSecond: number; timeoutMs: number; onSent?: () => void },
): Handoff {
  const pool = new Semaphore(options.concurrency)
  const rate = new RateLimiter(options.maxPerSecond)
  // One attempt, then the outcome's write with its retries: a lease renewed right before an attempt
  // must outlast both, or recovery could hand the message over a second time.
  const attemptSeconds = Math.ceil((2 * options.timeoutMs) / 1000) + 5

  function lease(n: number): Lease {
    const ahead = pool.load + n
    const rounds = Math.ceil(ahead / options.concurrency)
    const queueMs = Math.max(rounds * options.timeoutMs, options.maxPerSecond > 0 ? (ahead / options.maxPerSecond) * 1000 : 0)
    return { token: crypto.randomUUID(), seconds: attemptSeconds + Math.ceil(queueMs / 1000) }
  }

  async function attempt(message: OutgoingMessage): Promise<HandoffResult> {
    await rate.take()
    let timer: Timer | undefined
    const timeout = new Promise<HandoffResult>((resolve) => {
      timer = setTimeout(
        () => resolve({ ok: false, errorCode: null, errorMessage: `provider did not answer within ${options.timeoutMs / 1000} s` }),
        options.timeoutMs,
      )
    })
    try {
      return await Promise.race([
        provider.send(message).catch((): HandoffResult => ({ ok: false, errorCode: null, errorMessage: 'provider request failed' })),
        timeout,
      ])
    } finally {
      clearTimeout(timer)
    }
  }

  // Renews the lease of messages about to be attempted; answers which ones this holder still has.
  const claimer = new Batcher<{ id: number; token: string }, boolean>(async (claims) => {
    const rows = await sql<{ id: number }[]>`
      update messages m set handoff_until = now() + make_interval(secs => ${attemptSeconds})
      from unnest(${claims.map((c) => c.id)}::bigint[], ${claims.map((c) => c.token)}::uuid[]) as v(id, token)
      where m.id = v.id and m.handoff_token = v.token and m.status = 'queued' and m.quarantined_at is null
      returning m.id`
    const held = new Set(rows.map((r) => r.id))
    return claims.map((c) => held.has(c.id))
  })

  // Every outcome, of single sends and of bulk and campaign batches alike, is recorded through one
  // group-commit writer. Both writes are guarded by `status = 'queued'`, so repeating them is safe:
  // a failed write is retried with backoff before the message is left to recovery.
  const recorder = new Batcher<[OutgoingMessage, HandoffResult], void>(async (results) => {
    const accepted: Accepted[] = []
    const failed: Failure[] = []
    for (const [message, r] of results) {
      if (r.ok) accepted.push({ id: message.id, sid: r.sid, reports: r.reports ?? [] })
      else failed.push({ id: message.id, errorCode: r.errorCode, errorMessage: r.errorMessage })
    }
    const always = () => true
    await retrying(() => markSent(sql, accepted), { attempts: 5, retryIf: always })
    await retrying(() => refundFailed(sql, failed), { attempts: 5, retryIf: always })
    if (accepted.length > 0) options.onSent?.()
    return results.map(() => undefined)
  })

  /** Renews the lease (when asked to), hands the message over and records the outcome; null if the lease is gone. */
  async function handOver(message: OutgoingMessage, lease: Lease, renew: boolean): Promise<HandoffResult | null> {
    if (renew && !(await claimer.add({ id: message.id, token: lease.token }))) return null
    const result = await attempt(message)
    await recorder.add([message, result]).catch((error) => {
      // Still queued: when its lease expires, recovery hands it over again (or quarantines it).
      log.warn('hand-off outcome not recorded', { message_id: message.id, error: error instanceof Error ? error.name : 'unknown' })
    })
    return result
  }

  return {
    lease,
    async one(message, lease, fresh) {
      return (await handOver(message, lease, !fresh)) ?? waitForOutcome(sql, message.id)
    },
    async many(messages, lease) {
      const outcomes = new Map<number, HandoffResult>()
      await Promise.all(
        messages.map(async (message) => {
          // A message this request no longer holds is waited for outside the pool: its new holder
          // may need the slot.
          const result = (await pool.run(() => handOver(message, lease, true))) ?? (await waitForOutcome(sql, message.id))
          outcomes.set(message.id, result)
        }),
      )
      return outcomes
    },
  }
}

/**
 * The outcome of a message someone else is handing over (recovery took over its expired lease, or
 * it was already done): waits until it is sent or failed. A message still queued when the wait ends
 * (or quarantined) is reported as not handed over by this request.
 */
async function waitForOutcome(sql: Sql, id: number, maxWaitMs = 60_000): Promise<HandoffResult> {
  const until = Date.now() + maxWaitMs
  for (;;) {
    const [row] = await sql<
      { status: string; message_sid: string | null; error_code: number | null; error_message: string | null; quarantined: boolean }[]
    >`
      select status, message_sid, error_code, error_message, quarantined_at is not null as quarantined from messages where id = ${id}`
    if (row && row.status !== 'queued') {
      // A SID means the provider accepted it, whatever its reports said since (a `failed` with a SID
      // is a delivery failure, refunded by its status change unless its price keeps it charged); only a
      // failed hand-off has none.
      return row.message_sid !== null
        ? { ok: true, sid: row.message_sid }
        : { ok: false, errorCode: row.error_code, errorMessage: row.error_message ?? 'failed' }
    }
    if (!row || row.quarantined || Date.now() > until) {
      return { ok: false, errorCode: null, errorMessage: 'the hand-off is still in progress elsewhere', pending: true }
    }
    await Bun.sleep(OUTCOME_WAIT_POLL_MS)
  }
}

export type Accepted = { id: number; sid: string; reports: ScheduledReport[] }

/**
 * Records accepted hand-offs, with the status reports the provider schedules (the simulator's), in
 * one statement. Only messages still queued change, so a late second outcome is ignored.
 */
export async function markSent(sql: Sql, accepted: Accepted[]): Promise<number[]> {
  if (accepted.length === 0) return []
  const reports = accepted.flatMap((a) => a.reports.map((r) => ({ sid: a.sid, ...r })))
  const rows = await sql<{ id: number }[]>`
    with sent as (
      update messages m
      set status = 'sent', message_sid = v.sid, sent_at = now(), handoff_until = null
      from unnest(${accepted.map((a) => a.id)}::bigint[], ${accepted.map((a) => a.sid)}::text[]) as v(id, sid)
      where m.id = v.id and m.status = 'queued'
      returning m.id, m.message_sid
    ), scheduled as (
      insert into simulator_reports (message_sid, status, error_code, error_message, due_at)
      select r.sid, r.status, r.error_code, r.error_message, now() + make_interval(secs => r.after_ms / 1000.0)
      from unnest(${reports.map((r) => r.sid)}::text[], ${reports.map((r) => r.status)}::text[],
                  ${reports.map((r) => r.errorCode ?? null) as number[]}::int[], ${reports.map((r) => r.errorMessage ?? null) as string[]}::text[],
                  ${reports.map((r) => r.afterMs)}::int[]) as r(sid, status, error_code, error_message, after_ms)
      where r.sid in (select message_sid from sent)
    )
    select id from sent`
  return rows.map((r) => r.id)
}
