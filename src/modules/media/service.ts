// Files uploaded through POST /api/v1/media (issue 32 §3): the only SQL on media and
// media_provider_ids. A file is kept with its checked type, size, sha256 and name, owned by one
// account; a send names it by its opaque id (`med_…`), looked up within the sender's account only.
// Providers reach it through the MediaStore (providers/provider.ts) this file builds: the bytes, a
// signed link (links.ts), and the provider's own id of it kept for its lifetime.

import { createHash } from 'node:crypto'
import type { Db, Sql } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import type { SecretBox } from '../../lib/secrets'
import type { MediaStore } from '../../providers/provider'
import type { MediaKind } from './files'
import { signedLink } from './signing'

/** How a file is shown (POST /media, GET /media/{id}). */
export type MediaView = {
  id: string
  type: string
  kind: MediaKind
  size: number
  sha256: string
  filename: string | null
  created_at: Date
  last_used_at: Date
}

/** A new file's id: `med_` and 128 random bits, base64url; nothing in it says whose it is or when. */
const newId = () => `med_${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('base64url')}`

/** What an id may look like: anything else is not one (404 without a query). */
export const MEDIA_ID = /^med_[A-Za-z0-9_-]{22}$/

const view = (r: MediaView & { mime_type?: string }): MediaView => ({
  id: r.id,
  type: r.type,
  kind: r.kind,
  size: Number(r.size),
  sha256: r.sha256,
  filename: r.filename,
  created_at: r.created_at,
  last_used_at: r.last_used_at,
})

export async function storeMedia(
  sql: Sql,
  clock: Clock,
  accountId: number,
  file: { bytes: Uint8Array; type: string; kind: MediaKind; filename: string | null },
): Promise<MediaView> {
  const sha256 = createHash('sha256').update(file.bytes).digest('hex')
  const now = nowOf(sql, clock)
  const [row] = await sql<MediaView[]>`
    insert into media (id, account_id, kind, mime_type, size, sha256, filename, bytes, created_at, last_used_at)
    values (${newId()}, ${accountId}, ${file.kind}, ${file.type}, ${file.bytes.byteLength}, ${sha256}, ${file.filename},
            ${Buffer.from(file.bytes.buffer, file.bytes.byteOffset, file.bytes.byteLength)}, ${now}, ${now})
    returning id, mime_type as type, kind, size, sha256, filename, created_at, last_used_at`
  return view(row!)
}

/** One of the account's files, or null (another account's is null too). */
export async function getMedia(sql: Sql, accountId: number, id: string): Promise<MediaView | null> {
  if (!MEDIA_ID.test(id)) return null
  const [row] = await sql<MediaView[]>`
    select id, mime_type as type, kind, size, sha256, filename, created_at, last_used_at
    from media where id = ${id} and account_id = ${accountId}`
  return row ? view(row) : null
}

/**
 * Deletes one of the account's files (DELETE /api/v1/media/{id}): `deleted`; `not_found` for another
 * account's, an unknown or an already deleted one; `queued` while a message waiting for its hand-off
 * names it (as retention keeps it: deleting it would fail that send). Its providers' ids go with it.
 */
export async function deleteMedia(sql: Sql, accountId: number, id: string): Promise<'deleted' | 'not_found' | 'queued'> {
  if (!MEDIA_ID.test(id)) return 'not_found'
  const [row] = await sql<{ found: boolean; queued: boolean; deleted: boolean }[]>`
    with target as (select id from media where id = ${id} and account_id = ${accountId}),
    queued as (select exists (select 1 from target where ${stillSends(sql, 'target.id')}) as queued),
    gone as (delete from media where id in (select id from target) and not (select queued from queued) returning 1)
    select exists (select 1 from target) as found, (select queued from queued) as queued, exists (select 1 from gone) as deleted`
  return row!.deleted ? 'deleted' : row!.found ? 'queued' : 'not_found'
}

/**
 * SQL true when the file `file` (a column) may still be sent: a message waiting for its hand-off
 * (handoff_until is set while queued) names it, as a media object's `media_id` or as a template header's,
 * or a campaign that may still send (not sent, not cancelled) has it as its header's media.
 */
const stillSends = (sql: Sql, file: string) =>
  sql.unsafe(`(exists (select 1 from messages m where m.handoff_until is not null
                 and (m.content->>'media_id' = ${file} or m.content->'header'->>'media_id' = ${file}))
            or exists (select 1 from campaigns c where c.status in ('draft', 'scheduled', 'sending', 'paused')
                 and c.template_parameters->'header'->>'media_id' = ${file}))`)

/** The kind and file name of each of `ids` the account has (a send's `media_id`s, checked before charging). */
export async function accountMedia(
  sql: Db,
  accountId: number,
  ids: string[],
): Promise<Map<string, { kind: MediaKind; type: string; filename: string | null }>> {
  const wanted = [...new Set(ids.filter((id) => MEDIA_ID.test(id)))]
  if (wanted.length === 0) return new Map()
  const rows = await sql<{ id: string; kind: MediaKind; mime_type: string; filename: string | null }[]>`
    select id, kind, mime_type, filename from media where account_id = ${accountId} and id = any(${wanted}::text[])`
  return new Map(rows.map((r) => [r.id, { kind: r.kind, type: r.mime_type, filename: r.filename }]))
}

/** The bytes a signed link serves, with their type and name; counts as a use. */
export async function mediaBytes(sql: Sql, clock: Clock, id: string) {
  const [row] = await sql<{ bytes: Uint8Array; mime_type: string; kind: MediaKind; filename: string | null; sha256: string }[]>`
    update media set last_used_at = ${nowOf(sql, clock)} where id = ${id}
    returning bytes, mime_type, kind, filename, sha256`
  return row ?? null
}

/**
 * Deletes up to `batch` files unused for `days` (their upload or last send) that no queued message
 * names; their providers' ids go with them.
 */
export async function deleteUnusedMedia(sql: Sql, clock: Clock, days: number, batch: number): Promise<number> {
  if (days <= 0) return 0
  const rows = await sql`
    delete from media where id in (
      select d.id from media d
      where d.last_used_at < ${nowOf(sql, clock)} - make_interval(days => ${days})
        -- A message waiting for its hand-off, or a campaign yet to send, still needs it.
        and not ${stillSends(sql, 'd.id')}
      order by d.last_used_at limit ${batch}
      for update skip locked)
    returning 1`
  return rows.length
}

/** The MediaStore providers send uploaded files through. */
export function mediaStore(sql: Sql, clock: Clock, secrets: SecretBox, publicBaseUrl: string): MediaStore {
  return {
    async file(id) {
      const row = await mediaBytes(sql, clock, id)
      return row ? { bytes: new Uint8Array(row.bytes), type: row.mime_type, filename: row.filename } : null
    },
    async link(id) {
      await sql`update media set last_used_at = ${nowOf(sql, clock)} where id = ${id}`
      return signedLink(secrets, clock, publicBaseUrl, id)
    },
    async kept(id, scope) {
      const [row] = await sql<{ provider_media_id: string }[]>`
        update media set last_used_at = ${nowOf(sql, clock)}
        from media_provider_ids p
        where media.id = ${id} and p.media_id = media.id and p.scope = ${scope} and p.expires_at > ${nowOf(sql, clock)}
        returning p.provider_media_id`
      return row?.provider_media_id ?? null
    },
    async keep(id, scope, providerId, lifetimeMs) {
      await sql`
        insert into media_provider_ids (media_id, scope, provider_media_id, expires_at)
        select ${id}, ${scope}, ${providerId}, ${nowOf(sql, clock)} + make_interval(secs => ${lifetimeMs / 1000})
        where exists (select 1 from media where id = ${id})
        on conflict (media_id, scope) do update set provider_media_id = excluded.provider_media_id, expires_at = excluded.expires_at`
    },
  }
}
