// Registration only: delivery has its own tests. No test here opens a connection to a registered URL.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from './helpers/app'
import { errorEnvelope } from './helpers/envelope'
import { TestClock } from '../src/lib/clock'

let t: TestApp
beforeAll(async () => {
  t = await testApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'false' }, clock: new TestClock() })
}, 60_000)
afterAll(() => t.close())

const PUBLIC_URL = 'https://93.184.216.34/hook'
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/

describe('POST /webhook', () => {
  test('200 with the url and a whsec_ signing secret of 32 random bytes', async () => {
    const { key } = await t.account()
    const res = await t.api('POST', '/webhook', key, { url: PUBLIC_URL })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: { url: PUBLIC_URL, signing_secret: expect.stringMatching(SECRET), events: ['message.status'] },
    })
    expect(Buffer.from(res.body.data.signing_secret.slice(6), 'base64')).toHaveLength(32)
  })

  test('replacing the URL keeps the secret; GET shows the URL without it', async () => {
    const { key } = await t.account()
    const first = await t.api('POST', '/webhook', key, { url: PUBLIC_URL })
    const second = await t.api('POST', '/webhook', key, { url: 'https://[2606:4700:4700::1111]:8443/v2/hook?x=1' })
    expect(second.status).toBe(200)
    expect(second.body.data).toEqual({
      url: 'https://[2606:4700:4700::1111]:8443/v2/hook?x=1',
      signing_secret: first.body.data.signing_secret,
      events: ['message.status'],
    })
    const got = await t.api('GET', '/webhook', key)
    expect(got.status).toBe(200)
    expect(got.body).toEqual({
      success: true,
      data: { url: 'https://[2606:4700:4700::1111]:8443/v2/hook?x=1', events: ['message.status'] },
    })
  })

  test('the URL is stored as it will be called (normalised by the URL parser)', async () => {
    const { key } = await t.account()
    const res = await t.api('POST', '/webhook', key, { url: 'HTTPS://93.184.216.34:443/a b' })
    expect(res.body.data.url).toBe('https://93.184.216.34/a%20b')
  })

  test('each API key has its own registration and secret', async () => {
    const { accountId, key } = await t.account()
    const second = await t.admin('POST', `/accounts/${accountId}/keys`, { label: 'second' })
    const otherKey = second.body.data.key
    const mine = await t.api('POST', '/webhook', key, { url: PUBLIC_URL })
    expect((await t.api('GET', '/webhook', otherKey)).status).toBe(404)
    const theirs = await t.api('POST', '/webhook', otherKey, { url: 'https://93.184.216.35/other' })
    expect(theirs.body.data.signing_secret).not.toBe(mine.body.data.signing_secret)
    expect((await t.api('GET', '/webhook', key)).body.data.url).toBe(PUBLIC_URL)
    expect((await t.api('GET', '/webhook', otherKey)).body.data.url).toBe('https://93.184.216.35/other')
  })

  test('422 for a URL that is not https, too long, or not a URL', async () => {
    const { key, keyId } = await t.account()
    const cases: [string, RegExp][] = [
      [
        'http://93.184.216.34/hook',
        /^url: must be https \(plain http only to localhost, on a development service where an operator allowed private addresses\)$/,
      ],
      ['ftp://93.184.216.34/hook', /^url: must be https$/],
      ['not a url', /^url: must be an absolute https URL/],
      ['', /^url: must be an absolute https URL/],
      ['/relative/path', /^url: must be an absolute https URL/],
      [`https://93.184.216.34/${'a'.repeat(2048)}`, /^url: must be at most 2048 characters/],
      ['https://receiver.invalid/hook', /^url: host does not resolve/],
    ]
    for (const [url, message] of cases) {
      const res = await t.api('POST', '/webhook', key, { url })
      expect({ url: url.slice(0, 60), status: res.status, code: res.body.code }).toEqual({
        url: url.slice(0, 60),
        status: 422,
        code: 'VALIDATION_ERROR',
      })
      expect(res.body.error).toMatch(message)
    }
    // 2048 characters exactly is fine.
    const base = 'https://93.184.216.34/'
    const longest = base + 'a'.repeat(2048 - base.length)
    expect((await t.api('POST', '/webhook', key, { url: longest })).status).toBe(200)
    const [row] = await t.db.sql`select char_length(url)::int as n from webhook_endpoints where api_key_id = ${keyId}`
    expect(row!.n).toBe(2048)
  })

  test('422 for hosts that are or resolve to non-public addresses', async () => {
    const { key } = await t.account()
    const urls = [
      'https://127.0.0.1/x',
      'https://127.0.0.1:8443/x',
      'https://10.0.0.1/',
      'https://172.16.0.1/',
      'https://172.31.255.254/',
      'https://192.168.1.1/',
      'https://169.254.169.254/latest/meta-data/',
      'https://100.64.0.1/',
      'https://0.0.0.0/',
      'https://224.0.0.1/',
      'https://255.255.255.255/',
      'https://2130706433/', // 127.0.0.1 as one integer
      'https://0x7f000001/', // ... in hex
      'https://0177.0.0.1/', // ... in octal
      'https://127.1/', // ... shortened
      'https://127.0.0.1./', // ... with a trailing dot
      'https://%31%32%37.0.0.1/', // ... percent-encoded
      'https://[::1]/',
      'https://[::]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:10.0.0.1]/',
      'https://[::ffff:a9fe:a9fe]/', // 169.254.169.254
      'https://[fd00::1]/',
      'https://[fe80::1]/',
      'https://localhost/',
      'https://localhost:3000/hook',
      'https://api.localhost/',
    ]
    for (const url of urls) {
      const res = await t.api('POST', '/webhook', key, { url })
      expect({ url, status: res.status, code: res.body.code }).toEqual({ url, status: 422, code: 'VALIDATION_ERROR' })
      expect(res.body.error).toMatch(
        /^url: (\S+ is|host resolves to) (a|the) [A-Za-z -]+ address \(give a public https URL, e\.g\. a tunnel to your machine; only an operator can allow private addresses, on a development service\)$/,
      )
    }
    expect((await t.api('GET', '/webhook', key)).status).toBe(404)
  })

  test('a refused URL names the rule: the kind of address, and the address only when the URL spells it', async () => {
    const { key } = await t.account()
    const hint =
      '(give a public https URL, e.g. a tunnel to your machine; only an operator can allow private addresses, on a development service)'
    const cases: [string, string][] = [
      ['https://10.0.0.1/', `url: 10.0.0.1 is a private address ${hint}`],
      ['https://127.0.0.1:8443/x', `url: 127.0.0.1 is a loopback address ${hint}`],
      ['https://2130706433/', `url: 127.0.0.1 is a loopback address ${hint}`],
      ['https://169.254.169.254/latest/meta-data/', `url: 169.254.169.254 is the cloud metadata address ${hint}`],
      ['https://169.254.1.1/', `url: 169.254.1.1 is a link-local address ${hint}`],
      ['https://100.64.0.1/', `url: 100.64.0.1 is a carrier-grade NAT address ${hint}`],
      ['https://224.0.0.1/', `url: 224.0.0.1 is a multicast address ${hint}`],
      ['https://[::1]/', `url: [::1] is a loopback address ${hint}`],
      ['https://[::ffff:10.0.0.1]/', `url: [::ffff:a00:1] is a private address ${hint}`],
      ['https://[fd00::1]/', `url: [fd00::1] is a private address ${hint}`],
      ['https://[fe80::1]/', `url: [fe80::1] is a link-local address ${hint}`],
      ['https://localhost:3000/hook', `url: host resolves to a loopback address ${hint}`],
      [
        'http://localhost:8080/hook',
        'url: must be https (give a public https URL; http://localhost only on a development service where an operator allowed private addresses)',
      ],
      [
        'http://127.0.0.1:8080/hook',
        'url: must be https (give a public https URL; http://localhost only on a development service where an operator allowed private addresses)',
      ],
    ]
    for (const [url, message] of cases) {
      const res = await t.api('POST', '/webhook', key, { url })
      expect({ url, status: res.status, error: res.body.error }).toEqual({ url, status: 422, error: message })
    }
  })

  test('400 for the wrong shape, 401 before anything', async () => {
    const { key } = await t.account()
    const cases: [unknown, RegExp][] = [
      [{}, /^url: is required/],
      [{ url: 5 }, /^url: must be a string/],
      [{ url: null }, /^url: must be a string/],
      [['https://93.184.216.34/'], /body must be a JSON object/],
    ]
    for (const [body, message] of cases) {
      const res = await t.api('POST', '/webhook', key, body)
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 400, code: 'VALIDATION_ERROR' })
      expect(res.body.error).toMatch(message)
    }
    const missing = await t.request('POST', '/api/v1/webhook', { body: { url: 'http://x' } })
    expect(missing.status).toBe(401)
    expect(missing.body.code).toBe('AUTH_MISSING_HEADER')
    const wrong = await t.request('POST', '/api/v1/webhook', { key: 'pm_' + 'z'.repeat(40), body: { url: PUBLIC_URL } })
    expect(wrong.status).toBe(401)
    expect(wrong.body.code).toBe('AUTH_INVALID_KEY')
  })
})

describe('GET and DELETE /webhook', () => {
  test('404 NOT_FOUND when none is registered', async () => {
    const { key } = await t.account()
    const got = await t.api('GET', '/webhook', key)
    expect(got.status).toBe(404)
    expect(got.body).toEqual(errorEnvelope(got.headers, 'NOT_FOUND'))
    const deleted = await t.api('DELETE', '/webhook', key)
    expect(deleted.status).toBe(404)
    expect(deleted.body.code).toBe('NOT_FOUND')
  })

  test('DELETE removes it; a later registration gets a new secret', async () => {
    const { key } = await t.account()
    const first = await t.api('POST', '/webhook', key, { url: PUBLIC_URL })
    const deleted = await t.api('DELETE', '/webhook', key)
    expect(deleted.status).toBe(200)
    expect(deleted.body).toEqual({ success: true, data: { deleted: true } })
    expect((await t.api('GET', '/webhook', key)).status).toBe(404)
    const again = await t.api('POST', '/webhook', key, { url: PUBLIC_URL })
    expect(again.status).toBe(200)
    expect(again.body.data.signing_secret).toMatch(SECRET)
    expect(again.body.data.signing_secret).not.toBe(first.body.data.signing_secret)
  })

  test("a key never sees or removes another key's registration", async () => {
    const a = await t.account()
    const b = await t.account()
    await t.api('POST', '/webhook', a.key, { url: PUBLIC_URL })
    expect((await t.api('GET', '/webhook', b.key)).status).toBe(404)
    expect((await t.api('DELETE', '/webhook', b.key)).status).toBe(404)
    expect((await t.api('GET', '/webhook', a.key)).status).toBe(200)
  })

  test('401 without a valid key; a deactivated key loses access at once', async () => {
    expect((await t.request('GET', '/api/v1/webhook')).body.code).toBe('AUTH_MISSING_HEADER')
    expect((await t.request('DELETE', '/api/v1/webhook')).body.code).toBe('AUTH_MISSING_HEADER')
    const { key, keyId } = await t.account()
    await t.api('POST', '/webhook', key, { url: PUBLIC_URL })
    await t.admin('PATCH', `/keys/${keyId}`, { active: false })
    const res = await t.api('GET', '/webhook', key)
    expect(res.status).toBe(401)
    expect(res.body.code).toBe('AUTH_INVALID_KEY')
  })
})

describe('WEBHOOK_ALLOW_PRIVATE=true', () => {
  let dev: TestApp
  beforeAll(async () => {
    dev = await testApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' }, clock: new TestClock() })
  }, 60_000)
  afterAll(() => dev.close())

  test('loopback and private hosts are accepted, plain http only to this machine; the length rule still applies', async () => {
    const { key, keyId } = await dev.account()
    for (const url of [
      'https://127.0.0.1:9443/hook',
      'https://localhost/hook',
      'https://10.0.0.1/',
      'http://localhost:8080/hook',
      'http://127.0.0.1:9/x?y=1',
      'http://[::1]:8080/',
      'http://api.localhost/hook',
    ]) {
      const res = await dev.api('POST', '/webhook', key, { url })
      expect({ url, status: res.status, stored: res.body.data?.url }).toEqual({ url, status: 200, stored: url })
      const [row] = await dev.db.sql<{ url: string }[]>`select url from webhook_endpoints where api_key_id = ${keyId}`
      expect(row!.url).toBe(url)
    }
    for (const url of ['http://10.0.0.1/hook', 'http://93.184.216.34/', 'http://localhost.example.com/']) {
      const res = await dev.api('POST', '/webhook', key, { url })
      expect({ url, status: res.status, error: res.body.error }).toEqual({
        url,
        status: 422,
        error: 'url: must be https (plain http only to localhost, on a development service where an operator allowed private addresses)',
      })
    }
    expect((await dev.api('POST', '/webhook', key, { url: `https://127.0.0.1/${'a'.repeat(2100)}` })).status).toBe(422)
  })
})
