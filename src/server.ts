// Starting and stopping the whole service: database, migrations, HTTP server and worker loops.

import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Config } from './config'
import type { Deps } from './deps'
import { openDatabase, type Database } from './db/client'
import { createReadRouter, openReplica, primaryOnly } from './db/replica'
import { migrate } from './db/migrate'
import { takeBackup } from './db/backup'
import { isOutage } from './db/retry'
import { createApp, routesOf } from './app'
import { createProvider, paceOf } from './providers/registry'
import type { MediaStore, Provider } from './providers/provider'
import { systemClock, type Clock } from './lib/clock'
import { windowIsOpen } from './modules/inbound/window'
import type { Pace } from './providers/provider'
import { createHandoff } from './modules/messages/handoff'
import { createSenderDirectory } from './modules/senders/directory'
import { mediaStore } from './modules/media/service'
import { createSingleCharger } from './modules/ledger/service'
import type { Loop } from './workers/loop'
import { startWorkers } from './workers'
import { randomBase62 } from './lib/keys'
import { createSecretBox, decodeKey, encodeKey, generateKey } from './lib/secrets'
import { log, errorKind, errorSite } from './lib/log'
import { prepareRequest, rememberClientAddress } from './http/request'
import { endListenStreams } from './modules/webhooks/listen'
import { logRequest } from './http/access-log'
import { requestIdOf } from './http/shell'
import { errorResponse } from './http/errors'
import { type WorkerName } from './deps'
import { instrumentPool } from './http/metrics/pool'
import { observeRequest } from './http/metrics/measures'
import { serveMetrics } from './http/metrics/routes'

export type Running = {
  url: string
  database: Database
  deps: Deps
  adminTokenFile: string | undefined
  /** The METRICS_PORT listener's GET /metrics URL (undefined: none). */
  metricsUrl: string | undefined
  stop(): Promise<void>
}

/**
 * The content of `file`, made with `make` when it does not exist yet (mode 0600). Instances on one
 * PostgreSQL may share a DATA_DIR and start together: the file is written under a name of its own,
 * then linked into place (link fails if it exists), so exactly one content wins, whole, and every
 * starter reads that one.
 */
function fileOnce(dataDir: string, name: string, make: () => string): string {
  const file = resolve(join(dataDir, name))
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  mkdirSync(dataDir, { recursive: true })
  const draft = `${file}.${process.pid}.${randomBase62(8)}`
  writeFileSync(draft, `${make()}\n`, { mode: 0o600, flag: 'wx' })
  chmodSync(draft, 0o600)
  try {
    linkSync(draft, file)
  } catch (error) {
    if ((error as { code?: string }).code !== 'EEXIST') throw error
  } finally {
    unlinkSync(draft)
  }
  return readFileSync(file, 'utf8').trim()
}

/** ADMIN_TOKEN from the environment, or the one generated once into DATA_DIR/admin-token (0600). */
function resolveAdminToken(config: Config): { token: string; file: string | undefined } {
  if (config.adminToken) return { token: config.adminToken, file: undefined }
  const token = fileOnce(config.dataDir, 'admin-token', () => `adm_${randomBase62(40)}`)
  return { token, file: resolve(join(config.dataDir, 'admin-token')) }
}

/**
 * SECRETS_KEY from the environment, or the key generated once into DATA_DIR/secrets-key (0600). Errors name
 * the file, never its content.
 */
function resolveSecretsKey(config: Config): Uint8Array {
  if (config.secretsKey) return config.secretsKey
  const key = decodeKey(fileOnce(config.dataDir, 'secrets-key', () => encodeKey(generateKey())))
  if (!key) {
    const file = resolve(join(config.dataDir, 'secrets-key'))
    throw new Error(`${file} does not hold a 32-byte base64 key: restore it from a backup, or set SECRETS_KEY`)
  }
  return key
}

// Deps built without a resolved key (tests through buildDeps) share one in-memory key per process, so two
// apps of one test process open what the other sealed, as instances sharing SECRETS_KEY do. startService
// always passes the resolved key.
let processKey: Uint8Array | undefined

/** The sender PROVIDER names, from its settings. */
export const providerOf = (config: Config, sql: Database['sql'], clock: Clock, media?: MediaStore) =>
  createProvider(config.provider, config.providers[config.provider], {
    publicBaseUrl: config.publicBaseUrl,
    timeoutMs: config.providerTimeoutMs,
    clock,
    sql,
    // The deployment's default number is the sender null.
    windowOpen: (phone) => windowIsOpen(sql, clock, null, phone),
    media,
  })

/** The sender's pace: the provider's (its settings may change it), with PROVIDER_MAX_PER_SECOND and PROVIDER_RECIPIENT_GAP_MS over it. */
export function paceOfConfig(config: Config): Pace {
  const own = paceOf(config.provider, config.providers[config.provider])
  return {
    perSecond: config.providerMaxPerSecond > 0 ? config.providerMaxPerSecond : own.perSecond,
    recipientGapMs: config.providerRecipientGapMs ?? own.recipientGapMs,
    source: config.providerMaxPerSecond > 0 || config.providerRecipientGapMs !== null ? 'the configuration' : own.source,
  }
}

/**
 * `provider`: tests hand in their own (an in-process fake); otherwise the configured one.
 * `unreachableAt`: when the start last found the database unreachable (0: never).
 */
export function buildDeps(
  config: Config,
  database: Database,
  options: { provider?: Provider; unreachableAt?: number; clock?: Clock } = {},
): { deps: Deps; loops: Map<WorkerName, Loop> } {
  const clock = options.clock ?? systemClock()
  const secretsKey = config.secretsKey ?? (processKey ??= generateKey())
  const secrets = createSecretBox({ current: secretsKey, previous: config.secretsKeysPrevious })
  const media = mediaStore(database.sql, clock, secrets, config.publicBaseUrl)
  const { provider = providerOf(config, database.sql, clock, media), unreachableAt = 0 } = options
  const loops = new Map<WorkerName, Loop>()
  instrumentPool(database.sql)
  const senders = createSenderDirectory(database.sql, secrets, config, { provider, pace: paceOfConfig(config) }, clock, media)
  const handoff = createHandoff(database.sql, senders, clock, {
    concurrency: config.handoffConcurrency,
    leaseSeconds: config.handoffLeaseSeconds,
    timeoutMs: config.providerTimeoutMs,
    timezone: config.timezone,
    unreachableAt,
    // A status report that beat its SID waits parked until the SID is recorded: apply it now.
    onSent: () => loops.get('parked-reports')?.wake(),
  })
  const deps: Deps = {
    config,
    clock,
    sql: database.sql,
    reads: config.databaseReadUrl
      ? createReadRouter(database.sql, openReplica(config.databaseReadUrl, config.dbPoolMax))
      : primaryOnly(database.sql),
    directSql: database.direct,
    listen: database.listen,
    provider,
    senders,
    handoff,
    secrets,
    chargeOne: createSingleCharger(database.sql, config.timezone, clock),
    wake: (name) => loops.get(name)?.wake(),
    backup: database.quiesced ? () => takeBackup(database, secretsKey) : undefined,
  }
  return { deps, loops }
}

/** The answer to an error that escaped the app's own mapping (http/shell.ts), which should never happen. */
function escaped(error: unknown, requestId: string): Response {
  log.error('unhandled error', { request_id: requestId, error: errorKind(error), at: errorSite(error) })
  return errorResponse('INTERNAL_ERROR', `internal error (request id ${requestId})`, 500, requestId)
}

/** How long a start waits for a PostgreSQL it cannot reach before it gives up. */
const START_WAIT_MS = 30_000

/**
 * What the start saw of the database: when it last found it unreachable (0: never), said once. The
 * client's tries to connect (db/client.ts, CONNECT_WAIT_SECONDS) and the migrations' failures both count.
 */
function startWatch() {
  let unreachableAt = 0
  let starting = true
  return {
    unreachable(error: unknown) {
      if (!starting) return
      if (unreachableAt === 0) log.warn('database unreachable; waiting for it', { error: errorKind(error), up_to_ms: START_WAIT_MS })
      unreachableAt = Date.now()
    },
    /** The start is over: later outages are the workers' and requests' own. */
    started() {
      starting = false
      return unreachableAt
    },
  }
}

/**
 * The migrations (the start's first statements), again while the database cannot be reached, for up to
 * START_WAIT_MS: a service started during a database outage, or before its database, waits for it.
 * Hand-off recovery holds back for a lease after the start found the database unreachable, as after
 * any outage the process saw, because a lease that ran out during an outage is no sign that its holder
 * died.
 */
async function migrateOnceReachable(database: Database, watch: ReturnType<typeof startWatch>): Promise<{ applied: string[] }> {
  const giveUpAt = Date.now() + START_WAIT_MS
  for (;;) {
    try {
      // Over the direct connection when there is one: migrations may need a session of their own.
      return await migrate(database.direct ?? database.sql)
    } catch (error) {
      if (!isOutage(error) || Date.now() > giveUpAt) throw error
      watch.unreachable(error)
      await Bun.sleep(500)
    }
  }
}

/**
 * How long a stop waits for in-flight requests, then for the workers' steps; the database's close
 * then takes 5 s at most: the whole stop stays within the 20 s after which main.ts exits anyway.
 */
export const STOP_BOUNDS_MS = { requests: 8_000, loops: 4_000 }

/** Whether `work` settled within `ms` (real time: a bound on the process's own stop). */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)))
  try {
    return await Promise.race([work.then(() => true), late])
  } finally {
    clearTimeout(timer)
  }
}

/** The public URL with the port the service was given when it asked for any (`:0`); otherwise as it is. */
export function withBoundPort(publicBaseUrl: string, port: number): string {
  const url = new URL(publicBaseUrl)
  if (url.port !== '0') return publicBaseUrl
  url.port = String(port)
  return url.href.replace(/\/$/, '')
}

export async function startService(config: Config): Promise<Running> {
  // The database first: in embedded mode it locks DATA_DIR, and only its holder may write the admin token and secrets key there.
  const watch = startWatch()
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolMax: config.dbPoolMax,
    pooler: config.databasePooler,
    directUrl: config.databaseDirectUrl,
    onUnreachable: watch.unreachable,
  })
  let admin: ReturnType<typeof resolveAdminToken>
  let secretsKey: Uint8Array
  let unreachableAt: number
  try {
    admin = resolveAdminToken(config)
    secretsKey = resolveSecretsKey(config)
    const migrated = await migrateOnceReachable(database, watch)
    unreachableAt = watch.started()
    if (migrated.applied.length > 0) log.info('migrations applied', { migrations: migrated.applied })
  } catch (error) {
    await database.close()
    throw error
  }
  // The port is bound before the service is built, so that PORT=0 (a free port) is known to the URL the
  // providers call back (PUBLIC_BASE_URL's default names the port). Nothing awaits between the bind and
  // the build, so no request arrives before `app` and `routes` are set.
  let app: ReturnType<typeof createApp>
  let routes: ReturnType<typeof routesOf>
  let server: ReturnType<typeof Bun.serve>
  try {
    server = Bun.serve({
      port: config.port,
      hostname: config.host,
      // The service enforces MAX_BODY_BYTES itself (a declared Content-Length up front, a streamed body as
      // it arrives, see http/request.ts) so that every 413 is the envelope with the request id; Bun's own
      // limit answers a bare 413, so it is set out of the way. Bun does not read a body nobody asks for.
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      tls: config.tls ? { cert: Bun.file(config.tls.certFile), key: Bun.file(config.tls.keyFile) } : undefined,
      async fetch(request, server) {
        const started = performance.now()
        const prepared = prepareRequest(request, config.tls !== undefined) // its URL is always absolute
        rememberClientAddress(prepared, server.requestIP(request)?.address)
        const route = routes.match(request.method, new URL(prepared.url).pathname)
        // A route that declares itself UNTIMED (a send waiting for its hand-offs, a listen stream) may go
        // longer than Bun's idle timeout (10 s) without a byte on the wire.
        if (route?.untimed) server.timeout(request, 0)
        // The duration is until the answer's headers: a streamed body may go on after the line is written.
        let response: Response
        try {
          response = await app.handle(prepared)
        } catch (error) {
          response = escaped(error, requestIdOf(prepared))
        }
        logRequest(prepared, requestIdOf(prepared), response.status, performance.now() - started, route?.kind)
        observeRequest(request.method, route?.path, response.status, (performance.now() - started) / 1000)
        return response
      },
      error: (error) => escaped(error, crypto.randomUUID()),
    })
  } catch (error) {
    // e.g. the port is taken: close the database cleanly before reporting it
    await database.close()
    throw error
  }
  let built: ReturnType<typeof buildDeps>
  try {
    const publicBaseUrl = withBoundPort(config.publicBaseUrl, server.port!)
    built = buildDeps({ ...config, publicBaseUrl, adminToken: admin.token, secretsKey }, database, { unreachableAt })
    app = createApp(built.deps)
    routes = routesOf(app)
  } catch (error) {
    server.stop(true)
    await database.close()
    throw error
  }
  const { deps, loops } = built
  let metrics: ReturnType<typeof serveMetrics> | undefined
  try {
    if (config.metricsPort !== undefined) metrics = serveMetrics(database.sql, deps.clock, config.metricsPort)
  } catch (error) {
    server.stop(true)
    await database.close()
    throw error
  }
  if (config.databaseUrl && !database.direct) {
    log.warn('behind a pooler without DATABASE_DIRECT_URL: LISTEN is off, workers poll (webhook deliveries start within a second)')
  }
  startWorkers(deps, loops)
  const scheme = config.tls ? 'https' : 'http'
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  let stopping: Promise<void> | undefined
  return {
    url: `${scheme}://${host}:${server.port}`,
    database,
    deps,
    adminTokenFile: admin.file,
    metricsUrl: metrics?.url,
    stop() {
      stopping ??= (async () => {
        // Stop accepting, end the listen streams (endless responses), let in-flight requests finish, stop
        // the loops, then close the database. Each wait is bounded (STOP_BOUNDS_MS), so that a request or
        // a worker's step held up by a statement that never comes back cannot keep the process from
        // ending: past its bound the requests' connections are closed and the database closes anyway
        // (its client ends what still runs).
        const stopped = server.stop(false)
        endListenStreams()
        if (!(await within(Promise.all([stopped, metrics?.stop()]), STOP_BOUNDS_MS.requests))) {
          log.warn('requests still in flight at the stop; their connections are closed', { after_ms: STOP_BOUNDS_MS.requests })
          await server.stop(true)
        }
        if (!(await within(Promise.all([...loops.values()].map((loop) => loop.stop())), STOP_BOUNDS_MS.loops)))
          log.warn('workers still busy at the stop; the database closes under them', { after_ms: STOP_BOUNDS_MS.loops })
        // Hand-offs still going on (answered queued) stop renewing: recovery takes them over.
        deps.handoff.stop()
        await deps.reads.close()
        await database.close()
      })()
      return stopping
    },
  }
}
