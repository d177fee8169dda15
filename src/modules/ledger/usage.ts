// Usage by day and category (issue 31 §5): what an account's messages cost, per day they were charged
// (in the service time zone) and per pricing category, for GET /api/v1/usage, the dashboard's usage
// page and its CSV. A refunded message cost nothing and is left out; `cost` is each message's final
// cost (settled on the provider's pricing), so the items sum to what the account paid for messages.

import type { Sql } from '../../db/client'
import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { badValue, ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { listOf } from '../../http/models'
import { page, requireTimestamp } from '../../http/values'
import { pageOf, type Page } from '../../lib/validate'
import type { Category } from './service'
import { UsageItem, UsageQuery } from './model'

export type UsageRow = { day: string; category: Category; count: number; cost: number }
export type UsageRange = { from: Date | null; before: Date | null }

const DAY = /^\d{4}-\d{2}-\d{2}$/

/**
 * `date_from`/`date_to` as days (YYYY-MM-DD: the whole day) or timestamps, in the service time zone;
 * 422 naming the field when one is not a date, or when date_from is after date_to.
 */
export function usageRange(query: { date_from?: string; date_to?: string }, timeZone: string): UsageRange {
  const at = (value: string | undefined, field: string, time: string) =>
    value === undefined ? null : requireTimestamp(DAY.test(value) ? `${value} ${time}` : value, field, timeZone)
  const from = at(query.date_from, 'date_from', '00:00:00')
  const to = at(query.date_to, 'date_to', '23:59:59')
  if (from && to && from > to) throw badValue('date_to: must not be before date_from')
  return { from, before: to && new Date(to.getTime() + 1000) }
}

/** An account's usage in `range`, newest day first, categories in name order; one page of it. */
export async function usageOf(sql: Sql, accountId: number, timeZone: string, range: UsageRange, p: Page) {
  const where = () => sql`account_id = ${accountId} and refunded_at is null
    ${range.from ? sql`and created_at >= ${range.from}` : sql``} ${range.before ? sql`and created_at < ${range.before}` : sql``}`
  const day = sql`to_char((created_at at time zone ${timeZone})::date, 'YYYY-MM-DD')`
  const [rows, [count]] = await Promise.all([
    sql<UsageRow[]>`
      select ${day} as day, category, count(*)::int as count, sum(cost)::bigint as cost
      from messages where ${where()}
      group by 1, 2
      order by 1 desc, 2
      limit ${p.limit} offset ${p.offset}`,
    sql<{ n: number }[]>`select count(*)::int as n from (select 1 from messages where ${where()} group by ${day}, category) g`,
  ])
  return pageOf(rows, count!.n, p)
}

/** Every row of an account's usage in `range` (the dashboard's chart and CSV), newest day first. */
export async function allUsage(sql: Sql, accountId: number, timeZone: string, range: UsageRange): Promise<UsageRow[]> {
  const { items } = await usageOf(sql, accountId, timeZone, range, { limit: 10_000, offset: 0 })
  return items
}

export const usageApi = (deps: Deps) =>
  apiRoutes().get(
    '/usage',
    async ({ principal, query }) => {
      const range = usageRange(query, deps.config.timezone)
      return ok(await usageOf(deps.sql, principal.accountId, deps.config.timezone, range, page(query)))
    },
    {
      query: UsageQuery,
      response: { 200: envelopeOf(listOf(UsageItem)), ...errorsOf(400, 401, 422) },
      detail: {
        tags: ['Balance'],
        summary: 'Usage by day and category: how many messages and what they cost (extension)',
        description:
          'One item per day (charged on, in the service time zone) and WhatsApp pricing category: `count` messages and their `cost`, ' +
          "each message's final cost (after any settlement on the provider's pricing). Refunded messages cost nothing and are left out. " +
          '`date_from`/`date_to`: days YYYY-MM-DD (or timestamps), both inclusive; date_from after date_to is 422. Newest day first.',
      },
    },
  )
