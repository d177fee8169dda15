// The wait for a connection: which failures of a connection being opened are waited through, how the
// tries are paced, and what a statement fails with when the wait is over. The client's sockets
// (./wire.ts) ask it before each try to connect and tell it how each try ended: a try that failed before
// the server answered never carried a statement, so the statement waiting for it can safely run later.
//
// A server that is down, restarting or out of reach (refused, reset, closed before it answered,
// unreachable, starting up or shutting down: 57P03) is waited for, up to `seconds` from when the driver
// asked for the connection (for a statement); past it, the statement fails with CONNECT_TIMEOUT, the last
// try's error its `cause` and named in its message. Connections asked for in the DRAIN_MS after that fail
// at once: they carry the statements queued behind the one that waited, which waited as long. One asked
// for later waits anew. Anything else (a TLS or DNS error, a refused login, a missing database) fails the
// statement at once. Unpatched, postgres.js failed a statement at once on a refused or reset connection
// and tried again for ever, without a pause, on one closed before it was ready (porsager/postgres#1193).

/** The failures of a server that is down, restarting or out of reach: worth waiting through. */
const WAITABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  '57P03',
])

export const isWaitable = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null | undefined)?.code
  return typeof code === 'string' && WAITABLE.has(code)
}

/** After a statement's wait ran out, how long new waits fail at once instead (the statements queued behind it waited as long). */
export const DRAIN_MS = 1_000

/** The pause before the n-th try again of a wait (1, 2, ...): 100 ms, doubling, at most half a second. */
export const pauseMs = (tries: number) => Math.min(50 * 2 ** tries, 500)

/** Real time: the wait for a database is the outer ring's (its tests move no clock). */
export type WaitTime = { now(): number; sleep(ms: number): Promise<void> }
const realTime: WaitTime = { now: () => performance.now(), sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) }

/** One connection's wait: from when the driver asked for it (for its statement), its tries and their last failure. */
export type Wait = { since: number; tries: number; last: unknown }

export class ConnectWait {
  /** When a statement's wait last ran out, while no connection has been ready since. */
  private ranOutAt: number | null = null
  private lastFailure: unknown = null
  private readonly time: WaitTime

  constructor(
    private readonly options: {
      /** How long a statement waits for its connection, from when the driver asked for it. */
      seconds: number
      /** Where the client connects, for CONNECT_TIMEOUT's message (`host:port`, as postgres.js's own errors say). */
      address: { host: string; port: number }
      /** Told of each failed try that is waited through. */
      onRetry?: (error: unknown) => void
      time?: WaitTime
    },
  ) {
    this.time = options.time ?? realTime
  }

  /** A connection asked for now. */
  start(): Wait {
    return { since: this.time.now(), tries: 0, last: null }
  }

  /** Before a try to connect: true (after the pause it takes), or the error to fail the statement with. */
  async beforeTry(wait: Wait): Promise<true | Error> {
    const now = this.time.now()
    if (wait.last === null) {
      // Its first try: at once, unless a wait ran out just now (this statement was queued behind it).
      if (this.ranOutAt !== null && now - this.ranOutAt < DRAIN_MS) return timedOut(this.lastFailure, this.options.address)
      return true
    }
    if (now - wait.since >= this.options.seconds * 1000) {
      this.ranOutAt = now
      return timedOut(wait.last, this.options.address)
    }
    await this.time.sleep(pauseMs(++wait.tries))
    return true
  }

  /** A try failed before the server answered, with a failure worth waiting through. */
  failed(wait: Wait, error: unknown): void {
    wait.last = this.lastFailure = error
    this.options.onRetry?.(error)
  }

  /** A connection became ready: the server is there. */
  ready(): void {
    this.ranOutAt = null
  }
}

/** CONNECT_TIMEOUT as postgres.js shapes its connection errors, naming the last try's error. */
function timedOut(last: unknown, { host, port }: { host: string; port: number }): Error {
  const cause = last as (Error & { code?: string }) | null
  return Object.assign(new Error(`write CONNECT_TIMEOUT ${host}:${port} (${cause?.code || cause?.message || 'no answer'})`), {
    code: 'CONNECT_TIMEOUT',
    errno: 'CONNECT_TIMEOUT',
    address: host,
    port,
    cause: last,
  })
}
