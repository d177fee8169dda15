// The operator's side: accounts, keys, top-ups, prices and the ledger.

import type { Sql } from '../../db/client'
import { ApiError, badValue } from '../../http/errors'
import { newApiKey, sha256Hex } from '../../lib/keys'
import { formatTimestamp } from '../../lib/time'
import { pageOf, type DateRange, type Page } from '../../lib/validate'
import { clearPrice, credit, priceOf, setPrice as writePrice } from '../ledger/service'

type AccountRow = { id: number; name: string; balance: number; cost: number; created_at: Date }

const accountView = (row: AccountRow, tz: string) => ({
  id: row.id,
  name: row.name,
  wa_balance: row.balance,
  cost_per_message: row.cost,
  created_at: formatTimestamp(row.created_at, tz)!,
})

const requireName = (value: string, field: string, max = 200) => {
  const trimmed = value.trim()
  if (!trimmed) throw badValue(`${field}: must not be empty`)
  if (trimmed.length > max) throw badValue(`${field}: must be at most ${max} characters`)
  return trimmed
}

async function requireAccount(sql: Sql, id: number): Promise<void> {
  const [row] = await sql`select 1 from accounts where id = ${id}`
  if (!row) throw new ApiError('NOT_FOUND', `account ${id} not found`)
}

const accountQuery = (sql: Sql) => sql`
  select a.id, a.name, a.balance, a.created_at, account_price(a.id) as cost from accounts a`

export async function createAccount(sql: Sql, tz: string, input: { name: string; balance?: number; createdBy?: number }) {
  const name = requireName(input.name, 'name')
  const balance = input.balance ?? 0
  if (balance < 0) throw badValue('balance: must not be negative')
  const id = await sql.begin(async (tx) => {
    const [account] = await tx<{ id: number }[]>`insert into accounts (name) values (${name}) returning id`
    if (balance > 0) await credit(tx, account!.id, 'topup', balance, 'opening balance', input.createdBy ?? null)
    return account!.id
  })
  return getAccount(sql, tz, id)
}

export async function getAccount(sql: Sql, tz: string, id: number) {
  const [row] = await sql<AccountRow[]>`${accountQuery(sql)} where a.id = ${id}`
  if (!row) throw new ApiError('NOT_FOUND', `account ${id} not found`)
  return accountView(row, tz)
}

export async function listAccounts(sql: Sql, tz: string, p: Page) {
  const rows = await sql<AccountRow[]>`${accountQuery(sql)} order by a.id desc limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from accounts`
  return pageOf(
    rows.map((r) => accountView(r, tz)),
    count!.n,
    p,
  )
}

type KeyRow = {
  id: number
  account_id: number
  label: string
  prefix: string
  active: boolean
  last_used_at: Date | null
  created_at: Date
}
const keyView = (row: KeyRow, tz: string) => ({
  id: row.id,
  account_id: row.account_id,
  label: row.label,
  prefix: row.prefix,
  active: row.active,
  last_used_at: formatTimestamp(row.last_used_at, tz),
  created_at: formatTimestamp(row.created_at, tz)!,
})

export async function createKey(sql: Sql, tz: string, accountId: number, input: { label: string }) {
  const label = requireName(input.label, 'label')
  await requireAccount(sql, accountId)
  const { key, prefix } = newApiKey()
  const [row] = await sql<KeyRow[]>`
    insert into api_keys (account_id, label, key_hash, prefix) values (${accountId}, ${label}, ${sha256Hex(key)}, ${prefix})
    returning id, account_id, label, prefix, active, last_used_at, created_at`
  return { ...keyView(row!, tz), key }
}

export async function listKeys(sql: Sql, tz: string, accountId: number) {
  await requireAccount(sql, accountId)
  const rows = await sql<KeyRow[]>`
    select id, account_id, label, prefix, active, last_used_at, created_at from api_keys where account_id = ${accountId} order by id`
  return pageOf(
    rows.map((r) => keyView(r, tz)),
    rows.length,
    { limit: rows.length, offset: 0 },
  )
}

export async function setKeyActive(sql: Sql, tz: string, keyId: number, active: boolean) {
  const [row] = await sql<KeyRow[]>`
    update api_keys set active = ${active} where id = ${keyId}
    returning id, account_id, label, prefix, active, last_used_at, created_at`
  if (!row) throw new ApiError('NOT_FOUND', `key ${keyId} not found`)
  return keyView(row, tz)
}

/** A top-up (positive) or an adjustment (signed): the balance update and its ledger row in one statement. */
export async function changeBalance(
  sql: Sql,
  accountId: number,
  kind: 'topup' | 'adjustment',
  amount: number,
  note: string | null,
  createdBy: number | null = null,
) {
  if (kind === 'topup' && amount <= 0) throw badValue('amount: must be a positive integer')
  if (kind === 'adjustment' && amount === 0) throw badValue('amount: must not be 0')
  await requireAccount(sql, accountId)
  const row = await credit(sql, accountId, kind, amount, note, createdBy)
  if (!row) throw badValue('amount: would make the balance negative')
  return { wa_balance: row.balance }
}

export async function setPrice(sql: Sql, input: { cost_per_message: number; account_id?: number | null }) {
  if (input.cost_per_message < 1) throw badValue('cost_per_message: must be a positive integer')
  const accountId = input.account_id ?? null
  if (accountId !== null) await requireAccount(sql, accountId)
  await writePrice(sql, accountId, input.cost_per_message)
  return getPrice(sql, accountId)
}

export async function getPrice(sql: Sql, accountId: number | null) {
  if (accountId !== null) await requireAccount(sql, accountId)
  const price = await priceOf(sql, accountId)
  return { cost_per_message: price.cost, account_id: accountId, account_override: price.overridden }
}

export async function clearPriceOverride(sql: Sql, accountId: number) {
  await requireAccount(sql, accountId)
  await clearPrice(sql, accountId)
  return getPrice(sql, accountId)
}

type LedgerRowDb = {
  id: number
  kind: 'topup' | 'charge' | 'refund' | 'adjustment'
  amount: number
  balance_after: number
  message_id: number | null
  note: string | null
  created_at: Date
}

export async function listLedger(sql: Sql, tz: string, accountId: number, p: Page, range: DateRange = { from: null, before: null }) {
  await requireAccount(sql, accountId)
  // `before` is exclusive: the end of date_to's second.
  const where = () => sql`account_id = ${accountId}
    ${range.from ? sql`and created_at >= ${range.from}` : sql``} ${range.before ? sql`and created_at < ${range.before}` : sql``}`
  const rows = await sql<LedgerRowDb[]>`
    select id, kind, amount, balance_after, message_id, note, created_at
    from ledger where ${where()} order by id desc limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number; sum: number }[]>`
    select count(*)::int as n from ledger where ${where()}`
  return pageOf(
    rows.map((r) => ({ ...r, created_at: formatTimestamp(r.created_at, tz)! })),
    count!.n,
    p,
  )
}

/** The ledger rows of one message of an account (its charge, and a refund if it had one), oldest first. */
export async function messageLedger(sql: Sql, tz: string, accountId: number, messageId: number) {
  const rows = await sql<LedgerRowDb[]>`
    select id, kind, amount, balance_after, message_id, note, created_at
    from ledger where message_id = ${messageId} and account_id = ${accountId} order by id`
  return rows.map((r) => ({ ...r, created_at: formatTimestamp(r.created_at, tz)! }))
}
