// The dashboard's inbox: an account's conversations (one per customer phone), newest activity first,
// each with its last message either way and the contact's name. Read from the account's messages and
// inbound messages; queued messages still being handed over are left out, as in GET /messages.

import type { Sql } from '../../db/client'
import { formatTimestamp } from '../../lib/time'

export type ConversationSummary = {
  phone: string
  name: string | null
  at: string
  direction: 'inbound' | 'outbound'
  type: string
  text: string | null
}

export async function listConversations(
  sql: Sql,
  tz: string,
  accountId: number,
  page: { limit: number; offset: number },
): Promise<{ items: ConversationSummary[]; total: number }> {
  type Row = Omit<ConversationSummary, 'at'> & { at: Date; total: number }
  // The latest of each direction per phone first (each side reads its own index), then the latest of the two.
  const rows = await sql<Row[]>`
    with latest as (
      select distinct on (phone) phone, at, direction, type, text from (
        (select distinct on (phone) phone, created_at as at, 'outbound' as direction, 'text' as type, body as text
         from messages where account_id = ${accountId} and (status <> 'queued' or announce_outcome)
         order by phone, created_at desc, id desc)
        union all
        (select distinct on (phone) phone, received_at, 'inbound', type, text
         from inbound_messages where account_id = ${accountId}
         order by phone, received_at desc, id desc)
      ) both_ways
      order by phone, at desc, direction
    )
    select l.phone, c.name, l.at, l.direction, l.type, l.text, count(*) over ()::int as total
    from latest l left join contacts c on c.account_id = ${accountId} and c.phone = l.phone
    order by l.at desc, l.phone
    limit ${page.limit} offset ${page.offset}`
  const total = rows[0]?.total ?? (page.offset === 0 ? 0 : await countConversations(sql, accountId))
  return { items: rows.map(({ total: _, at, ...r }) => ({ ...r, at: formatTimestamp(at, tz)! })), total }
}

/** How many conversations the account has (for a page past the last). */
async function countConversations(sql: Sql, accountId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from (
      select phone from messages where account_id = ${accountId} and (status <> 'queued' or announce_outcome)
      union
      select phone from inbound_messages where account_id = ${accountId}
    ) phones`
  return row!.n
}
