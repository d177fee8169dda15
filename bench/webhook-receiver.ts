// The webhook receiver of `bun run bench webhooks`, as a process of its own (as a customer's server
// would be): HTTPS on loopback with the certificate in RECEIVER_CERT / RECEIVER_KEY, answers 200 at
// once and records the arrival time (Date.now(), the same clock as PostgreSQL's now() on this
// machine) of every webhook-id, with the payload's data.message_sid and data.status (a JSON.parse,
// nothing heavier: signatures are not checked). Prints "receiver listening on PORT" when ready.
//   POST /hook        a delivery: recorded, 200
//   GET  /stats       {"received": n, "unique": n, "connections": n}
//   GET  /dump        {"ids": [...], "at": [...], "sids": [...], "statuses": [...]} in arrival order
// Connections are counted by the client's source port: a sender that reuses connections opens few.

const certFile = process.env.RECEIVER_CERT
const keyFile = process.env.RECEIVER_KEY
if (!certFile || !keyFile) {
  console.error('RECEIVER_CERT and RECEIVER_KEY are required')
  process.exit(2)
}

const ids: string[] = []
const at: number[] = []
const sids: string[] = []
const statuses: string[] = []
const seen = new Set<string>()
const ports = new Set<number>()

const server = Bun.serve({
  port: Number(process.env.RECEIVER_PORT ?? 0),
  hostname: '127.0.0.1',
  tls: { cert: Bun.file(certFile), key: Bun.file(keyFile) },
  idleTimeout: 60,
  async fetch(request, srv) {
    const path = new URL(request.url).pathname
    if (request.method === 'POST' && path === '/hook') {
      const now = Date.now()
      const id = request.headers.get('webhook-id') ?? ''
      ids.push(id)
      at.push(now)
      seen.add(id)
      const ip = srv.requestIP(request)
      if (ip) ports.add(ip.port)
      const data = parseData(await request.text())
      sids.push(data.sid)
      statuses.push(data.status)
      return new Response('ok')
    }
    if (path === '/stats') return Response.json({ received: ids.length, unique: seen.size, connections: ports.size })
    if (path === '/dump') return Response.json({ ids, at, sids, statuses })
    return new Response('not found', { status: 404 })
  },
})

/** The payload's message SID and status; empty strings for a body that is not the service's payload. */
function parseData(body: string): { sid: string; status: string } {
  try {
    const data = JSON.parse(body)?.data
    return { sid: String(data?.message_sid ?? ''), status: String(data?.status ?? '') }
  } catch {
    return { sid: '', status: '' }
  }
}

console.log(`receiver listening on ${server.port}`)
process.on('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})
