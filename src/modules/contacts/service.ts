// Contacts of an account: one per normalised phone, searchable by name, phone and e-mail, each with
// its own attributes (text to text: what an integrator keeps per customer for its templates).

import { transaction, type Db, type ListStatements, type Sql } from '../../db/client'
import type { Principal } from '../../http/auth'
import { ApiError, badValue } from '../../http/errors'
import { pageOf, type Page } from '../../lib/validate'
import type { CreateContactBody } from './model'
import { requirePhone } from '../../http/values'
import { isUserId } from '../../lib/user-id'

export const MAX_TEXT = 200
export const MAX_EMAIL = 254
export const MAX_TAGS = 50
export const MAX_TAG = 100
export const MAX_SEARCH = 200
export const MAX_ATTRIBUTES = 50
export const MAX_ATTRIBUTE_KEY = 64
export const MAX_ATTRIBUTE_VALUE = 1024
const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/
const ATTRIBUTE_KEY = /^[A-Za-z0-9_]+$/

/** A contact's own values: key (letters, digits, underscores) to text. */
export type Attributes = Record<string, string>

type ContactRow = {
  id: number
  name: string
  phone: string
  email: string | null
  city: string | null
  tags: string[]
  attributes: Attributes
  user_id: string | null
  created_at: Date
}
const COLUMNS = 'id, name, phone, email, city, tags, attributes, user_id, created_at'

/** Attributes with their keys in order (jsonb keeps them shortest first). */
const sortedAttributes = (attributes: Attributes): Attributes =>
  Object.fromEntries(Object.entries(attributes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))

const contactView = (row: ContactRow) => ({
  id: row.id,
  name: row.name,
  phone: row.phone,
  email: row.email,
  city: row.city,
  tags: row.tags,
  attributes: sortedAttributes(row.attributes),
  user_id: row.user_id,
  created_at: row.created_at,
})

/** A key as a message names it: as it is when it is a key, else quoted (and cut when long). */
const keyName = (key: string) =>
  ATTRIBUTE_KEY.test(key) && key.length <= MAX_ATTRIBUTE_KEY
    ? key
    : JSON.stringify(key.length > MAX_ATTRIBUTE_KEY ? `${key.slice(0, MAX_ATTRIBUTE_KEY)}…` : key)

/**
 * Attributes checked, applied over `base` (none, or a contact's own for a change): a value of null or
 * "" removes the key, any other replaces it. A 422 (ApiError) names the first bad key: `attributes.KEY: ...`.
 * Built in a Map, so a key such as `__proto__` or `constructor` is a key like any other.
 */
export function attributeValues(input: Record<string, string | null> | undefined, base: Attributes = {}, field = 'attributes'): Attributes {
  const out = new Map(Object.entries(base))
  for (const [key, value] of Object.entries(input ?? {})) {
    const at = `${field}.${keyName(key)}`
    if (key === '') throw badValue(`${field}."": a key must not be empty`)
    if (key.length > MAX_ATTRIBUTE_KEY) throw badValue(`${at}: a key must be at most ${MAX_ATTRIBUTE_KEY} characters`)
    if (!ATTRIBUTE_KEY.test(key)) throw badValue(`${at}: a key is made of letters, digits and underscores`)
    if (value === null || value === '') {
      out.delete(key)
      continue
    }
    if (typeof value !== 'string') throw badValue(`${at}: must be a string`)
    if (value.length > MAX_ATTRIBUTE_VALUE) throw badValue(`${at}: must be at most ${MAX_ATTRIBUTE_VALUE} characters`)
    if (value.includes('\0')) throw badValue(`${at}: must not contain the NUL character`)
    out.set(key, value)
    if (out.size > MAX_ATTRIBUTES) throw badValue(`${at}: a contact has at most ${MAX_ATTRIBUTES} attributes`)
  }
  return Object.fromEntries(out)
}

const jsonOf = (attributes: Attributes) => JSON.stringify(attributes)

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
function parseTags(value: string | undefined): string[] {
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
function searchCondition(search: string | undefined): { text: string; params: string[] } {
  const term = search?.trim().toLowerCase()
  if (!term) return { text: '', params: [] }
  if (term.length > MAX_SEARCH) throw badValue(`search: must be at most ${MAX_SEARCH} characters`)
  const substring = `%${escapeLike(term)}%`
  // A term without a whole trigram cannot use the trigram index (it would read all of it): scan instead.
  const column = term.replace(/[^\p{L}\p{N}]/gu, '').length < 3 ? "(search_text || '')" : 'search_text'
  // A WhatsApp user id (issue 32): a contact known by one has it in user_id (and in phone until a phone is known).
  if (isUserId(search!.trim())) return { text: `and (${column} like $2 or user_id = $3)`, params: [substring, search!.trim()] }
  if (!/^\+?[\d\s\-.()]+$/.test(term) || !/\d/.test(term)) {
    return { text: `and ${column} like $2`, params: [substring] }
  }
  // The phone is in search_text too, after the first newline: one trigram index answers both forms.
  const digits = term.replace(/[\s\-.()]/g, '')
  const phone = digits.startsWith('0') ? `%\n+62${digits.slice(1)}%` : `%${digits}%`
  return { text: `and (${column} like $2 or ${column} like $3)`, params: [substring, phone] }
}

/**
 * The two statements of GET /contacts: the page and count(*) for `total`. Pure, so the benchmark
 * times exactly these. A `search` longer than allowed is a 422 (ApiError). Unnamed statements,
 * planned for each term: a named statement goes generic after five runs, and one plan cannot fit both
 * a frequent and a rare term.
 */
export function contactListStatements(accountId: number, search: string | undefined, p: Page): ListStatements {
  const cond = searchCondition(search)
  const where = `where account_id = $1 ${cond.text}`
  const n = cond.params.length + 2
  const params = [accountId, ...cond.params]
  return {
    rows: {
      text: `select ${COLUMNS} from contacts ${where}
     order by created_at desc, id desc limit $${n} offset $${n + 1}`,
      params: [...params, p.limit, p.offset],
    },
    count: { text: `select count(*)::int as n from contacts ${where}`, params },
    prepare: false,
  }
}

export async function listContacts(sql: Sql, principal: Principal, p: Page, search: string | undefined) {
  const st = contactListStatements(principal.accountId, search, p)
  const rows = (await sql.unsafe(st.rows.text, st.rows.params, { prepare: st.prepare })) as unknown as ContactRow[]
  const known = rows.length < p.limit && (rows.length > 0 || p.offset === 0)
  const [count] = known
    ? [{ n: p.offset + rows.length }]
    : ((await sql.unsafe(st.count.text, st.count.params, { prepare: st.prepare })) as unknown as { n: number }[])
  return pageOf(rows.map(contactView), count!.n, p)
}

export type ContactValues = {
  name: string
  phone: string
  email: string | null
  city: string | null
  tags: string[]
  attributes: Attributes
}

/** A contact's fields checked and normalised, or a 422 (ApiError) naming the first bad one. */
export function contactValues(input: CreateContactBody): ContactValues {
  return {
    name: requireText(input.name, 'name'),
    phone: requirePhone(input.phone, 'phone'),
    email: optionalEmail(input.email),
    city: optionalText(input.city, 'city'),
    tags: parseTags(input.tags),
    attributes: attributeValues(input.attributes),
  }
}

export async function createContact(sql: Db, principal: Principal, input: CreateContactBody) {
  const { name, phone, email, city, tags, attributes } = contactValues(input)
  try {
    const [row] = await sql<ContactRow[]>`
      insert into contacts (account_id, name, phone, email, city, tags, attributes)
      values (${principal.accountId}, ${name}, ${phone}, ${email}, ${city}, ${sql.array(tags)}::text[], ${jsonOf(attributes)}::text::jsonb)
      returning ${sql.unsafe(COLUMNS)}`
    return contactView(row!)
  } catch (error) {
    // The unique constraint decides, so two concurrent creates of one number cannot both win.
    const e = error as { code?: string; constraint_name?: string }
    if (e.code === '23505' && e.constraint_name === 'contacts_phone_unique') {
      throw new ApiError('CONFLICT', `phone: a contact with ${phone} already exists`)
    }
    throw error
  }
}

const contactNotFound = (id: number) => new ApiError('NOT_FOUND', `contact ${id} not found`)
const isRowId = (id: number) => Number.isSafeInteger(id) && id > 0

/** One contact of the account; another account's is 404 `NOT_FOUND`, like one that does not exist. */
export async function getContact(sql: Db, accountId: number, id: number) {
  if (!isRowId(id)) throw contactNotFound(id)
  const [row] = await sql<ContactRow[]>`select ${sql.unsafe(COLUMNS)} from contacts where id = ${id} and account_id = ${accountId}`
  if (!row) throw contactNotFound(id)
  return contactView(row)
}

/**
 * Changes a contact's attributes as a JSON merge patch does: each key given is set, or removed by null
 * or ""; the others stay (with `replace`, the ones given are all it keeps: the dashboard's form). Under
 * the row's lock, so two concurrent changes both count.
 */
export async function changeContactAttributes(
  db: Db,
  accountId: number,
  id: number,
  change: Record<string, string | null>,
  options: { replace?: boolean } = {},
) {
  if (!isRowId(id)) throw contactNotFound(id)
  return transaction(db, async (tx) => {
    const [row] = await tx<{ attributes: Attributes }[]>`
      select attributes from contacts where id = ${id} and account_id = ${accountId} for update`
    if (!row) throw contactNotFound(id)
    const attributes = attributeValues(change, options.replace ? {} : row.attributes)
    const [changed] = await tx<ContactRow[]>`
      update contacts set attributes = ${jsonOf(attributes)}::text::jsonb where id = ${id} returning ${tx.unsafe(COLUMNS)}`
    return contactView(changed!)
  })
}

/** Every contact of the account, oldest first (the dashboard's CSV export). */
export async function exportContacts(sql: Db, accountId: number) {
  const rows = await sql<ContactRow[]>`select ${sql.unsafe(COLUMNS)} from contacts where account_id = ${accountId} order by id`
  return rows.map(contactView)
}

const duplicateOf = (phone: string) => `phone: a contact with ${phone} already exists`

/**
 * Imports checked contacts (contactValues) in one transaction. A phone the account already has is
 * a bad row; with `allOrNothing` any bad row imports nothing. The unique constraint decides, so a
 * contact added meanwhile is reported too rather than imported twice.
 */
export async function importContacts(
  sql: Db,
  accountId: number,
  rows: { line: number; values: ContactValues }[],
  allOrNothing: boolean,
): Promise<{ imported: number; bad: { line: number; reason: string }[] }> {
  class Rollback extends Error {}
  let result: { imported: number; bad: { line: number; reason: string }[] } = { imported: 0, bad: [] }
  try {
    await transaction(sql, async (tx) => {
      const phones = rows.map((r) => r.values.phone)
      const existing = new Set(
        (await tx<{ phone: string }[]>`select phone from contacts where account_id = ${accountId} and phone = any(${phones}::text[])`).map(
          (r) => r.phone,
        ),
      )
      const bad = rows.filter((r) => existing.has(r.values.phone)).map((r) => ({ line: r.line, reason: duplicateOf(r.values.phone) }))
      if (allOrNothing && bad.length > 0) {
        result = { imported: 0, bad }
        return
      }
      const fresh = rows.filter((r) => !existing.has(r.values.phone))
      const v = fresh.map((r) => r.values)
      const inserted = new Set(
        (
          await tx<{ phone: string }[]>`
            insert into contacts (account_id, name, phone, email, city, tags, attributes)
            select ${accountId}, v.name, v.phone, v.email, v.city,
              coalesce((select array_agg(t) from json_array_elements_text(v.tags::json) as t), '{}'), v.attributes::jsonb
            from unnest(${v.map((c) => c.name)}::text[], ${v.map((c) => c.phone)}::text[], ${v.map((c) => c.email) as string[]}::text[],
                        ${v.map((c) => c.city) as string[]}::text[], ${v.map((c) => JSON.stringify(c.tags))}::text[],
                        ${v.map((c) => jsonOf(c.attributes))}::text[])
              as v(name, phone, email, city, tags, attributes)
            on conflict (account_id, phone) do nothing
            returning phone`
        ).map((r) => r.phone),
      )
      for (const r of fresh) if (!inserted.has(r.values.phone)) bad.push({ line: r.line, reason: duplicateOf(r.values.phone) })
      bad.sort((a, b) => a.line - b.line)
      result = { imported: inserted.size, bad }
      if (allOrNothing && bad.length > 0) {
        result = { imported: 0, bad }
        throw new Rollback()
      }
    })
  } catch (error) {
    if (!(error instanceof Rollback)) throw error
  }
  return result
}

/**
 * The id of the account's contact with `phone`, created with `name` when missing (an inbound message
 * from a new number); an existing contact keeps its name.
 */
export async function ensureContact(db: Db, accountId: number, phone: string, name: string, userId: string | null = null): Promise<number> {
  const [contact] = await db<{ id: number }[]>`
    insert into contacts (account_id, name, phone, user_id) values (${accountId}, ${name.slice(0, MAX_TEXT)}, ${phone}, ${userId})
    on conflict (account_id, phone) do update set phone = excluded.phone, user_id = coalesce(excluded.user_id, contacts.user_id)
    returning id`
  return Number(contact!.id)
}

/**
 * A customer's key changed (issue 32): in `accounts` (null: every account), a contact keyed `from` takes
 * the key `to` unless the account has a contact keyed `to` already (then both stay); `userId`, when
 * given, is the user id of the contact keyed `to` from now on.
 */
export async function rekeyContacts(tx: Db, accounts: number[] | null, from: string, to: string, userId: string | null): Promise<void> {
  const scope = accounts === null ? tx`true` : tx`c.account_id = any(${accounts}::bigint[])`
  await tx`
    update contacts c set phone = ${to} where c.phone = ${from} and ${scope}
      and not exists (select 1 from contacts k where k.account_id = c.account_id and k.phone = ${to})`
  if (userId !== null) await tx`update contacts c set user_id = ${userId} where c.phone = ${to} and ${scope}`
}
