// `bun run bench [name...]`: runs the benchmarks in BENCHMARKS order (or only the named ones), each
// against a fresh database on the DATABASE_URL server that is dropped at the end. Prints PASS/MISS
// per target; a MISS does not fail the process (exit 1 only when a benchmark could not run).
//
//   DATABASE_URL          the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/postgres)
//   BENCH_DB              postgres (default) or embedded: the service runs on PGlite in a temporary
//                         DATA_DIR, without DATABASE_URL; only the benchmarks that support it run (lifecycle, paced)
//   BENCH_SECONDS         measured seconds per phase (default 10)
//   BENCH_WARMUP_SECONDS  unmeasured seconds before each phase (default 3: the simulator's last status
//                         report is due SIM_READ_MS = 3 s after a send, so the measured part is steady state)
//   BENCH_CONCURRENCY     concurrent workers (default 32)
//   BENCH_DB_POOL_MAX     DB_POOL_MAX of the service under test (default 32)
//   BENCH_HISTORY         old messages per account seeded before measuring (default 1000)
//   BENCH_SERVICE_ROOT    run the service from another checkout (compare a change without touching this one)
//   BENCH_SERVICE_ENV     extra service variables, "NAME=value NAME=value" (profiling, e.g. SIM_READ_MS=...)
//   BENCH_SERVICE_BUN_FLAGS flags for the service's bun, e.g. "--cpu-prof-md --cpu-prof-dir=/tmp/prof"
//   BENCH_JSON            write every metric and check to this file
//   BENCH_KEEP_DB=1       keep the databases for a look afterwards
//   BENCH_<NAME>_...      sizes and knobs of single benchmarks (bulk, list, contacts, webhooks,
//                         campaign, paced): see the table in bench/README.md

import { createFreshDatabase, DEFAULT_SERVER_URL, describeUrl, envNumber, type BenchContext, type Benchmark, type BenchResult } from './lib'
import send from './send'
import bulk from './bulk'
import list from './list'
import contacts from './contacts'
import webhooks from './webhooks'
import campaign from './campaign'
import lifecycle from './lifecycle'
import paced from './paced'

/** Add new benchmarks here (bench/<name>.ts exporting a Benchmark). */
const BENCHMARKS: Benchmark[] = [send, bulk, list, contacts, webhooks, campaign, lifecycle, paced]

const cleanups: (() => Promise<void> | void)[] = []
let cleaning: Promise<void> | undefined
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length > 0) {
      try {
        await cleanups.pop()!()
      } catch (error) {
        console.error(`cleanup: ${error instanceof Error ? error.message : String(error)}`)
      }
    }
  })()
  return cleaning
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    console.error(`\n${signal}: stopping services and dropping bench databases`)
    void cleanup().then(() => process.exit(130))
  })
}

const wanted = process.argv.slice(2)
const unknown = wanted.filter((name) => !BENCHMARKS.some((b) => b.name === name))
if (unknown.length > 0) {
  console.error(`unknown benchmark: ${unknown.join(', ')}; available: ${BENCHMARKS.map((b) => b.name).join(', ')}`)
  process.exit(2)
}
const database = process.env.BENCH_DB || 'postgres'
if (database !== 'postgres' && database !== 'embedded') {
  console.error(`BENCH_DB: expected postgres or embedded, got "${database}"`)
  process.exit(2)
}
const embedded = database === 'embedded'
const named = wanted.length > 0 ? BENCHMARKS.filter((b) => wanted.includes(b.name)) : BENCHMARKS
const selected = embedded ? named.filter((b) => b.embedded) : named
const skipped = named.filter((b) => !selected.includes(b))
if (selected.length === 0) {
  console.error(`BENCH_DB=embedded: none of ${named.map((b) => b.name).join(', ')} runs on the embedded database`)
  process.exit(2)
}

const serverUrl = process.env.DATABASE_URL || DEFAULT_SERVER_URL
const keepDb = process.env.BENCH_KEEP_DB === '1'
const ctx: BenchContext = {
  serverUrl,
  embedded,
  seconds: envNumber('BENCH_SECONDS', 10, 0.1),
  warmupSeconds: envNumber('BENCH_WARMUP_SECONDS', 3, 0),
  concurrency: Math.floor(envNumber('BENCH_CONCURRENCY', 32, 1)),
  async freshDatabase(label) {
    const db = await createFreshDatabase(serverUrl, label)
    cleanups.push(() => (keepDb ? console.log(`kept database ${db.name}`) : db.drop()))
    return db
  },
  onCleanup(fn) {
    cleanups.push(fn)
  },
}

console.log(
  (embedded
    ? `Embedded database (BENCH_DB=embedded): the service on PGlite in a temporary DATA_DIR` +
      (skipped.length ? `; skipped (PostgreSQL only): ${skipped.map((b) => b.name).join(', ')}` : '') +
      '\n'
    : `PostgreSQL server: ${describeUrl(serverUrl)} (${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'default; set DATABASE_URL to change'})\n`) +
    `${ctx.seconds} s per phase after ${ctx.warmupSeconds} s warm-up, ${ctx.concurrency} concurrent workers, ` +
    `Bun ${Bun.version}, ${navigator.hardwareConcurrency} cores`,
)

const results: Record<string, BenchResult> = {}
let failed = false
for (const bench of selected) {
  console.log(`\n== ${bench.name}: ${bench.summary}`)
  const started = cleanups.length
  try {
    results[bench.name] = await bench.run(ctx)
  } catch (error) {
    failed = true
    console.error(`  ${bench.name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
  }
  // This benchmark's services, clients and database go before the next one starts.
  while (cleanups.length > started) {
    try {
      await cleanups.pop()!()
    } catch (error) {
      console.error(`cleanup: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
}
await cleanup()

const checks = Object.values(results).flatMap((r) => r.checks)
if (checks.length > 0) {
  console.log('\n== targets')
  const width = Math.max(...checks.map((c) => c.name.length))
  for (const c of checks) console.log(`  ${c.pass ? 'PASS' : 'MISS'}  ${c.name.padEnd(width)}  ${c.detail}`)
}
if (process.env.BENCH_JSON) {
  await Bun.write(
    process.env.BENCH_JSON,
    JSON.stringify({ at: new Date().toISOString(), seconds: ctx.seconds, concurrency: ctx.concurrency, results }, null, 2),
  )
  console.log(`\nwrote ${process.env.BENCH_JSON}`)
}
process.exit(failed ? 1 : 0)
