// Contacts of an account: one per normalised phone, searchable by name, phone and e-mail.

import type { Sql } from '../../db/client'
import type { Principal } from '../../http/auth'
import { ApiError, badValue } from '../../http/errors'
import { formatTimestamp } from '../../lib/time'
import { requirePhone, type Page } from '../../lib/validate'
import type { Contact, CreateContactBody } from './model'

const MAX_TEXT = 200
const MAX_EMAIL = 254
const MAX_TAGS = 50
const MAX_TAG = 100
const MAX_SEARCH = 200
const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/

type ContactRow = { id: number; name: string; phone: string; email: string | null; city: string | null; tags: string[]; created_at: Date }

const contactView = (row: ContactRow, tz: string): Contact => ({
  id: row.id,
  name: row.name,
  phone: row.phone,
  email: row.email,
  city: row.city,
  tags: row.tags,
  created_at: formatTimestamp(row.created_at, tz)!,
})

function requireText(value: string, field: string): string {
  const trimmed = value.trim()
  if (!trimmed) throw badValue(`${field}: must not be empty`)
  if (trimmed.length > MAX_TEXT) throw badValue(`${field}: must be at most ${MAX_TEXT} characters`)
  return trimmed
}

/** An optional text field: absent or blank means none. */
function optionalText(value: string | undefined, field: string, max = MAX_TEXT): string | null {
  const trimmed = value?.trim()
  if (!trimmed) return null
  if (trimmed.length > max) throw badValue(`${field}: must be at most ${max} characters`)
  return trimmed
}

function optionalEmail(value: string | undefined): string | null {
  const email = optionalText(value, 'email', MAX_EMAIL)
  if (email !== null && !EMAIL.test(email)) throw badValue('email: not a valid e-mail address')
  return email
}

/** "vip, reseller,,vip" → ["vip", "reseller"]: trimmed, empties dropped, first occurrence kept. */
export function parseTags(value: string | undefined): string[] {
  if (value === undefined) return []
  const tags = [
    ...new Set(
      value
        .split(',')
        .map((tag) => tag.trim())
        .filter(Boolean),
    ),
  ]
  if (tags.length > MAX_TAGS) throw badValue(`tags: at most ${MAX_TAGS} tags`)
  const long = tags.find((tag) => tag.length > MAX_TAG)
  if (long !== undefined) throw badValue(`tags: each tag must be at most ${MAX_TAG} characters`)
  return tags
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/**
 * The condition for `search`: a substring of search_text (lowercased name, phone and e-mail, see the
 * migration). A term that reads as a phone number also matches with its separators removed, and in
 * the national 08xx form it matches the stored +62 form.
 */
function searchCondition(sql: Sql, search: string | undefined) {
  const term = search?.trim().toLowerCase()
  if (!term) return sql``
  if (term.length > MAX_SEARCH) throw badValue(`search: must be at most ${MAX_SEARCH} characters`)
  const substring = `%${escapeLike(term)}%`
  if (!/^\+?[\d\s\-.()]+$/.test(term) || !/\d/.test(term)) return sql`and search_text like ${substring}`
  const digits = term.replace(/[\s\-.()]/g, '')
  const phone = digits.startsWith('0') ? `+62${digits.slice(1)}%` : `%${digits}%`
  return sql`and (search_text like ${substring} or phone like ${phone})`
}

export async function listContacts(sql: Sql, tz: string, principal: Principal, p: Page, search: string | undefined) {
  // A fragment per query: postgres.js fragments are not meant to be shared between statements.
  const where = () => sql`where account_id = ${principal.accountId} ${searchCondition(sql, search)}`
  const [rows, [count]] = await Promise.all([
    sql<ContactRow[]>`
      select id, name, phone, email, city, tags, created_at from contacts ${where()}
      order by created_at desc, id desc limit ${p.limit} offset ${p.offset}`,
    sql<{ n: number }[]>`select count(*)::int as n from contacts ${where()}`,
  ])
  return { items: rows.map((r) => contactView(r, tz)), total: count!.n, ...p }
}

export async function createContact(sql: Sql, tz: string, principal: Principal, input: CreateContactBody): Promise<Contact> {
  const name = requireText(input.name, 'name')
  const phone = requirePhone(input.phone, 'phone')
  const email = optionalEmail(input.email)
  const city = optionalText(input.city, 'city')
  const tags = parseTags(input.tags)
  try {
    const [row] = await sql<ContactRow[]>`
      insert into contacts (account_id, name, phone, email, city, tags)
      values (${principal.accountId}, ${name}, ${phone}, ${email}, ${city}, ${sql.array(tags)}::text[])
      returning id, name, phone, email, city, tags, created_at`
    return contactView(row!, tz)
  } catch (error) {
    // The unique constraint decides, so two concurrent creates of one number cannot both win.
    const e = error as { code?: string; constraint_name?: string }
    if (e.code === '23505' && e.constraint_name === 'contacts_phone_unique') {
      throw new ApiError('CONFLICT', `phone: a contact with ${phone} already exists`)
    }
    throw error
  }
}
