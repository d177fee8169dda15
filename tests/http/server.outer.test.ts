// Outer ring (real time): the real server over raw TCP, with slow senders holding its large-body slots for seconds.
// The real server, spoken to over raw TCP: a short or missing Host cannot shift the routed path, every
// over-limit body gets the envelope (declared or chunked), an unauthenticated body is never waited
// for, and large bodies are read a few at a time while small requests pass.

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readConfig } from '../../src/config'
import { startService, type Running } from '../../src/server'
import {
  LARGE_BODY_BYTES,
  LARGE_BODY_READ_MS,
  LARGE_BODY_SLOTS,
  LARGE_BODY_WAIT_MS,
  MAX_BODY_BYTES,
  MAX_CALLBACK_BODY_BYTES,
} from '../../src/http/body'
import { ADMIN_TOKEN } from '../helpers/app'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'

setDefaultTimeout(60_000)

const dir = mkdtempSync(join(tmpdir(), 'messaging-server-'))
let running: Running
let dropDatabase = async () => {}
let port: number
let key: string

beforeAll(async () => {
  const env: Record<string, string> = { PORT: '0', HOST: '127.0.0.1', ADMIN_TOKEN, DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'error' }
  if (usingPostgres()) {
    const database = await createMigratedPostgresDatabase()
    env.DATABASE_URL = database.url
    dropDatabase = database.drop
  }
  await premigrate(env.DATA_DIR!)
  running = await startService(readConfig(env))
  port = Number(new URL(running.url).port)
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }
  const account = (await (
    await fetch(`${running.url}/admin/v1/accounts`, { method: 'POST', headers: admin, body: '{"name":"tcp","balance":100}' })
  ).json()) as {
    data: { id: number }
  }
  const created = (await (
    await fetch(`${running.url}/admin/v1/accounts/${account.data.id}/keys`, { method: 'POST', headers: admin, body: '{"label":"tcp"}' })
  ).json()) as { data: { key: string } }
  key = created.data.key
}, 60_000)

afterAll(async () => {
  await running?.stop()
  await dropDatabase()
  rmSync(dir, { recursive: true, force: true })
})

type Answer = { status: number; headers: Record<string, string>; body: any }

/** An open connection: write bytes when you like, read the first answer when it comes. */
function open(): Promise<{ socket: Socket; answer: Promise<Answer> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let data = ''
    const answer = new Promise<Answer>((done, fail) => {
      const tryParse = () => {
        const end = data.indexOf('\r\n\r\n')
        if (end === -1) return
        const [statusLine, ...lines] = data.slice(0, end).split('\r\n')
        const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
        const length = Number(headers['content-length'] ?? -1)
        const rest = data.slice(end + 4)
        if (length < 0 || Buffer.byteLength(rest) < length) return
        const text = Buffer.from(rest).subarray(0, length).toString()
        done({ status: Number(statusLine!.split(' ')[1]), headers, body: text ? JSON.parse(text) : null })
      }
      socket.on('data', (chunk) => {
        data += chunk.toString('latin1')
        tryParse()
      })
      socket.on('error', fail)
      socket.on('close', () => fail(new Error(`connection closed before an answer: ${JSON.stringify(data.slice(0, 200))}`)))
    })
    answer.catch(() => {})
    socket.on('connect', () => resolve({ socket, answer }))
    socket.on('error', reject)
  })
}

async function send(head: string, body: string | Buffer = ''): Promise<Answer> {
  const { socket, answer } = await open()
  socket.write(head)
  if (body.length > 0) socket.write(body)
  try {
    return await answer
  } finally {
    socket.destroy()
  }
}

const headOf = (method: string, path: string, lines: string[]) =>
  `${method} ${path} HTTP/1.1\r\n${lines.map((l) => `${l}\r\n`).join('')}\r\n`

describe('the Host header cannot shift the routed path', () => {
  test('Host: api (no port), a one-letter host, and an empty Host reach the right route', async () => {
    for (const host of ['api', 'a', 'api:80', '']) {
      const balance = await send(headOf('GET', '/api/v1/balance', [`Host: ${host}`, `Authorization: Bearer ${key}`, 'Connection: close']))
      expect({ host, status: balance.status, keys: Object.keys(balance.body.data ?? {}) }).toEqual({
        host,
        status: 200,
        keys: ['wa_balance', 'cost_per_message', 'estimated_sends', 'currency', 'prices'],
      })
      const body = JSON.stringify({ to: '081234567890', body: `via host "${host}"` })
      const sent = await send(
        headOf('POST', '/api/v1/messages/send', [
          `Host: ${host}`,
          `Authorization: Bearer ${key}`,
          'Content-Type: application/json',
          `Content-Length: ${body.length}`,
          'Connection: close',
        ]),
        body,
      )
      expect({ host, status: sent.status }).toEqual({ host, status: 200 })
      const unknown = await send(headOf('GET', '/api/v1/nothing', [`Host: ${host}`, `Authorization: Bearer ${key}`, 'Connection: close']))
      expect({ host, status: unknown.status, error: unknown.body.error }).toEqual({
        host,
        status: 404,
        error: 'no route for GET /api/v1/nothing',
      })
    }
  })

  test('HTTP/1.0 without a Host, and a chunked body behind a short Host', async () => {
    const old = await send(`GET /api/v1/balance HTTP/1.0\r\nAuthorization: Bearer ${key}\r\n\r\n`)
    expect(old.status).toBe(200)
    const body = JSON.stringify({ to: '081234567890', body: 'chunked' })
    const chunked = await send(
      headOf('POST', '/api/v1/messages/send', [
        'Host: api',
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        'Transfer-Encoding: chunked',
        'Connection: close',
      ]),
      `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    )
    expect(chunked.status).toBe(200)
  })
})

describe('bodies over the limit', () => {
  test('a declared Content-Length one byte over is 413 in the envelope with the request id, before any byte is sent', async () => {
    for (const path of ['/api/v1/messages/bulk', '/admin/v1/accounts', '/provider/twilio/status']) {
      const res = await send(
        headOf('POST', path, [
          'Host: localhost',
          `Authorization: Bearer ${path.startsWith('/admin') ? ADMIN_TOKEN : key}`,
          'Content-Type: application/json',
          `Content-Length: ${MAX_BODY_BYTES + 1}`,
          'X-Request-Id: big-1',
        ]),
      )
      // A provider callback's limit is far lower (MAX_CALLBACK_BODY_BYTES): tests/http/callback-bodies.outer.test.ts.
      const limit = path.startsWith('/provider/') ? MAX_CALLBACK_BODY_BYTES : MAX_BODY_BYTES
      expect({ path, status: res.status, body: res.body, id: res.headers['x-request-id'] }).toEqual({
        path,
        status: 413,
        body: { success: false, error: `request body exceeds ${limit} bytes`, code: 'PAYLOAD_TOO_LARGE', request_id: 'big-1' },
        id: 'big-1',
      })
    }
    // far beyond: still the service's envelope, not a bare 413 from the server
    const huge = await send(
      headOf('POST', '/api/v1/messages/bulk', ['Host: localhost', `Authorization: Bearer ${key}`, 'Content-Length: 10000000000']),
    )
    expect([huge.status, huge.body.code]).toEqual([413, 'PAYLOAD_TOO_LARGE'])
  })

  test('a chunked body that grows past the limit is 413 in the envelope, for the API and the provider callback alike', async () => {
    for (const [path, contentType] of [
      ['/api/v1/messages/bulk', 'application/json'],
      ['/provider/twilio/status', 'application/x-www-form-urlencoded'],
    ]) {
      const { socket, answer } = await open()
      socket.write(
        headOf('POST', path!, [
          'Host: localhost',
          `Authorization: Bearer ${key}`,
          `Content-Type: ${contentType}`,
          'Transfer-Encoding: chunked',
        ]),
      )
      const chunk = Buffer.alloc(1024 * 1024, 0x20)
      let written = 0
      let answered = false
      answer.then(
        () => (answered = true),
        () => (answered = true),
      )
      while (!answered && written <= MAX_BODY_BYTES + chunk.length) {
        socket.write(`${chunk.length.toString(16)}\r\n`)
        socket.write(chunk)
        const flushed = socket.write('\r\n')
        written += chunk.length
        // The server stops reading once it has answered: wait for room, or for the answer.
        if (!flushed) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), answer.catch(() => {})])
      }
      const res = await answer
      socket.destroy()
      expect({ path, status: res.status, code: res.body.code, id: Boolean(res.headers['x-request-id']) }).toEqual({
        path,
        status: 413,
        code: 'PAYLOAD_TOO_LARGE',
        id: true,
      })
    }
  })
})

describe('authentication before the body', () => {
  test('a large body with a bad key is answered 401 without waiting for its bytes', async () => {
    for (const [path, token] of [
      ['/api/v1/messages/bulk', 'pm_wrongwrongwrongwrongwrongwrongwrongwrong'],
      ['/admin/v1/accounts', 'wrong-admin-token'],
    ]) {
      // Only the head is sent: an answer proves the server did not wait for (or read) the body.
      const res = await send(
        headOf('POST', path!, [
          'Host: localhost',
          `Authorization: Bearer ${token}`,
          'Content-Type: application/json',
          `Content-Length: ${MAX_BODY_BYTES}`,
        ]),
      )
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 401, code: 'AUTH_INVALID_KEY' })
    }
  })

  test(`large bodies are read ${LARGE_BODY_SLOTS} at a time; one more waits, then gets 503; small requests pass meanwhile`, async () => {
    const size = LARGE_BODY_BYTES + 1024
    const head = headOf('POST', '/api/v1/messages/bulk', [
      'Host: localhost',
      `Authorization: Bearer ${key}`,
      'Content-Type: application/json',
      `Content-Length: ${size}`,
    ])
    const body = `{"messages":[{"to":"081234567890","body":"${'x'.repeat(size - 50)}"}]}`.padEnd(size, ' ')
    expect(body.length).toBe(size)
    // Slow senders: each sends half its body and stops, holding a slot.
    const holders = await Promise.all(Array.from({ length: LARGE_BODY_SLOTS }, () => open()))
    for (const h of holders) h.socket.write(head + body.slice(0, size / 2))
    await Bun.sleep(300)
    const waiting = await open()
    waiting.socket.write(head + body)
    // Small requests do not queue behind large ones.
    const small = JSON.stringify({ to: '081234567890', body: 'small' })
    const smallAnswer = await send(
      headOf('POST', '/api/v1/messages/send', [
        'Host: localhost',
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        `Content-Length: ${small.length}`,
        'Connection: close',
      ]),
      small,
    )
    expect(smallAnswer.status).toBe(200)
    const waited = await waiting.answer
    expect([waited.status, waited.body.code, waited.headers['retry-after']]).toEqual([503, 'SERVICE_UNAVAILABLE', '1'])
    // The slow senders finish and get their answers (the entry's body is over 4096 characters).
    for (const h of holders) h.socket.write(body.slice(size / 2))
    for (const h of holders) {
      const res = await h.answer
      expect([res.status, res.body.data?.results?.[0]?.code]).toEqual([200, 'VALIDATION_ERROR'])
      h.socket.destroy()
    }
    waiting.socket.destroy()
  })

  test(`a large body that trickles is cut off with 408 after ${LARGE_BODY_READ_MS / 1000} s, so a normal large request gets its turn`, async () => {
    const size = LARGE_BODY_BYTES + 1024
    const head = (extra: string[] = []) =>
      headOf('POST', '/api/v1/messages/bulk', [
        'Host: localhost',
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        `Content-Length: ${size}`,
        ...extra,
      ])
    const body = `{"messages":[{"to":"081234567890","body":"${'x'.repeat(size - 50)}"}]}`.padEnd(size, ' ')
    // Slow senders take both slots and send 1 KiB every 200 ms: never idle, never done (the body needs 200 s).
    const started = performance.now()
    const slow = await Promise.all(Array.from({ length: LARGE_BODY_SLOTS }, () => open()))
    let sent = 0
    for (const s of slow) s.socket.write(head() + body.slice(0, 1024))
    const trickle = setInterval(() => {
      sent += 1024
      for (const s of slow) if (!s.socket.destroyed) s.socket.write(body.slice(sent, sent + 1024))
    }, 200)
    const cutOff = slow.map((s) =>
      s.answer.then(
        (answer) => ({ ...answer, after: performance.now() - started }),
        (error: Error) => ({ error: error.message }),
      ),
    )
    try {
      // A normal large request while they hold the slots: it waits its turn (at most LARGE_BODY_WAIT_MS), which comes when they are cut off.
      await Bun.sleep(LARGE_BODY_READ_MS - LARGE_BODY_WAIT_MS + 1_000)
      const normal = await send(head(['Connection: close']), body)
      expect([normal.status, normal.body.data?.results?.[0]?.code]).toEqual([200, 'VALIDATION_ERROR'])
      for (const answer of await Promise.all(cutOff)) {
        expect(answer).toMatchObject({
          status: 408,
          headers: { connection: 'close' },
          body: {
            success: false,
            code: 'REQUEST_TIMEOUT',
            error: `the request body (over ${LARGE_BODY_BYTES} bytes) did not arrive in time: 10 s, plus 1 s for each MiB received`,
          },
        })
        expect((answer as { after: number }).after).toBeWithin(LARGE_BODY_READ_MS, LARGE_BODY_READ_MS + 2_000)
      }
    } finally {
      clearInterval(trickle)
      for (const s of slow) s.socket.destroy()
    }
  })
})

test("PORT=0 without PUBLIC_BASE_URL: the public URL (the providers' callbacks, the API reference's server) names the port bound", async () => {
  const document = (await (await fetch(`${running.url}/docs/json`)).json()) as { servers: { url: string }[] }
  expect(document.servers[0]!.url).toBe(running.url)
  expect(running.deps.config.publicBaseUrl).toBe(running.url)
})
