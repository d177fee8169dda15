// The fake Twilio of `bun run bench lifecycle`, as a process of its own (Twilio is another machine):
// plain HTTP on loopback, answers every POST to the Messages resource at once with 201 and a unique
// SID, as Twilio does ({"sid": "SM" + 32 hex, "status": "queued"}). It checks only that the request
// is a form with To, From, Body and StatusCallback; it sends no status callbacks itself (the load
// generator does, from the SIDs the service answers). Prints "fake twilio listening on PORT".
//   POST /2010-04-01/Accounts/{sid}/Messages.json   201 {"sid", "status": "queued"}
//   GET  /stats                                      {"created": n, "refused": n}

export {} // a module, not a global script (its names stay its own)

let created = 0
let refused = 0
let counter = 0
// A per-process prefix and a counter: unique without a random number per message.
const prefix = crypto.randomUUID().replaceAll('-', '').slice(0, 16)

const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  idleTimeout: 60,
  async fetch(request) {
    const path = new URL(request.url).pathname
    if (request.method === 'POST' && /^\/2010-04-01\/Accounts\/[^/]+\/Messages\.json$/.test(path)) {
      const form = new URLSearchParams(await request.text())
      if (!form.get('To') || !form.get('From') || !form.get('Body') || !form.get('StatusCallback')) {
        refused++
        return Response.json({ code: 21602, message: 'Message body is required.', status: 400 }, { status: 400 })
      }
      created++
      const sid = `SM${prefix}${(counter++).toString(16).padStart(16, '0')}`
      return Response.json({ sid, status: 'queued' }, { status: 201 })
    }
    if (path === '/stats') return Response.json({ created, refused })
    return new Response('not found', { status: 404 })
  },
})

console.log(`fake twilio listening on ${server.port}`)
process.on('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})
