// GET /api/v1/contacts?search=... over 100,000 contacts of one account (seeded set-based in SQL, in
// created_at order over a year; Indonesian-style names, +62 numbers, e-mail on 70%, a city, tags),
// then VACUUM ANALYZE. Several search terms: a common first-name fragment, a surname fragment, a
// phone fragment, a number in the 08xx form, an e-mail fragment and a term that matches nothing
// (the worst case: every row is read). Fixed concurrency; target p99 < 30 ms.
// The endpoint runs the page and count(*) for `total`; both (built by the service's
// contactListStatements) are also timed alone through SQL, sent as the service sends them.

import { contactListStatements } from '../src/modules/contacts/service'
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
} from './lib'

const TARGET_P99_MS = 30

const FIRST = [
  'Budi',
  'Siti',
  'Agus',
  'Dewi',
  'Andi',
  'Rina',
  'Joko',
  'Sri',
  'Hendra',
  'Putri',
  'Rudi',
  'Ayu',
  'Eko',
  'Fitri',
  'Bambang',
  'Lestari',
  'Yusuf',
  'Indah',
  'Wahyu',
  'Nur',
  'Agung',
  'Ratna',
  'Dian',
  'Maya',
  'Arif',
  'Wulan',
  'Teguh',
  'Mega',
  'Fajar',
  'Intan',
  'Hadi',
  'Yuni',
  'Rizki',
  'Novi',
  'Dedi',
  'Sari',
  'Irfan',
  'Lina',
  'Bayu',
  'Tuti',
]
const LAST = [
  'Santoso',
  'Wijaya',
  'Saputra',
  'Pratama',
  'Hidayat',
  'Kurniawan',
  'Setiawan',
  'Nugroho',
  'Susanto',
  'Gunawan',
  'Halim',
  'Siregar',
  'Nasution',
  'Lubis',
  'Harahap',
  'Simanjuntak',
  'Sitompul',
  'Wibowo',
  'Purnomo',
  'Rahman',
  'Hakim',
  'Syahputra',
  'Utomo',
  'Suryadi',
  'Permana',
  'Firmansyah',
  'Ramadhan',
  'Hutapea',
  'Tanjung',
  'Salim',
]
const DOMAINS = ['gmail.com', 'yahoo.co.id', 'outlook.com', 'hotmail.com', 'ymail.com', 'mail.co.id', 'tokobaju.id', 'ptmaju.co.id']
const CITIES = ['Jakarta', 'Surabaya', 'Bandung', 'Medan', 'Semarang', 'Makassar', 'Palembang', 'Denpasar', 'Yogyakarta', 'Malang']

type Term = { key: string; label: string; search: string }
const TERMS: Term[] = [
  { key: 'first_name', label: 'first-name fragment "budi"', search: 'budi' },
  { key: 'surname', label: 'surname fragment "nugro"', search: 'nugro' },
  { key: 'phone', label: 'phone fragment "4567"', search: '4567' },
  { key: 'phone_08', label: 'number in 08 form "0812-345"', search: '0812-345' },
  { key: 'email', label: 'e-mail fragment "yahoo.co"', search: 'yahoo.co' },
  { key: 'no_match', label: 'no match "zqxj"', search: 'zqxj' },
]

type Phase = { term: Term; load: LoadResult; cpu: CpuUse; total: number }

async function seedContacts(databaseUrl: string, accountId: number, count: number): Promise<void> {
  const sql = benchClient(databaseUrl, 1, 'bench-seed')
  try {
    await sql`
      insert into contacts (account_id, name, phone, email, city, tags, created_at)
      select ${accountId}, s.first || ' ' || s.last,
             '+628' || lpad(((s.g::bigint * 104729) % 10000000000)::text, 10, '0'),
             case when s.g % 10 < 7 then lower(s.first) || '.' || lower(s.last) || (s.g % 1000) || '@' || s.domain end,
             s.city,
             case when s.g % 5 = 0 then array['vip'] when s.g % 7 = 0 then array['reseller', 'jakarta'] else '{}' end,
             s.created_at
      from (
        select g,
               (${FIRST}::text[])[1 + floor(random() * ${FIRST.length})::int] as first,
               (${LAST}::text[])[1 + floor(random() * ${LAST.length})::int] as last,
               (${DOMAINS}::text[])[1 + floor(power(random(), 2) * ${DOMAINS.length})::int] as domain,
               (${CITIES}::text[])[1 + floor(random() * ${CITIES.length})::int] as city,
               now() - random() * interval '365 days' as created_at
        from generate_series(1, ${count}) as g
      ) s
      order by s.created_at`
  } finally {
    await sql.end()
  }
}

/** The two statements of GET /contacts?search= (first page of 50): the service's own (contactListStatements). */
const statements = (accountId: number, search: string) => contactListStatements(accountId, search, { limit: 50, offset: 0 })

export const contacts: Benchmark = {
  name: 'contacts',
  summary: 'GET /api/v1/contacts?search= over 100,000 contacts of one account: name, phone, e-mail fragments, no match',
  async run(ctx) {
    const count = Math.floor(envNumber('BENCH_CONTACTS', 100_000, 100))
    const seconds = envNumber('BENCH_CONTACTS_SECONDS', Math.min(ctx.seconds, 5), 0.1)
    const warmup = envNumber('BENCH_CONTACTS_WARMUP_SECONDS', Math.min(ctx.warmupSeconds, 1), 0)
    const concurrency = Math.floor(envNumber('BENCH_CONTACTS_CONCURRENCY', 8, 1))
    const poolMax = envNumber('BENCH_DB_POOL_MAX', 32, 1)
    const explainAlways = process.env.BENCH_EXPLAIN === '1'
    const db = await ctx.freshDatabase('contacts')
    const monitor = serverClient(ctx.serverUrl)
    ctx.onCleanup(() => monitor.end())

    const t0 = performance.now()
    const service = await startServiceChild({
      databaseUrl: db.url,
      env: { DB_POOL_MAX: String(poolMax), LOG_LEVEL: 'warn' },
      onCleanup: ctx.onCleanup,
    })
    // A few other accounts with contacts of their own, so the table is not one account's alone.
    const accounts = await seedAccounts(service, 5, { balance: 1_000_000 })
    const account = accounts[0]!
    await seedContacts(db.url, account.accountId, count)
    for (const other of accounts.slice(1)) await seedContacts(db.url, other.accountId, Math.ceil(count / 10))
    const seeded = performance.now()
    await vacuumAnalyze(db.url)
    console.log(
      `  database ${db.name}: ${count.toLocaleString('en-US')} contacts in the measured account (+${Math.ceil(count / 10).toLocaleString('en-US')} ` +
        `in each of ${accounts.length - 1} others) seeded in ${((seeded - t0) / 1000).toFixed(1)} s, VACUUM ANALYZE ${((performance.now() - seeded) / 1000).toFixed(1)} s`,
    )
    console.log(`  ${seconds} s per term after ${warmup} s warm-up, concurrency ${concurrency}, DB_POOL_MAX=${poolMax}, limit=50`)

    const sql = benchClient(db.url, 1, 'bench-contacts')
    ctx.onCleanup(() => sql.end())
    const headers = { authorization: `Bearer ${account.key}` }
    const url = (term: Term) => `${service.url}/api/v1/contacts?${new URLSearchParams({ search: term.search, limit: '50' })}`

    const measure = async (term: Term): Promise<Phase> => {
      const res = await fetch(url(term), { headers })
      const body = (await res.json()) as { data?: { total: number } }
      if (res.status !== 200 || !body.data)
        throw new Error(`contacts ${term.key}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 200)}`)
      const task = async () => {
        const r = await fetch(url(term), { headers })
        if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${(await r.text()).slice(0, 200)}`)
        await r.arrayBuffer()
      }
      if (warmup > 0) await runLoad({ seconds: warmup, concurrency, task })
      const meter = cpuMeter({ loadgen: 'self', service: [service.pid], postgres: await backendPids(monitor, db.name) })
      const load = await runLoad({ seconds, concurrency, task })
      return { term, load, cpu: meter.stop(), total: body.data.total }
    }
    const printPhases = (phases: Phase[]) => {
      console.log(
        table([
          ['search', 'total', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'errors'],
          ...phases.map((p) => [
            p.term.label,
            p.total.toLocaleString('en-US'),
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
        console.log(`  ${p.term.key}: ${fmtCpu(p.cpu)}`)
        for (const e of p.load.errorSamples) console.log(`    error: ${e}`)
      }
    }

    const phases: Phase[] = []
    for (const term of TERMS) phases.push(await measure(term))
    printPhases(phases)

    const metrics: Record<string, number> = { contacts: count }
    const split: string[][] = [['search', 'page ms', 'count(*) ms', 'count share']]
    const explains: string[] = []
    for (const p of phases) {
      const st = statements(account.accountId, p.term.search)
      const pageMs = await timeStatement(sql, st.rows, 10, st)
      const countMs = await timeStatement(sql, st.count, 10, st)
      split.push([p.term.label, fmtMs(pageMs), fmtMs(countMs), `${Math.round((countMs / (pageMs + countMs)) * 100)}%`])
      metrics[`sql_${p.term.key}_page_ms`] = pageMs
      metrics[`sql_${p.term.key}_count_ms`] = countMs
      if (explainAlways || (!(p.load.p99 < TARGET_P99_MS) && ['first_name', 'phone_08', 'no_match'].includes(p.term.key))) {
        explains.push(`    ${p.term.label}, page:\n${await explainAnalyze(sql, st.rows, st)}`)
        explains.push(`    ${p.term.label}, count(*):\n${await explainAnalyze(sql, st.count, st)}`)
      }
    }
    console.log('  the two statements of one request on their own (SQL, one connection, median of 10):')
    console.log(table(split).replace(/^/gm, '  '))
    if (explains.length > 0) console.log(`  EXPLAIN (ANALYZE, BUFFERS):\n${explains.join('\n')}`)

    const checks: Check[] = []
    for (const p of phases) {
      Object.assign(metrics, {
        [`${p.term.key}_per_second`]: p.load.perSecond,
        [`${p.term.key}_p50_ms`]: p.load.p50,
        [`${p.term.key}_p99_ms`]: p.load.p99,
        [`${p.term.key}_total`]: p.total,
      })
      checks.push({
        name: `contacts search ${p.term.key}: p99`,
        pass: p.load.p99 < TARGET_P99_MS && p.load.errors === 0,
        detail: `${fmtMs(p.load.p99)} ms (p50 ${fmtMs(p.load.p50)}, ${p.total} matches), target < ${TARGET_P99_MS} ms at concurrency ${concurrency}${p.load.errors ? `; ${p.load.errors} errors` : ''}`,
      })
    }
    await service.stop()
    return { metrics, checks }
  },
}

export default contacts
