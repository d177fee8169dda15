// The error envelope an answer must be: its `request_id` is the request's own, the `x-request-id` header.

import { expect } from 'bun:test'

export const errorEnvelope = (
  headers: Headers,
  code: string,
  error: unknown = expect.any(String),
  fields: Record<string, unknown> = {},
) => ({
  success: false,
  error,
  code,
  ...fields,
  request_id: headers.get('x-request-id'),
})
