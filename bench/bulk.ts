// POST /api/v1/messages/bulk with 1000 entries through the real service (a child process) and the
// simulator: end-to-end milliseconds per request, requests one after another (never overlapping),
// after a few unmeasured ones. Two service settings: the simulator's default status reports
// (delivered after 1 s, read after 3 s: 2000 status changes per request applied in the background,
// competing with the next requests, as in production), and reports deferred by an hour, which
// shows the request's own cost. Target: p50 and p99 under 300 ms with the default reports.

import {
  apiJson,
  backendPids,
  cpuMeter,
  envNumber,
  fmtCpu,
  fmtMs,
  latencySummary,
  seedAccounts,
  seedMessageHistory,
  serverClient,
  sleep,
  startServiceChild,
  table,
  vacuumAnalyze,
  type Benchmark,
  type Check,
  type CpuUse,
  type Latencies,
} from './lib'

const TARGET_MS = 300
const DEFERRED_MS = '3600000'

type Phase = { label: string; key: string; latencies: Latencies; cpu: CpuUse; sent: number; failed: number }

/** `size` distinct valid numbers (none ending in 9999, 8888, 7777 or 6666, which the simulator refuses, fails or reports late). */
function bulkBody(size: number, request: number) {
  const messages = Array.from({ length: size }, (_, i) => ({
    to: `0812${String(request * 10_000 + i).padStart(7, '0')}`.replace(/(9999|8888|7777|6666)$/, '1234'),
    body: `bench bulk ${request}/${i}: your invoice #${100_000 + i} is due on Friday`,
  }))
  return { messages }
}

export const bulk: Benchmark = {
  name: 'bulk',
  summary: 'POST /api/v1/messages/bulk of 1000 entries, sequential requests, simulator, p50/p99 end to end',
  async run(ctx) {
    const size = Math.floor(envNumber('BENCH_BULK_SIZE', 1000, 1))
    const requests = Math.floor(envNumber('BENCH_BULK_REQUESTS', 20, 1))
    const warmup = Math.floor(envNumber('BENCH_BULK_WARMUP', 3, 0))
    const poolMax = envNumber('BENCH_DB_POOL_MAX', 32, 1)
    const history = Math.floor(envNumber('BENCH_HISTORY', 1000, 0))
    const db = await ctx.freshDatabase('bulk')
    const monitor = serverClient(ctx.serverUrl)
    ctx.onCleanup(() => monitor.end())
    const serviceEnv = { DB_POOL_MAX: String(poolMax), LOG_LEVEL: 'warn' }

    const seeder = await startServiceChild({ databaseUrl: db.url, env: serviceEnv, onCleanup: ctx.onCleanup })
    const accounts = await seedAccounts(seeder, 10, { balance: 1_000_000_000_000 })
    await seeder.stop()
    await seedMessageHistory(
      db.url,
      accounts.map((a) => a.accountId),
      history,
    )
    console.log(
      `  database ${db.name}; ${size} entries per request, ${warmup} warm-up + ${requests} measured requests, sequential; ` +
        `DB_POOL_MAX=${poolMax}; ${accounts.length} accounts with ${history} old messages each`,
    )

    let requestNo = 0
    const phase = async (label: string, key: string, env: Record<string, string>): Promise<Phase> => {
      await vacuumAnalyze(db.url)
      const service = await startServiceChild({ databaseUrl: db.url, env: { ...serviceEnv, ...env }, onCleanup: ctx.onCleanup })
      try {
        const account = accounts[requestNo % accounts.length]!
        const url = `${service.url}/api/v1/messages/bulk`
        const once = async () => {
          const body = bulkBody(size, requestNo++)
          const t0 = performance.now()
          const data = await apiJson(url, { token: account.key, body })
          const ms = performance.now() - t0
          return { ms, sent: data.sent as number, failed: data.failed as number }
        }
        for (let i = 0; i < warmup; i++) await once()
        // Let the warm-up's status reports (due after 1 s and 3 s) land before measuring, so the
        // measured requests compete only with their own predecessors' reports.
        if (warmup > 0) await sleep(1000)
        const meter = cpuMeter({ loadgen: 'self', service: [service.pid], postgres: await backendPids(monitor, db.name) })
        const latencies: number[] = []
        let sent = 0
        let failed = 0
        for (let i = 0; i < requests; i++) {
          const r = await once()
          latencies.push(r.ms)
          sent += r.sent
          failed += r.failed
        }
        return { label, key, latencies: latencySummary(latencies), cpu: meter.stop(), sent, failed }
      } finally {
        await service.stop()
      }
    }

    const phases = [
      await phase('simulator reports at 1 s / 3 s (default)', 'default', {}),
      await phase('simulator reports deferred 1 h', 'deferred', { SIM_DELIVERED_MS: DEFERRED_MS, SIM_READ_MS: DEFERRED_MS }),
    ]

    console.log(
      table([
        ['service', 'requests', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'mean ms', 'msgs/s in a request', 'sent', 'failed'],
        ...phases.map((p) => [
          p.label,
          String(p.latencies.n),
          fmtMs(p.latencies.p50),
          fmtMs(p.latencies.p90),
          fmtMs(p.latencies.p99),
          fmtMs(p.latencies.max),
          fmtMs(p.latencies.mean),
          Math.round((size / p.latencies.p50) * 1000).toLocaleString('en-US'),
          String(p.sent),
          String(p.failed),
        ]),
      ]),
    )
    for (const p of phases) console.log(`  ${p.key}: ${fmtCpu(p.cpu)} (time between requests included)`)
    console.log(`  with ${requests} requests p99 is their maximum (nearest rank); raise BENCH_BULK_REQUESTS for a steadier tail`)

    const metrics: Record<string, number> = { entries: size }
    const checks: Check[] = []
    for (const p of phases) {
      Object.assign(metrics, {
        [`${p.key}_p50_ms`]: p.latencies.p50,
        [`${p.key}_p99_ms`]: p.latencies.p99,
        [`${p.key}_max_ms`]: p.latencies.max,
      })
    }
    const d = phases[0]!
    checks.push({
      name: `bulk ${size}: p50`,
      pass: d.latencies.p50 < TARGET_MS,
      detail: `${fmtMs(d.latencies.p50)} ms, target < ${TARGET_MS} ms (default simulator)`,
    })
    checks.push({
      name: `bulk ${size}: p99`,
      pass: d.latencies.p99 < TARGET_MS,
      detail: `${fmtMs(d.latencies.p99)} ms, target < ${TARGET_MS} ms (default simulator)`,
    })
    const bad = phases.reduce((n, p) => n + p.failed, 0)
    checks.push({ name: 'bulk: every entry sent', pass: bad === 0, detail: `${bad} failed entries` })
    return { metrics, checks }
  },
}

export default bulk
