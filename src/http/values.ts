// The 422 side of the contract's 400/422 split for the API: a value whose shape is right but which a
// rule of lib/validate refuses is answered 422 VALIDATION_ERROR with the problem, which names its field.

import { badValue } from './errors'
import { readTimestamp } from '../lib/time'
import { checkMediaUrl, checkMessageBody, checkPage, checkPhone, checkText, type Checked, type DateRange, type Page } from '../lib/validate'

/** The checked value, or the 422 of its problem. */
export function valueOf<T>(checked: Checked<T>): T {
  if (!checked.ok) throw badValue(checked.problem)
  return checked.value
}

export const requirePhone = (value: string, field: string): string => valueOf(checkPhone(value, field))
export const requireMessageBody = (value: string, field: string): string => valueOf(checkMessageBody(value, field))
export const optionalMediaUrl = (value: string | undefined | null, field: string): string | null => valueOf(checkMediaUrl(value, field))
/** A required name or label: trimmed, not empty, at most `max` characters. */
export const requireText = (value: string, field: string, max = 200): string => valueOf(checkText(value, field, max))
/** `YYYY-MM-DD HH:MM:SS` in the service time zone, read at the edge (services take the Date). */
export function requireTimestamp(value: string, field: string, timeZone: string): Date {
  const date = readTimestamp(value, timeZone)
  if (date === 'format') throw badValue(`${field}: must be a timestamp YYYY-MM-DD HH:MM:SS`)
  if (date === 'year') throw badValue(`${field}: the year must be 1000 or later`)
  if (date === 'gap') throw badValue(`${field}: ${value} does not exist in ${timeZone} (skipped by a daylight-saving change)`)
  return date
}
/** An optional timestamp field: undefined when not given. */
export const optionalTimestamp = (value: string | undefined, field: string, timeZone: string): Date | undefined =>
  value === undefined ? undefined : requireTimestamp(value, field, timeZone)
/** `limit`/`offset` of a list (default 50 and 0). */
export const page = (query: { limit?: number; offset?: number }, max = 200): Page => valueOf(checkPage(query, max))
/** `date_from`/`date_to` of a list as a DateRange (lib/validate says how `before` ends date_to's second). */
export function dateRange(query: { date_from?: string; date_to?: string }, timeZone: string): DateRange {
  const from = query.date_from === undefined ? null : requireTimestamp(query.date_from, 'date_from', timeZone)
  const to = query.date_to === undefined ? null : requireTimestamp(query.date_to, 'date_to', timeZone)
  return { from, before: to && new Date(to.getTime() + 1000) }
}
