// What this process counts, for GET /metrics: one registry per process (Prometheus scrapes each
// instance and adds them up), recorded where the work is done with one-line calls: the server (every
// request), the hand-off (each attempt, pacing waits), the webhook worker (each attempt), the ledger
// (each movement of money) and the database pool (transactions). The queue depths are not counted
// here: they are read from the database at scrape time (queues.ts).
//
// Labels are bounded: a route's template (never its path: no ids or phone numbers), a method among
// HTTP's, a status code, a provider's name, an outcome. Nothing a client chooses becomes a label.

import { Registry } from '../../lib/metrics'
import type { HandoffResult } from '../../providers/provider'

export const registry = new Registry()

// Seconds. Requests: a fast read is a few ms, a send waits for its provider (up to 10 s), a bulk up to BULK_WAIT_MS.
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
// A provider answers in tens to hundreds of ms; PROVIDER_TIMEOUT_MS (10 s) bounds it.
const PROVIDER_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
// A pace slot is usually free at once; a busy sender's queue waits seconds, a throttled one minutes.
const WAIT_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300]
// A transaction's start: a free connection answers BEGIN in a ms; a saturated pool makes it wait.
const POOL_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5]

const httpRequests = registry.counter(
  'messaging_http_requests_total',
  'HTTP requests answered, by route template (unmatched: no route), method and status code',
  ['route', 'method', 'code'],
)
const httpDuration = registry.histogram(
  'messaging_http_request_duration_seconds',
  'Time from receiving a request to its answer headers, by route template and method',
  ['route', 'method'],
  REQUEST_BUCKETS,
)

export type HandoffOutcome = 'accepted' | 'refused' | 'failed' | 'throttled'
const handoffs = registry.counter(
  'messaging_handoffs_total',
  'Hand-off attempts to a provider by outcome: accepted; refused (the provider answered with an error code); failed (no answer in time, a network error, an answer without a code); throttled (a rate was exceeded: tried again)',
  ['provider', 'outcome'],
)
const handoffDuration = registry.histogram(
  'messaging_handoff_duration_seconds',
  "Time a hand-off attempt took, until the provider's answer or the timeout, by provider and outcome",
  ['provider', 'outcome'],
  PROVIDER_BUCKETS,
)
const throttles = registry.counter(
  'messaging_provider_throttles_total',
  'Throttling answers from providers, by whose rate was exceeded (sender, recipient, account)',
  ['provider', 'scope'],
)
const paceWaits = registry.histogram(
  'messaging_pace_wait_seconds',
  "Time a hand-off waited for its slot at its sender's pace (and a recipient's gap) before it went",
  ['provider'],
  WAIT_BUCKETS,
)

export type WebhookOutcome = 'delivered' | 'failed' | 'no_endpoint'
const webhookAttempts = registry.counter(
  'messaging_webhook_attempts_total',
  "Webhook delivery attempts by outcome: delivered (a 2xx), failed (anything else: retried, or given up after the last), no_endpoint (the key's registration was removed: given up without a request)",
  ['outcome'],
)
const webhookDuration = registry.histogram(
  'messaging_webhook_attempt_duration_seconds',
  'Time a webhook delivery attempt took (DNS, connection, answer), by outcome',
  ['outcome'],
  PROVIDER_BUCKETS,
)

export type Movement = 'charge' | 'refund' | 'topup' | 'adjustment' | 'settlement'
const movements = registry.counter(
  'messaging_balance_movements_total',
  'Ledger rows written by this process, by kind (charge, refund, topup, adjustment)',
  ['kind'],
)
const credits = registry.counter(
  'messaging_balance_credits_total',
  'Credits (CURRENCY units) moved by those rows, by kind and direction (in: to balances, out: from them)',
  ['kind', 'direction'],
)

// The pool: what postgres.js lets the process see without patching it (pool.ts).
export const poolTransactionsWaiting = registry.gauge(
  'messaging_db_transactions_waiting',
  'Transactions asked for and not started yet: waiting for a free connection of this process, or for BEGIN to answer',
)
export const poolTransactionsOpen = registry.gauge(
  'messaging_db_transactions_open',
  'Transactions of this process running now (each holds a connection)',
)
export const poolTransactionStart = registry.histogram(
  'messaging_db_transaction_start_seconds',
  'Time from asking for a transaction to its first statement: the wait for a free connection plus the BEGIN round trip',
  [],
  POOL_BUCKETS,
)
export const poolMaxConnections = registry.gauge(
  'messaging_db_pool_max_connections',
  'Connections this process may open to the database (DB_POOL_MAX; 1 for the embedded database)',
)

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/** One answered request; `route` is the matched route's template (undefined: no route matched). */
export function observeRequest(method: string, route: string | undefined, status: number, seconds: number): void {
  const m = METHODS.has(method) ? method : 'other'
  const r = route ?? 'unmatched'
  httpRequests.inc({ route: r, method: m, code: String(status) })
  httpDuration.observe({ route: r, method: m }, seconds)
}

/** The outcome of one hand-off attempt (see messaging_handoffs_total's help). */
export function handoffOutcome(result: HandoffResult): HandoffOutcome {
  if (result.ok) return 'accepted'
  if (result.throttle) return 'throttled'
  return result.errorCode === null ? 'failed' : 'refused'
}

/** One hand-off attempt of `provider`, as it came back from the provider. */
export function observeHandoff(provider: string, result: HandoffResult, seconds: number): void {
  const outcome = handoffOutcome(result)
  handoffs.inc({ provider, outcome })
  handoffDuration.observe({ provider, outcome }, seconds)
  if (!result.ok && result.throttle) throttles.inc({ provider, scope: result.throttle.scope })
}

export function observePaceWait(provider: string, seconds: number): void {
  paceWaits.observe({ provider }, seconds)
}

/** One webhook delivery attempt; `seconds` undefined when no request was made (no_endpoint). */
export function observeWebhookAttempt(outcome: WebhookOutcome, seconds?: number): void {
  webhookAttempts.inc({ outcome })
  if (seconds !== undefined) webhookDuration.observe({ outcome }, seconds)
}

/**
 * `rows` ledger rows of `kind` moving `amount` credits in all (signed as the ledger's: a charge is
 * negative), counted once their statement succeeded.
 */
export function balanceMoved(kind: Movement, rows: number, amount: number): void {
  if (rows <= 0) return
  movements.inc({ kind }, rows)
  if (amount !== 0) credits.inc({ kind, direction: amount > 0 ? 'in' : 'out' }, Math.abs(amount))
}

// Series that exist from the start (at 0), so a rate over them is defined before the first event.
for (const outcome of ['delivered', 'failed', 'no_endpoint'] as const) webhookAttempts.inc({ outcome }, 0)
for (const kind of ['charge', 'refund', 'topup', 'adjustment', 'settlement'] as const) movements.inc({ kind }, 0)
credits.inc({ kind: 'charge', direction: 'out' }, 0)
credits.inc({ kind: 'refund', direction: 'in' }, 0)
credits.inc({ kind: 'topup', direction: 'in' }, 0)
poolTransactionsWaiting.set({}, 0)
poolTransactionsOpen.set({}, 0)
