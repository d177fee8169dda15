// An inbound medium from Meta's WhatsApp Cloud API: GET {META_API_BASE}/{media-id} with the number's
// access token answers the media node ({url, mime_type, sha256, file_size, id}); its `url` (valid for
// 5 minutes) is then downloaded with the same bearer token. Media ids of webhooks expire after 7 days.

import { errorCodeOf, get, isObject, openMediaUrl, providerText, retryableStatus, THROTTLING_CODES, type Deadline } from '../http'
import type { MediaOpened, MediaRef } from '../provider'
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
