// Accounts: create, read and list them with their balance and price; top-ups, adjustments and prices
// go through the money owner (ledger/service.ts).

import { transaction, type Db, type Sql } from '../../db/client'
import { ApiError, badValue } from '../../http/errors'
import { requireText } from '../../http/values'
import { MAX_NOTE_CHARS, pageOf, type Page } from '../../lib/validate'
import type { Balance } from './model'
import type { Clock } from '../../lib/clock'
import {
  CATEGORIES,
  clearPrice,
  credit,
  priceHistory,
  priceOf,
  setPrice as writePrice,
  type Category,
  type SettleMode,
} from '../ledger/service'

type AccountRow = { id: number; name: string; balance: number; cost: number; low_balance_threshold: number | null; created_at: Date }

const accountView = (row: AccountRow) => ({
  id: row.id,
  name: row.name,
  wa_balance: row.balance,
  cost_per_message: row.cost,
  low_balance_threshold: row.low_balance_threshold === null ? null : Number(row.low_balance_threshold),
  created_at: row.created_at,
})

export async function requireAccount(sql: Db, id: number): Promise<void> {
  const [row] = await sql`select 1 from accounts where id = ${id}`
  if (!row) throw new ApiError('NOT_FOUND', `account ${id} not found`)
}

const accountQuery = (sql: Db) => sql`
  select a.id, a.name, a.balance, a.low_balance_threshold, a.created_at, account_price(a.id) as cost from accounts a`

/** GET /balance: the balance, the price per message now, and how many messages it pays for. */
export async function getBalance(sql: Sql, accountId: number, currency: string): Promise<Balance> {
  const [row] = await sql<{ balance: number; cost: number }[]>`
    select balance, account_price(id) as cost from accounts where id = ${accountId}`
  const { prices } = await priceOf(sql, accountId)
  return {
    wa_balance: row!.balance,
    cost_per_message: row!.cost,
    estimated_sends: Math.floor(row!.balance / row!.cost),
    currency,
    prices,
  }
}

/** A low-balance threshold as given: a positive integer, or null (no alert); 422 otherwise. */
function requireThreshold(value: number | null): number | null {
  if (value !== null && (!Number.isSafeInteger(value) || value < 1)) {
    throw badValue('low_balance_threshold: must be a positive integer, or null for no alert')
  }
  return value
}

export async function createAccount(
  sql: Db,
  input: { name: string; balance?: number; low_balance_threshold?: number | null; createdBy?: number },
  /** The time of its opening balance's ledger row. */
  clock: Pick<Clock, 'sqlNow'>,
) {
  const name = requireText(input.name, 'name')
  const balance = input.balance ?? 0
  if (balance < 0) throw badValue('balance: must not be negative')
  const threshold = requireThreshold(input.low_balance_threshold ?? null)
  const id = await transaction(sql, async (tx) => {
    const [account] = await tx<{ id: number }[]>`
      insert into accounts (name, low_balance_threshold) values (${name}, ${threshold}) returning id`
    if (balance > 0) await credit(tx, account!.id, 'topup', balance, 'opening balance', input.createdBy ?? null, clock)
    return account!.id
  })
  return getAccount(sql, id)
}

/**
 * Changes an account's settings: `low_balance_threshold` (null: no balance.low alert). Setting it does
 * not send an alert for a balance already below it: the next crossing does.
 */
export async function updateAccount(sql: Db, id: number, input: { low_balance_threshold?: number | null }) {
  if (input.low_balance_threshold === undefined) throw badValue('low_balance_threshold: required (a positive integer, or null)')
  const threshold = requireThreshold(input.low_balance_threshold)
  const [row] = await sql`update accounts set low_balance_threshold = ${threshold} where id = ${id} returning id`
  if (!row) throw new ApiError('NOT_FOUND', `account ${id} not found`)
  return getAccount(sql, id)
}

/** The newest 200 accounts whose name contains `term` (case-insensitive; every account for ''), with their balance. */
export async function searchAccounts(sql: Sql, term: string) {
  const pattern = `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
  return sql<{ id: number; name: string; balance: number }[]>`
    select id, name, balance from accounts
    where ${term === '' ? sql`true` : sql`name ilike ${pattern}`}
    order by id desc limit 200`
}

/** An account's name, or null when there is no such account. */
export async function accountName(sql: Sql, id: number): Promise<string | null> {
  const [row] = await sql<{ name: string }[]>`select name from accounts where id = ${id}`
  return row?.name ?? null
}

export async function getAccount(sql: Db, id: number) {
  const [row] = await sql<AccountRow[]>`${accountQuery(sql)} where a.id = ${id}`
  if (!row) throw new ApiError('NOT_FOUND', `account ${id} not found`)
  return accountView(row)
}

export async function listAccounts(sql: Sql, p: Page) {
  const rows = await sql<AccountRow[]>`${accountQuery(sql)} order by a.id desc limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from accounts`
  return pageOf(rows.map(accountView), count!.n, p)
}

/** A top-up (positive) or an adjustment (signed): the balance update and its ledger row in one statement. */
export async function changeBalance(
  sql: Db,
  accountId: number,
  kind: 'topup' | 'adjustment',
  amount: number,
  note: string | null,
  createdBy: number | null = null,
) {
  if (kind === 'topup' && amount <= 0) throw badValue('amount: must be a positive integer')
  if (kind === 'adjustment' && amount === 0) throw badValue('amount: must not be 0')
  if (note !== null && note.length > MAX_NOTE_CHARS) throw badValue(`note: must be at most ${MAX_NOTE_CHARS} characters`)
  await requireAccount(sql, accountId)
  const row = await credit(sql, accountId, kind, amount, note, createdBy)
  if (!row) throw badValue('amount: would make the balance negative')
  return { wa_balance: row.balance }
}

export type PriceInput = {
  cost_per_message: number
  account_id?: number | null
  refund_late_failures?: boolean
  prices?: Partial<Record<Category, number | null>>
  settle?: SettleMode
}

/** Sets a price; parts omitted (`refund_late_failures`, a category, `settle`) keep what is in force (see ledger's setPrice). */
export async function setPrice(sql: Sql, input: PriceInput) {
  if (input.cost_per_message < 1) throw badValue('cost_per_message: must be a positive integer')
  for (const [category, value] of Object.entries(input.prices ?? {})) {
    if (!(CATEGORIES as readonly string[]).includes(category))
      throw badValue(`prices.${category}: not a category (${CATEGORIES.join(', ')})`)
    if (value !== null && value !== undefined && (!Number.isSafeInteger(value) || value < 1))
      throw badValue(`prices.${category}: must be a positive integer, or null to remove it`)
  }
  if (input.settle !== undefined && input.settle !== 'provider' && input.settle !== 'keep')
    throw badValue('settle: must be provider or keep')
  const accountId = input.account_id ?? null
  if (accountId !== null) await requireAccount(sql, accountId)
  await writePrice(sql, accountId, input.cost_per_message, {
    refundLateFailures: input.refund_late_failures,
    prices: input.prices,
    settle: input.settle,
  })
  return getPrice(sql, accountId)
}

/** The history of the global price (null) or of one account's own price, newest first. */
export async function getPriceHistory(sql: Sql, accountId: number | null) {
  if (accountId !== null) await requireAccount(sql, accountId)
  return priceHistory(sql, accountId)
}

export async function getPrice(sql: Sql, accountId: number | null) {
  if (accountId !== null) await requireAccount(sql, accountId)
  const price = await priceOf(sql, accountId)
  return {
    cost_per_message: price.cost,
    account_id: accountId,
    account_override: price.overridden,
    refund_late_failures: price.refundLateFailures,
    prices: price.prices,
    own_prices: price.own,
    settle: price.settle,
  }
}

export async function clearPriceOverride(sql: Sql, accountId: number) {
  await requireAccount(sql, accountId)
  await clearPrice(sql, accountId)
  return getPrice(sql, accountId)
}
