// Handing charged messages to the provider, outside any transaction, and recording each outcome:
// accepted → sent with its SID; refused, failed or timed out → failed and refunded.
// Bulk and campaign hand-offs share one bounded pool (HANDOFF_CONCURRENCY) and the optional
// PROVIDER_MAX_PER_SECOND cap; outcomes are written as they arrive, grouped, so a crash loses at most
// the bookkeeping of the write in flight (those messages are still queued and get recovered).

import type { Sql } from '../../db/client'
import type { HandoffResult, OutgoingMessage, Provider } from '../../providers/provider'
import { HANDOFF_TIMEOUT_MS } from '../../providers/provider'
import { RateLimiter, Semaphore } from '../../lib/limit'
import { Batcher } from '../../lib/batch'
import { markSent, refundFailed, type Accepted, type Failure } from './billing'

export type Handoff = {
  /** One message, not through the pool (a single send is already bounded by its HTTP request). */
  one(message: OutgoingMessage): Promise<HandoffResult>
  /** Many messages through the shared pool; resolves when every outcome is recorded. */
  many(messages: OutgoingMessage[]): Promise<Map<number, HandoffResult>>
}

export function createHandoff(sql: Sql, provider: Provider, options: { concurrency: number; maxPerSecond: number }): Handoff {
  const pool = new Semaphore(options.concurrency)
  const rate = new RateLimiter(options.maxPerSecond)

  async function attempt(message: OutgoingMessage): Promise<HandoffResult> {
    await rate.take()
    let timer: Timer | undefined
    const timeout = new Promise<HandoffResult>((resolve) => {
      timer = setTimeout(
        () => resolve({ ok: false, errorCode: null, errorMessage: 'provider did not answer within 10 s' }),
        HANDOFF_TIMEOUT_MS,
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

  // Every outcome, of single sends and of bulk and campaign batches alike, is recorded through one
  // group-commit writer: under load, many outcomes share one markSent/refundFailed pair.
  const recorder = new Batcher<[OutgoingMessage, HandoffResult], void>(async (results) => {
    const accepted: Accepted[] = []
    const failed: Failure[] = []
    for (const [message, r] of results) {
      if (r.ok) accepted.push({ id: message.id, sid: r.sid, reports: provider.scheduledReports?.(message.to) ?? [] })
      else failed.push({ id: message.id, errorCode: r.errorCode, errorMessage: r.errorMessage })
    }
    await markSent(sql, accepted)
    await refundFailed(sql, failed)
    return results.map(() => undefined)
  })

  return {
    async one(message) {
      const result = await attempt(message)
      await recorder.add([message, result])
      return result
    },

    async many(messages) {
      const outcomes = new Map<number, HandoffResult>()
      await Promise.all(
        messages.map(async (message) => {
          const result = await pool.run(() => attempt(message))
          outcomes.set(message.id, result)
          await recorder.add([message, result])
        }),
      )
      return outcomes
    },
  }
}
