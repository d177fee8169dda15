// Value rules shared by the endpoints and the dashboard (the 422 side of the contract's 400/422 split).
// Each check answers the value, or the problem with it in words that name the field
// (`to: not a valid Indonesian phone number`); http/values.ts turns a problem into the API's 422, a
// page shows it at its field.

import { normalizePhone } from './phone'

export const MAX_BODY_CHARS = 4096
export const MAX_MEDIA_URL_CHARS = 2048
/** A phone number as written, separators included ("+62 (812) 3456-7890" is 19). */
export const MAX_PHONE_CHARS = 40
export const MAX_BULK_MESSAGES = 1000

/** A value that passed its rule, or the problem with it. */
export type Checked<T> = { ok: true; value: T } | { ok: false; problem: string }

const valid = <T>(value: T): Checked<T> => ({ ok: true, value })
const problem = (text: string): { ok: false; problem: string } => ({ ok: false, problem: text })

export function checkPhone(value: string, field: string): Checked<string> {
  const phone = value.length > MAX_PHONE_CHARS ? null : normalizePhone(value)
  return phone
    ? valid(phone)
    : problem(`${field}: not a valid Indonesian phone number: write it like 081234567890, 6281234567890 or +6281234567890`)
}

export function checkMessageBody(value: string, field: string): Checked<string> {
  if (value.trim().length === 0) return problem(`${field}: must not be empty`)
  if (value.length > MAX_BODY_CHARS) return problem(`${field}: must be at most ${MAX_BODY_CHARS} characters`)
  return valid(value)
}

export function checkMediaUrl(value: string | undefined | null, field: string): Checked<string | null> {
  if (value === undefined || value === null) return valid(null)
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return problem(`${field}: must be an absolute http or https URL`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return problem(`${field}: must be an absolute http or https URL`)
  if (value.length > MAX_MEDIA_URL_CHARS) return problem(`${field}: must be at most ${MAX_MEDIA_URL_CHARS} characters`)
  return valid(value)
}

/** The longest name (of an account, contact, template, segment, campaign) and label (of an API key). */
export const MAX_NAME_CHARS = 200
/** The longest note of a top-up or an adjustment. */
export const MAX_NOTE_CHARS = 200

/** A required name or label: trimmed, not empty, at most `max` characters. */
export function checkText(value: string, field: string, max = MAX_NAME_CHARS): Checked<string> {
  const trimmed = value.trim()
  if (!trimmed) return problem(`${field}: must not be empty`)
  if (trimmed.length > max) return problem(`${field}: must be at most ${max} characters`)
  return valid(trimmed)
}

/** An optional text (a note): trimmed, blank is null, at most `max` characters (longer is refused, never cut). */
export function checkOptionalText(value: string | null | undefined, field: string, max: number): Checked<string | null> {
  const trimmed = value?.trim() ?? ''
  if (trimmed.length > max) return problem(`${field}: must be at most ${max} characters`)
  return valid(trimmed === '' ? null : trimmed)
}

/** The largest amount a form takes: 15 digits (balances and prices are bigint; sums stay exact in a double). */
export const MAX_AMOUNT = 999_999_999_999_999

/**
 * An amount of money as a person types it: 5000, or with thousands separators 5,000 or 5.000 (a whole
 * number: the currency has no smaller unit here). The rules of the amount (positive, not 0) are the service's.
 * What is wrong is said apart, with what to type: a negative amount, one too large, or (a price) the range.
 */
export function checkAmount(value: string, field: string, currency: string, kind: 'amount' | 'price' = 'amount'): Checked<number> {
  const text = value.trim()
  const negative = text.startsWith('-')
  const unsigned = negative ? text.slice(1).trim() : text
  const grouped = /^\d{1,3}(,\d{3})+$/.test(unsigned) || /^\d{1,3}(\.\d{3})+$/.test(unsigned)
  const digits = grouped ? unsigned.replace(/[.,]/g, '') : unsigned
  const max = MAX_AMOUNT.toLocaleString('en')
  const shown = text.length > 30 ? `${text.slice(0, 30)}...` : text
  if (/^\d+$/.test(digits) && (negative || digits.length > 15)) {
    if (kind === 'price') return problem(`${field}: a price is from 1 to ${max} ${currency} per message (got ${shown}), like 350`)
    if (negative) {
      return problem(`${field}: cannot be negative (got ${shown}): type a positive whole number of ${currency}, like 5000`)
    }
    return problem(`${field}: too large (got ${digits.length} digits): at most ${max} ${currency}`)
  }
  if (!/^\d{1,15}$/.test(digits)) return problem(`${field}: must be a whole number of ${currency}, like 5000`)
  return valid(Number(digits))
}

/** The highest request rate a key can be given (requests per minute; the counter is a 32-bit integer). */
export const MAX_RATE_LIMIT_PER_MINUTE = 1_000_000_000
/** The longest validity a message may ask for (`validity_seconds`, MESSAGE_VALIDITY_SECONDS): three days. */
export const MAX_VALIDITY_SECONDS = 259_200
/** The shortest: a message gets at least one minute of retries. */
export const MIN_VALIDITY_SECONDS = 60

/** A key's own request rate: a whole number of requests per minute, or null for the service's default. */
export function checkRateLimit(value: number | null, field: string): Checked<number | null> {
  if (value === null) return valid(null)
  if (!Number.isInteger(value) || value < 1 || value > MAX_RATE_LIMIT_PER_MINUTE) {
    return problem(`${field}: must be from 1 to ${MAX_RATE_LIMIT_PER_MINUTE.toLocaleString('en')} requests a minute`)
  }
  return valid(value)
}

/** A key's daily spend cap: a whole amount from 0 (nothing may be charged), or null for no cap. */
export function checkSpendCap(value: number | null, field: string): Checked<number | null> {
  if (value === null) return valid(null)
  if (!Number.isSafeInteger(value) || value < 0) return problem(`${field}: must be a whole amount from 0`)
  return valid(value)
}

export type Page = { limit: number; offset: number }

export function checkPage(query: { limit?: number; offset?: number }, max = 200): Checked<Page> {
  const limit = query.limit ?? 50
  const offset = query.offset ?? 0
  if (!Number.isInteger(limit) || limit < 1 || limit > max) return problem(`limit: must be from 1 to ${max}`)
  if (!Number.isInteger(offset) || offset < 0) return problem('offset: must not be negative')
  if (!Number.isSafeInteger(offset)) return problem(`offset: must be at most ${Number.MAX_SAFE_INTEGER}`)
  return valid({ limit, offset })
}

/** A list's answer: one page of items, the count of every match, the page, and whether more follow it. */
export const pageOf = <T>(items: T[], total: number, p: Page) => ({ items, total, ...p, has_more: p.offset + items.length < total })

/**
 * `date_from`/`date_to` of a list, both inclusive. Timestamps are shown to the second but stored finer,
 * so the upper bound is the end of its second: `before` is exclusive, one second after `date_to`, and
 * `date_to=10:00:00` includes a row at 10:00:00.7.
 */
export type DateRange = { from: Date | null; before: Date | null }

/** WhatsApp's messaging-limit tiers: unique recipients of business-initiated messages per rolling 24 hours (beyond: unlimited). */
export const MESSAGING_TIERS = [250, 2000, 10000, 100000] as const
