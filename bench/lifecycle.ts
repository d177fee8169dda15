// The whole life of a message, benchmarked: sent over HTTP, reported delivered and then read through
// Twilio's status callback route, and each of the two changes delivered as a signed webhook.
//
// The service (a child process, PROVIDER=twilio) hands every message to a fake Twilio in a process of
// its own (bench/fake-twilio.ts: answers each create at once with a unique SID). Every API key has a
// webhook registered that points at bench/webhook-receiver.ts (HTTPS with a throwaway CA given to the
// service as NODE_EXTRA_CA_CERTS, or WEBHOOK_CA_FILE, see BENCH_WEBHOOK_CA; it records each webhook's arrival with its message SID and status).
// Each load worker runs lifecycles one after another: POST /api/v1/messages/send, then the signed
// callbacks `delivered` and `read` to POST /provider/twilio/status (X-Twilio-Signature over
// PUBLIC_BASE_URL + path and the form fields, as Twilio signs them), each answered before the next.
//
// A lifecycle counts when the send answered `sent`, both callbacks answered `changed: true` and both
// webhooks (delivered, read) reached the receiver. lifecycles/s = complete lifecycles of the measured
// window / the time from its start until the last of them completed (its last webhook), so a webhook
// backlog lowers the rate. Lag: from the moment the read callback was posted to its webhook's arrival.
//
// The ceiling (PostgreSQL only, same run): the same database work straight through postgres.js at the
// same concurrency, one statement per step: the send (ceilingSend of bench/send.ts: key, price, debit,
// message already `sent`, ledger row), each status change with its event (the service's applyStatuses),
// and each delivery recorded (the event marked delivered with its attempt row).
//
// The database's limit (PostgreSQL only, same run): pgbench (C client, `-M prepared`, as many connections
// as the load has workers) runs bench/lifecycle.pgbench, the least SQL that writes a lifecycle's rows,
// five transactions a lifecycle, on the HTTP phase's own database once its service has stopped.
// Two instances (optional phase): two services through one PgBouncer in transaction mode
// (tests/helpers/pgbouncer.ts, DATABASE_DIRECT_URL for LISTEN), the same workers spread over both. And
// the same two straight to PostgreSQL, each with half the pool (`x2direct`): what splitting the load
// costs, apart from what the pooler costs.
//
//   BENCH_DB=embedded            the service on PGlite in a temporary DATA_DIR; the ceiling then runs on
//                                PGlite opened in the bench process (one connection, as the service has)
//   BENCH_LIFECYCLE_ACCOUNTS     accounts, one key and webhook each (default 10), used round robin
//   BENCH_LIFECYCLE_CONCURRENCY  load workers (default BENCH_CONCURRENCY)
//   BENCH_LIFECYCLE_ROUNDS       rounds of (HTTP phase[s], ceiling), medians over them (default 1)
//   BENCH_LIFECYCLE_DRAIN_SECONDS how long to wait for the last webhooks after the load (default 60)
//   BENCH_LIFECYCLE_PHASES       the phases each round runs after the HTTP phase (default
//                                pgbench,ceiling,x2direct,pgbouncer; embedded: ceiling only)
//   BENCH_WEBHOOK_CA             how the services trust the receiver's CA: extra (default,
//                                NODE_EXTRA_CA_CERTS) or file (WEBHOOK_CA_FILE, parsed on every delivery)
//   BENCH_PGBENCH                pgbench's path (default /usr/bin/pgbench; missing: the phase is skipped)
//   BENCH_COMPARE_ROOT           another checkout: each round also runs the HTTP phase with the service
//                                from there, alternating with this one (an A/B of a change in one run)

import postgres from 'postgres'
import { createHmac } from 'node:crypto'
import { join, resolve } from 'node:path'
import { makeTestTls } from '../tests/helpers/receiver'
import { startPgbouncer } from '../tests/helpers/pgbouncer'
import { applyStatuses } from '../src/modules/status/machine'
import { normalizePhone } from '../src/lib/phone'
import { randomHex, sha256Hex } from '../src/lib/keys'
import type { Sql } from '../src/db/client'
import { openDatabase } from '../src/db/client'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { ceilingSend } from './send'
import {
  apiJson,
  backendPids,
  benchClient,
  childPidsNamed,
  clientsGone,
  cpuMeter,
  databaseCounters,
  envNumber,
  fmtCpu,
  fmtMs,
  fmtRate,
  freePort,
  kernelThreadPids,
  latencySummary,
  runLoad,
  seedAccounts,
  seedMessageHistory,
  serverClient,
  serverProcessPids,
  serviceRoot,
  sleep,
  startHelperProcess,
  startServiceChild,
  startWebhookReceiver,
  table,
  vacuumAnalyze,
  type BenchContext,
  type Benchmark,
  type Check,
  type CpuUse,
  type FreshDatabase,
  type Latencies,
  type SeededAccount,
  type ServiceChild,
} from './lib'

const TARGET_CEILING_RATIO = 1.0
const TARGET_PGBENCH_RATIO = 1.0
const TARGET_PGBOUNCER_RATIO = 1.0
/** A request that has not answered by then failed (a stalled pool would otherwise hang the load). */
const REQUEST_TIMEOUT_MS = 20_000
const PGBENCH_SCRIPT = join(import.meta.dir, 'lifecycle.pgbench')
const TARGET_LAG_P99_MS = 1000
const TARGET_EMBEDDED_PER_SECOND = 1000
const OPENING_BALANCE = 1_000_000_000_000
/**
 * Each lifecycle's recipient: a different number each time, as a CRM's notifications go to its many
 * customers (one number would meet the sender's 6 s pair gap per recipient at every send).
 */
const toOf = (seq: number) => `0812${String(seq % 100_000_000).padStart(8, '0')}`
const BODY = 'bench: your order #1001 has shipped'
const ACCOUNT_SID = `AC${'b'.repeat(32)}`
const AUTH_TOKEN = 'bench-twilio-auth-token'
const FROM = 'whatsapp:+14155238886'
const CALLBACK_PATH = '/provider/twilio/status'

/** Twilio's X-Twilio-Signature, written here (not imported) so the bench checks the service's rule. */
function twilioSignature(url: string, params: Record<string, string>): string {
  let data = url
  for (const key of Object.keys(params).sort()) data += key + params[key]
  return createHmac('sha1', AUTH_TOKEN).update(data, 'utf8').digest('base64')
}

/** The fields Twilio posts for a WhatsApp message's status. */
function callbackFields(sid: string, status: string): Record<string, string> {
  return {
    ChannelPrefix: 'whatsapp',
    ApiVersion: '2010-04-01',
    MessageStatus: status,
    SmsSid: sid,
    SmsStatus: status,
    ChannelInstallSid: `XE${'0'.repeat(32)}`,
    To: 'whatsapp:+6281234567890',
    From: FROM,
    MessageSid: sid,
    AccountSid: ACCOUNT_SID,
    ChannelToAddress: '+6281234567890',
  }
}

type Variant = { label: string; root: string }

type HttpPhase = {
  kind: 'http'
  variant: Variant
  /** Service instances; more than one: through one PgBouncer, unless `direct`. */
  instances: number
  /** Several instances straight to PostgreSQL, each with its share of the pool (no PgBouncer). */
  direct: boolean
  /** Its database (PostgreSQL), where the pgbench phase then runs. */
  db: FreshDatabase | undefined
  /** Set when a pooled phase stalled (errors, webhooks missing): its figures are not a measurement. */
  notMeasured: string | undefined
  /** Lifecycles whose three requests succeeded in the measured window (answered, changed). */
  answered: number
  /** ... of which both webhooks arrived. */
  complete: number
  seconds: number
  perSecond: number
  /** Lifecycles whose three requests answered, per second of the load alone (without waiting for webhooks). */
  requestsPerSecond: number
  errors: number
  errorSamples: string[]
  lag: Latencies
  deliveredLag: Latencies
  sendMs: Latencies
  callbackMs: Latencies
  missing: number
  duplicates: number
  consistent: boolean
  consistency: string
  xactsPerLifecycle: number
  rowsPerLifecycle: number
  retries: number
  /** Connections the receiver saw (client ports), warm-up included: a sender that reuses them opens few. */
  connections: number
  cpu: CpuUse
}

type CeilingPhase = {
  kind: 'ceiling'
  answered: number
  seconds: number
  perSecond: number
  errors: number
  errorSamples: string[]
  lifecycleMs: Latencies
  xactsPerLifecycle: number
  rowsPerLifecycle: number
  cpu: CpuUse
}

type PgbenchPhase = {
  kind: 'pgbench'
  /** Lifecycles (runs of the script) pgbench completed. */
  answered: number
  /** pgbench's tps without the time to connect: lifecycles/s. */
  perSecond: number
  latencyMs: number
  errors: number
  errorSamples: string[]
  xactsPerLifecycle: number
  rowsPerLifecycle: number
  cpu: CpuUse
}

type Phase = HttpPhase | CeilingPhase | PgbenchPhase

const median = (values: number[]) => latencySummary(values).p50

/**
 * CPU time per lifecycle, in ms: every process of the benchmark (load generator, service, fake Twilio,
 * receiver, PostgreSQL), not kernel threads or other work on the machine. On a shared machine this
 * moves less than the rate, which depends on how much of the cores the phase got.
 */
const cpuPerLifecycle = (cpu: CpuUse, perSecond: number) =>
  (Object.entries(cpu.groups).reduce((sum, [name, cores]) => (name === 'kernel' ? sum : sum + cores), 0) * 1000) / perSecond

export const lifecycle: Benchmark = {
  name: 'lifecycle',
  summary:
    'send over HTTP, delivered and read through signed Twilio callbacks, both changes as signed webhooks: lifecycles/s vs the database limit (pgbench), two instances (direct, and through PgBouncer) and the one-statement-per-step ceiling, read-to-webhook lag',
  embedded: true,
  async run(ctx) {
    const accountsCount = Math.floor(envNumber('BENCH_LIFECYCLE_ACCOUNTS', 10, 1))
    const concurrency = Math.floor(envNumber('BENCH_LIFECYCLE_CONCURRENCY', ctx.concurrency, 1))
    const rounds = Math.floor(envNumber('BENCH_LIFECYCLE_ROUNDS', 1, 1))
    const drainSeconds = envNumber('BENCH_LIFECYCLE_DRAIN_SECONDS', 60, 1)
    const poolMax = envNumber('BENCH_DB_POOL_MAX', 32, 1)
    const history = Math.floor(envNumber('BENCH_HISTORY', 1000, 0))
    const webhookCaAs = process.env.BENCH_WEBHOOK_CA || 'extra'
    if (webhookCaAs !== 'extra' && webhookCaAs !== 'file') throw new Error(`BENCH_WEBHOOK_CA: expected extra or file, got "${webhookCaAs}"`)
    const pgbenchPath = process.env.BENCH_PGBENCH || '/usr/bin/pgbench'
    const extra = new Set(
      ctx.embedded
        ? ['ceiling']
        : (process.env.BENCH_LIFECYCLE_PHASES ?? 'pgbench,ceiling,x2direct,pgbouncer')
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
    )
    for (const name of extra)
      if (!['pgbench', 'ceiling', 'x2direct', 'pgbouncer'].includes(name))
        throw new Error(`BENCH_LIFECYCLE_PHASES: expected pgbench, ceiling, x2direct and/or pgbouncer, got "${name}"`)
    if (extra.has('pgbench') && !existsSync(pgbenchPath)) {
      console.log(`  (no pgbench at ${pgbenchPath}: the database's limit is not measured; BENCH_PGBENCH sets the path)`)
      extra.delete('pgbench')
    }
    const compareRoot = process.env.BENCH_COMPARE_ROOT ? resolve(process.env.BENCH_COMPARE_ROOT) : undefined
    const variants: Variant[] = compareRoot
      ? [
          { label: 'A', root: compareRoot },
          { label: 'B', root: serviceRoot() },
        ]
      : [{ label: 'http', root: serviceRoot() }]

    const tls = makeTestTls()
    ctx.onCleanup(() => tls.remove())
    const receiver = await startWebhookReceiver(tls.certFile, tls.keyFile, tls.caFile)
    ctx.onCleanup(() => receiver.stop())
    const twilio = await startHelperProcess('bench/fake-twilio.ts', {})
    ctx.onCleanup(() => twilio.stop())
    const monitor = ctx.embedded ? undefined : serverClient(ctx.serverUrl)
    if (monitor) ctx.onCleanup(() => monitor.end())
    const hookUrl = `https://localhost:${receiver.port}/hook`

    console.log(
      `  ${ctx.embedded ? 'embedded database (PGlite in a temporary DATA_DIR; the ceiling on PGlite in this process)' : `PostgreSQL, service DB_POOL_MAX=${poolMax}`}; ` +
        `${accountsCount} accounts with one key and webhook each${ctx.embedded ? '' : ` and ${history} old messages each`}; ` +
        `${concurrency} workers; fake Twilio pid ${twilio.pid}, webhook receiver pid ${receiver.pid}` +
        (compareRoot ? `; A = ${compareRoot}, B = ${serviceRoot()}` : ''),
    )

    /**
     * One service (or `instances` services through one PgBouncer, sharing the workers: each request
     * goes to the next instance round robin, as a load balancer without stickiness would send them;
     * `direct`: those services straight to PostgreSQL).
     */
    const httpPhase = async (variant: Variant, instances = 1, direct = false): Promise<HttpPhase> => {
      const db = ctx.embedded
        ? undefined
        : await ctx.freshDatabase(instances === 1 ? 'lifecycle' : direct ? 'lifecycle_x2direct' : 'lifecycle_pgbouncer')
      // As many server sessions as one instance's pool: two instances share what one had (through the
      // pooler, or each with its share of it).
      const bouncer = db && instances > 1 && !direct ? await startPgbouncer(db.url, { poolSize: poolMax }) : undefined
      if (bouncer) ctx.onCleanup(() => bouncer.stop())
      const ports = Array.from({ length: instances }, () => freePort())
      const bases = ports.map((port) => `http://127.0.0.1:${port}`)
      // Every instance signs and checks callbacks against the same public URL, as behind a load balancer.
      const base = bases[0]!
      const serviceEnv = {
        PUBLIC_BASE_URL: base,
        DB_POOL_MAX: String(direct ? Math.ceil(poolMax / instances) : poolMax),
        LOG_LEVEL: 'warn',
        PROVIDER: 'twilio',
        TWILIO_ACCOUNT_SID: ACCOUNT_SID,
        TWILIO_AUTH_TOKEN: AUTH_TOKEN,
        TWILIO_FROM: FROM,
        TWILIO_API_BASE: `http://127.0.0.1:${twilio.port}`,
        WEBHOOK_ALLOW_PRIVATE: 'true',
        // The receiver's throwaway CA. By default as NODE_EXTRA_CA_CERTS (read once at start), so a
        // delivery costs what it costs to a publicly trusted receiver; WEBHOOK_CA_FILE makes Bun's fetch
        // parse the whole CA list (system roots + file) on every delivery, ~0.14 ms of CPU each here.
        ...(webhookCaAs === 'file' ? { WEBHOOK_CA_FILE: tls.caFile } : { NODE_EXTRA_CA_CERTS: tls.caFile }),
        // Free-form messages to numbers that never wrote in: the benchmark measures sending, not the window.
        WINDOW_CHECK: 'off',
      }
      const services: ServiceChild[] = []
      const stopAll = async () => {
        await Promise.all(services.map((s) => s.stop()))
        await bouncer?.stop()
      }
      for (const port of ports)
        services.push(
          await startServiceChild({
            databaseUrl: bouncer?.url ?? db?.url,
            root: variant.root,
            onCleanup: ctx.onCleanup,
            env: {
              PORT: String(port),
              ...(bouncer ? { DATABASE_DIRECT_URL: db!.url, DATABASE_POOLER: 'pgbouncer' } : {}),
              ...serviceEnv,
            },
          }),
        )
      const service = services[0]!
      try {
        const accounts = await seedAccounts(service, accountsCount, { balance: OPENING_BALANCE })
        for (const a of accounts) await apiJson(`${base}/api/v1/webhook`, { token: a.key, body: { url: hookUrl } })
        if (db) {
          await seedMessageHistory(
            db.url,
            accounts.map((a) => a.accountId),
            history,
          )
          await vacuumAnalyze(db.url)
        }
        const before = db && monitor ? await databaseCounters(monitor, db.name) : undefined

        const sendUrls = bases.map((b) => `${b}/api/v1/messages/send`)
        const callbackUrls = bases.map((b) => `${b}${CALLBACK_PATH}`)
        const signedUrl = `${base}${CALLBACK_PATH}`
        const headers = accounts.map((a) => ({ authorization: `Bearer ${a.key}`, 'content-type': 'application/json' }))
        let webhooksDue = 0
        let readsApplied = 0
        let recipient = 0 // across warm-up and measured phase
        let lifecyclesTried = 0

        const callback = async (sid: string, status: 'delivered' | 'read', instance: number) => {
          const params = callbackFields(sid, status)
          const res = await fetch(callbackUrls[instance % instances]!, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(signedUrl, params) },
            body: new URLSearchParams(params).toString(),
            signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
          })
          const text = await res.text()
          if (res.status !== 200) throw new Error(`${status} callback: HTTP ${res.status} ${text.slice(0, 200)}`)
          if (JSON.parse(text).data?.changed !== true) throw new Error(`${status} callback changed nothing`)
          webhooksDue++
          if (status === 'read') readsApplied++
        }

        type Lifecycle = { sid: string; deliveredPosted: number; readPosted: number; done: number }
        const lifecycleTask =
          (records: Lifecycle[] | undefined, sendMs: number[], callbackMs: number[]) => async (_w: number, seq: number) => {
            lifecyclesTried++
            const t0 = performance.now()
            const res = await fetch(sendUrls[seq % instances]!, {
              method: 'POST',
              headers: headers[seq % headers.length]!,
              body: JSON.stringify({ to: toOf(recipient++), body: BODY }),
              signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
            })
            const text = await res.text()
            if (res.status !== 200) throw new Error(`send: HTTP ${res.status} ${text.slice(0, 200)}`)
            const sid: string = JSON.parse(text).data.message_id
            const t1 = performance.now()
            const deliveredPosted = Date.now()
            await callback(sid, 'delivered', seq + 1)
            const readPosted = Date.now()
            const t2 = performance.now()
            await callback(sid, 'read', seq)
            const t3 = performance.now()
            sendMs.push(t1 - t0)
            callbackMs.push(t2 - t1, t3 - t2)
            records?.push({ sid, deliveredPosted, readPosted, done: Date.now() })
          }

        const s0 = await receiver.stats()
        /** Waits until every webhook due so far has arrived, or nothing arrived for 10 s, or drainSeconds passed. */
        const drain = async () => {
          const deadline = Date.now() + drainSeconds * 1000
          let last = -1
          let lastProgress = Date.now()
          for (;;) {
            const stats = await receiver.stats()
            const arrived = stats.unique - s0.unique
            if (arrived >= webhooksDue) return
            if (arrived !== last) {
              last = arrived
              lastProgress = Date.now()
            }
            if (Date.now() > deadline || Date.now() - lastProgress > 10_000) return
            await sleep(25)
          }
        }

        if (ctx.warmupSeconds > 0) {
          await runLoad({ seconds: ctx.warmupSeconds, concurrency, task: lifecycleTask(undefined, [], []) })
          await drain()
        }
        const meter = cpuMeter({
          loadgen: 'self',
          service: services.map((s) => s.pid),
          ...(bouncer ? { pgbouncer: childPidsNamed('pgbouncer') } : {}),
          'fake twilio': [twilio.pid],
          receiver: [receiver.pid],
          ...(db && monitor ? { postgres: await backendPids(monitor, db.name), 'pg aux': await serverProcessPids(monitor) } : {}),
          kernel: kernelThreadPids(),
        })
        const records: Lifecycle[] = []
        const sendMs: number[] = []
        const callbackMs: number[] = []
        const started = Date.now()
        const load = await runLoad({ seconds: ctx.seconds, concurrency, task: lifecycleTask(records, sendMs, callbackMs) })
        await drain()
        const cpu = meter.stop()
        const connections = (await receiver.stats()).connections - s0.connections

        // First arrival of each (SID, status) of this phase's lifecycles; repeats of a webhook-id are duplicates.
        const dump = await receiver.dump()
        const mine = new Set(records.map((r) => r.sid))
        const arrival = new Map<string, number>()
        const seenIds = new Set<string>()
        let duplicates = 0
        for (let i = 0; i < dump.ids.length; i++) {
          const sid = dump.sids[i]!
          if (!mine.has(sid)) continue
          if (seenIds.has(dump.ids[i]!)) duplicates++
          seenIds.add(dump.ids[i]!)
          const key = `${sid} ${dump.statuses[i]}`
          if (!arrival.has(key)) arrival.set(key, dump.at[i]!)
        }
        const lag: number[] = []
        const deliveredLag: number[] = []
        let finished = started
        let missing = 0
        for (const r of records) {
          const delivered = arrival.get(`${r.sid} delivered`)
          const read = arrival.get(`${r.sid} read`)
          if (delivered === undefined || read === undefined) {
            missing += (delivered === undefined ? 1 : 0) + (read === undefined ? 1 : 0)
            continue
          }
          lag.push(read - r.readPosted)
          deliveredLag.push(delivered - r.deliveredPosted)
          finished = Math.max(finished, r.done, read, delivered)
        }
        const complete = lag.length
        const seconds = (finished - started) / 1000

        // Every applied read is a read message, seen through the API (both databases).
        let readTotal = 0
        let otherTotal = 0
        for (const a of accounts) {
          for (const status of ['read', 'sent', 'delivered', 'failed'] as const) {
            const page = await apiJson(`${base}/api/v1/messages?status=${status}&limit=1`, { token: a.key })
            if (status === 'read') readTotal += page.total
            else otherTotal += page.total
          }
        }
        const expectedRead = readsApplied + (db ? accountsCount * history : 0)
        const consistent = readTotal === expectedRead && otherTotal === lifecyclesTried - readsApplied
        const consistency = `${readTotal} read (${expectedRead} expected), ${otherTotal} in other states (${lifecyclesTried - readsApplied} lifecycles unfinished)`

        await stopAll()
        let xactsPerLifecycle = NaN
        let rowsPerLifecycle = NaN
        let retries = 0
        if (db && monitor && before) {
          await clientsGone(monitor, db.name)
          const after = await databaseCounters(monitor, db.name)
          xactsPerLifecycle = (after.transactions - before.transactions) / Math.max(1, lifecyclesTried)
          rowsPerLifecycle = (after.rowsWritten - before.rowsWritten) / Math.max(1, lifecyclesTried)
          const sql = postgres(db.url, { max: 1, onnotice: () => {} })
          try {
            const [row] = await sql<{ retries: number }[]>`
              select coalesce(sum(attempts - 1), 0)::int as retries from webhook_events where attempts > 1`
            retries = row!.retries
          } finally {
            await sql.end()
          }
        }
        return {
          kind: 'http',
          variant,
          instances,
          direct,
          db,
          notMeasured:
            instances > 1 && (load.errors > 0 || missing > 0 || !consistent)
              ? `not measured: ${load.errors} requests failed or timed out, ${missing} webhooks missing` +
                (load.errorSamples[0] ? ` (${load.errorSamples[0]})` : '')
              : undefined,
          answered: load.ok,
          complete,
          seconds,
          perSecond: complete / seconds,
          requestsPerSecond: load.perSecond,
          errors: load.errors,
          errorSamples: load.errorSamples,
          lag: latencySummary(lag),
          deliveredLag: latencySummary(deliveredLag),
          sendMs: latencySummary(sendMs),
          callbackMs: latencySummary(callbackMs),
          missing,
          duplicates,
          consistent,
          consistency,
          xactsPerLifecycle,
          rowsPerLifecycle,
          retries,
          connections,
          cpu,
        }
      } finally {
        await stopAll()
      }
    }

    const ceilingPhase = async (): Promise<CeilingPhase> => {
      const target = ctx.embedded ? await embeddedCeilingDatabase(ctx, accountsCount, hookUrl, tls.caFile) : undefined
      const db = target ? undefined : await ctx.freshDatabase('lifecycle_ceiling')
      let accounts: SeededAccount[]
      let sql: postgres.Sql<any>
      let before: { transactions: number; rowsWritten: number } | undefined
      if (target) {
        accounts = target.accounts
        sql = target.database.sql
      } else {
        accounts = (await seedForCeiling(ctx, { databaseUrl: db!.url }, accountsCount, hookUrl, tls.caFile)).accounts
        await seedMessageHistory(
          db!.url,
          accounts.map((a) => a.accountId),
          history,
        )
        await vacuumAnalyze(db!.url)
        before = await databaseCounters(monitor!, db!.name)
        sql = benchClient(db!.url, concurrency, 'bench-ceiling')
      }
      let ended: Promise<void> | undefined
      const end = () => (ended ??= target ? target.database.close() : sql.end({ timeout: 5 }))
      ctx.onCleanup(end)
      const hashes = accounts.map((a) => sha256Hex(a.key))
      let recipient = 0
      let tried = 0
      const task = async (_w: number, seq: number) => {
        tried++
        const sid = `SM${randomHex(16)}`
        const [message] = await ceilingSend(sql, hashes[seq % hashes.length]!, normalizePhone(toOf(recipient++))!, BODY, sid)
        if (!message) throw new Error('ceiling: no row charged')
        for (const status of ['delivered', 'read'] as const) {
          const outcome = await applyStatuses(sql as unknown as Sql, 'UTC', [{ sid, status }])
          if (outcome.events !== 1) throw new Error(`ceiling: ${status} wrote ${outcome.events} events`)
          const recorded = await recordDelivery(sql, message.id, hookUrl)
          if (recorded.length !== 1) throw new Error(`ceiling: ${status} delivery not recorded`)
        }
      }
      try {
        if (ctx.warmupSeconds > 0) await runLoad({ seconds: ctx.warmupSeconds, concurrency, task })
        const meter = cpuMeter({
          // Embedded: PGlite runs in this process, so `loadgen` is the client and the database.
          loadgen: 'self',
          ...(db ? { postgres: await backendPids(monitor!, db.name), 'pg aux': await serverProcessPids(monitor!) } : {}),
          kernel: kernelThreadPids(),
        })
        const load = await runLoad({ seconds: ctx.seconds, concurrency, task })
        const cpu = meter.stop()
        await end()
        let xactsPerLifecycle = NaN
        let rowsPerLifecycle = NaN
        if (db && before) {
          await clientsGone(monitor!, db.name)
          const after = await databaseCounters(monitor!, db.name)
          xactsPerLifecycle = (after.transactions - before.transactions) / Math.max(1, tried)
          rowsPerLifecycle = (after.rowsWritten - before.rowsWritten) / Math.max(1, tried)
        }
        return {
          kind: 'ceiling',
          answered: load.ok,
          seconds: load.seconds,
          perSecond: load.perSecond,
          errors: load.errors,
          errorSamples: load.errorSamples,
          lifecycleMs: { n: load.ok, p50: load.p50, p90: load.p90, p99: load.p99, max: load.max, mean: NaN },
          xactsPerLifecycle,
          rowsPerLifecycle,
          cpu,
        }
      } finally {
        await end()
        target?.remove()
      }
    }

    /**
     * The database's limit: pgbench runs bench/lifecycle.pgbench on `db` (an HTTP phase's database, its
     * service stopped), as many connections as the load has workers, prepared statements. An unmeasured
     * warm-up run first (BENCH_WARMUP_SECONDS), then the measured one; the CPU meter covers its steady
     * part (from all connections open to just before the end), as the rate excludes connecting.
     */
    const pgbenchPhase = async (db: FreshDatabase): Promise<PgbenchPhase> => {
      await vacuumAnalyze(db.url)
      const probe = postgres(db.url, { max: 1, onnotice: () => {} })
      const [range] = await probe<{ kmin: number; kmax: number }[]>`select min(id)::int as kmin, max(id)::int as kmax from api_keys`
      await probe.end()
      const url = new URL(db.url)
      const threads = Math.max(1, Math.min(concurrency, navigator.hardwareConcurrency || 1))
      const start = (seconds: number) =>
        Bun.spawn(
          [
            pgbenchPath,
            ...['-h', url.hostname, '-p', url.port || '5432', '-U', decodeURIComponent(url.username || 'postgres')],
            ...['-n', '-M', 'prepared', '-c', String(concurrency), '-j', String(threads), '-T', String(seconds)],
            ...['-D', `kmin=${range!.kmin}`, '-D', `kmax=${range!.kmax}`, '-f', PGBENCH_SCRIPT, db.name],
          ],
          {
            env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...(url.password ? { PGPASSWORD: decodeURIComponent(url.password) } : {}) },
            stdin: 'ignore',
            stdout: 'pipe',
            stderr: 'pipe',
          },
        )
      const finish = async (proc: ReturnType<typeof start>) => {
        const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
        const number = (re: RegExp) => Number(re.exec(out)?.[1] ?? NaN)
        return {
          code,
          processed: number(/number of transactions actually processed: (\d+)/),
          failed: number(/number of failed transactions: (\d+)/) || 0,
          tps: number(/tps = ([\d.]+) \(without initial connection time\)/),
          latencyMs: number(/latency average = ([\d.]+) ms/),
          errorSamples: [...new Set(err.split('\n').filter((l) => /error/i.test(l)))].slice(0, 3),
        }
      }
      if (ctx.warmupSeconds > 0) await finish(start(Math.max(1, Math.round(ctx.warmupSeconds))))
      await clientsGone(monitor!, db.name)
      const before = await databaseCounters(monitor!, db.name)
      const seconds = Math.max(1, Math.round(ctx.seconds))
      const t0 = performance.now()
      const proc = start(seconds)
      const result = finish(proc)
      let pids: number[] = []
      for (let i = 0; i < 100 && (pids = await backendPids(monitor!, db.name)).length < concurrency; i++) await sleep(20)
      const meter = cpuMeter({
        pgbench: [proc.pid],
        postgres: pids,
        'pg aux': await serverProcessPids(monitor!),
        kernel: kernelThreadPids(),
      })
      await sleep(Math.max(100, t0 + seconds * 1000 - 300 - performance.now()))
      const cpu = meter.stop()
      const run = await result
      await clientsGone(monitor!, db.name)
      const after = await databaseCounters(monitor!, db.name)
      const done = Math.max(1, run.processed || 0)
      const failedRun = run.code !== 0 || !Number.isFinite(run.tps)
      return {
        kind: 'pgbench',
        answered: run.processed || 0,
        perSecond: failedRun ? NaN : run.tps,
        latencyMs: run.latencyMs,
        errors: run.failed + (failedRun ? 1 : 0),
        errorSamples: failedRun && run.errorSamples.length === 0 ? [`pgbench exited with ${run.code}`] : run.errorSamples,
        xactsPerLifecycle: (after.transactions - before.transactions) / done,
        rowsPerLifecycle: (after.rowsWritten - before.rowsWritten) / done,
        cpu,
      }
    }

    // Each round: the HTTP phase(s), pgbench on the last one's database, two instances direct, two
    // through PgBouncer, then the ceiling, so a burst of other load on the machine tends to hit them all;
    // with BENCH_COMPARE_ROOT, A and B alternate (ABAB... over the rounds).
    const phases: Phase[] = []
    for (let round = 0; round < rounds; round++) {
      let last: HttpPhase | undefined
      for (const variant of variants) phases.push((last = await httpPhase(variant)))
      if (extra.has('pgbench') && last?.db) phases.push(await pgbenchPhase(last.db))
      if (extra.has('x2direct') && !ctx.embedded) phases.push(await httpPhase(variants[variants.length - 1]!, 2, true))
      if (extra.has('pgbouncer') && !ctx.embedded) phases.push(await httpPhase(variants[variants.length - 1]!, 2))
      if (extra.has('ceiling')) phases.push(await ceilingPhase())
    }
    const https = phases.filter((p): p is HttpPhase => p.kind === 'http')
    const singles = https.filter((p) => p.instances === 1)
    const pooled = https.filter((p) => p.instances > 1 && !p.direct)
    const directs = https.filter((p) => p.instances > 1 && p.direct)
    const ceilings = phases.filter((p): p is CeilingPhase => p.kind === 'ceiling')
    const pgbenches = phases.filter((p): p is PgbenchPhase => p.kind === 'pgbench')
    const label = (p: Phase) =>
      p.kind === 'http'
        ? p.instances > 1
          ? `${p.variant.label} x${p.instances} (${p.direct ? 'direct' : 'PgBouncer'})`
          : `${p.variant.label} (HTTP)`
        : p.kind === 'pgbench'
          ? 'pgbench (SQL)'
          : 'ceiling (SQL)'
    const perLc = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '-')

    console.log(
      table([
        [
          'phase',
          'lifecycles/s',
          'complete',
          'answered/s',
          'read→webhook p50 ms',
          'p90',
          'p99',
          'max',
          'delivered→webhook p50',
          'send p50',
          'callback p50',
          'p99',
          'errors',
          'missing',
          'dupes',
          'xacts/lc',
          'rows/lc',
          'cpu ms/lc',
        ],
        ...phases.map((p) =>
          p.kind === 'http'
            ? [
                label(p),
                fmtRate(p.perSecond),
                String(p.complete),
                fmtRate(p.requestsPerSecond),
                fmtMs(p.lag.p50),
                fmtMs(p.lag.p90),
                fmtMs(p.lag.p99),
                fmtMs(p.lag.max),
                fmtMs(p.deliveredLag.p50),
                fmtMs(p.sendMs.p50),
                fmtMs(p.callbackMs.p50),
                fmtMs(p.callbackMs.p99),
                String(p.errors),
                String(p.missing),
                String(p.duplicates),
                perLc(p.xactsPerLifecycle),
                perLc(p.rowsPerLifecycle),
                cpuPerLifecycle(p.cpu, p.perSecond).toFixed(2),
              ]
            : [
                label(p),
                fmtRate(p.perSecond),
                String(p.answered),
                fmtRate(p.perSecond),
                ...Array<string>(8).fill('-'),
                String(p.errors),
                '-',
                '-',
                perLc(p.xactsPerLifecycle),
                perLc(p.rowsPerLifecycle),
                cpuPerLifecycle(p.cpu, p.perSecond).toFixed(2),
              ],
        ),
      ]),
    )
    for (const p of phases) {
      console.log(`  ${label(p)}: ${fmtCpu(p.cpu)}${p.kind === 'pgbench' ? `; latency average ${fmtMs(p.latencyMs)} ms a lifecycle` : ''}`)
      if (p.kind === 'http')
        console.log(`    consistency: ${p.consistency}; webhook retries ${p.retries}; receiver saw ${p.connections} TLS connections`)
      if (p.kind === 'http' && p.notMeasured) console.log(`    ${p.notMeasured}`)
      for (const sample of p.errorSamples) console.log(`    error: ${sample}`)
    }
    console.log(
      '  lifecycles/s: complete lifecycles (sent, delivered, read, both webhooks received) / time from the start of the measured ' +
        'window to the last one completing; answered/s: the three requests alone; cpu ms/lc: CPU of every process of the ' +
        'phase per lifecycle (the rate depends on the share of the cores a phase got, this much less). pgbench: ' +
        "bench/lifecycle.pgbench, 5 transactions per lifecycle, prepared, on the HTTP phase's database. Ceiling: 5 statements " +
        'per lifecycle through postgres.js, no HTTP.' +
        (pooled.length ? ' xN (PgBouncer): N services, DATABASE_URL through one PgBouncer (transaction mode), requests round robin.' : '') +
        (directs.length ? ' xN (direct): the N services straight to PostgreSQL, each with 1/N of the pool, requests round robin.' : ''),
    )
    console.log(
      '  left out: TLS in front of the API (plain HTTP on loopback), network latency to Twilio and to the receiver (all on loopback), ' +
        'Idempotency-Key, bulk and campaigns, failed/undelivered, repeated, out-of-order or early (parked) reports, webhook retries ' +
        '(the receiver always answers 200 and does not verify signatures), real Twilio pacing (reports come right after the send). ' +
        'pgbench and the ceiling also leave out HTTP, the hand-off (the message is inserted already sent), the paces, signature ' +
        'checks, the outbox claim and the webhook requests themselves' +
        (ctx.embedded
          ? '. Embedded: no seeded history (the service holds its database), and the ceiling runs its PGlite in the load ' +
            "generator's process (one connection, reached through the same socket as in the service)."
          : '.'),
    )

    const metrics: Record<string, number> = { accounts: accountsCount, concurrency }
    const checks: Check[] = []
    const prefix = ctx.embedded ? 'lifecycle (embedded)' : 'lifecycle'
    const cpuOf = (list: Phase[]) => median(list.map((p) => cpuPerLifecycle(p.cpu, p.perSecond)))
    for (const variant of variants) {
      const mine = singles.filter((p) => p.variant === variant)
      const key = variants.length > 1 ? `${variant.label}_` : ''
      metrics[`${key}per_second`] = median(mine.map((p) => p.perSecond))
      metrics[`${key}answered_per_second`] = median(mine.map((p) => p.requestsPerSecond))
      metrics[`${key}lag_p50_ms`] = median(mine.map((p) => p.lag.p50))
      metrics[`${key}lag_p99_ms`] = median(mine.map((p) => p.lag.p99))
      metrics[`${key}cpu_ms_per_lifecycle`] = cpuOf(mine)
      if (!ctx.embedded) metrics[`${key}xacts_per_lifecycle`] = median(mine.map((p) => p.xactsPerLifecycle))
    }
    if (ceilings.length) {
      metrics.ceiling_per_second = median(ceilings.map((p) => p.perSecond))
      metrics.ceiling_cpu_ms_per_lifecycle = cpuOf(ceilings)
    }
    if (pgbenches.length) {
      metrics.pgbench_per_second = median(pgbenches.map((p) => p.perSecond))
      metrics.pgbench_cpu_ms_per_lifecycle = cpuOf(pgbenches)
      metrics.pgbench_xacts_per_lifecycle = median(pgbenches.map((p) => p.xactsPerLifecycle))
    }
    const measuredPooled = pooled.filter((p) => !p.notMeasured)
    if (measuredPooled.length) {
      metrics.pgbouncer_x2_per_second = median(measuredPooled.map((p) => p.perSecond))
      metrics.pgbouncer_x2_cpu_ms_per_lifecycle = cpuOf(measuredPooled)
      metrics.pgbouncer_x2_xacts_per_lifecycle = median(measuredPooled.map((p) => p.xactsPerLifecycle))
    }

    // The targets judge this checkout's service (B when comparing).
    const main = singles.filter((p) => p.variant === variants[variants.length - 1])
    const rate = median(main.map((p) => p.perSecond))
    const lagP99 = median(main.map((p) => p.lag.p99))
    const mainCpu = cpuOf(main)
    const mainXacts = median(main.map((p) => p.xactsPerLifecycle))
    /** "412/s (3.95 cpu ms, 1.6 xacts a lifecycle)" */
    const figure = (perSecond: number, cpu: number, xacts: number) =>
      `${fmtRate(perSecond)}/s (${Number.isFinite(cpu) ? cpu.toFixed(2) : '-'} cpu ms${Number.isFinite(xacts) ? `, ${xacts.toFixed(1)} xacts` : ''} a lifecycle)`
    const ceiling = metrics.ceiling_per_second ?? NaN
    metrics.ratio_per_second = rate / ceiling
    const summary: string[] = [`service ${figure(rate, mainCpu, ctx.embedded ? NaN : mainXacts)}`]
    if (pgbenches.length) {
      metrics.ratio_pgbench = rate / metrics.pgbench_per_second!
      summary.push(
        `${metrics.ratio_pgbench.toFixed(2)}x pgbench's ${figure(metrics.pgbench_per_second!, metrics.pgbench_cpu_ms_per_lifecycle!, metrics.pgbench_xacts_per_lifecycle!)}`,
      )
    }
    if (ceilings.length)
      summary.push(
        `${metrics.ratio_per_second.toFixed(2)}x the ceiling's ${figure(ceiling, metrics.ceiling_cpu_ms_per_lifecycle!, median(ceilings.map((p) => p.xactsPerLifecycle)))}`,
      )
    if (measuredPooled.length) {
      metrics.ratio_pgbouncer_x2 = metrics.pgbouncer_x2_per_second! / rate
      summary.push(
        `two instances through PgBouncer ${figure(metrics.pgbouncer_x2_per_second!, metrics.pgbouncer_x2_cpu_ms_per_lifecycle!, metrics.pgbouncer_x2_xacts_per_lifecycle!)} = ${metrics.ratio_pgbouncer_x2.toFixed(2)}x one`,
      )
    } else if (pooled.length) summary.push(`two instances through PgBouncer ${pooled[0]!.notMeasured}`)
    // Two instances without the pooler: no target, it tells the split's cost from the pooler's.
    const measuredDirect = directs.filter((p) => !p.notMeasured)
    if (measuredDirect.length) {
      metrics.direct_x2_per_second = median(measuredDirect.map((p) => p.perSecond))
      metrics.direct_x2_cpu_ms_per_lifecycle = cpuOf(measuredDirect)
      metrics.direct_x2_xacts_per_lifecycle = median(measuredDirect.map((p) => p.xactsPerLifecycle))
      summary.push(
        `two instances direct ${figure(metrics.direct_x2_per_second, metrics.direct_x2_cpu_ms_per_lifecycle, metrics.direct_x2_xacts_per_lifecycle)} = ${(metrics.direct_x2_per_second / rate).toFixed(2)}x one`,
      )
    } else if (directs.length) summary.push(`two instances direct ${directs[0]!.notMeasured}`)
    console.log(`  medians over ${rounds} round(s): ${summary.join('; ')}`)
    if (variants.length > 1)
      console.log(
        `  A/B: ` +
          variants
            .map(
              (v) =>
                `${v.label} ${fmtRate(metrics[`${v.label}_per_second`]!)}/s (${metrics[`${v.label}_cpu_ms_per_lifecycle`]!.toFixed(2)} cpu ms/lc)`,
            )
            .join(', '),
      )

    if (ctx.embedded) {
      checks.push({
        name: `${prefix}: lifecycles/s service/ceiling`,
        pass: rate / ceiling >= TARGET_CEILING_RATIO,
        detail: `${(rate / ceiling).toFixed(2)}x (${summary.join('; ')}), target >= ${TARGET_CEILING_RATIO.toFixed(1)}x`,
      })
      checks.push({
        name: `${prefix}: lifecycles/s`,
        pass: rate >= TARGET_EMBEDDED_PER_SECOND,
        detail: `${fmtRate(rate)}/s (read → webhook p99 ${fmtMs(lagP99)} ms), target >= ${fmtRate(TARGET_EMBEDDED_PER_SECOND)}/s`,
      })
    } else {
      if (pgbenches.length)
        checks.push({
          name: `${prefix}: lifecycles/s service/pgbench`,
          pass: metrics.ratio_pgbench! >= TARGET_PGBENCH_RATIO,
          detail:
            `${metrics.ratio_pgbench!.toFixed(2)}x: service ${figure(rate, mainCpu, mainXacts)}, pgbench ` +
            `${figure(metrics.pgbench_per_second!, metrics.pgbench_cpu_ms_per_lifecycle!, metrics.pgbench_xacts_per_lifecycle!)}, ` +
            `target >= ${TARGET_PGBENCH_RATIO.toFixed(1)}x`,
        })
      if (ceilings.length)
        checks.push({
          name: `${prefix}: lifecycles/s service/ceiling`,
          pass: rate / ceiling >= TARGET_CEILING_RATIO,
          detail: `${(rate / ceiling).toFixed(2)}x (${fmtRate(rate)} / ${fmtRate(ceiling)}), target >= ${TARGET_CEILING_RATIO.toFixed(1)}x`,
        })
      if (pooled.length)
        checks.push({
          name: `${prefix}: two instances via PgBouncer / one`,
          pass: measuredPooled.length > 0 && metrics.ratio_pgbouncer_x2! >= TARGET_PGBOUNCER_RATIO,
          detail: measuredPooled.length
            ? `${metrics.ratio_pgbouncer_x2!.toFixed(2)}x: two ${figure(metrics.pgbouncer_x2_per_second!, metrics.pgbouncer_x2_cpu_ms_per_lifecycle!, metrics.pgbouncer_x2_xacts_per_lifecycle!)}, ` +
              `one ${figure(rate, mainCpu, mainXacts)}, target >= ${TARGET_PGBOUNCER_RATIO.toFixed(1)}x` +
              (measuredPooled.length < pooled.length
                ? ` (${pooled.length - measuredPooled.length} of ${pooled.length} rounds not measured)`
                : '')
            : `${pooled[0]!.notMeasured} in every round (${pooled.length})`,
        })
      checks.push({
        name: `${prefix}: read → webhook lag p99`,
        pass: lagP99 < TARGET_LAG_P99_MS,
        detail: `${fmtMs(lagP99)} ms (p50 ${fmtMs(median(main.map((p) => p.lag.p50)))}), target < ${TARGET_LAG_P99_MS} ms`,
      })
    }
    // A pooled phase that stalled is reported as not measured above; its duplicates still count.
    const judged = phases.filter((p) => !(p.kind === 'http' && p.notMeasured))
    const errors = judged.reduce((n, p) => n + p.errors, 0)
    const judgedHttp = https.filter((p) => !p.notMeasured)
    const missing = judgedHttp.reduce((n, p) => n + p.missing, 0)
    const duplicates = https.reduce((n, p) => n + p.duplicates, 0)
    checks.push({
      name: `${prefix}: every lifecycle complete, once`,
      pass: errors === 0 && missing === 0 && duplicates === 0 && judgedHttp.every((p) => p.consistent),
      detail: `${errors} failed requests, ${missing} webhooks missing, ${duplicates} duplicates, ${judgedHttp.filter((p) => !p.consistent).length} inconsistent phases`,
    })
    return { metrics, checks }
  },
}

/**
 * The ceiling's database: accounts, keys and webhooks made through the admin API and the API of a
 * service of its own (stopped before the measurement, so its statements are not counted).
 */
async function seedForCeiling(
  ctx: BenchContext,
  target: { databaseUrl: string } | { dataDir: string },
  count: number,
  hookUrl: string,
  caFile: string,
): Promise<{ accounts: SeededAccount[] }> {
  const seeder = await startServiceChild({
    databaseUrl: 'databaseUrl' in target ? target.databaseUrl : undefined,
    onCleanup: ctx.onCleanup,
    env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: caFile, ...('dataDir' in target ? { DATA_DIR: target.dataDir } : {}) },
  })
  try {
    const accounts = await seedAccounts(seeder, count, { balance: OPENING_BALANCE })
    for (const a of accounts) await apiJson(`${seeder.url}/api/v1/webhook`, { token: a.key, body: { url: hookUrl } })
    return { accounts }
  } finally {
    await seeder.stop()
  }
}

/**
 * The embedded ceiling's database: seeded through a service of its own in a DATA_DIR kept for the
 * purpose, then opened in this process (PGlite, one connection, as the service opens it) once that
 * service has stopped and released the directory.
 */
async function embeddedCeilingDatabase(ctx: BenchContext, count: number, hookUrl: string, caFile: string) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-ceiling-'))
  const remove = () => rmSync(dataDir, { recursive: true, force: true })
  try {
    const { accounts } = await seedForCeiling(ctx, { dataDir }, count, hookUrl, caFile)
    const database = await openDatabase({ dataDir })
    return { accounts, database, remove }
  } catch (error) {
    remove()
    throw error
  }
}

/**
 * One webhook delivery recorded, as one statement: the message's oldest pending event marked
 * delivered (its attempt counted) and its attempt row written, as the delivery worker's record() does
 * for a 200 (src/workers/webhook-delivery.ts). The worker's claim is left out: here the event is known.
 */
function recordDelivery(sql: postgres.Sql<any>, messageId: number, url: string) {
  return sql`
    with done as (
      update webhook_events e
      set status = 'delivered', attempts = e.attempts + 1, delivered_at = now(), last_error = null
      where e.id = (
        select id from webhook_events where message_id = ${messageId} and status = 'pending' order by id limit 1
      )
      returning e.id, e.attempts
    )
    insert into webhook_attempts (event_id, attempt, url, status_code, latency_ms, error)
    select id, attempts, ${url}, 200, 1, null from done
    returning event_id`
}

export default lifecycle
