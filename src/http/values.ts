// The 422 side of the contract's 400/422 split: a value whose shape is right but which is not
// acceptable is refused with a message that names its field.

import { badValue } from './errors'

/** A required name or label: trimmed, not empty, at most `max` characters. */
export function requireText(value: string, field: string, max = 200): string {
  const trimmed = value.trim()
  if (!trimmed) throw badValue(`${field}: must not be empty`)
  if (trimmed.length > max) throw badValue(`${field}: must be at most ${max} characters`)
  return trimmed
}
