// An account's API keys: created with a label (the key itself is answered once and stored only as a
// hash), listed without secrets, activated and deactivated (effective on the next request), and given
// limits of their own by an operator: a request rate per minute (null: the service's default) and a
// daily spend cap (null: none).

import { transaction, type Db, type Sql } from '../../db/client'
import { ApiError, badShape } from '../../http/errors'
import { newApiKey, sha256Hex } from '../../lib/keys'
import { formatTimestamp } from '../../lib/time'
import { checkRateLimit, checkSpendCap, pageOf } from '../../lib/validate'
import { requireText, valueOf } from '../../http/values'
import { requireAccount } from './service'
import type { Clock } from '../../lib/clock'
import { nowOf } from '../../db/now'

type KeyRow = {
  id: number
  account_id: number
  label: string
  prefix: string
  active: boolean
  last_used_at: Date | null
  created_at: Date
  rate_limit_per_minute: number | null
  daily_spend_cap: number | null
  spent_today: number
}
const keyView = (row: KeyRow, tz: string) => ({
  id: row.id,
  account_id: row.account_id,
  label: row.label,
  prefix: row.prefix,
  active: row.active,
  last_used_at: formatTimestamp(row.last_used_at, tz),
  created_at: formatTimestamp(row.created_at, tz)!,
  rate_limit_per_minute: row.rate_limit_per_minute,
  daily_spend_cap: row.daily_spend_cap,
  spent_today: row.spent_today,
})
export type KeyView = ReturnType<typeof keyView>

type SqlClock = Pick<Clock, 'sqlNow'>
/** The system's time (the database's now()): for callers that pass no clock. */
const SYSTEM: SqlClock = { sqlNow: () => null }

/** The start of today (by `clock`) in the service's time zone, in SQL. */
const startOfToday = (sql: Db, tz: string, clock: SqlClock) =>
  sql`(date_trunc('day', ${nowOf(sql, clock)} at time zone ${tz}) at time zone ${tz})`

/**
 * What key `k` (a row of api_keys) was charged today, in the service's time zone: the cost of every
 * message it sent since midnight, refunded ones included (the cap bounds charges; see README). Read
 * through the account's messages by date (messages_account_newest).
 */
const spentTodayOf = (sql: Db, tz: string, clock: SqlClock) => sql`
  (select coalesce(sum(m.cost), 0) from messages m
   where m.account_id = k.account_id and m.api_key_id = k.id and m.created_at >= ${startOfToday(sql, tz, clock)})::bigint`

const selectKeys = (sql: Db, tz: string, clock: SqlClock) => sql`
  select k.id, k.account_id, k.label, k.prefix, k.active, k.last_used_at, k.created_at, k.rate_limit_per_minute,
         k.daily_spend_cap, ${spentTodayOf(sql, tz, clock)} as spent_today
  from api_keys k`

/** What a key was charged today (TIMEZONE), refunds not deducted; 404 for an unknown key. */
export async function spentToday(sql: Db, tz: string, keyId: number, clock: SqlClock = SYSTEM): Promise<number> {
  const [row] = await sql<
    { spent_today: number }[]
  >`select ${spentTodayOf(sql, tz, clock)} as spent_today from api_keys k where k.id = ${keyId}`
  if (!row) throw new ApiError('NOT_FOUND', `key ${keyId} not found`)
  return row.spent_today
}

export async function createKey(sql: Db, tz: string, accountId: number, input: { label: string }) {
  const label = requireText(input.label, 'label')
  await requireAccount(sql, accountId)
  const { key, prefix } = newApiKey()
  const [row] = await sql<KeyRow[]>`
    insert into api_keys (account_id, label, key_hash, prefix) values (${accountId}, ${label}, ${sha256Hex(key)}, ${prefix})
    returning id, account_id, label, prefix, active, last_used_at, created_at, rate_limit_per_minute, daily_spend_cap, 0 as spent_today`
  return { ...keyView(row!, tz), key }
}

export async function listKeys(sql: Sql, tz: string, accountId: number, clock: SqlClock) {
  await requireAccount(sql, accountId)
  const rows = await sql<KeyRow[]>`${selectKeys(sql, tz, clock)} where k.account_id = ${accountId} order by k.id`
  return pageOf(
    rows.map((r) => keyView(r, tz)),
    rows.length,
    { limit: rows.length, offset: 0 },
  )
}

export async function getKey(sql: Db, tz: string, keyId: number, clock: SqlClock) {
  const [row] = await sql<KeyRow[]>`${selectKeys(sql, tz, clock)} where k.id = ${keyId}`
  if (!row) throw new ApiError('NOT_FOUND', `key ${keyId} not found`)
  return keyView(row, tz)
}

export async function setKeyActive(sql: Sql, tz: string, keyId: number, active: boolean, clock: SqlClock) {
  return updateKey(sql, tz, keyId, { active }, clock)
}

/** A change of a key: any of these; `null` limits go back to the default rate, or to no cap. */
export type KeyChange = { active?: boolean; rate_limit_per_minute?: number | null; daily_spend_cap?: number | null }

/**
 * PATCH /admin/v1/keys/{id}. A new cap starts from what the key was charged today so far: that sum is
 * taken under the account's row lock, which every charge of the key holds too, so no charge can slip
 * between the sum and the cap (the charges count on from it: spend_day, spent_today).
 */
export async function updateKey(sql: Sql, tz: string, keyId: number, change: KeyChange, clock: SqlClock) {
  const given = (name: keyof KeyChange) => change[name] !== undefined
  if (!given('active') && !given('rate_limit_per_minute') && !given('daily_spend_cap')) {
    throw badShape('body: give at least one of active, rate_limit_per_minute, daily_spend_cap')
  }
  const rate = given('rate_limit_per_minute') ? valueOf(checkRateLimit(change.rate_limit_per_minute!, 'rate_limit_per_minute')) : null
  const cap = given('daily_spend_cap') ? valueOf(checkSpendCap(change.daily_spend_cap!, 'daily_spend_cap')) : null
  return transaction(sql, async (tx) => {
    const [key] = await tx<{ account_id: number }[]>`select account_id from api_keys where id = ${keyId}`
    if (!key) throw new ApiError('NOT_FOUND', `key ${keyId} not found`)
    if (given('daily_spend_cap')) await tx`select 1 from accounts where id = ${key.account_id} for update`
    await tx`
      update api_keys k set
        active = ${given('active') ? change.active! : tx`k.active`},
        rate_limit_per_minute = ${given('rate_limit_per_minute') ? rate : tx`k.rate_limit_per_minute`},
        daily_spend_cap = ${given('daily_spend_cap') ? cap : tx`k.daily_spend_cap`},
        spend_day = ${given('daily_spend_cap') ? tx`(${nowOf(tx, clock)} at time zone ${tz})::date` : tx`k.spend_day`},
        spent_today = ${given('daily_spend_cap') ? spentTodayOf(tx, tz, clock) : tx`k.spent_today`}
      where k.id = ${keyId}`
    return getKey(tx, tz, keyId, clock)
  })
}
