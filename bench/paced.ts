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
// Then two stored senders at their own rates (issue 18), in the same service: two Meta senders (phone
// number ids and tokens of their own, 200/s and 100/s by default) created through the admin API, one
// account each with its campaign, both campaigns run at the same moment, sized to last as long at their
// senders' rates (40 s). The fake keeps each sender's own limit (its rate in any sliding second, 6 s per
// recipient) and checks its token. Per sender: when its first message went, its accepted rate (steady
// median, and over the seconds both senders were sending), overall rate from the run, throttles,
// retries, refunds, final statuses: whether one sender's campaign slowed the other. Targets: each
// sender's steady median >= 95% of its rate and never over it in any second; each first message within
// 3 s of the run, overall >= 85% of its rate, median while both send >= 95%, both sending for >= 80% of
// the shorter campaign; no refund; every message sent, accepted once, with its sender's token.
// BENCH_PACED_PHASES (single,senders) runs one phase or both; BENCH_PACED_SENDER_RATES (200,100) and
// BENCH_PACED_SENDERS_SECONDS (40) size the second.
// Runs on PostgreSQL and on the embedded database (it reaches the database through the service alone).

import { fakeGraph, graphError, type FakeGraph } from '../tests/helpers/fake-graph'
import { FakeLimits, retryAfter } from '../tests/helpers/fake-rates'
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
  type BenchContext,
  type Benchmark,
  type Check,
  type Latencies,
  type ServiceChild,
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

/** Accepted per 1-second window from `first`; the steady part leaves out the first window and the last two. */
function windowsOf(acceptedAt: number[], first: number) {
  const windows: number[] = []
  for (const at of acceptedAt) {
    const w = Math.floor((at - first) / 1000)
    windows[w] = (windows[w] ?? 0) + 1
  }
  for (let i = 0; i < windows.length; i++) windows[i] ??= 0
  const steady = windows.slice(1, Math.max(2, windows.length - 2))
  return { windows, steady }
}

/** Contacts through the API, 16 at a time (the embedded database has no other way in while the service holds it). */
async function seedContacts(url: string, key: string, count: number, tag: string, phoneOf: (i: number) => string): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < count; i = next++) {
        await apiJson(`${url}/api/v1/contacts`, { token: key, body: { name: `Pelanggan ${i}`, phone: phoneOf(i), tags: tag }, expect: 201 })
      }
    }),
  )
}

/** Refunds and charges in an account's ledger. */
async function ledgerCounts(admin: (path: string) => Promise<any>, accountId: number): Promise<{ refunds: number; charges: number }> {
  let refunds = 0
  let charges = 0
  for (let offset = 0; ; offset += 200) {
    const page = await admin(`/accounts/${accountId}/ledger?limit=200&offset=${offset}`)
    for (const row of page.items) {
      if (row.kind === 'refund') refunds++
      if (row.kind === 'charge') charges++
    }
    if (!page.has_more) return { refunds, charges }
  }
}

type Phase = { metrics: Record<string, number>; checks: Check[] }
type Admin = (path: string, body?: unknown, expect?: number, method?: string) => Promise<any>

export const paced: Benchmark = {
  name: 'paced',
  summary:
    'a 20,000-recipient campaign at 200 messages/s through a fake Graph API that refuses beyond it, singles beside it; ' +
    'then two senders at 200/s and 100/s, a campaign each at the same time',
  embedded: true,
  async run(ctx) {
    const phases = new Set((process.env.BENCH_PACED_PHASES ?? 'single,senders').split(',').map((p) => p.trim()))
    for (const p of phases)
      if (p !== 'single' && p !== 'senders') throw new Error(`BENCH_PACED_PHASES: unknown phase "${p}" (single, senders)`)
    const limit = Math.floor(envNumber('BENCH_PACED_LIMIT', 200, 1))
    const rate = Math.floor(envNumber('BENCH_PACED_RATE', limit, 1))
    const poolMax = envNumber('BENCH_DB_POOL_MAX', 32, 1)

    const fake = fakeGraph()
    ctx.onCleanup(() => fake.stop())
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
        // Free-form messages to numbers that never wrote in: the benchmark measures the pace, not the window.
        WINDOW_CHECK: 'off',
      },
      onCleanup: ctx.onCleanup,
    })
    const admin: Admin = (path, body, expect, method) =>
      apiJson(`${service.url}/admin/v1${path}`, {
        token: service.adminToken,
        body,
        expect,
        method: method ?? (body === undefined ? 'GET' : 'POST'),
      })
    const cpuGroups = async () => ({
      loadgen: 'self' as const,
      service: [service.pid],
      ...(monitor && db ? { postgres: await backendPids(monitor, db.name) } : {}),
    })
    const env = { ctx, fake, service, admin, cpuGroups, limit, rate, poolMax }
    const results: Phase[] = []
    if (phases.has('single')) results.push(await singleSender(env))
    if (phases.has('senders')) results.push(await twoSenders(env))
    await service.stop()
    return {
      metrics: Object.assign({}, ...results.map((r) => r.metrics)),
      checks: results.flatMap((r) => r.checks),
    }
  },
}

type PhaseEnv = {
  ctx: BenchContext
  fake: FakeGraph
  service: ServiceChild
  admin: Admin
  cpuGroups: () => Promise<Record<string, number[] | 'self'>>
  limit: number
  rate: number
  poolMax: number
}

/** The deployment's sender (PROVIDER=meta): one campaign at its rate, and singles alone and beside it. */
async function singleSender({ ctx, fake, service, admin, cpuGroups, limit, rate, poolMax }: PhaseEnv): Promise<Phase> {
  const recipients = Math.floor(envNumber('BENCH_PACED_RECIPIENTS', 20_000, 100))
  const singleRate = envNumber('BENCH_PACED_SINGLES_RATE', 5, 0.1)
  const singleSeconds = envNumber('BENCH_PACED_SINGLES_SECONDS', 20, 1)
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

  const [account] = await seedAccounts(service, 1, { balance: 1_000_000_000 })
  const { accountId, key } = account!

  // Contacts through the API (the embedded database has no other way in while the service holds it).
  const seedStart = performance.now()
  await seedContacts(service.url, key, recipients, TAG, (i) => `+62813${String(i).padStart(7, '0')}1`)
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
  const meter = cpuMeter(await cpuGroups())
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
  const { windows, steady } = windowsOf(campaignAccepted, campaignAccepted[0]!)
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
  const { refunds, charges } = await ledgerCounts(admin, accountId)
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
  return { metrics, checks }
}

/**
 * Two stored senders at their own rates (BENCH_PACED_SENDER_RATES, default 200,100), one account and
 * one campaign each, run at the same moment; each campaign has as many recipients as its sender takes
 * in BENCH_PACED_SENDERS_SECONDS (40), so independent senders finish together.
 */
async function twoSenders({ ctx, fake, service, admin, cpuGroups }: PhaseEnv): Promise<Phase> {
  const rates = (process.env.BENCH_PACED_SENDER_RATES ?? '200,100').split(',').map((r) => Math.floor(Number(r)))
  if (rates.length < 2 || rates.some((r) => !Number.isFinite(r) || r < 1))
    throw new Error(`BENCH_PACED_SENDER_RATES: expected two or more rates, e.g. 200,100; got "${process.env.BENCH_PACED_SENDER_RATES}"`)
  const seconds = envNumber('BENCH_PACED_SENDERS_SECONDS', 40, 5)
  const senders = rates.map((rate, k) => ({
    k,
    rate,
    recipients: Math.round(rate * seconds),
    phoneNumberId: `2000000000${k + 1}`,
    token: `EAAbenchsender${k + 1}`,
    number: `+6281100000${String(k + 1).padStart(2, '0')}`,
    limits: Object.assign(new FakeLimits(), { perSecond: rate, recipientGapMs: RECIPIENT_GAP_MS }),
    acceptedAt: [] as number[],
    acceptances: new Map<string, number>(),
    wrongToken: 0,
    senderId: 0,
    accountId: 0,
    key: '',
    campaignId: 0,
  }))
  console.log(
    `\n  two senders: ${senders.map((s) => `${s.rate}/s with ${s.recipients.toLocaleString('en-US')} recipients`).join(' and ')} ` +
      `(${seconds} s each at its rate), one account and campaign each, run at the same moment; the fake keeps each sender's ` +
      `own limit (its rate in any 1-second window, one message per recipient every ${RECIPIENT_GAP_MS / 1000} s) and checks its token`,
  )

  // The fake answers for the stored senders by the phone number id in the path, each under its own limits.
  const byPhoneId = new Map(senders.map((s) => [s.phoneNumberId, s]))
  let ids = 0
  fake.answer = (request, sent) => {
    const phoneId = /\/([^/]+)\/messages$/.exec(new URL(request.url).pathname)?.[1] ?? ''
    const own = byPhoneId.get(phoneId)
    if (!own) return undefined
    if (request.headers.get('authorization') !== `Bearer ${own.token}`) {
      own.wrongToken++
      return graphError(401, 190, 'Invalid OAuth access token')
    }
    const now = performance.now()
    const breach = own.limits.admit(String(sent?.to ?? ''), now)
    if (breach?.rule === 'rate') return graphError(400, 130429, '(#130429) Rate limit hit', retryAfter(breach.waitMs, true))
    if (breach?.rule === 'gap')
      return graphError(400, 131056, '(#131056) (Business Account, Consumer Account) pair rate limit hit', retryAfter(breach.waitMs, true))
    own.acceptedAt.push(now)
    const text = String(sent?.text?.body ?? '')
    own.acceptances.set(text, (own.acceptances.get(text) ?? 0) + 1)
    const id = `wamid.HBgN${own.phoneNumberId}${(++ids).toString(16).padStart(8, '0')}A=`
    return Response.json({ messaging_product: 'whatsapp', contacts: [{ input: sent?.to, wa_id: sent?.to }], messages: [{ id }] })
  }

  const seedStart = performance.now()
  const accounts = await seedAccounts(service, senders.length, { balance: 1_000_000_000 })
  for (const s of senders) {
    const made = await admin(
      '/senders',
      {
        provider: 'meta',
        name: `Bench sender ${s.k + 1}`,
        number: s.number,
        credentials: {
          access_token: s.token,
          phone_number_id: s.phoneNumberId,
          app_secret: `bench-app-secret-${s.k + 1}`,
          business_account_id: `30000000${s.k + 1}`,
        },
        rate_per_second: s.rate,
        recipient_gap_ms: RECIPIENT_GAP_MS,
      },
      201,
    )
    s.senderId = made.id
    s.accountId = accounts[s.k]!.accountId
    s.key = accounts[s.k]!.key
    await admin(`/accounts/${s.accountId}/senders/${s.senderId}`, { default: true }, 200, 'PUT')
    const tag = `sender${s.k + 1}`
    await seedContacts(service.url, s.key, s.recipients, tag, (i) => `+62814${s.k + 1}${String(i).padStart(6, '0')}1`)
    const template = await admin(
      `/accounts/${s.accountId}/templates`,
      { name: tag, body: `Halo {{name}}, promo dari pengirim ${s.k + 1}! Info: {{phone}}` },
      201,
    )
    const segment = await admin(`/accounts/${s.accountId}/segments`, { name: tag, tag }, 201)
    if (segment.contact_count !== s.recipients) throw new Error(`segment has ${segment.contact_count} contacts, expected ${s.recipients}`)
    const draft = await apiJson(`${service.url}/api/v1/campaigns`, {
      token: s.key,
      body: { name: `bench ${tag}`, template_id: template.id, segment_id: segment.id, from: String(s.senderId) },
      expect: 201,
    })
    if (draft.campaign.sender_id !== s.senderId) throw new Error(`campaign's sender ${draft.campaign.sender_id}, expected ${s.senderId}`)
    s.campaignId = draft.campaign.id
  }
  const total = senders.reduce((sum, s) => sum + s.recipients, 0)
  console.log(
    `  seeded ${senders.length} senders, accounts and ${total.toLocaleString('en-US')} contacts through the API in ` +
      `${((performance.now() - seedStart) / 1000).toFixed(1)} s`,
  )
  await sleep(1000)

  const requestsBefore = fake.requests.length
  const meter = cpuMeter(await cpuGroups())
  const t0 = performance.now()
  await Promise.all(senders.map((s) => admin(`/campaigns/${s.campaignId}/run`, {}, 200)))
  const deadline = t0 + Math.max(120_000, seconds * 6000)
  const details = new Map<number, any>()
  for (;;) {
    let done = true
    for (const s of senders) {
      const detail = await admin(`/campaigns/${s.campaignId}`)
      details.set(s.k, detail)
      if (['paused', 'cancelled'].includes(detail.campaign.status))
        throw new Error(`campaign of sender ${s.k + 1} ${detail.campaign.status}: ${detail.campaign.pause_reason}`)
      if (!(detail.campaign.status === 'sent' && detail.stats.sent + detail.stats.failed >= s.recipients)) done = false
    }
    if (done) break
    if (performance.now() > deadline)
      throw new Error(
        `campaigns not sent after ${((performance.now() - t0) / 1000).toFixed(0)} s: ` +
          senders.map((s) => JSON.stringify(details.get(s.k)?.stats)).join(', '),
      )
    await sleep(POLL_MS)
  }
  const cpu = meter.stop()
  const requests = fake.requests.slice(requestsBefore)

  // The seconds both senders were sending: from the later first acceptance to the earlier last one.
  const firstOf = (s: (typeof senders)[number]) => s.acceptedAt[0]!
  const lastOf = (s: (typeof senders)[number]) => s.acceptedAt[s.acceptedAt.length - 1]!
  const overlapStart = Math.max(...senders.map(firstOf))
  const overlapEnd = Math.min(...senders.map(lastOf))
  const overlapSeconds = Math.max(0, (overlapEnd - overlapStart) / 1000)
  const count = async (key: string, query: string) =>
    (await apiJson(`${service.url}/api/v1/messages?limit=1${query}`, { token: key })).total as number

  const rows = []
  for (const s of senders) {
    const { windows, steady } = windowsOf(s.acceptedAt, firstOf(s))
    // Whole 1-second windows within the overlap, each sender's own count in them.
    const both: number[] = []
    for (let w = 0; overlapStart + (w + 1) * 1000 <= overlapEnd; w++)
      both.push(s.acceptedAt.filter((at) => at >= overlapStart + w * 1000 && at < overlapStart + (w + 1) * 1000).length)
    const mine = requests.filter((r) => r.path.endsWith(`/${s.phoneNumberId}/messages`))
    const distinct = new Set(mine.map((r) => r.text)).size
    const { refunds, charges } = await ledgerCounts(admin, s.accountId)
    rows.push({
      ...s,
      windows,
      steady,
      steadyMedian: median(steady),
      steadyMin: Math.min(...steady),
      steadyMax: Math.max(...steady),
      bothMedian: median(both),
      bothWindows: both.length,
      slidingMax: maxInAnySecond(s.acceptedAt),
      startedAfter: (firstOf(s) - t0) / 1000,
      wall: (lastOf(s) - t0) / 1000,
      requests: mine.length,
      rateThrottles: mine.filter((r) => r.code === 130429).length,
      gapThrottles: mine.filter((r) => r.code === 131056).length,
      otherRefusals: mine.filter((r) => r.status !== 200 && r.code !== 130429 && r.code !== 131056).length,
      retries: mine.length - distinct,
      distinct,
      duplicates: [...s.acceptances.values()].filter((n) => n > 1).length,
      acceptedTotal: s.acceptedAt.length,
      refunds,
      charges,
      sent: await count(s.key, '&status=sent'),
      failed: await count(s.key, '&status=failed'),
      messages: await count(s.key, `&sender_id=${s.senderId}`),
      stats: details.get(s.k).stats,
    })
  }
  fake.answer = null

  const ratio = (x: number, of: number) => (x / of).toFixed(3)
  console.log(
    table([
      [
        'sender',
        'rate/s',
        'recipients',
        'first at s',
        'last at s',
        'overall/s (ratio)',
        'steady median (ratio)',
        'min',
        'max',
        'median while both (ratio)',
        'most in any 1 s',
        'throttles',
        'retries',
        'refunds',
      ],
      ...rows.map((r) => [
        `${r.k + 1} (id ${r.senderId})`,
        String(r.rate),
        r.recipients.toLocaleString('en-US'),
        r.startedAfter.toFixed(1),
        r.wall.toFixed(1),
        `${(r.recipients / r.wall).toFixed(1)} (${ratio(r.recipients / r.wall, r.rate)})`,
        `${r.steadyMedian} (${ratio(r.steadyMedian, r.rate)})`,
        String(r.steadyMin),
        String(r.steadyMax),
        r.bothWindows > 0 ? `${r.bothMedian} (${ratio(r.bothMedian, r.rate)}) over ${r.bothWindows} s` : '- (never both)',
        String(r.slidingMax),
        `${r.rateThrottles + r.gapThrottles}`,
        String(r.retries),
        String(r.refunds),
      ]),
    ]),
  )
  console.log(
    `  both senders sending for ${overlapSeconds.toFixed(1)} s; together ${senders.reduce((sum, s) => sum + s.rate, 0)}/s configured`,
  )
  for (const r of rows) {
    console.log(
      `  sender ${r.k + 1}: ${r.requests.toLocaleString('en-US')} requests for ${r.distinct.toLocaleString('en-US')} messages ` +
        `(${r.rateThrottles} 130429, ${r.gapThrottles} 131056, ${r.otherRefusals} other refusals, ${r.wrongToken} with another token); ` +
        `${r.messages.toLocaleString('en-US')} messages, ${r.sent.toLocaleString('en-US')} sent, ${r.failed} failed; ledger ` +
        `${r.charges.toLocaleString('en-US')} charges, ${r.refunds} refunds; ${r.duplicates} accepted more than once; ` +
        `campaign stats ${JSON.stringify(r.stats)}`,
    )
    console.log(`  sender ${r.k + 1}, accepted per second, every window: ${r.windows.join(' ')}`)
  }
  console.log(`  ${fmtCpu(cpu)} (both campaigns)`)

  const prefix = ctx.embedded ? 'paced (embedded), two senders' : 'paced, two senders'
  const shortest = Math.min(...rows.map((r) => r.wall - r.startedAfter))
  const checks: Check[] = [
    {
      name: `${prefix}: each at its own rate`,
      pass: rows.every((r) => r.slidingMax <= r.rate && r.steadyMedian >= 0.95 * r.rate),
      detail: rows
        .map(
          (r) =>
            `${r.k + 1}: median ${r.steadyMedian}/s = ${((100 * r.steadyMedian) / r.rate).toFixed(1)}% of ${r.rate}, most in 1 s ${r.slidingMax}`,
        )
        .join('; '),
    },
    {
      name: `${prefix}: neither slowed the other`,
      pass:
        rows.every((r) => r.startedAfter < 3 && r.recipients / r.wall >= 0.85 * r.rate && r.bothMedian >= 0.95 * r.rate) &&
        overlapSeconds >= 0.8 * shortest,
      detail:
        rows
          .map(
            (r) =>
              `${r.k + 1}: first after ${r.startedAfter.toFixed(1)} s, overall ${((100 * r.recipients) / r.wall / r.rate).toFixed(1)}% of ` +
              `${r.rate}/s, ` +
              (r.bothWindows > 0 ? `${((100 * r.bothMedian) / r.rate).toFixed(1)}% while both sent` : 'never sending while the other did'),
          )
          .join('; ') + `; both sending ${overlapSeconds.toFixed(1)} s (target >= 80% of ${shortest.toFixed(1)} s)`,
    },
    {
      name: `${prefix}: throttles retried, none refunded, every message sent once by its sender`,
      pass: rows.every(
        (r) =>
          r.refunds === 0 &&
          r.otherRefusals === 0 &&
          r.wrongToken === 0 &&
          r.failed === 0 &&
          r.sent === r.recipients &&
          r.messages === r.recipients &&
          r.charges === r.recipients &&
          r.duplicates === 0 &&
          r.acceptedTotal === r.recipients &&
          r.distinct === r.recipients,
      ),
      detail: rows
        .map(
          (r) =>
            `${r.k + 1}: ${r.sent}/${r.recipients} sent, ${r.failed} failed, ${r.refunds} refunds, ${r.rateThrottles + r.gapThrottles} throttles, ` +
            `${r.duplicates} accepted twice, ${r.wrongToken} other token`,
        )
        .join('; '),
    },
  ]
  const metrics: Record<string, number> = { senders_overlap_seconds: overlapSeconds }
  for (const r of rows) {
    const p = `sender${r.k + 1}_`
    Object.assign(metrics, {
      [`${p}rate`]: r.rate,
      [`${p}recipients`]: r.recipients,
      [`${p}first_seconds`]: r.startedAfter,
      [`${p}wall_seconds`]: r.wall,
      [`${p}overall_ratio`]: r.recipients / r.wall / r.rate,
      [`${p}accepted_median_per_second`]: r.steadyMedian,
      [`${p}accepted_median_ratio`]: r.steadyMedian / r.rate,
      [`${p}median_while_both_ratio`]: r.bothMedian / r.rate,
      [`${p}most_in_any_second`]: r.slidingMax,
      [`${p}throttles`]: r.rateThrottles + r.gapThrottles,
      [`${p}retries`]: r.retries,
      [`${p}refunds`]: r.refunds,
    })
  }
  return { metrics, checks }
}

export default paced
