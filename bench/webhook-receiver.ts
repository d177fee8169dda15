// The webhook receiver of `bun run bench webhooks`, as a process of its own (as a customer's server
// would be): HTTPS on loopback with the certificate in RECEIVER_CERT / RECEIVER_KEY, answers 200 at
// once and records the arrival time (Date.now(), the same clock as PostgreSQL's now() on this
// machine) of every webhook-id. Prints "receiver listening on PORT" when ready.
//   POST /hook        a delivery: recorded, 200
//   GET  /stats       {"received": n, "unique": n, "connections": n}
//   GET  /dump        {"ids": [...], "at": [...]} in arrival order
// Connections are counted by the client's source port: a sender that reuses connections opens few.

const certFile = process.env.RECEIVER_CERT
const keyFile = process.env.RECEIVER_KEY
if (!certFile || !keyFile) {
  console.error('RECEIVER_CERT and RECEIVER_KEY are required')
  process.exit(2)
}

const ids: string[] = []
const at: number[] = []
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
      await request.arrayBuffer()
      return new Response('ok')
    }
    if (path === '/stats') return Response.json({ received: ids.length, unique: seen.size, connections: ports.size })
    if (path === '/dump') return Response.json({ ids, at })
    return new Response('not found', { status: 404 })
  },
})

console.log(`receiver listening on ${server.port}`)
process.on('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})
