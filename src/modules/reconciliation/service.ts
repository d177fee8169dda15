// The reconciliation report (issue 31 §2): for one sender and one month (the deployment's TIMEZONE),
// the ledger's messages and charges by day and category beside what the provider itself counted and
// charged (Meta's `pricing_analytics` of the sender's WhatsApp Business Account), and every difference.
//
// Volumes are compared, not money: Meta's cost is in its billing currency (shown as Meta's), ours in
// CURRENCY at the operator's prices. Our side counts the messages handed over in the month (by
// `sent_at`) that did not fail, under the category they were finally charged for (Meta's, once a
// settlement moved them; else their own); their cost is what the ledger holds for them (charges less
// refunds plus settlements). Meta counts a message when it is delivered, so one sent just before a
// local midnight and delivered after it lands a day later there: a difference of one either side.
// Messages whose settlement could not take the whole difference from the balance (`unsettled`, issue
// 31 §2) are listed one by one.

import type { Sql } from '../../db/client'
import type { Config } from '../../config'
import type { Clock } from '../../lib/clock'
import type { SecretBox } from '../../lib/secrets'
import { ApiError, badValue } from '../../http/errors'
import { formatTimestamp, readTimestamp } from '../../lib/time'
import { pricingAnalyticsOf } from '../../providers/registry'
import type { PricingPoint } from '../../providers/provider'
import { openFields, senderRow, supportOf, whyNotOpen } from '../senders/service'

export type ReconcileContext = { sql: Sql; config: Config; clock: Clock; secrets: SecretBox }

export const REPORT_CATEGORIES = ['marketing', 'utility', 'authentication', 'service'] as const
export type ReportCategory = (typeof REPORT_CATEGORIES)[number]

/**
 * Meta's pricing categories onto the service's four (as settlement maps them): the international
 * authentication rate is authentication, marketing lite is marketing, a referral conversion (a free
 * entry point) is service. Group messaging's categories are the same categories of another product.
 */
export const META_CATEGORIES: Record<string, ReportCategory> = {
  MARKETING: 'marketing',
  MARKETING_LITE: 'marketing',
  GROUP_MARKETING: 'marketing',
  UTILITY: 'utility',
  GROUP_UTILITY: 'utility',
  AUTHENTICATION: 'authentication',
  AUTHENTICATION_INTERNATIONAL: 'authentication',
  SERVICE: 'service',
  GROUP_SERVICE: 'service',
  REFERRAL_CONVERSION: 'service',
}

export type ReportRow = {
  day: string
  category: string
  /** Our messages handed over that day that did not fail. */
  messages: number
  /** What the ledger holds for them, in CURRENCY. */
  cost: number
  /** What settlements could not take from the balance, in CURRENCY. */
  unsettled: number
  /** Meta's count of delivered messages (every pricing type). */
  meta_volume: number
  /** Of those, the ones Meta did not charge (a `FREE_*` pricing type). */
  meta_free_volume: number
  /** Meta's cost, in Meta's billing currency. */
  meta_cost: number
  /** meta_volume − messages: 0 when both agree. */
  difference: number
}

export type Difference = {
  kind: 'volume' | 'unsettled' | 'meta_category'
  day: string
  category: string
  /** Our figure (messages; unsettled: the amount), Meta's (volume). */
  ours: number
  meta: number
  message_sid: string | null
  detail: string
}

export type Report = {
  sender_id: number
  provider: string
  business_account_id: string
  /** The number (digits) Meta's figures are kept to; null: the whole business account. */
  phone_number: string | null
  month: string
  time_zone: string
  from: Date
  to: Date
  rows: ReportRow[]
  totals: { messages: number; cost: number; unsettled: number; meta_volume: number; meta_free_volume: number; meta_cost: number }
  differences: Difference[]
}

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/

/** The month a report asks for: `YYYY-MM` given, else the current one in the deployment's zone (deps.clock). */
export function monthOf(text: string | undefined, clock: Pick<Clock, 'now'>, tz: string): { month: string; from: Date; to: Date } {
  const now = clock.now()
  const month = text ?? formatTimestamp(now, tz)!.slice(0, 7)
  const m = MONTH.exec(month)
  if (!m) throw badValue('month: expected YYYY-MM')
  const [year, mon] = [Number(m[1]), Number(m[2])]
  const next = mon === 12 ? `${year + 1}-01` : `${year}-${String(mon + 1).padStart(2, '0')}`
  const from = readTimestamp(`${month}-01 00:00:00`, tz)
  const to = readTimestamp(`${next}-01 00:00:00`, tz)
  if (!(from instanceof Date) || !(to instanceof Date)) throw badValue(`month: ${month} cannot be read in ${tz}`)
  if (from.getTime() > now.getTime()) throw badValue(`month: ${month} has not begun`)
  return { month, from, to }
}

type Resolved = { id: number; provider: string; settings: unknown; number: string | null; label: string }

/** The sender `id` (0: the deployment's default sender) with its opened settings. */
async function resolveSender(ctx: ReconcileContext, id: number): Promise<Resolved> {
  const environments = ctx.config.providers as Record<string, unknown>
  if (id === 0) {
    return {
      id: 0,
      provider: ctx.config.provider,
      settings: environments[ctx.config.provider],
      number: null,
      label: "the deployment's default sender",
    }
  }
  const row = await senderRow(ctx.sql, id)
  let fields: Record<string, string>
  try {
    fields = await openFields(ctx.secrets, row)
  } catch (error) {
    throw badValue(`sender ${id}'s ${whyNotOpen(error)}`)
  }
  const settings = supportOf(row.provider).settingsOf(fields, row.number, environments[row.provider])
  return { id: row.id, provider: row.provider, settings, number: row.number.replace(/\D/g, '') || null, label: `sender ${row.id}` }
}

type OurRow = { day: string; category: string; messages: number; cost: string; unsettled: string }

/** Our side: the sender's messages handed over in the month that did not fail, by local day and final category. */
async function ourRows(sql: Sql, senderId: number, from: Date, to: Date, tz: string): Promise<OurRow[]> {
  // created_at bounds the partitions read (a message is created before it is handed over; a day's margin
  // covers a hand-off retried late).
  return sql<OurRow[]>`
    select to_char(m.sent_at at time zone ${tz}, 'YYYY-MM-DD') as day,
           case when m.settled_category in ('marketing', 'utility', 'authentication', 'service') then m.settled_category
                else m.category end as category,
           count(*)::int as messages,
           coalesce(sum(-l.net), 0)::bigint as cost,
           coalesce(sum(m.unsettled), 0)::bigint as unsettled
    from messages m
    left join lateral (select sum(amount) as net from ledger where message_id = m.id) l on true
    where ${senderId === 0 ? sql`m.sender_id is null` : sql`m.sender_id = ${senderId}`}
      and m.sent_at >= ${from} and m.sent_at < ${to}
      and m.created_at >= ${new Date(from.getTime() - 86_400_000)} and m.created_at < ${to}
      and m.status <> 'failed'
    group by 1, 2
    order by 1, 2`
}

type Unsettled = { id: number; message_sid: string | null; day: string; category: string; unsettled: string }

/** The messages whose settlement could not take the whole difference (at most 1,000, oldest first). */
async function unsettledMessages(sql: Sql, senderId: number, from: Date, to: Date, tz: string): Promise<Unsettled[]> {
  return sql<Unsettled[]>`
    select m.id, m.message_sid, to_char(m.sent_at at time zone ${tz}, 'YYYY-MM-DD') as day,
           case when m.settled_category in ('marketing', 'utility', 'authentication', 'service') then m.settled_category
                else m.category end as category,
           m.unsettled
    from messages m
    where ${senderId === 0 ? sql`m.sender_id is null` : sql`m.sender_id = ${senderId}`}
      and m.sent_at >= ${from} and m.sent_at < ${to}
      and m.created_at >= ${new Date(from.getTime() - 86_400_000)} and m.created_at < ${to}
      and m.unsettled > 0
    order by m.sent_at, m.id
    limit 1000`
}

const round = (n: number) => Math.round(n * 1e6) / 1e6

/** The report of sender `senderId` for `month` (YYYY-MM; absent: the current month). */
export async function reconcile(ctx: ReconcileContext, senderId: number, monthText: string | undefined): Promise<Report> {
  const tz = ctx.config.timezone
  const { month, from, to } = monthOf(monthText, ctx.clock, tz)
  const sender = await resolveSender(ctx, senderId)
  const support = pricingAnalyticsOf(sender.provider)
  if (!support) {
    throw badValue(
      `${sender.label} (${sender.provider}): only a Meta sender can be reconciled (Meta's pricing analytics of its WhatsApp Business Account)`,
    )
  }
  const why = support.unreachable(sender.settings)
  if (why) throw badValue(`${sender.label} (${sender.provider}) cannot be reconciled: ${why}`)
  const waba = (sender.settings as { businessAccountId?: string }).businessAccountId ?? ''

  const [ours, unsettled] = await Promise.all([
    ourRows(ctx.sql, senderId, from, to, tz),
    unsettledMessages(ctx.sql, senderId, from, to, tz),
  ])
  const analytics = await support.read(
    sender.settings,
    { start: Math.floor(from.getTime() / 1000), end: Math.floor(to.getTime() / 1000), phone: sender.number },
    { timeoutMs: ctx.config.providerTimeoutMs, clock: ctx.clock },
  )
  if (!analytics.ok)
    throw new ApiError('BAD_GATEWAY', `${sender.provider} did not give the pricing analytics of ${sender.label}: ${analytics.detail}`)

  const rows = new Map<string, ReportRow>()
  const rowOf = (day: string, category: string) => {
    const key = `${day} ${category}`
    let row = rows.get(key)
    if (!row) {
      row = { day, category, messages: 0, cost: 0, unsettled: 0, meta_volume: 0, meta_free_volume: 0, meta_cost: 0, difference: 0 }
      rows.set(key, row)
    }
    return row
  }
  for (const r of ours) {
    const row = rowOf(r.day, r.category)
    row.messages += r.messages
    row.cost += Number(r.cost)
    row.unsettled += Number(r.unsettled)
  }
  const differences: Difference[] = []
  const unknown = new Map<string, { day: string; volume: number }>()
  for (const p of analytics.points) {
    const day = dayOf(p, tz)
    if (day.slice(0, 7) !== month) continue
    const category = META_CATEGORIES[p.category]
    if (!category) {
      const key = `${day} ${p.category}`
      const u = unknown.get(key) ?? { day, volume: 0 }
      u.volume += p.volume
      unknown.set(key, u)
      continue
    }
    const row = rowOf(day, category)
    row.meta_volume += p.volume
    if (p.type.startsWith('FREE')) row.meta_free_volume += p.volume
    row.meta_cost = round(row.meta_cost + p.cost)
  }
  const sorted = [...rows.values()].sort((a, b) => (a.day === b.day ? order(a.category) - order(b.category) : a.day < b.day ? -1 : 1))
  for (const row of sorted) {
    row.difference = row.meta_volume - row.messages
    if (row.difference !== 0) {
      differences.push({
        kind: 'volume',
        day: row.day,
        category: row.category,
        ours: row.messages,
        meta: row.meta_volume,
        message_sid: null,
        detail:
          row.difference > 0
            ? `Meta counted ${row.difference} ${row.category} message${row.difference === 1 ? '' : 's'} more than the ledger charged`
            : `the ledger charged ${-row.difference} ${row.category} message${row.difference === -1 ? '' : 's'} more than Meta counted`,
      })
    }
  }
  for (const [key, u] of [...unknown].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const category = key.slice(11)
    differences.push({
      kind: 'meta_category',
      day: u.day,
      category,
      ours: 0,
      meta: u.volume,
      message_sid: null,
      detail: `Meta counted ${u.volume} message${u.volume === 1 ? '' : 's'} of category ${category}, which the service does not charge`,
    })
  }
  for (const m of unsettled) {
    differences.push({
      kind: 'unsettled',
      day: m.day,
      category: m.category,
      ours: Number(m.unsettled),
      meta: 0,
      message_sid: m.message_sid,
      detail: `message ${m.message_sid ?? `#${m.id}`}: its settlement could not take ${Number(m.unsettled)} ${ctx.config.currency} from the balance`,
    })
  }
  const sum = (f: (r: ReportRow) => number) => sorted.reduce((n, r) => n + f(r), 0)
  return {
    sender_id: senderId,
    provider: sender.provider,
    business_account_id: waba,
    phone_number: sender.number,
    month,
    time_zone: tz,
    from,
    to,
    rows: sorted,
    totals: {
      messages: sum((r) => r.messages),
      cost: sum((r) => r.cost),
      unsettled: sum((r) => r.unsettled),
      meta_volume: sum((r) => r.meta_volume),
      meta_free_volume: sum((r) => r.meta_free_volume),
      meta_cost: round(sum((r) => r.meta_cost)),
    },
    differences,
  }
}

const order = (category: string) => {
  const i = (REPORT_CATEGORIES as readonly string[]).indexOf(category)
  return i < 0 ? REPORT_CATEGORIES.length : i
}

/** The local day (TIMEZONE) a half-hour bucket of Meta's belongs to: its start's. */
const dayOf = (p: PricingPoint, tz: string) => formatTimestamp(new Date(p.start * 1000), tz)!.slice(0, 10)
