// Handing charged messages to the provider, outside any transaction, and recording each outcome:
// accepted → sent with its SID; refused, failed or timed out → failed and refunded.
// Bulk and campaign hand-offs share one bounded pool (HANDOFF_CONCURRENCY) and the optional
// PROVIDER_MAX_PER_SECOND cap; outcomes are written in small batches as they arrive, so a crash
// loses at most the last batch's bookkeeping (those messages are still queued and get recovered).

import type { Sql } from '../../db/client'
import type { HandoffResult, OutgoingMessage, Provider } from '../../providers/provider'
import { HANDOFF_TIMEOUT_MS } from '../../providers/provider'
import { RateLimiter, Semaphore } from '../../lib/limit'
import { markSent, refundFailed, type Accepted, type Failure } from './billing'

export type Handoff = {
  /** One message, not through the pool (a single send is already bounded by its HTTP request). */
  one(message: OutgoingMessage): Promise<HandoffResult>
  /** Many messages through the shared pool; resolves when every outcome is recorded. */
  many(messages: OutgoingMessage[]): Promise<Map<number, HandoffResult>>
}

const FLUSH_EVERY = 200
const FLUSH_AFTER_MS = 20

export function createHandoff(sql: Sql, provider: Provider, options: { concurrency: number; maxPerSecond: number }): Handoff {
  const pool = new Semaphore(options.concurrency)
  const rate = new RateLimiter(options.maxPerSecond)

  async function attempt(message: OutgoingMessage): Promise<HandoffResult> {
    await rate.take()
    let timer: Timer | undefined
    const timeout = new Promise<HandoffResult>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, errorCode: null, errorMessage: 'provider did not answer within 10 s' }), HANDOFF_TIMEOUT_MS)
    })
    try {
      return await Promise.race([
        provider.send(message).catch(
          (): HandoffResult => ({ ok: false, errorCode: null, errorMessage: 'provider request failed' }),
        ),
        timeout,
      ])
    } finally {
      clearTimeout(timer)
    }
  }

  async function record(results: [OutgoingMessage, HandoffResult][]): Promise<void> {
    const accepted: Accepted[] = []
    const failed: Failure[] = []
    for (const [message, r] of results) {
      if (r.ok) accepted.push({ id: message.id, sid: r.sid, reports: provider.scheduledReports?.(message.to) ?? [] })
      else failed.push({ id: message.id, errorCode: r.errorCode, errorMessage: r.errorMessage })
    }
    await markSent(sql, accepted)
    await refundFailed(sql, failed)
  }

  return {
    async one(message) {
      const result = await attempt(message)
      await record([[message, result]])
      return result
    },

    async many(messages) {
      const outcomes = new Map<number, HandoffResult>()
      let pending: [OutgoingMessage, HandoffResult][] = []
      let flushing: Promise<void> = Promise.resolve()
      let timer: Timer | undefined
      const flush = () => {
        clearTimeout(timer)
        timer = undefined
        const batch = pending
        pending = []
        if (batch.length > 0) flushing = flushing.then(() => record(batch))
      }
      await Promise.all(
        messages.map((message) =>
          pool.run(async () => {
            const result = await attempt(message)
            outcomes.set(message.id, result)
            pending.push([message, result])
            if (pending.length >= FLUSH_EVERY) flush()
            else timer ??= setTimeout(flush, FLUSH_AFTER_MS)
          }),
        ),
      )
      flush()
      await flushing
      return outcomes
    },
  }
}
