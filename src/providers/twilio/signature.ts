// Twilio's request signature (X-Twilio-Signature): base64 HMAC-SHA1, keyed with the auth token, over
// the full callback URL followed by every form field as key + value, keys sorted. Repeated keys
// follow the official helper libraries (twilio-node, twilio-python): their values are de-duplicated
// and sorted, each written as key + value. Sorting is JavaScript's default (UTF-16 code units),
// the same as twilio-node, so the two agree on every input. Bun's built-in hasher (no node:crypto
// import) keeps the configuration, which lists the providers, light to load for --help.

type SignedParams = Record<string, string> | URLSearchParams

function grouped(params: SignedParams): Map<string, string[]> {
  const groups = new Map<string, string[]>()
  const entries = params instanceof URLSearchParams ? params.entries() : Object.entries(params)
  for (const [key, value] of entries) {
    const values = groups.get(key)
    if (values) values.push(value)
    else groups.set(key, [value])
  }
  return groups
}

/** The signature Twilio sends for a request to `url` with these form fields. */
export function twilioSignature(authToken: string, url: string, params: SignedParams): string {
  const groups = grouped(params)
  let data = url
  for (const key of [...groups.keys()].sort()) {
    for (const value of [...new Set(groups.get(key))].sort()) data += key + value
  }
  return new Bun.CryptoHasher('sha1', authToken).update(data, 'utf8').digest('base64')
}

/**
 * Whether `header` (the X-Twilio-Signature value) is the signature of this request. The comparison
 * is constant-time; the early length check leaks nothing, since a valid signature's length is fixed.
 */
export function verifyTwilioSignature(authToken: string, url: string, params: SignedParams, header: string | null | undefined): boolean {
  if (!header || !authToken) return false
  const expected = Buffer.from(twilioSignature(authToken, url, params), 'utf8')
  const given = Buffer.from(header, 'utf8')
  return given.length === expected.length && crypto.timingSafeEqual(given, expected)
}
