// Shared pieces of the benchmarks: the database server and a fresh database per benchmark, the real
// service as a child process, seeding through the admin API, a fixed-concurrency load generator with
// latency percentiles, and CPU / transaction counters that say where the time went.
// A benchmark module exports a `Benchmark`; bench/run.ts runs them in order.

import postgres from 'postgres'
import type { Statement } from '../src/db/client'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

export const ROOT = resolve(import.meta.dir, '..')
export const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres'

// ---------------------------------------------------------------------------------------------
// What run.ts hands each benchmark, and what a benchmark hands back.

export type BenchContext = {
  /** The PostgreSQL server (DATABASE_URL or the default); benchmarks never write to its database. */
  serverUrl: string
  /**
   * BENCH_DB=embedded: the service under test runs without DATABASE_URL, on PGlite in a temporary
   * DATA_DIR (startServiceChild with `databaseUrl: undefined`). Only benchmarks marked `embedded` run.
   */
  embedded: boolean
  /** Measured seconds per phase (BENCH_SECONDS). */
  seconds: number
  /** Unmeasured seconds before each phase (BENCH_WARMUP_SECONDS): JIT, pool connections. */
  warmupSeconds: number
  /** Concurrent workers per phase (BENCH_CONCURRENCY). */
  concurrency: number
  /** A new empty database on the server, dropped when the run ends (even on Ctrl-C). */
  freshDatabase(label: string): Promise<FreshDatabase>
  /** Runs at the end of the run, last registered first, also on Ctrl-C. */
  onCleanup(fn: () => Promise<void> | void): void
}

/** A target: `pass` false prints MISS but does not fail the process. */
export type Check = { name: string; pass: boolean; detail: string }

export type BenchResult = { metrics: Record<string, number>; checks: Check[] }

export type Benchmark = {
  name: string
  summary: string
  /** Runs with BENCH_DB=embedded too (it reaches the database only through the service). */
  embedded?: boolean
  run(ctx: BenchContext): Promise<BenchResult>
}

// ---------------------------------------------------------------------------------------------
// Environment

export function envNumber(name: string, fallback: number, min = 0): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < min) throw new Error(`${name}: expected a number >= ${min}, got "${raw}"`)
  return value
}

/** The URL without its password, for printing. */
export function describeUrl(url: string): string {
  const u = new URL(url)
  if (u.password) u.password = '***'
  return u.toString()
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

// ---------------------------------------------------------------------------------------------
// Databases

export type FreshDatabase = { name: string; url: string; drop(): Promise<void> }

/** A client on the server's own database for create/drop and statistics (one connection). */
export function serverClient(serverUrl: string) {
  return postgres(serverUrl, { max: 1, onnotice: () => {}, connection: { application_name: 'bench-monitor' } })
}

export async function createFreshDatabase(serverUrl: string, label: string): Promise<FreshDatabase> {
  const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14)
  const name = `bench_${stamp}_${label.replace(/\W/g, '_')}_${Math.random().toString(36).slice(2, 6)}`
  const admin = serverClient(serverUrl)
  try {
    await admin.unsafe(`create database ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  let dropped = false
  return {
    name,
    url: url.toString(),
    async drop() {
      if (dropped) return
      dropped = true
      const again = serverClient(serverUrl)
      try {
        await again.unsafe(`drop database if exists ${name} with (force)`)
      } finally {
        await again.end()
      }
    },
  }
}

export type DatabaseCounters = { transactions: number; rowsWritten: number }

/**
 * Committed transactions (each autocommit statement is one) and rows inserted, updated or deleted
 * in one database so far, from pg_stat_database. A backend reports its counts at most once a second
 * and when it exits, so read these after the clients that did the work have disconnected.
 */
export async function databaseCounters(monitor: postgres.Sql, database: string): Promise<DatabaseCounters> {
  const [row] = await monitor<{ xacts: string; rows: string }[]>`
    select xact_commit::text as xacts, (tup_inserted + tup_updated + tup_deleted)::text as rows
    from pg_stat_database where datname = ${database}`
  return { transactions: Number(row?.xacts ?? 0), rowsWritten: Number(row?.rows ?? 0) }
}

/** Waits (up to 5 s) until no client is connected to `database`, so every backend has reported its counts. */
export async function clientsGone(monitor: postgres.Sql, database: string): Promise<void> {
  for (let i = 0; i < 100 && (await backendPids(monitor, database)).length > 0; i++) await sleep(50)
}

/**
 * Gives every account `perAccount` old, read messages with their charge in the ledger (and the balance
 * lowered to match), straight through SQL. A service that has been running has history: the planner's
 * choices and index depths on an empty `messages` table are not the ones production sees.
 */
export async function seedMessageHistory(databaseUrl: string, accountIds: number[], perAccount: number): Promise<void> {
  if (perAccount <= 0 || accountIds.length === 0) return
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    await sql.begin(async (tx) => {
      await tx`
        with inserted as (
          insert into messages (account_id, message_sid, phone, body, status, cost,
                                created_at, sent_at, delivered_at, read_at)
          select a.id, 'SM' || md5(a.id || ':' || g), '+628' || lpad((a.id * 7919 + g)::text, 10, '0'),
                 'history message ' || g, 'read', 1, t, t, t + interval '2 seconds', t + interval '1 minute'
          from unnest(${accountIds}::bigint[]) as a(id),
               generate_series(1, ${perAccount}) as g,
               lateral (select now() - interval '30 days' + g * (interval '29 days' / ${perAccount})) as ts(t)
          returning id, account_id, created_at
        )
        insert into ledger (account_id, kind, amount, balance_after, message_id, created_at)
        select i.account_id, 'charge', -1,
               a.balance - row_number() over (partition by i.account_id order by i.id), i.id, i.created_at
        from inserted i join accounts a on a.id = i.account_id`
      await tx`update accounts set balance = balance - ${perAccount} where id = any(${accountIds}::bigint[])`
    })
  } finally {
    await sql.end()
  }
}

/**
 * VACUUM ANALYZE the whole database, so every phase starts from the same state: fresh planner
 * statistics, no dead rows left by the phase before (autovacuum may run during a phase, as in production).
 */
export async function vacuumAnalyze(databaseUrl: string): Promise<void> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    await sql`vacuum analyze`
  } finally {
    await sql.end()
  }
}

/** Process ids of the server backends connected to one database. */
export async function backendPids(monitor: postgres.Sql, database: string): Promise<number[]> {
  const rows = await monitor<
    { pid: number }[]
  >`select pid from pg_stat_activity where datname = ${database} and backend_type = 'client backend'`
  return rows.map((r) => r.pid)
}

/** One process as /proc/<pid>/stat tells it: its command name and the fields after it (state, ppid, ...). */
type ProcStat = { pid: number; comm: string; fields: string[] }

/** /proc/<pid>/stat of one process, or undefined when it is gone (or this is not Linux). */
function procStat(pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name may hold spaces and parentheses: it ends at the last ')'.
    return { pid, comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), fields: stat.slice(stat.lastIndexOf(')') + 2).split(' ') }
  } catch {
    return undefined
  }
}

/** Process ids of the processes whose stat satisfies `keep` (none when not Linux). */
function pidsWhere(keep: (proc: ProcStat) => boolean): number[] {
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return [] // not Linux
  }
  const out: number[] = []
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    const stat = procStat(Number(entry)) // undefined: exited meanwhile
    if (stat && keep(stat)) out.push(stat.pid)
  }
  return out
}

const parentPid = (proc: ProcStat) => Number(proc.fields[1])

/** Kernel threads (children of kthreadd): journaling, block I/O and network work shows up here. */
export function kernelThreadPids(): number[] {
  return pidsWhere((p) => parentPid(p) === 2)
}

/** Process ids of this process's children whose command name is `name` (e.g. the PgBouncer a helper spawned). */
export function childPidsNamed(name: string): number[] {
  return pidsWhere((p) => parentPid(p) === process.pid && p.comm === name)
}

/** Process ids of the server's own processes (WAL writer, checkpointer, autovacuum, ...). */
export async function serverProcessPids(monitor: postgres.Sql): Promise<number[]> {
  const rows = await monitor<{ pid: number }[]>`select pid from pg_stat_activity where backend_type <> 'client backend'`
  return rows.map((r) => r.pid)
}

// ---------------------------------------------------------------------------------------------
// The service as a child process: the load generator then does not share a JS thread with it.

export type ServiceChild = {
  url: string
  adminToken: string
  pid: number
  stop(): Promise<void>
}

/** BENCH_SERVICE_ROOT: another checkout whose src/main.ts is the service under test (A/B of a change). */
export function serviceRoot(): string {
  return resolve(process.env.BENCH_SERVICE_ROOT || ROOT)
}

/** BENCH_SERVICE_ENV="NAME=value NAME=value": extra variables for every service under test (profiling). */
export function serviceEnvOverrides(): Record<string, string> {
  const out: Record<string, string> = {}
  for (const pair of (process.env.BENCH_SERVICE_ENV ?? '').split(/\s+/).filter(Boolean)) {
    const eq = pair.indexOf('=')
    if (eq <= 0) throw new Error(`BENCH_SERVICE_ENV: expected NAME=value, got "${pair}"`)
    out[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  return out
}

/** A TCP port that was free a moment ago (Bun.serve on port 0, then stopped). */
export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') })
  const port = probe.port!
  probe.stop(true)
  return port
}

/**
 * Starts `bun src/main.ts` against `databaseUrl` (undefined: the embedded database in a fresh
 * temporary DATA_DIR) and resolves once its banner says it listens.
 * The environment is built here, not inherited, so a PROVIDER or LOG_LEVEL in the caller's shell
 * cannot change what is measured; `env` adds or overrides variables.
 */
export async function startServiceChild(options: {
  databaseUrl: string | undefined
  env?: Record<string, string>
  onCleanup?: BenchContext['onCleanup']
  /** The checkout to run `src/main.ts` from (default serviceRoot()): an A/B of two versions in one run. */
  root?: string
}): Promise<ServiceChild> {
  const port = freePort()
  const adminToken = `bench-admin-${crypto.randomUUID()}`
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-service-'))
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: process.env.HOME ?? tmpdir(),
    ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
    HOST: '127.0.0.1',
    PORT: String(port),
    ADMIN_TOKEN: adminToken,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    // A load generator is one key at thousands of requests a second: far over the default rate. The
    // counting still runs (and costs what it costs); only the limit is out of reach.
    KEY_RATE_LIMIT_PER_MINUTE: '1000000000',
    // Likewise the sender's pace (the simulator's 1,000/s, Twilio's and Meta's 80/s) would measure the
    // provider's limit, not the service: it is raised out of reach, and still taken for every message.
    // bench/paced.ts sets its own, and measures the pace itself.
    PROVIDER_MAX_PER_SECOND: '100000',
    ...options.env,
    ...serviceEnvOverrides(),
  }
  // BENCH_SERVICE_BUN_FLAGS: flags for the service's `bun`, e.g. "--cpu-prof-md --cpu-prof-dir=/tmp/prof" (profiling).
  const flags = (process.env.BENCH_SERVICE_BUN_FLAGS ?? '').split(/\s+/).filter(Boolean)
  const child = Bun.spawn([process.execPath, ...flags, 'src/main.ts'], {
    cwd: options.root ?? serviceRoot(),
    env,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let stopped: Promise<void> | undefined
  const stop = () =>
    (stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const exited = await Promise.race([child.exited.then(() => true), sleep(25_000).then(() => false)])
        if (!exited) child.kill('SIGKILL')
        await child.exited
      }
      rmSync(dataDir, { recursive: true, force: true })
    })())
  options.onCleanup?.(stop)

  const output: string[] = []
  const banner = new Promise<string>((resolveBanner, reject) => {
    let found = false
    const watch = async (stream: ReadableStream<Uint8Array>, isStdout: boolean) => {
      const decoder = new TextDecoder()
      let buffered = ''
      for await (const chunk of stream) {
        buffered += decoder.decode(chunk, { stream: true })
        let newline: number
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, newline)
          buffered = buffered.slice(newline + 1)
          if (!found) output.push(line)
          const match = isStdout && !found ? /listening on (\S+)/.exec(line) : null
          if (match) {
            found = true
            resolveBanner(match[1]!)
          } else if (found && !isStdout) {
            // After the start only warnings and errors are printed (LOG_LEVEL=warn); show them.
            console.error(`  [service] ${line}`)
          }
        }
      }
    }
    void watch(child.stdout, true)
    void watch(child.stderr, false)
    void child.exited.then((code) => {
      if (!found) reject(new Error(`service exited with ${code} before listening:\n${output.join('\n')}`))
      // A service that dies under load is a finding, not a mystery: say so where the errors show up.
      else if (!stopped) console.error(`  [service] pid ${child.pid} exited on its own: code ${code}, signal ${child.signalCode ?? 'none'}`)
    })
    setTimeout(() => {
      if (!found) reject(new Error(`service did not print its banner within 30 s:\n${output.join('\n')}`))
    }, 30_000)
  })
  try {
    const url = await banner
    return { url, adminToken, pid: child.pid, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

// ---------------------------------------------------------------------------------------------
// Helper processes of the benchmarks (webhook receiver, fake provider): each prints
// "listening on PORT" when ready; its stdout is drained afterwards so it never blocks on a full pipe.

export type HelperProcess = { port: number; pid: number; stop(): Promise<void> }

export async function startHelperProcess(script: string, env: Record<string, string>): Promise<HelperProcess> {
  const child = Bun.spawn([process.execPath, script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const reader = child.stdout.getReader()
  let text = ''
  const deadline = Date.now() + 15_000
  let port = 0
  while (!port) {
    if (Date.now() > deadline) throw new Error(`${script} did not start: ${text}`)
    const { value, done } = await reader.read()
    if (done) throw new Error(`${script} exited: ${text}`)
    text += new TextDecoder().decode(value)
    const m = /listening on (\d+)/.exec(text)
    if (m) port = Number(m[1])
  }
  void (async () => {
    while (!(await reader.read()).done) {}
  })().catch(() => {})
  let stopped: Promise<void> | undefined
  return {
    port,
    pid: child.pid,
    stop: () =>
      (stopped ??= (async () => {
        if (child.exitCode === null) child.kill('SIGTERM')
        await child.exited
      })()),
  }
}

export type WebhookReceiver = HelperProcess & {
  stats(): Promise<{ received: number; unique: number; connections: number }>
  /** Every delivery in arrival order: webhook-id, arrival (ms since the epoch), data.message_sid, data.status. */
  dump(): Promise<{ ids: string[]; at: number[]; sids: string[]; statuses: string[] }>
}

/** bench/webhook-receiver.ts in a process of its own, serving HTTPS with this certificate (signed by `caFile`). */
export async function startWebhookReceiver(certFile: string, keyFile: string, caFile: string): Promise<WebhookReceiver> {
  const helper = await startHelperProcess('bench/webhook-receiver.ts', { RECEIVER_CERT: certFile, RECEIVER_KEY: keyFile })
  const ca = [await Bun.file(caFile).text()]
  const get = async (path: string) => {
    const res = await fetch(`https://localhost:${helper.port}${path}`, { tls: { ca } })
    if (res.status !== 200) throw new Error(`receiver ${path}: HTTP ${res.status}`)
    return res.json()
  }
  return {
    ...helper,
    stats: () => get('/stats') as ReturnType<WebhookReceiver['stats']>,
    dump: () => get('/dump') as ReturnType<WebhookReceiver['dump']>,
  }
}

// ---------------------------------------------------------------------------------------------
// Seeding through the admin API

export type SeededAccount = { accountId: number; keyId: number; key: string }

async function adminPost(service: ServiceChild, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${service.url}/admin/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${service.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const text = await res.text()
  if (res.status !== 201) throw new Error(`POST /admin/v1${path}: ${res.status} ${text}`)
  return JSON.parse(text).data
}

/** `count` accounts with `balance` each and one API key each, created `parallel` at a time. */
export async function seedAccounts(
  service: ServiceChild,
  count: number,
  options: { balance: number; parallel?: number },
): Promise<SeededAccount[]> {
  const out: SeededAccount[] = new Array(count)
  let next = 0
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const account = await adminPost(service, '/accounts', { name: `bench-${i}`, balance: options.balance })
      const key = await adminPost(service, `/accounts/${account.id}/keys`, { label: 'bench' })
      out[i] = { accountId: account.id, keyId: key.id, key: key.key }
    }
  }
  await Promise.all(Array.from({ length: options.parallel ?? 8 }, worker))
  return out
}

// ---------------------------------------------------------------------------------------------
// Load generation: a fixed number of async workers, each sending its next request as soon as the
// previous one answered, until the time is up. Requests in flight at the deadline still count;
// the rate divides by the time until the last one finished.

export type LoadResult = {
  ok: number
  errors: number
  seconds: number
  perSecond: number
  p50: number
  p90: number
  p99: number
  max: number
  /** The first few distinct error messages. */
  errorSamples: string[]
}

/** Nearest-rank percentile of ascending `sorted` (q in 0..1). */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)))
  return sorted[rank - 1]!
}

/** `task` resolves for success and throws for failure; `seq` counts requests over all workers. */
export async function runLoad(options: {
  seconds: number
  concurrency: number
  task: (worker: number, seq: number) => Promise<unknown>
}): Promise<LoadResult> {
  const latencies: number[] = []
  const errorSamples: string[] = []
  let errors = 0
  let seq = 0
  const start = performance.now()
  const deadline = start + options.seconds * 1000
  const worker = async (w: number) => {
    while (performance.now() < deadline) {
      const t0 = performance.now()
      try {
        await options.task(w, seq++)
        latencies.push(performance.now() - t0)
      } catch (error) {
        errors++
        const message = error instanceof Error ? error.message : String(error)
        if (errorSamples.length < 3 && !errorSamples.includes(message)) errorSamples.push(message)
      }
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, (_, w) => worker(w)))
  const seconds = (performance.now() - start) / 1000
  const sorted = Float64Array.from(latencies).sort()
  return {
    ok: latencies.length,
    errors,
    seconds,
    perSecond: latencies.length / seconds,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
    errorSamples,
  }
}

// ---------------------------------------------------------------------------------------------
// CPU accounting (Linux /proc): which process used the cores during a phase. On 2 cores the load
// generator, the service and PostgreSQL compete, so this tells whether a phase was CPU-bound and on whom.

const CLOCK_TICKS = 100 // USER_HZ, 100 on every Linux build that matters here

function processTicks(pid: number): number {
  const stat = procStat(pid)
  if (!stat) return 0 // gone, or not Linux
  return Number(stat.fields[11]) + Number(stat.fields[12]) // utime, stime
}

function machineTicks(): { busy: number; total: number; cores: number } {
  try {
    const lines = readFileSync('/proc/stat', 'utf8').split('\n')
    const cpu = lines[0]!.trim().split(/\s+/).slice(1).map(Number)
    const idle = cpu[3]! + (cpu[4] ?? 0)
    const total = cpu.reduce((a, b) => a + b, 0)
    const cores = lines.filter((l) => /^cpu\d+ /.test(l)).length
    return { busy: total - idle, total, cores }
  } catch {
    return { busy: 0, total: 0, cores: 0 }
  }
}

export type CpuUse = {
  /** Cores used (1.0 = one core busy all the time) per named group, over the phase. */
  groups: Record<string, number>
  /** Cores busy on the whole machine, and how many it has; the difference to `groups` is other load. */
  machineBusy: number
  cores: number
}

/** Starts counting; `stop()` returns the cores each group of processes used since. `self` is this process. */
export function cpuMeter(groups: Record<string, number[] | 'self'>) {
  const read = () => {
    const out: Record<string, number> = {}
    for (const [name, pids] of Object.entries(groups)) {
      if (pids === 'self') {
        const u = process.cpuUsage()
        out[name] = ((u.user + u.system) / 1e6) * CLOCK_TICKS
      } else out[name] = pids.reduce((sum, pid) => sum + processTicks(pid), 0)
    }
    return out
  }
  const before = read()
  const machineBefore = machineTicks()
  const t0 = performance.now()
  return {
    stop(): CpuUse {
      const after = read()
      const machineAfter = machineTicks()
      const seconds = (performance.now() - t0) / 1000
      const groupsUsed: Record<string, number> = {}
      for (const name of Object.keys(groups)) groupsUsed[name] = (after[name]! - before[name]!) / CLOCK_TICKS / seconds
      const totalDelta = machineAfter.total - machineBefore.total
      const cores = machineAfter.cores
      return {
        groups: groupsUsed,
        machineBusy: totalDelta > 0 ? ((machineAfter.busy - machineBefore.busy) / totalDelta) * cores : NaN,
        cores,
      }
    },
  }
}

// ---------------------------------------------------------------------------------------------
// Printing

export const fmtRate = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-')
export const fmtMs = (n: number) => (Number.isFinite(n) ? (n < 10 ? n.toFixed(2) : n.toFixed(1)) : '-')

export function fmtCpu(cpu: CpuUse): string {
  const parts = Object.entries(cpu.groups).map(([name, cores]) => `${name} ${cores.toFixed(2)}`)
  const ours = Object.values(cpu.groups).reduce((a, b) => a + b, 0)
  const other = cpu.machineBusy - ours
  return `cores used: ${parts.join(', ')}; machine ${cpu.machineBusy.toFixed(2)}/${cpu.cores}${other > 0.15 ? ` (other load ${other.toFixed(2)})` : ''}`
}

/** Left-aligned text columns. */
export function table(rows: string[][]): string {
  const widths: number[] = []
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)))
  return rows.map((row) => '  ' + row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n')
}

// ---------------------------------------------------------------------------------------------
// Helpers for the request-count benchmarks (bulk, list, contacts, webhooks, campaign).

export type Latencies = { n: number; p50: number; p90: number; p99: number; max: number; mean: number }

/** Nearest-rank percentiles of latencies in ms. */
export function latencySummary(values: number[]): Latencies {
  const sorted = Float64Array.from(values).sort()
  const n = sorted.length
  return {
    n,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: n ? sorted[n - 1]! : NaN,
    mean: n ? sorted.reduce((a, b) => a + b, 0) / n : NaN,
  }
}

/**
 * One JSON request to the service; throws unless the status is `expect` (200 by default).
 * Answers the envelope's `data`.
 */
export async function apiJson(url: string, init: { method?: string; token: string; body?: unknown; expect?: number }): Promise<any> {
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { authorization: `Bearer ${init.token}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  })
  const text = await res.text()
  if (res.status !== (init.expect ?? 200))
    throw new Error(`${init.method ?? 'GET'} ${new URL(url).pathname}: HTTP ${res.status} ${text.slice(0, 300)}`)
  return JSON.parse(text).data
}

/** A postgres.js client on a bench database, with the service's bigint-as-number parsing. */
export function benchClient(databaseUrl: string, max = 1, application = 'bench') {
  return postgres(databaseUrl, {
    max,
    onnotice: () => {},
    connection: { application_name: application },
    types: { bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } },
  })
}

const sqlLiteral = (v: unknown): string =>
  typeof v === 'number' ? String(v) : v instanceof Date ? `'${v.toISOString()}'` : `'${String(v).replace(/'/g, "''")}'`

/** How the service sends a statement: named prepared (`prepare: true`) or unnamed (see ListStatements in src/db/client.ts). */
export type SendAs = { prepare: boolean }

/**
 * EXPLAIN (ANALYZE, BUFFERS) of a statement as the service runs it. A named prepared statement may,
 * after five runs, switch to its generic plan, which can differ from the plan for the same text with
 * literal values. So: PREPARE, EXECUTE six times, then EXPLAIN the next EXECUTE. An unnamed one is
 * explained with its parameters bound (a custom plan, as the service gets).
 * `sql` must be a single-connection client. Indented for the report.
 */
export async function explainAnalyze(sql: postgres.Sql<any>, st: Statement, { prepare }: SendAs): Promise<string> {
  const indent = (rows: Record<string, string>[]) => rows.map((r) => `      ${r['QUERY PLAN']}`).join('\n')
  if (!prepare) return indent(await sql.unsafe(`explain (analyze, buffers) ${st.text}`, st.params))
  const args = st.params.length ? `(${st.params.map(sqlLiteral).join(', ')})` : ''
  await sql.unsafe(`prepare bench_explain as ${st.text}`)
  try {
    for (let i = 0; i < 6; i++) await sql.unsafe(`execute bench_explain${args}`)
    return indent(await sql.unsafe(`explain (analyze, buffers) execute bench_explain${args}`))
  } finally {
    await sql.unsafe('deallocate bench_explain')
  }
}

/**
 * Median ms of `runs` executions of one statement, sent as the service sends it (see SendAs and
 * explainAnalyze: a named one may run its generic plan from the sixth run on). Six unmeasured runs first.
 */
export async function timeStatement(sql: postgres.Sql<any>, st: Statement, runs: number, { prepare }: SendAs): Promise<number> {
  const ms: number[] = []
  for (let i = 0; i < runs + 6; i++) {
    const t0 = performance.now()
    await sql.unsafe(st.text, st.params, { prepare })
    if (i >= 6) ms.push(performance.now() - t0)
  }
  return latencySummary(ms).p50
}
