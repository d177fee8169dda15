// Schemas shared by the OpenAPI document: the success envelope around a model, and error answers.

import { t, type TSchema } from 'elysia'

export const envelopeOf = <T extends TSchema>(data: T) => t.Object({ success: t.Literal(true), data }, { description: 'Success envelope' })

const ERROR_EXAMPLES: Record<number, { code: string; error: string; description: string }> = {
  400: {
    code: 'VALIDATION_ERROR',
    error: 'to: is required',
    description: 'Wrong shape: not JSON, a required field missing, a wrong JSON type',
  },
  401: { code: 'AUTH_INVALID_KEY', error: 'API key is invalid or inactive', description: 'AUTH_MISSING_HEADER or AUTH_INVALID_KEY' },
  402: {
    code: 'INSUFFICIENT_BALANCE',
    error: 'wa_balance is not enough for this message',
    description: 'The balance cannot pay; nothing changed',
  },
  403: { code: 'HTTPS_REQUIRED', error: 'this service accepts HTTPS requests only', description: 'Forbidden' },
  404: { code: 'NOT_FOUND', error: 'message SM... not found', description: "Unknown id (or another account's)" },
  409: {
    code: 'CONFLICT',
    error: 'a contact with this phone already exists',
    description: 'Duplicate, or the same Idempotency-Key still in flight',
  },
  422: {
    code: 'VALIDATION_ERROR',
    error: 'to: not a valid Indonesian phone number',
    description: 'A value is not acceptable (also IDEMPOTENCY_KEY_REUSED)',
  },
  502: {
    code: 'BAD_GATEWAY',
    error: 'the messaging provider did not accept the message',
    description: 'Provider hand-off failed; the charge was refunded',
  },
}

export const ErrorEnvelope = t.Object(
  {
    success: t.Literal(false),
    error: t.String({ description: 'Human-readable description naming the field' }),
    code: t.String({ description: 'Machine-readable error code' }),
  },
  { description: 'Error envelope' },
)

export function errorsOf(...statuses: number[]): Record<number, typeof ErrorEnvelope> {
  const out: Record<number, typeof ErrorEnvelope> = {}
  for (const status of statuses) {
    const example = ERROR_EXAMPLES[status]
    out[status] = t.Object(ErrorEnvelope.properties, {
      description: example?.description ?? 'Error',
      examples: example ? [{ success: false, error: example.error, code: example.code }] : undefined,
    }) as typeof ErrorEnvelope
  }
  return out
}
