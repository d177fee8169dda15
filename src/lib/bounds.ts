// Bounds on what a body makes once parsed. JSON.parse and URLSearchParams build an object for every few
// bytes (JSON.parse turns 4 MB of `[{},{},…]` into some 120 MB of objects), so the structure is counted
// on the text first, and a body past a bound is refused before anything is built. Each function answers
// the bound exceeded, as words for an error message ("nested deeper than 16 levels"), or null.

export type JsonBounds = { depth: number; values: number }

/**
 * Depth and number of values, counted on the bytes: brackets and commas outside strings. UTF-8
 * continuation bytes are never ASCII, so a byte-wise scan cannot be fooled by multi-byte characters.
 */
export function jsonBoundExceeded(body: Uint8Array | string, bounds: JsonBounds): string | null {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body
  let depth = 0
  let values = 1
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]
    if (byte === 0x22) {
      // skip the string: to the next quote not escaped by a backslash
      for (i++; i < bytes.length && bytes[i] !== 0x22; i++) if (bytes[i] === 0x5c) i++
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > bounds.depth) return `nested deeper than ${bounds.depth} levels`
      if (++values > bounds.values) return `more than ${bounds.values} JSON values`
    } else if (byte === 0x5d || byte === 0x7d) {
      depth--
    } else if (byte === 0x2c) {
      if (++values > bounds.values) return `more than ${bounds.values} JSON values`
    }
  }
  return null
}

/** Whether a form-encoded body (`a=1&b=2`) has more than `fields` fields, counted by its separators. */
export function formBoundExceeded(body: string, fields: number): string | null {
  let separators = 0
  for (let at = body.indexOf('&'); at !== -1; at = body.indexOf('&', at + 1)) {
    if (++separators >= fields) return `more than ${fields} form fields`
  }
  return null
}
