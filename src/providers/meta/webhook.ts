// Meta's webhooks at /provider/meta/webhook: the subscription handshake (GET) and the status
// notifications (POST). A notification is signed by Meta in X-Hub-Signature-256 (`sha256=` + the hex
// HMAC-SHA256 of the raw body, keyed with the app secret); it is verified, in constant time, before the
// body is even parsed, so a request without a valid signature learns nothing and changes nothing.
// One notification can carry many entries, each with many changes, each with many statuses: every
// status of every `messages` change becomes a report, and the route applies them all in one
// transaction; every inbound message (`messages[]`, inbound.ts) is handed to modules/inbound, which
// stores it once. Changes of other fields are acknowledged and ignored.

import { ApiError, badShape } from '../../http/errors'
import { errorCodeOf, isObject, providerText } from '../http'
import type { Callback, CallbackAnswer, CallbackContext, CallbackRequest, StatusReport } from '../provider'
import { consentOf, inboundOf } from './inbound'
import type { MetaSettings } from './settings'

export const META_WEBHOOK_PATH = '/provider/meta/webhook'

/** The X-Hub-Signature-256 value Meta sends for `body`. */
export function metaSignature(appSecret: string, body: Uint8Array | string): string {
  return `sha256=${hmac(appSecret, body).toString('hex')}`
}

// Bun's built-in hasher, not node:crypto: the configuration lists the providers, and --help stays light.
const hmac = (key: string, data: Uint8Array | string) => Buffer.from(new Bun.CryptoHasher('sha256', key).update(data).digest())

/** Whether `header` is the signature of `body`. Constant-time: the digests compared have a fixed length. */
export function verifyMetaSignature(appSecret: string, body: Uint8Array | string, header: string | null): boolean {
  if (!appSecret || !header) return false
  const match = /^sha256=([0-9a-f]{64})$/i.exec(header.trim())
  if (!match) return false
  return crypto.timingSafeEqual(Buffer.from(match[1]!, 'hex'), hmac(appSecret, body))
}

/** Constant-time equality of two texts (the verify token). */
function sameText(a: string, b: string): boolean {
  return crypto.timingSafeEqual(hmac('compare', a), hmac('compare', b))
}

/** Our report for one of Meta's statuses, or null when it is not one of ours (`deleted`, `warning`, malformed). */
function reportOf(status: unknown): StatusReport | null {
  if (!isObject(status) || typeof status.id !== 'string' || !status.id.trim()) return null
  const sid = status.id.trim()
  switch (status.status) {
    case 'sent':
    case 'delivered':
    case 'read':
      return { sid, status: status.status }
    case 'failed': {
      // "errors": [{"code": 131047, "title": "Re-engagement message", "message": "Re-engagement message", ...}]
      const error = Array.isArray(status.errors) && isObject(status.errors[0]) ? status.errors[0] : {}
      return {
        sid,
        status: 'failed',
        errorCode: typeof error.code === 'number' ? errorCodeOf(error.code) : null,
        errorMessage: providerText(error.title) ?? providerText(error.message) ?? 'failed',
      }
    }
    default:
      return null
  }
}

/** Every status report of a notification, in the order Meta wrote them. */
export function reportsOf(notification: Record<string, unknown>): StatusReport[] {
  const reports: StatusReport[] = []
  for (const entry of Array.isArray(notification.entry) ? notification.entry : []) {
    if (!isObject(entry) || !Array.isArray(entry.changes)) continue
    for (const change of entry.changes) {
      if (!isObject(change) || change.field !== 'messages' || !isObject(change.value)) continue
      const statuses = change.value.statuses
      if (!Array.isArray(statuses)) continue
      for (const status of statuses) {
        const report = reportOf(status)
        if (report) reports.push(report)
      }
    }
  }
  return reports
}

const isJson = (contentType: string | null) => contentType?.split(';')[0]!.trim().toLowerCase() === 'application/json'

/** The body parsed once, for choosing the secrets and, once verified, for the reports; NOT_JSON when it is not JSON. */
const NOT_JSON = Symbol('not JSON')
function parsed(body: string): unknown {
  try {
    return JSON.parse(body)
  } catch {
    return NOT_JSON
  }
}

/** The phone number ids a notification's changes name (metadata.phone_number_id), read only to choose the secrets to try. */
function phoneNumberIdsOf(notification: unknown): string[] {
  const ids = new Set<string>()
  if (!isObject(notification) || !Array.isArray(notification.entry)) return []
  for (const entry of notification.entry) {
    if (!isObject(entry) || !Array.isArray(entry.changes)) continue
    for (const change of entry.changes) {
      const id =
        isObject(change) && isObject(change.value) && isObject(change.value.metadata) ? change.value.metadata.phone_number_id : null
      if (typeof id === 'string' && id) ids.add(id)
    }
  }
  return [...ids]
}

/**
 * Whether the notification is signed by the app of every number it names: a stored sender's app
 * secret for its phone number id, or the environment's (META_APP_SECRET) for a number that is not a
 * stored sender's, or is the environment's own. Another sender's app secret never verifies a number.
 */
async function verified(
  request: CallbackRequest,
  notification: unknown,
  context: CallbackContext<MetaSettings>,
  signature: string | null,
): Promise<boolean> {
  const environment = context.settings
  const phoneIds = phoneNumberIdsOf(notification)
  const secretsFor = async (phoneId: string | null): Promise<string[]> => {
    const stored = phoneId ? await context.senders(phoneId) : []
    const environmentMay = stored.length === 0 || environment.phoneNumberId === phoneId
    return [...stored.map((s) => s.appSecret), ...(environmentMay ? [environment.appSecret] : [])].filter((s) => s !== '')
  }
  for (const phoneId of phoneIds.length > 0 ? phoneIds : [null]) {
    const secrets = await secretsFor(phoneId)
    if (!secrets.some((secret) => verifyMetaSignature(secret, request.rawBody, signature))) return false
  }
  return true
}

async function receive(request: CallbackRequest, context: CallbackContext<MetaSettings>): Promise<CallbackAnswer> {
  // Without an app secret (the environment's or a stored sender's) nothing can be verified, so the
  // endpoint does not exist. With one, it answers whatever PROVIDER says: reports for messages sent
  // before a switch keep arriving.
  if (!context.settings.appSecret && (await context.senders(null)).length === 0) {
    throw new ApiError('NOT_FOUND', `no route for POST ${META_WEBHOOK_PATH}`)
  }
  const signature = request.headers.get('x-hub-signature-256')
  const notification = parsed(request.body)
  if (!(await verified(request, notification, context, signature))) {
    throw new ApiError('FORBIDDEN', signature ? 'X-Hub-Signature-256 does not match' : 'X-Hub-Signature-256 header is missing')
  }
  if (!isJson(request.headers.get('content-type'))) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json')
  }
  if (notification === NOT_JSON) throw badShape('body is not valid JSON')
  if (!isObject(notification)) throw badShape('body must be a JSON object')
  return { reports: reportsOf(notification), inbound: inboundOf(notification), consent: consentOf(notification) }
}

/** The subscription handshake: the challenge, as text, when the verify token matches; 403 otherwise. */
async function handshake(request: CallbackRequest, context: CallbackContext<MetaSettings>): Promise<Response> {
  // META_VERIFY_TOKEN, or a stored sender's own (its app's webhook may have its own verify token).
  const tokens = [context.settings.verifyToken, ...(await context.senders(null)).map((s) => s.verifyToken)].filter((t) => t !== '')
  if (tokens.length === 0) throw new ApiError('NOT_FOUND', `no route for GET ${META_WEBHOOK_PATH}`)
  const query = request.url.searchParams
  const token = query.get('hub.verify_token')
  const challenge = query.get('hub.challenge')
  if (query.get('hub.mode') !== 'subscribe' || token === null || challenge === null || !tokens.some((t) => sameText(token, t))) {
    throw new ApiError(
      'FORBIDDEN',
      "hub.mode must be subscribe and hub.verify_token must match META_VERIFY_TOKEN or a Meta sender's verify_token",
    )
  }
  return new Response(challenge, {
    status: 200,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' },
  })
}

const describe = (lines: string[]) => lines.join(' ')

export const metaWebhookCallbacks: Callback<MetaSettings>[] = [
  {
    method: 'GET',
    path: 'webhook',
    handle: (request, context) => handshake(request, context),
    errors: [403, 404],
    detail: {
      summary: "Meta's webhook subscription handshake",
      description: describe([
        'Called by Meta when the webhook URL is set in the app dashboard, not by API clients.',
        'Answers `hub.challenge` as plain text when `hub.mode` is `subscribe` and `hub.verify_token` equals `META_VERIFY_TOKEN`',
        "or the `verify_token` of a stored Meta sender (each Meta app's webhook may have its own); anything else gets 403 `FORBIDDEN`.",
        'Without `META_VERIFY_TOKEN` and without a Meta sender that has a `verify_token`, 404 `NOT_FOUND`.',
      ]),
      parameters: [
        { name: 'hub.mode', in: 'query', required: true, schema: { type: 'string', enum: ['subscribe'] } },
        {
          name: 'hub.verify_token',
          in: 'query',
          required: true,
          schema: { type: 'string' },
          description: "Must equal META_VERIFY_TOKEN or a Meta sender's verify_token",
        },
        { name: 'hub.challenge', in: 'query', required: true, schema: { type: 'string' }, description: 'Echoed back' },
      ],
      responses: { 200: { description: 'The challenge, echoed', content: { 'text/plain': { schema: { type: 'string' } } } } },
    },
  },
  {
    method: 'POST',
    path: 'webhook',
    handle: (request, context) => receive(request, context),
    errors: [400, 403, 404, 415],
    detail: {
      summary: "Meta's webhook notifications (message statuses and inbound messages)",
      description: describe([
        'Called by Meta (the WhatsApp Cloud API, `PROVIDER=meta`), not by API clients. No API key: `X-Hub-Signature-256`',
        '(`sha256=` + the hex HMAC-SHA256 of the raw body with the app secret of the sender each `metadata.phone_number_id`',
        "names: a stored sender's, else `META_APP_SECRET`) is verified first; a missing or wrong",
        'signature gets 403 `FORBIDDEN` and changes nothing. Every `statuses[]` item of every `entry[].changes[]` whose',
        '`field` is `messages` is applied in one transaction through the forward-only state machine: `sent`, `delivered`,',
        '`read` as they are, `failed` with `errors[0].code` as `error_code` and its title as `error_message`; a repeat or a',
        'backwards move (a `delivered` after a `read`) changes nothing. Statuses for ids not stored yet are kept for up',
        'to an hour (the notification can beat the recording of the send), then dropped. Every `messages[]` item (an inbound',
        'message: text, image, document, audio, video, sticker, location, contacts, interactive button/list reply, button,',
        'reaction) is stored once by its `id` (a repeat changes nothing), with the name of `contacts[].profile.name`; see',
        "`GET /api/v1/inbound`; one that is only a STOP/START word opts the customer out of (back into) the account's messages.",
        'A `user_preferences` change (`category: marketing_messages`, `value: stop|resume`: the user stopped or resumed',
        'marketing messages in WhatsApp) opts the `wa_id` out of the account the inbound rule names, or back in when the opt-out',
        'was such a signal (source `provider`); see `GET /api/v1/opt-outs`. Other fields are ignored. Each accepted change emits one `message.status` event. The answer is',
        '200 with `changed: true` when any message changed and, when it carried inbound messages, `inbound`: how many were new.',
        'The endpoint answers whenever `META_APP_SECRET` is set or a Meta sender is',
        'stored; without either, 404 `NOT_FOUND`.',
      ]),
      parameters: [
        {
          name: 'X-Hub-Signature-256',
          in: 'header',
          required: true,
          schema: { type: 'string' },
          description: '`sha256=` + hex HMAC-SHA256 by Meta',
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                object: { type: 'string', example: 'whatsapp_business_account' },
                entry: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      id: { type: 'string' },
                      changes: {
                        type: 'array',
                        items: {
                          type: 'object',
                          properties: {
                            field: { type: 'string', example: 'messages' },
                            value: {
                              type: 'object',
                              properties: {
                                statuses: {
                                  type: 'array',
                                  items: {
                                    type: 'object',
                                    properties: {
                                      id: { type: 'string', example: 'wamid.HBgNNjI4MTIzNDU2Nzg5MBUCABEYEjA=' },
                                      status: { type: 'string', enum: ['sent', 'delivered', 'read', 'failed'] },
                                      errors: {
                                        type: 'array',
                                        items: {
                                          type: 'object',
                                          properties: { code: { type: 'integer' }, title: { type: 'string' }, message: { type: 'string' } },
                                        },
                                      },
                                    },
                                  },
                                },
                              },
                            },
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
]
