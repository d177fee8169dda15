// Twilio's inbound messages (POST /provider/twilio/inbound): the number's "A message comes in" webhook
// in the Twilio console (or its Messaging Service's). Twilio posts the message as form fields, signed
// in X-Twilio-Signature over this URL (PUBLIC_BASE_URL + the path) with the auth token of the account
// AccountSid names, exactly as the status callback (the same signerOf). Verification comes first:
// an unsigned or badly signed request learns nothing and stores nothing. The number it reached (`To`)
// must be one the signer owns: a message to another sender's number, or to the deployment's number
// signed by a stored sender's token, is refused (403) and stores nothing. The answer is an empty TwiML
// <Response> (no reply message).

import { ApiError, badShape } from '../../http/errors'
import type { Callback, CallbackAnswer, CallbackContext, CallbackRequest, InboundMessage, InboundType, SenderRef } from '../provider'
import type { TwilioSettings } from './settings'
import { formFieldsOf, signerOf, type TwilioSigner } from './callback'

export const TWILIO_INBOUND_PATH = '/provider/twilio/inbound'

const field = (fields: URLSearchParams, name: string): string | null => {
  const value = fields.get(name)?.trim()
  return value ? value : null
}
const coordinate = (value: string | null): number | null => (value !== null && Number.isFinite(Number(value)) ? Number(value) : null)
const withoutChannel = (address: string | null) => (address === null ? null : address.replace(/^whatsapp:/i, ''))

/** Twilio's id of a medium (ME + 32 hex), the last segment of its MediaUrl; null when it is not one. */
const mediaSidOf = (url: string | null): string | null => /\/Media\/(ME[0-9a-fA-F]{32})$/.exec(url ?? '')?.[1] ?? null

/** The message's type and normalised content from its fields. */
function contentOf(fields: URLSearchParams): { type: InboundType; text: string | null; content: Record<string, unknown> } {
  const body = field(fields, 'Body')
  const media = Number(fields.get('NumMedia') ?? '0')
  if (Number.isInteger(media) && media > 0) {
    const all = Array.from({ length: Math.min(media, 10) }, (_, i) => ({
      media_id: mediaSidOf(field(fields, `MediaUrl${i}`)),
      media_url: field(fields, `MediaUrl${i}`),
      mime_type: field(fields, `MediaContentType${i}`),
    }))
    const mime = all[0]!.mime_type ?? ''
    const type: InboundType = mime.startsWith('image/')
      ? 'image'
      : mime.startsWith('video/')
        ? 'video'
        : mime.startsWith('audio/')
          ? 'audio'
          : 'document'
    return {
      type,
      text: body,
      content: {
        media_id: all[0]!.media_id,
        media_url: all[0]!.media_url,
        mime_type: all[0]!.mime_type,
        caption: body,
        filename: null,
        media: all,
      },
    }
  }
  const latitude = coordinate(field(fields, 'Latitude'))
  const longitude = coordinate(field(fields, 'Longitude'))
  if (latitude !== null && longitude !== null) {
    const name = field(fields, 'Label')
    const address = field(fields, 'Address')
    return { type: 'location', text: name ?? address, content: { latitude, longitude, name, address } }
  }
  // A row picked from a list (twilio/list-picker): its id and title, as Meta's list_reply.
  const listId = field(fields, 'ListId')
  if (listId !== null) {
    const title = field(fields, 'ListTitle') ?? body
    return { type: 'interactive', text: title, content: { kind: 'list_reply', id: listId, title, description: null } }
  }
  const buttonText = field(fields, 'ButtonText')
  const buttonPayload = field(fields, 'ButtonPayload')
  if (buttonText !== null || buttonPayload !== null) {
    return { type: 'button', text: buttonText ?? body, content: { payload: buttonPayload, text: buttonText ?? body } }
  }
  return { type: 'text', text: body, content: { body } }
}

/**
 * Twilio's own opt-out signal: with Advanced Opt-Out on the number's Messaging Service, a message that
 * is one of its keywords carries OptOutType STOP or START (HELP changes nothing).
 */
function consentOf(fields: URLSearchParams): InboundMessage['consent'] {
  const type = field(fields, 'OptOutType')?.toUpperCase()
  if (type === 'STOP') return { optedOut: true, detail: 'OptOutType=STOP' }
  if (type === 'START') return { optedOut: false, detail: 'OptOutType=START' }
  return null
}

/**
 * The sender a message to `to` reached, among those its signer owns: the signer's stored sender with
 * that number, or the default number (TWILIO_FROM) when the environment's token signed; else undefined.
 * Without TWILIO_FROM (another PROVIDER) the environment's token, which only the operator holds, speaks
 * for the default number whatever its `To`.
 */
function reached(signer: TwilioSigner, to: string | null, environmentFrom: string): SenderRef | undefined {
  if (to === null) return undefined
  const stored = signer.senders.find((s) => s.number === to)
  if (stored) return stored.id
  return signer.defaultNumber && (environmentFrom === '' || withoutChannel(environmentFrom) === to) ? null : undefined
}

async function receive(request: CallbackRequest, context: CallbackContext<TwilioSettings>): Promise<CallbackAnswer> {
  if (!context.settings.authToken && (await context.senders(null)).length === 0) {
    throw new ApiError('NOT_FOUND', `no route for POST ${TWILIO_INBOUND_PATH}`)
  }
  // Twilio signs the URL set in its console: PUBLIC_BASE_URL + the path, whatever Host the request came with.
  const url = `${context.publicBaseUrl}${TWILIO_INBOUND_PATH}`
  const fields = formFieldsOf(request)
  const signer = await signerOf(request, url, fields, context)
  const id = field(fields, 'MessageSid') ?? field(fields, 'SmsMessageSid') ?? field(fields, 'SmsSid')
  if (!id) throw badShape('MessageSid: is required')
  const from = withoutChannel(field(fields, 'From'))
  if (!from) throw badShape('From: is required')
  const to = withoutChannel(field(fields, 'To'))
  const sender = reached(signer, to, context.settings.from)
  if (sender === undefined) {
    throw new ApiError('FORBIDDEN', `To: ${(to ?? 'no number').slice(0, 40)} is not a number of the account that signed the request`)
  }
  const message: InboundMessage = {
    id,
    from,
    name: field(fields, 'ProfileName'),
    to: { identity: field(fields, 'AccountSid'), number: to },
    sentAt: null,
    ...contentOf(fields),
    raw: Object.fromEntries(fields),
    consent: consentOf(fields),
    replyTo: field(fields, 'OriginalRepliedMessageSid'),
  }
  return { reports: [], inbound: [{ ...message, sender }] }
}

const FIELDS = {
  MessageSid: {
    type: 'string',
    description: "Twilio's message SID (SM… or MM…): the message is stored once by it",
    example: 'SM0123456789abcdef0123456789abcdef',
  },
  AccountSid: { type: 'string', description: 'Chooses the auth token that must have signed the request' },
  From: { type: 'string', example: 'whatsapp:+6281234567890' },
  To: {
    type: 'string',
    description:
      'whatsapp:<number>: the stored Twilio sender with that number (of the account that signed), or the default number (TWILIO_FROM, signed with TWILIO_AUTH_TOKEN); any other is refused',
    example: 'whatsapp:+14155238886',
  },
  OriginalRepliedMessageSid: {
    type: 'string',
    description:
      "The SID of the message the customer replied to: on a number shared by several accounts, the reply belongs to that message's account",
  },
  Body: { type: 'string' },
  ProfileName: { type: 'string', description: "The customer's WhatsApp name: the name of a contact created for them" },
  NumMedia: { type: 'string', example: '1' },
  MediaUrl0: { type: 'string' },
  MediaContentType0: { type: 'string', example: 'image/jpeg' },
  Latitude: { type: 'string' },
  Longitude: { type: 'string' },
  ButtonText: { type: 'string' },
  ButtonPayload: { type: 'string', description: "A reply button's id (twilio/quick-reply), or a template button's payload" },
  ListId: { type: 'string', description: 'The id of the list row picked (twilio/list-picker)' },
  ListTitle: { type: 'string' },
  OptOutType: {
    type: 'string',
    enum: ['STOP', 'START', 'HELP'],
    description:
      "Twilio's Advanced Opt-Out signal (on a Messaging Service with it on): STOP opts the customer out of the account's messages, " +
      'START back in (source `provider`); HELP changes nothing',
  },
} as const

export const twilioInboundCallback: Callback<TwilioSettings> = {
  method: 'POST',
  path: 'inbound',
  handle: (request, context) => receive(request, context),
  // Twilio reads the answer to an incoming message as TwiML: an empty <Response> sends no reply (a JSON
  // answer would be logged by Twilio as an invalid content type).
  reply: () =>
    new Response('<?xml version="1.0" encoding="UTF-8"?><Response></Response>', {
      status: 200,
      headers: { 'content-type': 'text/xml; charset=utf-8' },
    }),
  errors: [400, 403, 404],
  detail: {
    summary: "Twilio's incoming message webhook",
    description:
      "Called by Twilio, not by API clients: set `PUBLIC_BASE_URL` + `/provider/twilio/inbound` as the WhatsApp number's " +
      '"A message comes in" webhook (HTTP POST) in the Twilio console, for the default number and for every stored Twilio sender. ' +
      'No API key: `X-Twilio-Signature` is verified with the auth token of the sender the `AccountSid` field names (a stored ' +
      'sender of that account, else `TWILIO_AUTH_TOKEN`) over that URL and every form field; a missing or wrong signature gets ' +
      '403 `FORBIDDEN` and stores nothing. The message is stored once by `MessageSid` (a repeat changes nothing) as text, media ' +
      '(`NumMedia`, `MediaUrl0`, `MediaContentType0`: image, video, audio, else document), location (`Latitude`, `Longitude`), ' +
      "button (`ButtonText`, `ButtonPayload`: the button's id) or list reply (`ListId`, `ListTitle`: interactive, with the row's id), " +
      'reached by the stored Twilio sender whose number is `To`, or the default number (`TWILIO_FROM`): the number must be one the ' +
      "signing account owns, else 403 and nothing is stored (a stored sender's token never speaks for another's number or the default number); " +
      'a new message that is only a STOP/START word (OPT_OUT_WORDS, OPT_IN_WORDS), or carries `OptOutType` STOP/START, opts the customer ' +
      "out of (or back into) the account's messages (see `GET /api/v1/opt-outs`); " +
      'see `GET /api/v1/inbound`. The answer is 200 with an empty TwiML `<Response>` (no reply message), new or repeat.',
    parameters: [
      { name: 'X-Twilio-Signature', in: 'header', required: true, schema: { type: 'string' }, description: 'Base64 HMAC-SHA1 by Twilio' },
    ],
    requestBody: {
      required: true,
      content: {
        'application/x-www-form-urlencoded': {
          schema: { type: 'object', required: ['MessageSid', 'From', 'To'], properties: FIELDS, additionalProperties: { type: 'string' } },
        },
      },
    },
    responses: {
      200: {
        description: 'Stored (or a repeat): an empty TwiML answer, so Twilio sends no reply',
        content: { 'text/xml': { schema: { type: 'string' }, example: '<?xml version="1.0" encoding="UTF-8"?><Response></Response>' } },
      },
    },
  },
}
