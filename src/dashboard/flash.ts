// Flashes: what a change leaves for the page its redirect leads to, shown there once ("Top-up of
// 5,000 IDR booked", a new API key, a one-time link, an import report). A secret shown once after a
// redirect must not sit in the database in clear, and a report can be larger than a cookie, so a flash
// is a database row sealed with AES-256-GCM under a key derived from the session's cookie token
// (session.ts): the database holds only the token's hash, so only the browser holding the cookie can
// have it opened. The page's path is the additional data, so a flash opens only on the page it was
// left for; it is deleted as it is shown, with the session, or after FLASH_MINUTES.

import type { Db, Sql } from '../db/client'
import { nowOf } from '../db/now'
import type { Clock } from '../lib/clock'
import type { Flash, Session } from './session'

const FLASH_MINUTES = 10
const IV_BYTES = 12

const encoder = new TextEncoder()
const keyOf = (session: Session) => crypto.subtle.importKey('raw', session.flashKey, 'AES-GCM', false, ['encrypt', 'decrypt'])

/** Leaves `flash` for the session's next visit of `path` (in the caller's transaction when `db` is one). */
export async function leaveFlash(db: Db, clock: Clock, session: Session, path: string, flash: Flash): Promise<void> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES))
  const sealed = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: encoder.encode(path) },
    await keyOf(session),
    encoder.encode(JSON.stringify(flash)),
  )
  const now = nowOf(db, clock)
  await db`delete from dashboard_flashes where created_at < ${now} - make_interval(mins => ${FLASH_MINUTES})`
  await db`
    insert into dashboard_flashes (session_hash, path, sealed, created_at)
    values (${session.tokenHash}, ${path}, ${Buffer.concat([iv, new Uint8Array(sealed)])}, ${now})`
}

/** The session's flashes for `path`, oldest first, deleted as they are read. */
export async function takeFlashes(sql: Sql, clock: Clock, session: Session, path: string): Promise<Flash[]> {
  const rows = await sql<{ id: number; sealed: Uint8Array; fresh: boolean }[]>`
    delete from dashboard_flashes where session_hash = ${session.tokenHash} and path = ${path}
    returning id, sealed, created_at > ${nowOf(sql, clock)} - make_interval(mins => ${FLASH_MINUTES}) as fresh`
  if (rows.length === 0) return []
  const key = await keyOf(session)
  const flashes: Flash[] = []
  for (const row of rows.filter((r) => r.fresh).sort((a, b) => a.id - b.id)) {
    const sealed = new Uint8Array(row.sealed)
    try {
      const plain = await crypto.subtle.decrypt(
        { name: 'AES-GCM', iv: sealed.subarray(0, IV_BYTES), additionalData: encoder.encode(path) },
        key,
        sealed.subarray(IV_BYTES),
      )
      flashes.push(JSON.parse(new TextDecoder().decode(plain)) as Flash)
    } catch {
      // Not sealed for this session and path: nothing to show.
    }
  }
  return flashes
}
