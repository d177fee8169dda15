// Value rules shared by the endpoints (the 422 side of the contract's 400/422 split).

import { badValue } from '../http/errors'
import { normalizePhone } from './phone'
import { readTimestamp } from './time'

export const MAX_BODY_CHARS = 4096
export const MAX_MEDIA_URL_CHARS = 2048
/** A phone number as written, separators included ("+62 (812) 3456-7890" is 19). */
export const MAX_PHONE_CHARS = 40
export const MAX_BULK_MESSAGES = 1000

export function requirePhone(value: string, field: string): string {
  const phone = value.length > MAX_PHONE_CHARS ? null : normalizePhone(value)
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
  if (value.length > MAX_MEDIA_URL_CHARS) throw badValue(`${field}: must be at most ${MAX_MEDIA_URL_CHARS} characters`)
  return value
}

export type Page = { limit: number; offset: number }

export function page(query: { limit?: number; offset?: number }, max = 200): Page {
  const limit = query.limit ?? 50
  const offset = query.offset ?? 0
  if (!Number.isInteger(limit) || limit < 1 || limit > max) throw badValue(`limit: must be from 1 to ${max}`)
  if (!Number.isInteger(offset) || offset < 0) throw badValue('offset: must not be negative')
  if (!Number.isSafeInteger(offset)) throw badValue(`offset: must be at most ${Number.MAX_SAFE_INTEGER}`)
  return { limit, offset }
}

/** A list's answer: one page of items, the count of every match, the page, and whether more follow it. */
export const pageOf = <T>(items: T[], total: number, p: Page) => ({ items, total, ...p, has_more: p.offset + items.length < total })

/**
 * `date_from`/`date_to` of a list, both inclusive. Timestamps are shown to the second but stored finer,
 * so the upper bound is the end of its second: `before` is exclusive, one second after `date_to`, and
 * `date_to=10:00:00` includes a row at 10:00:00.7.
 */
export type DateRange = { from: Date | null; before: Date | null }

export function dateRange(query: { date_from?: string; date_to?: string }, timeZone: string): DateRange {
  const from = timestampParam(query.date_from, 'date_from', timeZone)
  const to = timestampParam(query.date_to, 'date_to', timeZone)
  return { from, before: to && new Date(to.getTime() + 1000) }
}

export function timestampParam(value: string | undefined, field: string, timeZone: string): Date | null {
  if (value === undefined) return null
  return requireTimestamp(value, field, timeZone)
}

/** `YYYY-MM-DD HH:MM:SS` in the service time zone, or a 422 that says what is wrong with it. */
export function requireTimestamp(value: string, field: string, timeZone: string): Date {
  const date = readTimestamp(value, timeZone)
  if (date === 'format') throw badValue(`${field}: must be a timestamp YYYY-MM-DD HH:MM:SS`)
  if (date === 'year') throw badValue(`${field}: the year must be 1000 or later`)
  if (date === 'gap') throw badValue(`${field}: ${value} does not exist in ${timeZone} (skipped by a daylight-saving change)`)
  return date
}
