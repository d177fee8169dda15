// The client's sockets: postgres.js's public `socket` option asks for one each time it opens a
// connection, and gets this. What the project adds to the driver lives here, on PostgreSQL's wire
// protocol (https://www.postgresql.org/docs/current/protocol-message-formats.html), not in the
// driver's internals, so upgrading the driver is a version change (patches/postgres@3.4.9.patch holds
// upstream-shaped fixes only):
//
// - The wait for a connection (./connect-wait.ts): a try that is refused, reset, closed, or answered
//   57P03 (starting up) before the server answered anything is tried again after the wait's pause, the
//   driver's startup written again; the driver sees a slower start, or CONNECT_TIMEOUT past the wait.
// - Behind a pooler (PgBouncer in transaction mode, where statements go unnamed), per connection:
//   - the parameter types a statement learned are kept, so its next use takes one round trip instead of
//     two. postgres.js sends an unnamed statement with parameters as Parse, Describe, Flush, waits for
//     its types, then sends Bind, Execute, Sync. With the types known, this answers the first part at
//     once (ParseComplete, ParameterDescription, the RowDescription last seen) and sends the Parse, with
//     those types, and Describe with the Bind: the server's own description still reaches the driver
//     before any row, so a changed result is read right. Kept only after the statement succeeded,
//     dropped when one sent with them fails.
//   - statements kept as functions (./statement-functions.ts): a recurring statement's Parse carries
//     its function's call instead; a call that fails for the function's sake (SQLSTATE class 42) outside
//     a transaction is sent again, at once, as the plain statement, and the driver sees only that.
//
// Statements behind a pooler go one at a time per connection (max_pipeline: 0, ./client.ts), so each
// exchange runs from its Parse to its ReadyForQuery before the next begins; anything this does not
// follow (a simple query, COPY, a cursor) passes as it is. TLS is negotiated here, before the driver
// speaks (it is given `ssl: false`), so the messages are read in clear.

import { EventEmitter } from 'node:events'
import net from 'node:net'
import tls from 'node:tls'
import { isWaitable, type ConnectWait, type Wait } from './connect-wait'
import type { StatementHooks } from './statement-functions'

/** sslmode as the URL says it (postgres.js's words): none, or TLS verified or not. */
export type Tls = false | { verify: boolean; fallback: boolean }

/** The TLS a DATABASE_URL asks for: `sslmode` (or `ssl`) disable, prefer, allow, require, verify-ca, verify-full. */
export function tlsOf(url: URL): Tls {
  const mode = url.searchParams.get('sslmode') ?? url.searchParams.get('ssl')
  if (mode === null || mode === 'disable' || mode === 'false') return false
  if (mode === 'prefer' || mode === 'allow') return { verify: false, fallback: true }
  if (mode === 'require' || mode === 'true' || mode === 'no-verify') return { verify: false, fallback: false }
  return { verify: true, fallback: false }
}

/** What postgres.js passes the socket option: the hosts and ports of the URL, or a Unix socket's path. */
type Target = { host: string[]; port: number[]; path?: string | false }

/** Statements kept per connection before the kept types start over (statements built from varying text). */
const MAX_KEPT = 1_000

type Options = {
  wait: ConnectWait
  tls: Tls
  /** Behind a pooler: keep parameter types and run statements as functions (the hooks decide which). */
  statements?: StatementHooks
  /** How long one try to connect may take (ms). */
  tryMs: number
}

/** postgres.js's `socket` option: a socket for each connection it opens, connecting (and waiting) on its own. */
export function socketFactory(options: Options): (target: Target) => DriverSocket {
  return (target) => new Wire(target, options)
}

/** The surface postgres.js uses of its socket. */
export type DriverSocket = EventEmitter & {
  write(data: Uint8Array): boolean
  end(data?: Uint8Array): unknown
  destroy(error?: Error): unknown
  setKeepAlive(enable?: boolean, delay?: number): unknown
  readonly readyState: string
}

/** One try: a TCP (or Unix) connection, with TLS negotiated on it when the URL asks, within `tryMs`. */
function open(target: Target, attempt: number, want: Tls, tryMs: number): Promise<net.Socket> {
  const i = attempt % Math.max(1, target.host.length)
  const host = target.host[i] ?? '127.0.0.1'
  const port = target.port[i] ?? target.port[0] ?? 5432
  return new Promise((resolve, reject) => {
    const tcp = target.path ? net.connect(target.path) : net.connect(port, host)
    let current: net.Socket = tcp
    let settled = false
    const onError = (error: Error) => finish(error)
    const onClose = () => finish(closedEarly())
    const finish = (error: unknown) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      for (const s of new Set([tcp, current])) {
        s.removeListener('error', onError).removeListener('close', onClose)
        // Until the Wire listens (and after): an error with no listener would end the process.
        s.on('error', noop)
      }
      if (error === null) return resolve(current)
      current.destroy()
      tcp.destroy()
      reject(error)
    }
    const timer = setTimeout(() => finish(Object.assign(new Error(`connect ETIMEDOUT ${host}:${port}`), { code: 'ETIMEDOUT' })), tryMs)
    tcp.on('error', onError).on('close', onClose)
    tcp.once('connect', () => {
      if (!want) return finish(null)
      tcp.once('data', (answer: Buffer) => {
        if (answer[0] !== 0x53 /* S */)
          return finish(
            want.fallback
              ? null
              : Object.assign(new Error('the server does not support TLS (sslmode asks for it)'), { code: 'TLS_REFUSED' }),
          )
        const secure = tls.connect({ socket: tcp, servername: net.isIP(host) ? undefined : host, rejectUnauthorized: want.verify })
        current = secure
        secure.on('error', onError).on('close', onClose)
        secure.once('secureConnect', () => finish(null))
      })
      tcp.write(SSL_REQUEST)
    })
  })
}

const noop = () => {}
const closedEarly = () => Object.assign(new Error('the server closed the connection'), { code: 'CONNECTION_CLOSED' })

const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])

// Message types (the first byte of each message after the startup).
const T = {
  parse: 0x50, // P
  describe: 0x44, // D
  bind: 0x42, // B
  execute: 0x45, // E (frontend)
  flush: 0x48, // H
  sync: 0x53, // S (frontend)
  terminate: 0x58, // X
  parseComplete: 0x31, // 1
  parameterDescription: 0x74, // t
  rowDescription: 0x54, // T
  noData: 0x6e, // n
  error: 0x45, // E (backend)
  ready: 0x5a, // Z
}
const IDLE = 0x49 // ReadyForQuery's status: I (no transaction open)

const SYNC = Buffer.from([T.sync, 0, 0, 0, 4])
const PARSE_COMPLETE = Buffer.from([T.parseComplete, 0, 0, 0, 4])

/** The whole messages at the start of `buffer` (each with its type byte), and the bytes left over. */
function messages(buffer: Buffer): { list: Buffer[]; rest: Buffer } {
  const list: Buffer[] = []
  let at = 0
  while (buffer.length - at >= 5) {
    const end = at + 1 + buffer.readUInt32BE(at + 1)
    if (end > buffer.length) break
    list.push(buffer.subarray(at, end))
    at = end
  }
  return { list, rest: buffer.subarray(at) }
}

const cstring = (m: Buffer, at: number): { value: string; next: number } => {
  const end = m.indexOf(0, at)
  return { value: m.toString('utf8', at, end), next: end + 1 }
}

/** An ErrorResponse's SQLSTATE (field C). */
function errorCode(m: Buffer): string | null {
  let at = 5
  while (at < m.length && m[at] !== 0) {
    const field = m[at]!
    const { value, next } = cstring(m, at + 1)
    if (field === 0x43 /* C */) return value
    at = next
  }
  return null
}

/** An ErrorResponse as postgres.js's errors carry it (its code and message), for the wait's CONNECT_TIMEOUT. */
function errorOf(m: Buffer): Error {
  let at = 5
  let message = 'the server refused the connection'
  let code: string | null = null
  while (at < m.length && m[at] !== 0) {
    const field = m[at]!
    const { value, next } = cstring(m, at + 1)
    if (field === 0x43) code = value
    if (field === 0x4d /* M */) message = value
    at = next
  }
  return Object.assign(new Error(message), { code })
}

function parseMessage(text: string, types: number[]): Buffer {
  const body = Buffer.from(text, 'utf8')
  const length = 4 + 1 + body.length + 1 + 2 + 4 * types.length
  const m = Buffer.alloc(1 + length)
  m[0] = T.parse
  m.writeUInt32BE(length, 1)
  // Unnamed statement: its name is the empty string (one zero byte, already there).
  body.copy(m, 6)
  let at = 6 + body.length + 1
  m.writeUInt16BE(types.length, at)
  at += 2
  for (const type of types) at = m.writeUInt32BE(type, at)
  return m
}

function parameterDescription(types: number[]): Buffer {
  const m = Buffer.alloc(1 + 4 + 2 + 4 * types.length)
  m[0] = T.parameterDescription
  m.writeUInt32BE(m.length - 1, 1)
  m.writeUInt16BE(types.length, 5)
  types.forEach((type, i) => m.writeUInt32BE(type, 7 + 4 * i))
  return m
}

function typesOf(parameterDescription: Buffer): number[] {
  const n = parameterDescription.readUInt16BE(5)
  return Array.from({ length: n }, (_, i) => parameterDescription.readUInt32BE(7 + 4 * i))
}

/** A RowDescription's columns: name, the table and column they were read from (0: none), type. */
function columnsOf(rowDescription: Buffer): { name: string; table: number; number: number; type: number }[] {
  const n = rowDescription.readUInt16BE(5)
  const columns = []
  let at = 7
  for (let i = 0; i < n; i++) {
    const { value: name, next } = cstring(rowDescription, at)
    columns.push({
      name,
      table: rowDescription.readUInt32BE(next),
      number: rowDescription.readUInt16BE(next + 4),
      type: rowDescription.readUInt32BE(next + 6),
    })
    at = next + 18
  }
  return columns
}

/** One statement from its Parse to its ReadyForQuery, as the driver sent it and the server answers it. */
type Exchange = {
  /** false: passed as it is (not an unnamed statement this follows). */
  followed: boolean
  key: string
  text: string
  /** The types the Parse sent to the server named. */
  types: number[]
  /** The function's call sent instead of the text, when the statement has one. */
  call: string | null
  /** Still in the driver's write that began it. */
  fresh: boolean
  /** The client's messages sent for it so far, the Parse as the driver wrote it. */
  sent: Buffer[]
  /** Its Parse and Describe, answered from the kept types and not yet sent (they go with the Bind). */
  held: Buffer[] | null
  syncSent: boolean
  /** A Sync this sent itself, to end a failed call the driver is still describing. */
  ownSync: boolean
  cursor: boolean
  failed: boolean
  /** The failed call's ErrorResponse, held until its ReadyForQuery says whether it is sent again plain. */
  failedCall: Buffer | null
  /** What the driver already has of the answer, so that a resend's copies are left out. */
  has: { parse: boolean; params: boolean; rows: Buffer | null }
  strip: { parse: number; params: number; rows: Buffer | null }
  learned: { types: number[] | null; rows: Buffer | null }
}

/**
 * A connection's socket as the driver sees it. It connects on its own: a try that fails before the server
 * answered anything (refused, reset, closed, 57P03) is tried again after the wait's pause, the driver's
 * startup written again, and the driver sees only a slower start; past the wait it fails with
 * CONNECT_TIMEOUT. Once the server has answered, a failure is the driver's, as on any socket.
 */
class Wire extends EventEmitter implements DriverSocket {
  private raw: net.Socket | null = null
  private readonly wait: Wait
  /** The driver's writes before the server answered: its startup, written again on each new try. */
  private startupWrites: Buffer[] = []
  /** The server answered the driver: from here a failure is the driver's. */
  private answered = false
  /** Not a connection to wait for: a CancelRequest (which the server closes without an answer), or one failed for good. */
  private notWaited = false
  /** The server's first ReadyForQuery came: statements flow. */
  private ready = false
  private gone = false
  private fromServerRest = Buffer.alloc(0)
  private fromClientRest = Buffer.alloc(0)
  private exchange: Exchange | null = null
  /** Set when the driver does something this does not follow: from then on everything passes as it is. */
  private plain = false
  private readonly kept = new Map<string, { types: number[]; rows: Buffer }>()
  private readonly statements: StatementHooks | null

  constructor(
    private readonly target: Target,
    private readonly options: Options,
  ) {
    super()
    this.statements = options.statements ?? null
    this.wait = options.wait.start()
    // Once the driver listens: it takes the socket after an await, and an 'error' before would have no listener.
    setImmediate(() => void this.connect())
  }

  get readyState(): string {
    return this.gone ? 'closed' : (this.raw?.readyState ?? 'opening')
  }
  // postgres.js names its errors by these (write CONNECTION_CLOSED host:port).
  get host(): string | undefined {
    return this.target.path || this.target.host[0]
  }
  get port(): number | undefined {
    return this.target.port[0]
  }

  private async connect(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const go = await this.options.wait.beforeTry(this.wait)
      if (this.gone) return
      if (go !== true) return this.fail(go)
      let raw: net.Socket
      try {
        raw = await open(this.target, attempt, this.options.tls, this.options.tryMs)
      } catch (error) {
        if (this.gone) return
        if (!isWaitable(error)) return this.fail(error)
        this.options.wait.failed(this.wait, error)
        continue
      }
      if (this.gone) return void raw.destroy()
      this.use(raw)
      for (const w of this.startupWrites) raw.write(w)
      return
    }
  }

  /** The driver's statement fails with `error` (the socket closes after it). */
  private fail(error: unknown): void {
    this.gone = true
    this.emit('error', error)
    this.emit('close', true)
  }

  private use(raw: net.Socket): void {
    this.raw = raw
    this.fromServerRest = Buffer.alloc(0) // nothing of an earlier try's bytes
    let early: unknown = null
    raw.on('data', (chunk: Buffer) => this.fromServer(chunk, (error) => (early = error)))
    raw.on('error', (error) => {
      if (!this.answered && !this.notWaited && isWaitable(error)) return void (early = error)
      // The driver's: before the server answered, it fails the statement (and its close is the driver's too).
      this.notWaited = true
      this.emit('error', error)
    })
    raw.on('close', (hadError: boolean) => {
      if (this.raw !== raw) return
      if (this.answered || this.notWaited || this.gone) return void this.emit('close', hadError)
      // Gone before the server answered: nothing of a statement reached it. Another try, after a pause.
      this.raw = null
      this.options.wait.failed(this.wait, early ?? closedEarly())
      void this.connect()
    })
    raw.on('drain', () => this.emit('drain'))
  }

  write(data: Uint8Array): boolean {
    if (this.ready && (!this.statements || this.plain)) return this.raw!.write(data)
    const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    if (!this.answered) {
      // A CancelRequest (16 bytes, code 80877102) is answered by a close: not an outage.
      if (this.startupWrites.length === 0 && bytes.length === 16 && bytes.readUInt32BE(4) === 80877102) this.notWaited = true
      this.startupWrites.push(Buffer.from(bytes))
      return this.raw ? this.raw.write(bytes) : true
    }
    if (!this.ready) return this.raw!.write(bytes)
    return this.fromClient(bytes)
  }
  end(data?: Uint8Array): this {
    if (!this.raw) return this.destroy()
    if (data) this.raw.end(data)
    else this.raw.end()
    return this
  }
  destroy(error?: Error): this {
    if (this.raw) this.raw.destroy(error)
    else if (!this.gone) {
      this.gone = true
      setTimeout(() => this.emit('close', false))
    }
    this.gone = true
    return this
  }
  setKeepAlive(enable?: boolean, delay?: number): this {
    this.raw?.setKeepAlive(enable, delay)
    return this
  }

  private fromServer(chunk: Buffer, early: (error: unknown) => void): void {
    if (this.ready && (!this.statements || this.plain) && this.fromServerRest.length === 0) return void this.emit('data', chunk)
    const { list, rest } = messages(this.fromServerRest.length ? Buffer.concat([this.fromServerRest, chunk]) : chunk)
    this.fromServerRest = rest.length ? Buffer.from(rest) : Buffer.alloc(0)
    const out: Buffer[] = []
    for (const m of list) {
      if (!this.ready) this.startup(m, out, early)
      else this.answer(m, out)
    }
    if (out.length) this.emit('data', out.length === 1 ? out[0] : Buffer.concat(out))
  }

  /** The server's messages until its first ReadyForQuery: a 57P03 first is a try to wait through, not the driver's. */
  private startup(m: Buffer, out: Buffer[], early: (error: unknown) => void): void {
    if (m[0] === T.error && !this.answered) {
      const error = errorOf(m)
      if (isWaitable(error)) return early(error) // the server closes the connection next
    }
    this.answered = true
    this.startupWrites = []
    if (m[0] === T.ready) {
      this.ready = true
      this.options.wait.ready()
    }
    out.push(m)
  }

  private fromClient(data: Buffer): boolean {
    const { list, rest } = messages(this.fromClientRest.length ? Buffer.concat([this.fromClientRest, data]) : data)
    this.fromClientRest = rest.length ? Buffer.from(rest) : Buffer.alloc(0)
    const out: Buffer[] = []
    for (const m of list) this.request(m, out)
    this.finishWrite(out)
    return out.length ? this.raw!.write(out.length === 1 ? out[0]! : Buffer.concat(out)) : true
  }

  private request(m: Buffer, out: Buffer[]): void {
    if (this.exchange?.syncSent || this.plain) {
      // A statement sent before the last one was answered: not the one-at-a-time traffic this follows.
      const ex = this.exchange
      if (ex?.fresh) out.push(this.parseToSend(ex), ...ex.sent.slice(1))
      else if (ex?.held) out.push(...ex.held)
      if (ex) ex.fresh = false
      if (ex) ex.held = null
      this.plain = true
      return void out.push(m)
    }
    if (!this.exchange) {
      this.exchange = m[0] === T.parse && m[5] === 0 /* unnamed */ ? this.follow(m) : unfollowed()
      // The rest of the driver's write comes first: finishWrite decides how the Parse goes.
      if (this.exchange.followed) return void this.exchange.sent.push(m)
    }
    const ex = this.exchange
    if (m[0] === T.execute && m.readUInt32BE(m.length - 4) !== 0) ex.cursor = true
    if (m[0] === T.sync) ex.syncSent = true
    if (ex.followed) {
      ex.sent.push(m)
      if (ex.fresh) return
      if (ex.held) {
        out.push(...ex.held)
        ex.held = null
      }
    }
    out.push(m)
  }

  /**
   * After the driver's write that began an exchange: a Parse, Describe, Flush whose types are kept is
   * answered here at once and held to go with the Bind; any other goes to the server as it is (its
   * Parse with the kept types and the function's call, when there are).
   */
  private finishWrite(out: Buffer[]): void {
    const ex = this.exchange
    if (!ex?.fresh) return
    ex.fresh = false
    const kept = this.kept.get(ex.key)
    const describeFirst = ex.sent.length === 3 && ex.sent[1]![0] === T.describe && ex.sent[2]![0] === T.flush
    if (!kept || !describeFirst || ex.types.length === 0) return void out.push(this.parseToSend(ex), ...ex.sent.slice(1))
    ex.held = [this.parseToSend(ex), ex.sent[1]!]
    ex.strip = { parse: 1, params: 1, rows: kept.rows }
    ex.has = { parse: true, params: true, rows: kept.rows }
    const answer = Buffer.concat([PARSE_COMPLETE, parameterDescription(kept.types), kept.rows])
    // Not from inside the driver's write: it clears its pending chunk after the socket's write returns.
    queueMicrotask(() => this.emit('data', answer))
  }

  /** A new exchange from its Parse: its key, the kept types, the function's call. */
  private follow(parse: Buffer): Exchange {
    const { value: text, next } = cstring(parse, 6)
    const n = parse.readUInt16BE(next)
    const declared = Array.from({ length: n }, (_, i) => parse.readUInt32BE(next + 2 + 4 * i))
    const key = `${declared.join(',')}\n${text}`
    const kept = this.kept.get(key)
    return {
      ...unfollowed(),
      followed: true,
      key,
      text,
      types: kept?.types ?? declared,
      call: this.statements!.call(key) ?? null,
      fresh: true,
    }
  }

  private parseToSend(ex: Exchange): Buffer {
    return parseMessage(ex.call ?? ex.text, ex.types)
  }

  private answer(m: Buffer, out: Buffer[]): void {
    const ex = this.exchange
    if (!ex || !ex.followed) {
      if (m[0] === T.ready) this.exchange = null
      return void out.push(m)
    }
    switch (m[0]) {
      case T.parseComplete:
        if (ex.strip.parse > 0) return void ex.strip.parse--
        ex.has.parse = true
        return void out.push(m)
      case T.parameterDescription:
        ex.learned.types = typesOf(m)
        if (ex.strip.params > 0) return void ex.strip.params--
        ex.has.params = true
        return void out.push(m)
      case T.rowDescription:
      case T.noData: {
        ex.learned.rows = m
        const same = ex.strip.rows !== null && ex.strip.rows.equals(m)
        ex.strip.rows = null
        if (same) return
        ex.has.rows = m
        return void out.push(m)
      }
      case T.error: {
        const code = errorCode(m)
        if (ex.call && !ex.cursor && code !== null && this.statements!.failed(ex.key, { code })) {
          // The function's sake (it is gone, or its result no longer fits): held until its ReadyForQuery.
          ex.failedCall = m
          if (!ex.syncSent) {
            ex.ownSync = true
            this.raw!.write(SYNC)
          }
          return
        }
        ex.failed = true
        return void out.push(m)
      }
      case T.ready:
        return this.ended(ex, m, out)
      default:
        out.push(m)
    }
  }

  private ended(ex: Exchange, ready: Buffer, out: Buffer[]): void {
    if (ex.failedCall) {
      if (ready[5] === IDLE) return this.resendPlain(ex)
      // Inside a transaction the failed call aborted it: the caller gets its error.
      out.push(ex.failedCall)
      ex.failedCall = null
      ex.failed = true
      // The driver, still describing, sends its own Sync after the error: its ReadyForQuery answers that.
      if (ex.ownSync) return void (ex.ownSync = false)
    }
    if (!ex.failed && !ex.cursor) this.learn(ex)
    if (ex.failed) this.kept.delete(ex.key)
    this.exchange = null
    out.push(ready)
  }

  /** A statement that succeeded: its types kept for its next use, and told to the statement functions. */
  private learn(ex: Exchange): void {
    const types = ex.learned.types ?? ex.types
    const rows = ex.learned.rows ?? this.kept.get(ex.key)?.rows
    if (rows && types.every((t) => t !== 0)) {
      if (this.kept.size >= MAX_KEPT && !this.kept.has(ex.key)) this.kept.clear()
      this.kept.set(ex.key, { types, rows }) // the server's latest description
    }
    if (!ex.call && rows && rows[0] === T.rowDescription) this.statements!.done(ex.key, ex.text, types, columnsOf(rows))
  }

  /** The failed call outside a transaction (all of it rolled back): the plain statement instead, at once. */
  private resendPlain(ex: Exchange): void {
    ex.call = null
    ex.failedCall = null
    const plain = this.parseToSend(ex)
    const rest = ex.sent.slice(1)
    if (ex.ownSync) {
      // The driver has nothing of it yet and is waiting for the Describe's answer: the same again, plain.
      ex.ownSync = false
      this.raw!.write(Buffer.concat([plain, ...rest]))
      return
    }
    // The driver has the answers up to the error: the resend's copies of them are left out.
    ex.strip = { parse: ex.has.parse ? 1 : 0, params: ex.has.params ? 1 : 0, rows: ex.has.rows }
    this.raw!.write(Buffer.concat([plain, ...rest]))
  }
}

const unfollowed = (): Exchange => ({
  followed: false,
  key: '',
  text: '',
  types: [],
  call: null,
  fresh: false,
  sent: [],
  held: null,
  syncSent: false,
  ownSync: false,
  cursor: false,
  failed: false,
  failedCall: null,
  has: { parse: false, params: false, rows: null },
  strip: { parse: 0, params: 0, rows: null },
  learned: { types: null, rows: null },
})
