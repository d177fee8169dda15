// The webhook HTTP sender: one attempt, without SQL. Resolve the host with the same resolver and
// address rule as registration (lib/address.ts), refuse a non-public address (unless
// WEBHOOK_ALLOW_PRIVATE), connect to exactly the address that was checked (SNI and certificate checks
// still use the hostname), POST the signed payload and classify the answer. The resolver is asked
// once per attempt and the connection goes to its checked answer, so a DNS answer that changes
// between the check and the connection (rebinding) cannot reach an internal address.

import { createHmac } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { rootCertificates } from 'node:tls'
import { resolveWebhookHost, webhookSchemeProblem } from '../../lib/address'
import { systemClock, type Clock } from '../../lib/clock'

/** The receiver must answer within this (spec section 6): connection, request and response headers. */
const DELIVERY_TIMEOUT_MS = 5_000

const USER_AGENT = 'messaging-api-webhooks/1.0'

type DeliveryOptions = {
  allowPrivate: boolean
  /** Trusted CAs; undefined uses the runtime's default store. */
  ca: string[] | undefined
  timeoutMs?: number
  /** The signature's timestamp and the time limit run on it; the system's by default. */
  clock?: Clock
}

export type AttemptResult = {
  ok: boolean
  statusCode: number | null
  latencyMs: number
  /** Short, for the attempt log: never the body, headers or the secret. Null on success. */
  error: string | null
  /** The Retry-After of a 429 or 503, in seconds from now. */
  retryAfterSeconds: number | null
}

const caBundles = new Map<string, string[]>()

/**
 * The CA list for deliveries: the system roots plus WEBHOOK_CA_FILE's PEM bundle, read once per file.
 * Undefined without a file (the default store). Throws a one-line error naming the variable.
 */
export function webhookCa(file: string | undefined): string[] | undefined {
  if (!file) return undefined
  let bundle = caBundles.get(file)
  if (!bundle) {
    let pem: string
    try {
      pem = readFileSync(file, 'utf8')
    } catch {
      throw new Error(`WEBHOOK_CA_FILE: cannot read "${file}"`)
    }
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`WEBHOOK_CA_FILE: "${file}" holds no PEM certificate`)
    bundle = [...rootCertificates, pem]
    caBundles.set(file, bundle)
  }
  return bundle
}

/** Standard Webhooks: `v1,` + base64 HMAC-SHA256 over `id.timestamp.body`, keyed with the secret's bytes. */
export function signPayload(secret: string, webhookId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64')
  return `v1,${createHmac('sha256', key).update(`${webhookId}.${timestamp}.${body}`).digest('base64')}`
}

/** Retry-After as seconds from `now`: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null) return null
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text)
  // An HTTP date names its weekday or month; this keeps "-5" or "1.5" from parsing as a year.
  const at = /[a-z]{3}/i.test(text) ? Date.parse(text) : Number.NaN
  if (Number.isNaN(at)) return null
  return Math.max(0, Math.ceil((at - now) / 1000))
}

// Errors where no connection was made (so no request reached anyone): the next address may be tried.
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ConnectionRefused'])

function describeError(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; code?: string }
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `timeout: no answer within ${timeoutMs} ms`
  const code = typeof e?.code === 'string' && e.code ? e.code : (e?.name ?? 'unknown error')
  if (code === 'ECONNREFUSED' || code === 'ConnectionRefused') return 'connection refused'
  if (code === 'ECONNRESET') return 'connection reset'
  if (/CERT|TLS|SSL|SELF_SIGNED|VERIFY/i.test(code)) return `TLS: ${code}`.slice(0, 200)
  return `connection failed: ${code}`.slice(0, 200)
}

/** Reads and discards the answer's body (so the connection can be reused), bounded by the request's signal. */
async function discardBody(response: Response): Promise<void> {
  try {
    const reader = response.body?.getReader()
    if (!reader) return
    for (;;) if ((await reader.read()).done) return
  } catch {
    // the answer is already judged by its status; a body that breaks off changes nothing
  }
}

/** One POST of `payload` to `url`. Never throws: every failure is a result. */
export async function attemptDelivery(
  target: { url: string; secret: string },
  event: { webhookId: string; payload: string },
  options: DeliveryOptions,
): Promise<AttemptResult> {
  // The attempt's latency is recorded (the delivery log shows it): measured on the clock its time limit runs on.
  const clock = options.clock ?? systemClock()
  const started = clock.monotonic()
  const elapsed = () => Math.round(clock.monotonic() - started)
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS
  const fail = (error: string, statusCode: number | null = null, retryAfterSeconds: number | null = null): AttemptResult => ({
    ok: false,
    statusCode,
    latencyMs: elapsed(),
    error,
    retryAfterSeconds,
  })

  let url: URL
  try {
    url = new URL(target.url)
  } catch {
    return fail('registered URL does not parse')
  }
  // The registration's rule again: WEBHOOK_ALLOW_PRIVATE may have been turned off since.
  if (webhookSchemeProblem(url, options.allowPrivate)) return fail('registered URL is not https')

  const resolved = await resolveWebhookHost(url.hostname, options.allowPrivate)
  if (!resolved.ok) return fail(resolved.detail)

  const timestamp = Math.floor(clock.now().getTime() / 1000)
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'webhook-id': event.webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signPayload(target.secret, event.webhookId, timestamp, event.payload),
  }
  const signal = clock.timeoutSignal(timeoutMs)
  const hostname = url.hostname.replace(/\.$/, '')

  let response: Response | undefined
  for (let i = 0; i < resolved.addresses.length; i++) {
    const address = resolved.addresses[i]!
    let requestUrl = url.href
    let tls: { ca?: string[]; serverName?: string } | undefined = options.ca ? { ca: options.ca } : undefined
    if (!resolved.literal) {
      // Connect to the checked address; Host, SNI and the certificate check still name the host.
      const direct = new URL(url.href)
      direct.hostname = address.includes(':') ? `[${address}]` : address
      requestUrl = direct.href
      headers.host = url.host
      tls = { ...tls, serverName: hostname }
    }
    try {
      response = await fetch(requestUrl, { method: 'POST', headers, body: event.payload, redirect: 'manual', signal, tls })
      break
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code && NOT_CONNECTED.has(code) && i < resolved.addresses.length - 1 && !signal.aborted) continue
      return fail(describeError(error, timeoutMs))
    }
  }
  if (!response) return fail('no address to connect to')

  const latencyMs = elapsed()
  await discardBody(response)
  const status = response.status
  if (status >= 200 && status < 300) return { ok: true, statusCode: status, latencyMs, error: null, retryAfterSeconds: null }
  const result = (error: string, retryAfterSeconds: number | null = null): AttemptResult => ({
    ok: false,
    statusCode: status,
    latencyMs,
    error,
    retryAfterSeconds,
  })
  if (status >= 300 && status < 400) return result(`redirect (HTTP ${status}) not followed`)
  // RFC 9110 gives Retry-After a meaning on 429 (too many requests) and 503 (unavailable for a while).
  if (status === 429 || status === 503) {
    const retryAfter = parseRetryAfter(response.headers.get('retry-after'), clock.now().getTime())
    return result(retryAfter === null ? `HTTP ${status}` : `HTTP ${status}, Retry-After ${retryAfter} s`, retryAfter)
  }
  return result(`HTTP ${status}`)
}
