// Request bodies of the API: JSON only, at most MAX_BODY_BYTES, valid UTF-8, a bounded structure, and
// the large ones read and parsed a few at a time.

import { ApiError, badShape } from './errors'
import { MAX_BODY_CHARS, MAX_BULK_MESSAGES, MAX_MEDIA_URL_CHARS, MAX_PHONE_CHARS } from '../lib/validate'
import { jsonBoundExceeded, type JsonBounds } from '../lib/bounds'
import type { RouteKind } from './routes'

// The largest valid request is a full bulk: 1000 entries, each with a 40-character `to`, a
// 4096-character `body` and a 2048-character `media_url`. Lengths count UTF-16 code units, and an
// encoder may write each as `\uXXXX` (6 bytes: Python's json.dumps does so for everything beyond
// ASCII), so a character is budgeted 6 bytes; each entry gets 128 more for its keys, quotes, comma and
// pretty-printing whitespace. 64 + 1000 * (128 + 6 * (40 + 4096 + 2048)) = 37,232,064 bytes (35.5 MiB).
const BYTES_PER_CHAR = 6
const ENTRY_SYNTAX_BYTES = 128
export const MAX_BODY_BYTES =
  64 + MAX_BULK_MESSAGES * (ENTRY_SYNTAX_BYTES + BYTES_PER_CHAR * (MAX_PHONE_CHARS + MAX_BODY_CHARS + MAX_MEDIA_URL_CHARS))

// A valid body nests 3 levels deep (bulk: object, array, entry) and holds about 4,000 values (1000
// entries of 3 fields). Both are checked on the bytes before JSON.parse, which would otherwise build
// millions of objects from 35 MB of "[{},{},...": about 1 GB.
export const MAX_JSON_DEPTH = 16
export const MAX_JSON_VALUES = 10_000

// Provider callbacks are read before anything authenticates them (their signature covers the body), so
// their bodies are capped far lower: 4 MiB. Meta batches up to 1000 changes in one notification and
// its Cloud API documents have put a payload at "up to 3MB" (the current ones state no maximum); a
// batch of 1000 status or message changes is well under 1 MB. Twilio posts a few dozen form fields
// (a few KB). A larger body is refused 413: by its declared length before a byte is read, a chunked
// one as soon as it passes the cap; at most 4 MiB of a body is ever held.
export const MAX_CALLBACK_BODY_BYTES = 4 * 1024 * 1024
// Meta's notifications nest about 11 levels (entry, changes, value, statuses, errors, error_data) and
// carry some 20-50 values per change: 1000 changes are at most about 50,000. JSON.parse builds at
// most 100,000 objects (some 10 MB) from a body within these bounds, whatever it holds.
export const CALLBACK_JSON_BOUNDS: JsonBounds = { depth: 32, values: 100_000 }
// Twilio posts a few dozen fields (an inbound message with 10 media has about 50).
export const MAX_CALLBACK_FORM_FIELDS = 1000

/** The largest body a route of `kind` reads. */
export const bodyLimitOf = (kind: RouteKind | undefined) => (kind === 'callback' ? MAX_CALLBACK_BODY_BYTES : MAX_BODY_BYTES)

// Reading and parsing a body takes about 3.5 times its size at once (the bytes, the decoded text, the
// objects): some 130 MB for the largest. Bodies over 1 MiB (a bulk of 1000 short messages is about
// 100 KB, so sends and ordinary bulks never wait) are read and parsed at most 2 at a time, and only
// once authenticated; the others wait holding nothing but their connection (Bun does not read a body
// nobody asks for). A wait is capped at 5 s, well inside Bun's 10 s idle timeout, after which the
// answer is 503 SERVICE_UNAVAILABLE rather than a reset connection.
//
// A body that holds a slot must arrive in time: 10 s from its turn, plus 1 s for each MiB received
// (as Apache's mod_reqtimeout extends its body timeout with a minimum rate). A sender that trickles
// bytes (which the idle timeout never sees) is cut off after about 10 s with 408 REQUEST_TIMEOUT and
// its connection closed, so two slow uploads cannot hold both slots for long; one that keeps up
// 1 MiB/s (8 Mbit/s) is never cut off, whatever the size, up to the largest valid body.
export const LARGE_BODY_BYTES = 1024 * 1024
export const LARGE_BODY_SLOTS = 2
export const LARGE_BODY_WAIT_MS = 5_000
export const LARGE_BODY_READ_MS = 10_000
/** Milliseconds the read deadline moves on for each MiB received. */
export const LARGE_BODY_READ_MS_PER_MIB = 1_000

class Slots {
  private free: number
  private readonly waiting: (() => void)[] = []
  constructor(count: number) {
    this.free = count
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--
    else {
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          clearTimeout(timer)
          resolve()
        }
        const timer = setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(wake), 1)
          // A slot frees as soon as one large body is read: a second is a fair guess for a retry.
          reject(
            new ApiError('SERVICE_UNAVAILABLE', 'too many large request bodies at once; retry shortly', 503, {}, { 'retry-after': '1' }),
          )
        }, LARGE_BODY_WAIT_MS)
        this.waiting.push(wake)
      })
    }
    try {
      return await task()
    } finally {
      const next = this.waiting.shift()
      if (next) next()
      else this.free++
    }
  }
}
const largeBodies = new Slots(LARGE_BODY_SLOTS)

export const tooLarge = (limit = MAX_BODY_BYTES) => new ApiError('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`)

// 408 says the server will not wait for the rest; `connection: close` ends what the client still sends.
const tooSlow = () =>
  new ApiError(
    'REQUEST_TIMEOUT',
    `the request body (over ${LARGE_BODY_BYTES} bytes) did not arrive in time: ${LARGE_BODY_READ_MS / 1000} s, plus ${LARGE_BODY_READ_MS_PER_MIB / 1000} s for each MiB received`,
    408,
    {},
    { connection: 'close' },
  )

const unsupported = (message: string) => new ApiError('UNSUPPORTED_MEDIA_TYPE', message)

/** The body is JSON in UTF-8 (`application/json`, optionally `; charset=utf-8`), or a 415. */
export function requireJsonContentType(header: string | null): void {
  if (header === null || header.trim() === '') throw unsupported('Content-Type must be application/json')
  const [type, ...params] = header.split(';')
  const mediaType = type!.trim().toLowerCase()
  if (mediaType !== 'application/json') {
    throw unsupported(`Content-Type ${mediaType.slice(0, 100)} is not accepted: request bodies are application/json`)
  }
  for (const param of params) {
    const [name = '', value = ''] = param.split('=')
    if (
      name.trim().toLowerCase() === 'charset' &&
      value
        .trim()
        .replace(/^"(.*)"$/, '$1')
        .toLowerCase() !== 'utf-8'
    ) {
      throw unsupported('application/json bodies must be UTF-8')
    }
  }
}

/** True when the request carries a body (a declared length above 0, or a stream of unknown length). */
export const hasBody = (request: Request) => request.body !== null && request.headers.get('content-length') !== '0'

/** Reads and parses a JSON body; an empty body is null. */
export async function readJson(request: Request): Promise<unknown> {
  if (request.headers.get('content-length') === null && !request.body) return null
  return parseJson(await readBody(request, MAX_BODY_BYTES))
}

/**
 * A body's bytes, at most `limit` (413 by its declared length before a byte is read, or as soon as it
 * passes it), bodies over LARGE_BODY_BYTES a few at a time and in time (see above). An upload
 * (modules/media) reads its file through it too.
 */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null) {
    const length = Number(declared)
    if (length > limit) throw tooLarge(limit)
    if (length <= LARGE_BODY_BYTES) return new Uint8Array(await request.arrayBuffer())
    return largeBodies.run(() => readRest(request.body!.getReader(), [], 0, limit))
  }
  if (!request.body) return new Uint8Array()
  // Unknown length (chunked): the first MiB without a slot, the rest (if any) in one.
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  const head = await readChunks(reader, chunks, Math.min(LARGE_BODY_BYTES, limit))
  if (head.done) return concat(chunks, head.total, limit)
  if (head.total > limit) {
    await reader.cancel().catch(() => {})
    throw tooLarge(limit)
  }
  return largeBodies.run(() => readRest(reader, chunks, head.total, limit))
}

type Reader = { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> }

/** In a large body's slot: the rest of the body, in time (see LARGE_BODY_READ_MS), at most `limit` bytes in all. */
async function readRest(reader: Reader, chunks: Uint8Array[], total: number, limit: number): Promise<Uint8Array> {
  const rest = await readChunks(reader, chunks, limit, total, performance.now())
  if (!rest.done) {
    await reader.cancel().catch(() => {})
    throw tooLarge(limit)
  }
  return concat(chunks, rest.total, limit)
}

/**
 * Reads until the stream ends or `total` passes `limit`. With `since` (when the body got its slot), a
 * read still waiting at the deadline ends the body: 408.
 */
async function readChunks(reader: Reader, chunks: Uint8Array[], limit: number, total = 0, since?: number) {
  let received = 0
  while (total <= limit) {
    const { done, value } =
      since === undefined
        ? await reader.read()
        : await readBefore(reader, since + LARGE_BODY_READ_MS + (received / LARGE_BODY_BYTES) * LARGE_BODY_READ_MS_PER_MIB)
    if (done || !value) return { done: true, total }
    chunks.push(value)
    total += value.byteLength
    received += value.byteLength
  }
  return { done: false, total }
}

/** The next chunk, or 408 when it has not come by `deadline` (a performance.now() time); the body is then dropped. */
async function readBefore(reader: Reader, deadline: number) {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(tooSlow()), Math.max(0, deadline - performance.now()))
  })
  try {
    return await Promise.race([reader.read(), late])
  } catch (error) {
    await reader.cancel().catch(() => {})
    throw error
  } finally {
    clearTimeout(timer)
  }
}

function concat(chunks: Uint8Array[], total: number, limit: number): Uint8Array {
  if (total > limit) throw tooLarge(limit)
  if (chunks.length === 1) return chunks[0]!
  const out = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk, at)
    at += chunk.byteLength
  }
  return out
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

export function parseJson(bytes: Uint8Array): unknown {
  if (bytes.byteLength > MAX_BODY_BYTES) throw tooLarge()
  if (bytes.byteLength === 0) return null
  const exceeded = jsonBoundExceeded(bytes, { depth: MAX_JSON_DEPTH, values: MAX_JSON_VALUES })
  if (exceeded) throw badShape(`body: ${exceeded}`)
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw badShape('body is not valid UTF-8')
  }
  try {
    return JSON.parse(text)
  } catch {
    throw badShape('body is not valid JSON')
  }
}
