// Secrets at rest: the sealing library (checked against node:crypto's own AES-GCM) and its two variables.
// The key a service without SECRETS_KEY generates into DATA_DIR/secrets-key: secrets-key.outer.test.ts.

import { describe, expect, test } from 'bun:test'
import { createDecipheriv, createHash } from 'node:crypto'
import { ConfigError, readConfig } from '../../src/config'
import { createSecretBox, encodeKey, generateKey } from '../../src/lib/secrets'
import { testApp } from '../helpers/app'

const CONTEXT = 'sender:12:auth_token'
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

/** Every way a key could leak into a message: its base64, base64url and hex. */
const spellings = (key: Uint8Array) => [encodeKey(key), Buffer.from(key).toString('base64url'), Buffer.from(key).toString('hex')]

/** The message of what `run` throws (failing the test when it throws nothing). */
async function rejection(run: () => Promise<unknown>): Promise<string> {
  try {
    await run()
  } catch (error) {
    expect(error).toBeInstanceOf(Error)
    return (error as Error).message
  }
  throw new Error('expected it to throw')
}

describe('sealing', () => {
  const key = generateKey()
  const box = createSecretBox({ current: key, previous: [] })
  const plain = 'auth-token-3f9c2a7e1b'

  test('seal then open gives the text back, unicode and empty text too; the format is v1.<key id>.<iv>.<ciphertext>', async () => {
    for (const text of [plain, 'Rp 1.000 ✓ — 你好 👋🏽 café', '', 'x'.repeat(10_000)]) {
      const sealed = await box.seal(text, CONTEXT)
      expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22,}$/)
      if (text) expect(sealed).not.toContain(text)
      expect(await box.open(sealed, CONTEXT)).toBe(text)
    }
  })

  test('the key id is the first 8 hex characters of the key’s SHA-256', async () => {
    const id = createHash('sha256').update(key).digest('hex').slice(0, 8)
    expect(box.keyId).toBe(id)
    expect((await box.seal(plain, CONTEXT)).split('.')[1]).toBe(id)
  })

  test('AES-256-GCM with the context as additional data: node:crypto opens it on its own', async () => {
    const [, , iv, data] = (await box.seal(plain, CONTEXT)).split('.') as [string, string, string, string]
    const bytes = Buffer.from(data, 'base64url')
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
    decipher.setAAD(Buffer.from(CONTEXT))
    decipher.setAuthTag(bytes.subarray(bytes.length - 16))
    expect(Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString()).toBe(plain)
  })

  test('each seal differs: a fresh IV every time', async () => {
    const sealed = await Promise.all(Array.from({ length: 50 }, () => box.seal(plain, CONTEXT)))
    expect(new Set(sealed).size).toBe(50)
    expect(new Set(sealed.map((s) => s.split('.')[2])).size).toBe(50)
  })

  test('any character changed, anything cut or added: it does not open, and the error shows neither text nor key', async () => {
    const sealed = await box.seal(plain, CONTEXT)
    // Every other character at every place: the last one of a part also meets the spellings that decode to
    // the same bytes (its unused low bits set), which must not open either.
    const altered: string[] = []
    for (let i = 0; i < sealed.length; i++) {
      for (const swap of `${BASE64URL}.=+/`) if (swap !== sealed[i]) altered.push(sealed.slice(0, i) + swap + sealed.slice(i + 1))
    }
    const [version, id, iv, data] = sealed.split('.') as [string, string, string, string]
    const other = (await box.seal(plain, CONTEXT)).split('.') as [string, string, string, string]
    altered.push(
      sealed.slice(0, -1),
      sealed.slice(0, -4),
      `${sealed}A`,
      `${sealed}.`,
      `${sealed}.AAAA`,
      [version, id, iv].join('.'),
      [version, id, other[2], data].join('.'), // another seal's IV
      [version, id, iv, other[3]].join('.'), // another seal's ciphertext
      `v2.${id}.${iv}.${data}`,
      '',
      'not sealed at all',
    )
    for (const value of altered) {
      const message = await rejection(() => box.open(value, CONTEXT))
      for (const secret of [plain, ...spellings(key)]) expect(message).not.toContain(secret)
    }
  })

  test('another context does not open it: a value copied to another row or field', async () => {
    const sealed = await box.seal(plain, CONTEXT)
    for (const context of ['sender:13:auth_token', 'sender:12:access_token', 'sender:12:auth_token ', '']) {
      const message = await rejection(() => box.open(sealed, context))
      expect(message).toContain('does not open')
      expect(message).not.toContain(plain)
    }
    expect(await box.open(await box.seal(plain, ''), '')).toBe(plain)
  })

  test('a key other than the current one: previous keys open their values and ask for rotation, unknown ones throw', async () => {
    const [k1, k2, k3] = [generateKey(), generateKey(), generateKey()]
    const first = createSecretBox({ current: k1, previous: [] })
    const second = createSecretBox({ current: k2, previous: [k1] })
    const third = createSecretBox({ current: k3, previous: [k2, k1] })
    const sealedFirst = await first.seal(plain, CONTEXT)
    const sealedSecond = await second.seal(plain, CONTEXT)

    expect(first.needsRotation(sealedFirst)).toBe(false)
    expect(await second.open(sealedFirst, CONTEXT)).toBe(plain)
    expect(second.needsRotation(sealedFirst)).toBe(true)
    expect(second.needsRotation(sealedSecond)).toBe(false)
    expect(await third.open(sealedFirst, CONTEXT)).toBe(plain)
    expect(await third.open(sealedSecond, CONTEXT)).toBe(plain)
    expect(third.needsRotation(sealedSecond)).toBe(true)

    // Rotation: open under the old key, seal under the current one.
    const rotated = await second.seal(await second.open(sealedFirst, CONTEXT), CONTEXT)
    expect(second.needsRotation(rotated)).toBe(false)
    expect(rotated.split('.')[1]).toBe(second.keyId)

    // A key it does not hold: the first box knows nothing of k2.
    const message = await rejection(() => first.open(sealedSecond, CONTEXT))
    expect(message).toContain(`key ${second.keyId}`)
    for (const secret of [plain, ...spellings(k1), ...spellings(k2)]) expect(message).not.toContain(secret)
    expect(await rejection(() => createSecretBox({ current: k3, previous: [] }).open(sealedFirst, CONTEXT))).toContain(first.keyId)
  })

  test('a key that is not 32 bytes is refused', () => {
    expect(() => createSecretBox({ current: new Uint8Array(16), previous: [] })).toThrow('32 bytes')
    expect(() => createSecretBox({ current: generateKey(), previous: [new Uint8Array(31)] })).toThrow('32 bytes')
  })

  test('needsRotation on something that is not a sealed value throws', () => {
    expect(() => box.needsRotation('plain text')).toThrow('not a sealed value')
  })
})

describe('configuration', () => {
  const key = generateKey()
  const base64 = encodeKey(key)
  /** The last character of the unpadded base64 with one of its 2 unused bits set: 258 bits, not 256. */
  const unpadded = base64.replace(/=+$/, '')
  const base64Alphabet = BASE64URL.replace('-', '+').replace('_', '/')
  const nonCanonical = unpadded.slice(0, -1) + base64Alphabet[base64Alphabet.indexOf(unpadded.at(-1)!) | 1]

  const configError = (env: Record<string, string>): string => {
    try {
      readConfig(env)
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError)
      return (error as Error).message
    }
    throw new Error(`${Object.keys(env).join(', ')} accepted`)
  }

  test('unset: no key (the service generates its own) and no previous keys', () => {
    expect(readConfig({})).toMatchObject({ secretsKey: undefined, secretsKeysPrevious: [] })
    expect(readConfig({ SECRETS_KEY: '', SECRETS_KEY_PREVIOUS: '' })).toMatchObject({ secretsKey: undefined, secretsKeysPrevious: [] })
  })

  test('SECRETS_KEY: 32 bytes in base64 or base64url, padded or not', () => {
    for (const text of [base64, unpadded, Buffer.from(key).toString('base64url'), ` ${base64}\n`]) {
      expect(readConfig({ SECRETS_KEY: text }).secretsKey).toEqual(key)
    }
  })

  test('SECRETS_KEY_PREVIOUS: comma-separated keys in the same formats', () => {
    const [a, b] = [generateKey(), generateKey()]
    const config = readConfig({ SECRETS_KEY: base64, SECRETS_KEY_PREVIOUS: `${encodeKey(a)}, ${Buffer.from(b).toString('base64url')},` })
    expect(config.secretsKeysPrevious).toEqual([a, b])
  })

  const bad = [
    'short',
    'correct horse battery staple correct horse',
    Buffer.from(key).toString('hex'), // 32 bytes, but hex
    encodeKey(key.subarray(0, 31)),
    encodeKey(new Uint8Array([...key, 1])),
    nonCanonical,
    `${unpadded.slice(0, -1)}*`,
    `${base64}==`,
  ]

  test('a bad SECRETS_KEY is a configuration error that names it and never shows the value', () => {
    for (const value of bad) {
      const message = configError({ SECRETS_KEY: value })
      expect(message).toStartWith('SECRETS_KEY: ')
      expect(message).not.toContain(value.trim())
    }
  })

  test('a bad key in SECRETS_KEY_PREVIOUS names the variable and the key’s place, showing no key', () => {
    const good = encodeKey(generateKey())
    for (const value of bad) {
      const message = configError({ SECRETS_KEY_PREVIOUS: `${good},${value}` })
      expect(message).toStartWith('SECRETS_KEY_PREVIOUS: key 2 of 2: ')
      expect(message).not.toContain(value.trim())
      expect(message).not.toContain(good)
    }
  })
})

test('test apps get a box without any configuration, one key for every app of the process', async () => {
  const [one, two] = [await testApp(), await testApp()]
  try {
    const sealed = await one.deps.secrets.seal('token', CONTEXT)
    expect(await two.deps.secrets.open(sealed, CONTEXT)).toBe('token')
  } finally {
    await Promise.all([one.close(), two.close()])
  }
}, 120_000)

describe('digests (what a one-time code is kept as)', () => {
  test('match only the same text, context and a held key; a rotation keeps them checkable while the old key is held', async () => {
    const [k1, k2] = [generateKey(), generateKey()]
    const first = createSecretBox({ current: k1, previous: [] })
    const digest = await first.digest('123456', 'verification:abc')
    expect(digest).toMatch(new RegExp(`^${first.keyId}\\.[\\w-]{43}$`))
    expect(await first.digest('123456', 'verification:abc')).toBe(digest)
    expect(await first.matchesDigest('123456', 'verification:abc', digest)).toBe(true)
    expect(await first.matchesDigest('123457', 'verification:abc', digest)).toBe(false)
    expect(await first.matchesDigest('123456', 'verification:abd', digest)).toBe(false)
    // Under another key the same text digests differently: the digest is not the text's hash alone.
    expect(await createSecretBox({ current: k2, previous: [] }).digest('123456', 'verification:abc')).not.toBe(digest)
    expect(await createSecretBox({ current: k2, previous: [k1] }).matchesDigest('123456', 'verification:abc', digest)).toBe(true)
    expect(await createSecretBox({ current: k2, previous: [] }).matchesDigest('123456', 'verification:abc', digest)).toBe(false)
    for (const malformed of ['', 'nodot', `${first.keyId}.`, `${first.keyId}.AAAA`]) {
      expect(await first.matchesDigest('123456', 'verification:abc', malformed)).toBe(false)
    }
  })
})
