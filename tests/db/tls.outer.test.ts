// Outer ring (real time): a proxy in front of PostgreSQL, and openssl.
// TLS to PostgreSQL as the URL's sslmode asks, negotiated by the client's sockets (src/db/wire.ts)
// before the driver speaks. A loopback front answers PostgreSQL's SSLRequest ('S', then TLS with a
// certificate made for the test, relaying the clear bytes to the real server; or 'N', as a server
// without TLS), so what each mode does is seen on the wire: `require` goes over TLS without checking the
// certificate, `verify-full` refuses a certificate no CA signed, at once (not a failure to wait through),
// `prefer` goes in clear to a server without TLS and `require` refuses it.
//
// PostgreSQL mode only (DATABASE_URL); needs openssl (required in CI, which installs it).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import net from 'node:net'
import tls from 'node:tls'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/client'
import { createPostgresDatabase, usingPostgres } from '../helpers/db'
import { makeCertificate } from '../helpers/certificate'

const haveOpenssl = Bun.which('openssl') !== null
const skip = !usingPostgres() || (!haveOpenssl && !process.env.CI)
if (usingPostgres() && !haveOpenssl && !process.env.CI)
  console.warn('tests/db/tls.outer.test.ts skipped: openssl is missing (apt-get install openssl)')

/** A front for PostgreSQL on loopback: answers the SSLRequest with `answer`, then relays (over TLS after 'S'). */
async function startFront(target: { host: string; port: number }, answer: 'S' | 'N', credentials: { key: Buffer; cert: Buffer }) {
  let tlsSessions = 0
  let clearSessions = 0
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    sockets.add(client)
    client.once('data', (first: Buffer) => {
      const upstream = net.connect(target.port, target.host)
      sockets.add(upstream)
      const relay = (front: net.Socket, rest?: Buffer) => {
        if (rest?.length) upstream.write(rest)
        front.pipe(upstream)
        upstream.pipe(front)
        const end = () => (front.destroy(), upstream.destroy())
        front.on('error', end).on('close', end)
        upstream.on('error', end).on('close', end)
      }
      const sslRequest = first.length >= 8 && first.readUInt32BE(4) === 80877103
      if (!sslRequest) return void (clearSessions++, relay(client, first))
      client.write(answer)
      if (answer === 'N') return void (clearSessions++, relay(client))
      const secure = new tls.TLSSocket(client, { isServer: true, secureContext: tls.createSecureContext(credentials) })
      secure.once('secure', () => tlsSessions++)
      relay(secure)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    sessions: () => ({ tls: tlsSessions, clear: clearSessions }),
    close() {
      for (const s of sockets) s.destroy()
      server.close()
    },
  }
}

describe.skipIf(skip)('TLS as the URL says', () => {
  let db: { url: string; drop(): Promise<void> }
  let credentials: { key: Buffer; cert: Buffer }
  let dir: string
  const fronts: { close(): void }[] = []

  beforeAll(async () => {
    db = await createPostgresDatabase()
    dir = mkdtempSync(join(tmpdir(), 'pg-tls-'))
    const made = makeCertificate(dir)
    credentials = { key: readFileSync(made.keyFile), cert: readFileSync(made.certFile) }
  }, 60_000)
  afterAll(async () => {
    for (const front of fronts) front.close()
    rmSync(dir, { recursive: true, force: true })
    await db?.drop()
  })

  const through = async (answer: 'S' | 'N', sslmode: string) => {
    const target = new URL(db.url)
    const front = await startFront({ host: target.hostname, port: Number(target.port || 5432) }, answer, credentials)
    fronts.push(front)
    const url = new URL(db.url)
    url.hostname = 'localhost'
    url.port = String(front.port)
    url.searchParams.set('sslmode', sslmode)
    return { front, url: url.toString() }
  }

  test('require: statements go over TLS, the certificate unchecked', async () => {
    const { front, url } = await through('S', 'require')
    const database = await openDatabase({ databaseUrl: url, poolMax: 2 })
    try {
      const [row] = await database.sql<{ n: number }[]>`select ${41}::int + 1 as n`
      expect(row!.n).toBe(42)
      expect(front.sessions()).toEqual({ tls: 1, clear: 0 })
    } finally {
      await database.close()
    }
  })

  test('verify-full: a certificate no CA signed fails the statement at once, not waited through', async () => {
    const { front, url } = await through('S', 'verify-full')
    const database = await openDatabase({ databaseUrl: url, poolMax: 1 })
    try {
      const started = performance.now()
      const error = await database.sql`select 1`.catch((e) => e)
      expect(error).toBeInstanceOf(Error)
      expect(String(error.code)).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY|CERT/)
      expect(performance.now() - started).toBeLessThan(5_000)
      expect(front.sessions().clear).toBe(0)
    } finally {
      await database.close()
    }
  })

  test('prefer: a server without TLS is spoken to in clear; require refuses it at once', async () => {
    const clear = await through('N', 'prefer')
    const preferring = await openDatabase({ databaseUrl: clear.url, poolMax: 1 })
    try {
      expect((await preferring.sql<{ ok: boolean }[]>`select true as ok`)[0]!.ok).toBe(true)
      expect(clear.front.sessions()).toEqual({ tls: 0, clear: 1 })
    } finally {
      await preferring.close()
    }
    const refused = await through('N', 'require')
    const requiring = await openDatabase({ databaseUrl: refused.url, poolMax: 1 })
    try {
      const started = performance.now()
      const error = await requiring.sql`select 1`.catch((e) => e)
      expect([error.code, error.message]).toEqual(['TLS_REFUSED', 'the server does not support TLS (sslmode asks for it)'])
      expect(performance.now() - started).toBeLessThan(5_000)
    } finally {
      await requiring.close()
    }
  })
})
