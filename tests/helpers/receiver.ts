// A real HTTPS webhook receiver on loopback, with a throwaway CA made by openssl for each test file:
// the CA's PEM goes to WEBHOOK_CA_FILE, the server's certificate names DNS:localhost and IP:127.0.0.1.
// Without TLS it is a plain-http receiver (http://localhost URLs are allowed with WEBHOOK_ALLOW_PRIVATE).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Clock } from '../../src/lib/clock'

export type TestTls = { dir: string; caFile: string; certFile: string; keyFile: string; remove(): void }

function openssl(args: string[], cwd: string): void {
  const run = Bun.spawnSync(['openssl', ...args], { cwd, stdout: 'pipe', stderr: 'pipe' })
  if (run.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${run.stderr.toString()}`)
}

/** A CA and a server certificate signed by it (SAN DNS:localhost, IP:127.0.0.1), in a temporary directory. */
export function makeTestTls(): TestTls {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-tls-'))
  openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Webhook Test CA'],
    dir,
  )
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost'], dir)
  writeFileSync(join(dir, 'san.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n')
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'server.pem',
      '-days',
      '2',
      '-extfile',
      'san.cnf',
    ],
    dir,
  )
  return {
    dir,
    caFile: join(dir, 'ca.pem'),
    certFile: join(dir, 'server.pem'),
    keyFile: join(dir, 'server.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}

export type Received = {
  /** 1-based order of arrival. */
  n: number
  path: string
  host: string | null
  headers: Record<string, string>
  body: string
  /** When it arrived, in ms since the epoch on the receiver's clock. */
  at: number
}

export type Handler = (request: Received) => Response | Promise<Response>

export type Receiver = {
  port: number
  /** `https://localhost:PORT/hook` (a name: resolved by the worker) or with `127.0.0.1` (a literal); http:// without TLS. */
  url(host?: 'localhost' | '127.0.0.1', path?: string): string
  requests: Received[]
  /** How each request is answered; 200 by default. */
  handler: Handler
  /** Waits until `count` requests have arrived (or `ms` passes) and returns them. */
  waitFor(count: number, ms?: number): Promise<Received[]>
  /** Resolves with the requests once `count` have arrived: an event (each arrival), with no time limit of its own. */
  arrived(count: number): Promise<Received[]>
  /** Requests whose webhook-id is `id`. */
  byId(id: string): Received[]
  reset(): void
  stop(): void
}

/** `clock`: the time each request's `at` is read from (a test clock's, to compare with what the service stamps); the system's by default. */
export function startReceiver(tls: TestTls | null, clock: Pick<Clock, 'now'> = { now: () => new Date() }): Receiver {
  // Who waits for a number of requests: told at each arrival, never polling.
  let waiting: { count: number; resolve: (requests: Received[]) => void }[] = []
  const arrived = (count: number) =>
    receiver.requests.length >= count
      ? Promise.resolve(receiver.requests)
      : new Promise<Received[]>((resolve) => waiting.push({ count, resolve }))
  const receiver: Receiver = {
    port: 0,
    url: (host = 'localhost', path = '/hook') => `${tls ? 'https' : 'http'}://${host}:${receiver.port}${path}`,
    requests: [],
    handler: () => new Response('ok'),
    async waitFor(count, ms = 10_000) {
      let timer: ReturnType<typeof setTimeout> | undefined
      const late = new Promise<Received[]>((resolve) => (timer = setTimeout(() => resolve(receiver.requests), ms)))
      try {
        return await Promise.race([arrived(count), late])
      } finally {
        clearTimeout(timer)
      }
    },
    arrived,
    byId: (id) => receiver.requests.filter((r) => r.headers['webhook-id'] === id),
    reset() {
      waiting = []
      receiver.requests = []
      receiver.handler = () => new Response('ok')
    },
    stop: () => void server.stop(true),
  }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    tls: tls ? { cert: Bun.file(tls.certFile), key: Bun.file(tls.keyFile) } : undefined,
    idleTimeout: 30,
    async fetch(request) {
      const received: Received = {
        n: receiver.requests.length + 1,
        path: new URL(request.url).pathname,
        host: request.headers.get('host'),
        headers: Object.fromEntries(request.headers.entries()),
        body: await request.text(),
        at: clock.now().getTime(),
      }
      receiver.requests.push(received)
      const ready = waiting.filter((w) => receiver.requests.length >= w.count)
      waiting = waiting.filter((w) => receiver.requests.length < w.count)
      for (const w of ready) w.resolve(receiver.requests)
      return receiver.handler(received)
    },
  })
  receiver.port = server.port!
  return receiver
}
