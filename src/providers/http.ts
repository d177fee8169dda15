// What the HTTP providers (Twilio, Meta) share: one bounded exchange with plain fetch, clean error
// texts, and which refusals are throttling ("not now", retried) rather than failures. Nothing here
// throws; nothing here ever lets a secret into an error message: every text a provider gave (or that
// quotes one) goes through providerText, the one redaction, before it is kept, logged or shown.

import type { Clock } from '../lib/clock'
import type { HandoffResult, MediaOpened, Throttle } from './provider'
import { readCapped } from '../lib/stream'

// Provider answers are small; anything bigger is not an answer we can use, and reading it whole
// would let a misbehaving endpoint fill memory.
const MAX_ANSWER_BYTES = 64 * 1024
const MAX_ERROR_MESSAGE = 500
// error_code is an int column; a code outside it is not one we can store.
const MAX_ERROR_CODE = 2_147_483_647

export type Exchange =
  | { ok: true; status: number; headers: Headers; answer: Record<string, unknown> | null }
  | { ok: false; reason: 'timeout' | 'network'; hint: string }

/** How long an exchange may take, on the clock the service runs on (a test clock's time passes only when the test moves it). */
export type Deadline = { timeoutMs: number; clock: Pick<Clock, 'timeoutSignal'> }

/**
 * POSTs `body` and reads the answer as a JSON object (null when it is not one, or too big). One signal
 * bounds the whole exchange, headers and body alike. Redirects are not followed (a 3xx is an answer).
 */
export async function post(
  url: string,
  // FormData: a multipart upload (Meta's media), its Content-Type with the boundary set by fetch.
  init: { headers: Record<string, string>; body: string | FormData; maxBytes?: number } & Deadline,
): Promise<Exchange> {
  return exchange(url, 'POST', init)
}

/**
 * GETs `url` (a sender's check), as post does. `maxBytes`: a bigger cap than an answer's 64 KiB, for a
 * listing (a page of templates with their components).
 */
export async function get(url: string, init: { headers: Record<string, string>; maxBytes?: number } & Deadline): Promise<Exchange> {
  return exchange(url, 'GET', init)
}

/** DELETEs `url` (a template at its provider), as post does. */
export async function del(url: string, init: { headers: Record<string, string> } & Deadline): Promise<Exchange> {
  return exchange(url, 'DELETE', init)
}

async function exchange(
  url: string,
  method: 'GET' | 'POST' | 'DELETE',
  init: { headers: Record<string, string>; body?: string | FormData; maxBytes?: number } & Deadline,
): Promise<Exchange> {
  const signal = init.clock.timeoutSignal(init.timeoutMs)
  try {
    const response = await fetch(url, { method, headers: init.headers, body: init.body, redirect: 'manual', signal })
    const bytes = await readCapped(response.body, init.maxBytes ?? MAX_ANSWER_BYTES)
    const text = bytes === null ? null : new TextDecoder().decode(bytes)
    return { ok: true, status: response.status, headers: response.headers, answer: parseObject(text) }
  } catch (error) {
    if (signal.aborted || isTimeout(error)) return { ok: false, reason: 'timeout', hint: '' }
    return { ok: false, reason: 'network', hint: networkCode(error) }
  }
}

/**
 * A failed hand-off whose text went through `providerText` (every credential out, control characters
 * flattened, length capped); with `throttle` (see throttleOf) it is "not now" rather than a failure, its
 * code and text kept for the day its validity runs out.
 */
export function failure(
  secrets: readonly string[],
  errorCode: number | null,
  errorMessage: string,
  throttle: Throttle | null = null,
): HandoffResult & { ok: false } {
  const text = providerText(errorMessage, secrets) ?? ''
  return throttle ? { ok: false, errorCode, errorMessage: text, throttle } : { ok: false, errorCode, errorMessage: text }
}

const REDACTED = '[redacted]'

/**
 * What looks like a credential whoever's it is: the one redaction needs no list for the texts that
 * arrive without the secrets at hand (a status callback's error text) and catches a credential in a
 * form the list does not hold. Each keeps the label and drops the value.
 */
const CREDENTIAL_SHAPES: [RegExp, (match: string, ...groups: string[]) => string][] = [
  // An Authorization header echoed (as text, a query or JSON): its value, scheme kept.
  [/(\bauthorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic)\s+)?)(?!(?:bearer|basic)\s)[\w.~+/=%-]+/gi, (_, head) => `${head}${REDACTED}`],
  // A bearer or basic credential anywhere (16 characters or more: "Basic authentication" is words).
  [/\b(bearer|basic)(\s+)[\w.~+/=%-]{16,}/gi, (_, scheme, space) => `${scheme}${space}${REDACTED}`],
  // Named credentials in a query string, a form or JSON: access_token=…, "app_secret": "…".
  [
    /\b(access_token|input_token|fb_exchange_token|client_secret|app_secret|appsecret_proof|auth_token|authtoken|verify_token)(["']?\s*[=:]\s*["']?)[\w.~+/=%-]+/gi,
    (_, name, between) => `${name}${between}${REDACTED}`,
  ],
  // Twilio's AccountSid:AuthToken pair (Basic auth written out, or in a URL before its @).
  [/\b(AC[0-9a-fA-F]{32}):[\w.~+=%-]+/g, (_, sid) => `${sid}:${REDACTED}`],
  // A Meta access token: they start with EAA and run on for a hundred characters or more.
  [/\bEAA[A-Za-z0-9]{20,}/g, () => REDACTED],
]

/**
 * `text` with the credentials a provider was called with taken out: each of `secrets` as it is and
 * URL-encoded (the longest first, so a token inside a longer credential goes with it), then anything
 * shaped like a credential (CREDENTIAL_SHAPES). The one redaction of every provider text the service
 * keeps, logs or shows: hand-off refusals, status callbacks' error texts, sender checks, media errors.
 */
function redact(text: string, secrets: readonly string[] = []): string {
  const forms = new Set<string>()
  for (const secret of secrets) {
    if (!secret) continue
    forms.add(secret)
    forms.add(encodeURIComponent(secret))
  }
  let out = text
  for (const form of [...forms].sort((a, b) => b.length - a.length)) out = out.split(form).join(REDACTED)
  for (const [shape, replace] of CREDENTIAL_SHAPES) out = out.replace(shape, replace)
  return out
}

/**
 * A provider's text as the service keeps or shows it: control characters flattened, every credential
 * out (`redact`, before the cap, so a cut never leaves half a secret), at most 500 characters; null
 * when there is no text.
 */
export function providerText(value: unknown, secrets: readonly string[] = []): string | null {
  if (typeof value !== 'string') return null
  const text = redact(value.replace(/[\u0000-\u001f\u007f]+/g, ' '), secrets).trim()
  if (!text) return null
  return text.length > MAX_ERROR_MESSAGE ? `${text.slice(0, MAX_ERROR_MESSAGE)}…` : text
}

/**
 * The error codes that mean "too fast, try again later", by provider, with whose rate was exceeded.
 * - Twilio 20429 "Too many requests": the REST API's concurrency; "never processed and always safe to
 *   retry" (https://www.twilio.com/docs/api/errors/20429). 63018 "Rate limit exceeded for Channel": the
 *   WhatsApp sender's rate (https://www.twilio.com/docs/api/errors/63018).
 * - Meta 130429 "Rate limit hit": the business number's throughput (80 messages/s by default); 131056
 *   "(Business Account, Consumer Account) pair rate limit hit": too many messages to one recipient in a
 *   short time; 80007 "Rate limit issues": the WhatsApp Business Account's rate limit
 *   (https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes).
 * An HTTP 429 is a throttle of the sender whatever its code says, and so is a 503 with a Retry-After
 * ("unavailable, come back then": RFC 9110 §15.6.4).
 */
export const THROTTLING_CODES = {
  twilio: new Map<number, Throttle['scope']>([
    [20429, 'sender'],
    [63018, 'sender'],
  ]),
  meta: new Map<number, Throttle['scope']>([
    [130429, 'sender'],
    [131056, 'recipient'],
    [80007, 'account'],
  ]),
} as const

/** The longest Retry-After honoured: a provider asking for more is asked again after this long. */
export const MAX_RETRY_AFTER_MS = 3_600_000

/**
 * Whether a refusal is a throttle, and for how long: a code of `codes`; else HTTP 429, or a 503 that
 * says when to come back (Retry-After), both the sender's. null: a plain failure.
 */
export function throttleOf(
  codes: ReadonlyMap<number, Throttle['scope']>,
  status: number,
  errorCode: number | null,
  headers: Headers,
  now: number,
): Throttle | null {
  const after = retryAfterMs(headers.get('retry-after'), now)
  const coded = errorCode !== null ? codes.get(errorCode) : undefined
  const scope = coded ?? (status === 429 || (status === 503 && after !== null) ? 'sender' : null)
  return scope ? { scope, retryAfterMs: after } : null
}

/**
 * A Retry-After header in milliseconds: delta-seconds ("120", fractions tolerated) or an HTTP date
 * (RFC 9110 §10.2.3); a date in the past is 0; capped at MAX_RETRY_AFTER_MS. null when absent or unreadable.
 */
export function retryAfterMs(value: string | null, now: number): number | null {
  const raw = value?.trim()
  if (!raw) return null
  let ms: number
  if (/^\d+(\.\d+)?$/.test(raw)) ms = Math.ceil(Number(raw) * 1000)
  else {
    // An HTTP date names its weekday ("Wed, 21 Oct 2015 07:28:00 GMT"); a bare number-ish text is not one.
    const at = /^[A-Za-z]{3,9},? /.test(raw) ? Date.parse(raw) : NaN
    if (Number.isNaN(at)) return null
    ms = at - now
  }
  return Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS)
}

/** A provider's error code as we can store it: a non-negative integer within int, else null. */
export function errorCodeOf(value: unknown): number | null {
  const code = typeof value === 'string' && /^\d{1,10}$/.test(value.trim()) ? Number(value.trim()) : value
  return typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= MAX_ERROR_CODE ? code : null
}

export function parseObject(text: string | null): Record<string, unknown> | null {
  if (!text) return null
  try {
    const value: unknown = JSON.parse(text)
    return isObject(value) ? value : null
  } catch {
    return null
  }
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')
}

/** A short, safe hint such as " (ConnectionRefused)"; never the error's free text. */
function networkCode(error: unknown): string {
  const code = error !== null && typeof error === 'object' ? (error as { code?: unknown }).code : undefined
  return typeof code === 'string' && /^[A-Za-z_]{1,40}$/.test(code) ? ` (${code})` : ''
}

/** How many redirects a medium's download follows (Twilio answers its MediaUrl with one, to its storage). */
const MAX_MEDIA_REDIRECTS = 5

/** Whether an HTTP status (or a failure to get one) is worth trying again later: 5xx, 408, 429. */
export const retryableStatus = (status: number) => status >= 500 || status === 408 || status === 429

/**
 * GETs an inbound medium at `url`, following redirects by hand: `headers` (the credentials) go only to
 * `url`'s own origin, never to a host it redirects to (a storage host's signed URL needs none). The
 * answer is the response with its body unread (the caller reads it with its cap), or why not;
 * `provider` names who refused in the reason. Nothing here throws; no reason holds a URL or a secret.
 */
export async function openMediaUrl(
  provider: string,
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<MediaOpened> {
  let at: URL
  try {
    at = new URL(url)
  } catch {
    return { ok: false, retry: false, reason: `${provider} gave a media URL that is not a URL` }
  }
  const origin = at.origin
  try {
    for (let hop = 0; hop <= MAX_MEDIA_REDIRECTS; hop++) {
      if (at.protocol !== 'https:' && at.protocol !== 'http:') {
        return { ok: false, retry: false, reason: `${provider}'s media URL is not http(s)` }
      }
      const response = await fetch(at, {
        headers: at.origin === origin ? headers : {},
        redirect: 'manual',
        signal,
      })
      const location = response.headers.get('location')
      if (response.status >= 300 && response.status < 400 && location) {
        await response.body?.cancel().catch(() => {})
        at = new URL(location, at)
        continue
      }
      if (response.status >= 200 && response.status < 300) {
        return { ok: true, response, declaredType: null, declaredSize: null, sha256: null }
      }
      await response.body?.cancel().catch(() => {})
      return {
        ok: false,
        retry: retryableStatus(response.status),
        reason: `${provider} answered the media download with HTTP ${response.status}`,
      }
    }
    return { ok: false, retry: false, reason: `${provider}'s media URL redirected more than ${MAX_MEDIA_REDIRECTS} times` }
  } catch (error) {
    if (signal.aborted || isTimeout(error)) return { ok: false, retry: true, reason: `${provider}'s media download timed out` }
    return { ok: false, retry: true, reason: `could not reach ${provider} for the media${networkCode(error)}` }
  }
}
