// A WhatsApp template's definition as the Cloud API takes it (issue 30): `name`, `language`,
// `category`, `parameter_format` and `components`, checked against Meta's rules before it is stored or
// submitted, so that what Meta would refuse is refused here, at once, naming the part
// (`components[2].buttons[0].url: ...`). What passes is kept and submitted as given (components
// untouched); only the category and the parameter format are stored in lower case.
//
// The rules (Meta's "Template components" reference): a name of lowercase letters, digits and
// underscores, at most 512 characters; a HEADER of TEXT (at most 60 characters, at most one parameter)
// or a media (IMAGE, VIDEO, DOCUMENT, with an uploaded example handle); a BODY of at most 1024
// characters with positional parameters `{{1}}`, `{{2}}`... numbered from 1 without gaps, or named
// ones `{{order_id}}` (parameter_format NAMED), never at its very start or end, each with an example; a
// FOOTER of at most 60 characters without parameters; BUTTONS, at most 10: QUICK_REPLY, URL (an
// optional `{{1}}` only at the end of the URL, with an example), PHONE_NUMBER, COPY_CODE, and for
// authentication templates one OTP button (COPY_CODE, ONE_TAP or ZERO_TAP). Meta's review judges the
// rest (wording, category): a definition that passes here may still be rejected there.

import { valueOf } from '../../http/values'
import type { TemplateCategory } from './catalog'

export const LIMITS = {
  name: 512,
  headerText: 60,
  bodyText: 1024,
  footerText: 60,
  buttons: 10,
  buttonText: 25,
  url: 2000,
  phoneNumber: 20,
  couponCode: 15,
  urlButtons: 2,
  phoneButtons: 1,
  copyCodeButtons: 1,
  supportedApps: 5,
  packageName: 224,
} as const

export type TemplateDefinition = {
  name: string
  language: string
  category: TemplateCategory
  parameterFormat: 'positional' | 'named'
  /** The Cloud API's components as given (what Meta is sent and what is stored). */
  components: Record<string, unknown>[]
}

/** A definition that passed, or the first problem with it, naming its part. */
export type CheckedDefinition = { ok: true; value: TemplateDefinition } | { ok: false; problem: string }

class Refused extends Error {}
const refuse = (at: string, what: string): never => {
  throw new Refused(`${at}: ${what}`)
}

type Obj = Record<string, unknown>
const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v)
const upper = (v: unknown) => (typeof v === 'string' ? v.toUpperCase() : '')

function object(v: unknown, at: string): Obj {
  if (!isObject(v)) refuse(at, 'must be an object')
  return v as Obj
}

function text(v: unknown, at: string, max: number): string {
  if (typeof v !== 'string') return refuse(at, 'must be a string')
  if (v.trim().length === 0) refuse(at, 'must not be empty')
  if (v.length > max) refuse(at, `must be at most ${max} characters`)
  return v
}

function oneOf<T extends string>(v: unknown, at: string, words: readonly T[]): T {
  const w = upper(v)
  if (!(words as readonly string[]).includes(w)) refuse(at, `must be ${words.slice(0, -1).join(', ')} or ${words.at(-1)}`)
  return w as T
}

/** Every `{{...}}` of a text, as written between the braces. */
const PLACEHOLDER = /\{\{([^{}]*)\}\}/g
const POSITIONAL = /^[1-9][0-9]*$/
const NAMED = /^[a-z_][a-z0-9_]*$/

/**
 * The parameters of a text in order of appearance (repeats included), checked against the format:
 * positional `{{1}}`.. or named `{{order_id}}`; a brace that opens or closes no parameter is refused.
 */
function placeholders(value: string, at: string, format: 'positional' | 'named'): string[] {
  const found = [...value.matchAll(PLACEHOLDER)].map((m) => m[1]!)
  if (/\{\{|\}\}/.test(value.replaceAll(PLACEHOLDER, ''))) refuse(at, 'has "{{" or "}}" that is not a parameter like {{1}} or {{name}}')
  for (const p of found) {
    if (format === 'positional' && !POSITIONAL.test(p)) {
      refuse(
        at,
        NAMED.test(p)
          ? `{{${p}}} is a named parameter: parameter_format must be NAMED`
          : `{{${p}}} is not a parameter: positional parameters are {{1}}, {{2}}...`,
      )
    }
    if (format === 'named' && !NAMED.test(p)) {
      refuse(
        at,
        POSITIONAL.test(p)
          ? `{{${p}}} is positional but parameter_format is NAMED: name it ({{order_id}})`
          : `{{${p}}} is not a parameter name: lowercase letters, digits and underscores, not starting with a digit`,
      )
    }
  }
  return found
}

/** Positional parameters must be 1, 2, ... n, each at least once. */
function sequential(params: string[], at: string) {
  const numbers = [...new Set(params.map(Number))].sort((a, b) => a - b)
  numbers.forEach((n, i) => {
    if (n !== i + 1)
      refuse(at, `positional parameters must be numbered {{1}} to {{${numbers.length}}} without gaps ({{${i + 1}}} is missing)`)
  })
}

/** The example of each parameter: positional values in order, or named `[{param_name, example}]`. */
function examples(
  keys: string[],
  example: unknown,
  at: string,
  format: 'positional' | 'named',
  positionalField: string,
  namedField: string,
  nested: boolean,
) {
  if (keys.length === 0) return
  const ex = object(example, `${at}.example`)
  if (format === 'positional') {
    const field = `${at}.example.${positionalField}`
    let values = ex[positionalField]
    if (!Array.isArray(values)) return refuse(field, `must give an example of each parameter (${keys.length})`)
    if (nested) {
      if (!Array.isArray(values[0])) refuse(`${field}[0]`, 'must be an array of examples, one per parameter')
      values = values[0]
    }
    const list = values as unknown[]
    const at0 = nested ? `${field}[0]` : field
    if (list.length !== keys.length) refuse(at0, `must give ${keys.length} example${keys.length === 1 ? '' : 's'}, one per parameter`)
    list.forEach((v, i) => text(v, `${at0}[${i}]`, LIMITS.bodyText))
    return
  }
  const field = `${at}.example.${namedField}`
  const values = ex[namedField]
  if (!Array.isArray(values)) return refuse(field, `must give an example of each parameter (${keys.join(', ')})`)
  const seen = new Set<string>()
  values.forEach((v, i) => {
    const o = object(v, `${field}[${i}]`)
    const name = text(o.param_name, `${field}[${i}].param_name`, LIMITS.bodyText)
    if (!keys.includes(name)) refuse(`${field}[${i}].param_name`, `{{${name}}} is not a parameter of the text`)
    if (seen.has(name)) refuse(`${field}[${i}].param_name`, `{{${name}}} is given twice`)
    seen.add(name)
    text(o.example, `${field}[${i}].example`, LIMITS.bodyText)
  })
  for (const key of keys) if (!seen.has(key)) refuse(field, `must give an example of {{${key}}}`)
}

type Context = { format: 'positional' | 'named'; category: TemplateCategory }

function header(c: Obj, at: string, ctx: Context) {
  if (ctx.category === 'authentication') refuse(at, 'an authentication template has no header')
  const format = oneOf(c.format, `${at}.format`, ['TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT'] as const)
  if (format !== 'TEXT') {
    if (c.text !== undefined) refuse(`${at}.text`, `a media header (${format}) has no text`)
    const ex = object(c.example, `${at}.example`)
    const handles = ex.header_handle
    if (!Array.isArray(handles) || handles.length === 0)
      refuse(`${at}.example.header_handle`, `must name an uploaded example ${format.toLowerCase()} (Meta's upload handle)`)
    ;(handles as unknown[]).forEach((h, i) => text(h, `${at}.example.header_handle[${i}]`, LIMITS.url))
    return
  }
  const value = text(c.text, `${at}.text`, LIMITS.headerText)
  const params = placeholders(value, `${at}.text`, ctx.format)
  if (params.length > 1) refuse(`${at}.text`, 'a header has at most one parameter')
  if (ctx.format === 'positional' && params[0] !== undefined && params[0] !== '1') refuse(`${at}.text`, "a header's parameter is {{1}}")
  examples(params, c.example, at, ctx.format, 'header_text', 'header_text_named_params', false)
}

function body(c: Obj, at: string, ctx: Context) {
  if (ctx.category === 'authentication') {
    // Meta writes the body itself ("<code> is your verification code."), optionally with its security recommendation.
    if (c.add_security_recommendation !== undefined && typeof c.add_security_recommendation !== 'boolean')
      refuse(`${at}.add_security_recommendation`, 'must be true or false')
    if (c.text === undefined) return
  }
  const value = text(c.text, `${at}.text`, LIMITS.bodyText)
  const params = placeholders(value, `${at}.text`, ctx.format)
  if (ctx.format === 'positional') sequential(params, `${at}.text`)
  const trimmed = value.trim()
  if (params.length > 0 && (/^\{\{[^{}]*\}\}/.test(trimmed) || /\{\{[^{}]*\}\}$/.test(trimmed)))
    refuse(`${at}.text`, 'a parameter may not be at the very start or end of the body (Meta refuses it)')
  if (ctx.category === 'authentication') return
  examples([...new Set(params)], c.example, at, ctx.format, 'body_text', 'body_text_named_params', true)
}

function footer(c: Obj, at: string, ctx: Context) {
  if (ctx.category === 'authentication') {
    const minutes = c.code_expiration_minutes
    if (minutes !== undefined && (!Number.isInteger(minutes) || (minutes as number) < 1 || (minutes as number) > 90))
      refuse(`${at}.code_expiration_minutes`, 'must be a whole number of minutes from 1 to 90')
    if (c.text !== undefined) refuse(`${at}.text`, "an authentication template's footer has no text (Meta writes it)")
    return
  }
  const value = text(c.text, `${at}.text`, LIMITS.footerText)
  if (/\{\{|\}\}/.test(value)) refuse(`${at}.text`, 'a footer has no parameters')
}

const BUTTON_TYPES = ['QUICK_REPLY', 'URL', 'PHONE_NUMBER', 'COPY_CODE', 'OTP'] as const

function url(b: Obj, at: string) {
  text(b.text, `${at}.text`, LIMITS.buttonText)
  const value = text(b.url, `${at}.url`, LIMITS.url)
  const params = [...value.matchAll(PLACEHOLDER)].map((m) => m[1]!)
  if (
    params.length > 1 ||
    (params.length === 1 && (params[0] !== '1' || !value.endsWith('{{1}}'))) ||
    /\{\{|\}\}/.test(value.replace(/\{\{1\}\}$/, ''))
  )
    refuse(`${at}.url`, 'may have one parameter, {{1}}, only at its end')
  let parsed: URL | null = null
  try {
    parsed = new URL(value.replace(/\{\{1\}\}$/, 'x'))
  } catch {
    parsed = null
  }
  if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')) refuse(`${at}.url`, 'must be an absolute http or https URL')
  if (params.length === 0) {
    if (b.example !== undefined) refuse(`${at}.example`, 'a URL without a parameter has no example')
    return
  }
  if (!Array.isArray(b.example) || b.example.length !== 1)
    return refuse(`${at}.example`, 'must give one example: the full URL with its parameter filled')
  text(b.example[0], `${at}.example[0]`, LIMITS.url)
}

const PACKAGE = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/
const SIGNATURE = /^[A-Za-z0-9+/=]{11}$/

function otp(b: Obj, at: string) {
  const kind = oneOf(b.otp_type, `${at}.otp_type`, ['COPY_CODE', 'ONE_TAP', 'ZERO_TAP'] as const)
  if (b.text !== undefined) text(b.text, `${at}.text`, LIMITS.buttonText)
  if (b.autofill_text !== undefined) text(b.autofill_text, `${at}.autofill_text`, LIMITS.buttonText)
  if (kind === 'COPY_CODE') return
  const apps = b.supported_apps
  if (!Array.isArray(apps) || apps.length === 0 || apps.length > LIMITS.supportedApps)
    return refuse(`${at}.supported_apps`, `a ${kind} button names 1 to ${LIMITS.supportedApps} apps ({package_name, signature_hash})`)
  apps.forEach((a, i) => {
    const app = object(a, `${at}.supported_apps[${i}]`)
    const name = text(app.package_name, `${at}.supported_apps[${i}].package_name`, LIMITS.packageName)
    if (!PACKAGE.test(name)) refuse(`${at}.supported_apps[${i}].package_name`, 'must be an Android package name like com.example.app')
    if (typeof app.signature_hash !== 'string' || !SIGNATURE.test(app.signature_hash))
      refuse(`${at}.supported_apps[${i}].signature_hash`, 'must be 11 characters of letters, digits, +, / or =')
  })
  if (kind === 'ZERO_TAP' && b.zero_tap_terms_accepted !== true)
    refuse(`${at}.zero_tap_terms_accepted`, "must be true: a ZERO_TAP button needs Meta's zero-tap terms accepted")
}

function buttons(c: Obj, at: string, ctx: Context) {
  const list = c.buttons
  if (!Array.isArray(list) || list.length === 0) return refuse(`${at}.buttons`, 'must be a list of 1 to 10 buttons')
  if (list.length > LIMITS.buttons) refuse(`${at}.buttons`, `at most ${LIMITS.buttons} buttons`)
  const types = list.map((b, i) => {
    const at1 = `${at}.buttons[${i}]`
    const button = object(b, at1)
    const type = oneOf(button.type, `${at1}.type`, BUTTON_TYPES)
    if (ctx.category === 'authentication' && type !== 'OTP') refuse(`${at1}.type`, "an authentication template's button is OTP")
    if (ctx.category !== 'authentication' && type === 'OTP') refuse(`${at1}.type`, 'an OTP button is only for an authentication template')
    if (type === 'QUICK_REPLY' || type === 'PHONE_NUMBER') text(button.text, `${at1}.text`, LIMITS.buttonText)
    if (type === 'PHONE_NUMBER') {
      const phone = text(button.phone_number, `${at1}.phone_number`, LIMITS.phoneNumber)
      if (!/^\+?[0-9]{5,}$/.test(phone)) refuse(`${at1}.phone_number`, 'must be a phone number in international form (+ and digits)')
    }
    if (type === 'URL') url(button, at1)
    if (type === 'COPY_CODE') text(button.example, `${at1}.example`, LIMITS.couponCode)
    if (type === 'OTP') otp(button, at1)
    return type
  })
  const count = (t: string) => types.filter((x) => x === t).length
  const most = (t: string, n: number, what: string) => {
    if (count(t) > n) refuse(`${at}.buttons[${types.lastIndexOf(t as never)}]`, `at most ${n} ${what} button${n === 1 ? '' : 's'}`)
  }
  most('URL', LIMITS.urlButtons, 'URL')
  most('PHONE_NUMBER', LIMITS.phoneButtons, 'PHONE_NUMBER')
  most('COPY_CODE', LIMITS.copyCodeButtons, 'COPY_CODE')
  most('OTP', 1, 'OTP')
  // Quick replies are one group, before or after the other buttons, never interleaved with them.
  const groups = types.map((t) => t === 'QUICK_REPLY').filter((q, i, all) => i === 0 || q !== all[i - 1]).length
  if (groups > 2) refuse(`${at}.buttons`, 'QUICK_REPLY buttons must be grouped together, before or after the other buttons')
}

const COMPONENT_TYPES = ['HEADER', 'BODY', 'FOOTER', 'BUTTONS'] as const

function definition(input: unknown): TemplateDefinition {
  const d = object(input, 'definition')
  const name = text(d.name, 'name', LIMITS.name)
  if (!/^[a-z0-9_]+$/.test(name)) refuse('name', 'only lowercase letters, digits and underscores')
  if (typeof d.language !== 'string' || !/^[a-z]{2,3}(_[A-Za-z]{2,4})?$/.test(d.language))
    refuse('language', 'must be a WhatsApp language code like en, en_US or pt_BR')
  const category = oneOf(d.category, 'category', ['MARKETING', 'UTILITY', 'AUTHENTICATION'] as const).toLowerCase() as TemplateCategory
  const format =
    d.parameter_format === undefined
      ? 'positional'
      : (oneOf(d.parameter_format, 'parameter_format', ['POSITIONAL', 'NAMED'] as const).toLowerCase() as 'positional' | 'named')
  const list = d.components
  if (!Array.isArray(list) || list.length === 0) return refuse('components', 'must be a list of components, a BODY at least')
  const ctx: Context = { format, category }
  const seen = new Set<string>()
  list.forEach((c, i) => {
    const at = `components[${i}]`
    const component = object(c, at)
    const type = oneOf(component.type, `${at}.type`, COMPONENT_TYPES)
    if (seen.has(type)) refuse(`${at}.type`, `a template has one ${type}`)
    seen.add(type)
    if (type === 'HEADER') header(component, at, ctx)
    if (type === 'BODY') body(component, at, ctx)
    if (type === 'FOOTER') footer(component, at, ctx)
    if (type === 'BUTTONS') buttons(component, at, ctx)
  })
  if (!seen.has('BODY')) refuse('components', 'must have a BODY')
  if (category === 'authentication' && !seen.has('BUTTONS')) refuse('components', 'an authentication template has an OTP button (BUTTONS)')
  return { name, language: d.language as string, category, parameterFormat: format, components: list as Obj[] }
}

/** Checks a definition in the Cloud API's own JSON: the definition, or the first problem naming its part. */
export function checkDefinition(input: unknown): CheckedDefinition {
  try {
    return { ok: true, value: definition(input) }
  } catch (e) {
    if (e instanceof Refused) return { ok: false, problem: e.message }
    throw e
  }
}

/** The definition, or 422 VALIDATION_ERROR naming the part (for the admin API's creation). */
export function definitionOf(input: unknown): TemplateDefinition {
  return valueOf(checkDefinition(input))
}
