// POST /api/v1/media (a file: its raw bytes with their Content-Type, or multipart/form-data with a
// `file` part), GET and DELETE /api/v1/media/{id}: files without public links (issue 32 §3), sent by `media_id`.

import { t } from 'elysia'
import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { rawBody } from '../../http/routes'
import { ApiError, badShape, ok } from '../../http/errors'
import { readBody } from '../../http/body'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { formatTimes } from '../../lib/time'
import { checkFile, declaredKind, KIND_LIMITS, MAX_FILE_BYTES, MULTIPART_ROOM, overLimit, type MediaKind } from './files'
import { deleteMedia, getMedia, storeMedia } from './service'
import { MEDIA_RETENTION_RULE, MediaItem, MediaParams } from './model'

type Upload = { bytes: Uint8Array; declared: string | null; filename: string | null }

/** A file name as given (its last path segment, no control characters, at most 240 characters), or null. */
function fileNameOf(given: string | null | undefined): string | null {
  const name = (given ?? '')
    .split(/[\\/]/)
    .pop()!
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .trim()
    .slice(0, 240)
  return name === '' ? null : name
}

/** The `filename` of a Content-Disposition header, if it names one. */
const dispositionName = (header: string | null) =>
  /filename\*=UTF-8''([^;]+)/i.exec(header ?? '')?.[1] !== undefined
    ? safeDecode(/filename\*=UTF-8''([^;]+)/i.exec(header!)![1]!)
    : (/filename="?([^";]+)"?/i.exec(header ?? '')?.[1] ?? null)

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** The body's bytes up to `limit`, a larger one refused 413 as over its kind's limit (`kind`), else over any. */
async function readUpTo(request: Request, limit: number, kind: MediaKind | null): Promise<Uint8Array> {
  try {
    return await readBody(request, limit)
  } catch (error) {
    if (error instanceof ApiError && error.code === 'PAYLOAD_TOO_LARGE') {
      const declared = request.headers.get('content-length')
      throw overLimit(kind ?? 'document', kind && declared !== null ? Number(declared) : null)
    }
    throw error
  }
}

/** The uploaded file of a request: a raw body, or the `file` part of a multipart body. */
async function readUpload(request: Request): Promise<Upload> {
  const contentType = request.headers.get('content-type')
  if (contentType?.toLowerCase().startsWith('multipart/form-data')) {
    const bytes = await readUpTo(request, MAX_FILE_BYTES + MULTIPART_ROOM, null)
    let form: Awaited<ReturnType<Response['formData']>>
    try {
      form = await new Response(bytes, { headers: { 'content-type': contentType } }).formData()
    } catch {
      throw badShape('body: not a valid multipart/form-data body (with its boundary)')
    }
    for (const name of form.keys()) {
      // Meta's upload fields are taken too: `type` (the file's type) and `messaging_product`.
      if (!['file', 'type', 'messaging_product'].includes(name)) throw badShape(`${name.slice(0, 60)}: unknown field`)
    }
    const file = form.get('file')
    if (!(file instanceof Blob)) throw badShape('file: is required (a multipart part named "file" holding the file)')
    const type = form.get('type')
    const declared = typeof type === 'string' && type.trim() !== '' ? type : file.type || null
    declaredKind(declared)
    return { bytes: new Uint8Array(await file.arrayBuffer()), declared, filename: fileNameOf(file instanceof File ? file.name : null) }
  }
  // A raw body: its Content-Type is the file's; a type WhatsApp does not send is refused before it is read.
  const given = declaredKind(contentType)
  const bytes = await readUpTo(request, given ? KIND_LIMITS[given.kind] : MAX_FILE_BYTES, given?.kind ?? null)
  return { bytes, declared: contentType, filename: fileNameOf(dispositionName(request.headers.get('content-disposition'))) }
}

const UPLOAD_RULES =
  'Extension (issue 32): a file to send by `media_id` instead of a public `link` (an image, video, audio, document or sticker ' +
  'object of a send or a bulk entry). Either the raw bytes as the body with their `Content-Type` (and, optionally, ' +
  '`Content-Disposition: attachment; filename="invoice-88.pdf"` for its name), or `multipart/form-data` with a part named ' +
  "`file` (its own Content-Type and file name; a `type` field may give the type, as Meta's upload takes it). The type must be " +
  "one WhatsApp sends, and is checked by the file's first bytes (its magic number): a file given as one type whose bytes are " +
  'another is 422 `VALIDATION_ERROR` naming both; with no type (or `application/octet-stream`) the bytes decide, else 415. ' +
  "The type decides the kind and WhatsApp's size limit: image (image/jpeg, image/png) 5 MiB, video (video/mp4, video/3gpp) 16 MiB, " +
  'audio (audio/aac, audio/amr, audio/mpeg, audio/mp4, audio/ogg) 16 MiB, document (application/pdf, text/plain, Word, Excel, ' +
  'PowerPoint) 100 MiB, sticker (image/webp) 500 KiB; a larger file is 413 `PAYLOAD_TOO_LARGE` (by its Content-Length before ' +
  "it is read). A type WhatsApp does not send is 415 `UNSUPPORTED_MEDIA_TYPE`. Answer 201 with the file's `id` (opaque), its " +
  `\`type\`, \`kind\` and \`size\`. ${MEDIA_RETENTION_RULE} Nothing is charged.`

/** The documented request bodies: any WhatsApp media type raw, or multipart. */
const UPLOAD_BODY: any = {
  required: true,
  content: {
    'application/pdf': { schema: { type: 'string', description: "The file's bytes, with its own Content-Type" } },
    'image/jpeg': { schema: { type: 'string', description: "The file's bytes" } },
    'multipart/form-data': {
      schema: {
        type: 'object',
        required: ['file'],
        properties: {
          file: { type: 'string', description: 'The file, with its Content-Type and file name' },
          type: { type: 'string', description: "The file's type, when the part's own says nothing", examples: ['application/pdf'] },
        },
      },
    },
  },
}

export const mediaApi = (deps: Deps) =>
  apiRoutes()
    .post(
      '/media',
      async ({ body, principal, set }) => {
        const upload = body as Upload
        const checked = checkFile(upload.declared, upload.bytes)
        const stored = await storeMedia(deps.sql, deps.clock, principal.accountId, { ...upload, ...checked })
        set.status = 201
        return ok(formatTimes(stored, deps.config.timezone))
      },
      {
        parse: ({ request }) => readUpload(request),
        response: { 201: envelopeOf(MediaItem), ...errorsOf(400, 401, 408, 413, 415, 422) },
        detail: {
          ...rawBody(MAX_FILE_BYTES + MULTIPART_ROOM),
          tags: ['Media'],
          summary: 'Upload a file to send without a public link (extension)',
          description: UPLOAD_RULES,
          requestBody: UPLOAD_BODY,
        },
      },
    )
    .get(
      '/media/:id',
      async ({ params, principal }) => {
        const found = await getMedia(deps.sql, principal.accountId, params.id)
        if (!found) throw new ApiError('NOT_FOUND', `media ${params.id.slice(0, 40)} not found`)
        return ok(formatTimes(found, deps.config.timezone))
      },
      {
        params: MediaParams,
        response: { 200: envelopeOf(MediaItem), ...errorsOf(401, 404) },
        detail: {
          tags: ['Media'],
          summary: 'An uploaded file (extension)',
          description: `The account's uploaded file, as its upload answered, with when it was last sent. Another account's file, or one deleted by retention, is 404 \`NOT_FOUND\`. ${MEDIA_RETENTION_RULE}`,
        },
      },
    )
    .delete(
      '/media/:id',
      async ({ params, principal, set }) => {
        const result = await deleteMedia(deps.sql, principal.accountId, params.id)
        if (result === 'not_found') throw new ApiError('NOT_FOUND', `media ${params.id.slice(0, 40)} not found`)
        if (result === 'queued') {
          throw new ApiError(
            'CONFLICT',
            `media ${params.id}: a queued message, or a campaign not yet sent or cancelled, still sends it; delete it once that is done`,
          )
        }
        set.status = 204
        return new Response(null, { status: 204 })
      },
      {
        params: MediaParams,
        response: { 204: t.Void({ description: 'Deleted: no body' }), ...errorsOf(401, 404, 409) },
        detail: {
          tags: ['Media'],
          summary: 'Delete an uploaded file (extension)',
          description:
            "Deletes the account's file now, before its retention would: its bytes, and the ids providers kept of it (a " +
            'Meta upload stays at Meta until Meta drops it, 30 days after the upload). 204 with no body. The id is 404 ' +
            "`NOT_FOUND` from then on, here and as a send's `media_id`; a message already sent with it keeps its record. " +
            "Another account's file, an unknown id, or one deleted already (by this call or by retention) is 404 `NOT_FOUND`: " +
            'repeating the call changes nothing, and its 404 says the file is gone. 409 `CONFLICT` while a queued message still ' +
            'sends it (delete it after that message is handed off).',
        },
      },
    )
