// Meta's inbound messages: every `messages[]` item of every `messages` change of a notification,
// with the customer's name from the change's `contacts[]`, normalised per type (the raw item is
// kept besides). Parsed only after the notification's signature was verified (webhook.ts).
//
// Customers by business-scoped user id (issue 32): since 2026 an item names its sender by `from` (the
// phone, omitted for a user who hides it behind a username), `from_user_id` (the user id) or both, and
// `contacts[]` carries `wa_id` and/or `user_id` with the profile. A `system` item of type
// `user_changed_number` or `user_changed_user_id` is no message: it says the customer's ids changed
// (`from` / `previous_user_id` before, `wa_id` / `user_id` after) and becomes an IdentityChange.

import { isObject } from '../http'
import type { ConsentSignal, IdentityChange, InboundMessage, InboundType } from '../provider'
import { userIdOf } from '../../lib/user-id'

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null)
const number = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null)
const object = (value: unknown): Record<string, unknown> => (isObject(value) ? value : {})

const MEDIA = ['image', 'document', 'audio', 'video', 'sticker'] as const

/** Meta's `timestamp` (seconds since the epoch, as a string), or null when it is not one. */
function sentAtOf(value: unknown): Date | null {
  const seconds = typeof value === 'string' && /^\d{1,12}$/.test(value) ? Number(value) : null
  return seconds === null ? null : new Date(seconds * 1000)
}

/** The type, normalised content and shown text of one item. */
function contentOf(item: Record<string, unknown>): { type: InboundType; text: string | null; content: Record<string, unknown> } {
  const type = item.type
  if (type === 'text') {
    const body = text(object(item.text).body)
    return { type, text: body, content: { body } }
  }
  if ((MEDIA as readonly unknown[]).includes(type)) {
    const media = object(item[type as string])
    const caption = text(media.caption)
    return {
      type: type as InboundType,
      text: caption,
      content: {
        media_id: text(media.id),
        media_url: text(media.url),
        mime_type: text(media.mime_type),
        caption,
        filename: text(media.filename),
      },
    }
  }
  if (type === 'location') {
    const at = object(item.location)
    const name = text(at.name)
    return {
      type,
      text: name ?? text(at.address),
      content: { latitude: number(at.latitude), longitude: number(at.longitude), name, address: text(at.address) },
    }
  }
  if (type === 'contacts') {
    const cards = (Array.isArray(item.contacts) ? item.contacts : []).map((card) => {
      const c = object(card)
      const phones = (Array.isArray(c.phones) ? c.phones : []).map((p) => text(object(p).phone)).filter((p) => p !== null)
      return { name: text(object(c.name).formatted_name) ?? text(object(c.name).first_name), phones }
    })
    return {
      type,
      text:
        cards
          .map((c) => c.name)
          .filter(Boolean)
          .join(', ') || null,
      content: { contacts: cards },
    }
  }
  if (type === 'interactive') {
    const interactive = object(item.interactive)
    const kind = interactive.type === 'list_reply' ? 'list_reply' : interactive.type === 'button_reply' ? 'button_reply' : null
    const reply = kind ? object(interactive[kind]) : {}
    return {
      type,
      text: text(reply.title),
      content: { kind: kind ?? text(interactive.type), id: text(reply.id), title: text(reply.title), description: text(reply.description) },
    }
  }
  if (type === 'button') {
    const button = object(item.button)
    return { type, text: text(button.text), content: { payload: text(button.payload), text: text(button.text) } }
  }
  if (type === 'reaction') {
    const reaction = object(item.reaction)
    // An empty emoji removes a reaction.
    const emoji = typeof reaction.emoji === 'string' ? reaction.emoji : null
    return { type, text: emoji || null, content: { emoji, message_id: text(reaction.message_id) } }
  }
  return { type: 'unsupported', text: null, content: { type: text(type) } }
}

/** The inbound messages of one `messages` change's value, in the order Meta wrote them (items without an id or a sender are skipped). */
export function inboundOf(value: Record<string, unknown>): InboundMessage[] {
  if (!Array.isArray(value.messages)) return []
  // A contact names the customer by wa_id, user_id or both: each finds its name, and a wa_id its user id.
  const names = new Map<string, string>()
  const userIds = new Map<string, string>()
  for (const contact of Array.isArray(value.contacts) ? value.contacts : []) {
    const c = object(contact)
    const name = text(object(c.profile).name)
    const waId = text(c.wa_id)?.trim()
    const userId = userIdOf(c.user_id)
    if (waId && name) names.set(waId, name)
    if (userId && name) names.set(userId, name)
    if (waId && userId) userIds.set(waId, userId)
  }
  const phoneNumberId = text(object(value.metadata).phone_number_id)
  const out: InboundMessage[] = []
  for (const item of value.messages) {
    if (!isObject(item) || item.type === 'system') continue
    const id = text(item.id)?.trim()
    const from = text(item.from)?.trim() ?? ''
    const userId = userIdOf(item.from_user_id) ?? userIds.get(from) ?? null
    if (!id || (!from && !userId)) continue
    out.push({
      id,
      from,
      userId,
      name: names.get(from) ?? (userId ? names.get(userId) : undefined) ?? null,
      to: { identity: phoneNumberId, number: null },
      sentAt: sentAtOf(item.timestamp),
      ...contentOf(item),
      raw: item,
      // A reply quoting one of the business's messages (swiped, or a template's quick-reply button).
      replyTo: text(object(item.context).id),
    })
  }
  return out
}

/** The identity changes of one `messages` change's value: its `system` items of a changed number or user id. */
export function identityChangesOf(value: Record<string, unknown>): IdentityChange[] {
  const phoneNumberId = text(object(value.metadata).phone_number_id)
  const out: IdentityChange[] = []
  for (const item of Array.isArray(value.messages) ? value.messages : []) {
    if (!isObject(item) || item.type !== 'system') continue
    const system = object(item.system)
    const from = text(item.from)?.trim() ?? null
    const previousUserId = userIdOf(system.previous_user_id) ?? userIdOf(item.from_user_id)
    const userId = userIdOf(system.user_id)
    if (system.type === 'user_changed_number') {
      const phone = text(system.wa_id)?.trim() ?? null
      if (!from || !phone) continue
      out.push({
        to: { identity: phoneNumberId, number: null },
        previous: { phone: from, userId: previousUserId },
        current: { phone, userId },
      })
    } else if (system.type === 'user_changed_user_id') {
      if (!previousUserId || !userId) continue
      out.push({
        to: { identity: phoneNumberId, number: null },
        previous: { phone: from, userId: previousUserId },
        current: { phone: from, userId },
      })
    }
  }
  return out
}

/**
 * The consent signals of one `user_preferences` change's value: a user stopped (`stop`) or resumed
 * (`resume`) marketing messages from the number in WhatsApp's settings; other categories are ignored.
 */
export function consentOf(value: Record<string, unknown>): ConsentSignal[] {
  const phoneNumberId = text(object(value.metadata).phone_number_id)
  const out: ConsentSignal[] = []
  for (const item of Array.isArray(value.user_preferences) ? value.user_preferences : []) {
    const preference = object(item)
    const from = text(preference.wa_id)?.trim() ?? ''
    const userId = userIdOf(preference.user_id)
    if ((!from && !userId) || preference.category !== 'marketing_messages') continue
    if (preference.value !== 'stop' && preference.value !== 'resume') continue
    const seconds = typeof preference.timestamp === 'number' ? preference.timestamp : Number(text(preference.timestamp) ?? NaN)
    out.push({
      from,
      userId,
      to: { identity: phoneNumberId, number: null },
      optedOut: preference.value === 'stop',
      detail: `user_preferences=${preference.value}`,
      at: Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000) : null,
    })
  }
  return out
}
