// The Twilio provider: one form-encoded POST to the Messages resource per message, plain fetch,
// no SDK. Every failure (error answer, redirect, answer without a SID, network error, timeout)
// comes back as `{ ok: false }`; nothing here throws, and no message ever carries the auth token.

import type { Config } from '../config'
import { HANDOFF_TIMEOUT_MS, type HandoffResult, type OutgoingMessage, type Provider } from './provider'

/** The path Twilio posts status reports to, under PUBLIC_BASE_URL. */
export const TWILIO_STATUS_PATH = '/provider/twilio/status'

// Twilio's answers are small; anything bigger is not an answer we can use, and reading it whole
// would let a misbehaving endpoint fill memory.
const MAX_ANSWER_BYTES = 64 * 1024
const MAX_ERROR_MESSAGE = 500
const SID = /^[A-Z]{2}[0-9a-fA-F]{32}$/
// error_code is an int column; a code outside it is not one we can store.
const MAX_ERROR_CODE = 2_147_483_647

export function createTwilio(config: Config, options: { timeoutMs?: number } = {}): Provider {
  const { accountSid, authToken, from, apiBase } = config.twilio
  const timeoutMs = options.timeoutMs ?? HANDOFF_TIMEOUT_MS
  const endpoint = `${apiBase}/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Messages.json`
  const credentials = Buffer.from(`${accountSid}:${authToken}`, 'utf8').toString('base64')
  const statusCallback = `${config.publicBaseUrl}${TWILIO_STATUS_PATH}`

  /** Defence in depth: whatever text ends up in errorMessage, the secret never does. */
  function clean(text: string): string {
    let out = text
    for (const secret of [authToken, credentials]) {
      if (secret) out = out.split(secret).join('[redacted]')
    }
    out = out.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim()
    return out.length > MAX_ERROR_MESSAGE ? `${out.slice(0, MAX_ERROR_MESSAGE)}…` : out
  }

  const fail = (errorCode: number | null, errorMessage: string): HandoffResult => ({
    ok: false,
    errorCode,
    errorMessage: clean(errorMessage),
  })

  return {
    name: 'twilio',
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      try {
        const form = new URLSearchParams({ To: `whatsapp:${message.to}`, From: from, Body: message.body })
        if (message.mediaUrl) form.set('MediaUrl', message.mediaUrl)
        form.set('StatusCallback', statusCallback)

        let response: Response
        let text: string | null
        // One signal bounds the whole exchange, headers and body alike.
        const signal = AbortSignal.timeout(timeoutMs)
        try {
          response = await fetch(endpoint, {
            method: 'POST',
            headers: {
              authorization: `Basic ${credentials}`,
              'content-type': 'application/x-www-form-urlencoded',
              accept: 'application/json',
            },
            body: form.toString(),
            redirect: 'manual',
            signal,
          })
          text = await readCapped(response)
        } catch (error) {
          if (signal.aborted || isTimeout(error)) return fail(null, `Twilio did not answer within ${timeoutMs} ms`)
          return fail(null, `could not reach Twilio${networkCode(error)}`)
        }

        const answer = parseJson(text)
        if (response.status < 200 || response.status > 299) {
          const code = answer?.code
          const errorCode = typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= MAX_ERROR_CODE ? code : null
          const errorMessage = typeof answer?.message === 'string' && answer.message.trim() ? answer.message : `HTTP ${response.status}`
          return fail(errorCode, errorMessage)
        }
        const sid = answer?.sid
        if (typeof sid !== 'string' || !SID.test(sid)) {
          return fail(null, `Twilio answered HTTP ${response.status} without a valid message SID`)
        }
        return { ok: true, sid }
      } catch {
        return fail(null, 'Twilio request failed')
      }
    },
  }
}

/** The body as text, or null when it is larger than MAX_ANSWER_BYTES (the rest is not read). */
async function readCapped(response: Response): Promise<string | null> {
  if (!response.body) return ''
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => {})
      return null
    }
    chunks.push(value)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

function parseJson(text: string | null): Record<string, unknown> | null {
  if (!text) return null
  try {
    const value: unknown = JSON.parse(text)
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')
}

/** A short, safe hint such as " (ConnectionRefused)"; never the error's free text. */
function networkCode(error: unknown): string {
  const code = error !== null && typeof error === 'object' ? (error as { code?: unknown }).code : undefined
  return typeof code === 'string' && /^[A-Za-z_]{1,40}$/.test(code) ? ` (${code})` : ''
}
