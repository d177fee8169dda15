// GET /messages and GET /messages/{sid}. Queued messages (charged, hand-off in progress) are not
// shown: the API knows only sent, delivered, read and failed.

import type { Deps } from '../../deps'
import type { ListStatements, Params, Sql } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import type { Principal } from '../../http/auth'
import { ApiError, badValue } from '../../http/errors'
import { formatTimes } from '../../lib/time'
import { MAX_PHONE_CHARS, pageOf, type Page } from '../../lib/validate'
import type { ListQuery } from './model'
import type { RichContent, StoredTemplate } from '../../providers/provider'
import { contentView, typeOf } from './rich'
import { shownTemplate } from './redact'
import { dateRange, page } from '../../http/values'

export const STATUSES = ['queued', 'sent', 'delivered', 'read', 'failed'] as const

type Row = {
  id: number
  message_sid: string | null
  phone: string
  status: (typeof STATUSES)[number]
  body: string
  media_url: string | null
  cost: number
  category: string
  error_code: number | null
  error_message: string | null
  campaign_id: number | null
  sender_id: number | null
  template_id: number | null
  provider_template: StoredTemplate | null
  content: RichContent | null
  created_at: Date
  sent_at: Date | null
  delivered_at: Date | null
  read_at: Date | null
  refunded_at: Date | null
}

const view = (r: Row) => ({
  id: r.id,
  message_sid: r.message_sid,
  phone: r.phone,
  status: r.status,
  body: r.body,
  media_url: r.media_url,
  cost: r.cost,
  category: r.category as 'marketing' | 'utility' | 'authentication' | 'service',
  error_code: r.error_code,
  error_message: r.error_message,
  campaign_id: r.campaign_id,
  sender_id: r.sender_id,
  template_id: r.template_id,
  provider_template: shownTemplate(r.provider_template),
  type: typeOf(r.content, r.template_id),
  content: contentView(r.content),
  created_at: r.created_at,
  sent_at: r.sent_at,
  delivered_at: r.delivered_at,
  read_at: r.read_at,
  // `cost` stays what was charged; a refunded message cost nothing in the end.
  refunded: r.refunded_at !== null,
})

/**
 * What a list is filtered by, already validated (`before` exclusive, see dateRange). `phone`: digits
 * only, the dashboard's search (the API has none).
 */
export type MessageFilter = {
  status?: string
  from: Date | null
  before: Date | null
  phone?: string
  senderId?: number
  /** The dashboard's search: the message's text or its contact's name contains it (case-insensitive). */
  text?: string
}

/**
 * The two statements of GET /messages: the page, id-first (the candidates come from an index, with a
 * date filter the sent_at one; only the page's rows are read from the table), and count(*) for
 * `total`. Pure, so the benchmark times exactly these. Named prepared statements (one per filter
 * combination), as when they were tagged templates.
 */
export function listStatements(accountId: number, filter: MessageFilter, p: Page): ListStatements {
  const params: Params = [accountId]
  let where = 'account_id = $1'
  // Messages being handed over are not listed, but for those answered `queued` (throttled): the
  // integrator has their id and waits for their outcome.
  if (filter.status) {
    params.push(filter.status)
    where += ` and status = $${params.length}`
    if (filter.status === 'queued') where += ' and announce_outcome'
  } else where += " and (status <> 'queued' or announce_outcome)"
  if (filter.from) {
    params.push(filter.from)
    where += ` and sent_at >= $${params.length}`
  }
  if (filter.before) {
    params.push(filter.before)
    where += ` and sent_at < $${params.length}`
  }
  if (filter.senderId !== undefined) {
    // 0: the deployment's default sender (messages without a stored sender).
    if (filter.senderId === 0) where += ' and sender_id is null'
    else {
      params.push(filter.senderId)
      where += ` and sender_id = $${params.length}`
    }
  }
  if (filter.phone) {
    // Digits anywhere in the number; digits typed with the leading 0 of a local number also match
    // from the start of the stored +62 form.
    params.push(`%${filter.phone}%`)
    if (filter.phone.startsWith('0')) {
      params.push(`+62${filter.phone.slice(1)}%`)
      where += ` and (phone like $${params.length - 1} or phone like $${params.length})`
    } else where += ` and phone like $${params.length}`
  }
  if (filter.text) {
    // LIKE's own characters taken literally; the contact is the account's own (same account, same phone).
    params.push(`%${filter.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)
    const t = `$${params.length}`
    where += ` and (body ilike ${t} or exists (select 1 from contacts c where c.account_id = $1 and c.phone = messages.phone and c.name ilike ${t}))`
  }
  const n = params.length + 1
  return {
    rows: {
      text: `
    with page as (
      select id, created_at from messages where ${where}
      order by created_at desc, id desc
      limit $${n} offset $${n + 1}
    )
    select m.id, m.message_sid, m.phone, m.status, m.body, m.media_url, m.cost, m.category, m.error_code, m.error_message, m.campaign_id,
           m.sender_id, m.template_id, m.provider_template, m.content,
           m.created_at, m.sent_at, m.delivered_at, m.read_at, m.refunded_at
    from page join messages m on m.id = page.id
    order by page.created_at desc, page.id desc`,
      params: [...params, p.limit, p.offset],
    },
    count: { text: `select count(*)::int as n from messages where ${where}`, params },
    prepare: true,
  }
}

export async function listMessages(deps: Deps, principal: Principal, query: ListQuery) {
  // The API has no phone search: a `phone` parameter that got through is ignored, as before.
  return listAccountMessages(deps, principal.accountId, { ...query, phone: undefined, q: undefined })
}

/**
 * The phone search of the dashboard: the digits typed, separators dropped (listStatements also reads
 * a leading 0 as the start of a local number, so "0812" finds +62812…); a 422 without a digit.
 */
export function phoneSearch(value: string | undefined): string | undefined {
  const text = value?.trim() ?? ''
  if (text === '') return undefined
  if (text.length > MAX_PHONE_CHARS || !/^[\d\s+().-]+$/.test(text) || !/\d/.test(text)) {
    throw badValue('phone: digits of the number (part of it is enough)')
  }
  return text.replace(/\D/g, '')
}

/** The dashboard's list query: the API's, with `phone` (see phoneSearch) and `q` (a contact's name or the text). */
export type AccountListQuery = ListQuery & { phone?: string; q?: string }

/** The longest `q` the dashboard's search takes. */
export const MAX_SEARCH_CHARS = 100

/** A list query's filter, validated (422 naming the field). */
function filterOf(query: AccountListQuery, tz: string): MessageFilter {
  if (query.status !== undefined && !(STATUSES as readonly string[]).includes(query.status)) {
    throw badValue(`status: must be one of ${STATUSES.join(', ')}`)
  }
  const { from, before } = dateRange(query, tz)
  const phone = phoneSearch(query.phone)
  if (query.sender_id !== undefined && (!Number.isSafeInteger(query.sender_id) || query.sender_id < 0)) {
    throw badValue("sender_id: a sender id, or 0 for the deployment's default sender")
  }
  const text = query.q?.trim() || undefined
  if (text !== undefined && text.length > MAX_SEARCH_CHARS) throw badValue(`q: at most ${MAX_SEARCH_CHARS} characters`)
  return { status: query.status, from, before, phone, senderId: query.sender_id, text }
}

/** The most rows the dashboard's CSV of messages holds (the newest that match). */
export const MAX_EXPORT_ROWS = 10_000

/** The dashboard's CSV: the newest MAX_EXPORT_ROWS messages that match, newest first, formatted; `more` when some were left out. */
export async function exportAccountMessages(deps: Deps, accountId: number, query: AccountListQuery) {
  const st = listStatements(accountId, filterOf(query, deps.config.timezone), { limit: MAX_EXPORT_ROWS + 1, offset: 0 })
  const rows = (await deps.sql.unsafe(st.rows.text, st.rows.params, { prepare: st.prepare })) as unknown as Row[]
  return {
    items: rows.slice(0, MAX_EXPORT_ROWS).map((r) => formatTimes(view(r), deps.config.timezone)),
    more: rows.length > MAX_EXPORT_ROWS,
  }
}

/** GET /messages of one account; the dashboard adds `phone` and `q`. */
export async function listAccountMessages(deps: Deps, accountId: number, query: AccountListQuery) {
  const { sql } = deps
  const tz = deps.config.timezone
  const p = page(query)
  const st = listStatements(accountId, filterOf(query, tz), p)
  const rows = (await sql.unsafe(st.rows.text, st.rows.params, { prepare: st.prepare })) as unknown as Row[]
  // A page that is not full ends the list: the total is known without counting.
  const known = rows.length < p.limit && (rows.length > 0 || p.offset === 0)
  const [count] = known
    ? [{ n: p.offset + rows.length }]
    : ((await sql.unsafe(st.count.text, st.count.params, { prepare: st.prepare })) as unknown as { n: number }[])
  return pageOf(
    rows.map((r) => formatTimes(view(r), tz)),
    count!.n,
    p,
  )
}

export async function getMessage(deps: Deps, principal: Principal, sid: string) {
  const [row] = await deps.sql<Row[]>`
    select id, message_sid, phone, status, body, media_url, cost, category, error_code, error_message, campaign_id, sender_id, template_id, provider_template, content,
           created_at, sent_at, delivered_at, read_at, refunded_at
    from messages where message_sid = ${sid} and account_id = ${principal.accountId}`
  if (!row) throw new ApiError('NOT_FOUND', `message ${sid} not found`)
  return formatTimes(view(row), deps.config.timezone)
}

/**
 * One message of an account by its internal id (the dashboard's message page), with its failed and
 * refunded times and whether its price refunds a failure after acceptance.
 */
export async function getAccountMessage(sql: Sql, accountId: number, id: number) {
  const [row] = await sql<(Row & { failed_at: Date | null; refund_late_failure: boolean })[]>`
    select id, message_sid, phone, status, body, media_url, cost, category, error_code, error_message, campaign_id, sender_id, template_id, provider_template, content,
           created_at, sent_at, delivered_at, read_at, failed_at, refunded_at, refund_late_failure
    from messages where id = ${id} and account_id = ${accountId} and (status <> 'queued' or announce_outcome)`
  if (!row) throw new ApiError('NOT_FOUND', `message ${id} not found`)
  return {
    ...view(row),
    failed_at: row.failed_at,
    refunded_at: row.refunded_at,
    refund_late_failure: row.refund_late_failure,
  }
}

/** Messages created on each of the last `days` days (in `tz`, today by `clock` included), by status: day → status → count. */
export async function dailyStatusCounts(sql: Sql, clock: Pick<Clock, 'sqlNow'>, tz: string, accountId: number, days = 30) {
  const rows = await sql<{ day: string; status: string; n: number }[]>`
    select to_char(created_at at time zone ${tz}, 'YYYY-MM-DD') as day, status, count(*)::int as n
    from messages
    where account_id = ${accountId} and status <> 'queued'
      and created_at >= (date_trunc('day', ${nowOf(sql, clock)} at time zone ${tz}) - make_interval(days => ${days - 1})) at time zone ${tz}
    group by 1, 2`
  const counts = new Map<string, Record<string, number>>()
  for (const r of rows) counts.set(r.day, { ...counts.get(r.day), [r.status]: r.n })
  return counts
}

/** The account's latest failed messages, newest first, with their error. */
export async function recentFailures(sql: Sql, accountId: number, limit = 10) {
  const rows = await sql<Row[]>`
    select id, message_sid, phone, status, body, media_url, cost, category, error_code, error_message, campaign_id, sender_id, template_id, provider_template, content,
           created_at, sent_at, delivered_at, read_at, refunded_at
    from messages where account_id = ${accountId} and status = 'failed'
    order by created_at desc, id desc limit ${limit}`
  return rows.map(view)
}

/** The account's failed messages of the last `days` days (in `tz`) by error code (null: none given), most first. */
export async function failuresByCode(sql: Sql, clock: Pick<Clock, 'sqlNow'>, tz: string, accountId: number, days = 30) {
  const rows = await sql<{ code: number | null; n: number }[]>`
    select error_code as code, count(*)::int as n
    from messages
    where account_id = ${accountId} and status = 'failed'
      and created_at >= (date_trunc('day', ${nowOf(sql, clock)} at time zone ${tz}) - make_interval(days => ${days - 1})) at time zone ${tz}
    group by 1
    order by 2 desc, 1 nulls last
    limit 20`
  return rows.map((r) => ({ code: r.code === null ? null : Number(r.code), count: r.n }))
}
