// Messaging budgets (sql/0024_messaging_limit.sql): the only SQL on `portfolios`, `messaging_budgets`
// and `messaging_uses`, and on the senders' `messaging_limit` and `portfolio_id`. A budget is what
// WhatsApp counts business-initiated recipients in: a sender's own (its tier), a portfolio's (shared by
// its senders, the portfolio's tier), or the deployment's default sender's (MESSAGING_LIMIT).

import { transaction, type Db } from '../../db/client'
import { ApiError, badValue } from '../../http/errors'
import { requireText } from '../../http/values'
import type { Clock } from '../../lib/clock'
import { nowOf } from '../../db/now'
import { MESSAGING_TIERS } from '../../lib/validate'
import { audit, type Actor } from '../users/service'

/** A budget's window: a recipient counts once per rolling 24 hours. */
export const BUDGET_HOURS = 24

/** A budget: its key, its tier (null: unlimited) and how to name it to people. */
export type Budget = { key: string; tier: number | null; label: string }
/** A budget's use now: recipients counted in the last 24 hours, and when the oldest of them frees (null: none counted). */
export type Usage = { used: number; freesAt: Date | null }

/** The budget a sender (null: the deployment's default sender, whose tier is `defaultTier`) sends under. */
export async function budgetOf(db: Db, senderId: number | null, defaultTier: number | null): Promise<Budget> {
  if (senderId === null) return { key: 'default', tier: defaultTier, label: "the default sender's" }
  const [row] = await db<
    { messaging_limit: number | null; meta: boolean; portfolio_id: number | null; portfolio: string | null; tier: number | null }[]
  >`
    select s.messaging_limit, s.messaging_limit_source = 'meta' as meta, s.portfolio_id, p.name as portfolio, p.messaging_limit as tier
    from senders s left join portfolios p on p.id = s.portfolio_id where s.id = ${senderId}`
  if (!row) throw new Error(`sender ${senderId} is gone`)
  // Meta's word on the sender's limit (sql/0050: its portfolio's, since October 2025) is the tier in force,
  // counted in the portfolio's budget when the sender is in one.
  return row.portfolio_id === null
    ? { key: `sender:${senderId}`, tier: row.messaging_limit, label: `sender ${senderId}'s` }
    : {
        key: `portfolio:${row.portfolio_id}`,
        tier: row.meta ? row.messaging_limit : row.tier,
        label: `portfolio ${JSON.stringify(row.portfolio)}'s`,
      }
}

/** Unique recipients counted in `budget` in the 24 hours before `clock`'s now; a phone counts from its latest use. */
export async function usageOf(db: Db, clock: Clock, budget: string): Promise<Usage> {
  const [row] = await db<{ used: number; frees_at: Date | null }[]>`
    select count(*)::int as used, min(last) + make_interval(hours => ${BUDGET_HOURS}) as frees_at
    from (
      select max(first_at) as last from messaging_uses
      where budget = ${budget} and first_at > ${nowOf(db, clock)} - make_interval(hours => ${BUDGET_HOURS})
      group by phone
    ) p`
  return { used: row!.used, freesAt: row!.frees_at }
}

/**
 * A customer's key changed on a number (a user id linked to its phone, a changed number or user id:
 * modules/inbound/customers.ts): its uses in that number's budget take the new key, in the caller's
 * transaction, so a customer messaged by user id and then by phone counts once. No lock of the budget:
 * merging two keys' uses only lowers the count, so a send taking room meanwhile never gets too much.
 */
export async function rekeyUses(db: Db, senderId: number | null, from: string, to: string): Promise<void> {
  const { key } = await budgetOf(db, senderId, null)
  await db`update messaging_uses set phone = ${to} where budget = ${key} and phone = ${from}`
}

/** A budget's use as answers show it. */
export const budgetUse = (budget: Budget, usage: Usage) => ({
  messaging_limit: budget.tier,
  used: usage.used,
  frees_at: usage.freesAt,
})
export type BudgetUse = ReturnType<typeof budgetUse>

/** A sender's budget and its use (null: the default sender). */
export async function senderBudgetUse(db: Db, clock: Clock, senderId: number | null, defaultTier: number | null): Promise<BudgetUse> {
  const budget = await budgetOf(db, senderId, defaultTier)
  return budgetUse(budget, await usageOf(db, clock, budget.key))
}

/** The budget use of each of `senderIds` (stored senders), by id: what the dashboard lists. */
export async function senderBudgetUses(db: Db, clock: Clock, senderIds: number[]): Promise<Map<number, BudgetUse>> {
  const uses = await Promise.all(senderIds.map(async (id) => [id, await senderBudgetUse(db, clock, id, null)] as const))
  return new Map(uses)
}

/** A tier as given (a number, or null: unlimited), or 422. */
export function requireTier(value: number | null, field: string): number | null {
  if (value !== null && !(MESSAGING_TIERS as readonly number[]).includes(value)) {
    throw badValue(`${field}: must be one of ${MESSAGING_TIERS.join(', ')}, or null for unlimited (got ${value})`)
  }
  return value
}

/** The portfolio named `name` (its id), or 422 naming how to create it; null clears. */
export async function portfolioIdOf(db: Db, name: string | null, field: string): Promise<number | null> {
  if (name === null || name.trim() === '') return null
  const [row] = await db<{ id: number }[]>`select id from portfolios where name = ${name.trim()}`
  if (!row)
    throw badValue(`${field}: no portfolio is named ${JSON.stringify(name.trim()).slice(0, 80)} (POST /admin/v1/portfolios creates one)`)
  return row.id
}

type PortfolioRow = { id: number; name: string; messaging_limit: number | null; senders: number[]; created_at: Date }

async function present(db: Db, clock: Clock, row: PortfolioRow) {
  const budget: Budget = { key: `portfolio:${row.id}`, tier: row.messaging_limit, label: '' }
  return {
    id: row.id,
    name: row.name,
    senders: row.senders,
    ...budgetUse(budget, await usageOf(db, clock, budget.key)),
    created_at: row.created_at,
  }
}

type PortfolioView = Awaited<ReturnType<typeof present>>

const portfolioRows = (db: Db, id: number | null) => db<PortfolioRow[]>`
  select p.id, p.name, p.messaging_limit, p.created_at,
         array(select s.id from senders s where s.portfolio_id = p.id order by s.id)::bigint[] as senders
  from portfolios p where ${id === null ? db`true` : db`p.id = ${id}`} order by p.id`

export async function listPortfolios(db: Db, clock: Clock): Promise<PortfolioView[]> {
  return Promise.all((await portfolioRows(db, null)).map((r) => present(db, clock, r)))
}

export async function getPortfolio(db: Db, clock: Clock, id: number): Promise<PortfolioView> {
  const [row] = await portfolioRows(db, id)
  if (!row) throw new ApiError('NOT_FOUND', `portfolio ${id} not found`)
  return present(db, clock, row)
}

export async function createPortfolio(
  db: Db,
  clock: Clock,
  actor: Actor,
  input: { name: string; messaging_limit?: number | null },
): Promise<PortfolioView> {
  const name = requireText(input.name, 'name', 100)
  const tier = requireTier(input.messaging_limit ?? null, 'messaging_limit')
  const id = await transaction(db, async (tx) => {
    const [taken] = await tx`select id from portfolios where name = ${name}`
    if (taken) throw new ApiError('CONFLICT', `a portfolio named ${JSON.stringify(name)} exists already (portfolio ${taken.id})`)
    const [row] = await tx<{ id: number }[]>`insert into portfolios (name, messaging_limit) values (${name}, ${tier}) returning id`
    await audit(tx, {
      ...actor,
      accountId: null,
      action: 'portfolio created',
      detail: { portfolio_id: row!.id, name, messaging_limit: tier },
    })
    return row!.id
  })
  return getPortfolio(db, clock, id)
}

export async function updatePortfolio(
  db: Db,
  clock: Clock,
  actor: Actor,
  id: number,
  input: { name?: string; messaging_limit?: number | null },
): Promise<PortfolioView> {
  const name = input.name === undefined ? undefined : requireText(input.name, 'name', 100)
  const tier = input.messaging_limit === undefined ? undefined : requireTier(input.messaging_limit, 'messaging_limit')
  await transaction(db, async (tx) => {
    const [row] = await tx<PortfolioRow[]>`select * from portfolios where id = ${id} for update`
    if (!row) throw new ApiError('NOT_FOUND', `portfolio ${id} not found`)
    if (name !== undefined && name !== row.name) {
      const [taken] = await tx`select id from portfolios where name = ${name}`
      if (taken) throw new ApiError('CONFLICT', `a portfolio named ${JSON.stringify(name)} exists already (portfolio ${taken.id})`)
    }
    await tx`
      update portfolios set name = ${name ?? row.name}, messaging_limit = ${tier === undefined ? row.messaging_limit : tier}, updated_at = ${nowOf(tx, clock)}
      where id = ${id}`
    await audit(tx, { ...actor, accountId: null, action: 'portfolio changed', detail: { portfolio_id: id, changed: Object.keys(input) } })
  })
  return getPortfolio(db, clock, id)
}
