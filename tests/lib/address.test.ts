import { describe, expect, test } from 'bun:test'
import { isPublicAddress, literalAddress, nonPublicKind, resolveWebhookHost, webhookSchemeProblem } from '../../src/lib/address'

const HINT =
  '(give a public https URL, e.g. a tunnel to your machine; only an operator can allow private addresses, on a development service)'

describe('isPublicAddress', () => {
  const notPublic: [string, string][] = [
    ['0.0.0.0', 'this network'],
    ['0.1.2.3', 'this network'],
    ['10.0.0.1', 'private 10/8'],
    ['10.255.255.255', 'private 10/8, last'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT, last'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.0.1', 'link-local'],
    ['172.16.0.1', 'private 172.16/12'],
    ['172.31.255.255', 'private 172.16/12, last'],
    ['192.0.0.8', 'IETF protocol assignments'],
    ['192.0.2.1', 'TEST-NET-1'],
    ['192.88.99.1', '6to4 relay'],
    ['192.168.1.1', 'private 192.168/16'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking, last'],
    ['198.51.100.7', 'TEST-NET-2'],
    ['203.0.113.9', 'TEST-NET-3'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast (SSDP)'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'IPv6 unspecified'],
    ['::1', 'IPv6 loopback'],
    ['[::1]', 'IPv6 loopback in brackets'],
    ['0:0:0:0:0:0:0:1', 'IPv6 loopback, long form'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['0:0:0:0:0:ffff:c0a8:0101', 'IPv4-mapped 192.168.1.1, long form'],
    ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
    ['::8.8.8.8', 'IPv4-compatible even when public'],
    ['64:ff9b::a00:1', 'NAT64 of 10.0.0.1'],
    ['2002:7f00:1::1', '6to4 of 127.0.0.1'],
    ['fc00::1', 'unique local'],
    ['fd12:3456:789a::1', 'unique local fd00::/8'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local with zone'],
    ['febf::1', 'link-local, last /10'],
    ['fec0::1', 'site-local (deprecated)'],
    ['ff02::1', 'multicast'],
    ['100::1', 'discard-only'],
    ['2001:db8::1', 'documentation'],
    ['2001::1', 'Teredo'],
    ['2001:10::1', 'ORCHID'],
    ['3fff::1', 'documentation 3fff::/20'],
    ['', 'empty'],
    ['localhost', 'a name, not an address'],
    ['256.1.1.1', 'octet out of range'],
    ['1.2.3', 'three octets'],
    ['01.2.3.4x', 'garbage'],
    ['1::2::3', 'two ::'],
    ['1:2:3:4:5:6:7:8:9', 'nine groups'],
    ['12345::1', 'group too long'],
    ['::ffff:300.0.0.1', 'bad embedded quad'],
  ]
  for (const [ip, why] of notPublic) test(`${JSON.stringify(ip)} is not public (${why})`, () => expect(isPublicAddress(ip)).toBe(false))

  const publicOnes = [
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '100.63.255.255', // just below CGNAT
    '100.128.0.0', // just above CGNAT
    '172.15.255.255', // just below 172.16/12
    '172.32.0.0', // just above 172.16/12
    '169.253.255.255',
    '192.167.255.255',
    '198.20.0.0',
    '223.255.255.255', // last before multicast
    '11.0.0.1',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450:4001:82b::200e',
    '::ffff:93.184.216.34', // IPv4-mapped public
    '::ffff:5db8:d822',
    '64:ff9b::808:808', // NAT64 of 8.8.8.8
    '2002:808:808::1', // 6to4 of 8.8.8.8
    '2001:200::1', // just past 2001::/23
  ]
  for (const ip of publicOnes) test(`${ip} is public`, () => expect(isPublicAddress(ip)).toBe(true))
})

describe('literalAddress', () => {
  test('dotted quads and bracketed IPv6 are literals; names are not', () => {
    expect(literalAddress('127.0.0.1')).toBe('127.0.0.1')
    expect(literalAddress('[::ffff:7f00:1]')).toBe('::ffff:7f00:1')
    expect(literalAddress('example.com')).toBeNull()
    expect(literalAddress('localhost')).toBeNull()
  })

  test('the URL parser turns integer, hex, octal and short forms into dotted quads first', () => {
    for (const url of ['https://2130706433/', 'https://0x7f000001/', 'https://0177.0.0.1/', 'https://127.1/']) {
      const host = new URL(url).hostname
      expect(literalAddress(host)).toBe('127.0.0.1')
      expect(isPublicAddress(host)).toBe(false)
    }
    expect(new URL('https://[::ffff:127.0.0.1]/').hostname).toBe('[::ffff:7f00:1]')
  })
})

describe('resolveWebhookHost (registration and delivery alike)', () => {
  test('literal addresses are judged without DNS', async () => {
    expect(await resolveWebhookHost('93.184.216.34', false)).toEqual({ ok: true, addresses: ['93.184.216.34'], literal: true })
    expect(await resolveWebhookHost('[2606:4700:4700::1111]', false)).toEqual({
      ok: true,
      addresses: ['2606:4700:4700::1111'],
      literal: true,
    })
    expect(await resolveWebhookHost('127.0.0.1', false)).toEqual({
      ok: false,
      reason: `127.0.0.1 is a loopback address ${HINT}`,
      detail: 'address refused: 127.0.0.1 is not a public address',
    })
    expect(await resolveWebhookHost('[::1]', false)).toMatchObject({ ok: false, reason: `[::1] is a loopback address ${HINT}` })
    expect(await resolveWebhookHost('[::ffff:a00:1]', false)).toMatchObject({
      ok: false,
      reason: `[::ffff:a00:1] is a private address ${HINT}`,
    })
  })

  test('localhost and its subdomains are loopback; .invalid does not resolve (RFC 6761, no DNS asked)', async () => {
    for (const name of ['localhost', 'LOCALHOST.', 'api.localhost']) {
      const resolved = await resolveWebhookHost(name, false)
      expect(resolved).toMatchObject({ ok: false, reason: `host resolves to a loopback address ${HINT}` })
      // The client's reason never names what a name resolves to; the attempt log's detail does.
      expect(resolved.ok || resolved.detail).toMatch(/^address refused: .*localhost resolves to 127\.0\.0\.1, not a public address$/)
    }
    expect(await resolveWebhookHost('receiver.invalid', false)).toEqual({
      ok: false,
      reason: 'host does not resolve',
      detail: 'DNS: host not found',
    })
  })

  test('allowPrivate lifts the address rule but still resolves: delivery connects to these addresses', async () => {
    expect(await resolveWebhookHost('127.0.0.1', true)).toEqual({ ok: true, addresses: ['127.0.0.1'], literal: true })
    expect(await resolveWebhookHost('localhost', true)).toEqual({ ok: true, addresses: ['127.0.0.1', '::1'], literal: false })
    expect(await resolveWebhookHost('receiver.invalid', true)).toMatchObject({ ok: false, reason: 'host does not resolve' })
  })
})

describe('nonPublicKind: the words a refusal uses', () => {
  const kinds: [string, string | null][] = [
    ['10.1.2.3', 'a private address'],
    ['192.168.0.1', 'a private address'],
    ['127.0.0.1', 'a loopback address'],
    ['169.254.169.254', 'the cloud metadata address'],
    ['169.254.169.253', 'a link-local address'],
    ['100.64.0.1', 'a carrier-grade NAT address'],
    ['198.51.100.7', 'a documentation address'],
    ['239.0.0.1', 'a multicast address'],
    ['0.0.0.0', 'a reserved address'],
    ['::1', 'a loopback address'],
    ['::ffff:169.254.169.254', 'the cloud metadata address'],
    ['fd00::1', 'a private address'],
    ['fe80::1', 'a link-local address'],
    ['ff02::1', 'a multicast address'],
    ['2001:db8::1', 'a documentation address'],
    ['::', 'a reserved address'],
    ['localhost', 'not an IP address'],
    ['93.184.216.34', null],
    ['2606:4700:4700::1111', null],
  ]
  for (const [ip, kind] of kinds) test(`${ip}: ${kind}`, () => expect(nonPublicKind(ip)).toBe(kind))
})

describe('webhookSchemeProblem', () => {
  const cases: [string, boolean, string | null][] = [
    ['https://example.com/', false, null],
    ['http://localhost:8080/hook', true, null],
    ['http://127.0.0.2/hook', true, null],
    ['http://[::1]/', true, null],
    ['http://a.b.localhost/', true, null],
    [
      'http://localhost:8080/hook',
      false,
      'must be https (give a public https URL; http://localhost only on a development service where an operator allowed private addresses)',
    ],
    [
      'http://10.0.0.1/',
      true,
      'must be https (plain http only to localhost, on a development service where an operator allowed private addresses)',
    ],
    [
      'http://[::ffff:127.0.0.1]/',
      true,
      'must be https (plain http only to localhost, on a development service where an operator allowed private addresses)',
    ],
    ['ws://localhost/', true, 'must be https'],
  ]
  for (const [url, allowPrivate, problem] of cases) {
    test(`${url} (allowPrivate ${allowPrivate})`, () => expect(webhookSchemeProblem(new URL(url), allowPrivate)).toBe(problem))
  }
})
