// The wait for a connection: which failures of a connection being opened for a statement are waited
// through, for how long, and what the statement fails with when the wait is over. postgres.js asks
// (the patched client's `connect_retry` option, patches/postgres@3.4.9.patch) each time a connection
// it opens for a statement fails before it is ready: a refused or reset connection, a close, an error
// the server answers the startup with. It knows what only the driver can know (the statement never
// reached the server, so running it later is safe; how long it has waited, counted from when it was
// queued in the pool), and it does the waiting (the connection opened again after `backoff`); the
// decisions are here.
//
// A server that is down, restarting or out of reach (refused, reset, closed, unreachable, starting up
// or shutting down: 57P03) is waited for, up to `seconds` from when the statement was queued; past it,
// the statement fails with CONNECT_TIMEOUT, the last try's error its `cause` and named in its message.
// Anything else (a TLS or DNS error, a refused login, a missing database) fails it at once, as
// postgres.js does. Without the option, postgres.js failed a statement at once on a refused or reset
// connection and tried again for ever, silently and without a pause, on a cleanly closed one
// (porsager/postgres#1193).

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

/**
 * postgres.js's question: `error` met by a connection opened for a statement that has waited
 * `waitedMs` for it. `true`: try again (after the client's backoff), the statement waiting; anything
 * else: the error to fail the statement with.
 */
export type ConnectRetry = (error: unknown, waitedMs: number) => true | unknown

export function connectWait(options: {
  /** How long a statement waits for a connection, from when it was queued. */
  seconds: number
  /** Where the client connects, for CONNECT_TIMEOUT's message (`host:port`, as postgres.js's own errors say). */
  address: { host: string; port: number }
  /** Told of each failed try that is tried again. */
  onRetry?: (error: unknown) => void
}): ConnectRetry {
  return (error, waitedMs) => {
    const code = (error as { code?: unknown } | null | undefined)?.code
    if (typeof code !== 'string' || !WAITABLE.has(code)) return error
    if (waitedMs >= options.seconds * 1000) return timedOut(error as Error & { code: string }, options.address)
    options.onRetry?.(error)
    return true
  }
}

/** CONNECT_TIMEOUT as postgres.js shapes its connection errors, naming the last try's error. */
function timedOut(last: Error & { code?: string }, { host, port }: { host: string; port: number }): Error {
  return Object.assign(new Error(`write CONNECT_TIMEOUT ${host}:${port} (${last.code || last.message})`), {
    code: 'CONNECT_TIMEOUT',
    errno: 'CONNECT_TIMEOUT',
    address: host,
    port,
    cause: last,
  })
}
