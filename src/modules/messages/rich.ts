// Rich messages (an extension of the spec's `body`/`media_url`): media by type, a location, reply
// buttons, a list, and a template's header media. The API takes them as the Cloud API names them
// (`type` plus one object named after it); this file turns a request's fields into the RichContent a
// message stores (messages.content) with the providers' limits checked (400 for a wrong shape, 422 for
// a value past a limit, naming the field), and renders the text a list shows of it (`body`).
//
// Limits, from Meta's Cloud API messages reference and Twilio's Content API (twilio/quick-reply,
// twilio/list-picker): reply buttons 1 to 3, id up to 256 characters, title up to 20, unique; lists:
// button text up to 20, 1 to 10 sections, 1 to 10 rows in all, row id up to 200 and unique, row title
// up to 24, description up to 72, section title up to 24 (required with more than one section);
// interactive body up to 1024; captions up to 1024; media links https. A provider may add its own
// (Provider.richProblem: Twilio's button ids up to 200, its list rows need a description).

import { badShape, badValue } from '../../http/errors'
import type { ListRow, MediaKind, MediaSource, Provider, ReplyButton, RichContent, RichKind } from '../../providers/provider'
import { MAX_MEDIA_URL_CHARS } from '../../lib/validate'

export const LIMITS = {
  buttons: 3,
  buttonId: 256,
  buttonTitle: 20,
  interactiveBody: 1024,
  listButton: 20,
  sections: 10,
  rows: 10,
  rowId: 200,
  rowTitle: 24,
  rowDescription: 72,
  sectionTitle: 24,
  caption: 1024,
  filename: 240,
  locationText: 1000,
  messageRef: 256,
} as const

// One emoji: a pictograph (with its modifiers and joiners), a flag, or a keycap; at most 32 UTF-16 units.
const EMOJI =
  /^(?:\p{Extended_Pictographic}|\p{Regional_Indicator}|[#*0-9]\uFE0F?\u20E3)[\p{Extended_Pictographic}\p{Emoji_Modifier}\p{Regional_Indicator}\uFE0F\u200D\u20E3]*$/u

/** A reaction's emoji: one emoji, or empty (removes the reaction). */
function emojiOf(value: string, field: string): string {
  const emoji = value.trim()
  if (emoji === '') return ''
  if (emoji.length > 32 || !EMOJI.test(emoji)) throw badValue(`${field}: must be one emoji, or empty to remove the reaction`)
  return emoji
}

/** The request's `type` values beyond the spec. */
export const MESSAGE_TYPES = ['text', 'image', 'video', 'audio', 'document', 'sticker', 'location', 'interactive', 'reaction'] as const
export type MessageType = (typeof MESSAGE_TYPES)[number]
const MEDIA_KINDS: MediaKind[] = ['image', 'video', 'audio', 'document', 'sticker']

type Media = { link?: string; media_id?: string; caption?: string; filename?: string }
type Interactive = {
  type: string
  body: { text: string }
  action: {
    buttons?: { type: string; reply: { id: string; title: string } }[]
    button?: string
    sections?: { title?: string; rows: { id: string; title: string; description?: string }[] }[]
  }
}
/** The fields of a send or of one bulk entry that carry rich content. */
export type RichFields = {
  type?: string
  image?: Media
  video?: Media
  audio?: Media
  document?: Media
  sticker?: Media
  location?: { latitude: number; longitude: number; name?: string; address?: string }
  interactive?: Interactive
  /** A reaction (issue 32): the message reacted to (an inbound id of the conversation, or a provider's message id) and the emoji. */
  reaction?: { message_id: string; emoji: string }
  /** The message this one answers, quoting it (issue 32): an inbound id of the conversation, or a provider's message id. */
  reply_to?: string
  /** A template's header: its media, or (a WhatsApp template's) its text parameter. */
  header?: string | { type: string; link?: string; media_id?: string; filename?: string }
  /** A WhatsApp template's button values. */
  buttons?: { index: number; value: string }[]
  body?: string
  media_url?: string
  template_id?: number
  variables?: Record<string, string>
}

// File extensions of each media kind, as WhatsApp takes them. A link whose name ends in one that
// belongs to another kind is refused (a .pdf sent as an image); a name without a known one is left to
// the provider (many links carry no extension).
const EXTENSIONS: Record<MediaKind, string[]> = {
  image: ['jpg', 'jpeg', 'png'],
  video: ['mp4', '3gp'],
  audio: ['aac', 'amr', 'mp3', 'm4a', 'ogg', 'opus'],
  document: ['pdf', 'txt', 'doc', 'docx', 'xls', 'xlsx', 'ppt', 'pptx', 'csv', 'zip'],
  sticker: ['webp'],
}
const KNOWN = new Set(Object.values(EXTENSIONS).flat())

/**
 * The shape rules (400) of a request's content fields: `type` (default text, or template with
 * `template_id`) takes the object named after it and no other content field; `header` only with
 * `template_id`. `at`: the entry's path in a bulk (`messages[3].`).
 */
export function requireRichShape(input: RichFields, at: string): void {
  const type = input.type ?? 'text'
  if (!(MESSAGE_TYPES as readonly string[]).includes(type)) {
    throw badShape(`${at}type: must be one of ${MESSAGE_TYPES.join(', ')} (got "${type}")`)
  }
  for (const kind of [...MEDIA_KINDS, 'location', 'interactive', 'reaction'] as const) {
    if (input[kind] !== undefined && kind !== type) throw badShape(`${at}${kind}: only with type "${kind}"`)
  }
  if (type !== 'text') {
    if (input[type as Exclude<MessageType, 'text'>] === undefined) throw badShape(`${at}${type}: is required with type "${type}"`)
    for (const field of ['body', 'media_url', 'template_id', 'variables'] as const) {
      if (input[field] !== undefined) throw badShape(`${at}${field}: not with type "${type}"`)
    }
  }
  if (type === 'reaction' && input.reply_to !== undefined)
    throw badShape(`${at}reply_to: not with type "reaction" (a reaction names its message)`)
  if (input.header !== undefined && input.template_id === undefined) throw badShape(`${at}header: only with template_id`)
  if (input.buttons !== undefined && input.template_id === undefined) throw badShape(`${at}buttons: only with template_id`)
  if (type === 'interactive') {
    const i = input.interactive!
    if (i.type === 'button') {
      if (i.action.buttons === undefined) throw badShape(`${at}interactive.action.buttons: is required with interactive.type "button"`)
      if (i.action.button !== undefined || i.action.sections !== undefined) {
        throw badShape(`${at}interactive.action: a button message has \`buttons\` only`)
      }
    } else if (i.type === 'list') {
      if (i.action.button === undefined) throw badShape(`${at}interactive.action.button: is required with interactive.type "list"`)
      if (i.action.sections === undefined) throw badShape(`${at}interactive.action.sections: is required with interactive.type "list"`)
      if (i.action.buttons !== undefined) throw badShape(`${at}interactive.action.buttons: only with interactive.type "button"`)
    } else {
      throw badShape(`${at}interactive.type: must be "button" or "list" (got "${i.type}")`)
    }
    for (const [n, b] of (i.action.buttons ?? []).entries()) {
      if (b.type !== 'reply') throw badShape(`${at}interactive.action.buttons[${n}].type: must be "reply"`)
    }
  }
  if (typeof input.header === 'object' && !['image', 'video', 'document'].includes(input.header.type)) {
    throw badShape(`${at}header.type: must be image, video or document (got "${input.header.type}")`)
  }
}

/** The rich content of a request whose shape is right (requireRichShape), its values checked (422); null for text and plain templates. */
export function richOf(input: RichFields, at: string): RichContent | null {
  const type = input.type ?? 'text'
  if (input.template_id !== undefined) {
    // A text header is a WhatsApp template's parameter (templates/fill.ts), not content.
    if (!input.header || typeof input.header === 'string') return null
    const h = input.header
    const kind = h.type as 'image' | 'video' | 'document'
    // A public link, or a file uploaded here (issue 32), checked against the account's files before charging (admission.ts).
    const source = mediaSource(h, `${at}header.`, kind)
    if (h.filename !== undefined && kind !== 'document') throw badShape(`${at}header.filename: only with header.type "document"`)
    const filename = h.filename === undefined ? undefined : fileName(h.filename, `${at}header.filename`)
    return { type: 'template', header: { type: kind, ...source, ...(filename ? { filename } : {}) } }
  }
  if (type === 'text') return null
  if (type === 'reaction') {
    const r = input.reaction!
    // Resolved to the provider's id of the message in the conversation before charging (admission.ts).
    const target = r.message_id.trim()
    if (target === '') throw badValue(`${at}reaction.message_id: must name the message reacted to`)
    if (target.length > LIMITS.messageRef) throw badValue(`${at}reaction.message_id: must be at most ${LIMITS.messageRef} characters`)
    return { type: 'reaction', message_id: target, emoji: emojiOf(r.emoji, `${at}reaction.emoji`) }
  }
  if ((MEDIA_KINDS as string[]).includes(type)) return mediaOf(type as MediaKind, input[type as MediaKind]!, `${at}${type}.`)
  if (type === 'location') {
    const l = input.location!
    const f = `${at}location.`
    if (!Number.isFinite(l.latitude) || l.latitude < -90 || l.latitude > 90) throw badValue(`${f}latitude: must be from -90 to 90`)
    if (!Number.isFinite(l.longitude) || l.longitude < -180 || l.longitude > 180) {
      throw badValue(`${f}longitude: must be from -180 to 180`)
    }
    const name = optional(l.name, `${f}name`, LIMITS.locationText)
    const address = optional(l.address, `${f}address`, LIMITS.locationText)
    return { type: 'location', latitude: l.latitude, longitude: l.longitude, ...(name ? { name } : {}), ...(address ? { address } : {}) }
  }
  const i = input.interactive!
  const f = `${at}interactive.`
  const body = text(i.body.text, `${f}body.text`, LIMITS.interactiveBody)
  if (i.type === 'button') {
    const given = i.action.buttons!
    if (given.length < 1 || given.length > LIMITS.buttons) {
      throw badValue(`${f}action.buttons: must hold 1 to ${LIMITS.buttons} buttons (got ${given.length})`)
    }
    const buttons: ReplyButton[] = given.map((b, n) => ({
      id: text(b.reply.id, `${f}action.buttons[${n}].reply.id`, LIMITS.buttonId),
      title: text(b.reply.title, `${f}action.buttons[${n}].reply.title`, LIMITS.buttonTitle),
    }))
    unique(
      buttons.map((b) => b.id),
      (n) => `${f}action.buttons[${n}].reply.id`,
    )
    unique(
      buttons.map((b) => b.title),
      (n) => `${f}action.buttons[${n}].reply.title`,
    )
    return { type: 'button', body, buttons }
  }
  const button = text(i.action.button!, `${f}action.button`, LIMITS.listButton)
  const given = i.action.sections!
  if (given.length < 1 || given.length > LIMITS.sections) {
    throw badValue(`${f}action.sections: must hold 1 to ${LIMITS.sections} sections (got ${given.length})`)
  }
  const total = given.reduce((sum, s) => sum + s.rows.length, 0)
  if (total < 1 || total > LIMITS.rows) throw badValue(`${f}action.sections: must hold 1 to ${LIMITS.rows} rows in all (got ${total})`)
  const sections = given.map((s, n) => {
    const g = `${f}action.sections[${n}].`
    if (s.rows.length === 0) throw badValue(`${g}rows: must hold at least 1 row`)
    const title = optional(s.title, `${g}title`, LIMITS.sectionTitle)
    if (!title && given.length > 1) throw badValue(`${g}title: is required when there is more than one section`)
    const rows: ListRow[] = s.rows.map((r, m) => {
      const description = optional(r.description, `${g}rows[${m}].description`, LIMITS.rowDescription)
      return {
        id: text(r.id, `${g}rows[${m}].id`, LIMITS.rowId),
        title: text(r.title, `${g}rows[${m}].title`, LIMITS.rowTitle),
        ...(description ? { description } : {}),
      }
    })
    return { ...(title ? { title } : {}), rows }
  })
  const paths = sections.flatMap((s, n) => s.rows.map((_, m) => `${f}action.sections[${n}].rows[${m}].id`))
  unique(
    sections.flatMap((s) => s.rows.map((r) => r.id)),
    (k) => paths[k]!,
  )
  return { type: 'list', body, button, sections }
}

/** The kind a provider must be able to send for this content. */
export const kindOf = (content: RichContent): RichKind => (content.type === 'template' ? 'template_header' : content.type)

/**
 * 422 before anything is charged when the sender's provider cannot send this content: its kind is not
 * one the provider declares, or a limit of its own refuses it.
 */
export function requireSupported(content: RichContent | null, provider: Provider, at: string): void {
  if (!content) return
  const kind = kindOf(content)
  if (!provider.rich?.has(kind)) {
    const field = kind === 'template_header' ? 'header' : content.type === 'button' || content.type === 'list' ? 'interactive.type' : 'type'
    const what = kind === 'template_header' ? 'template header media' : kind === 'button' ? 'reply buttons' : `${kind} messages`
    throw badValue(`${at}${field}: the sender's provider (${provider.name}) cannot send ${what}; nothing was charged`)
  }
  const problem = provider.richProblem?.(content)
  if (problem) throw badValue(`${at}${problem}; nothing was charged`)
}

/** What a list shows of a rich message (messages.body): its caption, body text, or a label of its kind. */
export function renderText(content: RichContent): string {
  switch (content.type) {
    case 'image':
    case 'video':
    case 'document':
      return content.caption ?? (content.type === 'document' && content.filename ? `[document] ${content.filename}` : `[${content.type}]`)
    case 'audio':
    case 'sticker':
      return `[${content.type}]`
    case 'location':
      return `[location] ${content.name ?? content.address ?? `${content.latitude},${content.longitude}`}`
    case 'button':
    case 'list':
      return content.body
    case 'template':
      return ''
    case 'reaction':
      return content.emoji ? `[reaction] ${content.emoji}` : '[reaction removed]'
  }
}

/** The `type` a message shows (GET /messages/{id}): its rich kind, else template or text. */
export function typeOf(content: RichContent | null, templateId: number | null): string {
  if (content && content.type !== 'template') return content.type === 'button' || content.type === 'list' ? 'interactive' : content.type
  return templateId !== null ? 'template' : 'text'
}

function mediaOf(kind: MediaKind, media: Media, f: string): RichContent {
  // A public link, or a file uploaded here (issue 32): its id is checked against the account's files before charging (admission.ts).
  const link = mediaSource(media, f, kind)
  const captioned = kind === 'image' || kind === 'video' || kind === 'document'
  if (media.caption !== undefined && !captioned) throw badShape(`${f}caption: WhatsApp shows no caption on ${kind} messages`)
  if (media.filename !== undefined && kind !== 'document') throw badShape(`${f}filename: only on documents`)
  const caption = optional(media.caption, `${f}caption`, LIMITS.caption)
  if (kind === 'audio' || kind === 'sticker') return { type: kind, ...link } as RichContent
  if (kind === 'document') {
    const filename = media.filename === undefined ? undefined : fileName(media.filename, `${f}filename`)
    return { type: kind, ...link, ...(caption ? { caption } : {}), ...(filename ? { filename } : {}) } as RichContent
  }
  return { type: kind, ...link, ...(caption ? { caption } : {}) } as RichContent
}

/** A medium's `link` (checked) or `media_id` (a file uploaded here, checked before charging by admission.ts): one of the two. */
function mediaSource(media: { link?: string; media_id?: string }, f: string, kind: MediaKind): MediaSource {
  if ((media.link === undefined) === (media.media_id === undefined)) {
    throw badShape(`${f}link: give either link (a public https URL) or media_id (a file from POST /api/v1/media), one of them`)
  }
  if (media.link !== undefined) return { link: mediaLink(media.link, `${f}link`, kind) }
  const id = media.media_id!.trim()
  if (id === '') throw badValue(`${f}media_id: must name a file uploaded with POST /api/v1/media`)
  return { media_id: id }
}

/** An https link of at most 2048 characters whose file name, if it has a known media extension, is of `kind`. */
function mediaLink(value: string, field: string, kind: MediaKind): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw badValue(`${field}: must be an absolute https URL`)
  }
  if (url.protocol !== 'https:') throw badValue(`${field}: must be an https URL (WhatsApp fetches media over https)`)
  if (value.length > MAX_MEDIA_URL_CHARS) throw badValue(`${field}: must be at most ${MAX_MEDIA_URL_CHARS} characters`)
  const name = url.pathname.slice(url.pathname.lastIndexOf('/') + 1).toLowerCase()
  const extension = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1) : ''
  if (KNOWN.has(extension) && !EXTENSIONS[kind].includes(extension)) {
    throw badValue(
      `${field}: a .${extension} file is not ${article(kind)} ${kind} (${kind}: ${EXTENSIONS[kind].map((e) => `.${e}`).join(', ')})`,
    )
  }
  return value
}

const article = (kind: string) => (/^[aeiou]/.test(kind) ? 'an' : 'a')

function fileName(value: string, field: string): string {
  const name = text(value, field, LIMITS.filename)
  if (/[/\\\u0000-\u001f\u007f]/.test(name)) throw badValue(`${field}: must be a file name, without slashes or control characters`)
  return name
}

/** Trimmed, 1 to `max` characters. */
function text(value: string, field: string, max: number): string {
  const v = value.trim()
  if (v === '') throw badValue(`${field}: must not be empty`)
  if (v.length > max) throw badValue(`${field}: must be at most ${max} characters (got ${v.length})`)
  return v
}

/** Trimmed, at most `max` characters; undefined when absent or empty. */
function optional(value: string | undefined, field: string, max: number): string | undefined {
  if (value === undefined || value.trim() === '') return undefined
  return text(value, field, max)
}

function unique(values: string[], field: (index: number) => string): void {
  const seen = new Set<string>()
  values.forEach((v, n) => {
    if (seen.has(v)) throw badValue(`${field(n)}: must be unique within the message ("${v}" is repeated)`)
    seen.add(v)
  })
}

/**
 * A message's `content` as GET /messages shows it: the object of its `type` as the request gave it
 * (trimmed), `{header}` for a template's header media; null for text and plain templates.
 */
export function contentView(content: RichContent | null): Record<string, unknown> | null {
  if (!content) return null
  switch (content.type) {
    case 'button':
      return {
        type: 'button',
        body: { text: content.body },
        action: { buttons: content.buttons.map((reply) => ({ type: 'reply', reply })) },
      }
    case 'list':
      return { type: 'list', body: { text: content.body }, action: { button: content.button, sections: content.sections } }
    default: {
      const { type: _type, ...rest } = content
      return rest
    }
  }
}
