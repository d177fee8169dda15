// GET /messages and GET /messages/{sid}. Queued messages (charged, hand-off in progress) are not
// shown: the API knows only sent, delivered, read and failed.

import type { Deps } from '../../deps'
import type { Principal } from '../../http/auth'
import { ApiError, badValue } from '../../http/errors'
import { formatTimestamp } from '../../lib/time'
import { dateRange, page } from '../../lib/validate'
import type { ListQuery } from './model'

const STATUSES = ['sent', 'delivered', 'read', 'failed'] as const

type Row = {
  id: number
  message_sid: string | null
  phone: string
  status: (typeof STATUSES)[number]
  body: string
  media_url: string | null
  cost: number
  error_code: number | null
  error_message: string | null
  campaign_id: number | null
  created_at: Date
  sent_at: Date | null
  delivered_at: Date | null
  read_at: Date | null
}

const view = (r: Row, tz: string) => ({
  id: r.id,
  message_sid: r.message_sid,
  phone: r.phone,
  status: r.status,
  body: r.body,
  media_url: r.media_url,
  cost: r.cost,
  error_code: r.error_code,
  error_message: r.error_message,
  campaign_id: r.campaign_id,
  created_at: formatTimestamp(r.created_at, tz)!,
  sent_at: formatTimestamp(r.sent_at, tz),
  delivered_at: formatTimestamp(r.delivered_at, tz),
  read_at: formatTimestamp(r.read_at, tz),
})

export async function listMessages(deps: Deps, principal: Principal, query: ListQuery) {
  const { sql } = deps
  const tz = deps.config.timezone
  const p = page(query)
  if (query.status !== undefined && !(STATUSES as readonly string[]).includes(query.status)) {
    throw badValue(`status: must be one of ${STATUSES.join(', ')}`)
  }
  const { from, before } = dateRange(query, tz)
  const where = () => sql`
    account_id = ${principal.accountId}
    ${query.status ? sql`and status = ${query.status}` : sql`and status <> 'queued'`}
    ${from ? sql`and sent_at >= ${from}` : sql``}
    ${before ? sql`and sent_at < ${before}` : sql``}`
  // The page id-first: the candidates come from an index (with a date filter, the sent_at one), only
  // the page's rows are read from the table.
  const rows = await sql<Row[]>`
    with page as (
      select id, created_at from messages where ${where()}
      order by created_at desc, id desc
      limit ${p.limit} offset ${p.offset}
    )
    select m.id, m.message_sid, m.phone, m.status, m.body, m.media_url, m.cost, m.error_code, m.error_message, m.campaign_id,
           m.created_at, m.sent_at, m.delivered_at, m.read_at
    from page join messages m on m.id = page.id
    order by page.created_at desc, page.id desc`
  // A page that is not full ends the list: the total is known without counting.
  const known = rows.length < p.limit && (rows.length > 0 || p.offset === 0)
  const [count] = known
    ? [{ n: p.offset + rows.length }]
    : await sql<{ n: number }[]>`select count(*)::int as n from messages where ${where()}`
  return { items: rows.map((r) => view(r, tz)), total: count!.n, ...p }
}

export async function getMessage(deps: Deps, principal: Principal, sid: string) {
  const [row] = await deps.sql<Row[]>`
    select id, message_sid, phone, status, body, media_url, cost, error_code, error_message, campaign_id,
           created_at, sent_at, delivered_at, read_at
    from messages where message_sid = ${sid} and account_id = ${principal.accountId}`
  if (!row) throw new ApiError('NOT_FOUND', `message ${sid} not found`)
  return view(row, deps.config.timezone)
}
