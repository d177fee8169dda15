// API-key authentication: `Authorization: Bearer <key>` → the key's hash → its account.
// Checked on every request (no cache), so a deactivated key fails on the very next request
// from any instance.

import { Elysia } from 'elysia'
import type { Sql } from '../db/client'
import { ApiError } from './errors'
import { looksLikeApiKey, sha256Hex } from '../lib/keys'
import { Batcher } from '../lib/batch'

export type Principal = { accountId: number; keyId: number }

// last_used_at is written at most once a minute per key and process: a write on every request
// would make one hot row the bottleneck of every busy key.
const LAST_USED_EVERY_MS = 60_000
const lastUsedWritten = new Map<string, number>() // by key hash: ids repeat across databases

export function bearerToken(header: string | null | undefined): string {
  if (header === null || header === undefined) throw new ApiError('AUTH_MISSING_HEADER', 'Authorization header not found')
  const match = /^bearer\s+(\S+)\s*$/i.exec(header.trim())
  if (!match) throw new ApiError('AUTH_INVALID_KEY', 'Authorization must be "Bearer <API_KEY>"')
  return match[1]!
}

type KeyRow = { id: number; account_id: number }

// Concurrent requests share one lookup statement (group read); a lone request waits for nobody.
const lookups = new WeakMap<Sql, Batcher<string, KeyRow | undefined>>()
function lookupKey(sql: Sql, hash: string): Promise<KeyRow | undefined> {
  let batcher = lookups.get(sql)
  if (!batcher) {
    batcher = new Batcher(async (hashes) => {
      const rows = await sql<(KeyRow & { key_hash: string })[]>`
        select id, account_id, key_hash from api_keys where key_hash = any(${hashes}::text[]) and active`
      const found = new Map(rows.map((r) => [r.key_hash, { id: r.id, account_id: r.account_id }]))
      return hashes.map((h) => found.get(h))
    })
    lookups.set(sql, batcher)
  }
  return batcher.add(hash)
}

export async function authenticate(sql: Sql, header: string | null | undefined): Promise<Principal> {
  const key = bearerToken(header)
  if (!looksLikeApiKey(key)) throw new ApiError('AUTH_INVALID_KEY', 'API key is invalid or inactive')
  const hash = sha256Hex(key)
  const row = await lookupKey(sql, hash)
  if (!row) throw new ApiError('AUTH_INVALID_KEY', 'API key is invalid or inactive')
  const now = Date.now()
  if ((lastUsedWritten.get(hash) ?? 0) < now - LAST_USED_EVERY_MS) {
    lastUsedWritten.set(hash, now)
    sql`update api_keys set last_used_at = now() where id = ${row.id}`.catch(() => lastUsedWritten.delete(hash))
  }
  return { accountId: row.account_id, keyId: row.id }
}

// The shell authenticates a request before reading its body, the route's derive needs the principal
// again: one lookup per request serves both.
const byRequest = new WeakMap<Request, Promise<Principal>>()

export function authenticateRequest(sql: Sql, request: Request): Promise<Principal> {
  let principal = byRequest.get(request)
  if (!principal) {
    principal = authenticate(sql, request.headers.get('authorization'))
    byRequest.set(request, principal)
  }
  return principal
}

/** Derives `principal` for every route registered after it in the same plugin chain. */
export const apiKeyAuth = (sql: Sql) =>
  new Elysia({ name: 'api-key-auth' }).derive({ as: 'scoped' }, async ({ request }) => ({
    principal: await authenticateRequest(sql, request),
  }))
