// Media of inbound messages, kept: the only SQL on inbound_media. A medium is queued with its message
// (queueMedia, in storeInbound's transaction), fetched once from the provider by the inbound-media
// worker of any instance (claimDue → fetchMedium → record), checked (MEDIA_MAX_BYTES while reading,
// an allowed type for its kind, magic bytes) and its bytes kept in the database, so the link we give
// out (`{PUBLIC_BASE_URL}/api/v1/inbound/{id}/media`) does not expire with the provider's.

import { windowIsOpen } from './window'
import { createHash } from 'node:crypto'
import type { Sql, Tx } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import type { Deps } from '../../deps'
import type { InboundMessage, MediaRef, Provider } from '../../providers/provider'
import { createProvider, type ProviderName } from '../../providers/registry'

/** How many times a medium is tried (network errors, 5xx, 408, 429) before it is failed for good. */
export const MEDIA_MAX_ATTEMPTS = 8
/** How long one fetch may take, headers and body; its claim lasts longer (MEDIA_LEASE_SECONDS). */
export const MEDIA_FETCH_TIMEOUT_MS = 120_000
/** How long a claimed medium is left to its worker: past it (the worker died), another takes it. */
const MEDIA_LEASE_SECONDS = 300
/** The retry delays: 30 s, 2 min, 8 min, 32 min, then hourly (SQL: least(3600, 30 * 4^(attempts-1))). */
const RETRY_BASE_SECONDS = 30

const KINDS = ['image', 'document', 'audio', 'video', 'sticker'] as const
export type MediaKind = (typeof KINDS)[number]

const OFFICE = [
  'application/msword',
  'application/vnd.ms-excel',
  'application/vnd.ms-powerpoint',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
]

/** The types kept for each kind: WhatsApp's supported media (Cloud API "Supported media types"). */
export const ALLOWED_TYPES: Record<MediaKind, readonly string[]> = {
  image: ['image/jpeg', 'image/png'],
  sticker: ['image/webp'],
  audio: ['audio/aac', 'audio/amr', 'audio/mpeg', 'audio/mp4', 'audio/ogg', 'audio/opus'],
  video: ['video/mp4', 'video/3gpp'],
  document: ['application/pdf', 'text/plain', ...OFFICE],
}

const startsWith = (bytes: Uint8Array, magic: number[], at = 0) => magic.every((b, i) => bytes[at + i] === b)
const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0))
const ZIP = ascii('PK\u0003\u0004')
const OLE = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]
const isoMedia = (b: Uint8Array) => startsWith(b, ascii('ftyp'), 4)

/** The first bytes each type must start with (its magic number); types without one are not checked (text, mpeg, aac). */
export const MAGIC: Record<string, (bytes: Uint8Array) => boolean> = {
  'image/jpeg': (b) => startsWith(b, [0xff, 0xd8, 0xff]),
  'image/png': (b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  'image/webp': (b) => startsWith(b, ascii('RIFF')) && startsWith(b, ascii('WEBP'), 8),
  'application/pdf': (b) => startsWith(b, ascii('%PDF-')),
  'audio/ogg': (b) => startsWith(b, ascii('OggS')),
  'audio/opus': (b) => startsWith(b, ascii('OggS')),
  'audio/amr': (b) => startsWith(b, ascii('#!AMR')),
  'audio/mp4': isoMedia,
  'video/mp4': isoMedia,
  'video/3gpp': isoMedia,
  'application/msword': (b) => startsWith(b, OLE),
  'application/vnd.ms-excel': (b) => startsWith(b, OLE),
  'application/vnd.ms-powerpoint': (b) => startsWith(b, OLE),
  ...Object.fromEntries(OFFICE.filter((t) => t.includes('openxml')).map((t) => [t, (b: Uint8Array) => startsWith(b, ZIP)])),
}

const ALIASES: Record<string, string> = { 'image/jpg': 'image/jpeg', 'video/3gp': 'video/3gpp', 'audio/mp3': 'audio/mpeg' }
/** A Content-Type's essence, lowercased, without parameters (`audio/ogg; codecs=opus` → `audio/ogg`). */
export function essenceOf(type: string | null | undefined): string | null {
  const essence = type?.split(';')[0]!.trim().toLowerCase()
  if (!essence) return null
  return ALIASES[essence] ?? essence
}
/** Types that say nothing of the content: the provider's declared type stands in for them. */
export const GENERIC = new Set(['application/octet-stream', 'binary/octet-stream', 'application/binary'])

/** The kind of a medium of its own type (Twilio's several media each have their own). */
const kindOfType = (type: string | null): MediaKind => {
  const essence = essenceOf(type) ?? ''
  if (essence === 'image/webp') return 'sticker'
  if (essence.startsWith('image/')) return 'image'
  if (essence.startsWith('video/')) return 'video'
  if (essence.startsWith('audio/')) return 'audio'
  return 'document'
}

const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value.replaceAll('\0', '') : null)

/**
 * Queues the media of a new inbound message (storeInbound's transaction): one pending row per medium,
 * or none for a message without media. A medium the provider named by neither id nor URL is failed at once.
 */
export async function queueMedia(tx: Tx, clock: Clock, inboundId: number, message: InboundMessage): Promise<number> {
  if (!(KINDS as readonly string[]).includes(message.type)) return 0
  const content = message.content
  const several = Array.isArray(content.media) ? (content.media as Record<string, unknown>[]) : null
  const media = (several ?? [content]).slice(0, 10).map((m, position) => ({
    position,
    id: text(m?.media_id),
    url: text(m?.media_url),
    declared: text(m?.mime_type),
    // Several media (Twilio) are each of their own kind; one medium is of its message's type.
    kind: several ? kindOfType(text(m?.mime_type)) : (message.type as MediaKind),
    filename: position === 0 ? text(content.filename) : null,
  }))
  for (const m of media) {
    const named = m.id !== null || m.url !== null
    await tx`
      insert into inbound_media (inbound_message_id, position, provider_media_id, provider_url, kind, declared_type, filename, status, error, run_at)
      values (${inboundId}, ${m.position}, ${m.id}, ${m.url}, ${m.kind}, ${m.declared}, ${m.filename},
              ${named ? 'pending' : 'failed'}, ${named ? null : 'the provider named no media id or URL'}, ${nowOf(tx, clock)})
      on conflict (inbound_message_id, position) do nothing`
  }
  return media.length
}

type Claimed = {
  id: number
  inbound_message_id: number
  position: number
  provider: string
  sender_id: number | null
  provider_media_id: string | null
  provider_url: string | null
  kind: MediaKind
  declared_type: string | null
  attempts: number
}

/**
 * Claims up to `limit` due media (skipping those another worker holds) for MEDIA_LEASE_SECONDS: one
 * statement, so two workers of any instances never claim the same medium. Media tried
 * MEDIA_MAX_ATTEMPTS times whose last holder died are failed first.
 */
export async function claimDue(sql: Sql, clock: Clock, limit: number): Promise<Claimed[]> {
  const now = nowOf(sql, clock)
  await sql`
    update inbound_media set status = 'failed', finished_at = ${now},
           error = 'gave up after ' || attempts || ' attempts' || coalesce(': ' || error, '')
    where id in (
      select id from inbound_media where status = 'pending' and run_at <= ${now} and attempts >= ${MEDIA_MAX_ATTEMPTS}
      for update skip locked)`
  const rows = await sql<Claimed[]>`
    update inbound_media m
    set attempts = m.attempts + 1, run_at = ${now} + make_interval(secs => ${MEDIA_LEASE_SECONDS})
    from inbound_messages i
    where m.id in (
      select id from inbound_media
      where status = 'pending' and run_at <= ${now} and attempts < ${MEDIA_MAX_ATTEMPTS}
      order by run_at, id limit ${limit}
      for update skip locked)
      and i.id = m.inbound_message_id
    returning m.id, m.inbound_message_id, m.position, i.provider, i.sender_id, m.provider_media_id, m.provider_url, m.kind,
              m.declared_type, m.attempts`
  return rows.map((r) => ({
    ...r,
    id: Number(r.id),
    inbound_message_id: Number(r.inbound_message_id),
    sender_id: r.sender_id === null ? null : Number(r.sender_id),
  }))
}

export type Outcome = { kept: true; mimeType: string; bytes: Uint8Array; sha256: string } | { kept: false; retry: boolean; reason: string }

const refuse = (reason: string): Outcome => ({ kept: false, retry: false, reason })

/**
 * Reads an opened medium with the cap enforced while reading, and checks it: the response's type (the
 * provider's declared one when the response's says nothing) must be allowed for its kind, its first
 * bytes must match that type, and Meta's sha256 (when given) the bytes.
 */
export async function readMedium(
  opened: { response: Response; declaredType: string | null; declaredSize: number | null; sha256: string | null },
  medium: { kind: MediaKind; declaredType: string | null },
  maxBytes: number,
): Promise<Outcome> {
  const { response } = opened
  const answered = essenceOf(response.headers.get('content-type'))
  const type = answered && !GENERIC.has(answered) ? answered : essenceOf(opened.declaredType ?? medium.declaredType)
  const allowed = ALLOWED_TYPES[medium.kind]
  if (!type || !allowed.includes(type)) {
    await response.body?.cancel().catch(() => {})
    return refuse(
      `type ${type ?? '(none)'} is not allowed for ${medium.kind === 'image' ? 'an' : 'a'} ${medium.kind} (allowed: ${allowed.join(', ')})`,
    )
  }
  const length = Number(response.headers.get('content-length') ?? NaN)
  const announced = Math.max(Number.isFinite(length) ? length : 0, opened.declaredSize ?? 0)
  if (announced > maxBytes) {
    await response.body?.cancel().catch(() => {})
    return refuse(`the medium is ${announced} bytes, over MEDIA_MAX_BYTES (${maxBytes})`)
  }
  const bytes = await readUpTo(response.body, maxBytes)
  if (bytes === 'error') return { kept: false, retry: true, reason: 'the download broke off' }
  if (bytes === null) return refuse(`the medium is over MEDIA_MAX_BYTES (${maxBytes} bytes): refused while reading`)
  const check = MAGIC[type]
  if (check && !check(bytes)) return refuse(`the first bytes are not those of ${type}`)
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  if (opened.sha256 && opened.sha256 !== sha256) return { kept: false, retry: true, reason: "the bytes do not match the provider's sha256" }
  return { kept: true, mimeType: type, bytes, sha256 }
}

/** The body's bytes, null as soon as they pass `limit` (the rest is not read), 'error' when the stream broke. */
async function readUpTo(body: ReadableStream<Uint8Array> | null, limit: number): Promise<Uint8Array | null | 'error'> {
  if (!body) return new Uint8Array()
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > limit) {
        await reader.cancel().catch(() => {})
        return null
      }
      chunks.push(value)
    }
  } catch {
    return 'error'
  }
  return Buffer.concat(chunks)
}

/** Records a claim's outcome, unless the claim was lost (its lease ran out and another took the medium). */
export async function record(sql: Sql, clock: Clock, medium: Claimed, outcome: Outcome): Promise<void> {
  const now = nowOf(sql, clock)
  const mine = sql`id = ${medium.id} and status = 'pending' and attempts = ${medium.attempts}`
  if (outcome.kept) {
    await sql`
      update inbound_media
      set status = 'kept', mime_type = ${outcome.mimeType}, size = ${outcome.bytes.byteLength}, sha256 = ${outcome.sha256},
          bytes = ${Buffer.from(outcome.bytes.buffer, outcome.bytes.byteOffset, outcome.bytes.byteLength)}, error = null, finished_at = ${now}
      where ${mine}`
  } else if (outcome.retry && medium.attempts < MEDIA_MAX_ATTEMPTS) {
    await sql`
      update inbound_media
      set error = ${outcome.reason},
          run_at = ${now} + make_interval(secs => least(3600, ${RETRY_BASE_SECONDS} * power(4, attempts - 1)))
      where ${mine}`
  } else {
    const reason = outcome.retry ? `gave up after ${medium.attempts} attempts: ${outcome.reason}` : outcome.reason
    await sql`update inbound_media set status = 'failed', error = ${reason}, finished_at = ${now} where ${mine}`
  }
}

/**
 * The provider that fetches a medium with the credentials of the sender the message reached: a stored
 * sender's own, else (the deployment's number) the environment's settings of the message's provider.
 */
async function providerOf(deps: Deps, medium: Claimed): Promise<Provider> {
  if (medium.sender_id !== null) return (await deps.senders.get(medium.sender_id)).provider
  const settings = (deps.config.providers as Record<string, unknown>)[medium.provider]
  if (settings === undefined) return { name: medium.provider, send: async () => ({ ok: false, errorCode: null, errorMessage: '' }) }
  return createProvider(medium.provider as ProviderName, settings as never, {
    publicBaseUrl: deps.config.publicBaseUrl,
    timeoutMs: deps.config.providerTimeoutMs,
    clock: deps.clock,
    sql: deps.sql,
    windowOpen: (phone) => windowIsOpen(deps.sql, deps.clock, null, phone),
  })
}

/** Fetches one claimed medium from its provider and reads it (never throws). */
export async function fetchMedium(deps: Deps, medium: Claimed): Promise<Outcome> {
  try {
    const provider = await providerOf(deps, medium)
    if (!provider.openMedia) {
      // A stored sender whose credentials do not open (SECRETS_KEY) has a provider that only refuses.
      return refuse(
        medium.sender_id === null
          ? `the ${medium.provider} provider has no media to fetch`
          : `sender ${medium.sender_id} cannot fetch media: its credentials do not open with this service's SECRETS_KEY`,
      )
    }
    const signal = AbortSignal.timeout(MEDIA_FETCH_TIMEOUT_MS)
    const ref: MediaRef = { id: medium.provider_media_id, url: medium.provider_url }
    const opened = await provider.openMedia(ref, signal)
    if (!opened.ok) return { kept: false, retry: opened.retry, reason: opened.reason }
    return await readMedium(opened, { kind: medium.kind, declaredType: medium.declared_type }, deps.config.mediaMaxBytes)
  } catch {
    return { kept: false, retry: true, reason: 'the fetch failed unexpectedly' }
  }
}
