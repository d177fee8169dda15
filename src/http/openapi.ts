// Schemas shared by the OpenAPI document: the success envelope around a model, and error answers.

import { t, type TSchema } from 'elysia'
import { OptionalKind, TransformKind } from '@sinclair/typebox'
import { MAX_BODY_BYTES } from './body'

/**
 * A request body as the documents describe it: JSON only (anything else is 415). The cast: Elysia types
 * a route's `detail` as OpenAPI 3.0, which a JSON Schema 2020-12 (TypeBox) does not fit.
 */
export const jsonBody = (schema: object, examples?: Record<string, { summary: string; value: unknown }>) => ({
  required: true,
  content: { 'application/json': { schema: schema as Record<string, any>, ...(examples ? { examples } : {}) } },
})

export const envelopeOf = <T extends TSchema>(data: T) =>
  t.Object({ success: t.Literal(true), data: plainIntegers(data) }, { description: 'Success envelope' })

/** Elysia's t.Integer: a transform of a decimal string or an integer (its second member, a plain integer). */
const isElysiaInteger = (node: Record<PropertyKey, any>) =>
  node[TransformKind] !== undefined && node.anyOf?.length === 2 && node.anyOf[0].type === 'string' && node.anyOf[0].format === 'integer'

/**
 * An answer's schema with each t.Integer replaced by the plain integer inside it. An integer in an
 * answer is always a number, and one transform anywhere makes Elysia pass the whole answer through
 * TypeBox's Encode, a walk of every field, before its compiled check: on a page of 50 messages that walk
 * was a fifth of the service's time (bench list). Request schemas keep their transforms.
 */
function plainIntegers<T>(node: T): T {
  if (Array.isArray(node)) return node.map(plainIntegers) as T
  if (node === null || typeof node !== 'object') return node
  const schema = node as Record<PropertyKey, any>
  if (isElysiaInteger(schema)) {
    const plain = { ...schema.anyOf[1] }
    if (schema[OptionalKind] !== undefined) plain[OptionalKind] = schema[OptionalKind]
    return plain as T
  }
  const copy: Record<PropertyKey, any> = {}
  for (const key of Reflect.ownKeys(schema)) copy[key] = plainIntegers(schema[key])
  return copy as T
}

const ERROR_EXAMPLES: Record<number, { code: string; error: string; description: string; fields?: Record<string, unknown> }> = {
  400: {
    code: 'VALIDATION_ERROR',
    error: 'mediaUrl: unknown field',
    description:
      'Wrong shape: the body is not JSON, misses a required field, has an unknown field or a wrong JSON type; ' +
      'or a path or query parameter is not a decimal integer or not valid percent-encoded UTF-8',
  },
  401: { code: 'AUTH_INVALID_KEY', error: 'API key is invalid or inactive', description: 'AUTH_MISSING_HEADER or AUTH_INVALID_KEY' },
  402: {
    code: 'INSUFFICIENT_BALANCE',
    error: 'wa_balance is not enough for this message',
    description:
      'The balance cannot pay (`INSUFFICIENT_BALANCE`), or the charge would take what the API key was charged today past its ' +
      "daily spend cap (`SPEND_CAP_REACHED`; checked first; the service time zone's day); nothing changed",
  },
  403: {
    code: 'HTTPS_REQUIRED',
    error: 'this service accepts HTTPS requests only',
    description: 'A plain-HTTP request while the service requires HTTPS (REQUIRE_HTTPS)',
  },
  404: { code: 'NOT_FOUND', error: 'message SM... not found', description: "Unknown id (or another account's)" },
  405: {
    code: 'METHOD_NOT_ALLOWED',
    error: 'GET is not allowed on /api/v1/messages/send',
    description: 'The path does not answer this method (HEAD and OPTIONS included); `Allow` lists the methods it does',
  },
  408: {
    code: 'REQUEST_TIMEOUT',
    error: 'the request body (over 1048576 bytes) did not arrive in time: 10 s, plus 1 s for each MiB received',
    description:
      'A body over 1 MiB arrived too slowly once its turn came (10 s, plus 1 s for each MiB received); nothing changed, and the connection is closed',
  },
  409: {
    code: 'CONFLICT',
    error: 'a contact with this phone already exists',
    description: 'Duplicate, or the same Idempotency-Key still in flight',
  },
  410: {
    code: 'MEDIA_FAILED',
    error: 'medium 0 of inbound message 12 could not be kept: type image/gif is not allowed for an image',
    description: "The inbound message's medium could not be fetched or was refused (size, type, magic bytes): the reason is in `error`",
  },
  413: {
    code: 'PAYLOAD_TOO_LARGE',
    error: `request body exceeds ${MAX_BODY_BYTES} bytes`,
    description: `The body is over ${MAX_BODY_BYTES} bytes (a full bulk of maximal entries fits)`,
  },
  415: {
    code: 'UNSUPPORTED_MEDIA_TYPE',
    error: 'Content-Type text/plain is not accepted: request bodies are application/json',
    description: 'The body is not application/json (UTF-8); nothing changed',
  },
  422: {
    code: 'VALIDATION_ERROR',
    error: 'to: not a valid Indonesian phone number: write it like 081234567890, 6281234567890 or +6281234567890',
    description:
      "A value is not acceptable (a phone number, a URL, a range, a NUL character, a `from` that is not one of the account's senders); " +
      'IDEMPOTENCY_KEY_REUSED where an Idempotency-Key is taken; SENDER_DISABLED where a sender is named (`from`): it is disabled, nothing charged; ' +
      "SENDER_RESTRICTED for a send: Meta restricted the sender's account (account_update ACCOUNT_RESTRICTION) from this message (a " +
      'business-initiated one, or every one), nothing charged; it sends again once Meta lifts the restriction or it expires; ' +
      "RECIPIENT_OPTED_OUT where a message goes to `to`: the recipient opted out of the account's messages, nothing charged (or " +
      "opted out while the charged message waited for its hand-off: not sent, refunded, the message's `id` given); " +
      'WINDOW_CLOSED for a send: a free-form message to a customer outside the 24-hour window with the sender, nothing charged (send an approved template with template_id); ' +
      "TEMPLATE_NOT_APPROVED for a send: its WhatsApp template is not approved for the message's sender (its status and Meta's reason named), nothing charged",
  },
  429: {
    code: 'RATE_LIMITED',
    error: 'this API key is over its rate of 600 requests a minute; retry after 17 s',
    description:
      'The API key made more requests than its rate allows in this minute; nothing was done. `Retry-After` says when its window resets',
  },
  500: {
    code: 'INTERNAL_ERROR',
    error: 'internal error (request id 7f1c...)',
    description: 'Something failed on our side; the error names the request id to report',
  },
  502: {
    code: 'BAD_GATEWAY',
    error: 'the messaging provider did not accept the message',
    description: 'Provider hand-off failed; the charge was refunded',
    fields: { id: 1234 },
  },
  503: {
    code: 'SERVICE_UNAVAILABLE',
    error: 'too many large request bodies at once; retry shortly',
    description:
      'Busy: a large body waited too long for its turn, or the database is not ready or could not be reached for a moment ' +
      '(with an Idempotency-Key: the answer could not be recorded, so it was not given; the repeat with the same key gets it); ' +
      'retry after `Retry-After`',
  },
}

const REQUEST_ID_EXAMPLE = '0b6f2d1e-8c1a-4c55-9a53-3f1f7e0a9c21'

/** The headers the shell sets on answers (http/shell.ts), as the documents' `components.headers`. */
export const RESPONSE_HEADERS = {
  RequestId: {
    description:
      "This request's id, on every answer (an `X-Request-Id` sent with the request is kept: its first 64 characters, less any but " +
      'ASCII letters, digits, `_`, `.` and `-`); ' +
      'an error repeats it as `request_id`: quote it when asking about a request',
    required: true,
    schema: { type: 'string', examples: [REQUEST_ID_EXAMPLE] },
  },
  Allow: {
    description: 'The methods the path answers, comma-separated',
    required: true,
    schema: { type: 'string', examples: ['POST'] },
  },
  RetryAfter: {
    description:
      "Seconds to wait before trying again: on a 429, until the key's rate window resets; on the 503 of a large body that waited too long for its turn, a second",
    required: true,
    schema: { type: 'integer', examples: [17] },
  },
  RateLimitPolicy: {
    description:
      "The API key's request rate (draft-ietf-httpapi-ratelimit-headers): `q` requests per window of `w` seconds, e.g. " +
      '`"default";q=600;w=60`. On every answer to a request whose key was found: always on a success and on a 429; not on a 401, ' +
      'nor on the 403 and 413 given before the key is checked',
    required: false,
    schema: { type: 'string', examples: ['"default";q=600;w=60'] },
  },
  RateLimit: {
    description:
      'Where the API key stands after this request (draft-ietf-httpapi-ratelimit-headers): `r` requests left in its current window, ' +
      'which resets in `t` seconds, e.g. `"default";r=42;t=17`. On the same answers as `RateLimit-Policy`',
    required: false,
    schema: { type: 'string', examples: ['"default";r=42;t=17'] },
  },
  IdempotentReplayed: {
    description:
      'Present (`true`) when this is the stored answer of an earlier request with the same `Idempotency-Key`, replayed whatever its ' +
      'status: nothing was sent or charged again. Absent on a first answer',
    required: false,
    schema: { type: 'string', enum: ['true'] },
  },
}

export const ErrorEnvelope = t.Object(
  {
    success: t.Literal(false),
    error: t.String({ description: 'Human-readable description naming the field' }),
    code: t.String({ description: 'Machine-readable error code' }),
    request_id: t.String({
      description:
        "This request's id, as in the `x-request-id` header (an `X-Request-Id` sent with the request is kept): quote it when asking about a failure",
      examples: [REQUEST_ID_EXAMPLE],
    }),
  },
  { description: 'Error envelope' },
)

/** An error answer with facts of its own besides the envelope's (e.g. the `id` of a refused message). */
export const errorWith = <P extends Record<string, TSchema>>(status: number, properties: P) => {
  const example = ERROR_EXAMPLES[status]
  return t.Object(
    { ...ErrorEnvelope.properties, ...properties },
    { description: example?.description ?? 'Error', examples: example ? [exampleOf(example)] : undefined },
  )
}

const exampleOf = (example: { code: string; error: string; fields?: Record<string, unknown> }) => ({
  success: false,
  error: example.error,
  code: example.code,
  ...example.fields,
  request_id: REQUEST_ID_EXAMPLE,
})

/** The 429 of a single send: the key's rate, the sender's pace, or the sender's messaging limit. */
export const SendLimited = t.Object(ErrorEnvelope.properties, {
  description:
    "`RATE_LIMITED`: the API key is over its rate, or (a single send) the sender's pace could not take the message within " +
    'SEND_WAIT_MS. `MESSAGING_LIMIT` (extension): the message is business-initiated (the recipient has not written to the sender ' +
    "in the last 24 hours) and the sender's messaging limit (its tier, or its portfolio's: unique recipients per rolling 24 hours) " +
    'is used up; the error says the tier, the use and when the oldest frees, `Retry-After` the seconds until then. Nothing was charged',
  examples: [
    exampleOf({
      code: 'MESSAGING_LIMIT',
      error:
        "messaging limit reached: sender 3's budget of 250 unique recipients of business-initiated messages per rolling 24 hours has 250 " +
        'used; the oldest frees at 2026-11-26 09:30:00 (in 3600 s). Messages to customers who wrote within 24 hours do not count; nothing was charged',
    }),
  ],
})

export function errorsOf(...statuses: number[]): Record<number, typeof ErrorEnvelope> {
  const out: Record<number, typeof ErrorEnvelope> = {}
  for (const status of statuses) {
    const example = ERROR_EXAMPLES[status]
    out[status] = t.Object(ErrorEnvelope.properties, {
      description: example?.description ?? 'Error',
      examples: example ? [exampleOf({ code: example.code, error: example.error })] : undefined,
    }) as typeof ErrorEnvelope
  }
  return out
}
