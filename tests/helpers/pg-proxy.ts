// A TCP proxy in front of PostgreSQL that can lose a COMMIT's answer: after the client sends a
// statement containing a marker, the proxy lets the server run it (and commit: an autocommit
// statement commits before its ReadyForQuery), then cuts both connections instead of forwarding the
// answer. The client sees a broken connection and cannot know whether the statement committed.
// By default the first marked statement is cut; `cutTimes` and `chance` (asked for each marked
// statement) make it the fault test's random lost COMMITs.

import net from 'node:net'
import { openDatabase, type Database } from '../../src/db/client'

/** How a connection is turned away: an error (reset), a clean close, or PostgreSQL's 57P03 "starting up" answer. */
export type RefuseWith = 'close' | 'reset' | 'starting'

/** An ErrorResponse: FATAL 57P03, the database system is starting up. */
const STARTING_UP = (() => {
  const fields = Buffer.from('SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0')
  const header = Buffer.alloc(5)
  header[0] = 0x45 // E
  header.writeUInt32BE(4 + fields.length, 1)
  return Buffer.concat([header, fields])
})()

/**
 * A loopback TCP server that opens a connection to `target` for each client and hands both sockets to
 * `relay` (which forwards, or not, what each side sends); a side that closes or fails closes both.
 * `refuse`, asked for each new client, closes it at once instead. Answers its port, a way to cut every
 * open connection, and close().
 */
function listenRelay(
  target: { host: string; port: number },
  relay: (client: net.Socket, upstream: net.Socket) => void,
  refuse: () => boolean = () => false,
  refuseWith: RefuseWith = 'close',
): Promise<{ port: number; cutAll(): void; close(): void }> {
  const sockets = new Set<net.Socket>()
  const cutAll = () => {
    for (const s of sockets) s.destroy()
  }
  const server = net.createServer((client) => {
    if (refuse()) {
      if (refuseWith === 'reset') return void client.resetAndDestroy()
      if (refuseWith === 'close') return void client.destroy()
      // As PostgreSQL answers a startup while it recovers: FATAL 57P03, then the close.
      return void client.once('data', () => client.end(STARTING_UP))
    }
    const upstream = net.connect(target.port, target.host)
    sockets.add(client).add(upstream)
    const end = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
    relay(client, upstream)
  })
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: (server.address() as net.AddressInfo).port,
        cutAll,
        close() {
          cutAll()
          server.close()
        },
      })
    })
  })
}

export type PgProxy = {
  port: number
  cuts(): number
  /** `hold`: whether the marked statement has come (and waits for `hold`). */
  held(): boolean
  close(): void
}

export function startPgProxy(
  target: { host: string; port: number },
  marker: string | string[],
  /**
   * `before`: the marked statement never reaches the server: the connection is cut as soon as the
   * client sends its text (a statement that did not run, as in an outage that began just then).
   * `hold`: nothing is cut; the first marked statement reaches the server only once `hold` settles (a
   * statement held up, as by a slow network).
   */
  options: { cutTimes?: number; chance?: () => boolean; before?: boolean; hold?: Promise<void> } = {},
): Promise<PgProxy> {
  let cuts = 0
  const needles = (Array.isArray(marker) ? marker : [marker]).map((m) => Buffer.from(m))
  const marked = (body: Buffer) => needles.some((needle) => body.includes(needle)) && (options.chance?.() ?? true)

  const cutBefore = (client: net.Socket, upstream: net.Socket) => {
    client.on('data', (chunk: Buffer) => {
      if (cuts < (options.cutTimes ?? 1) && needles.some((needle) => chunk.includes(needle))) {
        cuts++
        client.destroy()
        upstream.destroy()
        return
      }
      upstream.write(chunk)
    })
    upstream.pipe(client)
  }

  let held = false
  const holdFirst = (client: net.Socket, upstream: net.Socket) => {
    let waiting: Buffer[] | null = null
    client.on('data', (chunk: Buffer) => {
      if (waiting) return void waiting.push(chunk)
      if (!held && needles.some((needle) => chunk.includes(needle))) {
        held = true
        waiting = [chunk]
        void options.hold!.then(() => {
          for (const c of waiting!) upstream.write(c)
          waiting = null
        })
        return
      }
      upstream.write(chunk)
    })
    upstream.pipe(client)
  }

  const relay = (client: net.Socket, upstream: net.Socket) => {
    // Client side: a startup message (length-prefixed, no type byte), then typed messages. Each Sync
    // ('S') and simple Query ('Q') is answered by exactly one ReadyForQuery ('Z'), as is the startup.
    let fromClient = Buffer.alloc(0)
    let started = false
    let readyExpected = 0
    let stage: 'idle' | 'parsed' | 'executed' | 'waiting' = 'idle'
    let armedAt = 0 // the ReadyForQuery number that answers the marked statement; 0: not yet known
    let fromServer = Buffer.alloc(0)
    let readySeen = 0
    const markedNames = new Set<string>()
    const cut = () => {
      cuts++
      client.destroy()
      upstream.destroy()
    }
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk)
      fromClient = Buffer.concat([fromClient, chunk])
      for (;;) {
        if (!started) {
          if (fromClient.length < 4) break
          const length = fromClient.readInt32BE(0)
          if (fromClient.length < length) break
          fromClient = fromClient.subarray(length)
          started = true
          readyExpected = 1
          continue
        }
        if (fromClient.length < 5) break
        const type = String.fromCharCode(fromClient[0]!)
        const length = fromClient.readInt32BE(1)
        if (fromClient.length < 1 + length) break
        const body = fromClient.subarray(5, 1 + length)
        if (type === 'S' || type === 'Q') readyExpected++
        // The marked statement: a simple Query, or an extended one whose Execute's Sync ends it. A
        // prepared statement is parsed (and described) once per connection under a name, then only
        // bound by that name: the name is remembered, and each Bind of it is a marked statement.
        const cstrings = () => body.toString('latin1').split('\0')
        let arm = false
        if (type === 'Q') arm = marked(body)
        else if (type === 'P') {
          const name = cstrings()[0]!
          if (name === '') arm = marked(body)
          else if (needles.some((needle) => body.includes(needle))) markedNames.add(name)
        } else if (type === 'B') arm = markedNames.has(cstrings()[1]!) && (options.chance?.() ?? true)
        if (stage === 'idle' && arm && cuts < (options.cutTimes ?? 1)) {
          stage = type === 'Q' ? 'waiting' : 'parsed'
          if (type === 'Q') armedAt = readyExpected
        } else if (stage === 'parsed' && type === 'E') stage = 'executed'
        else if (stage === 'executed' && type === 'S') {
          stage = 'waiting'
          armedAt = readyExpected
        }
        fromClient = fromClient.subarray(1 + length)
      }
    })
    upstream.on('data', (chunk: Buffer) => {
      fromServer = Buffer.concat([fromServer, chunk])
      const forward: Buffer[] = []
      let offset = 0
      while (fromServer.length - offset >= 5) {
        const length = fromServer.readInt32BE(offset + 1)
        if (fromServer.length - offset < 1 + length) break
        const message = fromServer.subarray(offset, offset + 1 + length)
        offset += 1 + length
        if (message[0] === 'Z'.charCodeAt(0)) readySeen++
        if (armedAt > 0 && readySeen >= armedAt) return cut()
        // Once armed, answers are held back (and lost with the cut), as on a connection that broke.
        if (armedAt === 0) forward.push(message)
      }
      fromServer = fromServer.subarray(offset)
      if (forward.length > 0) client.write(Buffer.concat(forward))
    })
  }
  return listenRelay(target, options.hold ? holdFirst : options.before ? cutBefore : relay).then(({ port, close }) => ({
    port,
    cuts: () => cuts,
    held: () => held,
    close,
  }))
}

/** A plain TCP proxy in front of PostgreSQL that can play an outage: every connection cut, new ones refused. */
export type OutageProxy = {
  port: number
  outage(ms: number): Promise<void>
  /** An outage that lasts until `over()` holds (looked at every 20 ms), or `limitMs` at most. */
  outageUntil(over: () => boolean, limitMs: number): Promise<void>
  /** Connections turned away by outages so far. */
  refused(): number
  close(): void
}

/**
 * `refuseWith`: how a new connection is turned away during an outage. `reset`: an error (ECONNRESET),
 * as a database that is not there gives (ECONNREFUSED). `close`: a clean close, as some TCP proxies
 * without a server give; unpatched, postgres.js connected again for ever on it, without an error.
 * `starting`: PostgreSQL's own answer while it starts up or recovers, FATAL 57P03, then a close.
 */
export async function startOutageProxy(target: { host: string; port: number }, refuseWith: RefuseWith = 'reset'): Promise<OutageProxy> {
  let downUntil = 0
  let refused = 0
  // During an outage a connection is turned away at once, as by a server that is not there.
  const { port, cutAll, close } = await listenRelay(
    target,
    (client, upstream) => {
      client.pipe(upstream)
      upstream.pipe(client)
    },
    () => {
      if (Date.now() >= downUntil) return false
      refused++
      return true
    },
    refuseWith,
  )
  return {
    port,
    async outage(ms) {
      downUntil = Date.now() + ms
      cutAll()
      await Bun.sleep(ms)
    },
    async outageUntil(over, limitMs) {
      downUntil = Date.now() + limitMs
      cutAll()
      while (Date.now() < downUntil && !over()) await Bun.sleep(20)
      downUntil = 0
    },
    refused: () => refused,
    close,
  }
}

/**
 * A plain TCP proxy in front of PostgreSQL (or PgBouncer) that counts the frontend's messages that wait
 * for an answer, Flush ('H') and Sync ('S'): the round trips of what the client sends.
 */
export type CountingProxy = { port: number; roundTrips(): number; close(): void }

export async function startCountingProxy(target: { host: string; port: number }): Promise<CountingProxy> {
  let trips = 0
  const { port, close } = await listenRelay(target, (client, upstream) => {
    client.pipe(upstream)
    upstream.pipe(client)
    // Start-up packets (SSLRequest, StartupMessage) have no type byte; the rest are type + length.
    let fromClient = Buffer.alloc(0)
    let startup = true
    client.on('data', (chunk: Buffer) => {
      fromClient = Buffer.concat([fromClient, chunk])
      for (;;) {
        const head = startup ? 0 : 1
        if (fromClient.length < head + 4) break
        const length = head + fromClient.readInt32BE(head)
        if (fromClient.length < length) break
        if (startup)
          startup = fromClient.readInt32BE(4) === 80877103 // SSLRequest: the StartupMessage follows
        else if (fromClient[0] === 0x48 || fromClient[0] === 0x53) trips++
        fromClient = fromClient.subarray(length)
      }
    })
  })
  return { port, roundTrips: () => trips, close }
}

/**
 * A pool of 4 connections reaching the database at `url` through a proxy `start` puts in front of it;
 * `cleanups` gets what closes both.
 */
export async function poolThroughProxy<P extends { port: number; close(): void }>(
  url: string,
  start: (target: { host: string; port: number }) => Promise<P>,
  cleanups: (() => Promise<void> | void)[],
): Promise<{ proxy: P; database: Database }> {
  const target = new URL(url)
  const proxy = await start({ host: target.hostname, port: Number(target.port || 5432) })
  cleanups.push(() => proxy.close())
  const proxied = new URL(url)
  proxied.port = String(proxy.port)
  const database = await openDatabase({ databaseUrl: proxied.toString(), poolMax: 4 })
  cleanups.push(() => database.close())
  return { proxy, database }
}
