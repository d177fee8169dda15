// Large bodies sent over raw connections, from a process of its own: `bun tests/helpers/flood.ts <plan>`
// with a Plan as JSON prints one Outcome a line, as each answer comes. A separate process, so that
// writing hundreds of MB does not stall the test's own event loop (and with it the /healthz timings and
// the memory samples it takes of the service).

import { connect } from 'node:net'

export type Plan = {
  port: number
  /** Each POSTed `copies` times at once, declared (Content-Length) and again chunked. */
  requests: { path: string; contentType: string; body: 'json' | 'form'; bytes: number }[]
  copies: number
  /** Milliseconds each request may wait for its answer. */
  timeoutMs: number
}

export type Outcome = { path: string; chunked: boolean; status: number; body: unknown; error?: string }

/** `[{},{},…]` of about `bytes` bytes: JSON.parse makes one object of every 3 bytes. */
export const jsonFlood = (bytes: number) => Buffer.from(`[${'{},'.repeat(Math.floor(bytes / 3) - 1)}{}]`)

/** `a=&a=&…` of `bytes` bytes: one form field of every 3 bytes. */
export const formFlood = (bytes: number) => Buffer.alloc(bytes, 'a=&')

/**
 * POSTs `body`, declared or chunked, writing as fast as the server takes it, and stops writing once the
 * answer has come. An answer is the status and the parsed JSON body (or its text).
 */
export function post(
  port: number,
  path: string,
  contentType: string,
  body: Buffer,
  chunked: boolean,
  timeoutMs: number,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const timer = setTimeout(() => finish(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs)
    let received: Buffer = Buffer.alloc(0)
    let answered = false
    function finish(outcome: { status: number; body: unknown } | Error) {
      if (answered) return
      answered = true
      clearTimeout(timer)
      socket.destroy()
      if (outcome instanceof Error) reject(outcome)
      else resolve(outcome)
    }
    socket.on('data', (data) => {
      received = Buffer.concat([received, data as Buffer])
      const end = received.indexOf('\r\n\r\n')
      if (end === -1) return
      const head = received.subarray(0, end).toString('latin1')
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? -1)
      const rest = received.subarray(end + 4)
      if (length < 0 || rest.byteLength < length) return
      const text = rest.subarray(0, length).toString()
      let parsed: unknown = text
      try {
        parsed = JSON.parse(text)
      } catch {}
      finish({ status: Number(head.split(' ')[1]), body: parsed })
    })
    socket.on('error', (error) => finish(new Error(`${error.message} before an answer`)))
    const closed = new Promise((resume) => socket.once('close', resume))
    void closed.then(() => finish(new Error('connection closed before an answer')))
    socket.on('connect', async () => {
      const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.byteLength}`
      socket.write(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${contentType}\r\n${framing}\r\n\r\n`)
      const slice = 256 * 1024
      for (let at = 0; at < body.byteLength && !answered; at += slice) {
        const part = body.subarray(at, at + slice)
        const flushed = chunked
          ? (socket.write(`${part.byteLength.toString(16)}\r\n`), socket.write(part), socket.write('\r\n'))
          : socket.write(part)
        if (!flushed) await Promise.race([new Promise((resume) => socket.once('drain', resume)), closed])
      }
      if (chunked && !answered) socket.write('0\r\n\r\n')
    })
  })
}

if (import.meta.main) {
  const plan = JSON.parse(process.argv[2]!) as Plan
  const bodies = plan.requests.map((r) => (r.body === 'json' ? jsonFlood(r.bytes) : formFlood(r.bytes)))
  await Promise.all(
    [false, true].flatMap((chunked) =>
      plan.requests.flatMap(({ path, contentType }, i) =>
        Array.from({ length: plan.copies }, async () => {
          const outcome: Outcome = await post(plan.port, path, contentType, bodies[i]!, chunked, plan.timeoutMs).then(
            (answer) => ({ path, chunked, ...answer }),
            (error: Error) => ({ path, chunked, status: 0, body: null, error: error.message }),
          )
          process.stdout.write(`${JSON.stringify(outcome)}\n`)
        }),
      ),
    ),
  )
}
