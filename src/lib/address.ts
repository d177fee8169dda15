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

// IANA special-purpose and non-unicast IPv4 ranges: [network, prefix length].
const NON_PUBLIC_V4: [number, number][] = [
  [v4(0, 0, 0, 0), 8], // "this network"
  [v4(10, 0, 0, 0), 8], // private
  [v4(100, 64, 0, 0), 10], // carrier-grade NAT
  [v4(127, 0, 0, 0), 8], // loopback
  [v4(169, 254, 0, 0), 16], // link-local, including the cloud metadata address 169.254.169.254
  [v4(172, 16, 0, 0), 12], // private
  [v4(192, 0, 0, 0), 24], // IETF protocol assignments
  [v4(192, 0, 2, 0), 24], // documentation
  [v4(192, 88, 99, 0), 24], // 6to4 relay anycast
  [v4(192, 168, 0, 0), 16], // private
  [v4(198, 18, 0, 0), 15], // benchmarking
  [v4(198, 51, 100, 0), 24], // documentation
  [v4(203, 0, 113, 0), 24], // documentation
  [v4(224, 0, 0, 0), 4], // multicast
  [v4(240, 0, 0, 0), 4], // reserved, including broadcast
]

function isPublicV4(value: number): boolean {
  for (const [network, bits] of NON_PUBLIC_V4) {
    const size = 2 ** (32 - bits)
    if (value >= network && value < network + size) return false
  }
  return true
}

function isPublicV6(g: number[]): boolean {
  const embeddedV4 = (hi: number, lo: number) => g[hi]! * 65536 + g[lo]!
  const prefixZero = (n: number) => g.slice(0, n).every((x) => x === 0)
  // ::ffff:a.b.c.d (IPv4-mapped) and 64:ff9b::a.b.c.d (NAT64) reach the embedded IPv4 address.
  if (prefixZero(5) && g[5] === 0xffff) return isPublicV4(embeddedV4(6, 7))
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return isPublicV4(embeddedV4(6, 7))
  // 2002::/16 (6to4) carries an IPv4 address in its second and third groups.
  if (g[0] === 0x2002) return isPublicV4(embeddedV4(1, 2))
  // Everything else outside global unicast 2000::/3 is not public: ::, ::1, IPv4-compatible ::/96,
  // discard 100::/64, unique-local fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8.
  if ((g[0]! & 0xe000) !== 0x2000) return false
  if (g[0] === 0x2001 && g[1]! < 0x0200) return false // 2001::/23 IETF protocol assignments (Teredo, ORCHID, ...)
  if (g[0] === 0x2001 && g[1] === 0x0db8) return false // 2001:db8::/32 documentation
  if ((g[0]! & 0xfff0) === 0x3ff0) return false // 3fff::/20 documentation
  return true
}

/** True when `ip` (IPv4 or IPv6 text, brackets allowed) is a public unicast address. */
export function isPublicAddress(ip: string): boolean {
  const four = parseIPv4(ip)
  if (four !== null) return isPublicV4(four)
  const six = parseIPv6(ip)
  if (six !== null) return isPublicV6(six)
  return false
}

/** The IP address a URL hostname spells literally ("[::1]" → "::1"), or null for a name. */
export function literalAddress(hostname: string): string | null {
  if (parseIPv4(hostname) !== null) return hostname
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return parseIPv6(bare) !== null ? bare : null
}

/** How long one DNS lookup of a webhook host may take, at registration and at every delivery. */
const DNS_TIMEOUT_MS = 5_000

type ResolvedHost =
  | { ok: true; addresses: string[]; literal: boolean }
  /** `reason` is for the API client (it never names an address); `detail` is for the attempt log. */
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
    if (!allowPrivate && !isPublicAddress(literal)) {
      return { ok: false, reason: 'host is not a public address', detail: `address refused: ${literal} is not a public address` }
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
        reason: 'host resolves to a non-public address',
        detail: `address refused: ${name} resolves to ${refused}, not a public address`,
      }
    }
  }
  return { ok: true, addresses, literal: false }
}
