// The dashboard's field-by-field template editor (issue 30): what the operator types in the form's
// fields (name, language, category, parameter format, header, body with one example per parameter,
// footer, buttons) made into the Cloud API's template JSON, the same the JSON textarea takes, so that
// components.ts judges both alike; and a problem it names (`components[3].buttons[1].url: ...`) led
// back to the field it is about, where the form shows it. Pure: no request, no database.

import { parameterKeys } from './parameters'

/** The button kinds the editor offers, as the Cloud API names them. */
export const BUTTON_TYPES = ['QUICK_REPLY', 'URL', 'PHONE_NUMBER', 'COPY_CODE', 'OTP'] as const
export const HEADER_FORMATS = ['', 'TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT'] as const
export const OTP_TYPES = ['COPY_CODE', 'ONE_TAP', 'ZERO_TAP'] as const
/** Meta's most buttons a template has. */
export const MAX_BUTTONS = 10

/** The form's fields of the template as a whole and of its header, body and footer. */
export const TEMPLATE_FIELDS = [
  'name',
  'language',
  'category',
  'parameter_format',
  'header_format',
  'header_text',
  'header_example',
  'body_text',
  'body_examples',
  'footer_text',
] as const

/** The fields of button `i` (0-based). */
export const buttonFields = (i: number) => ({
  type: `button_type_${i}`,
  text: `button_text_${i}`,
  url: `button_url_${i}`,
  example: `button_example_${i}`,
  phone: `button_phone_${i}`,
  code: `button_code_${i}`,
  otp: `button_otp_${i}`,
})

/** How many button rows the form has (its `buttons` field), within 0 and MAX_BUTTONS. */
export function buttonCount(read: (name: string) => string): number {
  const n = Number(read('buttons'))
  return Number.isInteger(n) ? Math.min(Math.max(n, 0), MAX_BUTTONS) : 0
}

/** Every field name of a form with `count` buttons (what the form sends back, kept when it is shown again). */
export const editorNames = (count: number): string[] => [
  ...TEMPLATE_FIELDS,
  'buttons',
  ...Array.from({ length: count }, (_, i) => Object.values(buttonFields(i))).flat(),
]

/** The examples typed one a line (blank lines skipped). */
const lines = (text: string) =>
  text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '')

/** A parameter's examples in the Cloud API's shape: positional values in order, or named `{param_name, example}`. */
function example(keys: string[], values: string[], named: boolean, positional: string, namedField: string, nested: boolean) {
  if (keys.length === 0) return {}
  // Those given only: a parameter without its example is named by components.ts ("must give an example of {{order_id}}").
  if (named) return { example: { [namedField]: keys.slice(0, values.length).map((k, i) => ({ param_name: k, example: values[i]! })) } }
  return { example: { [positional]: nested ? [values] : values } }
}

/**
 * The Cloud API's template JSON the fields make: `name`, `language`, `category`, `parameter_format`
 * and the components (a HEADER when a format is chosen, the BODY, a FOOTER when it has a text, BUTTONS
 * when there is one). Nothing is judged here: components.ts does, as for the JSON textarea.
 */
export function definitionFromFields(read: (name: string) => string): Record<string, unknown> {
  const v = (name: string) => read(name).trim()
  const named = v('parameter_format') === 'NAMED'
  const category = v('category')
  const components: Record<string, unknown>[] = []

  const format = v('header_format')
  if (format === 'TEXT') {
    const text = read('header_text')
    components.push({
      type: 'HEADER',
      format,
      text,
      ...example(parameterKeys(text), [v('header_example')], named, 'header_text', 'header_text_named_params', false),
    })
  } else if (format !== '') {
    components.push({ type: 'HEADER', format, example: { header_handle: [v('header_example')] } })
  }

  const bodyText = read('body_text')
  if (category === 'AUTHENTICATION' && bodyText.trim() === '') {
    // Meta writes an authentication template's body ("<code> is your verification code.").
    components.push({ type: 'BODY' })
  } else {
    const keys = parameterKeys(bodyText)
    components.push({
      type: 'BODY',
      text: bodyText,
      ...example(keys, lines(read('body_examples')), named, 'body_text', 'body_text_named_params', true),
    })
  }

  const footer = read('footer_text')
  if (footer.trim() !== '') components.push({ type: 'FOOTER', text: footer })

  const buttons: Record<string, unknown>[] = []
  for (let i = 0; i < buttonCount(read); i++) {
    const f = buttonFields(i)
    const type = v(f.type)
    const text = read(f.text)
    if (type === 'QUICK_REPLY') buttons.push({ type, text })
    else if (type === 'URL') {
      const url = v(f.url)
      buttons.push({ type, text, url, ...(parameterKeys(url).length > 0 ? { example: [v(f.example)] } : {}) })
    } else if (type === 'PHONE_NUMBER') buttons.push({ type, text, phone_number: v(f.phone) })
    else if (type === 'COPY_CODE') buttons.push({ type, example: v(f.code) })
    else if (type === 'OTP') buttons.push({ type, otp_type: v(f.otp) || 'COPY_CODE', ...(text.trim() ? { text } : {}) })
    else buttons.push({ type })
  }
  if (buttons.length > 0) components.push({ type: 'BUTTONS', buttons })

  return {
    name: v('name'),
    language: v('language'),
    category,
    parameter_format: named ? 'NAMED' : 'POSITIONAL',
    components,
  }
}

const BUTTON_PARTS: Record<string, keyof ReturnType<typeof buttonFields>> = {
  type: 'type',
  text: 'text',
  url: 'url',
  phone_number: 'phone',
  otp_type: 'otp',
  supported_apps: 'otp',
  zero_tap_terms_accepted: 'otp',
  autofill_text: 'text',
}

/**
 * The field a problem of components.ts is about (its message starts with the part: `name: ...`,
 * `components[1].example.body_text[0]: ...`), in the definition the fields made; null when it names
 * the template as a whole (shown at the top of the form).
 */
export function fieldOfProblem(message: string, definition: Record<string, unknown>): string | null {
  const part = /^([^:\s]+): /.exec(message)?.[1]
  if (!part) return null
  if ((['name', 'language', 'category', 'parameter_format'] as string[]).includes(part)) return part
  const at = /^components\[(\d+)\](.*)$/.exec(part)
  if (!at) return null
  const components = Array.isArray(definition.components) ? (definition.components as Record<string, unknown>[]) : []
  const type = String(components[Number(at[1])]?.type ?? '')
  const rest = at[2]!
  if (type === 'HEADER')
    return rest.startsWith('.format') ? 'header_format' : rest.startsWith('.example') ? 'header_example' : 'header_text'
  if (type === 'BODY') return rest.startsWith('.example') ? 'body_examples' : 'body_text'
  if (type === 'FOOTER') return 'footer_text'
  if (type === 'BUTTONS') {
    const button = /^\.buttons\[(\d+)\]\.?([a-z_]*)/.exec(rest)
    if (!button) return 'buttons'
    const i = Number(button[1])
    const f = buttonFields(i)
    const kind = String(((components[Number(at[1])]!.buttons as Record<string, unknown>[] | undefined)?.[i] ?? {}).type ?? '')
    if (button[2] === 'example') return kind === 'COPY_CODE' ? f.code : f.example
    return f[BUTTON_PARTS[button[2]!] ?? 'type']
  }
  return null
}
