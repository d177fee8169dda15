import type { Clock } from '../../lib/clock'
// Sending through Meta's WhatsApp Cloud API: one JSON POST to {META_API_BASE}/{phone number id}/messages
// per message, with the access token as bearer, plain fetch. The answer's messages[0].id (a `wamid.…`)
// becomes the message's SID. A refusal (Meta's error object: its `code` becomes error_code), a
// timeout, a network error or an answer without a message id comes back as `{ ok: false }`; a
// throttling answer (130429, 131056, 80007, any HTTP 429) carries `throttle`, with its Retry-After.
// Nothing here throws, and no message ever carries the token.

import { errorCodeOf, failure, isObject, post, THROTTLING_CODES, throttleOf } from '../http'
import {
  RICH_KINDS,
  type HandoffResult,
  type MediaStore,
  type OutgoingMessage,
  type Provider,
  type ReadAnswer,
  type RichContent,
  type Throttle,
} from '../provider'
import { metaSecrets, type MetaSettings } from './settings'
import { graphMediaId, openMetaMedia } from './media'
import { isUserId } from '../../lib/user-id'

// A wamid is base64 behind "wamid."; a partner's id may look otherwise. Anything printable, no spaces.
const MESSAGE_ID = /^[\x21-\x7e]{1,256}$/
// The image types WhatsApp shows as images; any other media goes as a document (a file with a name).
const IMAGE = /\.(jpe?g|png)$/i

/**
 * The Cloud API's request body for one message. `to` is E.164 without the `+`; a customer known only by a
 * business-scoped user id (issue 32) is named by `recipient` instead, without `to`.
 */
export function metaMessage(message: OutgoingMessage): Record<string, unknown> {
  const base = {
    messaging_product: 'whatsapp',
    ...(isUserId(message.to) ? { recipient: message.to } : { to: message.to.replace(/^\+/, '') }),
    // A reply quoting the message it answers (issue 32): Meta's contextual reply.
    ...(message.replyTo ? { context: { message_id: message.replyTo } } : {}),
  }
  if (message.template) {
    const { ref, language, variables } = message.template
    const template: Record<string, unknown> = { name: ref, language: { code: language } }
    // A WhatsApp template (issue 30): its components were built when it was charged, and go as they are.
    if (message.template.components) {
      if (message.template.components.length > 0) template.components = message.template.components
      return { ...base, type: 'template', template }
    }
    const components: Record<string, unknown>[] = []
    const header = message.content?.type === 'template' ? message.content.header : null
    if (header) {
      const { type, ...media } = header
      components.push({ type: 'header', parameters: [{ type, [type]: media }] })
    }
    if (variables.length > 0) components.push({ type: 'body', parameters: variables.map((text) => ({ type: 'text', text })) })
    if (components.length > 0) template.components = components
    return { ...base, type: 'template', template }
  }
  if (message.content) return { ...base, ...richMessage(message.content) }
  if (!message.mediaUrl) return { ...base, type: 'text', text: { body: message.body } }
  const path = pathOf(message.mediaUrl)
  if (IMAGE.test(path)) return { ...base, type: 'image', image: { link: message.mediaUrl, caption: message.body } }
  const filename = fileNameOf(path)
  return { ...base, type: 'document', document: { link: message.mediaUrl, caption: message.body, ...(filename ? { filename } : {}) } }
}

/** The Cloud API's fields of rich content: `type` and the object named after it. */
function richMessage(content: RichContent): Record<string, unknown> {
  switch (content.type) {
    case 'button':
      return {
        type: 'interactive',
        interactive: {
          type: 'button',
          body: { text: content.body },
          action: { buttons: content.buttons.map((reply) => ({ type: 'reply', reply })) },
        },
      }
    case 'list':
      return {
        type: 'interactive',
        interactive: { type: 'list', body: { text: content.body }, action: { button: content.button, sections: content.sections } },
      }
    case 'template':
      // Only with a template (metaMessage); never stored alone.
      throw new Error('template header without a template')
    default: {
      // A file uploaded here goes by the Graph media id it was uploaded as (resolved before: createMeta's send).
      const { type, media_id: _ours, ...fields } = content as typeof content & { media_id?: string }
      return { type, [type]: fields }
    }
  }
}

/** The id of a file uploaded here that the message sends (a media object's `media_id`, or its template header's), if any. */
function uploadedFileOf(content: RichContent | null | undefined): string | null {
  if (!content) return null
  if (content.type === 'template') return content.header.media_id ?? null
  return 'media_id' in content && content.media_id ? content.media_id : null
}

/**
 * The message with its uploaded file named by its Graph media id (`id`) where it had our `media_id`: in its
 * media object, or in its template header, both the stored content and a WhatsApp template's built components.
 */
function withGraphId(message: OutgoingMessage, id: string): OutgoingMessage {
  const content = message.content!
  if (content.type !== 'template') return { ...message, content: { ...content, id } as unknown as RichContent }
  const { media_id: _ours, ...header } = content.header
  const graphHeader = { ...header, id } as unknown as typeof content.header
  const next = { ...message, content: { type: 'template', header: graphHeader } } as OutgoingMessage
  const components = message.template?.components
  if (!message.template || !components) return next
  // A WhatsApp template's header parameter (templates/fill.ts): `{type, [type]: {media_id, filename?}}`.
  const withId = (p: Record<string, any>) => {
    if (typeof p.type !== 'string' || p.type === 'text') return p
    const { media_id: _id, ...media } = (p[p.type] ?? {}) as Record<string, unknown>
    return { ...p, [p.type]: { ...media, id } }
  }
  return {
    ...next,
    template: {
      ...message.template,
      components: components.map((c) =>
        c.type === 'header' && Array.isArray(c.parameters) ? { ...c, parameters: (c.parameters as Record<string, any>[]).map(withId) } : c,
      ),
    },
  } as OutgoingMessage
}

/** Meta's error object of an answer that is not 2xx: its code and the text that says most. */
function metaError(status: number, answer: Record<string, any> | null): { code: number | null; text: string } {
  // {"error": {"message": "(#131030) Recipient phone number not in allowed list", "type": "OAuthException", "code": 131030, ...}}
  const error = isObject(answer?.error) ? answer.error : {}
  const details = isObject(error.error_data) ? error.error_data.details : undefined
  const text = [error.message, details, `HTTP ${status}`].find((v): v is string => typeof v === 'string' && v.trim() !== '')!
  return { code: typeof error.code === 'number' ? errorCodeOf(error.code) : null, text }
}

/** What Meta sends: every rich kind the Cloud API has. */
export const META_RICH = new Set(RICH_KINDS)

function pathOf(url: string): string {
  try {
    return new URL(url).pathname
  } catch {
    return ''
  }
}

/** The last segment of the URL's path, decoded: the name the recipient sees for a document. */
function fileNameOf(path: string): string {
  const last = path.slice(path.lastIndexOf('/') + 1)
  try {
    return decodeURIComponent(last)
  } catch {
    return last
  }
}

export function createMeta(settings: MetaSettings, context: { timeoutMs: number; clock: Clock; media?: MediaStore }): Provider {
  const { accessToken, phoneNumberId, apiBase } = settings
  const { timeoutMs, clock } = context
  const endpoint = `${apiBase}/${encodeURIComponent(phoneNumberId)}/messages`
  const fail = (errorCode: number | null, errorMessage: string, throttle: Throttle | null = null) =>
    failure(metaSecrets(settings), errorCode, errorMessage, throttle)

  return {
    name: 'meta',
    // WhatsApp's 24-hour window: Meta refuses a free-form message outside it (131047).
    enforcesWindow: true,
    // A customer known only by a business-scoped user id is sent to by it (issue 32).
    userIds: true,
    rich: META_RICH,
    openMedia: (ref, signal) => openMetaMedia(settings, ref, signal, { timeoutMs, clock }),
    // Read receipts and the typing indicator (issue 32): the same endpoint, `status: read`.
    async markRead({ messageId, typing }): Promise<ReadAnswer> {
      const refused = (code: number | null, detail: string): ReadAnswer => ({
        ok: false,
        code,
        detail: fail(code, detail).errorMessage,
      })
      try {
        const exchange = await post(endpoint, {
          headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({
            messaging_product: 'whatsapp',
            status: 'read',
            message_id: messageId,
            ...(typing ? { typing_indicator: { type: 'text' } } : {}),
          }),
          timeoutMs,
          clock,
        })
        if (!exchange.ok) {
          return exchange.reason === 'timeout'
            ? refused(null, `Meta did not answer within ${timeoutMs} ms`)
            : refused(null, `could not reach Meta${exchange.hint}`)
        }
        if (exchange.status < 200 || exchange.status > 299) {
          const { code, text } = metaError(exchange.status, exchange.answer)
          return refused(code, text)
        }
        return exchange.answer?.success === true ? { ok: true } : refused(null, `Meta answered HTTP ${exchange.status} without success`)
      } catch {
        return refused(null, 'Meta request failed')
      }
    },
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      try {
        // A file uploaded here (`media_id`, issue 32): uploaded to Graph once for this number, sent by its Graph id.
        const uploaded = uploadedFileOf(message.content)
        if (uploaded) {
          if (!context.media) return fail(null, 'this sender cannot reach uploaded media')
          const graph = await graphMediaId(settings, context.media, uploaded, { timeoutMs, clock })
          if (!graph.ok) {
            const throttle =
              graph.status === null
                ? null
                : throttleOf(THROTTLING_CODES.meta, graph.status, graph.code, new Headers(), clock.now().getTime())
            return fail(graph.code, graph.text, throttle)
          }
          message = withGraphId(message, graph.id)
        }
        const exchange = await post(endpoint, {
          headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify(metaMessage(message)),
          timeoutMs,
          clock,
        })
        if (!exchange.ok) {
          return exchange.reason === 'timeout'
            ? fail(null, `Meta did not answer within ${timeoutMs} ms`)
            : fail(null, `could not reach Meta${exchange.hint}`)
        }
        const { status, answer, headers } = exchange
        if (status < 200 || status > 299) {
          const { code, text } = metaError(status, answer)
          return fail(code, text, throttleOf(THROTTLING_CODES.meta, status, code, headers, clock.now().getTime()))
        }
        const first = Array.isArray(answer?.messages) ? answer.messages[0] : undefined
        const id = isObject(first) ? first.id : undefined
        if (typeof id !== 'string' || !MESSAGE_ID.test(id)) return fail(null, `Meta answered HTTP ${status} without a message id`)
        return { ok: true, sid: id }
      } catch {
        return fail(null, 'Meta request failed')
      }
    },
  }
}
