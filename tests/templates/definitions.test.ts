// WhatsApp template definitions (issue 30): what a send must fill, read from the Cloud API's components
// (parametersOf), as the integrator's API shows it and the send checks it.

import { describe, expect, test } from 'bun:test'
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
