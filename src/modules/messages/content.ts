// What a message carries: a free-form `body` (with optional media), rich content (rich.ts), or, as an
// extension of the spec, an account template (`template_id`) filled with `variables` (rendered by templates/render.ts). A
// template message records its rendered text as `body` (for lists and the dashboard) and, when the
// template is bound to an approved template of the provider in use, what the provider was asked for
// (`provider_template`), so a recovered hand-off sends the same.

import { badShape } from '../../http/errors'
import type { OutgoingMessage, RichContent, StoredTemplate } from '../../providers/provider'
import { requireRichShape, type RichFields } from './rich'

/** The fields of a send or of one bulk entry that say what it carries. */
type ContentFields = RichFields

/**
 * The shape rules (400): exactly one of `body` and `template_id` for a text or template message;
 * `variables` only with `template_id`; no `media_url` with a template (an approved template brings its
 * own media: `header` names it); a rich `type` with its object only (rich.ts).
 * `at`: the entry's path in a bulk (`messages[3].`), empty for a send.
 */
export function requireContentShape(input: ContentFields, at = ''): void {
  requireRichShape(input, at)
  if (input.type !== undefined && input.type !== 'text') return
  if (input.body !== undefined && input.template_id !== undefined) throw badShape(`${at}body: give either body or template_id, not both`)
  if (input.body === undefined && input.template_id === undefined) throw badShape(`${at}body: is required (or template_id)`)
  if (input.variables !== undefined && input.template_id === undefined) throw badShape(`${at}variables: only with template_id`)
  if (input.media_url !== undefined && input.template_id !== undefined) throw badShape(`${at}media_url: not with template_id`)
  if (input.type === 'text' && input.template_id !== undefined) throw badShape(`${at}template_id: not with type "text"`)
}

/**
 * A recorded message as its provider gets it: the approved template it was bound to (with its header
 * media), its rich content, or its text. Built from the row's own columns, so a recovered hand-off
 * sends what the first one did.
 */
export function outgoingOf(
  m: {
    id: number
    phone: string
    body: string
    media_url: string | null
    provider_template: StoredTemplate | null
    content?: RichContent | null
    /** The provider's id of the message it answers (messages.reply_to). */
    reply_to?: string | null
  },
  provider: string,
): OutgoingMessage {
  const t = m.provider_template
  const content = m.content ?? null
  const replyTo = m.reply_to ?? null
  // Recorded for another provider (PROVIDER changed before a recovered hand-off): its rendered text.
  if (t && t.provider === provider) {
    // A sealed secret is opened before (redact.ts), never sent as it is.
    const { provider: _recorded, sealedSecret: _sealed, ...template } = t
    return { id: m.id, to: m.phone, body: m.body, template, content: content?.type === 'template' ? content : null, replyTo }
  }
  if (content && content.type !== 'template') return { id: m.id, to: m.phone, body: m.body, mediaUrl: null, content, replyTo }
  return { id: m.id, to: m.phone, body: m.body, mediaUrl: m.media_url, replyTo }
}
