// Twilio's status callbacks: verify the request signature over every form field, map Twilio's status
// to ours, and apply it through the forward-only state machine (or park it while its SID is not yet
// stored: parked.ts). Verification comes first: an unsigned
// or badly signed request learns nothing (not even whether its body was well formed) and changes nothing.

import type { Deps } from '../../deps'
import { ApiError, badShape } from '../../http/errors'
import { TWILIO_STATUS_PATH } from '../../providers/twilio'
import { verifyTwilioSignature } from '../../providers/twilio-signature'
import type { StatusReport } from './machine'
import { eventsCommitted } from './notify'
import { receiveReport } from './parked'

// error_code is an int column; a code outside it is not one we can store.
const MAX_ERROR_CODE = 2_147_483_647
const MAX_ERROR_MESSAGE = 500

type TwilioCallback = {
  /** The body exactly as received (form-encoded). */
  rawBody: string
  contentType: string | null
  signature: string | null
}

/**
 * Our report for one of Twilio's `MessageStatus` values, or null when it changes nothing: `queued`,
 * `accepted`, `sending` (and `scheduled`, `canceled`, anything unknown) are not states of ours.
 */
function reportFromTwilio(sid: string, fields: URLSearchParams): StatusReport | null {
  const status = (fields.get('MessageStatus') ?? fields.get('SmsStatus') ?? '').trim().toLowerCase()
  switch (status) {
    case 'sent':
    case 'delivered':
    case 'read':
      return { sid, status }
    case 'failed':
    case 'undelivered':
      return {
        sid,
        status: 'failed',
        errorCode: errorCode(fields.get('ErrorCode')),
        errorMessage: errorMessage(fields.get('ErrorMessage')) ?? status,
      }
    default:
      return null
  }
}

function errorCode(raw: string | null): number | null {
  const text = raw?.trim() ?? ''
  if (!/^\d{1,10}$/.test(text)) return null
  const code = Number(text)
  return code <= MAX_ERROR_CODE ? code : null
}

function errorMessage(raw: string | null): string | null {
  const text = (raw ?? '').replace(/[\u0000-\u001f\u007f]+/g, ' ').trim()
  if (!text) return null
  return text.length > MAX_ERROR_MESSAGE ? `${text.slice(0, MAX_ERROR_MESSAGE)}…` : text
}

const isForm = (contentType: string | null) => contentType?.split(';')[0]!.trim().toLowerCase() === 'application/x-www-form-urlencoded'

export async function handleTwilioStatus(
  deps: Pick<Deps, 'sql' | 'config' | 'wake'>,
  request: TwilioCallback,
): Promise<{ changed: boolean }> {
  const { config } = deps
  // Without an auth token there is nothing to verify against, so the endpoint does not exist. With
  // one, it answers whatever PROVIDER says: after a switch away from Twilio, the reports for messages
  // Twilio still holds keep arriving and are still signed.
  if (!config.twilio.authToken) throw new ApiError('NOT_FOUND', `no route for POST ${TWILIO_STATUS_PATH}`)

  // Twilio signs the URL it was told to call (StatusCallback), which is built from PUBLIC_BASE_URL,
  // not whatever Host or scheme the request arrived with behind a proxy.
  const url = `${config.publicBaseUrl}${TWILIO_STATUS_PATH}`
  // A body that is not form-encoded has no fields Twilio could have signed.
  const fields = isForm(request.contentType) ? new URLSearchParams(request.rawBody) : new URLSearchParams()
  if (!verifyTwilioSignature(config.twilio.authToken, url, fields, request.signature)) {
    throw new ApiError('FORBIDDEN', request.signature ? 'X-Twilio-Signature does not match' : 'X-Twilio-Signature header is missing')
  }

  const sid = (fields.get('MessageSid') ?? fields.get('SmsSid') ?? '').trim()
  if (!sid) throw badShape('MessageSid: is required')
  if (!fields.has('MessageStatus') && !fields.has('SmsStatus')) throw badShape('MessageStatus: is required')

  const report = reportFromTwilio(sid, fields)
  if (!report) return { changed: false }
  const outcome = await receiveReport(deps.sql, config.timezone, report)
  if (outcome.events > 0) eventsCommitted(deps)
  // The send may have stored the SID between the check and this commit: the worker looks at once.
  if (outcome.parked) deps.wake('parked-reports')
  return { changed: outcome.changed }
}
