// Messages in quarantine: charged, handed over MAX_RECOVERIES times by recovery, and still without a
// recorded outcome (the database kept refusing the write). They are not handed over again. An
// operator checks them with the provider, then settles each: `sent` (the provider has it: the
// message keeps its charge) or `refund` (it never went out: failed and refunded, once).

import type { Sql } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import { ApiError, badValue } from '../../http/errors'
import { pageOf, type Page } from '../../lib/validate'
import { refundFailed } from '../ledger/service'

type Row = {
  id: number
  account_id: number
  phone: string
  body: string
  cost: number
  handoff_recoveries: number
  created_at: Date
  quarantined_at: Date
}

export async function listQuarantine(sql: Sql, p: Page) {
  const rows = await sql<Row[]>`
    select id, account_id, phone, body, cost, handoff_recoveries, created_at, quarantined_at from messages
    where quarantined_at is not null and status = 'queued'
    order by quarantined_at desc, id desc limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from messages where quarantined_at is not null and status = 'queued'`
  return pageOf(rows, count!.n, p)
}

export async function settleQuarantined(sql: Sql, tz: string, id: number, outcome: string, clock: Pick<Clock, 'sqlNow'>) {
  if (outcome !== 'sent' && outcome !== 'refund') throw badValue('outcome: must be sent or refund')
  const [row] = await sql<{ id: number; account_id: number }[]>`
    select id, account_id from messages where id = ${id} and quarantined_at is not null and status = 'queued'`
  if (!row) throw new ApiError('NOT_FOUND', `no quarantined message ${id}`)
  if (outcome === 'refund') {
    await refundFailed(sql, [{ id, errorCode: null, errorMessage: 'refunded by an operator after quarantine' }], tz, clock)
  } else {
    // No SID is known: the provider's own records have it. Status reports for it cannot be matched.
    await sql`update messages set status = 'sent', sent_at = ${nowOf(sql, clock)} where id = ${id} and status = 'queued'`
  }
  return { id, outcome, account_id: row.account_id }
}
