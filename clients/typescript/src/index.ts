// The TypeScript client of the prepaid messaging API: openapi-fetch over the types openapi-typescript
// generates from the service's OpenAPI document (schema.d.ts, `bun run generate`). Every call unwraps
// the `{success, data}` envelope, and every error answer becomes a MessagingError subclass carrying the
// service's `code`, the HTTP status and the request id. verifyWebhook checks a delivery's Standard
// Webhooks signature.

import createClient from 'openapi-fetch'
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { paths } from './schema'

type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : never
type DataOf<T> = JsonOf<T> extends { data: infer D } ? D : never

export type SendRequest = JsonOf<paths['/api/v1/messages/send']['post']['requestBody']>
/** 200 `sent` with its `message_id`, or 202 `queued` (the provider throttled it) with its `id`. */
export type SendResult =
  DataOf<paths['/api/v1/messages/send']['post']['responses'][200]> | DataOf<paths['/api/v1/messages/send']['post']['responses'][202]>
export type BulkRequest = JsonOf<paths['/api/v1/messages/bulk']['post']['requestBody']>
export type BulkResult = DataOf<paths['/api/v1/messages/bulk']['post']['responses'][200]>
export type QuoteRequest = JsonOf<paths['/api/v1/messages/quote']['post']['requestBody']>
export type Quote = DataOf<paths['/api/v1/messages/quote']['post']['responses'][200]>
export type Balance = DataOf<paths['/api/v1/balance']['get']['responses'][200]>
export type MessageQuery = NonNullable<paths['/api/v1/messages']['get']['parameters']['query']>
export type MessagePage = DataOf<paths['/api/v1/messages']['get']['responses'][200]>
export type Message = DataOf<paths['/api/v1/messages/{message_sid}']['get']['responses'][200]>
export type TemplateQuery = NonNullable<paths['/api/v1/templates']['get']['parameters']['query']>
export type TemplatePage = DataOf<paths['/api/v1/templates']['get']['responses'][200]>
export type Template = DataOf<paths['/api/v1/templates/{id}']['get']['responses'][200]>

/** An error answer: `code` is the service's (VALIDATION_ERROR, INSUFFICIENT_BALANCE, ...), `requestId` names the request in its log. */
export class MessagingError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly requestId: string | null,
    /** The whole error body (some codes add fields, e.g. `id` of a failed send). */
    readonly body: Record<string, unknown> = {},
  ) {
    super(message)
    this.name = new.target.name
  }
}
/** 400 or 422: the request is malformed or a value is not acceptable (`message` names the field). */
export class ValidationError extends MessagingError {}
/** 401: the API key is missing, unknown or deactivated. */
export class AuthenticationError extends MessagingError {}
/** 402: the balance cannot pay (INSUFFICIENT_BALANCE) or the key's daily spend cap is reached (SPEND_CAP_REACHED). */
export class BalanceError extends MessagingError {}
/** 404: no such thing in this account. */
export class NotFoundError extends MessagingError {}
/** 409: a duplicate, or the same Idempotency-Key still in flight (repeat later). */
export class ConflictError extends MessagingError {}
/** 429: slow down; `retryAfter` in seconds when the service said. */
export class RateLimitError extends MessagingError {
  retryAfter: number | null = null
}
/** 502: the messaging provider refused or failed (nothing charged). */
export class ProviderError extends MessagingError {}
/** Any other status (500, 503, ...). */
export class ServiceError extends MessagingError {}

const ERROR_CLASSES: Record<number, typeof MessagingError> = {
  400: ValidationError,
  401: AuthenticationError,
  402: BalanceError,
  404: NotFoundError,
  409: ConflictError,
  422: ValidationError,
  429: RateLimitError,
  502: ProviderError,
}

function errorOf(response: Response, body: unknown): MessagingError {
  const envelope = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {}
  const text = (key: string) => (typeof envelope[key] === 'string' ? (envelope[key] as string) : null)
  const ErrorClass = ERROR_CLASSES[response.status] ?? ServiceError
  const error = new ErrorClass(
    text('error') ?? `HTTP ${response.status}`,
    response.status,
    text('code') ?? 'HTTP_ERROR',
    text('request_id') ?? response.headers.get('x-request-id'),
    envelope,
  )
  if (error instanceof RateLimitError) {
    const seconds = Number(response.headers.get('retry-after'))
    error.retryAfter = Number.isFinite(seconds) && seconds >= 0 ? seconds : null
  }
  return error
}

async function unwrap<T>(call: Promise<{ data?: { data: T }; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call
  if (!response.ok || data === undefined) throw errorOf(response, error)
  return data.data
}

export type ClientOptions = {
  /** The service's root, e.g. `https://messaging.example.com` (the paths carry `/api/v1`). */
  baseUrl: string
  apiKey: string
  /** A fetch of your own (proxies, timeouts, tests). */
  fetch?: (request: Request) => Promise<Response>
}

export class MessagingClient {
  private readonly http

  constructor(options: ClientOptions) {
    this.http = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      headers: { Authorization: `Bearer ${options.apiKey}`, Accept: 'application/json' },
      ...(options.fetch ? { fetch: options.fetch } : {}),
    })
  }

  balance(): Promise<Balance> {
    return unwrap(this.http.GET('/api/v1/balance'))
  }

  /** One message. Pass an `idempotencyKey` to make a retry safe: a repeat within 24 h replays the first answer, charged once. */
  send(message: SendRequest, options: { idempotencyKey?: string } = {}): Promise<SendResult> {
    const header = options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}
    return unwrap<SendResult>(this.http.POST('/api/v1/messages/send', { body: message, params: { header } }))
  }

  /** Up to 1000 messages; entries fail on their own (`results[i].code`). Same `idempotencyKey` rule as send. */
  bulk(messages: BulkRequest['messages'], options: { idempotencyKey?: string } & Omit<BulkRequest, 'messages'> = {}): Promise<BulkResult> {
    const { idempotencyKey, ...rest } = options
    const header = idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}
    return unwrap(this.http.POST('/api/v1/messages/bulk', { body: { ...rest, messages }, params: { header } }))
  }

  /** What a send or bulk body would cost now, entry by entry; nothing is charged, sent or reserved. */
  quote(request: QuoteRequest): Promise<Quote> {
    return unwrap(this.http.POST('/api/v1/messages/quote', { body: request }))
  }

  /** One page: `{items, total, limit, offset}`, newest first; `offset` counts records (default 50 a page, at most 200). */
  listMessages(query: MessageQuery = {}): Promise<MessagePage> {
    return unwrap(this.http.GET('/api/v1/messages', { params: { query } }))
  }

  /** Every message matching `query`, page after page (`limit` is the page size). */
  async *eachMessage(query: Omit<MessageQuery, 'offset'> = {}): AsyncGenerator<MessagePage['items'][number]> {
    for (let offset = 0; ;) {
      const page = await this.listMessages({ limit: 200, ...query, offset })
      yield* page.items
      offset += page.items.length
      if (page.items.length === 0 || offset >= page.total) return
    }
  }

  message(messageSid: string): Promise<Message> {
    return unwrap(this.http.GET('/api/v1/messages/{message_sid}', { params: { path: { message_sid: messageSid } } }))
  }

  /** The WhatsApp templates the account may send (`status: 'approved'` for those that send). */
  listTemplates(query: TemplateQuery = {}): Promise<TemplatePage> {
    return unwrap(this.http.GET('/api/v1/templates', { params: { query } }))
  }

  template(id: number): Promise<Template> {
    return unwrap(this.http.GET('/api/v1/templates/{id}', { params: { path: { id } } }))
  }
}

/** A delivery whose signature, id or timestamp does not check out. Answer it with a 4xx and do not act on it. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError'
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>

function headerOf(headers: HeaderSource, name: string): string | null {
  if (headers instanceof Headers) return headers.get(name)
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name)
  const value = key === undefined ? undefined : headers[key]
  return (Array.isArray(value) ? value[0] : value) ?? null
}

/**
 * Checks a webhook delivery (Standard Webhooks): `webhook-signature` holds `v1,` + base64
 * HMAC-SHA256 of `webhook-id.webhook-timestamp.body` keyed with the secret's bytes (`whsec_` + base64,
 * from POST /webhook), and the timestamp is within `toleranceSeconds` (default 5 minutes) of now.
 * `body` is the raw request body, exactly as received. Returns the parsed event; throws
 * WebhookVerificationError otherwise.
 */
export function verifyWebhook(
  secret: string,
  headers: HeaderSource,
  body: string,
  options: { toleranceSeconds?: number; now?: Date } = {},
): { event: string; timestamp: string; data: Record<string, unknown> } {
  const id = headerOf(headers, 'webhook-id')
  const timestamp = headerOf(headers, 'webhook-timestamp')
  const signatures = headerOf(headers, 'webhook-signature')
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature')
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not a number of seconds')
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000)
  if (Math.abs(now - Number(timestamp)) > (options.toleranceSeconds ?? 300))
    throw new WebhookVerificationError('webhook-timestamp too old or too new')
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64')
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest()
  // The header may list several signatures (a secret being rotated), space-separated.
  const matches = signatures.split(' ').some((entry) => {
    const [version, signature] = entry.split(',', 2)
    if (version !== 'v1' || !signature) return false
    const given = Buffer.from(signature, 'base64')
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
  if (!matches) throw new WebhookVerificationError('no valid v1 signature')
  return JSON.parse(body)
}
