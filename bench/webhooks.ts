// Webhook delivery through the outbox: 10,000 status changes of messages whose API key has a webhook
// registered, delivered by the service (a child process, its delivery worker woken by LISTEN on
// webhook_events) to an HTTPS receiver in a process of its own (bench/webhook-receiver.ts, a
// certificate from a throwaway CA made by openssl, given to the service as WEBHOOK_CA_FILE, with
// WEBHOOK_ALLOW_PRIVATE=true). The webhook URL names `localhost`, so every attempt resolves it as a
// customer's host name would be.
// The status changes are made here, in the bench process, with the service's own state machine
// (applyStatuses from src/modules/status/machine.ts, the statement the simulator-report worker runs:
// a batch of changes and their events in one statement, hence one transaction), each commit followed
// by NOTIFY webhook_events as the service's eventsCommitted does.
// Two phases over the same messages:
//   throughput: sent → delivered for all, committed as fast as the producer can; deliveries/s from
//               the first change to the last receipt. Target >= 1,500/s.
//   steady:     delivered → read for all at a fixed rate (BENCH_WEBHOOK_RATE, default 1,000/s, below
//               the target throughput so no backlog builds); lag from the change (the event's
//               created_at) to its receipt. Target p50 < 100 ms.
// Lags are reported in both phases, also from the commit (when the event became visible).

import { makeTestTls } from '../tests/helpers/receiver'
import { applyStatuses } from '../src/modules/status/machine'
import { EVENTS_CHANNEL } from '../src/modules/webhooks/notify'
import type { Sql } from '../src/db/client'
import {
  apiJson,
  backendPids,
  benchClient,
  cpuMeter,
  envNumber,
  fmtCpu,
  fmtMs,
  fmtRate,
  latencySummary,
  seedAccounts,
  serverClient,
  sleep,
  startServiceChild,
  startWebhookReceiver,
  table,
  vacuumAnalyze,
  type Benchmark,
  type Check,
  type CpuUse,
  type Latencies,
} from './lib'

const TARGET_PER_SECOND = 1500
const TARGET_P50_LAG_MS = 100
const DEFERRED_MS = '3600000'

/** The first arrival of each webhook-id (a retry arrives again under the same id). */
function firstArrivals(dump: { ids: string[]; at: number[] }): Map<string, number> {
  const first = new Map<string, number>()
  dump.ids.forEach((id, i) => {
    if (!first.has(id)) first.set(id, dump.at[i]!)
  })
  return first
}

type PhaseResult = {
  label: string
  key: string
  changes: number
  producerSeconds: number
  deliverySeconds: number
  deliveriesPerSecond: number
  lagFromChange: Latencies
  lagFromCommit: Latencies
  duplicates: number
  missing: number
  connections: number
  cpu: CpuUse
}

export const webhooks: Benchmark = {
  name: 'webhooks',
  summary: '10,000 status changes through the outbox to a local HTTPS receiver: deliveries/s and change-to-receipt lag',
  async run(ctx) {
    const count = Math.floor(envNumber('BENCH_WEBHOOK_MESSAGES', 10_000, 10))
    const batch = Math.floor(envNumber('BENCH_WEBHOOK_BATCH', 200, 1))
    const producers = Math.floor(envNumber('BENCH_WEBHOOK_PRODUCERS', 2, 1))
    const steadyBatch = Math.floor(envNumber('BENCH_WEBHOOK_STEADY_BATCH', 20, 1))
    const rate = envNumber('BENCH_WEBHOOK_RATE', 1000, 1)
    const poolMax = envNumber('BENCH_DB_POOL_MAX', 32, 1)
    const db = await ctx.freshDatabase('webhooks')
    const monitor = serverClient(ctx.serverUrl)
    ctx.onCleanup(() => monitor.end())

    const tls = makeTestTls()
    ctx.onCleanup(() => tls.remove())
    const receiver = await startWebhookReceiver(tls.certFile, tls.keyFile, tls.caFile)
    ctx.onCleanup(() => receiver.stop())

    const service = await startServiceChild({
      databaseUrl: db.url,
      env: {
        DB_POOL_MAX: String(poolMax),
        LOG_LEVEL: 'warn',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_CA_FILE: tls.caFile,
        // No simulator reports are due here; a long delay keeps it that way for anything sent.
        SIM_DELIVERED_MS: DEFERRED_MS,
        SIM_READ_MS: DEFERRED_MS,
      },
      onCleanup: ctx.onCleanup,
    })
    const [account] = await seedAccounts(service, 1, { balance: 1_000_000_000 })
    const hook = await apiJson(`${service.url}/api/v1/webhook`, {
      token: account!.key,
      body: { url: `https://localhost:${receiver.port}/hook` },
    })

    const sql = benchClient(db.url, producers + 1, 'bench-webhooks')
    ctx.onCleanup(() => sql.end())
    const messages = await sql<{ id: number; message_sid: string }[]>`
      insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at)
      select ${account!.accountId}, ${account!.keyId}, 'SM' || md5('webhooks:' || g), '+62812' || lpad(g::text, 8, '0'),
             'bench webhook ' || g, 'sent', 1, now()
      from generate_series(1, ${count}) as g
      returning id, message_sid`
    await vacuumAnalyze(db.url)
    console.log(
      `  database ${db.name}; ${count.toLocaleString('en-US')} sent messages of a key with a webhook at ${hook.url}; ` +
        `receiver pid ${receiver.pid}; service DB_POOL_MAX=${poolMax}; every commit of changes is followed by NOTIFY ${EVENTS_CHANNEL}`,
    )

    const service_sql = sql as unknown as Sql
    /**
     * Applies `status` to every message, `size` per transaction. Paced (`perSecond` > 0): one producer
     * committing on schedule. Unpaced: `producers` concurrent producers, as fast as they can.
     * Returns each message's commit time.
     */
    const produce = async (status: 'delivered' | 'read', perSecond: number, size: number, producers: number) => {
      const committedAt = new Map<number, number>()
      const started = Date.now()
      let events = 0
      let next = 0
      const producer = async () => {
        for (let i = (next += size) - size; i < messages.length; i = (next += size) - size) {
          const slice = messages.slice(i, i + size)
          if (perSecond > 0) {
            const due = started + (i / perSecond) * 1000
            if (due > Date.now()) await sleep(due - Date.now())
          }
          // One statement per batch (its own transaction), as the simulator-report worker commits them.
          const outcome = await applyStatuses(
            service_sql,
            'UTC',
            slice.map((m) => ({ sid: m.message_sid, status })),
          )
          const now = Date.now()
          for (const m of slice) committedAt.set(m.id, now)
          events += outcome.events
          await service_sql.notify(EVENTS_CHANNEL, '')
        }
      }
      await Promise.all(Array.from({ length: perSecond > 0 ? 1 : producers }, producer))
      if (events !== messages.length) throw new Error(`${status}: ${events} events written for ${messages.length} changes`)
      return { started, finished: Date.now(), committedAt }
    }

    const phase = async (
      label: string,
      key: string,
      status: 'delivered' | 'read',
      perSecond: number,
      size: number,
    ): Promise<PhaseResult> => {
      const s0 = await receiver.stats()
      const meter = cpuMeter({
        'bench (producer)': 'self',
        service: [service.pid],
        receiver: [receiver.pid],
        postgres: await backendPids(monitor, db.name),
      })
      const produced = await produce(status, perSecond, size, producers)
      const deadline = Date.now() + 120_000 + (messages.length / TARGET_PER_SECOND) * 1000
      let stats = await receiver.stats()
      while (stats.unique - s0.unique < messages.length && Date.now() < deadline) {
        await sleep(50)
        stats = await receiver.stats()
      }
      const cpu = meter.stop()
      const arrivals = firstArrivals(await receiver.dump())
      const events = await sql<{ webhook_id: string; message_id: number; created_ms: number }[]>`
        select e.webhook_id, e.message_id, (extract(epoch from e.created_at) * 1000)::float8 as created_ms
        from webhook_events e
        where e.payload::json -> 'data' ->> 'status' = ${status}`
      const fromChange: number[] = []
      const fromCommit: number[] = []
      let last = 0
      for (const e of events) {
        const at = arrivals.get(e.webhook_id)
        if (at === undefined) continue
        last = Math.max(last, at)
        fromChange.push(at - e.created_ms)
        fromCommit.push(at - produced.committedAt.get(e.message_id)!)
      }
      const delivered = fromChange.length
      const deliverySeconds = (last - produced.started) / 1000
      return {
        label,
        key,
        changes: messages.length,
        producerSeconds: (produced.finished - produced.started) / 1000,
        deliverySeconds,
        deliveriesPerSecond: delivered / deliverySeconds,
        lagFromChange: latencySummary(fromChange),
        lagFromCommit: latencySummary(fromCommit),
        duplicates: stats.received - stats.unique - (s0.received - s0.unique),
        missing: messages.length - delivered,
        connections: stats.connections - s0.connections,
        cpu,
      }
    }

    const phases = [
      await phase(`throughput: sent → delivered, ${producers} unpaced producers x ${batch}/tx`, 'throughput', 'delivered', 0, batch),
      await phase(`steady: delivered → read at ${fmtRate(rate)}/s, ${steadyBatch}/tx`, 'steady', 'read', rate, steadyBatch),
    ]
    const [pending] = await sql<{ n: number; attempts: number }[]>`
      select (count(*) filter (where status <> 'delivered'))::int as n,
             coalesce(sum(attempts) - count(*), 0)::int as attempts
      from webhook_events`

    console.log(
      table([
        [
          'phase',
          'changes',
          'changes/s',
          'deliveries/s',
          'lag p50 ms',
          'p90',
          'p99',
          'max',
          'from commit p50',
          'p99',
          'missing',
          'dupes',
          'new TLS conns',
        ],
        ...phases.map((p) => [
          p.label,
          String(p.changes),
          fmtRate(p.changes / p.producerSeconds),
          fmtRate(p.deliveriesPerSecond),
          fmtMs(p.lagFromChange.p50),
          fmtMs(p.lagFromChange.p90),
          fmtMs(p.lagFromChange.p99),
          fmtMs(p.lagFromChange.max),
          fmtMs(p.lagFromCommit.p50),
          fmtMs(p.lagFromCommit.p99),
          String(p.missing),
          String(p.duplicates),
          String(p.connections),
        ]),
      ]),
    )
    for (const p of phases) console.log(`  ${p.key}: ${fmtCpu(p.cpu)}`)
    console.log(
      `  events not delivered at the end: ${pending!.n}; extra attempts (retries): ${pending!.attempts}. Lag "from change" starts at the ` +
        `event's created_at (its transaction's start); "from commit" at the producer's commit of its batch.`,
    )

    const metrics: Record<string, number> = { messages: count }
    for (const p of phases) {
      Object.assign(metrics, {
        [`${p.key}_changes_per_second`]: p.changes / p.producerSeconds,
        [`${p.key}_deliveries_per_second`]: p.deliveriesPerSecond,
        [`${p.key}_lag_p50_ms`]: p.lagFromChange.p50,
        [`${p.key}_lag_p99_ms`]: p.lagFromChange.p99,
        [`${p.key}_commit_lag_p50_ms`]: p.lagFromCommit.p50,
        [`${p.key}_connections`]: p.connections,
      })
    }
    const t = phases[0]!
    const s = phases[1]!
    const checks: Check[] = [
      {
        name: 'webhooks: deliveries/s',
        pass: t.deliveriesPerSecond >= TARGET_PER_SECOND && t.missing === 0,
        detail:
          `${fmtRate(t.deliveriesPerSecond)}/s (${t.changes} in ${t.deliverySeconds.toFixed(2)} s from the first change; ` +
          `producer ${fmtRate(t.changes / t.producerSeconds)} changes/s), target >= ${fmtRate(TARGET_PER_SECOND)}/s`,
      },
      {
        name: 'webhooks: p50 lag change → receipt',
        pass: s.lagFromChange.p50 < TARGET_P50_LAG_MS && s.missing === 0,
        detail: `${fmtMs(s.lagFromChange.p50)} ms (p99 ${fmtMs(s.lagFromChange.p99)}) at ${fmtRate(rate)} changes/s, target < ${TARGET_P50_LAG_MS} ms`,
      },
      {
        name: 'webhooks: every event delivered once',
        pass: pending!.n === 0 && phases.every((p) => p.missing === 0),
        detail: `${pending!.n} undelivered, ${phases.reduce((n, p) => n + p.duplicates, 0)} duplicates`,
      },
    ]
    await service.stop()
    await receiver.stop()
    return { metrics, checks }
  },
}

export default webhooks
