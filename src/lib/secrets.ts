// Secrets sealed at rest (an account's own provider credentials): AES-256-GCM through Web Crypto, a fresh
// 12-byte IV per seal, and the value's place (`sender:12:auth_token`) as additional authenticated data, so a
// sealed value copied into another row or field does not open. A sealed value is printable:
// `v1.<keyId>.<iv>.<ciphertext and tag>`, base64url, keyId the first 8 hex characters of the key's SHA-256.
// Errors name the key id or the context, never the plaintext or a key.

import { timingSafeEqual } from 'node:crypto'

export const SECRET_KEY_BYTES = 32

const VERSION = 'v1'
const IV_BYTES = 12
const TAG_BYTES = 16

export type SecretBox = {
  /** The id of the current key, the one `seal` uses. */
  keyId: string
  seal(plain: string, context: string): Promise<string>
  open(sealed: string, context: string): Promise<string>
  /** Sealed under a key other than the current one: open and seal it again. */
  needsRotation(sealed: string): boolean
  /**
   * A keyed digest of `plain` for `context` (HMAC-SHA-256 under a key derived from the current key):
   * `<keyId>.<mac>`. What a short secret (a one-time code) is kept as: a copy of the database alone
   * cannot try every code against it.
   */
  digest(plain: string, context: string): Promise<string>
  /** Whether `plain` is what `digest` was made of, under whichever held key made it, compared in constant time. */
  matchesDigest(plain: string, context: string, digest: string): Promise<boolean>
}

/** Why a value does not open: not a sealed value, sealed under a key not held, or altered / sealed for another context. */
export type SecretFailure = 'format' | 'key' | 'context'

export class SecretError extends Error {
  constructor(
    message: string,
    readonly failure: SecretFailure,
  ) {
    super(message)
  }
}

export function keyIdOf(key: Uint8Array): string {
  return new Bun.CryptoHasher('sha256').update(key).digest('hex').slice(0, 8)
}

/** A key written as base64 or base64url (padded or not); undefined when it is not exactly 32 bytes. */
export function decodeKey(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) return undefined
  const unpadded = text.replace(/-/g, '+').replace(/_/g, '/').replace(/=$/, '')
  const bytes = Buffer.from(unpadded, 'base64')
  // 43 characters carry 258 bits: a text whose last 2 bits are not zero is not the encoding of these 32 bytes.
  return bytes.length === SECRET_KEY_BYTES && bytes.toString('base64').replace(/=+$/, '') === unpadded ? new Uint8Array(bytes) : undefined
}

export function encodeKey(key: Uint8Array): string {
  return Buffer.from(key).toString('base64')
}

export function generateKey(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(SECRET_KEY_BYTES))
}

/** base64url with one encoding per byte string: a part edited without changing its bytes is refused too. */
function fromBase64url(part: string | undefined): Uint8Array<ArrayBuffer> | undefined {
  if (part === undefined || !/^[A-Za-z0-9_-]+$/.test(part)) return undefined
  const bytes = Buffer.from(part, 'base64url')
  return bytes.toString('base64url') === part ? new Uint8Array(bytes) : undefined
}

function parse(sealed: string): { keyId: string; iv: Uint8Array<ArrayBuffer>; data: Uint8Array<ArrayBuffer> } {
  const [version, keyId, ivPart, dataPart, ...rest] = sealed.split('.')
  const iv = fromBase64url(ivPart)
  const data = fromBase64url(dataPart)
  if (version !== VERSION || keyId === undefined || !/^[0-9a-f]{8}$/.test(keyId) || rest.length > 0 || iv?.length !== IV_BYTES) {
    throw new SecretError('not a sealed value (expected v1.<key id>.<iv>.<ciphertext>)', 'format')
  }
  if (!data || data.length < TAG_BYTES) throw new SecretError('not a sealed value (its ciphertext is missing or too short)', 'format')
  return { keyId, iv, data }
}

function importKey(key: Uint8Array): Promise<CryptoKey> {
  return crypto.subtle.importKey('raw', new Uint8Array(key), 'AES-GCM', false, ['encrypt', 'decrypt'])
}

export function createSecretBox(keys: { current: Uint8Array; previous: Uint8Array[] }): SecretBox {
  for (const key of [keys.current, ...keys.previous]) {
    if (key.length !== SECRET_KEY_BYTES) throw new SecretError(`a secrets key must be ${SECRET_KEY_BYTES} bytes`, 'key')
  }
  const keyId = keyIdOf(keys.current)
  // Current first: a previous key equal to the current one changes nothing.
  const byId = new Map<string, Promise<CryptoKey>>()
  for (const key of [keys.current, ...keys.previous]) {
    const id = keyIdOf(key)
    if (!byId.has(id)) byId.set(id, importKey(key))
  }
  const encoder = new TextEncoder()
  // The digests' keys: each secrets key's own, derived so a digest never uses the sealing key itself.
  const macById = new Map<string, Promise<CryptoKey>>()
  for (const key of [keys.current, ...keys.previous]) {
    const id = keyIdOf(key)
    if (!macById.has(id)) {
      const derived = new Uint8Array(new Bun.CryptoHasher('sha256').update('messaging-api digest v1\0').update(key).digest())
      macById.set(id, crypto.subtle.importKey('raw', derived, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']))
    }
  }
  const mac = async (id: string, plain: string, context: string) =>
    new Uint8Array(await crypto.subtle.sign('HMAC', await macById.get(id)!, encoder.encode(`${context}\0${plain}`)))

  return {
    keyId,
    async digest(plain, context) {
      return `${keyId}.${Buffer.from(await mac(keyId, plain, context)).toString('base64url')}`
    },
    async matchesDigest(plain, context, digest) {
      const [id, encoded] = digest.split('.')
      if (!id || !encoded || !macById.has(id)) return false
      const expected = Buffer.from(encoded, 'base64url')
      const given = await mac(id, plain, context)
      return expected.length === given.length && timingSafeEqual(expected, given)
    },
    async seal(plain, context) {
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES))
      const data = await crypto.subtle.encrypt(
        { name: 'AES-GCM', iv, additionalData: encoder.encode(context) },
        await byId.get(keyId)!,
        encoder.encode(plain),
      )
      return [VERSION, keyId, Buffer.from(iv).toString('base64url'), Buffer.from(data).toString('base64url')].join('.')
    },
    async open(sealed, context) {
      const { keyId: id, iv, data } = parse(sealed)
      const key = byId.get(id)
      if (!key) throw new SecretError(`sealed under key ${id}, which is neither SECRETS_KEY nor one of SECRETS_KEY_PREVIOUS`, 'key')
      let plain: ArrayBuffer
      try {
        plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv, additionalData: encoder.encode(context) }, await key, data)
      } catch {
        throw new SecretError(
          `the value sealed under key ${id} does not open for ${context}: altered, or sealed for another place`,
          'context',
        )
      }
      return new TextDecoder('utf-8', { fatal: true }).decode(plain)
    },
    needsRotation(sealed) {
      return parse(sealed).keyId !== keyId
    },
  }
}
