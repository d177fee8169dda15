// POST /api/v1/messages/send through the real service (a child process) against the ceiling: the
// cheapest correct SQL for one send, run straight through postgres.js at the same concurrency.
// Two shapes of load: spread over 100 accounts, and every request on one account (one hot row).
// Targets: the HTTP path reaches >= 60% of the ceiling's messages/s with a p99 <= 2x the ceiling's.

import postgres from 'postgres'
import { startCountProxy } from './count-proxy'
import { normalizePhone } from '../src/lib/phone'
import { randomHex, sha256Hex } from '../src/lib/keys'
import {
  backendPids,
  clientsGone,
  cpuMeter,
  databaseCounters,
  envNumber,
  fmtCpu,
  fmtMs,
  fmtRate,
  kernelThreadPids,
  ROOT,
  runLoad,
  seedAccounts,
  seedMessageHistory,
  serverClient,
  serverProcessPids,
  serviceEnvOverrides,
  serviceRoot,
  sleep,
  startServiceChild,
  table,
  vacuumAnalyze,
  type BenchContext,
  type Benchmark,
  type Check,
  type CpuUse,
  type FreshDatabase,
  type LoadResult,
} from './lib'

const ACCOUNTS = 100
const OPENING_BALANCE = 1_000_000_000_000
const TO = '081234567890'
const BODY = 'bench: your order #1001 has shipped'
const TARGET_RATE = 0.6
const TARGET_P99 = 2

type Shape = 'spread' | 'single'
type Phase = {
  path: 'http' | 'ceiling'
  shape: Shape
  load: LoadResult
  cpu: CpuUse
  xactsPerSend: number
  rowsPerSend: number
  /** Statements and round trips the service sends to the database per send (the counting phase; the ceiling: 1). */
  statementsPerSend: number
  roundTripsPerSend: number
}

/**
 * The ceiling: one send as ONE statement. It finds the key by its hash (a send must authenticate),
 * reads the price (account_price(), the service's one price lookup), charges the account with a conditional update (which row-locks it), inserts the
 * message already `sent` with its SID (the simulator answers in memory, so no second write is
 * needed) and writes the ledger row, all in one implicit transaction. It schedules no status
 * reports: what the service writes beyond these 3 rows is part of what the comparison shows.
 * account_price() is not inlined (its body has sub-selects): PostgreSQL plans it at every call site
 * of every execution, so `price` is materialized to call it once, not once per use of price.cost.
 */
export function ceilingSend(sql: postgres.Sql, keyHash: string, phone: string, body = BODY, sid = `SM${randomHex(16)}`) {
  return sql`
    with key as (
      select id, account_id from api_keys where key_hash = ${keyHash} and active
    ), price as materialized (
      select account_price(key.account_id) as cost from key
    ), debit as (
      update accounts set balance = accounts.balance - price.cost
      from key, price
      where accounts.id = key.account_id and accounts.balance >= price.cost
      returning accounts.id, accounts.balance, price.cost
    ), message as (
      insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at)
      select debit.id, key.id, ${sid}, ${phone}, ${body}, 'sent', debit.cost, now()
      from debit, key
      returning id
    ), ledger_row as (
      insert into ledger (account_id, kind, amount, balance_after, message_id)
      select debit.id, 'charge', -debit.cost, debit.balance, message.id from debit, message
    )
    select message.id, debit.balance from message, debit`
}

/**
 * Waits until the service has applied every simulator status report it scheduled (delivered after
 * SIM_DELIVERED_MS, read after SIM_READ_MS), so a phase's late work is counted in its own rows/send
 * and does not spill into the next phase. Reports due more than 10 s ahead (a profiling run with a
 * long SIM_READ_MS) are not waited for. Up to 60 s; a schema without the table has nothing to wait for.
 */
async function drainStatusReports(databaseUrl: string): Promise<void> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const [found] = await sql<{ exists: boolean }[]>`select to_regclass('simulator_reports') is not null as exists`
    if (!found!.exists) return
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      const [row] = await sql<
        { n: number }[]
      >`select count(*)::int as n from simulator_reports where due_at <= now() + interval '10 seconds'`
      if (row!.n === 0) return
      await sleep(200)
    }
    console.log('  (status reports still pending after 60 s)')
  } finally {
    await sql.end()
  }
}

/**
 * The ceiling needs account_price() (sql/0007_money_owner.sql). A service from an older checkout
 * (BENCH_SERVICE_ROOT) migrates a schema without it: then it is added to this bench database from
 * this checkout's migration, so the ceiling runs the same SQL on either side. The older service does
 * not call it. Returns whether it had to be added.
 */
async function ensureAccountPrice(databaseUrl: string): Promise<boolean> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const [found] = await sql<{ ok: boolean }[]>`select to_regprocedure('account_price(bigint)') is not null as ok`
    if (found!.ok) return false
    const migration = await Bun.file(`${ROOT}/sql/0007_money_owner.sql`).text()
    const create = /create function account_price\([\s\S]*?\$\$[\s\S]*?\$\$;/.exec(migration)
    if (!create) throw new Error('send: no `create function account_price` in sql/0007_money_owner.sql')
    await sql.unsafe(create[0])
    return true
  } finally {
    await sql.end()
  }
}

async function measure(
  ctx: BenchContext,
  monitor: postgres.Sql,
  db: FreshDatabase,
  start: () => Promise<{ pids: number[]; send: (seq: number) => Promise<unknown>; drain: () => Promise<void>; stop: () => Promise<void> }>,
): Promise<Omit<Phase, 'path' | 'shape' | 'statementsPerSend' | 'roundTripsPerSend'>> {
  const database = db.name
  await vacuumAnalyze(db.url)
  const before = await databaseCounters(monitor, database)
  const target = await start()
  let attempts = 0
  try {
    const task = (_w: number, seq: number) => {
      attempts++
      return target.send(seq)
    }
    if (ctx.warmupSeconds > 0) await runLoad({ seconds: ctx.warmupSeconds, concurrency: ctx.concurrency, task })
    const meter = cpuMeter({
      loadgen: 'self',
      ...(target.pids.length ? { service: target.pids } : {}),
      postgres: await backendPids(monitor, database),
      'pg aux': await serverProcessPids(monitor),
      kernel: kernelThreadPids(),
    })
    const load = await runLoad({ seconds: ctx.seconds, concurrency: ctx.concurrency, task })
    const cpu = meter.stop()
    await target.drain()
    await target.stop()
    await clientsGone(monitor, database)
    const after = await databaseCounters(monitor, database)
    // Warm-up sends count too: their statements are in the same counters, and so is the work of
    // the status reports drained after the measured time.
    return {
      load,
      cpu,
      xactsPerSend: (after.transactions - before.transactions) / Math.max(1, attempts),
      rowsPerSend: (after.rowsWritten - before.rowsWritten) / Math.max(1, attempts),
    }
  } finally {
    await target.stop()
  }
}

/**
 * The statements and round trips of one send, as the service sends them: a service of its own behind a
 * counting proxy (count-proxy.ts), `n` sends one after another after a warm-up, less what the service
 * sends by itself (its workers' polls) over as long again with no send.
 */
async function countStatements(
  ctx: BenchContext,
  db: FreshDatabase,
  env: Record<string, string>,
  send: (url: string, seq: number) => Promise<void>,
  n: number,
): Promise<{ statements: number; roundTrips: number; top: [string, number][] }> {
  const proxy = await startCountProxy(db.url)
  const service = await startServiceChild({ databaseUrl: proxy.url, env, onCleanup: ctx.onCleanup })
  try {
    for (let seq = 0; seq < 20; seq++) await send(service.url, seq)
    const c0 = proxy.counts()
    const t0 = performance.now()
    for (let seq = 0; seq < n; seq++) await send(service.url, seq)
    const c1 = proxy.counts()
    await sleep(performance.now() - t0)
    const c2 = proxy.counts()
    const per = (k: 'statements' | 'roundTrips') => (c1[k] - c0[k] - (c2[k] - c1[k])) / n
    const of = (c: typeof c0, text: string) => c.byText.get(text) ?? 0
    const top = [...c1.byText.keys()]
      .map((text): [string, number] => [text, (of(c1, text) - of(c0, text) - (of(c2, text) - of(c1, text))) / n])
      .filter(([, k]) => k >= 0.05)
      .sort((a, b) => b[1] - a[1])
    return { statements: per('statements'), roundTrips: per('roundTrips'), top }
  } finally {
    await service.stop()
    proxy.close()
  }
}

export const send: Benchmark = {
  name: 'send',
  summary: 'POST /api/v1/messages/send vs the one-statement SQL ceiling, spread over 100 accounts and on one account',
  async run(ctx) {
    const poolMax = envNumber('BENCH_DB_POOL_MAX', 32, 1)
    const history = Math.floor(envNumber('BENCH_HISTORY', 1000, 0))
    const db = await ctx.freshDatabase('send')
    const monitor = serverClient(ctx.serverUrl)
    ctx.onCleanup(() => monitor.end())
    // The ceiling is the send alone. The simulator's later delivered/read reports are the provider's
    // events, not part of the send (the webhooks benchmark measures that pipeline), so by default they
    // fall due after the run; BENCH_LIVE_STATUS=1 applies them during it.
    const liveStatus = process.env.BENCH_LIVE_STATUS === '1'
    const serviceEnv: Record<string, string> = { DB_POOL_MAX: String(poolMax), LOG_LEVEL: 'warn' }
    if (!liveStatus) Object.assign(serviceEnv, { SIM_DELIVERED_MS: '3600000', SIM_READ_MS: '3600000' })
    console.log(
      `  simulator status reports ${liveStatus ? 'applied during the run (BENCH_LIVE_STATUS=1)' : 'due after the run (BENCH_LIVE_STATUS=1 to apply them during it)'}`,
    )
    const overrides = Object.entries(serviceEnvOverrides())
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')
    const root = serviceRoot() === ROOT ? '' : ` from ${serviceRoot()}`
    console.log(
      `  database ${db.name}; service${root} DB_POOL_MAX=${poolMax}${overrides ? ` ${overrides}` : ''}; ceiling pool max ${ctx.concurrency}`,
    )

    // Seed through the admin API of a service of its own, so its statements are not counted below.
    const t0 = performance.now()
    const seeder = await startServiceChild({ databaseUrl: db.url, env: serviceEnv, onCleanup: ctx.onCleanup })
    const accounts = await seedAccounts(seeder, ACCOUNTS, { balance: OPENING_BALANCE })
    await seeder.stop()
    if (await ensureAccountPrice(db.url)) {
      console.log("  the service's schema has no account_price() (older checkout): added from sql/0007 for the ceiling")
    }
    await seedMessageHistory(
      db.url,
      accounts.map((a) => a.accountId),
      history,
    )
    console.log(
      `  seeded ${ACCOUNTS} accounts with one key and ${history} old messages each in ${((performance.now() - t0) / 1000).toFixed(1)} s; ` +
        'every phase starts after VACUUM ANALYZE',
    )

    const phone = normalizePhone(TO)!
    const body = JSON.stringify({ to: TO, body: BODY })
    // Spread: round robin over every account; single: all on the first one.
    const pick = (shape: Shape, seq: number) => (shape === 'spread' ? seq % accounts.length : 0)

    const http = (shape: Shape) =>
      measure(ctx, monitor, db, async () => {
        const service = await startServiceChild({ databaseUrl: db.url, env: serviceEnv, onCleanup: ctx.onCleanup })
        const url = `${service.url}/api/v1/messages/send`
        const headers = accounts.map((a) => ({ authorization: `Bearer ${a.key}`, 'content-type': 'application/json' }))
        return {
          pids: [service.pid],
          stop: service.stop,
          drain: () => drainStatusReports(db.url),
          async send(seq) {
            const res = await fetch(url, { method: 'POST', headers: headers[pick(shape, seq)]!, body })
            if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`)
            await res.arrayBuffer()
          },
        }
      })

    const ceiling = (shape: Shape) =>
      measure(ctx, monitor, db, async () => {
        const sql = postgres(db.url, { max: ctx.concurrency, onnotice: () => {}, connection: { application_name: 'bench-ceiling' } })
        const hashes = accounts.map((a) => sha256Hex(a.key))
        let ended: Promise<void> | undefined
        return {
          pids: [],
          drain: async () => {},
          stop: () => (ended ??= sql.end({ timeout: 5 })),
          async send(seq) {
            const rows = await ceilingSend(sql, hashes[pick(shape, seq)]!, phone)
            if (rows.length !== 1) throw new Error('ceiling: no row charged')
          },
        }
      })

    // Each HTTP phase right next to its ceiling, so a burst of other load on the machine hits both.
    // Statements per send: counted apart, through a proxy, so the measured phases run as they always did.
    const counted = Math.floor(envNumber('BENCH_SEND_COUNTED', 200, 1))
    const postSend = async (base: string, key: string, payload: string) => {
      const res = await fetch(`${base}/api/v1/messages/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: payload,
      })
      if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`)
      await res.arrayBuffer()
    }
    const phases: Phase[] = []
    for (const shape of ['spread', 'single'] as const) {
      const count = await countStatements(
        ctx,
        db,
        serviceEnv,
        (base, seq) => postSend(base, accounts[pick(shape, seq)]!.key, body),
        counted,
      )
      console.log(
        `  statements per send, ${shape === 'spread' ? `spread over ${ACCOUNTS} accounts` : 'one account'} (${counted} sends one after another):`,
      )
      for (const [text, k] of count.top) console.log(`    ${k.toFixed(2).padStart(5)}  ${text}`)
      phases.push({ path: 'http', shape, ...(await http(shape)), statementsPerSend: count.statements, roundTripsPerSend: count.roundTrips })
      phases.push({ path: 'ceiling', shape, ...(await ceiling(shape)), statementsPerSend: 1, roundTripsPerSend: 1 })
    }
    // A sender with a messaging limit (counted only, not timed): every send to a new recipient whose
    // window is closed, so each takes room in the budget (its hold, modules/budgets/guard.ts).
    let recipient = 0
    const tiered = await countStatements(
      ctx,
      db,
      { ...serviceEnv, MESSAGING_LIMIT: '100000' },
      (base, seq) =>
        postSend(
          base,
          accounts[seq % accounts.length]!.key,
          JSON.stringify({ to: `+62813${String(recipient++).padStart(8, '0')}`, body: BODY }),
        ),
      counted,
    )
    console.log(
      `  statements per send, a sender with a messaging limit (MESSAGING_LIMIT=100000), each to a new recipient, spread ` +
        `(${counted} sends one after another): ${tiered.statements.toFixed(2)} (round trips ${tiered.roundTrips.toFixed(2)})`,
    )
    for (const [text, k] of tiered.top) console.log(`    ${k.toFixed(2).padStart(5)}  ${text}`)

    // Every charge is in the ledger and every message was handed over (sent, or later delivered/read).
    const dbSql = postgres(db.url, { max: 1, onnotice: () => {} })
    const [consistency] = await dbSql<{ drift: number; queued: number; messages: number }[]>`
      select
        (select count(*)::int from accounts a
         where a.balance <> (select coalesce(sum(amount), 0) from ledger l where l.account_id = a.id)) as drift,
        (select count(*)::int from messages where status not in ('sent', 'delivered', 'read')) as queued,
        (select count(*)::int from messages) as messages`
    await dbSql.end()

    const label = (p: Phase) => `${p.path.padEnd(7)} ${p.shape === 'spread' ? `spread (${ACCOUNTS} accounts)` : 'one account'}`
    console.log(
      table([
        [
          'phase',
          'msg/s',
          'p50 ms',
          'p90 ms',
          'p99 ms',
          'max ms',
          'errors',
          'stmts/send',
          'round trips/send',
          'xacts/send',
          'rows written/send',
        ],
        ...phases.map((p) => [
          label(p),
          fmtRate(p.load.perSecond),
          fmtMs(p.load.p50),
          fmtMs(p.load.p90),
          fmtMs(p.load.p99),
          fmtMs(p.load.max),
          String(p.load.errors),
          p.statementsPerSend.toFixed(2),
          p.roundTripsPerSend.toFixed(2),
          p.xactsPerSend.toFixed(2),
          p.rowsPerSend.toFixed(2),
        ]),
      ]),
    )
    for (const p of phases) {
      console.log(`  ${label(p)}: ${fmtCpu(p.cpu)}`)
      for (const sample of p.load.errorSamples) console.log(`    error: ${sample}`)
    }
    console.log(
      `  consistency: ${consistency!.drift === 0 && consistency!.queued === 0 ? 'ok' : 'BROKEN'} ` +
        `(${consistency!.messages} messages, ${consistency!.drift} accounts with balance != sum(ledger), ${consistency!.queued} queued or failed)`,
    )

    const checks: Check[] = []
    const metrics: Record<string, number> = {
      db_pool_max: poolMax,
      http_tiered_statements_per_send: tiered.statements,
      http_tiered_round_trips_per_send: tiered.roundTrips,
    }
    for (const shape of ['spread', 'single'] as const) {
      const h = phases.find((p) => p.path === 'http' && p.shape === shape)!
      const c = phases.find((p) => p.path === 'ceiling' && p.shape === shape)!
      const rate = h.load.perSecond / c.load.perSecond
      const p99 = h.load.p99 / c.load.p99
      for (const p of [h, c]) {
        const prefix = `${p.path}_${shape}`
        Object.assign(metrics, {
          [`${prefix}_per_second`]: p.load.perSecond,
          [`${prefix}_p50_ms`]: p.load.p50,
          [`${prefix}_p99_ms`]: p.load.p99,
          [`${prefix}_errors`]: p.load.errors,
          [`${prefix}_xacts_per_send`]: p.xactsPerSend,
          [`${prefix}_statements_per_send`]: p.statementsPerSend,
          [`${prefix}_round_trips_per_send`]: p.roundTripsPerSend,
          [`${prefix}_rows_per_send`]: p.rowsPerSend,
        })
      }
      metrics[`ratio_${shape}_per_second`] = rate
      metrics[`ratio_${shape}_p99`] = p99
      checks.push({
        name: `send ${shape}: msg/s http/ceiling`,
        pass: rate >= TARGET_RATE,
        detail: `${(rate * 100).toFixed(0)}% (${fmtRate(h.load.perSecond)} / ${fmtRate(c.load.perSecond)}), target >= ${TARGET_RATE * 100}%`,
      })
      checks.push({
        name: `send ${shape}: p99 http/ceiling`,
        pass: p99 <= TARGET_P99,
        detail: `${p99.toFixed(2)}x (${fmtMs(h.load.p99)} / ${fmtMs(c.load.p99)} ms), target <= ${TARGET_P99}x`,
      })
    }
    const errors = phases.reduce((n, p) => n + p.load.errors, 0)
    checks.push({ name: 'send: no failed requests', pass: errors === 0, detail: `${errors} errors` })
    checks.push({
      name: 'send: balance = sum(ledger), all handed over',
      pass: consistency!.drift === 0 && consistency!.queued === 0,
      detail: `${consistency!.drift} drifting accounts, ${consistency!.queued} queued or failed`,
    })
    return { metrics, checks }
  },
}

export default send
