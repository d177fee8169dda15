// Twilio's status callbacks (POST /provider/twilio/status): verify the request signature over every
// form field, and map Twilio's status to ours. Verification comes first: an unsigned or badly signed
// request learns nothing (not even whether its body was well formed) and changes nothing.

import { ApiError, badShape } from '../../http/errors'
import { MAX_CALLBACK_FORM_FIELDS } from '../../http/body'
import { formBoundExceeded } from '../../lib/bounds'
import { errorCodeOf, providerText } from '../http'
import type { Callback, CallbackAnswer, CallbackContext, CallbackRequest, CallbackSender, SenderRef, StatusReport } from '../provider'
import { twilioSecrets, type TwilioSettings } from './settings'
import { TWILIO_STATUS_PATH } from './send'
import { verifyTwilioSignature } from './signature'

/**
 * Our report for one of Twilio's `MessageStatus` values, or null when it changes nothing: `queued`,
 * `accepted`, `sending` (and `scheduled`, `canceled`, anything unknown) are not states of ours. Its
 * error text is kept without the auth tokens that may have signed it (`tokens`).
 */
function reportFromTwilio(sid: string, fields: URLSearchParams, tokens: readonly string[]): StatusReport | null {
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
        errorCode: errorCodeOf(fields.get('ErrorCode') ?? undefined),
        errorMessage: providerText(fields.get('ErrorMessage'), tokens) ?? status,
      }
    default:
      return null
  }
}

export const isForm = (contentType: string | null) =>
  contentType?.split(';')[0]!.trim().toLowerCase() === 'application/x-www-form-urlencoded'

/** Who signed a Twilio request: stored senders (all of one Twilio account), and whether the default number's token did. */
export type TwilioSigner = { senders: CallbackSender<TwilioSettings>[]; defaultNumber: boolean }

/**
 * The request's form fields (none when it is not form-encoded: no field Twilio could have signed). The
 * signature covers every field, so they are parsed before it is checked: more than
 * MAX_CALLBACK_FORM_FIELDS is 400 first (Twilio sends a few dozen), so no body builds more.
 */
export function formFieldsOf(request: CallbackRequest): URLSearchParams {
  if (!isForm(request.headers.get('content-type'))) return new URLSearchParams()
  const exceeded = formBoundExceeded(request.body, MAX_CALLBACK_FORM_FIELDS)
  if (exceeded) throw badShape(`body: ${exceeded}`)
  return new URLSearchParams(request.body)
}

/**
 * Who signed a request to `url` (PUBLIC_BASE_URL + the path Twilio was told to call) naming
 * `AccountSid`: the stored senders of that Twilio account whose auth token verifies it (each account or
 * subaccount signs with its own token, for every number it owns), and the deployment's default number
 * when the environment's token verifies it, unless the account is a stored sender's and not the
 * environment's own (another sender's token never verifies it). AccountSid only chooses which tokens to
 * try: nothing else of the request is used before one verifies it. 403 when none does.
 */
export async function signerOf(
  request: CallbackRequest,
  url: string,
  fields: URLSearchParams,
  context: CallbackContext<TwilioSettings>,
): Promise<TwilioSigner> {
  const accountSid = fields.get('AccountSid')
  const signature = request.headers.get('x-twilio-signature')
  const stored = accountSid ? await context.senders(accountSid) : []
  const environment = context.settings
  const environmentMay = environment.authToken !== '' && (stored.length === 0 || environment.accountSid === accountSid)
  const verifies = (token: string) => token !== '' && verifyTwilioSignature(token, url, fields, signature)
  const signer = {
    senders: stored.filter((s) => verifies(s.settings.authToken)),
    defaultNumber: environmentMay && verifies(environment.authToken),
  }
  if (signer.senders.length === 0 && !signer.defaultNumber) {
    throw new ApiError('FORBIDDEN', signature ? 'X-Twilio-Signature does not match' : 'X-Twilio-Signature header is missing')
  }
  return signer
}

/** The secrets of the senders that signed: none may stay in a text of the request that is kept. */
const signerSecrets = (signer: TwilioSigner, environment: TwilioSettings): string[] => [
  ...signer.senders.flatMap((s) => twilioSecrets(s.settings)),
  ...(signer.defaultNumber ? twilioSecrets(environment) : []),
]

/** The senders a signer speaks for, as a report names them (null: the default number). */
export const sendersOf = (signer: TwilioSigner): SenderRef[] => [
  ...signer.senders.map((s) => s.id),
  ...(signer.defaultNumber ? [null] : []),
]

async function receive(request: CallbackRequest, context: CallbackContext<TwilioSettings>): Promise<CallbackAnswer> {
  // Without an auth token (the environment's or a stored sender's) there is nothing to verify against,
  // so the endpoint does not exist. With one, it answers whatever PROVIDER says: after a switch away
  // from Twilio, the reports for messages Twilio still holds keep arriving and are still signed.
  if (!context.settings.authToken && (await context.senders(null)).length === 0) {
    throw new ApiError('NOT_FOUND', `no route for POST ${TWILIO_STATUS_PATH}`)
  }

  // Twilio signs the URL it was told to call (StatusCallback), which is built from PUBLIC_BASE_URL,
  // not whatever Host or scheme the request arrived with behind a proxy.
  const url = `${context.publicBaseUrl}${TWILIO_STATUS_PATH}`
  const fields = formFieldsOf(request)
  const signer = await signerOf(request, url, fields, context)

  const sid = (fields.get('MessageSid') ?? fields.get('SmsSid') ?? '').trim()
  if (!sid) throw badShape('MessageSid: is required')
  if (!fields.has('MessageStatus') && !fields.has('SmsStatus')) throw badShape('MessageStatus: is required')
  // Its error text is kept without the secrets of the senders that signed it.
  const report = reportFromTwilio(sid, fields, signerSecrets(signer, context.settings))
  // Applied only to a message one of the signer's senders sent (modules/status/machine.ts).
  return { reports: report ? [{ ...report, senders: sendersOf(signer) }] : [], inbound: [] }
}

const FIELDS = {
  MessageSid: { type: 'string', description: 'The message SID (`message_sid`)', example: 'SM0123456789abcdef0123456789abcdef' },
  MessageStatus: {
    type: 'string',
    description:
      '`sent`, `delivered`, `read` are applied as they are; `failed` and `undelivered` become `failed`; ' +
      '`queued`, `accepted`, `sending` and anything unknown change nothing.',
    example: 'delivered',
  },
  ErrorCode: { type: 'string', description: "Twilio's numeric error code; stored as `error_code` on failure", example: '30008' },
  ErrorMessage: { type: 'string', description: 'Stored as `error_message` on failure (default: the reported status)' },
} as const

export const twilioStatusCallback: Callback<TwilioSettings> = {
  method: 'POST',
  path: 'status',
  handle: (request, context) => receive(request, context),
  errors: [400, 403, 404],
  detail: {
    summary: "Twilio's message status callback",
    description:
      'Called by Twilio (the `StatusCallback` of every message sent through Twilio: with `PROVIDER=twilio`, or from a stored ' +
      'Twilio sender; one URL for every sender), not by API clients. ' +
      'No API key: the `X-Twilio-Signature` header is verified with the auth token of the sender the `AccountSid` field names ' +
      '(a stored sender of that account, else `TWILIO_AUTH_TOKEN`) over `PUBLIC_BASE_URL` + ' +
      '`/provider/twilio/status` and every form field; a missing or wrong signature gets 403 `FORBIDDEN` and changes ' +
      'nothing. A report changes only a message sent through a sender whose token verified it (the stored senders of that ' +
      "Twilio account, or the deployment's number for `TWILIO_AUTH_TOKEN`): one naming another sender's message changes nothing " +
      '(200, `changed: false`, logged as refused). A valid report goes through the forward-only state machine: a repeat or a backwards move changes ' +
      'nothing and still gets 200. A report for a SID not stored yet (it can beat the recording of the send) gets 200 ' +
      'with `changed: false` and is kept for up to an hour, then applied in order once the SID is stored. ' +
      'Each accepted change emits one `message.status` event. The endpoint ' +
      'answers whenever `TWILIO_AUTH_TOKEN` is set or a Twilio sender is stored (so reports keep arriving after switching ' +
      '`PROVIDER` away from Twilio); without either, 404 `NOT_FOUND`.',
    parameters: [
      {
        name: 'X-Twilio-Signature',
        in: 'header',
        required: true,
        schema: { type: 'string' },
        description: 'Base64 HMAC-SHA1 by Twilio',
      },
    ],
    requestBody: {
      required: true,
      content: {
        'application/x-www-form-urlencoded': {
          schema: {
            type: 'object',
            required: ['MessageSid', 'MessageStatus'],
            properties: FIELDS,
            additionalProperties: { type: 'string' },
          },
        },
      },
    },
  },
}
