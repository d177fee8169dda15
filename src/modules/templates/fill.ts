// Sending a WhatsApp template (issue 30): a send's `template_id` names a wa_template the account may
// use; before anything is charged the template must be `approved` (else 422 TEMPLATE_NOT_APPROVED
// naming its status and Meta's reason), it must belong to the message's sender, and the send must fill
// every parameter the template has and no other (`variables`, `header`, `buttons`), within Meta's
// limits (else 422 VALIDATION_ERROR naming the parameter or the button). What Meta would refuse of it
// (132000, 131008, 132005, 132018) is refused here, uncharged, instead.
//
// What the provider gets is built here once, and stored with the message (messages.provider_template),
// so a recovered hand-off sends the same: Meta's `template.components` exactly as the Cloud API's
// reference writes them, Twilio's ContentSid with its ContentVariables, the simulator the name. The
// message's `body` is the text the customer saw: the header's text, the body and the footer, filled.

import { ApiError, badValue } from '../../http/errors'
import type { RichContent, StoredTemplate } from '../../providers/provider'
import { twilioContentVariables, twilioMediaSlot } from '../../providers/twilio/templates'
import type { WaTemplate } from './catalog'
import { componentOf, parametersOf, type TemplateParameters } from './parameters'

/** Meta's limits on a template message's values (the Cloud API's messages reference, its template errors). */
export const FILL_LIMITS = {
  /** The header's text once filled (a TEXT header is at most 60 characters). */
  headerText: 60,
  /** The body's text once filled: past it Meta answers 132005 ("hydrated text too long"). */
  bodyText: 1024,
  /** A COPY_CODE button's coupon code, and an authentication template's one-time code. */
  code: 15,
  /** A URL button's URL once its `{{1}}` suffix is filled. */
  url: 2000,
} as const

/** What a send gives for a WhatsApp template. */
export type FillInput = {
  variables?: Record<string, string>
  /** The header's text parameter, or its media (already checked into `media` by rich.ts). */
  header?: string | { type: string; link?: string; media_id?: string; filename?: string }
  buttons?: { index: number; value: string }[]
}

export type FilledTemplate = {
  /** The text the customer sees: the header's text, the body and the footer, filled. */
  body: string
  templateId: number
  providerTemplate: StoredTemplate
  /** The header's media, as messages.content keeps it. */
  content: RichContent | null
}

/** 422 TEMPLATE_NOT_APPROVED unless the template is approved: its status and Meta's reason named. */
export function requireApproved(t: WaTemplate, at = ''): void {
  if (t.status === 'approved') return
  const reason = t.reason ? ` (reason: ${t.reason})` : ''
  throw new ApiError(
    'TEMPLATE_NOT_APPROVED',
    `${at}template_id: template ${t.id} (${t.name}, ${t.language}) is ${t.status}${reason}, not approved, so it cannot be sent; ` +
      'nothing was charged',
  )
}

/**
 * 422 TEMPLATE_NOT_APPROVED unless the template belongs to the message's sender (`senderId` null: the
 * deployment's): a template is approved for one WhatsApp Business Account, and another number cannot
 * send it (the send found no template of that name and language of the sender `from` names).
 */
export function requireSenderOf(t: WaTemplate, senderId: number | null, at = ''): void {
  if ((t.sender_id ?? null) === (senderId ?? null)) return
  const name = (id: number | null) => (id === null ? "the deployment's default sender" : `sender ${id}`)
  throw new ApiError(
    'TEMPLATE_NOT_APPROVED',
    `${at}from: template ${t.id} (${t.name}, ${t.language}) is approved for ${name(t.sender_id)}, and ${name(senderId)} has no ` +
      `template ${t.name} in ${t.language}; leave out from to send it from its own sender; nothing was charged`,
  )
}

// Meta refuses a parameter's text with a new line, a tab or more than 4 consecutive spaces (132018).
const BAD_TEXT = /[\n\t]| {5,}/

function textValue(value: unknown, field: string, max: number | null): string {
  if (typeof value !== 'string') throw badValue(`${field}: must be a string`)
  if (value.trim() === '') throw badValue(`${field}: must not be empty`)
  if (BAD_TEXT.test(value))
    throw badValue(`${field}: must not contain a new line, a tab or more than 4 consecutive spaces (WhatsApp refuses them)`)
  if (max !== null && value.length > max) throw badValue(`${field}: must be at most ${max} characters (got ${value.length})`)
  return value
}

/**
 * Where a file uploaded here is fetched from by a provider that takes media by URL (Twilio): the start of
 * its signed link (the expiry and signature follow, made at each hand-off). Absent: not known here.
 */
export type FillOptions = { uploadedLink?: (mediaId: string) => string }

/** What a Twilio template's header media gives its ContentVariables: the variable's value, or (an uploaded file) its slot for the hand-off. */
type TwilioMedia = { value: string } | { slot: { key: string; prefix: string } }

/**
 * The one rule of a Twilio template's header media (issue 32). A Content template keeps its media URL
 * (`twilio_media`): a fixed one is the template's own file, and a send naming a header is refused; one
 * with a variable (`https://cdn.example.com/invoices/{{1}}`: a static prefix, a variable suffix) takes a
 * `link` that starts with the prefix and names a file after it (what follows fills the variable), or an
 * uploaded file (`media_id`) whose signed link starts with the prefix (a template approved with this
 * service's own media URL). Anything else is 422 naming the prefix, before anything is charged.
 */
export function twilioHeaderMedia(
  t: Pick<WaTemplate, 'id' | 'name' | 'components'>,
  header: { link?: string; media_id?: string; filename?: string },
  at: string,
  options: FillOptions = {},
): TwilioMedia {
  const what = `template ${t.id} (${t.name})`
  const slot = twilioMediaSlot(Array.isArray(t.components) ? t.components : [])
  if (!slot?.key) {
    const media = slot ? ` (${slot.url})` : ''
    throw badValue(`${at}header: the media of ${what} is fixed by the template${media}; send it without header; nothing was charged`)
  }
  const { key, prefix, suffix } = slot
  if (header.filename !== undefined)
    throw badValue(`${at}header.filename: Twilio does not send a document's file name (the recipient sees the link's last path segment)`)
  const under = `${prefix}…${suffix}`
  if (header.link !== undefined) {
    const link = header.link
    const value = link.slice(prefix.length, link.length - suffix.length)
    if (!link.startsWith(prefix) || !link.endsWith(suffix) || link.length <= prefix.length + suffix.length) {
      throw badValue(
        `${at}header.link: ${what} was approved with the media URL ${slot.url}: the link must start with ${prefix}` +
          `${suffix ? ` and end with ${suffix}` : ''} and name the file after it (Twilio fills {{${key}}} with the rest); ` +
          'nothing was charged',
      )
    }
    return { value }
  }
  const start = header.media_id === undefined ? undefined : options.uploadedLink?.(header.media_id)
  if (start === undefined || !start.startsWith(prefix) || suffix !== '') {
    throw badValue(
      `${at}header.media_id: the media of ${what} must be under ${under} (the URL it was approved with, ${slot.url}), and ` +
        `Twilio would fetch this file from ${start ?? "this service's signed link"}?expires=…: give header.link under ${prefix}, or ` +
        "send a template approved with this service's media URL; nothing was charged",
    )
  }
  return { slot: { key, prefix } }
}

/** `{{key}}` in `text` replaced by the values. */
const fill = (text: string, values: Record<string, string>) =>
  text.replace(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g, (whole, key: string) => (Object.hasOwn(values, key) ? values[key]! : whole))

const list = (keys: string[]) => (keys.length > 0 ? keys.join(', ') : 'none')

/**
 * A WhatsApp template's send, checked and built for `provider`: 422 naming the part for a parameter
 * missing, unknown, empty or past Meta's limits. `media`: the header's media as rich.ts checked it
 * (its link, type and file name), or null. `at`: the entry's path in a bulk (`messages[3].`).
 */
export function fillTemplate(
  t: WaTemplate,
  input: FillInput,
  media: RichContent | null,
  provider: string,
  at = '',
  options: FillOptions = {},
): FilledTemplate {
  const p: TemplateParameters = parametersOf(t)
  const components = Array.isArray(t.components) ? t.components : []
  const named = t.parameter_format === 'named'
  const what = `template ${t.id} (${t.name})`

  // The body's parameters: every one given, no other.
  const values = input.variables ?? {}
  const keys = p.body.map((b) => b.key)
  for (const key of Object.keys(values)) {
    if (!keys.includes(key)) throw badValue(`${at}variables.${key}: not a parameter of ${what} (its parameters: ${list(keys)})`)
  }
  const missing = keys.find((key) => !Object.hasOwn(values, key))
  if (missing !== undefined) throw badValue(`${at}variables.${missing}: missing (${what} takes: ${list(keys)})`)
  for (const key of keys) textValue(values[key], `${at}variables.${key}`, null)
  const bodyText = fill(String(componentOf(components, 'BODY')?.text ?? ''), values)
  if (bodyText.length > FILL_LIMITS.bodyText) {
    throw badValue(
      `${at}variables: the body of ${what} filled is ${bodyText.length} characters; WhatsApp takes at most ${FILL_LIMITS.bodyText}`,
    )
  }

  // The header: its text parameter, or its media.
  const header = componentOf(components, 'HEADER')
  let headerText: string | null = typeof header?.text === 'string' ? header.text : null
  let headerParameter: Record<string, unknown> | null = null
  let twilioMedia: TwilioMedia | null = null
  if (p.header === null) {
    // A Twilio template's fixed media: the template's own file, said so (twilioHeaderMedia throws).
    const mediaHeader = ['IMAGE', 'VIDEO', 'DOCUMENT'].includes(String(header?.format ?? '').toUpperCase())
    if (input.header !== undefined && provider === 'twilio' && mediaHeader) twilioHeaderMedia(t, {}, at, options)
    if (input.header !== undefined) throw badValue(`${at}header: ${what} has no header parameter`)
  } else if (p.header.type === 'text') {
    if (input.header === undefined) throw badValue(`${at}header: missing (${what}'s header takes a text, its {{${p.header.key}}})`)
    if (typeof input.header !== 'string') throw badValue(`${at}header: must be a text (${what}'s header takes its {{${p.header.key}}})`)
    const text = textValue(input.header, `${at}header`, null)
    headerText = fill(headerText ?? '', { [p.header.key]: text })
    if (headerText.length > FILL_LIMITS.headerText) {
      throw badValue(
        `${at}header: the header of ${what} filled is ${headerText.length} characters; WhatsApp takes at most ${FILL_LIMITS.headerText}`,
      )
    }
    headerParameter = { type: 'text', ...(named ? { parameter_name: p.header.key } : {}), text }
  } else {
    const kind = p.header.type
    if (input.header === undefined)
      throw badValue(`${at}header: missing (${what}'s header is a ${kind}: give {"type": "${kind}", "link": …})`)
    if (typeof input.header === 'string' || media?.type !== 'template') {
      throw badValue(`${at}header: must be a ${kind} ({"type": "${kind}", "link": …}), ${what}'s header is one`)
    }
    if (media.header.type !== kind)
      throw badValue(`${at}header.type: must be "${kind}" (${what}'s header is one; got "${media.header.type}")`)
    // Twilio: the header's media is the Content template's URL, its variable filled (twilioHeaderMedia).
    // (A document's file name only as the request gave it: an uploaded file's own is not the sender's choice.)
    if (provider === 'twilio') {
      const { link, media_id, filename } = { ...media.header, filename: input.header.filename }
      twilioMedia = twilioHeaderMedia(t, { link, media_id, filename }, at, options)
    }
    const { type, ...fields } = media.header
    headerParameter = { type, [type]: fields }
    headerText = null
  }

  // The buttons that take a value: every one given (an authentication template's code button takes the body's code), no other.
  const given = new Map<number, string>()
  for (const [n, b] of (input.buttons ?? []).entries()) {
    const field = `${at}buttons[${n}]`
    if (!Number.isSafeInteger(b.index) || b.index < 0) throw badValue(`${field}.index: must be a button's position (0 for the first)`)
    if (given.has(b.index)) throw badValue(`${field}.index: button ${b.index} is given twice`)
    if (!p.buttons.some((x) => x.index === b.index)) {
      throw badValue(
        `${field}.index: button ${b.index} of ${what} takes no value (buttons that do: ${list(p.buttons.map((x) => String(x.index)))})`,
      )
    }
    given.set(b.index, b.value)
  }
  const buttonDefs = Array.isArray(componentOf(components, 'BUTTONS')?.buttons)
    ? (componentOf(components, 'BUTTONS')!.buttons as Record<string, unknown>[])
    : []
  const buttonComponents: Record<string, unknown>[] = []
  const buttonValues: string[] = []
  for (const b of p.buttons) {
    const n = (input.buttons ?? []).findIndex((x) => x.index === b.index)
    let field = `${at}buttons[${n}].value`
    let value = given.get(b.index)
    // An authentication template's code button (OTP, or the URL button Meta lists it as) takes the body's one code.
    const otp = b.otp_type !== undefined || t.category === 'authentication'
    if (value === undefined && otp && keys.length === 1) {
      value = values[keys[0]!]
      field = `${at}variables.${keys[0]} (the code of button ${b.index})`
    }
    if (value === undefined) {
      const kind = otp ? 'one-time code' : b.sub_type === 'url' ? "URL's {{1}} suffix" : 'coupon code'
      throw badValue(`${at}buttons: button ${b.index} of ${what} needs its ${kind}: missing (give {"index": ${b.index}, "value": …})`)
    }
    if (b.sub_type === 'copy_code' || otp) {
      textValue(value, field, FILL_LIMITS.code)
    } else {
      textValue(value, field, null)
      const url = String(buttonDefs[b.index]?.url ?? '')
      const full = url.replace(/\{\{\s*1\s*\}\}/, value)
      if (/\s/.test(value)) throw badValue(`${field}: must not contain spaces (it ends a URL)`)
      if (full.length > FILL_LIMITS.url)
        throw badValue(`${field}: the button's URL filled is ${full.length} characters; WhatsApp takes at most ${FILL_LIMITS.url}`)
    }
    buttonValues.push(value)
    buttonComponents.push({
      type: 'button',
      sub_type: b.sub_type,
      index: String(b.index),
      parameters: [b.sub_type === 'copy_code' ? { type: 'coupon_code', coupon_code: value } : { type: 'text', text: value }],
    })
  }

  const bodyValues = keys.map((key) => values[key]!)
  const metaComponents: Record<string, unknown>[] = []
  if (headerParameter) metaComponents.push({ type: 'header', parameters: [headerParameter] })
  if (keys.length > 0) {
    metaComponents.push({
      type: 'body',
      parameters: keys.map((key) => ({ type: 'text', ...(named ? { parameter_name: key } : {}), text: values[key]! })),
    })
  }
  metaComponents.push(...buttonComponents)

  const footer = componentOf(components, 'FOOTER')
  const footerText = typeof footer?.text === 'string' ? footer.text : null
  const body = [headerText, bodyText, footerText].filter((x): x is string => typeof x === 'string' && x.trim() !== '').join('\n\n')

  const common = { templateId: t.id, category: t.category }
  let providerTemplate: StoredTemplate
  if (provider === 'meta') {
    providerTemplate = { provider, ref: t.name, language: t.language, variables: bodyValues, components: metaComponents, ...common }
  } else if (provider === 'twilio') {
    if (!t.provider_ref)
      throw badValue(`${at}template_id: ${what} has no Twilio Content SID yet (sync the sender's templates); nothing was charged`)
    // Twilio: the Content SID, its variables by the body's keys; a header's text and the buttons' values follow by number.
    let contentVariables: Record<string, string> = Object.fromEntries(keys.map((key) => [key, values[key]!]))
    if (!named && headerParameter?.type !== 'text') {
      // The buttons' variables as Twilio numbers them (a listed template's own, a submitted one's as submitted).
      const buttons = p.buttons.map((b, i) => ({ index: b.index, value: buttonValues[i]! }))
      const mediaValue = twilioMedia && 'value' in twilioMedia ? { media: twilioMedia.value } : {}
      contentVariables = twilioContentVariables(components, { variables: contentVariables, buttons, ...mediaValue })
    } else {
      let next = named ? 0 : keys.length
      const extra = [...(headerParameter?.type === 'text' ? [String(headerParameter.text)] : []), ...buttonValues]
      for (const value of extra) contentVariables[named ? `v${++next}` : String(++next)] = value
    }
    // An uploaded file's variable is filled at each hand-off, with its signed link made then (providers/twilio/send.ts).
    const slot = twilioMedia && 'slot' in twilioMedia ? { mediaVariable: twilioMedia.slot } : {}
    providerTemplate = { provider, ref: t.provider_ref, language: null, variables: bodyValues, contentVariables, ...slot, ...common }
  } else {
    providerTemplate = { provider, ref: t.name, language: t.language, variables: bodyValues, ...common }
  }
  return { body, templateId: t.id, providerTemplate, content: headerParameter && headerParameter.type !== 'text' ? media : null }
}
