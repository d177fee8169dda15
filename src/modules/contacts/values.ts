// Where a value for a contact comes from, for a campaign that fills a WhatsApp template's parameters
// per recipient: one of the contact's fields, one of its own attributes, or a constant the same for all.

import type { Attributes } from './service'

export type ContactField = 'name' | 'phone' | 'email' | 'city'
const FIELDS: readonly string[] = ['name', 'phone', 'email', 'city'] satisfies ContactField[]

export type ValueSource = { field: ContactField } | { attribute: string } | { constant: string }

/** What contactValue reads of a contact (a row of `contacts`, or its API view). */
export type ContactFields = {
  name: string
  phone: string
  email: string | null
  city: string | null
  attributes: Attributes
}

/**
 * The contact's value from `source`, or undefined when it has none: an e-mail or city not given, an
 * attribute it does not have (only its own keys count: `constructor` is no attribute of a contact
 * without one). An empty text is none too (a template parameter cannot be empty); a constant is
 * itself, whoever the contact.
 */
export function contactValue(contact: ContactFields, source: ValueSource): string | undefined {
  let value: string | null | undefined
  if ('constant' in source) value = source.constant
  else if ('attribute' in source)
    value = Object.hasOwn(contact.attributes, source.attribute) ? contact.attributes[source.attribute] : undefined
  else if (FIELDS.includes(source.field)) value = contact[source.field]
  return typeof value === 'string' && value !== '' ? value : undefined
}
