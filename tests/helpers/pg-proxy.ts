// A TCP proxy in front of PostgreSQL that can lose a COMMIT's answer: after the client sends a
// statement containing a marker, the proxy lets the server run it (and commit: an autocommit
// statement commits before its ReadyForQuery), then cuts both connections instead of forwarding the
// answer. The client sees a broken connection and cannot know whether the statement committed.
// By default the first marked statement is cut; `cutTimes` and `chance` (asked for each marked
// statement) make it the fault test's random lost COMMITs.

import net from 'node:net'

export type PgProxy = { port: number; cuts(): number; close(): void }

export function startPgProxy(
  target: { host: string; port: number },
  marker: string | string[],
  options: { cutTimes?: number; chance?: () => boolean } = {},
): Promise<PgProxy> {
  let cuts = 0
  const sockets = new Set<net.Socket>()
  const needles = (Array.isArray(marker) ? marker : [marker]).map((m) => Buffer.from(m))
  const marked = (body: Buffer) => needles.some((needle) => body.includes(needle)) && (options.chance?.() ?? true)

  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host)
    sockets.add(client).add(upstream)
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
    const end = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
  })
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: (server.address() as net.AddressInfo).port,
        cuts: () => cuts,
        close() {
          for (const s of sockets) s.destroy()
          server.close()
        },
      })
    })
  })
}

/** A plain TCP proxy in front of PostgreSQL that can play an outage: every connection cut, new ones refused. */
export type OutageProxy = { port: number; outage(ms: number): Promise<void>; close(): void }

export function startOutageProxy(target: { host: string; port: number }): Promise<OutageProxy> {
  const sockets = new Set<net.Socket>()
  let downUntil = 0
  const server = net.createServer((client) => {
    // During an outage a connection is closed at once, as by a server that is not there.
    if (Date.now() < downUntil) return void client.destroy()
    const upstream = net.connect(target.port, target.host)
    sockets.add(client).add(upstream)
    client.pipe(upstream)
    upstream.pipe(client)
    const end = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
  })
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: (server.address() as net.AddressInfo).port,
        async outage(ms) {
          downUntil = Date.now() + ms
          for (const s of sockets) s.destroy()
          await Bun.sleep(ms)
        },
        close() {
          for (const s of sockets) s.destroy()
          server.close()
        },
      })
    })
  })
}
