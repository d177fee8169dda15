// What the HTTP providers (Twilio, Meta) share: one bounded exchange with plain fetch, and clean error
// texts. Nothing here throws; nothing here ever lets a secret into an error message.

import type { HandoffResult } from './provider'
import { readCapped } from '../lib/stream'

// Provider answers are small; anything bigger is not an answer we can use, and reading it whole
// would let a misbehaving endpoint fill memory.
const MAX_ANSWER_BYTES = 64 * 1024
const MAX_ERROR_MESSAGE = 500
// error_code is an int column; a code outside it is not one we can store.
const MAX_ERROR_CODE = 2_147_483_647

export type Exchange =
  { ok: true; status: number; answer: Record<string, unknown> | null } | { ok: false; reason: 'timeout' | 'network'; hint: string }

/**
 * POSTs `body` and reads the answer as a JSON object (null when it is not one, or too big). One signal
 * bounds the whole exchange, headers and body alike. Redirects are not followed (a 3xx is an answer).
 */
export async function post(url: string, init: { headers: Record<string, string>; body: string; timeoutMs: number }): Promise<Exchange> {
  const signal = AbortSignal.timeout(init.timeoutMs)
  try {
    const response = await fetch(url, { method: 'POST', headers: init.headers, body: init.body, redirect: 'manual', signal })
    const bytes = await readCapped(response.body, MAX_ANSWER_BYTES)
    const text = bytes === null ? null : new TextDecoder().decode(bytes)
    return { ok: true, status: response.status, answer: parseObject(text) }
  } catch (error) {
    if (signal.aborted || isTimeout(error)) return { ok: false, reason: 'timeout', hint: '' }
    return { ok: false, reason: 'network', hint: networkCode(error) }
  }
}

/** A failed hand-off whose text has every secret replaced, control characters flattened and its length capped. */
export function failure(secrets: string[], errorCode: number | null, errorMessage: string): HandoffResult & { ok: false } {
  let out = errorMessage
  for (const secret of secrets) {
    if (secret) out = out.split(secret).join('[redacted]')
  }
  out = out.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim()
  return { ok: false, errorCode, errorMessage: out.length > MAX_ERROR_MESSAGE ? `${out.slice(0, MAX_ERROR_MESSAGE)}…` : out }
}

/** A provider's error code as we can store it: a non-negative integer within int, else null. */
export function errorCodeOf(value: unknown): number | null {
  const code = typeof value === 'string' && /^\d{1,10}$/.test(value.trim()) ? Number(value.trim()) : value
  return typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= MAX_ERROR_CODE ? code : null
}

/** A provider's error text as we store it, or null when there is none. */
export function errorTextOf(value: unknown): string | null {
  if (typeof value !== 'string') return null
  const text = value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim()
  if (!text) return null
  return text.length > MAX_ERROR_MESSAGE ? `${text.slice(0, MAX_ERROR_MESSAGE)}…` : text
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
