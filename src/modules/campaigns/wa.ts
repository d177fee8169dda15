// A campaign of a WhatsApp template (issue 30): its `parameters` say where each parameter the template
// needs (templates/parameters.ts) comes from, per recipient: a contact's field, one of its attributes or
// a constant (contacts/values.ts). Checked when the campaign is created (every parameter mapped, none
// other: 422 naming it); filled per recipient by the engine with the send's own code (templates/fill.ts),
// so a campaign's message reaches the provider exactly as a single send of the same values would.

import { ApiError, badValue } from '../../http/errors'
import type { MediaSource, RichContent } from '../../providers/provider'
import { richOf, type RichFields } from '../messages/rich'
import { contactValue, type ContactFields, type ValueSource } from '../contacts/values'
import type { WaTemplate } from '../templates/catalog'
import { fillTemplate, twilioHeaderMedia, type FilledTemplate, type FillOptions } from '../templates/fill'
import { componentOf, parametersOf } from '../templates/parameters'

/** Where a value comes from, as the API takes it (one of the three). */
export type SourceInput = { field?: string; attribute?: string; constant?: string }

/**
 * A media header's media: one for every recipient, as a send's `header` gives it: a public https `link`,
 * or `media_id`, a file this account uploaded (POST /api/v1/media; service.ts checks it is the account's own).
 */
export type HeaderMedia = { type: 'image' | 'video' | 'document'; filename?: string } & MediaSource

/** A campaign's mapping, as given and as stored (campaigns.template_parameters). */
export type CampaignParameters = {
  variables?: Record<string, ValueSource>
  /** A text header's source, or a media header's media (the same for every recipient). */
  header?: ValueSource | HeaderMedia
  buttons?: Record<string, ValueSource>
}

export const isMedia = (h: CampaignParameters['header']): h is HeaderMedia => h !== undefined && ('link' in h || 'media_id' in h)

/**
 * The media of a media header, checked as a send's `header` is (rich.ts: an https link, a file name
 * for a document only), its type the template's: 422 naming `parameters.header`.
 */
function headerMedia(input: unknown, kind: HeaderMedia['type'], at: string, what: string): HeaderMedia {
  const example = `{"type": "${kind}", "link": "https://…"} or {"type": "${kind}", "media_id": "med_…"}`
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw badValue(`${at}: must be the header's ${kind}, ${example}, the same for every recipient`)
  const given = input as Record<string, unknown>
  for (const key of Object.keys(given)) {
    if (!['type', 'link', 'media_id', 'filename'].includes(key))
      throw badValue(
        `${at}.${key}: ${what}'s header is a ${kind}: give ${example}, one medium for every recipient (not a field, attribute or constant)`,
      )
  }
  if (given.type !== kind)
    throw badValue(`${at}.type: must be "${kind}" (${what}'s header is one; got ${JSON.stringify(given.type ?? null)})`)
  if ((given.link === undefined) === (given.media_id === undefined))
    throw badValue(`${at}: give the ${kind}'s link (a public https URL) or media_id (a file from POST /api/v1/media), one of them`)
  if (given.link !== undefined && typeof given.link !== 'string') throw badValue(`${at}.link: must be the ${kind}'s https link`)
  if (given.media_id !== undefined && typeof given.media_id !== 'string')
    throw badValue(`${at}.media_id: must name a file uploaded with POST /api/v1/media`)
  if (given.filename !== undefined && typeof given.filename !== 'string') throw badValue(`${at}.filename: must be a string`)
  const rich = richOf({ template_id: 0, header: given } as unknown as RichFields, 'parameters.')
  if (rich?.type !== 'template') throw badValue(`${at}: must be ${example}`)
  return rich.header as HeaderMedia
}

const FIELDS = ['name', 'phone', 'email', 'city'] as const
const ATTRIBUTE = /^[A-Za-z0-9_]{1,64}$/

function sourceOf(input: unknown, at: string): ValueSource {
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw badValue(`${at}: must be {"field": …}, {"attribute": …} or {"constant": …}`)
  const given = Object.entries(input as Record<string, unknown>).filter(([, v]) => v !== undefined)
  if (given.length !== 1) throw badValue(`${at}: give exactly one of field, attribute or constant`)
  const [kind, value] = given[0]!
  if (typeof value !== 'string') throw badValue(`${at}.${kind}: must be a string`)
  if (kind === 'field') {
    if (!(FIELDS as readonly string[]).includes(value)) throw badValue(`${at}.field: must be one of ${FIELDS.join(', ')} (got "${value}")`)
    return { field: value as (typeof FIELDS)[number] }
  }
  if (kind === 'attribute') {
    if (!ATTRIBUTE.test(value)) throw badValue(`${at}.attribute: must be 1 to 64 letters, digits or underscores`)
    return { attribute: value }
  }
  if (kind === 'constant') {
    if (value.trim() === '') throw badValue(`${at}.constant: must not be empty`)
    return { constant: value }
  }
  throw badValue(`${at}.${kind}: unknown source; give field, attribute or constant`)
}

const list = (keys: string[]) => (keys.length > 0 ? keys.join(', ') : 'none')

/**
 * The campaign's mapping for the template, checked: every parameter the template needs has a source
 * and no other is given (422 naming it). A media header takes one link for every recipient
 * (`{"type": "image", "link": …}`, checked as a send's). An authentication template's code button takes
 * the body's code, as a single send's does.
 */
export function checkParameters(t: WaTemplate, input: unknown, options: FillOptions = {}): CampaignParameters {
  const at = 'parameters'
  const what = `template ${t.id} (${t.name})`
  const p = parametersOf(t)
  const given = (input ?? {}) as { variables?: unknown; header?: unknown; buttons?: unknown }
  if (typeof given !== 'object' || Array.isArray(given)) throw badValue(`${at}: must be an object`)
  for (const key of Object.keys(given)) {
    if (!['variables', 'header', 'buttons'].includes(key)) throw badValue(`${at}.${key}: unknown; give variables, header or buttons`)
  }
  const out: CampaignParameters = {}

  const keys = p.body.map((b) => b.key)
  const variables = (given.variables ?? {}) as Record<string, unknown>
  for (const key of Object.keys(variables)) {
    if (!keys.includes(key)) throw badValue(`${at}.variables.${key}: not a parameter of ${what} (its parameters: ${list(keys)})`)
  }
  if (keys.length > 0) {
    out.variables = {}
    for (const key of keys) {
      if (!Object.hasOwn(variables, key)) throw badValue(`${at}.variables.${key}: missing (${what} takes: ${list(keys)})`)
      out.variables[key] = sourceOf(variables[key], `${at}.variables.${key}`)
    }
  }

  const twilio = t.provider === 'twilio'
  if (p.header === null) {
    // A Twilio template's fixed media: said so, as a send's header is (templates/fill.ts).
    if (given.header !== undefined && twilio && componentOf(t.components, 'HEADER')) twilioHeaderMedia(t, {}, `${at}.`, options)
    if (given.header !== undefined) throw badValue(`${at}.header: ${what} has no header parameter`)
  } else if (p.header.type !== 'text') {
    if (given.header === undefined)
      throw badValue(
        `${at}.header: missing (${what}'s header is a ${p.header.type}: give {"type": "${p.header.type}", "link": "https://…"} or {"type": "${p.header.type}", "media_id": "med_…"})`,
      )
    out.header = headerMedia(given.header, p.header.type, `${at}.header`, what)
    // A Twilio template's media URL: the campaign's link (or uploaded file) under its static prefix, as a send's.
    if (twilio) twilioHeaderMedia(t, out.header, `${at}.`, options)
  } else {
    if (given.header === undefined) throw badValue(`${at}.header: missing (${what}'s header takes its {{${p.header.key}}})`)
    out.header = sourceOf(given.header, `${at}.header`)
  }

  const needed = p.buttons.filter((b) => !(b.otp_type !== undefined || t.category === 'authentication'))
  const buttons = (given.buttons ?? {}) as Record<string, unknown>
  for (const index of Object.keys(buttons)) {
    if (!needed.some((b) => String(b.index) === index)) {
      throw badValue(
        `${at}.buttons.${index}: button ${index} of ${what} takes no value (buttons that do: ${list(needed.map((b) => String(b.index)))})`,
      )
    }
  }
  if (needed.length > 0) {
    out.buttons = {}
    for (const b of needed) {
      const index = String(b.index)
      if (!Object.hasOwn(buttons, index)) throw badValue(`${at}.buttons.${index}: missing (button ${index} of ${what} takes a value)`)
      out.buttons[index] = sourceOf(buttons[index], `${at}.buttons.${index}`)
    }
  }
  return out
}

/**
 * One recipient's message of the template, filled from the contact; or the reason it cannot be (a
 * value missing, or one WhatsApp would refuse): the recipient is then skipped, uncharged.
 */
export function fillForContact(
  t: WaTemplate,
  mapping: CampaignParameters,
  contact: ContactFields,
  provider: string,
  options: FillOptions = {},
): FilledTemplate | { missing: string } {
  const variables: Record<string, string> = {}
  for (const [key, source] of Object.entries(mapping.variables ?? {})) {
    const value = contactValue(contact, source)
    if (value === undefined) return { missing: `variables.${key}` }
    variables[key] = value
  }
  let header: string | HeaderMedia | undefined
  let media: RichContent | null = null
  if (isMedia(mapping.header)) {
    // A media header: the campaign's one link, as a send's header media (a document's file name, maybe its
    // uploaded file's, is the media's: it was judged with the campaign).
    const { filename: _filename, ...given } = mapping.header
    header = given as HeaderMedia
    media = { type: 'template', header: mapping.header }
  } else if (mapping.header) {
    header = contactValue(contact, mapping.header)
    if (header === undefined) return { missing: 'header' }
  }
  const buttons: { index: number; value: string }[] = []
  for (const [index, source] of Object.entries(mapping.buttons ?? {})) {
    const value = contactValue(contact, source)
    if (value === undefined) return { missing: `buttons.${index}` }
    buttons.push({ index: Number(index), value })
  }
  try {
    return fillTemplate(t, { variables, ...(header === undefined ? {} : { header }), buttons }, media, provider, '', options)
  } catch (e) {
    if (e instanceof ApiError) return { missing: e.message }
    throw e
  }
}

/** One parameter a campaign maps, as the dashboard's form shows it: its place in `parameters` and a label. */
export type Slot = {
  group: 'variables' | 'header' | 'buttons'
  key: string | null
  label: string
  example?: string
  /** A media header's kind: the slot is its one link (no source to choose). */
  media?: HeaderMedia['type']
}

/** The parameters of the template a campaign must map, in order (what checkParameters asks for). */
export function slotsOf(t: WaTemplate): Slot[] {
  const p = parametersOf(t)
  const slots: Slot[] = []
  if (p.header?.type === 'text') slots.push({ group: 'header', key: null, label: `Header {{${p.header.key}}}`, example: p.header.example })
  else if (p.header)
    slots.push({
      group: 'header',
      key: null,
      label: `Header ${p.header.type}: its https link, or an uploaded file's id (med_…), the same for every recipient`,
      media: p.header.type,
    })
  for (const b of p.body) slots.push({ group: 'variables', key: b.key, label: `Body {{${b.key}}}`, example: b.example })
  for (const b of p.buttons) {
    if (b.otp_type !== undefined || t.category === 'authentication') continue
    const what = b.sub_type === 'url' ? "URL's {{1}}" : 'coupon code'
    slots.push({ group: 'buttons', key: String(b.index), label: `Button ${b.index + 1} (${what})`, example: b.example })
  }
  return slots
}

/** The form's field names of a slot: its source's kind (`name`… `attribute`, `constant`) and its text. */
export const slotFields = (s: Slot) => {
  const id = s.key === null ? s.group : `${s.group}.${s.key}`
  return { from: `from:${id}`, value: `value:${id}` }
}

/** The kinds a form's select offers: a contact field, an attribute (its key typed), a constant (its text typed). */
export const SOURCE_KINDS = ['name', 'phone', 'email', 'city', 'attribute', 'constant'] as const

/** The dashboard form's mapping (two fields per slot) as the API's `parameters`, for checkParameters to judge. */
export function parametersFromForm(t: WaTemplate, read: (name: string) => string): CampaignParameters {
  const out: { variables?: Record<string, SourceInput>; header?: SourceInput | HeaderMedia; buttons?: Record<string, SourceInput> } = {}
  for (const s of slotsOf(t)) {
    const names = slotFields(s)
    if (s.media) {
      // An uploaded file's id (POST /api/v1/media, med_…), else a link.
      const value = read(names.value).trim()
      out.header = value.startsWith('med_') ? { type: s.media, media_id: value } : { type: s.media, link: value }
      continue
    }
    const kind = read(names.from)
    const value = read(names.value).trim()
    const source: SourceInput =
      kind === 'attribute' ? { attribute: value } : kind === 'constant' ? { constant: value } : { field: kind === '' ? 'name' : kind }
    if (s.group === 'header') out.header = source
    else (out[s.group] ??= {})[s.key!] = source
  }
  return out as CampaignParameters
}
