// Value rules shared by the endpoints (the 422 side of the contract's 400/422 split).

import { badValue } from '../http/errors'
import { normalizePhone } from './phone'

export const MAX_BODY_CHARS = 4096

export function requirePhone(value: string, field: string): string {
  const phone = normalizePhone(value)
  if (!phone) throw badValue(`${field}: not a valid Indonesian phone number`)
  return phone
}

export function requireMessageBody(value: string, field: string): string {
  if (value.trim().length === 0) throw badValue(`${field}: must not be empty`)
  if (value.length > MAX_BODY_CHARS) throw badValue(`${field}: must be at most ${MAX_BODY_CHARS} characters`)
  return value
}

export function optionalMediaUrl(value: string | undefined | null, field: string): string | null {
  if (value === undefined || value === null) return null
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw badValue(`${field}: must be an absolute http or https URL`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badValue(`${field}: must be an absolute http or https URL`)
  if (value.length > 2048) throw badValue(`${field}: must be at most 2048 characters`)
  return value
}

export type Page = { limit: number; offset: number }

export function page(query: { limit?: number; offset?: number }, max = 200): Page {
  const limit = query.limit ?? 50
  const offset = query.offset ?? 0
  if (!Number.isInteger(limit) || limit < 1 || limit > max) throw badValue(`limit: must be from 1 to ${max}`)
  if (!Number.isInteger(offset) || offset < 0) throw badValue('offset: must not be negative')
  return { limit, offset }
}
