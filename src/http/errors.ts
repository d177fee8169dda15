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
