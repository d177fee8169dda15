// One postgres.js client for both modes. With DATABASE_URL: a pool on a real PostgreSQL.
// Without: PGlite (PostgreSQL in WebAssembly) in DATA_DIR, served on a loopback socket so the same
// client speaks to it. PGlite is single-session, hence `max: 1`: every query queues on one connection.

import postgres from 'postgres'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { lockDataDir } from './lock'
import { statementFunctions, type StatementHooks } from './statement-functions'
import { ConnectWait } from './connect-wait'
import { socketFactory, tlsOf } from './wire'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
// Embedded with the binary by `bun build --compile`; at development time these are the package's files.
import pgliteWasmPath from '../../node_modules/@electric-sql/pglite/dist/pglite.wasm' with { type: 'file' }
import initdbWasmPath from '../../node_modules/@electric-sql/pglite/dist/initdb.wasm' with { type: 'file' }
import pgliteDataPath from '../../node_modules/@electric-sql/pglite/dist/pglite.data' with { type: 'file' }

export type Sql = postgres.Sql<{}>
/** A transaction's handle. */
export type Tx = postgres.TransactionSql<{}>
/** Either: for statements that may run alone or inside a caller's transaction. */
export type Db = Sql | Tx
/** A piece of SQL built with `sql\`...\`` for another statement to embed. */
export type Fragment = postgres.PendingQuery<postgres.Row[]>
/** `fn` in a transaction of its own, or in a savepoint of the caller's transaction (its rollback stays its own). */
export function transaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return ('savepoint' in db ? db.savepoint(fn) : db.begin(fn)) as Promise<T>
}
/** The parameters `sql.unsafe` takes. */
export type Params = NonNullable<Parameters<Sql['unsafe']>[1]>
/** One statement as the service sends it: its text ($1, $2, ...) and parameters. */
export type Statement = { text: string; params: Params }
/**
 * A list endpoint's statements: the page and count(*) for `total`, and how they are sent: `prepare`
 * true as named prepared statements (postgres.js' default for tagged templates), false as unnamed ones.
 * Behind PgBouncer the client's own `prepare: false` wins: every statement goes unnamed.
 */
export type ListStatements = { rows: Statement; count: Statement; prepare: boolean }

export type Database = {
  sql: Sql
  mode: 'postgres' | 'embedded'
  /**
   * A client on a connection that keeps its session (LISTEN, session-scoped work such as migrations):
   * `sql` itself on PostgreSQL without a pooler, DATABASE_DIRECT_URL's behind one, none behind a pooler
   * without it (workers then poll) and on the embedded database (one session: nothing to hear).
   */
  direct?: Sql
  /** Human description for the banner, without credentials. */
  describe: string
  close(): Promise<void>
  /** Embedded only: the whole database as a tarball, to start another one from (tests). */
  snapshot?(): Promise<Blob>
  /**
   * Embedded with a DATA_DIR: `fn(pgdata directory)` run after a checkpoint while no statement runs and
   * no transaction is open, for a consistent copy of the files while serving (db/backup.ts); with
   * how long statements waited (the checkpoint and `fn`), in ms.
   */
  quiesced?<T>(fn: (pgDir: string) => T | Promise<T>): Promise<{ value: T; pauseMs: number }>
  /**
   * Calls `fn` with the payload of every NOTIFY on `channel` committed by any session of the database
   * (this process's own included) until the returned function is called. One LISTEN per channel serves
   * every subscriber: on PostgreSQL on `direct`'s connection of its own (postgres.js' sql.listen); on the
   * embedded database on its one session, whose notifications come back on `sql`'s connection. None
   * behind a pooler without DATABASE_DIRECT_URL (a LISTEN there would hear nothing): callers poll.
   */
  listen?(channel: string, fn: (payload: string) => void): Promise<() => Promise<void>>
}

export const TYPES = {
  // bigint columns come back as JS numbers: balances and ids stay far below 2^53.
  bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
}

export async function openDatabase(options: {
  databaseUrl?: string
  dataDir?: string
  poolMax?: number
  /**
   * `pgbouncer`: databaseUrl is PgBouncer in transaction mode, where consecutive transactions of one
   * client connection run on different server sessions: no named prepared statements (PgBouncer 1.18
   * does not carry them over), no pipelining (below), and LISTEN only over `directUrl` (PostgreSQL itself).
   */
  pooler?: 'none' | 'pgbouncer'
  directUrl?: string
  /** Behind a pooler: successful runs before a statement is kept as a function (./statement-functions; tests set 1). */
  statementFunctionsAfter?: number
  /** Embedded only: start from this snapshot instead of an empty database. */
  seed?: Blob
  /** PostgreSQL: told of each try to connect that failed and is tried again (CONNECT_WAIT_SECONDS below). */
  onUnreachable?: (error: unknown) => void
}): Promise<Database> {
  if (options.databaseUrl) {
    const pooled = options.pooler === 'pgbouncer'
    // Behind PgBouncer, one statement at a time per connection (max_pipeline: 0). With prepare: false
    // postgres.js sends a statement with parameters as Parse/Describe/Flush first, with no Sync, and by
    // default writes it while the connection's previous statement still runs. PgBouncer (transaction
    // mode) gives the server session back at that statement's ReadyForQuery, as it counts only Syncs,
    // and drops the answer to the Describe ("got packet '1' from server when not linked"): the client
    // waited for it forever. sql.begin with max_pipeline: 0 needs patches/postgres@3.4.9.patch.
    // Behind it, the sockets (./wire) keep each statement's parameter types and run statements that recur
    // as functions whose plans the server keeps (./statement-functions).
    const statements = pooled ? statementFunctions(options.statementFunctionsAfter) : undefined
    const sql = connect(options.databaseUrl, {
      max: options.poolMax ?? 10,
      prepare: !pooled,
      ...(pooled ? { max_pipeline: 0, statements } : {}),
      idleInTransaction: !pooled,
      onUnreachable: options.onUnreachable,
    })
    statements?.use(sql)
    // Its pool serves the migrations at start, then stays idle (LISTEN opens a connection of its own).
    const direct = !pooled
      ? sql
      : options.directUrl
        ? connect(options.directUrl, {
            max: 1,
            prepare: true,
            idle_timeout: 60,
            idleInTransaction: true,
            onUnreachable: options.onUnreachable,
          })
        : undefined
    const safe = new URL(options.databaseUrl)
    safe.password = ''
    safe.username = ''
    return {
      sql,
      direct,
      listen: direct
        ? async (channel, fn) => {
            const listening = await direct.listen(channel, fn)
            return () => listening.unlisten()
          }
        : undefined,
      mode: 'postgres',
      describe: `PostgreSQL ${safe.host}${safe.pathname}${pooled ? ` through PgBouncer${direct ? ' (LISTEN direct)' : ''}` : ''}`,
      async close() {
        await Promise.all([sql.end({ timeout: 5 }), direct !== sql && direct?.end({ timeout: 5 })])
      },
    }
  }
  return openEmbedded(options.dataDir, options.seed)
}

/**
 * How long a statement waits for a connection while PostgreSQL cannot be reached (refused, reset, or
 * starting up): a restart or a short outage is waited through, and the statement, which never reached
 * the server, then runs; a longer one fails it (503 SERVICE_UNAVAILABLE to a request).
 */
export const CONNECT_WAIT_SECONDS = 10

/**
 * PostgreSQL ends a session left idle inside a transaction this long (idle_in_transaction_session_timeout):
 * a transaction whose client went quiet (a connection cut where no close came through, a process stuck
 * on something else) no longer holds its locks, and every statement waiting on them, for ever. Far
 * longer than any transaction of the service waits between two of its statements.
 */
export const IDLE_IN_TRANSACTION_SECONDS = 60

function connect(
  url: string,
  options: {
    max: number
    prepare: boolean
    idle_timeout?: number
    max_pipeline?: number
    statements?: StatementHooks
    /** Sets IDLE_IN_TRANSACTION_SECONDS on each session; not through PgBouncer, which refuses start-up parameters it does not know. */
    idleInTransaction: boolean
    onUnreachable?: (error: unknown) => void
  },
): Sql {
  const { onUnreachable, idleInTransaction, statements, ...rest } = options
  const target = new URL(url)
  const wait = new ConnectWait({
    seconds: CONNECT_WAIT_SECONDS,
    address: { host: target.hostname, port: Number(target.port || 5432) },
    onRetry: onUnreachable,
  })
  return postgres(url, {
    ...rest,
    // The sockets are ./wire's: the wait for a connection, TLS as the URL's sslmode asks (negotiated
    // there, so the driver itself is told none), and behind a pooler the kept types and statement functions.
    // `socket` is postgres.js's documented "custom socket" option (its README); its types do not name it.
    ...({ socket: socketFactory({ wait, tls: tlsOf(target), statements, tryMs: CONNECT_WAIT_SECONDS * 1000 }) } as postgres.Options<{}>),
    ssl: false,
    types: TYPES,
    onnotice: () => {},
    // The metrics count the service's connections by it; PgBouncer passes it on to the server sessions.
    connection: {
      application_name: 'messaging-api',
      ...(idleInTransaction ? { idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_SECONDS * 1000 } : {}),
    },
    // Seconds before a connection lost with an error is opened again. postgres.js's default grows to
    // 20 s after a few failures, so after an outage of seconds the pool came back long after the
    // database: a hand-off's outcome waited that long to be recorded. Half a second at most.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 0.5),
  })
}

// Compiling PGlite's WebAssembly takes a while; a process that opens several databases (the tests) does it once.
let assets: Promise<{ pgliteWasmModule: WebAssembly.Module; initdbWasmModule: WebAssembly.Module; fsBundle: Blob }> | undefined
export function embeddedAssets() {
  assets ??= (async () => {
    const [pgliteWasmModule, initdbWasmModule, fsBundle] = await Promise.all([
      WebAssembly.compile(await Bun.file(pgliteWasmPath).arrayBuffer()),
      WebAssembly.compile(await Bun.file(initdbWasmPath).arrayBuffer()),
      Bun.file(pgliteDataPath)
        .arrayBuffer()
        .then((bytes) => new Blob([bytes])),
    ])
    return { pgliteWasmModule, initdbWasmModule, fsBundle }
  })()
  return assets
}

/** `dataDir` undefined keeps the database in memory (tests); a DATA_DIR is held by one process (./lock). */
async function openEmbedded(dataDir: string | undefined, seed?: Blob): Promise<Database> {
  // The lock comes first: a process that does not hold it must not open, let alone initialise, the files.
  const lock = dataDir ? lockDataDir(dataDir) : undefined
  try {
    return await startEmbedded(dataDir, seed, () => lock?.release())
  } catch (error) {
    lock?.release()
    throw error
  }
}

async function startEmbedded(dataDir: string | undefined, seed: Blob | undefined, unlock: () => void): Promise<Database> {
  const pgDir = dataDir ? join(dataDir, 'pgdata') : undefined
  if (pgDir) mkdirSync(pgDir, { recursive: true })
  const { pgliteWasmModule, initdbWasmModule, fsBundle } = await embeddedAssets()
  const db = await PGlite.create({ dataDir: pgDir, pgliteWasmModule, initdbWasmModule, fsBundle, loadDataDir: seed })
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 1 })
  await server.start()
  const address = server.getServerConn() // "127.0.0.1:PORT"
  const port = Number(address.split(':').pop())
  const notified = new Notifications()
  const sql = postgres({
    host: '127.0.0.1',
    port,
    database: 'postgres',
    username: 'postgres',
    max: 1,
    types: TYPES,
    onnotice: () => {},
    // The one session LISTENs (below); PGlite hands its notifications to whoever's statement is running,
    // the socket, so they arrive on this connection. `onnotify` is the option postgres.js' own sql.listen
    // gives its client; its types do not name it.
    ...({ onnotify: (channel: string, payload: string) => notified.dispatch(channel, payload) } as postgres.Options<{}>),
    idle_timeout: 0,
  })
  return {
    sql,
    mode: 'embedded',
    describe: pgDir ? `embedded PGlite in ${pgDir}` : 'embedded PGlite in memory',
    // LISTEN is the session's and PGlite has one session, kept while the socket's connection comes and goes.
    listen: (channel, fn) => notified.add(channel, fn, () => sql.unsafe(`listen ${quoteIdent(channel)}`).then(() => {})),
    async close() {
      try {
        await sql.end({ timeout: 5 })
        await server.stop()
        await db.close()
      } finally {
        unlock()
      }
    },
    snapshot: async () => {
      const dump = await db.dumpDataDir('none')
      return new Blob([await dump.arrayBuffer()])
    },
    // Why a copy made in `fn` is consistent: every statement reaches PGlite through `sql`, whose single
    // connection (max: 1; the socket takes one) carries a transaction from BEGIN to COMMIT. Reserving it
    // waits until no transaction is open on it and holds every other statement in postgres.js's queue
    // until release. CHECKPOINT then writes every committed change into the files of pgDir (PGlite writes
    // them straight to disk, no cache of its own), and nothing writes them until release: the files
    // are a cleanly checkpointed database with no transaction half-written.
    quiesced: pgDir
      ? async (fn) => {
          const reserved = await sql.reserve()
          const started = performance.now()
          try {
            await reserved`checkpoint`
            const value = await fn(pgDir)
            return { value, pauseMs: performance.now() - started }
          } finally {
            reserved.release()
          }
        }
      : undefined,
  }
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`

/** The embedded database's subscribers by channel; a channel's LISTEN is sent once, on its first subscriber. */
class Notifications {
  private readonly channels = new Map<string, { listening: Promise<void>; subscribers: Set<(payload: string) => void> }>()

  async add(channel: string, fn: (payload: string) => void, listen: () => Promise<void>): Promise<() => Promise<void>> {
    let entry = this.channels.get(channel)
    if (!entry) {
      entry = { listening: listen(), subscribers: new Set() }
      this.channels.set(channel, entry)
      entry.listening.catch(() => this.channels.delete(channel))
    }
    await entry.listening
    const subscribers = entry.subscribers
    subscribers.add(fn)
    return async () => {
      subscribers.delete(fn)
    }
  }

  dispatch(channel: string, payload: string): void {
    for (const fn of this.channels.get(channel)?.subscribers ?? []) fn(payload)
  }
}
