// Outer ring (real time): the service runs as child processes, started and stopped on one DATA_DIR.
// The key a service without SECRETS_KEY generates once into DATA_DIR/secrets-key and finds again, and
// never logs (the sealing library itself: secrets.test.ts).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeKey, generateKey } from '../../src/lib/secrets'
import { startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'

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

describe('the service’s key', () => {
  const temps: string[] = []
  const children: Child[] = []
  let databaseUrl: string | undefined
  let dropDatabase = async () => {}

  /** A new DATA_DIR, its database migrated already: the tests are about the key file, not a first start. */
  const dataDir = async () => {
    const dir = mkdtempSync(join(tmpdir(), 'messaging-secrets-'))
    temps.push(dir)
    await premigrate(dir)
    return dir
  }

  /** The service as a child process; SECRETS_KEY unset unless given (whatever this test's own environment holds). */
  async function start(env: Record<string, string>): Promise<Child> {
    const child = await startChild(
      { SECRETS_KEY: '', SECRETS_KEY_PREVIOUS: '', LOG_LEVEL: 'debug', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}), ...env },
      { readyMs: 90_000 },
    )
    children.push(child)
    return child
  }

  beforeAll(async () => {
    if (usingPostgres()) {
      const database = await createMigratedPostgresDatabase()
      databaseUrl = database.url
      dropDatabase = database.drop
    }
  }, 30_000)

  afterAll(async () => {
    await Promise.all(children.map((child) => (child.proc.exitCode === null ? child.kill9() : undefined)))
    await dropDatabase()
    for (const dir of temps) rmSync(dir, { recursive: true, force: true })
  }, 30_000)

  test('without SECRETS_KEY: generated once into DATA_DIR/secrets-key (0600), found again on the next start, never logged', async () => {
    const dir = await dataDir()
    const file = join(dir, 'secrets-key')
    const first = await start({ DATA_DIR: dir })
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const content = readFileSync(file, 'utf8')
    expect(content).toMatch(/^[A-Za-z0-9+/]{43}=\n$/)
    expect(await first.stop()).toBe(0)

    const second = await start({ DATA_DIR: dir })
    expect(await second.stop()).toBe(0)
    expect(readFileSync(file, 'utf8')).toBe(content)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const key = Buffer.from(content.trim(), 'base64')
    for (const output of [first.output(), second.output()]) {
      for (const secret of spellings(key)) expect(output).not.toContain(secret)
    }

    // A file that no longer holds a key stops the start, is left as it was, and is named, not shown.
    writeFileSync(file, 'Zm9vYmFyYmF6-damaged\n')
    const refused = await rejection(() => start({ DATA_DIR: dir }))
    expect(refused).toContain(`cannot start: ${file} does not hold a 32-byte base64 key`)
    expect(refused).not.toContain('Zm9vYmFyYmF6')
    expect(readFileSync(file, 'utf8')).toBe('Zm9vYmFyYmF6-damaged\n')
  }, 240_000)

  test('with SECRETS_KEY: no key file is written, and the key is never logged', async () => {
    const dir = await dataDir()
    const key = generateKey()
    const child = await start({ DATA_DIR: dir, SECRETS_KEY: encodeKey(key), SECRETS_KEY_PREVIOUS: encodeKey(generateKey()) })
    expect(await child.stop()).toBe(0)
    expect(existsSync(join(dir, 'secrets-key'))).toBe(false)
    for (const secret of spellings(key)) expect(child.output()).not.toContain(secret)
  }, 120_000)
})
