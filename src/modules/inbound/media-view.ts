// Kept media of inbound messages as the API and the dashboard show them: the media fields of an
// inbound message's `content` (our stable links, each medium's state) and a medium's own answer (its
// bytes with safe headers, or why not). Reads inbound_media (media.ts writes it).

import type { Sql } from '../../db/client'
import { ApiError } from '../../http/errors'

export type MediaState = {
  inbound_message_id: number
  position: number
  status: 'pending' | 'kept' | 'failed'
  error: string | null
  mime_type: string | null
  size: number | null
  sha256: string | null
  provider_url: string | null
}

/** The media of these inbound messages (without their bytes), by message id. */
export async function mediaStates(sql: Sql, inboundIds: number[]): Promise<Map<number, MediaState[]>> {
  const out = new Map<number, MediaState[]>()
  if (inboundIds.length === 0) return out
  const rows = await sql<MediaState[]>`
    select inbound_message_id, position, status, error, mime_type, size, sha256, provider_url
    from inbound_media where inbound_message_id = any(${[...new Set(inboundIds)]}::bigint[]) order by inbound_message_id, position`
  for (const r of rows) {
    const id = Number(r.inbound_message_id)
    out.set(id, [...(out.get(id) ?? []), { ...r, inbound_message_id: id, size: r.size === null ? null : Number(r.size) }])
  }
  return out
}

/** Our link to a medium: `/media` for the first (or only) one, `/media/{n}` for each of several. */
export const mediaUrl = (publicBaseUrl: string, inboundId: number, position: number | null) =>
  `${publicBaseUrl}/api/v1/inbound/${inboundId}/media${position === null ? '' : `/${position}`}`

/** The dashboard's link to a medium (session-authenticated; operators any account's, members their own). */
export const dashboardMediaPath = (inboundId: number, position = 0) => `/dashboard/inbound/${inboundId}/media/${position}`

/** A medium's fields in `content`: our link, its state and, once kept, its size, sha256 and type. */
const fieldsOf = (state: MediaState, url: string) => ({
  media_url: url,
  media_status: state.status,
  media_size: state.size,
  media_sha256: state.sha256,
  media_error: state.status === 'failed' ? state.error : null,
  ...(state.status === 'kept' ? { mime_type: state.mime_type } : {}),
})

/** `value` with every string equal to one of `from`'s keys replaced by its value (the raw item's provider URLs). */
function replaceStrings(value: unknown, from: Map<string, string>): unknown {
  if (typeof value === 'string') return from.get(value) ?? value
  if (Array.isArray(value)) return value.map((v) => replaceStrings(v, from))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceStrings(v, from)]))
  }
  return value
}

type WithContent = { id: number; content: Record<string, unknown> | null; raw?: unknown; media_url?: string | null }

/**
 * Inbound messages as the API shows them: a medium's `content.media_url` is our stable link (the
 * provider's id stays `media_id`), with `media_status`, `media_size`, `media_sha256`, `media_error`;
 * several media (Twilio) each in `content.media[n]` with `/media/{n}`. Once a medium is kept, its
 * provider URL is replaced by ours in `raw` too. Items without media are unchanged.
 */
export async function withMedia<T extends WithContent>(sql: Sql, publicBaseUrl: string, items: T[]): Promise<T[]> {
  const states = await mediaStates(
    sql,
    items.filter((i) => i.content !== null).map((i) => i.id),
  )
  return items.map((item) => {
    const media = states.get(item.id)
    if (!media || media.length === 0 || item.content === null) return item
    const several = Array.isArray(item.content.media)
    const content: Record<string, unknown> = { ...item.content, ...fieldsOf(media[0]!, mediaUrl(publicBaseUrl, item.id, null)) }
    if (several) {
      content.media = (item.content.media as Record<string, unknown>[]).map((entry, n) => {
        const state = media.find((m) => m.position === n)
        return state ? { ...entry, ...fieldsOf(state, mediaUrl(publicBaseUrl, item.id, n)) } : entry
      })
    }
    const kept = new Map(
      media
        .filter((m) => m.status === 'kept' && m.provider_url)
        .map((m) => [m.provider_url!, mediaUrl(publicBaseUrl, item.id, several ? m.position : null)]),
    )
    const out: T = { ...item, content }
    if ('media_url' in item) out.media_url = content.media_url as string
    if ('raw' in item && kept.size > 0) out.raw = replaceStrings(item.raw, kept)
    return out
  })
}

/** A safe file name for Content-Disposition: no path, no control or quoting characters; ASCII for `filename`. */
export function safeFilename(given: string | null, fallback: string): { ascii: string; utf8: string } {
  const base = (given ?? '').split(/[\\/]/).pop()!
  const cleaned = base
    .replace(/[\u0000-\u001f\u007f"<>:|?*;]+/g, '')
    .trim()
    .replace(/^\.+/, '')
    .slice(0, 150)
  const utf8 = cleaned || fallback
  const ascii =
    utf8
      .normalize('NFKD')
      .replace(/[^\w.\- ()+,=@]/g, '_')
      .slice(0, 150) || fallback
  return { ascii, utf8 }
}

const EXTENSIONS: Record<string, string> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/webp': 'webp',
  'audio/ogg': 'ogg',
  'audio/opus': 'opus',
  'audio/mpeg': 'mp3',
  'audio/aac': 'aac',
  'audio/amr': 'amr',
  'audio/mp4': 'm4a',
  'video/mp4': 'mp4',
  'video/3gpp': '3gp',
  'application/pdf': 'pdf',
  'text/plain': 'txt',
}

/**
 * A medium's answer for one of the account's inbound messages (`accountId` null: any account's, for
 * operators): its bytes with their type, length, a safe Content-Disposition (attachment for documents),
 * nosniff and cache headers; 304 when `ifNoneMatch` names it. 404 for another account's message or an
 * unknown medium; 409 MEDIA_PENDING while it is being fetched; 410 MEDIA_FAILED with the reason.
 */
export async function serveMedium(
  sql: Sql,
  accountId: number | null,
  inboundId: number,
  position: number,
  ifNoneMatch: string | null,
): Promise<Response> {
  const [row] = await sql<
    {
      found: boolean
      status: string | null
      error: string | null
      mime_type: string | null
      kind: string | null
      filename: string | null
      bytes: Uint8Array | null
      sha256: string | null
    }[]
  >`
    select true as found, m.status, m.error, m.mime_type, m.kind, m.filename, m.sha256,
           case when m.status = 'kept' and m.sha256 is distinct from ${etagValue(ifNoneMatch)} then m.bytes end as bytes
    from inbound_messages i
    left join inbound_media m on m.inbound_message_id = i.id and m.position = ${position}
    where i.id = ${inboundId} and (${accountId}::bigint is null or i.account_id = ${accountId})`
  if (!row) throw new ApiError('NOT_FOUND', `inbound message ${inboundId} not found`)
  const name = `medium ${position} of inbound message ${inboundId}`
  if (row.status === null) throw new ApiError('NOT_FOUND', `inbound message ${inboundId} has no medium ${position}`)
  if (row.status === 'pending') {
    throw new ApiError(
      'MEDIA_PENDING',
      `${name} is being fetched from the provider; try again shortly`,
      undefined,
      {},
      { 'retry-after': '5' },
    )
  }
  if (row.status === 'failed') throw new ApiError('MEDIA_FAILED', `${name} could not be kept: ${row.error ?? 'unknown reason'}`)
  const etag = `"${row.sha256}"`
  const headers: Record<string, string> = {
    etag,
    'cache-control': 'private, max-age=31536000, immutable',
    'x-content-type-options': 'nosniff',
  }
  if (row.bytes === null) return new Response(null, { status: 304, headers })
  const extension = EXTENSIONS[row.mime_type!] ?? (row.kind === 'document' ? 'bin' : row.kind!)
  const file = safeFilename(row.kind === 'document' ? row.filename : null, `inbound-${inboundId}-${position}.${extension}`)
  const disposition = row.kind === 'document' ? 'attachment' : 'inline'
  const bytes = row.bytes
  return new Response(bytes, {
    headers: {
      ...headers,
      'content-type': row.mime_type === 'text/plain' ? 'text/plain; charset=utf-8' : row.mime_type!,
      'content-length': String(bytes.byteLength),
      'content-disposition': `${disposition}; filename="${file.ascii}"; filename*=UTF-8''${rfc5987(file.utf8)}`,
    },
  })
}

/** Percent-encoding for `filename*` (RFC 8187): encodeURIComponent leaves ' ( ) * which it must not. */
const rfc5987 = (value: string) => encodeURIComponent(value).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

/** The sha256 an If-None-Match names (`"<hex>"`, or W/ of it), else null. */
function etagValue(header: string | null): string | null {
  const match = /^\s*(?:W\/)?"([0-9a-f]{64})"\s*$/i.exec(header ?? '')
  return match ? match[1]!.toLowerCase() : null
}
