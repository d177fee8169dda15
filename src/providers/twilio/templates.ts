// A Twilio sender's WhatsApp templates (issue 30): Twilio keeps them as Content templates (Content
// API, TWILIO_CONTENT_API_BASE), each with its WhatsApp approval. Listing reads every page of
// `GET /v1/ContentAndApprovals` and maps each template onto the Cloud API's shape the service keeps
// (wa_templates): the approval's name (else the friendly name), the language, the approval's category,
// its status in Meta's words, the Content SID as the provider's id, and the Content types as Cloud API
// components. Submitting maps a Cloud API definition onto a Content type, creates it
// (`POST /v1/Content`) and asks for WhatsApp's approval (`POST /v1/Content/{sid}/ApprovalRequests/whatsapp`
// with its name and category).
//
// Variables: Twilio numbers them across the whole template (`{{1}}`, `{{2}}` in the body, `{{3}}` in a
// button's URL), and a send fills them by number (ContentVariables). The mapped components keep those
// numbers: the body's `{{1}}`… are the positional parameters a send gives as `variables`, a URL button's
// url keeps its own `{{3}}`, and a button whose value fills a variable carries it in `twilio_variable`
// (a field beyond Meta's, which the service's readers ignore). twilioContentVariables turns a send's
// values into ContentVariables with them.
//
// The auth token goes as Basic credentials, never in a URL; the next page is asked for under the
// configured root with the PageToken Twilio gave, not by following its absolute next_page_url. Nothing
// here throws; no text kept carries a secret (failure/providerText).

import type { Clock } from '../../lib/clock'
import { del, errorCodeOf, failure, get, isObject, post } from '../http'
import type { ListedTemplate, TemplateChangeAnswer, TemplateListing, TemplateSubmission, WaTemplateSupport } from '../provider'
import { twilioBasic, twilioSecrets, type TwilioSettings } from './settings'

/** Content templates per page (Twilio's default is 50, its maximum 1,000). */
export const CONTENT_PAGE = 50
/** A page of templates with their types may be far bigger than a message's answer. */
const PAGE_BYTES = 4 * 1024 * 1024
/** Pages read at most (WhatsApp allows 6,000 approved templates an account). */
const MAX_PAGES = 400

/** A template as listed, in the provider-neutral shape the sync takes (its words in Meta's upper case). */
export type TwilioListedTemplate = ListedTemplate

type Context = { timeoutMs: number; clock: Pick<Clock, 'timeoutSignal'> }

const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null)

/**
 * Twilio's approval status in Meta's words: `received` (Twilio has it, not yet at WhatsApp) is PENDING,
 * `unsubmitted` (no approval asked) DRAFT; approved, pending, rejected, paused and disabled as they are.
 * Anything else is passed on as Twilio wrote it (the sync skips a status it does not know).
 */
export function statusOfTwilio(word: string | null): string {
  const w = (word ?? '').trim().toLowerCase()
  if (w === '' || w === 'unsubmitted') return 'DRAFT'
  if (w === 'received' || w === 'submitted') return 'PENDING'
  return w.toUpperCase()
}

/**
 * Twilio's category in Meta's words: UTILITY, MARKETING, AUTHENTICATION; Twilio's older ones as WhatsApp
 * moved them (TRANSACTIONAL and the *_UPDATE / ALERT / AUTO_REPLY families: UTILITY; OTP: AUTHENTICATION).
 * A template with no approval yet has none: authentication when its type is whatsapp/authentication,
 * else UTILITY until it is submitted (the submission names its own).
 */
export function categoryOfTwilio(word: string | null, type: string | null): string {
  const w = (word ?? '').trim().toUpperCase()
  if (w === 'UTILITY' || w === 'MARKETING' || w === 'AUTHENTICATION') return w
  if (w === 'OTP') return 'AUTHENTICATION'
  if (w !== '') return 'UTILITY'
  return type === 'whatsapp/authentication' ? 'AUTHENTICATION' : 'UTILITY'
}

/** The Content types that make a WhatsApp template, most complex first (Twilio sends the most complex the channel takes). */
const TEMPLATE_TYPES = [
  'whatsapp/authentication',
  'twilio/card',
  'whatsapp/card',
  'twilio/call-to-action',
  'twilio/quick-reply',
  'twilio/media',
  'twilio/text',
] as const

/** A media URL's header format, by its file's extension (IMAGE when it says nothing). */
function mediaFormat(url: string): 'IMAGE' | 'VIDEO' | 'DOCUMENT' {
  const path = url.split(/[?#]/)[0]!.toLowerCase()
  if (/\.(mp4|3gp|mov)$/.test(path)) return 'VIDEO'
  if (/\.(pdf|docx?|xlsx?|pptx?|txt)$/.test(path)) return 'DOCUMENT'
  return 'IMAGE'
}

/** The distinct `{{n}}` variables of a text, in order of appearance. */
function variablesIn(value: unknown): string[] {
  if (typeof value !== 'string') return []
  const keys: string[] = []
  for (const m of value.matchAll(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g)) if (!keys.includes(m[1]!)) keys.push(m[1]!)
  return keys
}

/** A BODY component with Meta's positional example (the template's sample values). */
function bodyOf(body: string, samples: Record<string, string>): Record<string, unknown> {
  const keys = variablesIn(body)
  const component: Record<string, unknown> = { type: 'BODY', text: body }
  if (keys.length > 0) component.example = { body_text: [keys.map((k) => samples[k] ?? '')] }
  return component
}

/** A Content action (call-to-action, card, quick reply) as a Cloud API button. */
function buttonOf(action: Record<string, unknown>, samples: Record<string, string>): Record<string, unknown> | null {
  const type = (text(action.type) ?? 'QUICK_REPLY').toUpperCase()
  const title = text(action.title) ?? ''
  if (type === 'URL') {
    const url = text(action.url) ?? ''
    const [key] = variablesIn(url)
    const button: Record<string, unknown> = { type: 'URL', text: title, url }
    if (key !== undefined) Object.assign(button, { example: [url.replace(/\{\{[^}]*\}\}/, samples[key] ?? '')], twilio_variable: key })
    return button
  }
  if (type === 'PHONE_NUMBER' || type === 'PHONE') return { type: 'PHONE_NUMBER', text: title, phone_number: text(action.phone) ?? '' }
  if (type === 'COPY_CODE') {
    const code = text(action.code) ?? ''
    const [key] = variablesIn(code)
    const button: Record<string, unknown> = { type: 'COPY_CODE', example: key !== undefined ? (samples[key] ?? '') : code }
    if (key !== undefined) button.twilio_variable = key
    return button
  }
  if (type === 'QUICK_REPLY') return { type: 'QUICK_REPLY', text: title }
  return null
}

function buttonsOf(actions: unknown, samples: Record<string, string>): Record<string, unknown>[] {
  const list: unknown[] = Array.isArray(actions) ? actions : []
  const out: Record<string, unknown>[] = []
  for (const a of list) {
    const button = isObject(a) ? buttonOf(a, samples) : null
    if (button) out.push(button)
  }
  return out
}

/**
 * A Content template's types as Cloud API components (HEADER, BODY, FOOTER, BUTTONS), from the type
 * WhatsApp approved (`content_type`), else the most complex WhatsApp template type it has; null when
 * it has none (a list picker, a location: not WhatsApp templates).
 */
export function componentsOfContent(
  types: Record<string, unknown>,
  samples: Record<string, string>,
  approvedType: string | null = null,
): { type: string; components: Record<string, unknown>[] } | null {
  const type = approvedType && isObject(types[approvedType]) ? approvedType : TEMPLATE_TYPES.find((t) => isObject(types[t]))
  if (!type) return null
  const t = types[type] as Record<string, unknown>
  const components: Record<string, unknown>[] = []
  const media = Array.isArray(t.media) ? text(t.media[0]) : null
  // The media is the Content template's own (`twilio_media`): a send names none, unless its URL has a variable
  // (`https://cdn.example.com/invoices/{{1}}`), which a send fills. WhatsApp classified the header by the
  // sample it approved (the URL with its variable's sample value), so the format and example are the sample's.
  const sample = media ? media.replace(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g, (whole, key: string) => samples[key] ?? whole) : null
  const header =
    media && sample ? { type: 'HEADER', format: mediaFormat(sample), example: { header_handle: [sample] }, twilio_media: media } : null
  const buttons = (list: Record<string, unknown>[]) => (list.length > 0 ? [{ type: 'BUTTONS', buttons: list }] : [])
  switch (type) {
    case 'whatsapp/authentication': {
      // WhatsApp writes an authentication template's text itself: the code is its one parameter.
      const recommendation = t.add_security_recommendation === true
      components.push({
        type: 'BODY',
        text: `{{1}} is your verification code.${recommendation ? ' For your security, do not share this code.' : ''}`,
        add_security_recommendation: recommendation,
        example: { body_text: [[samples['1'] ?? '123456']] },
      })
      const minutes = typeof t.code_expiration_minutes === 'number' ? t.code_expiration_minutes : null
      if (minutes !== null)
        components.push({ type: 'FOOTER', text: `This code expires in ${minutes} minutes.`, code_expiration_minutes: minutes })
      const actions = (Array.isArray(t.actions) ? t.actions : []).filter(isObject)
      const otp = actions.map((a) => {
        const kind = (text(a.type) ?? 'COPY_CODE').toUpperCase()
        return {
          type: 'OTP',
          otp_type: kind === 'ONE_TAP' || kind === 'ZERO_TAP' ? kind : 'COPY_CODE',
          text: text(a.copy_code_text) ?? 'Copy code',
        }
      })
      components.push(...buttons(otp.length > 0 ? otp : [{ type: 'OTP', otp_type: 'COPY_CODE', text: 'Copy code' }]))
      break
    }
    case 'twilio/card':
    case 'whatsapp/card': {
      if (header) components.push(header)
      components.push(bodyOf(text(t.title) ?? text(t.body) ?? '', samples))
      const footer = text(t.subtitle) ?? text(t.footer)
      if (footer) components.push({ type: 'FOOTER', text: footer })
      components.push(...buttons(buttonsOf(t.actions, samples)))
      break
    }
    case 'twilio/call-to-action':
    case 'twilio/quick-reply':
      components.push(bodyOf(text(t.body) ?? '', samples))
      components.push(...buttons(buttonsOf(t.actions, samples)))
      break
    case 'twilio/media':
      if (header) components.push(header)
      components.push(bodyOf(text(t.body) ?? '', samples))
      break
    default:
      components.push(bodyOf(text(t.body) ?? '', samples))
  }
  return { type, components }
}

/** The sample value of each variable (Twilio's `variables`), as strings. */
function samplesOf(variables: unknown): Record<string, string> {
  if (!isObject(variables)) return {}
  return Object.fromEntries(
    Object.entries(variables).flatMap(([k, v]) => (typeof v === 'string' || typeof v === 'number' ? [[k, String(v)]] : [])),
  )
}

/** Friendly names of the Content templates the service makes for reply buttons and lists (content.ts): not WhatsApp templates. */
const OWN_CONTENT = /^messaging_api_/

/** One ContentAndApprovals item as a listed template, or null (not a WhatsApp template, or the service's own). */
export function templateOfContent(item: unknown): TwilioListedTemplate | null {
  if (!isObject(item)) return null
  const sid = text(item.sid)
  const language = text(item.language)
  if (!sid || !language || !isObject(item.types)) return null
  // v1 answers the WhatsApp approval as one object; v2 under a `whatsapp` key.
  const requests = isObject(item.approval_requests) ? item.approval_requests : {}
  const approval = isObject(requests.whatsapp) ? requests.whatsapp : requests
  const status = statusOfTwilio(text(approval.status))
  const friendly = text(item.friendly_name)
  if (status === 'DRAFT' && friendly && OWN_CONTENT.test(friendly)) return null
  const mapped = componentsOfContent(item.types, samplesOf(item.variables), text(approval.content_type))
  if (!mapped) return null
  const reason = text(approval.rejection_reason)
  return {
    ref: sid,
    name: text(approval.name) ?? friendly ?? sid,
    language,
    category: categoryOfTwilio(text(approval.category), mapped.type),
    status,
    parameterFormat: 'POSITIONAL',
    components: mapped.components,
    quality: null,
    reason: reason && reason.toUpperCase() !== 'NONE' ? reason : null,
  }
}

const headersOf = (settings: TwilioSettings) => ({ authorization: `Basic ${twilioBasic(settings)}`, accept: 'application/json' })

/** Twilio's refusal: its code and message, or the HTTP status. */
function refusal(status: number, answer: Record<string, unknown> | null): { code: number | null; said: string } {
  const message = typeof answer?.message === 'string' && answer.message.trim() ? answer.message : `HTTP ${status}`
  return { code: errorCodeOf(answer?.code), said: message }
}

/** Every Content template of the sender's Twilio account with its WhatsApp approval, page after page. */
export async function listTwilioTemplates(settings: TwilioSettings, context: Context): Promise<TemplateListing> {
  const secrets = twilioSecrets(settings)
  const templates: TwilioListedTemplate[] = []
  const root = `${settings.contentApiBase}/v1/ContentAndApprovals`
  let query = new URLSearchParams({ PageSize: String(CONTENT_PAGE) })
  for (let page = 0; page < MAX_PAGES; page++) {
    const answer = await get(`${root}?${query}`, {
      headers: headersOf(settings),
      timeoutMs: context.timeoutMs,
      clock: context.clock,
      maxBytes: PAGE_BYTES,
    })
    if (!answer.ok) {
      const why =
        answer.reason === 'timeout' ? "Twilio's Content API did not answer in time" : `could not reach Twilio's Content API${answer.hint}`
      return { ok: false, detail: failure(secrets, null, why).errorMessage }
    }
    if (answer.status !== 200 || !answer.answer || !Array.isArray(answer.answer.contents)) {
      const { code, said } = refusal(answer.status, answer.answer)
      const what = answer.status === 200 ? 'an answer without its templates (contents)' : said
      return { ok: false, detail: failure(secrets, code, `Twilio answered HTTP ${answer.status}: ${what}`).errorMessage }
    }
    for (const item of answer.answer.contents) {
      const template = templateOfContent(item)
      if (template) templates.push(template)
    }
    const meta = isObject(answer.answer.meta) ? answer.answer.meta : {}
    const next = text(meta.next_page_url)
    if (!next) return { ok: true, templates }
    let following: URLSearchParams
    try {
      following = new URL(next).searchParams
    } catch {
      return { ok: false, detail: 'Twilio answered a next_page_url that is not a URL' }
    }
    if (following.toString() === query.toString()) return { ok: false, detail: 'Twilio answered the same page as the next one' }
    query = following
  }
  return { ok: false, detail: `more than ${MAX_PAGES} pages of ${CONTENT_PAGE} templates: not read` }
}

/** Why a Cloud API definition cannot be a Content template, or the Content API's definition for it. */
export function contentOfDefinition(definition: Record<string, unknown>): { definition: Record<string, unknown> } | { problem: string } {
  const name = text(definition.name)
  const language = text(definition.language)
  if (!name || !language) return { problem: 'name and language are required' }
  if (String(definition.parameter_format ?? '').toUpperCase() === 'NAMED') {
    return { problem: "parameter_format: Twilio's Content templates take numbered variables ({{1}}, {{2}}…) only, not NAMED" }
  }
  const components = (Array.isArray(definition.components) ? definition.components : []).filter(isObject)
  const find = (type: string) => components.find((c) => String(c.type ?? '').toUpperCase() === type)
  const header = find('HEADER')
  const body = find('BODY')
  const footer = find('FOOTER')
  const buttonList = (Array.isArray(find('BUTTONS')?.buttons) ? (find('BUTTONS')!.buttons as unknown[]) : []).filter(isObject)
  const bodyText = text(body?.text)
  const category = String(definition.category ?? '').toUpperCase()
  const variables: Record<string, string> = {}
  const bodyKeys = variablesIn(bodyText)
  const bodyExamples = isObject(body?.example) && Array.isArray(body.example.body_text) ? body.example.body_text[0] : undefined
  bodyKeys.forEach((key, i) => {
    variables[key] = String((Array.isArray(bodyExamples) ? bodyExamples[i] : undefined) ?? `sample ${key}`)
  })
  let next = bodyKeys.reduce((n, k) => Math.max(n, Number(k) || 0), 0)
  const fresh = (sample: string) => {
    const key = String(++next)
    variables[key] = sample
    return key
  }
  const base = { friendly_name: name, language, variables }
  if (category === 'AUTHENTICATION') {
    const otp = buttonList.find((b) => String(b.type).toUpperCase() === 'OTP')
    const kind = String(otp?.otp_type ?? 'COPY_CODE').toUpperCase()
    const auth: Record<string, unknown> = {
      add_security_recommendation: body?.add_security_recommendation === true,
      actions: [{ type: kind, copy_code_text: text(otp?.text) ?? 'Copy code' }],
    }
    if (typeof footer?.code_expiration_minutes === 'number') auth.code_expiration_minutes = footer.code_expiration_minutes
    return { definition: { ...base, variables: { '1': variables['1'] ?? '123456' }, types: { 'whatsapp/authentication': auth } } }
  }
  if (!bodyText) return { problem: 'components: a BODY with text is required' }
  const format = String(header?.format ?? '').toUpperCase()
  if (header && (format === 'TEXT' || format === '')) {
    return { problem: "components[HEADER]: Twilio's Content types have no text header; use an IMAGE, VIDEO or DOCUMENT header" }
  }
  let media: string | null = null
  if (header) {
    const handle = isObject(header.example) && Array.isArray(header.example.header_handle) ? text(header.example.header_handle[0]) : null
    if (!handle || !/^https:\/\//.test(handle)) {
      return { problem: 'components[HEADER].example.header_handle[0]: Twilio needs the media as a public https URL' }
    }
    media = handle
  }
  const actions: Record<string, unknown>[] = []
  let quickReplies = 0
  for (const [i, b] of buttonList.entries()) {
    const type = String(b.type ?? '').toUpperCase()
    const title = text(b.text) ?? ''
    if (type === 'QUICK_REPLY') {
      quickReplies++
      actions.push({ type: 'QUICK_REPLY', title, id: title })
    } else if (type === 'URL') {
      let url = text(b.url) ?? ''
      if (variablesIn(url).length > 0) {
        const example = Array.isArray(b.example) ? text(b.example[0]) : text(b.example)
        url = url.replace(/\{\{[^}]*\}\}/, `{{${fresh(example ?? 'sample')}}}`)
      }
      actions.push({ type: 'URL', title, url })
    } else if (type === 'PHONE_NUMBER') {
      actions.push({ type: 'PHONE_NUMBER', title, phone: text(b.phone_number) ?? '' })
    } else if (type === 'COPY_CODE') {
      const example = Array.isArray(b.example) ? text(b.example[0]) : text(b.example)
      actions.push({ type: 'COPY_CODE', title: 'Copy code', code: `{{${fresh(example ?? 'CODE')}}}` })
    } else {
      return { problem: `components[BUTTONS].buttons[${i}].type: ${type || 'none'} is not a button Twilio's Content types take` }
    }
  }
  const ctas = actions.length - quickReplies
  const footerText = text(footer?.text)
  let types: Record<string, unknown>
  if (media || footerText || (quickReplies > 0 && ctas > 0)) {
    // A card: media as its header, the body as its title, the footer as its subtitle, any buttons.
    const card: Record<string, unknown> = { title: bodyText }
    if (footerText) card.subtitle = footerText
    if (media) card.media = [media]
    if (actions.length > 0) card.actions = actions
    types = media && !footerText && actions.length === 0 ? { 'twilio/media': { body: bodyText, media: [media] } } : { 'twilio/card': card }
  } else if (ctas > 0) {
    types = { 'twilio/call-to-action': { body: bodyText, actions } }
  } else if (quickReplies > 0) {
    types = { 'twilio/quick-reply': { body: bodyText, actions: actions.map(({ title, id }) => ({ title, id })) } }
  } else {
    types = { 'twilio/text': { body: bodyText } }
  }
  return { definition: { ...base, types } }
}

/**
 * Creates the definition as a Content template and asks for WhatsApp's approval with its name and
 * category. Twilio answers the approval `received` (PENDING here). When the approval request fails
 * after the Content template was made, the refusal names its SID (a sync lists it as a draft).
 */
export async function submitTwilioTemplate(
  settings: TwilioSettings,
  definition: Record<string, unknown>,
  context: Context,
): Promise<TemplateSubmission> {
  const secrets = twilioSecrets(settings)
  const mapped = contentOfDefinition(definition)
  if ('problem' in mapped) return { ok: false, code: null, detail: mapped.problem, throttled: false }
  const headers = { ...headersOf(settings), 'content-type': 'application/json' }
  const unreachable = (answer: { reason: 'timeout' | 'network'; hint: string }, what: string) => ({
    ok: false as const,
    code: null,
    detail: failure(
      secrets,
      null,
      answer.reason === 'timeout'
        ? `Twilio's Content API did not answer in time (${what})`
        : `could not reach Twilio's Content API${answer.hint} (${what})`,
    ).errorMessage,
    throttled: false,
  })
  const refused = (status: number, answer: Record<string, unknown> | null, what: string) => {
    const { code, said } = refusal(status, answer)
    return {
      ok: false as const,
      code,
      detail: failure(secrets, code, `Twilio answered HTTP ${status} (${what}): ${said}`).errorMessage,
      throttled: status === 429 || code === 20429,
    }
  }
  const created = await post(`${settings.contentApiBase}/v1/Content`, {
    headers,
    body: JSON.stringify(mapped.definition),
    timeoutMs: context.timeoutMs,
    clock: context.clock,
  })
  if (!created.ok) return unreachable(created, 'creating the Content template')
  const sid = text(created.answer?.sid)
  if (created.status < 200 || created.status > 299 || !sid || !/^HX[0-9a-fA-F]{32}$/.test(sid)) {
    return refused(created.status, created.answer, 'creating the Content template')
  }
  const category = String(definition.category ?? '').toUpperCase()
  const approval = await post(`${settings.contentApiBase}/v1/Content/${sid}/ApprovalRequests/whatsapp`, {
    headers,
    body: JSON.stringify({ name: definition.name, category }),
    timeoutMs: context.timeoutMs,
    clock: context.clock,
  })
  const what = `asking WhatsApp's approval of Content template ${sid}`
  if (!approval.ok) return unreachable(approval, what)
  if (approval.status < 200 || approval.status > 299) return refused(approval.status, approval.answer, what)
  const answered = approval.answer ?? {}
  return {
    ok: true,
    ref: sid,
    status: statusOfTwilio(text(answered.status) ?? 'received'),
    category: text(answered.category) ? categoryOfTwilio(text(answered.category), null) : null,
  }
}

/**
 * A send's values: the body's variables by key, each button's value by its index (0-based among the
 * template's buttons), and the header media URL's variable (what follows its static prefix: twilioMediaSlot).
 */
export type TemplateValues = { variables: Record<string, string>; buttons?: { index: number; value: string }[]; media?: string }

/**
 * A Twilio Content template's header media (`twilio_media` on its HEADER, as componentsOfContent keeps
 * it): null without one; `key` null when the URL is fixed (the template's own file); else the variable
 * a send fills and the static text around it. Twilio's media variable is the URL's suffix ("Variable
 * media urls should include a valid media URL suffix in the variable declaration"): the send's URL is
 * `prefix` + the variable + `suffix` (usually empty).
 */
export function twilioMediaSlot(
  components: readonly unknown[],
): { url: string; key: string | null; prefix: string; suffix: string } | null {
  const header = components.filter(isObject).find((c) => String(c.type ?? '').toUpperCase() === 'HEADER')
  const url = text(header?.twilio_media)
  if (!url) return null
  const m = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/.exec(url)
  if (!m) return { url, key: null, prefix: url, suffix: '' }
  return { url, key: m[1]!, prefix: url.slice(0, m.index), suffix: url.slice(m.index + m[0].length) }
}

/**
 * The ContentVariables of a send of a Twilio template: the body's variables under their own numbers,
 * and each button's value under its variable: the one it carries (`twilio_variable`, a template listed
 * from Twilio), else, for a template kept as it was submitted, the number contentOfDefinition gave it
 * (after the body's highest, in the buttons' order). An authentication template's code button takes
 * no variable of its own (the body's `1` is the code). A header whose media URL has a variable takes
 * `values.media` under it.
 */
export function twilioContentVariables(components: readonly unknown[], values: TemplateValues): Record<string, string> {
  const out: Record<string, string> = { ...values.variables }
  const list = components.filter(isObject)
  const body = list.find((c) => String(c.type ?? '').toUpperCase() === 'BODY')
  let next = variablesIn(body?.text).reduce((n, k) => Math.max(n, Number(k) || 0), 0)
  const buttonsComponent = list.find((c) => String(c.type ?? '').toUpperCase() === 'BUTTONS')
  const buttons = (Array.isArray(buttonsComponent?.buttons) ? buttonsComponent.buttons : []) as unknown[]
  buttons.forEach((b, index) => {
    if (!isObject(b)) return
    const type = String(b.type ?? '').toUpperCase()
    const takes = (type === 'URL' && variablesIn(b.url).length > 0) || type === 'COPY_CODE'
    if (!takes) return
    const key = text(b.twilio_variable) ?? String(++next)
    const given = values.buttons?.find((x) => x.index === index)
    if (given) out[key] = given.value
  })
  // The header media URL's variable (a Content template listed from Twilio carries its own number).
  const slot = twilioMediaSlot(components)
  if (slot?.key && values.media !== undefined) out[slot.key] = values.media
  return out
}

/**
 * Deletes a Content template (`DELETE /v1/Content/{sid}`, answered 204): it and its WhatsApp approval
 * are gone. Twilio edits none: a changed template is a new Content template, submitted again.
 */
export async function removeTwilioTemplate(
  settings: TwilioSettings,
  template: { ref: string },
  context: Context,
): Promise<TemplateChangeAnswer> {
  const secrets = twilioSecrets(settings)
  const what = `deleting Content template ${template.ref}`
  if (!/^HX[0-9a-fA-F]{32}$/.test(template.ref))
    return { ok: false, code: null, detail: `${template.ref} is not a Content SID`, throttled: false }
  const answer = await del(`${settings.contentApiBase}/v1/Content/${template.ref}`, {
    headers: headersOf(settings),
    timeoutMs: context.timeoutMs,
    clock: context.clock,
  })
  if (!answer.ok) {
    const why =
      answer.reason === 'timeout'
        ? `Twilio's Content API did not answer in time (${what})`
        : `could not reach Twilio's Content API${answer.hint} (${what})`
    return { ok: false, code: null, detail: failure(secrets, null, why).errorMessage, throttled: false }
  }
  if (answer.status === 204 || answer.status === 200) return { ok: true }
  const { code, said } = refusal(answer.status, answer.answer)
  return {
    ok: false,
    code,
    detail: failure(secrets, code, `Twilio answered HTTP ${answer.status} (${what}): ${said}`).errorMessage,
    throttled: answer.status === 429 || code === 20429,
  }
}

export const twilioTemplates: WaTemplateSupport<TwilioSettings> = {
  // A Twilio sender reaches its Content templates with its own account's credentials: always.
  unreachable: () => null,
  list: listTwilioTemplates,
  submit: submitTwilioTemplate,
  remove: removeTwilioTemplate,
  definitionProblem: (definition) => {
    const mapped = contentOfDefinition(definition)
    return 'problem' in mapped ? mapped.problem : null
  },
}
