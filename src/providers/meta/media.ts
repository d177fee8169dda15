// An inbound medium from Meta's WhatsApp Cloud API: GET {META_API_BASE}/{media-id} with the number's
// access token answers the media node ({url, mime_type, sha256, file_size, id}); its `url` (valid for
// 5 minutes) is then downloaded with the same bearer token. Media ids of webhooks expire after 7 days.

import { errorCodeOf, get, isObject, openMediaUrl, post, providerText, retryableStatus, THROTTLING_CODES, type Deadline } from '../http'
import type { MediaOpened, MediaRef, MediaStore } from '../provider'
import { metaSecrets, type MetaSettings } from './settings'

const MEDIA_ID = /^[\w.-]{1,200}$/

export async function openMetaMedia(settings: MetaSettings, ref: MediaRef, signal: AbortSignal, deadline: Deadline): Promise<MediaOpened> {
  const { accessToken, apiBase } = settings
  if (!accessToken) return { ok: false, retry: false, reason: 'no Meta access token for the number the message reached' }
  if (!ref.id || !MEDIA_ID.test(ref.id)) return { ok: false, retry: false, reason: 'Meta gave no usable media id' }
  const authorization = { authorization: `Bearer ${accessToken}` }
  const node = await get(`${apiBase}/${encodeURIComponent(ref.id)}`, {
    headers: { ...authorization, accept: 'application/json' },
    ...deadline,
  })
  if (!node.ok) {
    return {
      ok: false,
      retry: true,
      reason: node.reason === 'timeout' ? 'Meta did not answer the media lookup in time' : `could not reach Meta${node.hint}`,
    }
  }
  const answer = node.answer ?? {}
  if (node.status < 200 || node.status > 299) {
    // {"error": {"message": "...", "code": 100, ...}}: an expired id is a 4xx; a throttle (429, 130429, 80007) may pass.
    const error = isObject(answer.error) ? answer.error : {}
    const code = errorCodeOf(error.code)
    const retry = retryableStatus(node.status) || (code !== null && THROTTLING_CODES.meta.has(code))
    // Meta's words may quote what it was given (the token among them): kept only through providerText.
    const text = typeof error.message === 'string' ? `: ${error.message}` : ''
    const reason = `Meta refused the media lookup (HTTP ${node.status}${code === null ? '' : `, code ${code}`})${text}`
    return { ok: false, retry, reason: providerText(reason, metaSecrets(settings))! }
  }
  if (typeof answer.url !== 'string') return { ok: false, retry: false, reason: 'Meta answered the media lookup without a url' }
  const opened = await openMediaUrl('Meta', answer.url, authorization, signal)
  if (!opened.ok) return opened
  const size = typeof answer.file_size === 'number' ? answer.file_size : Number(answer.file_size)
  return {
    ...opened,
    declaredType: typeof answer.mime_type === 'string' ? answer.mime_type : null,
    declaredSize: Number.isSafeInteger(size) && size >= 0 ? size : null,
    sha256: typeof answer.sha256 === 'string' && /^[0-9a-f]{64}$/i.test(answer.sha256) ? answer.sha256.toLowerCase() : null,
  }
}

/**
 * How long the service keeps a Graph media id of a file it uploaded: Meta keeps an uploaded medium 30
 * days; one day less, so that a message handed over near the end never names an id Meta just dropped.
 */
export const META_UPLOAD_LIFETIME_MS = 29 * 86_400_000

/** A file uploaded here (`media_id`) as Meta sends it: its Graph media id, or why not (the message's failure). */
export type GraphMedia = { ok: true; id: string } | { ok: false; code: number | null; text: string; status: number | null }

/**
 * The Graph media id of an uploaded file for this phone number: the one kept while valid, else the file
 * uploaded now (`POST /{phone-number-id}/media`, multipart: messaging_product, type, file; Meta answers
 * `{id}`) and kept for META_UPLOAD_LIFETIME_MS.
 */
export function graphMediaId(settings: MetaSettings, store: MediaStore, mediaId: string, deadline: Deadline): Promise<GraphMedia> {
  // One upload at a time per file and number in this process: a campaign's messages naming one file go
  // out side by side, and would each upload it the first time (another instance may still upload it once more).
  let flights = uploading.get(store)
  if (!flights) uploading.set(store, (flights = new Map()))
  const key = `${settings.phoneNumberId}\n${mediaId}`
  const flying = flights.get(key)
  if (flying) return flying
  const flight = uploadedId(settings, store, mediaId, deadline).finally(() => flights.delete(key))
  flights.set(key, flight)
  return flight
}

/** Uploads in flight, by store (each service's own) and number and file. */
const uploading = new WeakMap<MediaStore, Map<string, Promise<GraphMedia>>>()

async function uploadedId(settings: MetaSettings, store: MediaStore, mediaId: string, deadline: Deadline): Promise<GraphMedia> {
  const scope = `meta:${settings.phoneNumberId}`
  const kept = await store.kept(mediaId, scope)
  if (kept) return { ok: true, id: kept }
  const file = await store.file(mediaId)
  if (!file) return { ok: false, code: null, status: null, text: `media ${mediaId} is gone (deleted by RETENTION_MEDIA_DAYS)` }
  const form = new FormData()
  form.set('messaging_product', 'whatsapp')
  form.set('type', file.type)
  form.set('file', new Blob([new Uint8Array(file.bytes)], { type: file.type }), file.filename ?? mediaId)
  const exchange = await post(`${settings.apiBase}/${encodeURIComponent(settings.phoneNumberId)}/media`, {
    headers: { authorization: `Bearer ${settings.accessToken}`, accept: 'application/json' },
    body: form,
    ...deadline,
  })
  if (!exchange.ok) {
    const text = exchange.reason === 'timeout' ? 'Meta did not answer the media upload in time' : `could not reach Meta${exchange.hint}`
    return { ok: false, code: null, status: null, text }
  }
  const answer = exchange.answer ?? {}
  if (exchange.status < 200 || exchange.status > 299) {
    const error = isObject(answer.error) ? answer.error : {}
    const message = typeof error.message === 'string' ? `: ${error.message}` : ''
    return {
      ok: false,
      code: errorCodeOf(error.code),
      status: exchange.status,
      text: `Meta refused the media upload (HTTP ${exchange.status})${message}`,
    }
  }
  if (typeof answer.id !== 'string' || !MEDIA_ID.test(answer.id)) {
    return {
      ok: false,
      code: null,
      status: exchange.status,
      text: `Meta answered the media upload (HTTP ${exchange.status}) without a media id`,
    }
  }
  await store.keep(mediaId, scope, answer.id, META_UPLOAD_LIFETIME_MS)
  return { ok: true, id: answer.id }
}
