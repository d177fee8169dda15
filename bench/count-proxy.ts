// A loopback TCP proxy in front of PostgreSQL that counts what the service sends: statements (each
// extended-protocol Execute and each simple Query) and round trips (each Sync and each simple Query is
// answered by one ReadyForQuery, so a client waits for at most one answer per Sync). It forwards every
// byte unchanged. `bench send` puts it between a service and the database for a counting phase, to
// print statements per send beside its figures (pg_stat_statements is not loaded on the bench server,
// and pg_stat_database counts transactions only).

import net from 'node:net'

export type Counts = { statements: number; roundTrips: number; byText: Map<string, number> }
export type CountProxy = { url: string; counts(): Counts; close(): void }

/** A statement's text as counted: its first words, whitespace collapsed. */
const label = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 90)

export async function startCountProxy(databaseUrl: string): Promise<CountProxy> {
  const target = new URL(databaseUrl)
  const host = target.hostname
  const port = Number(target.port || 5432)
  let statements = 0
  let roundTrips = 0
  const byText = new Map<string, number>()
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host)
    sockets.add(client).add(upstream)
    const end = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
    upstream.pipe(client)
    // Client side: untyped startup messages (an SSLRequest or the startup itself), then typed ones.
    let buffer = Buffer.alloc(0)
    let started = false
    // This connection's prepared statements by name ('' the unnamed one), and the statement of the last Bind.
    const prepared = new Map<string, string>()
    let bound = ''
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk)
      buffer = Buffer.concat([buffer, chunk])
      for (;;) {
        if (!started) {
          if (buffer.length < 8) return
          const length = buffer.readInt32BE(0)
          if (buffer.length < length) return
          const code = buffer.readInt32BE(4)
          buffer = buffer.subarray(length)
          // SSLRequest (80877103) and GSSENCRequest (80877104) are followed by the startup message.
          if (code !== 80877103 && code !== 80877104) started = true
          continue
        }
        if (buffer.length < 5) return
        const length = buffer.readInt32BE(1)
        if (buffer.length < 1 + length) return
        const type = String.fromCharCode(buffer[0]!)
        const cstrings = (from: number, n: number) => {
          const out: string[] = []
          let at = from
          for (let i = 0; i < n; i++) {
            const end = buffer.indexOf(0, at)
            out.push(buffer.toString('utf8', at, end))
            at = end + 1
          }
          return out
        }
        if (type === 'P') {
          const [name, text] = cstrings(5, 2)
          prepared.set(name!, label(text!))
        } else if (type === 'B') bound = prepared.get(cstrings(5, 2)[1]!) ?? '?'
        const counted = type === 'E' ? bound : type === 'Q' ? label(cstrings(5, 1)[0]!) : null
        if (counted !== null) byText.set(counted, (byText.get(counted) ?? 0) + 1)
        if (type === 'E' || type === 'Q') statements++
        if (type === 'S' || type === 'Q') roundTrips++
        buffer = buffer.subarray(1 + length)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const proxied = new URL(databaseUrl)
  proxied.hostname = '127.0.0.1'
  proxied.port = String((server.address() as net.AddressInfo).port)
  return {
    url: proxied.toString(),
    counts: () => ({ statements, roundTrips, byText: new Map(byText) }),
    close() {
      for (const s of sockets) s.destroy()
      server.close()
    },
  }
}
