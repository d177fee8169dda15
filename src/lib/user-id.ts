// WhatsApp's business-scoped user ids (BSUIDs, issue 32): how Meta names a customer who hides the phone
// number behind a username. Two uppercase letters (a country), a dot, then up to 128 letters and digits
// (`ID.13491208655302741918`); a parent id, shared across a group of businesses, has one more part
// (`US.ENT.…`). Case-sensitive: kept as given.

const USER_ID = /^[A-Z]{2}\.(?:[A-Z]{2,8}\.)?[A-Za-z0-9]{1,128}$/

/** Whether `value` is a business-scoped user id (or a parent id). */
export const isUserId = (value: string): boolean => USER_ID.test(value)

/** `value` trimmed when it is a user id, else null. */
export function userIdOf(value: unknown): string | null {
  if (typeof value !== 'string') return null
  const trimmed = value.trim()
  return isUserId(trimmed) ? trimmed : null
}
