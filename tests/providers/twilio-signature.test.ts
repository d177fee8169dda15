// X-Twilio-Signature: our implementation against the official `twilio` package, which computes the
// expected values independently.

import { describe, expect, test } from 'bun:test'
import twilio from 'twilio'
import { twilioSignature, verifyTwilioSignature } from '../../src/providers/twilio/signature'

const TOKEN = 'a7c0b3e1d2f4a5b6c7d8e9f0a1b2c3d4'
const URL_ = 'https://api.example.com/provider/twilio/status'

const statusReport = {
  AccountSid: 'AC0123456789abcdef0123456789abcdef',
  ApiVersion: '2010-04-01',
  ChannelPrefix: 'whatsapp',
  ErrorCode: '63016',
  From: 'whatsapp:+14155238886',
  MessageSid: 'SM0123456789abcdef0123456789abcdef',
  MessageStatus: 'failed',
  SmsSid: 'SM0123456789abcdef0123456789abcdef',
  SmsStatus: 'failed',
  To: 'whatsapp:+6281234567890',
}

const vectors: { name: string; url: string; params: Record<string, string> }[] = [
  { name: 'a status report', url: URL_, params: statusReport },
  { name: 'empty params', url: URL_, params: {} },
  { name: 'empty values', url: URL_, params: { ErrorCode: '', ErrorMessage: '', MessageSid: 'SMx' } },
  { name: 'unicode keys and values', url: URL_, params: { Body: 'halo 👋 dünya – ☃ 日本語', Ünïcode: 'é', ProfileName: 'José 🙂' } },
  {
    name: 'special characters',
    url: 'https://api.example.com/provider/twilio/status?x=1&y=a%20b',
    params: { Body: 'a&b=c+d%20e\n"q"\'s\\ <tag> #hash ?q', 'Key With Space': ' spaced ', 'a=b': '&', z: '+' },
  },
  { name: 'case-sensitive key order', url: URL_, params: { b: '1', B: '2', a: '3', A: '4', _: '5', '1': '6' } },
  {
    name: 'an http URL with a port',
    url: 'http://127.0.0.1:8080/provider/twilio/status',
    params: { MessageSid: 'SM1', MessageStatus: 'delivered' },
  },
]

describe('twilioSignature', () => {
  // Twilio's documented example signs Caller/From +14158675309 to RSOYDt4T1cUTdK1PDd93/VVr8B8=. The
  // same request with +12349013030 (as in twilio-node's own tests) signs to 0/KCTR6DLpKmkAf8muzZqo1nDgQ=;
  // both values are checked against the package first, so the package is the authority.
  const documented = [
    { number: '+14158675309', signature: 'RSOYDt4T1cUTdK1PDd93/VVr8B8=' },
    { number: '+12349013030', signature: '0/KCTR6DLpKmkAf8muzZqo1nDgQ=' },
  ]
  for (const { number, signature } of documented) {
    test(`matches Twilio's documented example (Caller ${number})`, () => {
      const url = 'https://mycompany.com/myapp.php?foo=1&bar=2'
      const params = { CallSid: 'CA1234567890ABCDE', Caller: number, Digits: '1234', From: number, To: '+18005551212' }
      expect(twilio.getExpectedTwilioSignature('12345', url, params)).toBe(signature)
      expect(twilio.validateRequest('12345', signature, url, params)).toBe(true)
      expect(twilioSignature('12345', url, params)).toBe(signature)
      expect(verifyTwilioSignature('12345', url, params, signature)).toBe(true)
    })
  }

  for (const v of vectors) {
    test(`agrees with the twilio package: ${v.name}`, () => {
      const expected = twilio.getExpectedTwilioSignature(TOKEN, v.url, v.params)
      expect(twilioSignature(TOKEN, v.url, v.params)).toBe(expected)
      expect(twilioSignature(TOKEN, v.url, new URLSearchParams(v.params))).toBe(expected)
      expect(twilio.validateRequest(TOKEN, expected, v.url, v.params)).toBe(true)
      expect(verifyTwilioSignature(TOKEN, v.url, v.params, expected)).toBe(true)
    })
  }

  test('a form body parsed with URLSearchParams signs the same as the decoded fields', () => {
    const body = new URLSearchParams(statusReport).toString()
    const parsed = new URLSearchParams(body)
    expect(twilioSignature(TOKEN, URL_, parsed)).toBe(twilio.getExpectedTwilioSignature(TOKEN, URL_, statusReport))
  })

  test('repeated keys: every value is signed, the same way as the twilio package', () => {
    const params = new URLSearchParams()
    params.append('MediaUrl', 'https://cdn.example.com/b.png')
    params.append('Body', 'x')
    params.append('MediaUrl', 'https://cdn.example.com/a.png')
    params.append('MediaUrl', 'https://cdn.example.com/b.png')
    const asArrays = { MediaUrl: params.getAll('MediaUrl'), Body: ['x'] }
    const expected = twilio.getExpectedTwilioSignature(TOKEN, URL_, asArrays)
    expect(twilioSignature(TOKEN, URL_, params)).toBe(expected)
    expect(twilio.validateRequest(TOKEN, expected, URL_, asArrays)).toBe(true)
    expect(verifyTwilioSignature(TOKEN, URL_, params, expected)).toBe(true)
    // Dropping one of the values changes the signature.
    const fewer = new URLSearchParams([
      ['MediaUrl', 'https://cdn.example.com/b.png'],
      ['Body', 'x'],
    ])
    expect(verifyTwilioSignature(TOKEN, URL_, fewer, expected)).toBe(false)
  })
})

describe('verifyTwilioSignature', () => {
  const good = twilio.getExpectedTwilioSignature(TOKEN, URL_, statusReport)

  test('accepts the signature Twilio would send', () => {
    expect(verifyTwilioSignature(TOKEN, URL_, statusReport, good)).toBe(true)
  })

  test('a tampered field fails', () => {
    expect(verifyTwilioSignature(TOKEN, URL_, { ...statusReport, MessageStatus: 'delivered' }, good)).toBe(false)
    expect(verifyTwilioSignature(TOKEN, URL_, { ...statusReport, ErrorCode: '' }, good)).toBe(false)
    expect(verifyTwilioSignature(TOKEN, URL_, { ...statusReport, Extra: '1' }, good)).toBe(false)
    const { ErrorCode: _dropped, ...withoutErrorCode } = statusReport
    expect(verifyTwilioSignature(TOKEN, URL_, withoutErrorCode, good)).toBe(false)
  })

  test('a tampered URL fails', () => {
    expect(verifyTwilioSignature(TOKEN, 'https://api.example.com/provider/twilio/status2', statusReport, good)).toBe(false)
    expect(verifyTwilioSignature(TOKEN, 'http://api.example.com/provider/twilio/status', statusReport, good)).toBe(false)
    expect(verifyTwilioSignature(TOKEN, 'https://evil.example.com/provider/twilio/status', statusReport, good)).toBe(false)
    expect(verifyTwilioSignature(TOKEN, `${URL_}?a=1`, statusReport, good)).toBe(false)
  })

  test('a missing, empty or malformed header fails', () => {
    expect(verifyTwilioSignature(TOKEN, URL_, statusReport, undefined)).toBe(false)
    expect(verifyTwilioSignature(TOKEN, URL_, statusReport, null)).toBe(false)
    expect(verifyTwilioSignature(TOKEN, URL_, statusReport, '')).toBe(false)
    expect(verifyTwilioSignature(TOKEN, URL_, statusReport, good.slice(0, -1))).toBe(false)
    expect(verifyTwilioSignature(TOKEN, URL_, statusReport, `${good}=`)).toBe(false)
    expect(verifyTwilioSignature(TOKEN, URL_, statusReport, good.toLowerCase())).toBe(false)
    expect(verifyTwilioSignature(TOKEN, URL_, statusReport, 'é'.repeat(14))).toBe(false)
  })

  test('a wrong or empty token fails', () => {
    expect(verifyTwilioSignature(`${TOKEN}x`, URL_, statusReport, good)).toBe(false)
    expect(verifyTwilioSignature(TOKEN.toUpperCase(), URL_, statusReport, good)).toBe(false)
    expect(verifyTwilioSignature('', URL_, statusReport, twilio.getExpectedTwilioSignature('', URL_, statusReport))).toBe(false)
  })
})
