// Sending through Twilio: one form-encoded POST to the Messages resource per message, plain fetch, no
// SDK. Every failure (error answer, redirect, answer without a SID, network error, timeout) comes back
// as `{ ok: false }` with Twilio's error code when it gave one; a throttling answer (HTTP 429, 20429,
// 63018) carries `throttle`, with its Retry-After. Nothing here throws, and no message ever carries
// the auth token.

import { errorCodeOf, failure, post, THROTTLING_CODES, throttleOf } from '../http'
import type { HandoffResult, OutgoingMessage, Provider, Throttle } from '../provider'
import type { TwilioSettings } from './settings'
import { openTwilioMedia } from './media'

/** The path Twilio posts status reports to, under PUBLIC_BASE_URL. */
export const TWILIO_STATUS_PATH = '/provider/twilio/status'

const SID = /^[A-Z]{2}[0-9a-fA-F]{32}$/

export function createTwilio(settings: TwilioSettings, context: { publicBaseUrl: string; timeoutMs: number }): Provider {
  const { accountSid, authToken, from, apiBase } = settings
  const { timeoutMs } = context
  const endpoint = `${apiBase}/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Messages.json`
  const credentials = Buffer.from(`${accountSid}:${authToken}`, 'utf8').toString('base64')
  const statusCallback = `${context.publicBaseUrl}${TWILIO_STATUS_PATH}`
  const fail = (errorCode: number | null, errorMessage: string, throttle: Throttle | null = null) =>
    failure([authToken, credentials], errorCode, errorMessage, throttle)

  /** The form fields of one message: a free-form body (and media), or a Content template with its variables. */
  function formOf(message: OutgoingMessage): URLSearchParams {
    // A stored sender may send through a Messaging Service (MG…), which picks the number itself.
    const form = new URLSearchParams({ To: `whatsapp:${message.to}` })
    form.set(from.startsWith('MG') ? 'MessagingServiceSid' : 'From', from)
    if (message.template) {
      form.set('ContentSid', message.template.ref)
      form.set('ContentVariables', JSON.stringify(Object.fromEntries(message.template.variables.map((v, i) => [String(i + 1), v]))))
    } else {
      form.set('Body', message.body)
      if (message.mediaUrl) form.set('MediaUrl', message.mediaUrl)
    }
    form.set('StatusCallback', statusCallback)
    return form
  }

  return {
    name: 'twilio',
    openMedia: (ref, signal) => openTwilioMedia(settings, ref, signal),
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      try {
        const exchange = await post(endpoint, {
          headers: {
            authorization: `Basic ${credentials}`,
            'content-type': 'application/x-www-form-urlencoded',
            accept: 'application/json',
          },
          body: formOf(message).toString(),
          timeoutMs,
        })
        if (!exchange.ok) {
          return exchange.reason === 'timeout'
            ? fail(null, `Twilio did not answer within ${timeoutMs} ms`)
            : fail(null, `could not reach Twilio${exchange.hint}`)
        }
        const { status, answer, headers } = exchange
        if (status < 200 || status > 299) {
          // {"code": 20429, "message": "Too Many Requests", "more_info": "https://www.twilio.com/docs/errors/20429", "status": 429}
          const errorMessage = typeof answer?.message === 'string' && answer.message.trim() ? answer.message : `HTTP ${status}`
          const code = typeof answer?.code === 'number' ? errorCodeOf(answer.code) : null
          return fail(code, errorMessage, throttleOf(THROTTLING_CODES.twilio, status, code, headers))
        }
        const sid = answer?.sid
        if (typeof sid !== 'string' || !SID.test(sid)) return fail(null, `Twilio answered HTTP ${status} without a valid message SID`)
        return { ok: true, sid }
      } catch {
        return fail(null, 'Twilio request failed')
      }
    },
  }
}
