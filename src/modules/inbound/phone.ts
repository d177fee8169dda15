// A customer's number as inbound messages store it: customers write from anywhere, not only from
// Indonesian numbers.

import { normalizePhone } from '../../lib/phone'
import { badValue } from '../../http/errors'
import { MAX_PHONE_CHARS } from '../../lib/validate'
import { isUserId } from '../../lib/user-id'

/**
 * A customer's number as stored: an Indonesian number in its +62 form, any other as + and its digits
 * (customers write from anywhere); null when it has no digits to speak of.
 */
export function inboundPhone(value: string): string | null {
  const indonesian = normalizePhone(value)
  if (indonesian) return indonesian
  const digits = value.replace(/^whatsapp:/i, '').replace(/[\s\-.()]/g, '')
  return /^\+?\d{6,15}$/.test(digits) ? `+${digits.replace(/^\+/, '')}` : null
}

/** A customer of a request (path or filter): a number, or a WhatsApp business-scoped user id (issue 32); 422 otherwise. */
export function requireInboundPhone(value: string, field: string): string {
  if (isUserId(value.trim())) return value.trim()
  const phone = value.length > MAX_PHONE_CHARS ? null : inboundPhone(value)
  if (!phone) throw badValue(`${field}: not a valid phone number nor a WhatsApp user id (ID.1349…)`)
  return phone
}
