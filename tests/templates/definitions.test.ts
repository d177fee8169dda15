// WhatsApp template definitions (issue 30): what a send must fill, read from the Cloud API's components
// (parametersOf), as the integrator's API shows it and the send checks it.

import { describe, expect, test } from 'bun:test'
import { checkDefinition } from '../../src/modules/templates/components'
import { parametersOf } from '../../src/modules/templates/parameters'

describe('parametersOf', () => {
  test('positional body, text header with a parameter, URL and COPY_CODE buttons, with Meta examples', () => {
    const components = [
      { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['A-17'] } },
      {
        type: 'BODY',
        text: 'Hello {{1}}, your order {{2}} ships on {{3}}. Thanks {{1}}!',
        example: { body_text: [['Ana', 'A-17', 'Monday']] },
      },
      { type: 'FOOTER', text: 'Reply STOP to stop' },
      {
        type: 'BUTTONS',
        buttons: [
          { type: 'QUICK_REPLY', text: 'Thanks' },
          { type: 'URL', text: 'Track', url: 'https://example.com/track/{{1}}', example: ['https://example.com/track/A-17'] },
          { type: 'URL', text: 'Shop', url: 'https://example.com/' },
          { type: 'PHONE_NUMBER', text: 'Call', phone_number: '+15550001111' },
          { type: 'COPY_CODE', example: 'SAVE10' },
        ],
      },
    ]
    expect(parametersOf({ components })).toEqual({
      body: [
        { key: '1', example: 'Ana' },
        { key: '2', example: 'A-17' },
        { key: '3', example: 'Monday' },
      ],
      header: { type: 'text', key: '1', example: 'A-17' },
      buttons: [
        { index: 1, sub_type: 'url', example: 'https://example.com/track/A-17' },
        { index: 4, sub_type: 'copy_code', example: 'SAVE10' },
      ],
    })
  })

  test('named parameters, a media header, no examples', () => {
    const components = [
      { type: 'HEADER', format: 'IMAGE' },
      {
        type: 'BODY',
        text: 'Hi {{first_name}}, order {{order_id}} is ready',
        example: { body_text_named_params: [{ param_name: 'order_id', example: '4711' }] },
      },
    ]
    expect(parametersOf({ components })).toEqual({
      body: [{ key: 'first_name' }, { key: 'order_id', example: '4711' }],
      header: { type: 'image' },
      buttons: [],
    })
  })

  test('an authentication template: the body code and its OTP button; a text header without a parameter needs nothing', () => {
    const components = [
      { type: 'header', format: 'text', text: 'Your code' },
      { type: 'BODY', text: '*{{1}}* is your verification code.', add_security_recommendation: true },
      { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'COPY_CODE', text: 'Copy code' }] },
    ]
    expect(parametersOf({ components })).toEqual({
      body: [{ key: '1' }],
      header: null,
      buttons: [{ index: 0, sub_type: 'url', otp_type: 'copy_code' }],
    })
  })

  test('no components, or malformed ones, need nothing', () => {
    expect(parametersOf({ components: [] })).toEqual({ body: [], header: null, buttons: [] })
    expect(parametersOf({ components: [null, 3, { type: 'BODY' }, { type: 'BUTTONS', buttons: 'x' }] as never })).toEqual({
      body: [],
      header: null,
      buttons: [],
    })
  })
})

// A marketing template with every kind of component, as Meta's reference writes one.
const ORDER = () => ({
  name: 'order_update_2',
  language: 'en_US',
  category: 'MARKETING',
  components: [
    { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['A-17'] } },
    { type: 'BODY', text: 'Hello {{1}}, your order {{2}} ships soon.', example: { body_text: [['Ana', 'A-17']] } },
    { type: 'FOOTER', text: 'Reply STOP to stop' },
    {
      type: 'BUTTONS',
      buttons: [
        { type: 'QUICK_REPLY', text: 'Thanks' },
        { type: 'QUICK_REPLY', text: 'Stop' },
        { type: 'URL', text: 'Track', url: 'https://example.com/track/{{1}}', example: ['https://example.com/track/A-17'] },
        { type: 'PHONE_NUMBER', text: 'Call us', phone_number: '+6281234567890' },
        { type: 'COPY_CODE', example: 'SAVE10' },
      ],
    },
  ],
})

const NAMED = () => ({
  name: 'order_named',
  language: 'id',
  category: 'utility',
  parameter_format: 'NAMED',
  components: [
    {
      type: 'header',
      format: 'text',
      text: 'Order {{order_id}}',
      example: { header_text_named_params: [{ param_name: 'order_id', example: 'A-17' }] },
    },
    {
      type: 'body',
      text: 'Hi {{first_name}}, order {{order_id}} is ready.',
      example: {
        body_text_named_params: [
          { param_name: 'first_name', example: 'Ana' },
          { param_name: 'order_id', example: 'A-17' },
        ],
      },
    },
  ],
})

const AUTH = () => ({
  name: 'login_code',
  language: 'en',
  category: 'AUTHENTICATION',
  components: [
    { type: 'BODY', add_security_recommendation: true },
    { type: 'FOOTER', code_expiration_minutes: 10 },
    {
      type: 'BUTTONS',
      buttons: [
        {
          type: 'OTP',
          otp_type: 'ZERO_TAP',
          text: 'Copy code',
          autofill_text: 'Autofill',
          zero_tap_terms_accepted: true,
          supported_apps: [{ package_name: 'com.example.app', signature_hash: 'K8a/2FAINcG' }],
        },
      ],
    },
  ],
})

/** The problem with `definition` after `change` (a path into it and the value to put there, undefined deletes). */
function problem(definition: any, ...changes: [string, unknown][]): string | null {
  for (const [path, value] of changes) {
    const keys = path.split('.')
    let at = definition
    for (const k of keys.slice(0, -1)) at = at[k]
    if (value === undefined) delete at[keys.at(-1)!]
    else at[keys.at(-1)!] = value
  }
  const checked = checkDefinition(definition)
  return checked.ok ? null : checked.problem
}

describe('checkDefinition', () => {
  test('valid definitions pass as given; category and parameter format in lower case', () => {
    const order = ORDER()
    expect(checkDefinition(order)).toEqual({
      ok: true,
      value: {
        name: 'order_update_2',
        language: 'en_US',
        category: 'marketing',
        parameterFormat: 'positional',
        components: order.components,
      },
    })
    const named = checkDefinition(NAMED())
    expect(named.ok && [named.value.category, named.value.parameterFormat]).toEqual(['utility', 'named'])
    const auth = checkDefinition(AUTH())
    expect(auth.ok && auth.value.category).toBe('authentication')
    const media = checkDefinition({
      ...ORDER(),
      components: [{ type: 'HEADER', format: 'DOCUMENT', example: { header_handle: ['4::aW1hZ2UvcG5n:ARZ'] } }, ORDER().components[1]],
    })
    expect(media.ok).toBe(true)
  })

  test('name, language, category, parameter_format', () => {
    expect(problem(ORDER(), ['name', 'Order Update'])).toBe('name: only lowercase letters, digits and underscores')
    expect(problem(ORDER(), ['name', 'a'.repeat(513)])).toBe('name: must be at most 512 characters')
    expect(problem(ORDER(), ['name', undefined])).toBe('name: must be a string')
    expect(problem(ORDER(), ['language', 'english'])).toBe('language: must be a WhatsApp language code like en, en_US or pt_BR')
    expect(problem(ORDER(), ['category', 'PROMOTION'])).toBe('category: must be MARKETING, UTILITY or AUTHENTICATION')
    expect(problem(ORDER(), ['parameter_format', 'BOTH'])).toBe('parameter_format: must be POSITIONAL or NAMED')
    expect(problem(ORDER(), ['components', []])).toBe('components: must be a list of components, a BODY at least')
    expect(checkDefinition('x')).toEqual({ ok: false, problem: 'definition: must be an object' })
  })

  test('components: known types, one of each, a body', () => {
    expect(problem(ORDER(), ['components.0.type', 'CAROUSEL'])).toBe('components[0].type: must be HEADER, BODY, FOOTER or BUTTONS')
    expect(problem(ORDER(), ['components.2.type', 'BODY'])).toBe('components[2].type: a template has one BODY')
    expect(problem(ORDER(), ['components', [ORDER().components[2]]])).toBe('components: must have a BODY')
    expect(problem(ORDER(), ['components.1', 'body'])).toBe('components[1]: must be an object')
  })

  test('header: text of at most 60 characters, one parameter with its example; media with an uploaded example', () => {
    expect(problem(ORDER(), ['components.0.text', `${'x'.repeat(55)} {{1}}`])).toBe('components[0].text: must be at most 60 characters')
    expect(problem(ORDER(), ['components.0.text', 'Order {{1}} {{2}}'])).toBe('components[0].text: a header has at most one parameter')
    expect(problem(ORDER(), ['components.0.text', 'Order {{2}}'])).toBe("components[0].text: a header's parameter is {{1}}")
    expect(problem(ORDER(), ['components.0.example', undefined])).toBe('components[0].example: must be an object')
    expect(problem(ORDER(), ['components.0.example', { header_text: [] }])).toBe(
      'components[0].example.header_text: must give 1 example, one per parameter',
    )
    expect(problem(ORDER(), ['components.0.format', 'LOCATION'])).toBe('components[0].format: must be TEXT, IMAGE, VIDEO or DOCUMENT')
    expect(problem(ORDER(), ['components.0.format', 'IMAGE'])).toBe('components[0].text: a media header (IMAGE) has no text')
    expect(problem(ORDER(), ['components.0', { type: 'HEADER', format: 'VIDEO', example: {} }])).toBe(
      "components[0].example.header_handle: must name an uploaded example video (Meta's upload handle)",
    )
  })

  test('body: at most 1024 characters, positional parameters 1..n with examples, never at the very start or end', () => {
    expect(problem(ORDER(), ['components.1.text', `Hi {{1}} ${'x'.repeat(1020)}`])).toBe(
      'components[1].text: must be at most 1024 characters',
    )
    expect(problem(ORDER(), ['components.1.text', 'Hello {{1}}, order {{3}} ships.'])).toBe(
      'components[1].text: positional parameters must be numbered {{1}} to {{2}} without gaps ({{2}} is missing)',
    )
    expect(problem(ORDER(), ['components.1.text', 'Hello {{order_id}} ok'])).toBe(
      'components[1].text: {{order_id}} is a named parameter: parameter_format must be NAMED',
    )
    expect(problem(ORDER(), ['components.1.text', 'Hello {{Order}} ok'])).toBe(
      'components[1].text: {{Order}} is not a parameter: positional parameters are {{1}}, {{2}}...',
    )
    expect(problem(ORDER(), ['components.1.text', 'Hello {{1} and {{2}} ok'])).toBe(
      'components[1].text: has "{{" or "}}" that is not a parameter like {{1}} or {{name}}',
    )
    expect(problem(ORDER(), ['components.1.text', '{{1}}, your order {{2}} ships soon.'])).toBe(
      'components[1].text: a parameter may not be at the very start or end of the body (Meta refuses it)',
    )
    expect(problem(ORDER(), ['components.1.text', 'Hello {{1}}, your order ships on {{2}}'])).toBe(
      'components[1].text: a parameter may not be at the very start or end of the body (Meta refuses it)',
    )
    expect(problem(ORDER(), ['components.1.example', { body_text: [['Ana']] }])).toBe(
      'components[1].example.body_text[0]: must give 2 examples, one per parameter',
    )
    expect(problem(ORDER(), ['components.1.example', { body_text: ['Ana', 'A-17'] }])).toBe(
      'components[1].example.body_text[0]: must be an array of examples, one per parameter',
    )
    expect(problem(ORDER(), ['components.1.example', { body_text: [['Ana', '']] }])).toBe(
      'components[1].example.body_text[0][1]: must not be empty',
    )
    // A repeated parameter counts once.
    expect(problem(ORDER(), ['components.1.text', 'Hello {{1}}, order {{2}} is yours, {{1}}.'])).toBeNull()
  })

  test('named parameters: parameter_format NAMED, lowercase names, an example of each', () => {
    expect(problem(NAMED(), ['components.1.text', 'Hi {{1}}, order {{order_id}} is ready.'])).toBe(
      'components[1].text: {{1}} is positional but parameter_format is NAMED: name it ({{order_id}})',
    )
    expect(problem(NAMED(), ['components.1.text', 'Hi {{First}}, order {{order_id}} is ready.'])).toBe(
      'components[1].text: {{First}} is not a parameter name: lowercase letters, digits and underscores, not starting with a digit',
    )
    expect(problem(NAMED(), ['components.1.example.body_text_named_params', [{ param_name: 'first_name', example: 'Ana' }]])).toBe(
      'components[1].example.body_text_named_params: must give an example of {{order_id}}',
    )
    expect(problem(NAMED(), ['components.1.example.body_text_named_params.1', { param_name: 'city', example: 'Bandung' }])).toBe(
      'components[1].example.body_text_named_params[1].param_name: {{city}} is not a parameter of the text',
    )
    expect(problem(NAMED(), ['components.1.example.body_text_named_params.1.param_name', 'first_name'])).toBe(
      'components[1].example.body_text_named_params[1].param_name: {{first_name}} is given twice',
    )
    expect(problem(NAMED(), ['parameter_format', undefined])).toBe(
      'components[0].text: {{order_id}} is a named parameter: parameter_format must be NAMED',
    )
  })

  test('footer: at most 60 characters, no parameters', () => {
    expect(problem(ORDER(), ['components.2.text', 'x'.repeat(61)])).toBe('components[2].text: must be at most 60 characters')
    expect(problem(ORDER(), ['components.2.text', 'Bye {{1}}'])).toBe('components[2].text: a footer has no parameters')
  })

  test('buttons: at most 10, their kinds and limits, URL parameter only at the end with an example', () => {
    const at = (n: number) => `components.3.buttons.${n}`
    expect(problem(ORDER(), [`${at(0)}.type`, 'FLOW'])).toBe(
      'components[3].buttons[0].type: must be QUICK_REPLY, URL, PHONE_NUMBER, COPY_CODE or OTP',
    )
    expect(problem(ORDER(), [`${at(0)}.text`, 'x'.repeat(26)])).toBe('components[3].buttons[0].text: must be at most 25 characters')
    expect(problem(ORDER(), [`${at(2)}.url`, 'https://example.com/{{1}}/track'])).toBe(
      'components[3].buttons[2].url: may have one parameter, {{1}}, only at its end',
    )
    expect(problem(ORDER(), [`${at(2)}.url`, 'https://example.com/{{2}}'])).toBe(
      'components[3].buttons[2].url: may have one parameter, {{1}}, only at its end',
    )
    expect(problem(ORDER(), [`${at(2)}.url`, `https://example.com/${'x'.repeat(1990)}`])).toBe(
      'components[3].buttons[2].url: must be at most 2000 characters',
    )
    expect(problem(ORDER(), [`${at(2)}.url`, 'ftp://example.com/{{1}}'])).toBe(
      'components[3].buttons[2].url: must be an absolute http or https URL',
    )
    expect(problem(ORDER(), [`${at(2)}.example`, undefined])).toBe(
      'components[3].buttons[2].example: must give one example: the full URL with its parameter filled',
    )
    expect(problem(ORDER(), [`${at(3)}.phone_number`, 'call me'])).toBe(
      'components[3].buttons[3].phone_number: must be a phone number in international form (+ and digits)',
    )
    expect(problem(ORDER(), [`${at(4)}.example`, 'X'.repeat(16)])).toBe('components[3].buttons[4].example: must be at most 15 characters')
    expect(problem(ORDER(), [`${at(4)}`, { type: 'OTP', otp_type: 'COPY_CODE' }])).toBe(
      'components[3].buttons[4].type: an OTP button is only for an authentication template',
    )
    const many = Array.from({ length: 11 }, () => ({ type: 'QUICK_REPLY', text: 'Yes' }))
    expect(problem(ORDER(), ['components.3.buttons', many])).toBe('components[3].buttons: at most 10 buttons')
    const phones = [
      { type: 'PHONE_NUMBER', text: 'Call', phone_number: '+6281234567890' },
      { type: 'PHONE_NUMBER', text: 'Call', phone_number: '+6281234567891' },
    ]
    expect(problem(ORDER(), ['components.3.buttons', phones])).toBe('components[3].buttons[1]: at most 1 PHONE_NUMBER button')
    const mixed = [{ type: 'QUICK_REPLY', text: 'A' }, phones[0], { type: 'QUICK_REPLY', text: 'B' }]
    expect(problem(ORDER(), ['components.3.buttons', mixed])).toBe(
      'components[3].buttons: QUICK_REPLY buttons must be grouped together, before or after the other buttons',
    )
  })

  test('authentication: no header, an OTP button (ONE_TAP and ZERO_TAP name their apps), expiry 1..90 minutes', () => {
    expect(problem(AUTH(), ['components.2.buttons.0.otp_type', 'COPY_CODE'])).toBeNull()
    expect(problem(AUTH(), ['components.2.buttons.0.zero_tap_terms_accepted', false])).toBe(
      "components[2].buttons[0].zero_tap_terms_accepted: must be true: a ZERO_TAP button needs Meta's zero-tap terms accepted",
    )
    expect(problem(AUTH(), ['components.2.buttons.0.supported_apps.0.signature_hash', 'short'])).toBe(
      'components[2].buttons[0].supported_apps[0].signature_hash: must be 11 characters of letters, digits, +, / or =',
    )
    expect(problem(AUTH(), ['components.2.buttons.0.supported_apps.0.package_name', 'example'])).toBe(
      'components[2].buttons[0].supported_apps[0].package_name: must be an Android package name like com.example.app',
    )
    expect(problem(AUTH(), ['components.2.buttons.0.otp_type', 'MAGIC'])).toBe(
      'components[2].buttons[0].otp_type: must be COPY_CODE, ONE_TAP or ZERO_TAP',
    )
    expect(problem(AUTH(), ['components.2.buttons.0', { type: 'QUICK_REPLY', text: 'Hi' }])).toBe(
      "components[2].buttons[0].type: an authentication template's button is OTP",
    )
    expect(problem(AUTH(), ['components.1.code_expiration_minutes', 91])).toBe(
      'components[1].code_expiration_minutes: must be a whole number of minutes from 1 to 90',
    )
    expect(problem(AUTH(), ['components.0', { type: 'HEADER', format: 'TEXT', text: 'Code' }])).toBe(
      'components[0]: an authentication template has no header',
    )
    expect(problem(AUTH(), ['components', [AUTH().components[0]]])).toBe(
      'components: an authentication template has an OTP button (BUTTONS)',
    )
  })

  test('what passes, parametersOf reads', () => {
    const checked = checkDefinition(NAMED())
    expect(checked.ok && parametersOf(checked.value)).toEqual({
      body: [
        { key: 'first_name', example: 'Ana' },
        { key: 'order_id', example: 'A-17' },
      ],
      header: { type: 'text', key: 'order_id', example: 'A-17' },
      buttons: [],
    })
  })
})
