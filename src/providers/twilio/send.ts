import type { Clock } from '../../lib/clock'
// Sending through Twilio: one form-encoded POST to the Messages resource per message, plain fetch, no
// SDK. Every failure (error answer, redirect, answer without a SID, network error, timeout) comes back
// as `{ ok: false }` with Twilio's error code when it gave one; a throttling answer (HTTP 429, 20429,
// 63018) carries `throttle`, with its Retry-After. Nothing here throws, and no message ever carries
// the auth token.

import { errorCodeOf, failure, post, THROTTLING_CODES, throttleOf } from '../http'
import { isObject } from '../http'
import type { HandoffResult, MediaStore, OutgoingMessage, Provider, ReadAnswer, RichContent, RichKind, Throttle } from '../provider'
import type { Sql } from '../../db/client'
import { twilioBasic, twilioSecrets, type TwilioSettings } from './settings'
import { contentRequest, contentStore } from './content'
import { openTwilioMedia } from './media'

/** The path Twilio posts status reports to, under PUBLIC_BASE_URL. */
export const TWILIO_STATUS_PATH = '/provider/twilio/status'

const SID = /^[A-Z]{2}[0-9a-fA-F]{32}$/

/**
 * Where Twilio's typing indicator lives (Messaging API v2, public beta): messaging.twilio.com beside the
 * real API root; a test's fake (any other TWILIO_API_BASE) serves it at its own root.
 */
export const twilioMessagingBase = (apiBase: string): string =>
  apiBase === 'https://api.twilio.com' ? 'https://messaging.twilio.com' : apiBase

/** Why a Twilio send cannot quote a message: its Messages resource takes no reply context. */
export const TWILIO_QUOTE_PROBLEM =
  "reply_to: Twilio's Messages API cannot quote a message (it takes no reply context); send without reply_to, or through a Meta sender"

/** What Twilio sends: media through MediaUrl, locations as a geo: PersistentAction, buttons and lists as Content templates. */
const TWILIO_RICH = new Set<RichKind>(['image', 'video', 'audio', 'document', 'sticker', 'location', 'button', 'list'])

/** Twilio's own limits beyond WhatsApp's (a field and why), else null. */
export function twilioRichProblem(content: RichContent): string | null {
  if (content.type === 'document' && content.filename !== undefined) {
    return "document.filename: Twilio does not send a document's file name (the recipient sees the link's last path segment)"
  }
  if (content.type === 'document' && content.caption !== undefined) return 'document.caption: Twilio does not send captions on documents'
  if (content.type === 'button') {
    const long = content.buttons.findIndex((b) => b.id.length > 200)
    if (long >= 0) return `interactive.action.buttons[${long}].reply.id: at most 200 characters through Twilio (twilio/quick-reply)`
  }
  if (content.type === 'list') {
    for (const [n, section] of content.sections.entries()) {
      const missing = section.rows.findIndex((r) => r.description === undefined)
      if (missing >= 0) {
        return `interactive.action.sections[${n}].rows[${missing}].description: required through Twilio (twilio/list-picker items)`
      }
    }
  }
  return null
}

export function createTwilio(
  settings: TwilioSettings,
  context: { publicBaseUrl: string; timeoutMs: number; clock: Clock; sql?: Sql; media?: MediaStore },
): Provider {
  const { accountSid, from, apiBase, contentApiBase } = settings
  const { timeoutMs, clock } = context
  const endpoint = `${apiBase}/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Messages.json`
  const credentials = twilioBasic(settings)
  const secrets = twilioSecrets(settings)
  const statusCallback = `${context.publicBaseUrl}${TWILIO_STATUS_PATH}`
  const fail = (errorCode: number | null, errorMessage: string, throttle: Throttle | null = null) =>
    failure(secrets, errorCode, errorMessage, throttle)

  const contents = context.sql ? contentStore(context.sql, accountSid) : null
  const headersOf = (type: string) => ({ authorization: `Basic ${credentials}`, 'content-type': type, accept: 'application/json' })

  /**
   * The SID of the Content template of an interactive message's shape: kept, or created now. A
   * failure to create it is the message's failure (refunded), a throttle its throttle.
   */
  async function contentSid(shape: string, definition: Record<string, unknown>): Promise<string | HandoffResult> {
    const kept = await contents?.get(shape)
    if (kept) return kept
    const exchange = await post(`${contentApiBase}/v1/Content`, {
      headers: headersOf('application/json'),
      body: JSON.stringify(definition),
      timeoutMs,
      clock,
    })
    if (!exchange.ok) {
      return exchange.reason === 'timeout'
        ? fail(null, `Twilio's Content API did not answer within ${timeoutMs} ms`)
        : fail(null, `could not reach Twilio's Content API${exchange.hint}`)
    }
    const { status, answer } = exchange
    if (status < 200 || status > 299) {
      const message = typeof answer?.message === 'string' && answer.message.trim() ? answer.message : `HTTP ${status}`
      const code = typeof answer?.code === 'number' ? errorCodeOf(answer.code) : null
      return fail(
        code,
        `Twilio's Content API refused the template: ${message}`,
        throttleOf(THROTTLING_CODES.twilio, status, code, exchange.headers, clock.now().getTime()),
      )
    }
    const sid = isObject(answer) ? answer.sid : undefined
    if (typeof sid !== 'string' || !/^HX[0-9a-fA-F]{32}$/.test(sid))
      return fail(null, `Twilio's Content API answered HTTP ${status} without a Content SID`)
    return contents ? contents.put(shape, sid) : sid
  }

  /** The form fields of one message: a free-form body (and media), rich content, or a Content template with its variables. */
  async function formOf(message: OutgoingMessage): Promise<URLSearchParams | HandoffResult> {
    // A stored sender may send through a Messaging Service (MG…), which picks the number itself.
    const form = new URLSearchParams({ To: `whatsapp:${message.to}` })
    form.set(from.startsWith('MG') ? 'MessagingServiceSid' : 'From', from)
    const content = message.template ? null : (message.content ?? null)
    if (message.template) {
      form.set('ContentSid', message.template.ref)
      // A WhatsApp template (issue 30) carries its variables by key; a bound one by position.
      const variables = {
        ...(message.template.contentVariables ?? Object.fromEntries(message.template.variables.map((v, i) => [String(i + 1), v]))),
      }
      // A header media URL's variable filled by a file uploaded here (issue 32): the rest of its signed link, made now.
      const slot = message.template.mediaVariable
      const header = message.content?.type === 'template' ? message.content.header : null
      if (slot && header?.media_id !== undefined) {
        if (!context.media) return fail(null, 'this sender cannot reach uploaded media')
        const link = await context.media.link(header.media_id)
        if (!link.startsWith(slot.prefix)) {
          return fail(
            null,
            `the uploaded file's link is no longer under ${slot.prefix}, the template's media URL (PUBLIC_BASE_URL changed?)`,
          )
        }
        variables[slot.key] = link.slice(slot.prefix.length)
      }
      form.set('ContentVariables', JSON.stringify(variables))
    } else if (content?.type === 'button' || content?.type === 'list') {
      const request = contentRequest(content)
      const sid = await contentSid(request.shape, request.definition)
      if (typeof sid !== 'string') return sid
      form.set('ContentSid', sid)
      form.set('ContentVariables', JSON.stringify(request.variables))
    } else if (content?.type === 'location') {
      const label = content.address ?? content.name
      form.set('Body', content.name ?? content.address ?? `${content.latitude},${content.longitude}`)
      form.set('PersistentAction', `geo:${content.latitude},${content.longitude}${label ? `|${label}` : ''}`)
    } else if (content && content.type !== 'template' && content.type !== 'reaction') {
      if ('caption' in content && content.caption) form.set('Body', content.caption)
      // A file uploaded here (`media_id`, issue 32): Twilio fetches it by a signed link to this service that expires.
      if (content.media_id !== undefined && !context.media) return fail(null, 'this sender cannot reach uploaded media')
      form.set('MediaUrl', content.media_id !== undefined ? await context.media!.link(content.media_id) : content.link!)
    } else {
      form.set('Body', message.body)
      if (message.mediaUrl) form.set('MediaUrl', message.mediaUrl)
    }
    form.set('StatusCallback', statusCallback)
    return form
  }

  return {
    name: 'twilio',
    // WhatsApp's 24-hour window: Twilio refuses a free-form message outside it (63016).
    enforcesWindow: true,
    rich: TWILIO_RICH,
    richProblem: twilioRichProblem,
    openMedia: (ref, signal) => openTwilioMedia(settings, ref, signal),
    quoteProblem: TWILIO_QUOTE_PROBLEM,
    // Twilio's typing indicator (public beta) marks the message read too; it has no read receipt without it.
    async markRead({ messageId, typing }): Promise<ReadAnswer> {
      if (!typing) {
        return {
          ok: false,
          unsupported: true,
          detail: 'typing: Twilio marks a message read only with its typing indicator; send {"typing": true}',
        }
      }
      const refused = (code: number | null, detail: string): ReadAnswer => ({ ok: false, code, detail: fail(code, detail).errorMessage })
      try {
        const exchange = await post(`${twilioMessagingBase(settings.apiBase)}/v2/Indicators/Typing.json`, {
          headers: headersOf('application/x-www-form-urlencoded'),
          body: new URLSearchParams({ messageId, channel: 'whatsapp' }).toString(),
          timeoutMs,
          clock,
        })
        if (!exchange.ok) {
          return exchange.reason === 'timeout'
            ? refused(null, `Twilio did not answer within ${timeoutMs} ms`)
            : refused(null, `could not reach Twilio${exchange.hint}`)
        }
        const { status, answer } = exchange
        if (status < 200 || status > 299) {
          const message = typeof answer?.message === 'string' && answer.message.trim() ? answer.message : `HTTP ${status}`
          return refused(typeof answer?.code === 'number' ? errorCodeOf(answer.code) : null, message)
        }
        return answer?.success === true ? { ok: true } : refused(null, `Twilio answered HTTP ${status} without success`)
      } catch {
        return refused(null, 'Twilio request failed')
      }
    },
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      try {
        const form = await formOf(message)
        if (!(form instanceof URLSearchParams)) return form
        const exchange = await post(endpoint, {
          headers: headersOf('application/x-www-form-urlencoded'),
          body: form.toString(),
          timeoutMs,
          clock,
        })
        if (!exchange.ok) {
          return exchange.reason === 'timeout'
            ? fail(null, `Twilio did not answer within ${timeoutMs} ms`)
            : fail(null, `could not reach Twilio${exchange.hint}`)
        }
        const { status, answer, headers } = exchange
        if (status < 200 || status > 299) {
          // {"code": 20429, "message": "Too Many Requests", "more_info": "https://www.twilio.com/docs/errors/20429", "status": 429}
          const errorMessage = typeof answer?.message === 'string' && answer.message.trim() ? answer.message : `HTTP ${status}`
          const code = typeof answer?.code === 'number' ? errorCodeOf(answer.code) : null
          return fail(code, errorMessage, throttleOf(THROTTLING_CODES.twilio, status, code, headers, clock.now().getTime()))
        }
        const sid = answer?.sid
        if (typeof sid !== 'string' || !SID.test(sid)) return fail(null, `Twilio answered HTTP ${status} without a valid message SID`)
        return { ok: true, sid }
      } catch {
        return fail(null, 'Twilio request failed')
      }
    },
  }
}
