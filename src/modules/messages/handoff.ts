// Handing charged messages to the provider, outside any transaction, at the sender's pace, and
// recording each outcome: accepted → sent with its SID; refused or timed out → failed and refunded;
// throttled → still queued and charged, tried again after Retry-After (or a backoff) until the
// message's validity runs out, then failed and refunded with the provider's code.
//
// Only the holder of a message's hand-off lease hands it over. Leases are short (HANDOFF_LEASE_SECONDS,
// 15 s by default) and a live holder renews every lease it holds every fifth of that, whatever it is
// doing (waiting for a slot, for the provider, for the database to come back to record an outcome), so
// recovery (workers/handoff-recovery.ts) only ever takes over from a dead holder, and does so in seconds.
// Each attempt goes: reserve a slot (pace.ts), wait for it, then renew the lease with the holder's
// token (a lease taken over meanwhile is not ours: skip the message) and, in the same statement, look
// whether the recipient opted out of the account's messages since the charge; then call the provider at once.
//
// The same statement sets aside a campaign's message whose WhatsApp template is no longer approved
// (Meta paused it after the charge): never handed over to be refused (132015) and lost for the campaign,
// it stays queued and charged, without a lease, until the template is approved again, its campaign is
// cancelled or its validity runs out (campaigns/engine.ts releaseSetAside). Single and bulk sends go on
// as asked: Meta's refusal of them is refunded with its words.
//
// Bulk, campaign and recovery hand-offs share one bounded pool per sender (HANDOFF_CONCURRENCY). Outcomes are
// written through a group-commit writer and retried for as long as the process lives.
//
// A STOP stops what has not been handed over yet: a message whose recipient opted out after its charge
// is failed with OPTED_OUT_AT_HANDOFF (optouts/service.ts) and refunded, in one statement (refundFailed,
// through the outcome writer), never handed over. The check runs after every wait (the pace's slot, a
// throttle's Retry-After), right before each attempt: in the lease's renewal, or, for a single send's
// first attempt (its lease surely its own, so not renewed), one read of opt_outs. Its rule: an opt-out
// committed before the check's statement began stops the message; one committed after it is too late
// for this message, whose hand-off is decided and leaving, as for a STOP arriving while the provider's
// request is in flight. A statement reads one snapshot and an opt-out's row becomes visible whole at its
// commit, so there is no third case. No lock is needed: the account row lock an opt-out takes (`for no
// key update`) orders it against charges (a campaign batch checks under it); waiting on it here would
// only move the moment of the decision, not close the gap to the provider's call, which is outside any
// transaction. That gap holds no wait but the process's own spacing (pace.ts's go(), which holds a
// hand-off only when late timers bunched several), so a STOP that comes while a message waits seconds
// for its slot or for a throttle's retry is always seen.

import type { Sql } from '../../db/client'
import type { HandoffResult, OutgoingMessage, ScheduledReport } from '../../providers/provider'
import { Semaphore } from '../../lib/limit'
import { Batcher } from '../../lib/batch'
import { log, errorKind } from '../../lib/log'
import { isOutage, isRolledBack, retrying } from '../../db/retry'
import { GENERIC_PLAN } from '../../db/statement-functions'
import { refundFailed, type Failure, type Lease } from '../ledger/service'
import { insertEvents, statusPayload } from '../webhooks/events'
import type { Sender, SenderDirectory } from '../senders/directory'
import { observeHandoff, observePaceWait } from '../../http/metrics/measures'
import type { Clock, Timer } from '../../lib/clock'
import { nowOf } from '../../db/now'
import { messageUserId } from '../customers/service'
import { isOptedOut, OPTED_OUT_AT_HANDOFF } from '../optouts/service'

/** A holder renews the leases it holds this many times per lease (HANDOFF_LEASE_SECONDS: 15 s, so every 3 s). */
const BEATS_PER_LEASE = 5
/**
 * How long an answer waits for its hand-off outcome's record before the provider's answer goes without
 * it (the record goes on): longer than an outage of a few seconds, as the Idempotency-Key store's.
 */
const RECORD_ANSWER_MS = 12_000
/** The first wait after a throttle without Retry-After; it doubles with each throttle of the message, up to 16 s. */
const THROTTLE_BACKOFF_MS = 1_000
const MAX_THROTTLE_BACKOFF_MS = 16_000

/**
 * A message to hand over, with when its validity runs out (ms since the epoch, on Deps.clock)
 * and its sender (null: the deployment's default sender).
 */
export type Paced = OutgoingMessage & { validUntilMs: number; senderId: number | null }

/** `queued`: not settled within the caller's bound; the hand-off goes on and its outcome is announced by webhook. */
export type Outcome = HandoffResult | { queued: true }

export type Handoff = {
  /** A new lease for messages about to be charged (or claimed by recovery). */
  lease(): Lease
  /**
   * One message of the account `accountId`, not through the pool (a single send is already bounded by
   * its HTTP request). `fresh`: the charge took the lease just now, with its slot reserved `firstWaitMs` ahead.
   * `answerWithinMs`: how long after the provider's first throttle it answers `queued`.
   */
  one(message: Paced & { accountId: number }, lease: Lease, fresh: boolean, firstWaitMs: number, answerWithinMs: number): Promise<Outcome>
  /**
   * Many messages through the shared pool; resolves when every outcome is recorded, or at
   * `answerWithinMs`. `fresh` false: the charge was found, not made, so the lease may be someone else's.
   */
  many(messages: Paced[], lease: Lease, answerWithinMs?: number, fresh?: boolean): Promise<Map<number, Outcome>>
  /**
   * Marks messages answered `queued`, so their outcome is announced by a message.status event; answers
   * those it marked (one whose outcome was recorded meanwhile is not: answer its outcome instead).
   */
  announce(ids: number[]): Promise<number[]>
  /** The outcome of a message that has one (or is handed over elsewhere), waited for. */
  outcomeOf(id: number): Promise<HandoffResult>
  /** When this process's hand-offs last could not reach the database (0: never): recovery holds back after it. */
  lastDatabaseErrorAt(): number
  /**
   * The lease tokens this process is handing messages over with right now (none once stopped): their holder
   * is alive, whatever their leases say, so recovery here never takes them over. A lease can run out under a
   * live holder when the process itself stalled (its heartbeat and recovery alike, say a long statement of
   * the embedded database): recovery must not then send such a message a second time.
   */
  heldTokens(): string[]
  /** Stops renewing (the process is stopping): its leases expire and recovery takes them over. */
  stop(): void
}

/**
 * What renewing a lease before an attempt found: still ours, ours but its recipient opted out, ours but
 * a campaign's whose WhatsApp template is no longer approved (set aside), or taken over.
 */
type Claim = 'held' | 'opted_out' | 'template_not_approved' | 'lost'

/** A hand-off's answer for a message it set aside: it stays queued and charged, handed over later or refunded. */
const SET_ASIDE = 'set aside'

/** How long a message whose hand-off someone else holds is waited for, at most. */
const OUTCOME_WAIT_POLL_MS = 250

export function createHandoff(
  sql: Sql,
  senders: SenderDirectory,
  clock: Clock,
  options: {
    concurrency: number
    /** How long a lease lasts without renewal (HANDOFF_LEASE_SECONDS). */
    leaseSeconds: number
    timeoutMs: number
    timezone: string
    /** When the process's start found the database unreachable (0: never): an outage seen, as below. */
    unreachableAt?: number
    onSent?: () => void
  },
): Handoff {
  const leaseSeconds = options.leaseSeconds
  // One pool per sender: a message waits for its pace slot holding a place in its pool, so a shared pool
  // would let one sender's queue (a slow sender's batch) hold up every other sender's messages.
  const pools = new Map<number | null, Semaphore>()
  const poolOf = (senderId: number | null) => {
    let pool = pools.get(senderId)
    if (!pool) pools.set(senderId, (pool = new Semaphore(options.concurrency)))
    return pool
  }
  // Message id → the lease token this process holds it with, and whether a renewal found it taken over.
  const held = new Map<number, { token: string; lost: boolean }>()
  let heartbeat: Timer | undefined
  let lastErrorAt = options.unreachableAt ?? 0
  let stopped = false

  function hold(id: number, token: string): void {
    held.set(id, { token, lost: false })
    heartbeat ??= clock.setInterval(() => void renewHeld(), (leaseSeconds * 1000) / BEATS_PER_LEASE)
  }
  function letGo(id: number): void {
    held.delete(id)
    if (held.size === 0 && heartbeat) {
      clock.clearInterval(heartbeat)
      heartbeat = undefined
    }
  }
  async function renewHeld(): Promise<void> {
    if (stopped || held.size === 0) return
    // A failure (the database is away) is tried again at the next beat; a lease that expired
    // meanwhile is renewed as long as nobody took it over (its token is still ours).
    const ids = [...held.keys()]
    const tokens = ids.map((id) => held.get(id)!.token)
    const renewed = await sql<{ id: number }[]>`
      update messages m set handoff_until = ${nowOf(sql, clock)} + make_interval(secs => ${leaseSeconds})
      from unnest(${ids}::bigint[], ${tokens}::uuid[]) as v(id, token)
      where m.id = v.id and m.handoff_token = v.token and m.status = 'queued'
      returning m.id`.catch((error) => {
      if (isOutage(error)) lastErrorAt = clock.now().getTime()
      return null
    })
    if (!renewed) return
    const still = new Set(renewed.map((r) => r.id))
    // A message let go while the renewal ran (its outcome recorded), or held again under another
    // token, is not the one this renewal looked at: only the leases it found taken over are lost.
    ids.forEach((id, i) => {
      const holding = held.get(id)
      if (holding && holding.token === tokens[i] && !still.has(id)) holding.lost = true
    })
  }

  async function attempt(provider: Sender['provider'], message: OutgoingMessage): Promise<HandoffResult> {
    let timer: Timer | undefined
    const timeout = new Promise<HandoffResult>((resolve) => {
      timer = clock.setTimeout(
        () => resolve({ ok: false, errorCode: null, errorMessage: `provider did not answer within ${options.timeoutMs / 1000} s` }),
        options.timeoutMs,
      )
    })
    const started = performance.now()
    try {
      const result = await Promise.race([
        provider.send(message).catch((): HandoffResult => ({ ok: false, errorCode: null, errorMessage: 'provider request failed' })),
        timeout,
      ])
      observeHandoff(provider.name, result, (performance.now() - started) / 1000)
      return result
    } finally {
      clock.clearTimeout(timer)
    }
  }

  // Renews the lease of messages about to be attempted; answers which ones this holder still has, and of
  // those whether the recipient opted out of the account's messages (opt_outs' key: one index probe; for a
  // message to a user id, also the phone Meta linked it to on the sender since, whose opt-out it is now).
  // A batch of claims can deadlock with another instance's (or an outcome's record) over the same
  // messages: rolled back whole, it runs again (a claim is safe to repeat).
  const claimer = new Batcher<{ id: number; token: string }, Claim>(async (claims) => {
    const rows = await retrying(
      () => sql<{ id: number; opted_out: boolean; template_not_approved: boolean }[]>`
      update messages m set handoff_until = ${nowOf(sql, clock)} + make_interval(secs => ${leaseSeconds})
      from unnest(${claims.map((c) => c.id)}::bigint[], ${claims.map((c) => c.token)}::uuid[]) as v(id, token)
      where m.id = v.id and m.handoff_token = v.token and m.status = 'queued' and m.quarantined_at is null
      returning m.id, exists (
        select 1 from opt_outs o where o.account_id = m.account_id
          and o.phone in (m.phone, (select l.phone from customer_links l where l.sender_key = coalesce(m.sender_id, 0) and l.user_id = m.phone))
      ) as opted_out,
      m.campaign_id is not null and exists (
        select 1 from wa_templates w where w.id = (m.provider_template->>'templateId')::bigint and w.status <> 'approved'
      ) as template_not_approved`,
      {
        retryIf: isRolledBack,
        clock,
      },
    )
    const claimed = new Map(rows.map((r) => [r.id, r]))
    return claims.map((c): Claim => {
      const row = claimed.get(c.id)
      return !row ? 'lost' : row.opted_out ? 'opted_out' : row.template_not_approved ? 'template_not_approved' : 'held'
    })
  })

  // Every outcome, of single sends and of bulk and campaign batches alike, is recorded through one
  // group-commit writer. Both writes are guarded by `status = 'queued'`, so repeating them is safe.
  const recorder = new Batcher<[OutgoingMessage, HandoffResult], void>(async (results) => {
    const accepted: Accepted[] = []
    const failed: Failure[] = []
    for (const [message, r] of results) {
      if (r.ok) accepted.push({ id: message.id, sid: r.sid, reports: r.reports ?? [] })
      else failed.push({ id: message.id, errorCode: r.errorCode, errorMessage: r.errorMessage })
    }
    await markSent(sql, clock, accepted, options.timezone)
    await refundFailed(sql, failed, options.timezone, clock)
    if (accepted.length > 0) options.onSent?.()
    return results.map(() => undefined)
  })

  /**
   * Writes the outcome, again and again while the database refuses: the SID must not be lost while
   * we live. Stops when the process stops or when the message is found taken over (no longer ours).
   */
  async function record(message: OutgoingMessage, result: HandoffResult): Promise<void> {
    for (let failures = 0; ; failures++) {
      try {
        return await recorder.add([message, result])
      } catch (error) {
        if (isOutage(error)) lastErrorAt = clock.now().getTime()
        // Stopped, taken over, or our own pool closed: nothing more this process can write.
        const closed = (error as { code?: string }).code === 'CONNECTION_ENDED'
        if (stopped || closed || held.get(message.id)?.lost) throw error
        if (failures % 20 === 0) {
          log.warn('hand-off outcome not recorded yet; retrying', {
            message_id: message.id,
            error: errorKind(error),
          })
        }
        await clock.sleep(Math.min(1_000, 50 * 2 ** failures))
      }
    }
  }

  /** Waits while the recipient is within its gap; then reserves the message's slot and answers its wait. */
  async function slotFor(pacer: Sender['pacer'], phone: string): Promise<number> {
    for (;;) {
      const take = await retrying(() => pacer.take(phone))
      if (take.slot) return take.waitMs
      await clock.sleep(take.waitMs)
    }
  }

  /**
   * Hands one message over at the pace, through throttles, and records the outcome; null if the
   * lease is someone else's, or this holder could not record the outcome (see the end); SET_ASIDE for a
   * campaign's message whose WhatsApp template is no longer approved.
   * `firstWaitMs`: the first slot, when the caller reserved it already.
   */
  async function handOver(
    message: Paced,
    lease: Lease,
    firstWaitMs: number | null,
    options: { checkFirst: boolean; onThrottled?: () => void; accountId?: number },
  ): Promise<HandoffResult | typeof SET_ASIDE | null> {
    // A charge found rather than made (a retried write, a repeated request) may be someone else's:
    // look before taking a slot for it.
    if (options.checkFirst && (await claimer.add({ id: message.id, token: lease.token })) === 'lost') return null
    hold(message.id, lease.token)
    try {
      const { provider, pacer } = await retrying(() => senders.get(message.senderId))
      for (let throttles = 0; ; throttles++) {
        const reserved = throttles === 0 && firstWaitMs !== null
        const pacing = clock.monotonic()
        const waitMs = reserved ? firstWaitMs : await slotFor(pacer, message.to)
        if (waitMs > 0) await clock.sleep(waitMs)
        observePaceWait(provider.name, (clock.monotonic() - pacing) / 1000)
        // The lease and the opt-out are checked after the wait, right before the attempt: a message
        // taken over while it waited is not ours to send, one whose recipient opted out is not sent. (A
        // single send's first attempt reads the opt-out alone when its lease, taken by its charge just
        // now, cannot have run out: its wait is bounded by SEND_WAIT_MS.)
        const leaseSurelyOurs = reserved && waitMs < (leaseSeconds * 1000) / 2 && options.accountId !== undefined
        const claim: Claim = leaseSurelyOurs
          ? (await retrying(() => isOptedOut(sql, options.accountId!, message.to)))
            ? 'opted_out'
            : 'held'
          : await claimer.add({ id: message.id, token: lease.token })
        if (claim === 'lost') {
          letGo(message.id)
          return null
        }
        if (claim === 'template_not_approved') {
          // A campaign's message whose WhatsApp template Meta paused (or disabled...) since its charge: not
          // handed over to be refused and lost for the campaign, but set aside, queued and charged, until
          // the template is approved again (campaigns/engine.ts releaseSetAside).
          await retrying(
            () => sql`
              update messages set set_aside_at = ${nowOf(sql, clock)}, handoff_until = null, handoff_token = null
              where id = ${message.id} and handoff_token = ${lease.token} and status = 'queued'`,
            { retryIf: isRolledBack, clock },
          )
          letGo(message.id)
          return SET_ASIDE
        }
        let result: HandoffResult
        if (claim === 'opted_out') {
          result = { ok: false, errorCode: null, errorMessage: OPTED_OUT_AT_HANDOFF }
        } else {
          await pacer.go()
          result = await attempt(provider, message)
        }
        if (!result.ok && result.throttle) {
          options.onThrottled?.()
          // The sender (or recipient) waits what the provider said, or one backoff step without it; this
          // message alone backs off further with each throttle of its own.
          const holdMs = result.throttle.retryAfterMs ?? THROTTLE_BACKOFF_MS
          const retryAfterMs = result.throttle.retryAfterMs ?? Math.min(MAX_THROTTLE_BACKOFF_MS, THROTTLE_BACKOFF_MS * 2 ** throttles)
          await pacer.throttled(result.throttle, message.to, holdMs).catch(() => {})
          if (clock.now().getTime() + retryAfterMs < message.validUntilMs) {
            // The pace holds the sender (or, with a recipient gap, the recipient) for `holdMs`; without a
            // gap the pace keeps no recipients, so a recipient's hold is this message's own wait.
            const heldByPace = result.throttle.scope !== 'recipient' || pacer.pace.recipientGapMs > 0
            await clock.sleep(retryAfterMs - (heldByPace ? holdMs : 0))
            continue
          }
          // Its validity ran out while throttled: the throttle is its failure, refunded.
        }
        // The answer waits for the outcome's record, through an outage of seconds too: an answer that
        // went first names a SID the books may never hold if the process then dies (recovery hands the
        // message over again, under another SID). Only a record still failing after RECORD_ANSWER_MS
        // lets the provider's answer go without it (the write goes on, the lease held). A record this
        // holder cannot make (it is stopping, or its lease was taken over) leaves the answer to the
        // message's record, whoever makes it (null).
        const recorded = record(message, result).then(
          () => true,
          (error) => {
            log.warn('hand-off outcome not recorded; left to recovery', {
              message_id: message.id,
              error: errorKind(error),
            })
            return false
          },
        )
        void recorded.finally(() => letGo(message.id))
        let timer: Timer | undefined
        const late = new Promise<'late'>((resolve) => (timer = clock.setTimeout(() => resolve('late'), RECORD_ANSWER_MS)))
        const answer = await Promise.race([recorded, late]).finally(() => clock.clearTimeout(timer))
        return answer === false ? null : result
      }
    } catch (error) {
      letGo(message.id)
      throw error
    }
  }

  /** `work`, or `{queued}` if it is not done within `ms` of `after` settling (it goes on). */
  function within(work: Promise<Outcome>, ms: number, after: Promise<void> = Promise.resolve()): Promise<Outcome> {
    if (!Number.isFinite(ms)) return work
    let timer: Timer | undefined
    const late = after.then(() => new Promise<Outcome>((resolve) => (timer = clock.setTimeout(() => resolve({ queued: true }), ms))))
    return Promise.race([work, late]).finally(() => clock.clearTimeout(timer))
  }

  return {
    lease: () => ({ token: crypto.randomUUID(), seconds: leaseSeconds }),
    async one(message, lease, fresh, firstWaitMs, answerWithinMs) {
      // A single send waits for its provider's answer however slow (PROVIDER_TIMEOUT_MS bounds it); once
      // the provider throttles it, for `answerWithinMs` more at most.
      let throttled!: () => void
      const firstThrottle = new Promise<void>((resolve) => (throttled = resolve))
      const work = handOver(message, lease, fresh ? firstWaitMs : null, {
        checkFirst: !fresh,
        onThrottled: throttled,
        accountId: message.accountId,
      }).then((r): Promise<Outcome> | Outcome => (r === SET_ASIDE ? { queued: true } : (r ?? waitForOutcome(sql, clock, message.id))))
      return within(work, answerWithinMs, firstThrottle)
    },
    async many(messages, lease, answerWithinMs = Infinity, fresh = true) {
      const outcomes = new Map<number, Outcome>()
      // Leases this request holds are renewed from now on, while their messages wait for the pool too:
      // a long queue ahead is no sign that their holder died.
      if (fresh) for (const message of messages) hold(message.id, lease.token)
      await Promise.all(
        messages.map(async (message) => {
          // A message this request does not hold is waited for outside the pool: its holder may need the slot.
          const work = poolOf(message.senderId)
            .run(() => handOver(message, lease, null, { checkFirst: !fresh }))
            .then((r): Promise<Outcome> | Outcome => (r === SET_ASIDE ? { queued: true } : (r ?? waitForOutcome(sql, clock, message.id))))
          outcomes.set(message.id, await within(work, answerWithinMs))
        }),
      )
      return outcomes
    },
    outcomeOf: (id) => waitForOutcome(sql, clock, id),
    lastDatabaseErrorAt: () => lastErrorAt,
    heldTokens: () => (stopped ? [] : [...new Set([...held.values()].map((h) => h.token))]),
    async announce(ids) {
      if (ids.length === 0) return []
      const rows = await retrying(
        () => sql<{ id: number }[]>`
          update messages set announce_outcome = true where id = any(${ids}::bigint[]) and status = 'queued' returning id`,
        { retryIf: isRolledBack, clock },
      )
      return rows.map((r) => r.id)
    },
    stop() {
      stopped = true
      if (heartbeat) clock.clearInterval(heartbeat)
    },
  }
}

/**
 * The outcome of a message someone else is handing over (recovery took over its expired lease, or
 * it was already done): waits until it is sent or failed. A message still queued when the wait ends
 * (or quarantined) is reported as not handed over by this request.
 */
async function waitForOutcome(sql: Sql, clock: Clock, id: number, maxWaitMs = 60_000): Promise<HandoffResult> {
  const until = clock.now().getTime() + maxWaitMs
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
    if (!row || row.quarantined || clock.now().getTime() > until) {
      return { ok: false, errorCode: null, errorMessage: 'the hand-off is still in progress elsewhere', pending: true }
    }
    await clock.sleep(OUTCOME_WAIT_POLL_MS)
  }
}

export type Accepted = { id: number; sid: string; reports: ScheduledReport[] }

/**
 * Records accepted hand-offs, with the status reports the provider schedules (the simulator's), in
 * one statement. Only messages still queued change, so a late second outcome is ignored. A message
 * that was answered `queued` gets its message.status event (queued → sent) in the same statement.
 */
export async function markSent(
  sql: Sql,
  clock: Pick<Clock, 'sqlNow'>,
  accepted: Accepted[],
  timezone: string,
): Promise<{ ids: number[]; announced: number }> {
  if (accepted.length === 0) return { ids: [], announced: 0 }
  const reports = accepted.flatMap((a) => a.reports.map((r) => ({ sid: a.sid, ...r })))
  // Behind a pooler it runs with its generic plan (GENERIC_PLAN, a comment): else PostgreSQL plans this
  // UPDATE of a partitioned table at every run, which costs more than the run.
  const [row] = await sql<{ ids: number[]; announced: number }[]>`
    ${sql.unsafe(GENERIC_PLAN)} with sent as (
      update messages m
      set status = 'sent', message_sid = v.sid, sent_at = ${nowOf(sql, clock)}, handoff_until = null,
        provider_template = m.provider_template - 'sealedSecret'
      from unnest(${accepted.map((a) => a.id)}::bigint[], ${accepted.map((a) => a.sid)}::text[]) as v(id, sid)
      where m.id = v.id and m.status = 'queued'
      returning m.id, m.message_sid, m.api_key_id, m.phone, m.sender_id, m.announce_outcome
    ), scheduled as (
      insert into simulator_reports (message_sid, status, error_code, error_message, due_at)
      select r.sid, r.status, r.error_code, r.error_message, ${nowOf(sql, clock)} + make_interval(secs => r.after_ms / 1000.0)
      from unnest(${reports.map((r) => r.sid)}::text[], ${reports.map((r) => r.status)}::text[],
                  ${reports.map((r) => r.errorCode ?? null) as number[]}::int[], ${reports.map((r) => r.errorMessage ?? null) as string[]}::text[],
                  ${reports.map((r) => r.afterMs)}::int[]) as r(sid, status, error_code, error_message, after_ms)
      where r.sid in (select message_sid from sent)
    ), announced as (
      select s.api_key_id, s.id as message_id, s.id as ord,
             ${statusPayload(
               sql,
               timezone,
               sql`s.message_sid, s.phone, 'sent', 'queued', null::int, null::text, false, null::boolean, ${messageUserId(sql, sql`s.sender_id`, sql`s.phone`)}`,
             )} as payload
      from sent s where s.announce_outcome
    ), event as (${insertEvents(sql, 'announced')})
    select array(select id from sent) as ids, (select count(*)::int from event) as announced`
  return { ids: row!.ids, announced: row!.announced }
}
