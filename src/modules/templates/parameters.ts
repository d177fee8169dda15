// What a send of a WhatsApp template must fill (issue 30), read from the template's Cloud API
// components: the body's parameters (`{{1}}`, `{{2}}`… or `{{order_id}}`), the header's (one text
// parameter, or the media an IMAGE / VIDEO / DOCUMENT header shows) and the buttons' (a URL button's
// `{{1}}` suffix, a COPY_CODE button's code, an authentication template's one-time code).
//
// The components are read as Meta keeps them (types in upper case; a synced template's may be in any
// case): this reads, it does not judge (components.ts validates a definition before it is stored).
// The integrator's API shows the result (`parameters`), the send checks its `variables`, `header` and
// `buttons` against it and builds the provider's payload from it.

import type { WaTemplate } from './catalog'

export type BodyParameter = {
  /** `"1"`, `"2"`… for a positional template, the parameter's name for a named one. */
  key: string
  example?: string
}

export type HeaderParameter =
  | { type: 'text'; key: string; example?: string }
  /**
   * A media header: the send gives its `link` (or `media_id`). `link_prefix`: a Twilio template's media URL
   * up to its variable, which the link must start with (the rest fills the variable); `link_suffix` what
   * must end it, when the URL goes on after its variable.
   */
  | { type: 'image' | 'video' | 'document'; example?: string; link_prefix?: string; link_suffix?: string }

export type ButtonParameter = {
  /** The button's position among the template's buttons (0-based), as the send's `buttons[].index` names it. */
  index: number
  /**
   * What the send's component is: `url` (a URL button's `{{1}}` suffix, or an authentication template's
   * one-time code, which Meta takes as a URL button's parameter) or `copy_code` (a coupon code).
   */
  sub_type: 'url' | 'copy_code'
  /** For an authentication template's button: `copy_code`, `one_tap` or `zero_tap`; the value is the code. */
  otp_type?: 'copy_code' | 'one_tap' | 'zero_tap'
  example?: string
}

export type TemplateParameters = {
  body: BodyParameter[]
  /** null: no header, or a text header without a parameter. */
  header: HeaderParameter | null
  buttons: ButtonParameter[]
}

/** `{{1}}` or `{{order_id}}` (spaces inside the braces tolerated, as Meta's own list shows none). */
const PARAMETER = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g

/** The distinct parameters of a text, in the order they first appear. */
export function parameterKeys(text: unknown): string[] {
  if (typeof text !== 'string') return []
  const keys: string[] = []
  for (const m of text.matchAll(PARAMETER)) if (!keys.includes(m[1]!)) keys.push(m[1]!)
  return keys
}

const upper = (v: unknown) => (typeof v === 'string' ? v.toUpperCase() : '')
const asObject = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {}
const asString = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined)

/** The component of that type (`HEADER`, `BODY`, `FOOTER`, `BUTTONS`), or undefined. */
export function componentOf(components: readonly unknown[], type: string): Record<string, unknown> | undefined {
  const found = components.find((c) => upper(asObject(c).type) === type)
  return found === undefined ? undefined : asObject(found)
}

/** The example of each key: named `[{param_name, example}]`, or positional values in order. */
function examplesOf(keys: string[], named: unknown, positional: unknown): Map<string, string> {
  const out = new Map<string, string>()
  if (Array.isArray(named)) {
    for (const e of named) {
      const o = asObject(e)
      const name = asString(o.param_name)
      const example = asString(o.example)
      if (name !== undefined && example !== undefined) out.set(name, example)
    }
  }
  if (Array.isArray(positional)) {
    keys.forEach((key, i) => {
      const example = asString(positional[i])
      if (example !== undefined && !out.has(key)) out.set(key, example)
    })
  }
  return out
}

const withExample = <T extends object>(p: T, example: string | undefined): T => (example === undefined ? p : { ...p, example })

function bodyParameters(body: Record<string, unknown> | undefined): BodyParameter[] {
  if (!body) return []
  const keys = parameterKeys(body.text)
  const example = asObject(body.example)
  const rows = Array.isArray(example.body_text) ? example.body_text[0] : undefined
  const examples = examplesOf(keys, example.body_text_named_params, rows)
  return keys.map((key) => withExample({ key }, examples.get(key)))
}

function headerParameter(header: Record<string, unknown> | undefined, provider: string | undefined): HeaderParameter | null {
  if (!header) return null
  const format = upper(header.format)
  const example = asObject(header.example)
  if (format === 'IMAGE' || format === 'VIDEO' || format === 'DOCUMENT') {
    // A Twilio Content template's media is part of the template (providers/twilio/templates.ts): nothing to
    // fill, unless its URL has a variable (the send's link fills it, fill.ts). One kept as it was submitted
    // (no `twilio_media` until a sync) has the sample it was submitted with as its media: fixed too.
    const twilioMedia = typeof header.twilio_media === 'string' ? header.twilio_media : null
    if (twilioMedia !== null ? parameterKeys(twilioMedia).length === 0 : provider === 'twilio') return null
    const handle = Array.isArray(example.header_handle) ? asString(example.header_handle[0]) : undefined
    const media = withExample({ type: format.toLowerCase() as 'image' | 'video' | 'document' }, handle)
    const variable = twilioMedia === null ? null : /\{\{\s*[A-Za-z0-9_]+\s*\}\}/.exec(twilioMedia)
    if (!variable) return media
    const suffix = twilioMedia!.slice(variable.index + variable[0].length)
    return { ...media, link_prefix: twilioMedia!.slice(0, variable.index), ...(suffix ? { link_suffix: suffix } : {}) }
  }
  if (format !== 'TEXT' && format !== '') return null
  const [key] = parameterKeys(header.text)
  if (key === undefined) return null
  const examples = examplesOf([key], example.header_text_named_params, example.header_text)
  return withExample({ type: 'text' as const, key }, examples.get(key))
}

function buttonParameters(buttons: Record<string, unknown> | undefined): ButtonParameter[] {
  const list = Array.isArray(buttons?.buttons) ? buttons.buttons : []
  const out: ButtonParameter[] = []
  list.forEach((b, index) => {
    const button = asObject(b)
    const type = upper(button.type)
    if (type === 'URL') {
      if (parameterKeys(button.url).length === 0) return
      const example = Array.isArray(button.example) ? asString(button.example[0]) : asString(button.example)
      out.push(withExample({ index, sub_type: 'url' as const }, example))
    } else if (type === 'COPY_CODE') {
      const example = Array.isArray(button.example) ? asString(button.example[0]) : asString(button.example)
      out.push(withExample({ index, sub_type: 'copy_code' as const }, example))
    } else if (type === 'OTP') {
      const otp = upper(button.otp_type)
      const otp_type = otp === 'ONE_TAP' ? 'one_tap' : otp === 'ZERO_TAP' ? 'zero_tap' : 'copy_code'
      out.push({ index, sub_type: 'url', otp_type })
    }
  })
  return out
}

/** What a send of the template must fill: every body, header and button parameter, with Meta's examples. */
export function parametersOf(t: Pick<WaTemplate, 'components'> & { provider?: string }): TemplateParameters {
  const components = Array.isArray(t.components) ? t.components : []
  return {
    body: bodyParameters(componentOf(components, 'BODY')),
    header: headerParameter(componentOf(components, 'HEADER'), t.provider),
    buttons: buttonParameters(componentOf(components, 'BUTTONS')),
  }
}
