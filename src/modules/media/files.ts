// What an uploaded file may be (issue 32 §3): WhatsApp's supported media types of each kind and their
// size limits (the Cloud API's "Supported media types": images 5 MB, jpeg and png; video 16 MB, mp4 and
// 3gpp; audio 16 MB, aac, amr, mpeg, mp4 and ogg; documents 100 MB, pdf, office and text; stickers
// 500 KB, webp), and its type checked by its first bytes, not by what the request says alone. The
// types and magic numbers are those inbound media are checked with (inbound/media.ts).

import { ApiError, badValue } from '../../http/errors'
import { ALLOWED_TYPES, essenceOf, GENERIC, MAGIC, type MediaKind } from '../inbound/media'

export type { MediaKind }
export const MEDIA_KINDS: readonly MediaKind[] = ['image', 'video', 'audio', 'document', 'sticker']

const MiB = 1024 * 1024
/** The largest file of each kind WhatsApp takes (bytes). */
export const KIND_LIMITS: Record<MediaKind, number> = {
  image: 5 * MiB,
  video: 16 * MiB,
  audio: 16 * MiB,
  document: 100 * MiB,
  sticker: 500 * 1024,
}
/** The largest upload of any kind. */
export const MAX_FILE_BYTES = KIND_LIMITS.document
/** Room in a multipart body for its boundaries, part headers and small fields around the file. */
export const MULTIPART_ROOM = 64 * 1024

/** The kind a type is sent as, or null when WhatsApp sends no such type. */
export function kindOfType(type: string): MediaKind | null {
  return MEDIA_KINDS.find((kind) => ALLOWED_TYPES[kind].includes(type)) ?? null
}

const ALL_TYPES = MEDIA_KINDS.flatMap((kind) => ALLOWED_TYPES[kind])
const allowedList = () => ALL_TYPES.join(', ')

const startsWith = (bytes: Uint8Array, text: string, at = 0) => [...text].every((c, i) => bytes[at + i] === c.charCodeAt(0))

/**
 * What the first bytes say a file is, when they say it clearly: the type, or a family several types
 * share (an OLE or a zip container: a Word, Excel or PowerPoint file), else null.
 */
export function sniff(bytes: Uint8Array): string | null {
  for (const type of ['image/jpeg', 'image/png', 'image/webp', 'application/pdf', 'audio/ogg', 'audio/amr'] as const) {
    if (MAGIC[type]!(bytes)) return type
  }
  if (startsWith(bytes, 'ftyp', 4)) {
    // ISO media: the brand tells a 3GPP file and an audio-only MPEG-4 from an MPEG-4 video.
    if (startsWith(bytes, '3g', 8)) return 'video/3gpp'
    if (startsWith(bytes, 'M4A', 8)) return 'audio/mp4'
    return 'video/mp4'
  }
  if (MAGIC['application/msword']!(bytes)) return 'an OLE file (doc, xls or ppt)'
  if (startsWith(bytes, 'PK\u0003\u0004')) return 'a zip file (docx, xlsx or pptx)'
  return null
}

export type CheckedFile = { type: string; kind: MediaKind }

/** 415 for a type WhatsApp does not send, naming the ones it does. */
const notSent = (what: string) =>
  new ApiError('UNSUPPORTED_MEDIA_TYPE', `${what} is not a type WhatsApp sends; upload one of ${allowedList()}`, 415)

/**
 * The type and kind of a file whose Content-Type is `declared` (a part's, or the body's), before its
 * bytes are read: 415 for a type WhatsApp does not send; null when it says nothing (none, or
 * application/octet-stream): the bytes will tell.
 */
export function declaredKind(declared: string | null): CheckedFile | null {
  const type = essenceOf(declared)
  if (type === null || GENERIC.has(type)) return null
  const kind = kindOfType(type)
  if (!kind) throw notSent(`Content-Type ${type.slice(0, 100)}`)
  return { type, kind }
}

/** 413 in the envelope: the file is over its kind's limit. */
export const overLimit = (kind: MediaKind, size: number | null) =>
  new ApiError(
    'PAYLOAD_TOO_LARGE',
    `file: ${kind === 'image' ? 'an' : 'a'} ${kind} may be at most ${KIND_LIMITS[kind]} bytes (WhatsApp's limit)` +
      (size === null ? '' : `; this one is ${size} bytes`),
  )

/**
 * The file's type checked against its bytes: a declared type whose magic number the bytes lack, or
 * bytes that are clearly of another type, are 422 naming both; no type declared: the bytes' own
 * (415 when they do not say). Then its kind's size limit (413).
 */
export function checkFile(declared: string | null, bytes: Uint8Array): CheckedFile {
  if (bytes.byteLength === 0) throw badValue('file: is empty')
  const given = declaredKind(declared)
  const seen = sniff(bytes)
  let checked: CheckedFile
  if (!given) {
    const kind = seen ? kindOfType(seen) : null
    if (!seen || !kind) {
      throw notSent(
        seen ? `${seen} given as ${essenceOf(declared) ?? 'no type'}` : `a file of no stated type whose first bytes say nothing known`,
      )
    }
    checked = { type: seen, kind }
  } else {
    const magic = MAGIC[given.type]
    // A type with a magic number must have it; one without (text, mpeg, aac) must not be clearly another.
    const mismatch = magic ? !magic(bytes) : seen !== null && seen !== given.type
    if (mismatch) {
      throw badValue(
        `file: given as ${given.type} but its bytes are ${seen ?? 'not those of that type'}; upload it with its real Content-Type`,
      )
    }
    if (given.type === 'text/plain' && bytes.subarray(0, 8192).includes(0)) {
      throw badValue('file: given as text/plain but its bytes are binary (it holds NUL bytes)')
    }
    checked = given
  }
  if (bytes.byteLength > KIND_LIMITS[checked.kind]) throw overLimit(checked.kind, bytes.byteLength)
  return checked
}
