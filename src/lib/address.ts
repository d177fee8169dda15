// Which addresses a webhook may be delivered to, and the one resolver that finds them. Used when a URL
// is registered and again at every delivery on the address actually connected to, so a DNS answer
// that changes cannot reach inside. Fails closed: anything that does not parse as an IP address is not public.

import { lookup } from 'node:dns/promises'

/** IPv4 dotted quad → 32-bit unsigned number; null unless exactly four decimal octets. */
function parseIPv4(ip: string): number | null {
  const parts = ip.split('.')
  if (parts.length !== 4) return null
  let value = 0
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return null
    value = value * 256 + Number(part)
  }
  return value
}

/** IPv6 text (with `::`, an embedded dotted quad, an optional zone) → eight 16-bit groups. */
function parseIPv6(input: string): number[] | null {
  let ip = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input
  const zone = ip.indexOf('%')
  if (zone !== -1) ip = ip.slice(0, zone)
  if (!ip.includes(':')) return null
  const lastColon = ip.lastIndexOf(':')
  if (ip.slice(lastColon + 1).includes('.')) {
    // An embedded dotted quad ("::ffff:1.2.3.4") becomes its two groups.
    const four = parseIPv4(ip.slice(lastColon + 1))
    if (four === null) return null
    ip = `${ip.slice(0, lastColon + 1)}${Math.floor(four / 65536).toString(16)}:${(four % 65536).toString(16)}`
  }
  const halves = ip.split('::')
  if (halves.length > 2) return null
  const group = (text: string) => (text === '' ? [] : text.split(':'))
  const head = group(halves[0]!)
  const rest = halves.length === 2 ? group(halves[1]!) : []
  const parsed: number[] = []
  for (const g of [...head, ...rest]) {
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return null
    parsed.push(parseInt(g, 16))
  }
  if (halves.length === 1 && parsed.length !== 8) return null
  if (halves.length === 2 && parsed.length > 7) return null
  const zeros = new Array<number>(8 - parsed.length).fill(0)
  return [...parsed.slice(0, head.length), ...(halves.length === 2 ? zeros : []), ...parsed.slice(head.length)]
}

const v4 = (a: number, b: number, c: number, d: number) => ((a * 256 + b) * 256 + c) * 256 + d

// IANA special-purpose and non-unicast IPv4 ranges: [network, prefix length, what it is]. The last
// words name the rule in a refused registration's message.
const NON_PUBLIC_V4: [number, number, string][] = [
  [v4(169, 254, 169, 254), 32, 'the cloud metadata address'], // before its link-local /16
  [v4(0, 0, 0, 0), 8, 'a reserved address'], // "this network"
  [v4(10, 0, 0, 0), 8, 'a private address'],
  [v4(100, 64, 0, 0), 10, 'a carrier-grade NAT address'],
  [v4(127, 0, 0, 0), 8, 'a loopback address'],
  [v4(169, 254, 0, 0), 16, 'a link-local address'],
  [v4(172, 16, 0, 0), 12, 'a private address'],
  [v4(192, 0, 0, 0), 24, 'a reserved address'], // IETF protocol assignments
  [v4(192, 0, 2, 0), 24, 'a documentation address'],
  [v4(192, 88, 99, 0), 24, 'a reserved address'], // 6to4 relay anycast
  [v4(192, 168, 0, 0), 16, 'a private address'],
  [v4(198, 18, 0, 0), 15, 'a reserved address'], // benchmarking
  [v4(198, 51, 100, 0), 24, 'a documentation address'],
  [v4(203, 0, 113, 0), 24, 'a documentation address'],
  [v4(224, 0, 0, 0), 4, 'a multicast address'],
  [v4(240, 0, 0, 0), 4, 'a reserved address'], // including broadcast
]

function kindOfV4(value: number): string | null {
  for (const [network, bits, kind] of NON_PUBLIC_V4) {
    const size = 2 ** (32 - bits)
    if (value >= network && value < network + size) return kind
  }
  return null
}

function kindOfV6(g: number[]): string | null {
  const embeddedV4 = (hi: number, lo: number) => g[hi]! * 65536 + g[lo]!
  const prefixZero = (n: number) => g.slice(0, n).every((x) => x === 0)
  // ::ffff:a.b.c.d (IPv4-mapped) and 64:ff9b::a.b.c.d (NAT64) reach the embedded IPv4 address.
  if (prefixZero(5) && g[5] === 0xffff) return kindOfV4(embeddedV4(6, 7))
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return kindOfV4(embeddedV4(6, 7))
  // 2002::/16 (6to4) carries an IPv4 address in its second and third groups.
  if (g[0] === 0x2002) return kindOfV4(embeddedV4(1, 2))
  if (prefixZero(7) && g[7] === 1) return 'a loopback address'
  if ((g[0]! & 0xfe00) === 0xfc00) return 'a private address' // unique-local fc00::/7
  if ((g[0]! & 0xffc0) === 0xfe80) return 'a link-local address'
  if ((g[0]! & 0xff00) === 0xff00) return 'a multicast address'
  // Everything else outside global unicast 2000::/3 is not public: ::, IPv4-compatible ::/96,
  // discard 100::/64, site-local fec0::/10.
  if ((g[0]! & 0xe000) !== 0x2000) return 'a reserved address'
  if (g[0] === 0x2001 && g[1]! < 0x0200) return 'a reserved address' // 2001::/23 IETF protocol assignments (Teredo, ORCHID, ...)
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'a documentation address' // 2001:db8::/32
  if ((g[0]! & 0xfff0) === 0x3ff0) return 'a documentation address' // 3fff::/20
  return null
}

/**
 * What kind of non-public address `ip` (IPv4 or IPv6 text, brackets allowed) is, as words for a
 * message ("a private address"); null when it is a public unicast address.
 */
export function nonPublicKind(ip: string): string | null {
  const four = parseIPv4(ip)
  if (four !== null) return kindOfV4(four)
  const six = parseIPv6(ip)
  if (six !== null) return kindOfV6(six)
  return 'not an IP address'
}

/** True when `ip` (IPv4 or IPv6 text, brackets allowed) is a public unicast address. */
export function isPublicAddress(ip: string): boolean {
  return nonPublicKind(ip) === null
}

/** The IP address a URL hostname spells literally ("[::1]" → "::1"), or null for a name. */
export function literalAddress(hostname: string): string | null {
  if (parseIPv4(hostname) !== null) return hostname
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return parseIPv6(bare) !== null ? bare : null
}

// Read by tenants (members, integrators), who cannot change the service's settings: what they can do
// first (a public URL), then who can allow it (an operator, on a development service).
const ALLOW_PRIVATE_HINT =
  '(give a public https URL, e.g. a tunnel to your machine; only an operator can allow private addresses, on a development service)'

// This machine, as URL.hostname spells it: plain http may go there (WEBHOOK_ALLOW_PRIVATE only). The
// database's check on webhook_endpoints.url (migration 0011) accepts at least these.
const LOOPBACK_HOST = /^(?:[^/?#@]*\.)?localhost$|^127\.\d+\.\d+\.\d+$|^\[::1\]$/

/**
 * Why a webhook URL's scheme is refused, or null: https always; plain http only to this machine
 * (localhost, 127.0.0.0/8, [::1]) and only with `allowPrivate` (a receiver under development).
 */
export function webhookSchemeProblem(url: URL, allowPrivate: boolean): string | null {
  if (url.protocol === 'https:') return null
  if (url.protocol !== 'http:') return 'must be https'
  if (!LOOPBACK_HOST.test(url.hostname)) {
    return 'must be https (plain http only to localhost, on a development service where an operator allowed private addresses)'
  }
  if (allowPrivate) return null
  return 'must be https (give a public https URL; http://localhost only on a development service where an operator allowed private addresses)'
}

/** How long one DNS lookup of a webhook host may take, at registration and at every delivery. */
const DNS_TIMEOUT_MS = 5_000

type ResolvedHost =
  | { ok: true; addresses: string[]; literal: boolean }
  /**
   * `reason` is for the API client: it names the rule, and an address only when the URL spells it (never
   * what a name resolves to); `detail` is for the attempt log.
   */
  | { ok: false; reason: string; detail: string }

/**
 * The one resolver and address rule for webhook URLs, used at registration and at every delivery:
 * `hostname` as URL.hostname gives it (which has already turned forms like `2130706433` or `0x7f.1`
 * into dotted quads) → the addresses to connect to. Unless `allowPrivate`, every address the name
 * resolves to must be public, since a connection may use any of them (and the rule must not depend on
 * answer order). Delivery connects to exactly these addresses, so a DNS answer that changes between
 * the check and the connection (rebinding) cannot reach inside.
 */
export async function resolveWebhookHost(hostname: string, allowPrivate: boolean): Promise<ResolvedHost> {
  const literal = literalAddress(hostname)
  if (literal !== null) {
    const kind = nonPublicKind(literal)
    if (!allowPrivate && kind !== null) {
      return {
        ok: false,
        reason: `${hostname} is ${kind} ${ALLOW_PRIVATE_HINT}`,
        detail: `address refused: ${literal} is not a public address`,
      }
    }
    return { ok: true, addresses: [literal], literal: true }
  }
  const name = hostname.toLowerCase().replace(/\.$/, '')
  const unresolved = (detail: string) => ({ ok: false as const, reason: 'host does not resolve', detail: `DNS: ${detail}` })
  let addresses: string[]
  // RFC 6761 names are answered without asking DNS: .invalid never resolves, localhost is loopback.
  if (name === 'invalid' || name.endsWith('.invalid')) return unresolved('host not found')
  if (name === 'localhost' || name.endsWith('.localhost')) addresses = ['127.0.0.1', '::1']
  else {
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      const answers = await Promise.race([
        lookup(name, { all: true }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(Object.assign(new Error('DNS timeout'), { code: 'TIMEOUT' })), DNS_TIMEOUT_MS)
        }),
      ])
      addresses = answers.map((a) => a.address)
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code === 'TIMEOUT') return unresolved(`no answer within ${DNS_TIMEOUT_MS} ms`)
      return unresolved(code === 'ENOTFOUND' || code === undefined ? 'host not found' : code.slice(0, 50))
    } finally {
      clearTimeout(timer)
    }
    if (addresses.length === 0) return unresolved('host not found')
  }
  if (!allowPrivate) {
    const refused = addresses.find((a) => !isPublicAddress(a))
    if (refused !== undefined) {
      return {
        ok: false,
        // What a name resolves to inside the network is not told to the client: only the kind.
        reason: `host resolves to ${nonPublicKind(refused)} ${ALLOW_PRIVATE_HINT}`,
        detail: `address refused: ${name} resolves to ${refused}, not a public address`,
      }
    }
  }
  return { ok: true, addresses, literal: false }
}
