// Reading the ledger: an account's rows (the admin API, the dashboard's page and its CSV) and the rows
// of one message. Its writes are the money owner's (service.ts).

import type { Sql } from '../../db/client'
import { ApiError } from '../../http/errors'
import { pageOf, type DateRange, type Page } from '../../lib/validate'

type LedgerRowDb = {
  id: number
  kind: 'topup' | 'charge' | 'refund' | 'adjustment' | 'settlement'
  amount: number
  balance_after: number
  message_id: number | null
  note: string | null
  /** The e-mail of the dashboard user who made a top-up or adjustment; null when the admin API or the CLI made it, and for charges and refunds. */
  created_by: string | null
  created_at: Date
}

export async function listLedger(sql: Sql, accountId: number, p: Page, range: DateRange = { from: null, before: null }) {
  // The account's 404 asked here, not of accounts/service.ts: that module moves money through the ledger.
  const [account] = await sql`select 1 from accounts where id = ${accountId}`
  if (!account) throw new ApiError('NOT_FOUND', `account ${accountId} not found`)
  // `before` is exclusive: the end of date_to's second.
  const where = () => sql`account_id = ${accountId}
    ${range.from ? sql`and created_at >= ${range.from}` : sql``} ${range.before ? sql`and created_at < ${range.before}` : sql``}`
  const rows = await sql<LedgerRowDb[]>`
    select l.id, l.kind, l.amount, l.balance_after, l.message_id, l.note, u.email as created_by, l.created_at
    from (select * from ledger where ${where()} order by id desc limit ${p.limit} offset ${p.offset}) l
    left join users u on u.id = l.created_by
    order by l.id desc`
  const [count] = await sql<{ n: number; sum: number }[]>`
    select count(*)::int as n from ledger where ${where()}`
  return pageOf(rows, count!.n, p)
}

/** The ledger rows of one message of an account (its charge, and a refund if it had one), oldest first. */
export async function messageLedger(sql: Sql, accountId: number, messageId: number): Promise<LedgerRowDb[]> {
  const rows = await sql<LedgerRowDb[]>`
    select l.id, l.kind, l.amount, l.balance_after, l.message_id, l.note, u.email as created_by, l.created_at
    from ledger l left join users u on u.id = l.created_by
    where l.message_id = ${messageId} and l.account_id = ${accountId} order by l.id`
  return rows
}
