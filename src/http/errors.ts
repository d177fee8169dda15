// The spec's envelope and the one table from error code to HTTP status.

export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  AUTH_MISSING_HEADER: 401,
  AUTH_INVALID_KEY: 401,
  INSUFFICIENT_BALANCE: 402,
  SPEND_CAP_REACHED: 402,
  HTTPS_REQUIRED: 403,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  MEDIA_PENDING: 409,
  MEDIA_FAILED: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_KEY_REUSED: 422,
  SENDER_DISABLED: 422,
  SENDER_RESTRICTED: 422,
  RECIPIENT_OPTED_OUT: 422,
  WINDOW_CLOSED: 422,
  TEMPLATE_NOT_APPROVED: 422,
  PRICE_ABOVE_MAX: 422,
  RATE_LIMITED: 429,
  MESSAGING_LIMIT: 429,
  INTERNAL_ERROR: 500,
  BAD_GATEWAY: 502,
  SERVICE_UNAVAILABLE: 503,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

/** What each code means and what to do about it, in a few words (docs/reference/error-codes.md is generated from it). */
export const ERROR_MEANING: Record<ErrorCode, string> = {
  VALIDATION_ERROR:
    'the request has the wrong shape (400: not JSON, an unknown or missing field, a wrong type) or a value is not acceptable (422); `error` names the field',
  AUTH_MISSING_HEADER: 'no credential: send `Authorization: Bearer <key>` (or `X-API-Key`; the admin token on the admin API)',
  AUTH_INVALID_KEY: 'the key or token is unknown, deactivated or wrong',
  INSUFFICIENT_BALANCE: 'the balance cannot pay the send or the whole bulk; nothing was charged: top up',
  SPEND_CAP_REACHED: "the API key's daily spend cap leaves no room; nothing was charged: wait for the next day or raise the cap",
  HTTPS_REQUIRED: 'plain HTTP under `REQUIRE_HTTPS=true`: call the https:// URL',
  FORBIDDEN: "a provider callback's signature is missing or wrong, or the caller may not do this",
  NOT_FOUND: 'no such record for this caller (another account’s records are not found either)',
  METHOD_NOT_ALLOWED: 'the path exists with other methods, listed in `Allow`',
  REQUEST_TIMEOUT: 'a large body arrived too slowly; nothing was done: send it again, faster or smaller',
  CONFLICT: 'a request with the same `Idempotency-Key` is still running, or the record is in a state that refuses this',
  MEDIA_PENDING: "an inbound message's media is still being fetched: ask again shortly",
  MEDIA_FAILED: "an inbound message's media could not be fetched from the provider",
  PAYLOAD_TOO_LARGE: 'the body is over the limit (37,232,064 bytes; a provider callback 4 MiB)',
  UNSUPPORTED_MEDIA_TYPE: 'the body is not `Content-Type: application/json`',
  IDEMPOTENCY_KEY_REUSED: 'the `Idempotency-Key` was used within 24 h with another body: use a new key',
  SENDER_DISABLED: 'the sender the message would go from is disabled; nothing was charged',
  SENDER_RESTRICTED:
    "Meta restricted the sender's WhatsApp Business Account (or flagged it) so that it cannot make this send; nothing was charged: wait for the restriction to end, or send from another sender",
  RECIPIENT_OPTED_OUT: 'the recipient opted out of the account’s messages; nothing was charged (or the message was refunded)',
  WINDOW_CLOSED: "a free-form message outside the customer's 24-hour window; nothing was charged: send an approved template",
  TEMPLATE_NOT_APPROVED: "the WhatsApp template is not approved for the message's sender; nothing was charged",
  PRICE_ABOVE_MAX: 'the message would cost more than its `max_price`; nothing was charged',
  RATE_LIMITED:
    "the API key's request rate, or the sender's pace, is exceeded, or a verification's limits (`VERIFY_PER_NUMBER`, `VERIFY_PER_NUMBER_TOTAL`, `VERIFY_PER_ACCOUNT`; nothing sent or charged): retry after `Retry-After` seconds",
  MESSAGING_LIMIT: "a business-initiated message past the sender's WhatsApp tier; nothing was charged: retry after `Retry-After`",
  INTERNAL_ERROR: 'a fault of the service; the `request_id` names its line in the log',
  BAD_GATEWAY: 'the provider refused or did not answer; the message was refunded',
  SERVICE_UNAVAILABLE: 'the database cannot be reached, or a large body waited too long for its turn: retry after `Retry-After`',
}

export class ApiError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    message: string,
    status?: number,
    /** Facts the client needs besides the message, e.g. the `id` of a message the provider refused. */
    readonly fields: Record<string, unknown> = {},
    /** Headers of the answer, e.g. a 503's `retry-after`. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.status = status ?? ERROR_STATUS[code]
  }
}

/** 400: the request has the wrong shape. */
export const badShape = (message: string) => new ApiError('VALIDATION_ERROR', message, 400)
/** 422: the shape is right but a value is not acceptable. */
export const badValue = (message: string) => new ApiError('VALIDATION_ERROR', message, 422)

export type Envelope<T> = { success: true; data: T }
/** `request_id` (as in the `x-request-id` header) names the request in the service's log, as Stripe's errors do. */
export type ErrorEnvelope = { success: false; error: string; code: string; request_id: string }

export const ok = <T>(data: T): Envelope<T> => ({ success: true, data })

/** The error envelope of an answer, with the request's id in the body and in `x-request-id`. */
export function errorResponse(
  code: string,
  message: string,
  status: number,
  requestId: string,
  headers: Record<string, string> = {},
  fields: Record<string, unknown> = {},
): Response {
  const body: ErrorEnvelope = { success: false, error: message, code, ...fields, request_id: requestId }
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId, ...headers },
  })
}

export const apiErrorResponse = (error: ApiError, requestId: string, headers: Record<string, string> = {}) =>
  errorResponse(error.code, error.message, error.status, requestId, { ...error.headers, ...headers }, error.fields)
