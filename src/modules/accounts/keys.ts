// An account's API keys: created with a label (the key itself is answered once and stored only as a
// hash), listed without secrets, activated and deactivated (effective on the next request).

import type { Db, Sql } from '../../db/client'
import { ApiError } from '../../http/errors'
import { newApiKey, sha256Hex } from '../../lib/keys'
import { formatTimestamp } from '../../lib/time'
import { pageOf } from '../../lib/validate'
import { requireText } from '../../http/values'
import { requireAccount } from './service'

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

export async function createKey(sql: Db, tz: string, accountId: number, input: { label: string }) {
  const label = requireText(input.label, 'label')
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
