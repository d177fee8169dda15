// A campaign of 50,000 contacts with the simulator, end to end through the service (a child process):
// contacts seeded in SQL (50,000 with the segment's tag among 10,000 without, interleaved), template
// and segment through the admin API, the draft through POST /api/v1/campaigns, run through
// POST /admin/v1/campaigns/{id}/run, then GET /admin/v1/campaigns/{id} polled until the campaign is
// `sent` and stats.sent = 50,000. Reports messages/s from the run request to that moment.
// Two service settings, each on a fresh database: simulator status reports deferred by an hour (the
// campaign alone), and the default reports (delivered after 1 s, read after 3 s: 100,000 status
// changes applied by the simulator worker while the campaign runs). Target >= 1,000 messages/s in both.

import {
  apiJson,
  backendPids,
  benchClient,
  cpuMeter,
  envNumber,
  fmtCpu,
  fmtRate,
  seedAccounts,
  serverClient,
  sleep,
  startServiceChild,
  table,
  vacuumAnalyze,
  type BenchContext,
  type Benchmark,
  type Check,
  type CpuUse,
} from './lib'

const TARGET_PER_SECOND = 1000
const DEFERRED_MS = '3600000'
const POLL_MS = 250

type Mode = { key: 'deferred' | 'default'; label: string; env: Record<string, string> }
const MODES: Mode[] = [
  { key: 'deferred', label: 'status reports deferred 1 h', env: { SIM_DELIVERED_MS: DEFERRED_MS, SIM_READ_MS: DEFERRED_MS } },
  { key: 'default', label: 'status reports at 1 s / 3 s (default)', env: {} },
]

type Result = {
  mode: Mode
  recipients: number
  seconds: number
  perSecond: number
  /** Seconds from the run request until the campaign's status read `sent` (every batch charged and handed over). */
  sentStatusSeconds: number
  /** Messages/s between 10% and 90% of the recipients counted as sent. */
  steadyPerSecond: number
  cpu: CpuUse
  drift: number
  notSent: number
  pollMs: number
  /** Default reports only: seconds from the run request until stats.read = recipients. */
  allReadSeconds: number
}

async function runMode(ctx: BenchContext, mode: Mode, recipients: number, others: number, poolMax: number): Promise<Result> {
  const db = await ctx.freshDatabase(`campaign_${mode.key}`)
  const monitor = serverClient(ctx.serverUrl)
  ctx.onCleanup(() => monitor.end())
  const service = await startServiceChild({
    databaseUrl: db.url,
    env: { DB_POOL_MAX: String(poolMax), LOG_LEVEL: 'warn', ...mode.env },
    onCleanup: ctx.onCleanup,
  })
  try {
    const [account] = await seedAccounts(service, 1, { balance: 1_000_000_000 })
    const sql = benchClient(db.url, 1, 'bench-campaign')
    try {
      // Every (others + recipients) / others-th contact lacks the tag, so the segment walk skips some.
      // Numbers end in 1: the simulator refuses those ending in 9999 and fails those ending in 8888.
      const total = recipients + others
      const every = others > 0 ? Math.max(2, Math.floor(total / others)) : total + 1
      await sql`
        insert into contacts (account_id, name, phone, email, city, tags, created_at)
        select ${account!.accountId}, 'Pelanggan ' || g, '+62813' || lpad(g::text, 7, '0') || '1',
               case when g % 3 = 0 then 'pelanggan' || g || '@example.com' end, 'Jakarta',
               case when g % ${every} = 0 and g / ${every} <= ${others} then array['lapsed']
                    when g % 4 = 0 then array['promo', 'vip'] else array['promo'] end,
               now() - (${total} - g) * interval '1 minute'
        from generate_series(1, ${total}) as g`
      const [{ tagged }] = (await sql`select count(*)::int as tagged from contacts where 'promo' = any(tags)`) as unknown as [
        { tagged: number },
      ]
      if (tagged !== recipients) throw new Error(`seeded ${tagged} tagged contacts, expected ${recipients}`)
    } finally {
      await sql.end()
    }
    await vacuumAnalyze(db.url)

    const admin = (path: string, body?: unknown, expect?: number) =>
      apiJson(`${service.url}/admin/v1${path}`, { token: service.adminToken, body, expect, method: body === undefined ? 'GET' : 'POST' })
    const template = await admin(
      `/accounts/${account!.accountId}/templates`,
      { name: 'promo', body: 'Halo {{name}}, diskon 20% untuk Anda hari ini! Info: {{phone}}' },
      201,
    )
    const segment = await admin(`/accounts/${account!.accountId}/segments`, { name: 'promo', tag: 'promo' }, 201)
    if (segment.contact_count !== recipients) throw new Error(`segment has ${segment.contact_count} contacts, expected ${recipients}`)
    const draft = await apiJson(`${service.url}/api/v1/campaigns`, {
      token: account!.key,
      body: { name: `bench ${mode.key}`, template_id: template.id, segment_id: segment.id },
      expect: 201,
    })
    const id = draft.campaign.id as number

    const meter = cpuMeter({ loadgen: 'self', service: [service.pid], postgres: await backendPids(monitor, db.name) })
    const t0 = performance.now()
    await admin(`/campaigns/${id}/run`, {}, 200)
    let sentStatusAt = NaN
    let at10 = NaN
    let at90 = NaN
    const pollMs: number[] = []
    const deadline = t0 + Math.max(120_000, (recipients / 100) * 1000)
    for (;;) {
      const p0 = performance.now()
      const detail = await admin(`/campaigns/${id}`)
      const now = performance.now()
      pollMs.push(now - p0)
      const sent = detail.stats.sent as number
      if (Number.isNaN(at10) && sent >= recipients * 0.1) at10 = now
      if (Number.isNaN(at90) && sent >= recipients * 0.9) at90 = now
      if (Number.isNaN(sentStatusAt) && detail.campaign.status === 'sent') sentStatusAt = now
      // A number the simulator refuses would stay failed: stop there too (reported as not sent).
      if (detail.campaign.status === 'sent' && sent + (detail.stats.failed as number) >= recipients) break
      if (['paused', 'cancelled'].includes(detail.campaign.status))
        throw new Error(`campaign ${detail.campaign.status}: ${detail.campaign.pause_reason}`)
      if (now > deadline) throw new Error(`campaign not sent after ${((now - t0) / 1000).toFixed(0)} s: ${JSON.stringify(detail.stats)}`)
      await sleep(POLL_MS)
    }
    const end = performance.now()
    const cpu = meter.stop()
    const seconds = (end - t0) / 1000
    // With the default reports, also how long until every message reads `read`: the simulator worker
    // applies 2 status changes per message (delivered, then read) after the campaign has sent them.
    let allReadSeconds = NaN
    if (mode.key === 'default') {
      const readDeadline = performance.now() + 300_000
      while (performance.now() < readDeadline) {
        const detail = await admin(`/campaigns/${id}`)
        if ((detail.stats.read as number) >= recipients) {
          allReadSeconds = (performance.now() - t0) / 1000
          break
        }
        await sleep(POLL_MS)
      }
    }

    const check = benchClient(db.url, 1, 'bench-campaign-check')
    const [row] = await check<{ drift: number; not_sent: number }[]>`
      select (select count(*)::int from accounts a
              where a.balance <> (select coalesce(sum(amount), 0) from ledger l where l.account_id = a.id)) as drift,
             (select count(*)::int from messages where campaign_id = ${id} and status not in ('sent', 'delivered', 'read')) as not_sent`
    await check.end()
    return {
      mode,
      recipients,
      seconds,
      perSecond: recipients / seconds,
      sentStatusSeconds: (sentStatusAt - t0) / 1000,
      steadyPerSecond: (recipients * 0.8) / ((at90 - at10) / 1000),
      cpu,
      drift: row!.drift,
      notSent: row!.not_sent,
      pollMs: pollMs.sort((a, b) => a - b)[Math.floor(pollMs.length / 2)]!,
      allReadSeconds,
    }
  } finally {
    await service.stop()
  }
}

export const campaign: Benchmark = {
  name: 'campaign',
  summary: 'a 50,000-contact campaign with the simulator, run via the admin API: messages/s and total time',
  async run(ctx) {
    const recipients = Math.floor(envNumber('BENCH_CAMPAIGN_CONTACTS', 50_000, 10))
    const others = Math.floor(envNumber('BENCH_CAMPAIGN_OTHERS', Math.round(recipients / 5), 0))
    const poolMax = envNumber('BENCH_DB_POOL_MAX', 32, 1)
    const wanted = (process.env.BENCH_CAMPAIGN_MODES ?? 'deferred,default').split(',').map((s) => s.trim())
    const modes = MODES.filter((m) => wanted.includes(m.key))
    if (modes.length === 0)
      throw new Error(`BENCH_CAMPAIGN_MODES: expected deferred and/or default, got "${process.env.BENCH_CAMPAIGN_MODES}"`)
    console.log(
      `  ${recipients.toLocaleString('en-US')} recipients (+${others.toLocaleString('en-US')} contacts without the tag), DB_POOL_MAX=${poolMax}, ` +
        `campaign polled every ${POLL_MS} ms; modes: ${modes.map((m) => m.label).join('; ')}`,
    )

    const results: Result[] = []
    for (const mode of modes) results.push(await runMode(ctx, mode, recipients, others, poolMax))

    console.log(
      table([
        [
          'service',
          'recipients',
          'total s',
          'msg/s',
          'msg/s 10%-90%',
          'status sent at s',
          'all read at s',
          'poll ms (p50)',
          'not sent',
          'ledger drift',
        ],
        ...results.map((r) => [
          r.mode.label,
          r.recipients.toLocaleString('en-US'),
          r.seconds.toFixed(1),
          fmtRate(r.perSecond),
          fmtRate(r.steadyPerSecond),
          r.sentStatusSeconds.toFixed(1),
          Number.isNaN(r.allReadSeconds) ? '-' : r.allReadSeconds.toFixed(1),
          r.pollMs.toFixed(1),
          String(r.notSent),
          String(r.drift),
        ]),
      ]),
    )
    for (const r of results) console.log(`  ${r.mode.key}: ${fmtCpu(r.cpu)} (until sent)`)
    for (const r of results.filter((x) => !Number.isNaN(x.allReadSeconds))) {
      console.log(
        `  ${r.mode.key}: every message read after ${r.allReadSeconds.toFixed(1)} s: the simulator worker applied ` +
          `${fmtRate((2 * r.recipients) / (r.allReadSeconds - 3))} status changes/s on average (2 per message, the last due 3 s after its send)`,
      )
    }

    const metrics: Record<string, number> = { recipients }
    const checks: Check[] = []
    for (const r of results) {
      Object.assign(metrics, {
        [`${r.mode.key}_seconds`]: r.seconds,
        [`${r.mode.key}_per_second`]: r.perSecond,
        [`${r.mode.key}_steady_per_second`]: r.steadyPerSecond,
      })
      checks.push({
        name: `campaign ${r.mode.key}: msg/s`,
        pass: r.perSecond >= TARGET_PER_SECOND && r.notSent === 0,
        detail: `${fmtRate(r.perSecond)}/s (${r.recipients.toLocaleString('en-US')} in ${r.seconds.toFixed(1)} s, ${r.mode.label}), target >= ${fmtRate(TARGET_PER_SECOND)}/s`,
      })
      checks.push({
        name: `campaign ${r.mode.key}: all sent, balance = sum(ledger)`,
        pass: r.notSent === 0 && r.drift === 0,
        detail: `${r.notSent} not sent, ${r.drift} drifting accounts`,
      })
    }
    return { metrics, checks }
  },
}

export default campaign
