// GET /api/v1/messages (first page, limit 50) over a realistic table: 1,000,000 messages over 100
// accounts, seeded straight in SQL (set-based, generate_series) in created_at order as a live table
// fills, then VACUUM ANALYZE. Account sizes are skewed like real customers (the largest has ~10% of
// all messages, the smallest ~0.5%); statuses are mostly read/delivered with some sent and failed
// (refused ones without SID or sent_at); created_at spread over 90 days. Three filter shapes
// (status + 7-day sent_at window, status only, no filter), each against every account in turn and
// against the largest one, at fixed concurrency. Target: p99 < 30 ms.
// The endpoint runs two statements per request (the page and count(*) for `total`); the same two
// statements (built by the service's listStatements) are also timed on their own, straight through
// SQL, so the cost of `total` is visible.

import { type DateRange } from '../src/lib/validate'
import { listStatements } from '../src/modules/messages/queries'
import {
  backendPids,
  benchClient,
  cpuMeter,
  envNumber,
  explainAnalyze,
  fmtCpu,
  fmtMs,
  fmtRate,
  timeStatement,
  runLoad,
  seedAccounts,
  serverClient,
  startServiceChild,
  table,
  vacuumAnalyze,
  type Benchmark,
  type Check,
  type CpuUse,
  type LoadResult,
  type SeededAccount,
} from './lib'
import { dateRange } from '../src/http/values'

const TARGET_P99_MS = 30
const DAY_MS = 86_400_000

type Shape = { key: string; label: string; status?: string; window?: boolean }
const SHAPES: Shape[] = [
  { key: 'status_date', label: 'status=delivered + 7-day date window', status: 'delivered', window: true },
  { key: 'status', label: 'status=delivered', status: 'delivered' },
  { key: 'none', label: 'no filter' },
]
type Group = 'all' | 'largest'

type Phase = { shape: Shape; group: Group; load: LoadResult; cpu: CpuUse }

const utc = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ')

/** 1,000,000 messages (BENCH_LIST_MESSAGES) over the accounts: index i (1-based) gets ~ sqrt(i/n) - sqrt((i-1)/n). */
async function seedMessages(databaseUrl: string, accounts: SeededAccount[], total: number): Promise<void> {
  const sql = benchClient(databaseUrl, 1, 'bench-seed')
  try {
    await sql`
      insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, error_code, error_message,
                            refunded_at, created_at, sent_at, delivered_at, read_at, failed_at)
      select k.account_id, k.key_id,
             case when s.outcome = 'refused' then null else 'SM' || md5('list:' || s.g) end,
             '+628' || lpad(((s.g::bigint * 7919) % 10000000000)::text, 10, '0'),
             'Halo! Pesanan #' || s.g || ' sudah dikirim. Lacak di https://example.com/t/' || s.g,
             case when s.outcome = 'refused' then 'failed' else s.outcome end,
             350,
             case s.outcome when 'failed' then 63016 when 'refused' then 21610 end,
             case s.outcome when 'failed' then 'simulated delivery failure' when 'refused' then 'simulator refused the message' end,
             case when s.outcome = 'refused' then s.created_at + interval '300 milliseconds' end,
             s.created_at,
             case when s.outcome <> 'refused' then s.created_at + interval '300 milliseconds' end,
             case when s.outcome in ('delivered', 'read') then s.created_at + interval '2 seconds' end,
             case when s.outcome = 'read' then s.created_at + interval '2 seconds' + (30 + s.g % 3600) * interval '1 second' end,
             case when s.outcome = 'failed' then s.created_at + interval '2 seconds'
                  when s.outcome = 'refused' then s.created_at + interval '300 milliseconds' end
      from (
        select g,
               1 + least(${accounts.length} - 1, floor(${accounts.length} * power(random(), 2)))::int as account_ord,
               now() - random() * interval '90 days' as created_at,
               (array['read', 'delivered', 'sent', 'failed', 'refused'])[
                 width_bucket(random(), array[0, 0.60, 0.90, 0.94, 0.97]::float8[])] as outcome
        from generate_series(1, ${total}) as g
      ) s
      join unnest(${accounts.map((a) => a.accountId)}::bigint[], ${accounts.map((a) => a.keyId)}::bigint[])
           with ordinality as k(account_id, key_id, ord) on k.ord = s.account_ord
      order by s.created_at`
  } finally {
    await sql.end()
  }
}

/** The two statements of GET /messages for this shape, first page of 50: the service's own (listStatements). */
const statements = (accountId: number, shape: Shape, range: DateRange) =>
  listStatements(accountId, { status: shape.status, ...range }, { limit: 50, offset: 0 })

export const list: Benchmark = {
  name: 'list',
  summary: 'GET /api/v1/messages first page over 1,000,000 messages / 100 accounts: status+date, status, no filter',
  async run(ctx) {
    const total = Math.floor(envNumber('BENCH_LIST_MESSAGES', 1_000_000, 1000))
    const accountCount = Math.floor(envNumber('BENCH_LIST_ACCOUNTS', 100, 1))
    const seconds = envNumber('BENCH_LIST_SECONDS', Math.min(ctx.seconds, 5), 0.1)
    const warmup = envNumber('BENCH_LIST_WARMUP_SECONDS', Math.min(ctx.warmupSeconds, 1), 0)
    const concurrency = Math.floor(envNumber('BENCH_LIST_CONCURRENCY', 8, 1))
    const poolMax = envNumber('BENCH_DB_POOL_MAX', 32, 1)
    const explainAlways = process.env.BENCH_EXPLAIN === '1'
    const db = await ctx.freshDatabase('list')
    const monitor = serverClient(ctx.serverUrl)
    ctx.onCleanup(() => monitor.end())

    const t0 = performance.now()
    const service = await startServiceChild({
      databaseUrl: db.url,
      // No status reports are due in this database; the simulator worker only polls.
      env: { DB_POOL_MAX: String(poolMax), LOG_LEVEL: 'warn' },
      onCleanup: ctx.onCleanup,
    })
    const accounts = await seedAccounts(service, accountCount, { balance: 1_000_000 })
    await seedMessages(db.url, accounts, total)
    const seeded = performance.now()
    await vacuumAnalyze(db.url)
    const sql = benchClient(db.url, 1, 'bench-list')
    ctx.onCleanup(() => sql.end())
    const sizes = await sql<{ account_id: number; n: number }[]>`
      select account_id, count(*)::int as n from messages group by account_id order by n desc`
    const largest = accounts.find((a) => a.accountId === sizes[0]!.account_id)!
    const median = sizes[Math.floor(sizes.length / 2)]!
    console.log(
      `  database ${db.name}: ${total.toLocaleString('en-US')} messages over ${accountCount} accounts seeded in ` +
        `${((seeded - t0) / 1000).toFixed(1)} s, VACUUM ANALYZE ${((performance.now() - seeded) / 1000).toFixed(1)} s; ` +
        `largest account ${sizes[0]!.n.toLocaleString('en-US')}, median ${median.n.toLocaleString('en-US')}, smallest ${sizes[sizes.length - 1]!.n.toLocaleString('en-US')}`,
    )
    console.log(`  ${seconds} s per phase after ${warmup} s warm-up, concurrency ${concurrency}, DB_POOL_MAX=${poolMax}, limit=50`)

    // 7-day sent_at windows spread over the 90 days, the same list for every phase.
    const now = Date.now()
    const windows = Array.from({ length: 16 }, (_, i) => {
      const end = now - Math.floor(((i * 37) % 84) * DAY_MS)
      return { from: utc(end - 7 * DAY_MS), to: utc(end) }
    })
    const query = (shape: Shape, seq: number) => {
      const p = new URLSearchParams()
      if (shape.status) p.set('status', shape.status)
      if (shape.window) {
        const w = windows[seq % windows.length]!
        p.set('date_from', w.from)
        p.set('date_to', w.to)
      }
      p.set('limit', '50')
      return `${service.url}/api/v1/messages?${p}`
    }
    const keyFor = (group: Group, seq: number) => (group === 'largest' ? largest : accounts[seq % accounts.length]!).key

    const measure = async (shape: Shape, group: Group): Promise<Phase> => {
      const task = async (_w: number, seq: number) => {
        const r = await fetch(query(shape, seq), { headers: { authorization: `Bearer ${keyFor(group, seq)}` } })
        if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${(await r.text()).slice(0, 200)}`)
        await r.arrayBuffer()
      }
      if (warmup > 0) await runLoad({ seconds: warmup, concurrency, task })
      const meter = cpuMeter({ loadgen: 'self', service: [service.pid], postgres: await backendPids(monitor, db.name) })
      const load = await runLoad({ seconds, concurrency, task })
      return { shape, group, load, cpu: meter.stop() }
    }
    const groupLabel = (g: Group) =>
      g === 'all' ? `all ${accountCount} accounts` : `largest (${sizes[0]!.n.toLocaleString('en-US')} msgs)`
    const printPhases = (phases: Phase[]) => {
      console.log(
        table([
          ['filter', 'accounts', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'errors'],
          ...phases.map((p) => [
            p.shape.label,
            groupLabel(p.group),
            fmtRate(p.load.perSecond),
            fmtMs(p.load.p50),
            fmtMs(p.load.p90),
            fmtMs(p.load.p99),
            fmtMs(p.load.max),
            String(p.load.errors),
          ]),
        ]),
      )
      for (const p of phases) {
        console.log(`  ${p.shape.key}/${p.group}: ${fmtCpu(p.cpu)}`)
        for (const e of p.load.errorSamples) console.log(`    error: ${e}`)
      }
    }

    const phases: Phase[] = []
    for (const shape of SHAPES) {
      // One answer first: the shape must work before it is measured.
      const res = await fetch(query(shape, 0), { headers: { authorization: `Bearer ${largest.key}` } })
      if (res.status !== 200) throw new Error(`list ${shape.key}: HTTP ${res.status} ${(await res.text()).slice(0, 200)}`)
      await res.arrayBuffer()
      for (const group of ['all', 'largest'] as const) phases.push(await measure(shape, group))
    }
    printPhases(phases)

    // The page and the count on their own (one connection, no concurrency, median of 20 runs), on the
    // largest account and on the median one; the date filter with a recent window (the page is found
    // at the newest end of the index) and one 40 to 47 days back (the page scan first skips every
    // newer row of that status). Whole seconds, turned into bounds as the service does (TIMEZONE UTC).
    const bounds = (fromDays: number, toDays: number) =>
      dateRange({ date_from: utc(now - fromDays * DAY_MS), date_to: utc(now - toDays * DAY_MS) }, 'UTC')
    type Case = { shape: Shape; window: string; range: DateRange }
    const cases = SHAPES.flatMap((shape): Case[] =>
      shape.window
        ? [
            { shape, window: 'last 7 days', range: bounds(7, 0) },
            { shape, window: '40-47 days ago', range: bounds(47, 40) },
          ]
        : [{ shape, window: '', range: { from: null, before: null } }],
    )
    const split: string[][] = [['filter', 'account', 'total', 'page ms', 'count(*) ms', 'count share']]
    const explains: string[] = []
    const checks: Check[] = []
    const metrics: Record<string, number> = { messages: total, largest_account_messages: sizes[0]!.n }
    for (const c of cases) {
      const missed = phases.some((p) => p.shape === c.shape && !(p.load.p99 < TARGET_P99_MS))
      const label = c.shape.label + (c.window ? ` (${c.window})` : '')
      const key = c.shape.key + (c.window === '40-47 days ago' ? '_old' : '')
      for (const [who, accountId] of [
        ['largest', largest.accountId],
        ['median', median.account_id],
      ] as const) {
        const st = statements(accountId, c.shape, c.range)
        const [counted] = await sql.unsafe(st.count.text, st.count.params)
        const pageMs = await timeStatement(sql, st.rows, 20, st)
        const countMs = await timeStatement(sql, st.count, 20, st)
        split.push([label, who, String(counted!.n), fmtMs(pageMs), fmtMs(countMs), `${Math.round((countMs / (pageMs + countMs)) * 100)}%`])
        metrics[`sql_${key}_${who}_page_ms`] = pageMs
        metrics[`sql_${key}_${who}_count_ms`] = countMs
        if ((missed || explainAlways) && who === 'largest') {
          explains.push(`    ${label}, largest account, page:\n${await explainAnalyze(sql, st.rows, st)}`)
          explains.push(`    ${label}, largest account, count(*):\n${await explainAnalyze(sql, st.count, st)}`)
        }
      }
    }
    console.log('  the two statements of one request on their own (SQL, one connection, median of 20):')
    console.log(table(split).replace(/^/gm, '  '))
    if (explains.length > 0) console.log(`  EXPLAIN (ANALYZE, BUFFERS):\n${explains.join('\n')}`)

    if (process.env.BENCH_LIST_WHATIF === '1') {
      // The sent_at index and the id-first page were proposed here and are now the service's
      // (sql/0006_list_search_indexes.sql, listStatements). What is left to try: `total` capped, as a
      // variation of the service's count (the service is unchanged).
      const whatIf: string[][] = [['filter', 'account', 'count(*) ms', 'count capped at 10,001 ms']]
      for (const c of cases) {
        const st = statements(largest.accountId, c.shape, c.range)
        const capped = {
          text: `select count(*)::int as n from (${st.count.text.replace('select count(*)::int as n from', 'select 1 from')} limit 10001) s`,
          params: st.count.params,
        }
        whatIf.push([
          c.shape.label + (c.window ? ` (${c.window})` : ''),
          'largest',
          fmtMs(await timeStatement(sql, st.count, 20, st)),
          fmtMs(await timeStatement(sql, capped, 20, st)),
        ])
      }
      console.log('  what-if: `total` capped (SQL only, one connection, median of 20):')
      console.log(table(whatIf).replace(/^/gm, '  '))
    }

    for (const p of phases) {
      const name = `${p.shape.key}_${p.group}`
      Object.assign(metrics, { [`${name}_per_second`]: p.load.perSecond, [`${name}_p50_ms`]: p.load.p50, [`${name}_p99_ms`]: p.load.p99 })
      checks.push({
        name: `list ${p.shape.key} (${p.group}): p99`,
        pass: p.load.p99 < TARGET_P99_MS && p.load.errors === 0,
        detail: `${fmtMs(p.load.p99)} ms (p50 ${fmtMs(p.load.p50)}), target < ${TARGET_P99_MS} ms at concurrency ${concurrency}${p.load.errors ? `; ${p.load.errors} errors` : ''}`,
      })
    }
    await service.stop()
    return { metrics, checks }
  },
}

export default list
