// A paced campaign: 20,000 recipients with PROVIDER=meta at PROVIDER_MAX_PER_SECOND=200, through a fake
// Graph API (tests/helpers/fake-graph.ts, in this process) that accepts at most 200 messages in any
// 1-second window of its own and answers 130429 with a Retry-After beyond it (and 131056 within 6 s
// of a recipient's last message). Contacts through POST /api/v1/contacts, template and segment through
// the admin API, the draft through POST /api/v1/campaigns, run through the admin API, polled until sent.
// Measured: wall time; the fake's accepted rate per 1-second window over the steady part (median, max,
// and the most it accepted in any sliding second); throttling answers; retries (requests minus
// distinct messages); refunds in the ledger; final statuses; acceptances per message (each once).
// Then what the pace adds to single sends: POST /api/v1/messages/send at a fixed rate (5/s for 20 s)
// with no campaign running, and again while the campaign runs; p50/p99 of both, same service, same run.
// Runs on PostgreSQL and on the embedded database (it reaches the database through the service alone).

import { fakeGraph } from '../tests/helpers/fake-graph'
import {
  apiJson,
  backendPids,
  cpuMeter,
  envNumber,
  fmtCpu,
  fmtMs,
  latencySummary,
  seedAccounts,
  serverClient,
  sleep,
  startServiceChild,
  table,
  type Benchmark,
  type Check,
  type Latencies,
} from './lib'

const TAG = 'paced'
const POLL_MS = 1000
/** Meta's pair rate, kept by the fake as by the service (its default for meta). */
const RECIPIENT_GAP_MS = 6000

type Single = { ms: number; status: number; answer: string; messageId: string | null }

/** POST /api/v1/messages/send at `perSecond` (open loop: each on its own schedule) for `seconds`. */
async function singles(url: string, key: string, perSecond: number, seconds: number, label: string, phoneBase: number): Promise<Single[]> {
  const count = Math.round(perSecond * seconds)
  const start = performance.now()
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const due = start + (i * 1000) / perSecond
      const wait = due - performance.now()
      if (wait > 0) await sleep(wait)
      const t0 = performance.now()
      const res = await fetch(`${url}/api/v1/messages/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: `+62899${String(phoneBase + i).padStart(7, '0')}`, body: `single ${label} ${i}` }),
      })
      const text = await res.text()
      const ms = performance.now() - t0
      let answer = `HTTP ${res.status}`
      let messageId: string | null = null
      try {
        const data = JSON.parse(text).data
        answer = String(data?.status ?? answer)
        messageId = data?.message_id ?? null
      } catch {
        // not JSON: the status says it
      }
      return { ms, status: res.status, answer, messageId }
    }),
  )
}

/** How many of the ascending `times` fall in (t - 1000, t] at most, over every t of `times`. */
function maxInAnySecond(times: number[]): number {
  let most = 0
  for (let lo = 0, hi = 0; hi < times.length; hi++) {
    while (times[lo]! <= times[hi]! - 1000) lo++
    most = Math.max(most, hi - lo + 1)
  }
  return most
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length ? s[Math.floor((s.length - 1) / 2)]! : NaN
}

export const paced: Benchmark = {
  name: 'paced',
  summary: 'a 20,000-recipient campaign at 200 messages/s through a fake Graph API that refuses beyond it; singles beside it',
  embedded: true,
  async run(ctx) {
    const recipients = Math.floor(envNumber('BENCH_PACED_RECIPIENTS', 20_000, 100))
    const limit = Math.floor(envNumber('BENCH_PACED_LIMIT', 200, 1))
    const rate = Math.floor(envNumber('BENCH_PACED_RATE', limit, 1))
    const singleRate = envNumber('BENCH_PACED_SINGLES_RATE', 5, 0.1)
    const singleSeconds = envNumber('BENCH_PACED_SINGLES_SECONDS', 20, 1)
    const poolMax = envNumber('BENCH_DB_POOL_MAX', 32, 1)
    // The singles beside the campaign start once it is well under way and must end before it does.
    const singlesAfterSeconds = Math.min(10, recipients / rate / 4)
    console.log(
      `  ${recipients.toLocaleString('en-US')} recipients; the fake accepts ${limit}/s (any 1-second window) and one message per ` +
        `recipient every ${RECIPIENT_GAP_MS / 1000} s; the service paces at PROVIDER_MAX_PER_SECOND=${rate}` +
        (rate < limit
          ? ` (set UNDER the limit by BENCH_PACED_RATE)`
          : rate > limit
            ? ` (set OVER the limit by BENCH_PACED_RATE)`
            : ' (= the limit)') +
        `; singles ${singleRate}/s for ${singleSeconds} s alone, then again from ${singlesAfterSeconds.toFixed(0)} s into the campaign; ` +
        `${ctx.embedded ? 'embedded database' : `PostgreSQL, DB_POOL_MAX=${poolMax}`}`,
    )

    const fake = fakeGraph()
    ctx.onCleanup(() => fake.stop())
    fake.limits.perSecond = limit
    fake.limits.recipientGapMs = RECIPIENT_GAP_MS
    // The fake's own acceptance times (its clock, at its decision), to judge its windows exactly.
    const acceptedAt: number[] = []
    const admit = fake.limits.admit.bind(fake.limits)
    fake.limits.admit = (to, now, sender) => {
      const breach = admit(to, now, sender)
      if (!breach) acceptedAt.push(now)
      return breach
    }

    const db = ctx.embedded ? undefined : await ctx.freshDatabase('paced')
    const monitor = db ? serverClient(ctx.serverUrl) : undefined
    if (monitor) ctx.onCleanup(() => monitor.end())
    const service = await startServiceChild({
      databaseUrl: db?.url,
      env: {
        PROVIDER: 'meta',
        META_ACCESS_TOKEN: 'EAAbench',
        META_PHONE_NUMBER_ID: '1234567890',
        META_APP_SECRET: 'bench-app-secret',
        META_VERIFY_TOKEN: 'bench-verify',
        META_API_BASE: fake.apiBase,
        PROVIDER_MAX_PER_SECOND: String(rate),
        PROVIDER_RECIPIENT_GAP_MS: String(RECIPIENT_GAP_MS),
        DB_POOL_MAX: String(poolMax),
      },
      onCleanup: ctx.onCleanup,
    })
    const admin = (path: string, body?: unknown, expect?: number) =>
      apiJson(`${service.url}/admin/v1${path}`, { token: service.adminToken, body, expect, method: body === undefined ? 'GET' : 'POST' })

    const [account] = await seedAccounts(service, 1, { balance: 1_000_000_000 })
    const { accountId, key } = account!

    // Contacts through the API (the embedded database has no other way in while the service holds it).
    const seedStart = performance.now()
    let nextContact = 0
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = nextContact++; i < recipients; i = nextContact++) {
          await apiJson(`${service.url}/api/v1/contacts`, {
            token: key,
            body: { name: `Pelanggan ${i}`, phone: `+62813${String(i).padStart(7, '0')}1`, tags: TAG },
            expect: 201,
          })
        }
      }),
    )
    console.log(
      `  seeded ${recipients.toLocaleString('en-US')} contacts through the API in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`,
    )
    const template = await admin(
      `/accounts/${accountId}/templates`,
      { name: 'paced', body: 'Halo {{name}}, promo hari ini! Info: {{phone}}' },
      201,
    )
    const segment = await admin(`/accounts/${accountId}/segments`, { name: TAG, tag: TAG }, 201)
    if (segment.contact_count !== recipients) throw new Error(`segment has ${segment.contact_count} contacts, expected ${recipients}`)
    const draft = await apiJson(`${service.url}/api/v1/campaigns`, {
      token: key,
      body: { name: 'bench paced', template_id: template.id, segment_id: segment.id },
      expect: 201,
    })
    const campaignId = draft.campaign.id as number

    // Singles with no campaign running: the baseline.
    const alone = await singles(service.url, key, singleRate, singleSeconds, 'alone', 0)
    await sleep(1000) // the pace's window of the singles passes before the campaign starts

    const requestsBefore = fake.requests.length
    const acceptedBefore = acceptedAt.length
    const meter = cpuMeter({
      loadgen: 'self',
      service: [service.pid],
      ...(monitor && db ? { postgres: await backendPids(monitor, db.name) } : {}),
    })
    const t0 = performance.now()
    await admin(`/campaigns/${campaignId}/run`, {}, 200)
    const beside = sleep(singlesAfterSeconds * 1000).then(() => singles(service.url, key, singleRate, singleSeconds, 'beside', 1_000_000))
    let detail: any
    const deadline = t0 + Math.max(120_000, (recipients / rate) * 6000)
    for (;;) {
      detail = await admin(`/campaigns/${campaignId}`)
      if (detail.campaign.status === 'sent' && detail.stats.sent + detail.stats.failed >= recipients) break
      if (['paused', 'cancelled'].includes(detail.campaign.status))
        throw new Error(`campaign ${detail.campaign.status}: ${detail.campaign.pause_reason}`)
      if (performance.now() > deadline)
        throw new Error(`campaign not sent after ${((performance.now() - t0) / 1000).toFixed(0)} s: ${JSON.stringify(detail.stats)}`)
      await sleep(POLL_MS)
    }
    const during = await beside
    const cpu = meter.stop()
    const campaignAccepted = acceptedAt.slice(acceptedBefore)
    const wallSeconds = (campaignAccepted[campaignAccepted.length - 1]! - t0) / 1000

    // Accepted per 1-second window from the first acceptance after the run; the steady part leaves out
    // the first window (the campaign starting) and the last two (its tail, the last batch's stragglers).
    const first = campaignAccepted[0]!
    const windows: number[] = []
    for (const at of campaignAccepted) {
      const w = Math.floor((at - first) / 1000)
      windows[w] = (windows[w] ?? 0) + 1
    }
    for (let i = 0; i < windows.length; i++) windows[i] ??= 0
    const steady = windows.slice(1, Math.max(2, windows.length - 2))
    const steadyMedian = median(steady)
    const steadyMax = Math.max(...steady)
    const steadyMin = Math.min(...steady)
    const slidingMax = maxInAnySecond(acceptedAt)

    const campaignRequests = fake.requests.slice(requestsBefore)
    const allRequests = fake.requests.filter((r) => r.path.endsWith('/messages'))
    const rateThrottles = allRequests.filter((r) => r.code === 130429).length
    const gapThrottles = allRequests.filter((r) => r.code === 131056).length
    const otherRefusals = allRequests.filter((r) => r.status !== 200 && r.code !== 130429 && r.code !== 131056).length
    const distinct = new Set(allRequests.map((r) => r.text)).size
    const retries = allRequests.length - distinct
    const duplicates = fake.accepted.duplicates()
    const throttlesInCampaign = campaignRequests.filter((r) => r.code === 130429 || r.code === 131056).length

    // The service's own record: every message sent, no refund, one charge each.
    let refunds = 0
    let charges = 0
    for (let offset = 0; ; offset += 200) {
      const page = await admin(`/accounts/${accountId}/ledger?limit=200&offset=${offset}`)
      for (const row of page.items) {
        if (row.kind === 'refund') refunds++
        if (row.kind === 'charge') charges++
      }
      if (!page.has_more) break
    }
    const count = async (query: string) => (await apiJson(`${service.url}/api/v1/messages?limit=1${query}`, { token: key })).total as number
    const messagesTotal = await count('')
    const messagesSent = await count('&status=sent')
    const messagesFailed = await count('&status=failed')
    const failedSample =
      messagesFailed > 0
        ? ((await apiJson(`${service.url}/api/v1/messages?limit=5&status=failed`, { token: key })).items as any[]).map(
            (m) => `${m.error_code ?? '-'} ${m.error_message ?? ''}`,
          )
        : []
    const singlesSent = [...alone, ...during].filter((s) => s.status === 200 && s.answer === 'sent').length
    const singleAnswers = new Map<string, number>()
    for (const s of [...alone, ...during]) singleAnswers.set(s.answer, (singleAnswers.get(s.answer) ?? 0) + 1)
    const expectedMessages = recipients + alone.length + during.length

    const ok = (xs: Single[]) => latencySummary(xs.filter((s) => s.status === 200 || s.status === 202).map((s) => s.ms))
    const base: Latencies = ok(alone)
    const paced: Latencies = ok(during)

    console.log(
      table([
        ['campaign', 'wall s', 'msg/s overall', 'steady windows', 'accepted/s median', 'min', 'max', 'median / limit', 'most in any 1 s'],
        [
          `${recipients.toLocaleString('en-US')} at ${rate}/s`,
          wallSeconds.toFixed(1),
          (recipients / wallSeconds).toFixed(1),
          String(steady.length),
          String(steadyMedian),
          String(steadyMin),
          String(steadyMax),
          (steadyMedian / limit).toFixed(3),
          `${slidingMax} (limit ${limit})`,
        ],
      ]),
    )
    console.log(
      `  fake: ${allRequests.length.toLocaleString('en-US')} requests for ${distinct.toLocaleString('en-US')} messages: ` +
        `${rateThrottles} answered 130429 (rate), ${gapThrottles} 131056 (pair rate), ${otherRefusals} other refusals; ` +
        `${retries} retries; ${throttlesInCampaign} throttles during the campaign; ` +
        `${fake.accepted.total.toLocaleString('en-US')} acceptances, ${duplicates.length} messages accepted more than once`,
    )
    console.log(
      `  service: ${messagesTotal.toLocaleString('en-US')} messages (expected ${expectedMessages.toLocaleString('en-US')}), ` +
        `${messagesSent.toLocaleString('en-US')} sent, ${messagesFailed} failed; ledger ${charges.toLocaleString('en-US')} charges, ${refunds} refunds; ` +
        `campaign stats ${JSON.stringify(detail.stats)}`,
    )
    if (failedSample.length) console.log(`  failed messages' errors (first ${failedSample.length}): ${failedSample.join('; ')}`)
    console.log(`  accepted per second, every window: ${windows.join(' ')}`)
    console.log(
      table([
        ['singles', 'n', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
        ['no campaign', String(base.n), fmtMs(base.p50), fmtMs(base.p90), fmtMs(base.p99), fmtMs(base.max)],
        ['beside the campaign', String(paced.n), fmtMs(paced.p50), fmtMs(paced.p90), fmtMs(paced.p99), fmtMs(paced.max)],
        [
          'added (ratio)',
          '',
          `${fmtMs(paced.p50 - base.p50)} (${(paced.p50 / base.p50).toFixed(1)}x)`,
          `${fmtMs(paced.p90 - base.p90)}`,
          `${fmtMs(paced.p99 - base.p99)} (${(paced.p99 / base.p99).toFixed(1)}x)`,
          '',
        ],
      ]),
    )
    console.log(`  singles: ${singlesSent} answered 200 sent; answers: ${[...singleAnswers].map(([a, n]) => `${a} ${n}`).join(', ')}`)
    console.log(`  ${fmtCpu(cpu)} (campaign)`)
    console.log(
      "  left out: network latency to Meta (the fake answers on loopback at once), Meta's real window (the fake counts " +
        'a sliding second), status webhooks from Meta (no delivered/read), templates bound to approved Meta templates, ' +
        'several instances sharing the pace, a campaign whose recipients repeat (the pair rate is never reached)',
    )

    const prefix = ctx.embedded ? 'paced (embedded)' : 'paced'
    const checks: Check[] = [
      {
        name: `${prefix}: accepted rate`,
        pass: slidingMax <= limit && steadyMedian >= 0.95 * limit,
        detail:
          `median ${steadyMedian}/s over ${steady.length} steady 1-s windows = ${((100 * steadyMedian) / limit).toFixed(1)}% of ${limit} ` +
          `(target >= 95%), most in any 1 s ${slidingMax} (target <= ${limit}); pace ${rate}/s${rate !== limit ? ` (limit ${limit})` : ''}`,
      },
      {
        name: `${prefix}: throttles retried, none refunded`,
        pass: refunds === 0 && otherRefusals === 0,
        detail: `${rateThrottles + gapThrottles} throttling answers (${rateThrottles} 130429, ${gapThrottles} 131056), ${retries} retries, ${refunds} refunds`,
      },
      {
        name: `${prefix}: every message sent, accepted once`,
        pass:
          messagesTotal === expectedMessages &&
          messagesSent === expectedMessages &&
          messagesFailed === 0 &&
          charges === expectedMessages &&
          duplicates.length === 0 &&
          fake.accepted.total === expectedMessages &&
          distinct === expectedMessages,
        detail:
          `${messagesSent}/${expectedMessages} sent, ${messagesFailed} failed, ${duplicates.length} accepted twice, ` +
          `${fake.accepted.total} acceptances for ${distinct} distinct messages`,
      },
    ]
    const metrics: Record<string, number> = {
      recipients,
      limit,
      rate,
      wall_seconds: wallSeconds,
      accepted_median_per_second: steadyMedian,
      accepted_max_per_second: steadyMax,
      accepted_most_in_any_second: slidingMax,
      accepted_median_ratio: steadyMedian / limit,
      throttles_130429: rateThrottles,
      throttles_131056: gapThrottles,
      retries,
      refunds,
      single_alone_p50_ms: base.p50,
      single_alone_p99_ms: base.p99,
      single_beside_p50_ms: paced.p50,
      single_beside_p99_ms: paced.p99,
      single_p99_added_ms: paced.p99 - base.p99,
      single_p99_ratio: paced.p99 / base.p99,
    }
    await service.stop()
    return { metrics, checks }
  },
}

export default paced
