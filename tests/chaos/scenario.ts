// A seeded fault scenario (after TigerBeetle's VOPR and Jepsen): several accounts, a random mix of
// sends, bulks with invalid entries, Idempotency-Key repeats, campaigns, top-ups and price changes,
// against the real service (child processes) behind a fake Twilio that refuses, fails, times out,
// answers slowly (some past the hand-off lease), refuses first attempts, sends reports before its
// answers, reports late failures, and throttles (429 with 20429 or 63018) past its rate, which drops
// in busy spells; the service runs at a pace above that rate, with short hand-off leases.
// The messages go through two stored Twilio senders (two accounts of the fake: SIDs, tokens and
// numbers of their own), created and assigned through the admin API at set-up: the first account
// sends from one, the second from the other, the third from both, alternating `from`. The fake keeps
// each sender's rate and busy spells apart (by From number), takes a message only with its sender's
// own credentials and number, signs each message's status callbacks with its sender's token and
// AccountSid, and forges a few with another account's token, which must be refused. It also forges
// with a tenant's own credentials (another sender's account SID and token, or the deployment's): status
// reports for a victim sender's messages (answered 200 `changed: false`, changing nothing) and
// customers' STOPs and texts to the victim's number (refused); the checks show that no message,
// refund, window or opt-out of the victim changed.
// Customers write in meanwhile (issue 19): new ones, again, STOP and START, some posted twice, racing
// the sends to them; the fake refuses a free-form message outside a customer's window (63016) and the
// service must never hand one over; every inbound message is stored once, opt-outs and windows hold
// for every request made after the customer's message was taken (invariants.ts, rule 6).
// Meanwhile the service is killed with SIGKILL and restarted at random moments (two instances on
// one PostgreSQL database when DATABASE_URL is set, one on the embedded database otherwise). On
// PostgreSQL the instances reach the database through proxies that lose the COMMIT answers of some
// charges, hand-off outcomes and refunds, and play outages of seconds (every connection cut, new ones
// refused). Then it drains until quiet and checks the invariants (invariants.ts).
//
// How the end settles in-flight work: the drain waits until nothing is left to happen (no message
// charged but not handed over or refunded, no callback in flight, no delivery pending, no new hand-off
// for two seconds). Throttled messages are retried until the fake takes them (its throttles end, and
// the validity is the default 4 h), so after the drain every message is settled: none may be left
// queued but a quarantined one.
//
// The seed fixes the plan: the operations, their sizes, each message's fault and reports, the kill
// schedule. Timing is real, so a replay runs the same plan, not the same interleaving.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/client'
import { createPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { startOutageProxy, startPgProxy, type OutageProxy, type PgProxy } from '../helpers/pg-proxy'
import { makeTestTls, startReceiver } from '../helpers/receiver'
import { startCluster } from './cluster'
import { ACCOUNT_SID, AUTH_TOKEN, DEPLOYMENT_NUMBER, SENDER_ACCOUNTS, startFakeTwilio, type TwilioAccount } from './fake-twilio'
import { checkInvariants } from './invariants'
import { createTemplateWorld } from './templates'
import { createUserIdWorld } from './user-ids'
import { hashed, seeded } from '../helpers/random'
import { createClient, isFinal, planOps, type Account, type SenderRef } from './workload'

export type ChaosOptions = {
  seed: number
  /** How long operations and kills go on; the drain and the checks come after. */
  seconds: number
  log?: (line: string) => void
}

export type ChaosReport = {
  seed: number
  mode: 'embedded' | 'postgres'
  violations: string[]
  stats: Record<string, number>
  /** The stored senders' ids (per-sender stats are named `sender <id>: ...`). */
  senders: number[]
  kills: number
  ms: number
}

const ACCOUNTS = 3
/** Kills every run makes, however slow the machine. */
export const MIN_KILLS = 2
/**
 * The fault phase goes on until at least this many of the plan's operations were issued, whatever the
 * machine's speed (a loaded machine answers slowly: 37 operations in 25 s handed over 30 messages, too
 * few for the run to exercise what it claims), as it does until MIN_KILLS kills.
 */
export const MIN_OPERATIONS = 60
const CLIENTS = 3
/** Long enough for the fake's slow answers past the lease; its timeouts answer after it. */
const PROVIDER_TIMEOUT_MS = 5_000
/** Short hand-off leases (the default is 20 s): slow answers outlive them, under a live holder. */
const LEASE_SECONDS = 3
/**
 * PostgreSQL outages of 2–5 s per run (PostgreSQL mode only; CHAOS_DB_OUTAGES, default 2): every
 * connection cut and new ones refused, longer than a lease. Requests meet 503 SERVICE_UNAVAILABLE and
 * repeat; holders cannot renew their leases meanwhile, and recovery must still not take over from them.
 */
const OUTAGES = Number(process.env.CHAOS_DB_OUTAGES ?? 2)
/**
 * Lost COMMIT answers (PostgreSQL mode only): each single send's charge, hand-off outcome and refund
 * statement loses its answer after committing with this chance, up to LOST_COMMITS times a run.
 */
const LOST_COMMIT_MARKERS = ['request_item = 1', "set status = 'sent', message_sid = v.sid", 'refunded_at = coalesce(']
const LOST_COMMIT_CHANCE = 0.03
const LOST_COMMITS = 8
/** Each sender's pace (its rate_per_second); the fake's own rate per sender is below it, so bursts are throttled. */
const PACE_PER_SECOND = 50
/** Which senders each account has, by index into SENDER_ACCOUNTS (the first is its default). */
const ACCOUNT_SENDERS = [[0], [1], [0, 1]]
const DRAIN_LIMIT_MS = 150_000
/**
 * The drain ends by this long after the run started, whatever is left (the test's own limit is 300 s):
 * the stop, the checks and a report of what was still going on come after it, so a stuck run fails
 * with that report instead of the test runner's timeout.
 */
const RUN_BUDGET_MS = 235_000
const RECIPIENT_GAP_MS = 200

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now()
  const log = options.log ?? (() => {})
  const postgres = usingPostgres()
  const cleanups: (() => Promise<void> | void)[] = []
  const violations: string[] = []
  try {
    const tls = makeTestTls()
    cleanups.push(() => tls.remove())
    const receiver = startReceiver(tls)
    cleanups.push(() => receiver.stop())
    // The receiver fails some attempts (503 with Retry-After: 1 keeps the retry inside the run), never a third one.
    const tries = new Map<string, number>()
    receiver.handler = (r) => {
      const id = r.headers['webhook-id'] ?? ''
      const n = (tries.get(id) ?? 0) + 1
      tries.set(id, n)
      if (n < 3 && hashed(options.seed, id, n) < 0.1) return new Response('busy', { status: 503, headers: { 'retry-after': '1' } })
      return new Response('ok')
    }
    // Each sender its own rate and busy spells.
    const rates = seeded(options.seed ^ 0x7a7e)
    const twilioAccounts: TwilioAccount[] = SENDER_ACCOUNTS.map((a) => ({
      ...a,
      rate: { perSecond: rates.int(30, 45), busyPerSecond: rates.int(2, 5) },
    }))
    const fake = startFakeTwilio(options.seed, {
      serviceTimeoutMs: PROVIDER_TIMEOUT_MS,
      leaseMs: LEASE_SECONDS * 1000,
      accounts: twilioAccounts,
      strangers: [AUTH_TOKEN],
      deployment: { sid: ACCOUNT_SID, token: AUTH_TOKEN, number: DEPLOYMENT_NUMBER },
    })
    cleanups.push(() => fake.stop())
    // WhatsApp templates of a Meta sender, changed by Meta while they are sent (templates.ts).
    const templates = createTemplateWorld(options.seed)
    cleanups.push(() => templates.graph.stop())
    // Customers known only by a WhatsApp user id, on two more phone numbers of the same fake Graph API (user-ids.ts).
    const userIds = createUserIdWorld(options.seed, templates.graph)

    const dataDir = mkdtempSync(join(tmpdir(), 'chaos-'))
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
    // Embedded: migrated already (the fault test is about what faults leave, not a first start).
    await premigrate(dataDir)
    const env: Record<string, string> = {
      DATA_DIR: dataDir,
      // One key for both instances' sealed sender credentials.
      SECRETS_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
      // The deployment's sender: no message may go through it (every account has senders of its own).
      PROVIDER: 'twilio',
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      TWILIO_FROM: `whatsapp:${DEPLOYMENT_NUMBER}`,
      TWILIO_API_BASE: `http://127.0.0.1:${fake.port}`,
      PROVIDER_TIMEOUT_MS: String(PROVIDER_TIMEOUT_MS),
      HANDOFF_CONCURRENCY: '32',
      HANDOFF_LEASE_SECONDS: String(LEASE_SECONDS),
      PROVIDER_MAX_PER_SECOND: String(PACE_PER_SECOND),
      // Short answer bounds, so that throttled sends and bulk entries are answered 202 queued (their
      // outcome by webhook) or 429 before charging within the run.
      SEND_WAIT_MS: '3000',
      BULK_WAIT_MS: '5000',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_CA_FILE: tls.caFile,
      LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'error',
      // Three clients and the drain's polling use one key per account, near the default 600 requests a
      // minute on a fast machine: the fault test is not about the rate (tests/http/rate-limit.test.ts is).
      KEY_RATE_LIMIT_PER_MINUTE: '1000000',
      ...templates.env,
    }
    let databaseUrl: string | undefined
    let proxy: OutageProxy | undefined
    let losing: PgProxy | undefined
    if (postgres) {
      const db = await createPostgresDatabase()
      databaseUrl = db.url
      cleanups.push(db.drop)
      // The instances reach PostgreSQL through two proxies: one loses the COMMIT answers of some charges,
      // outcomes and refunds, the next plays outages. The checks read the database directly.
      const url = new URL(db.url)
      proxy = await startOutageProxy({ host: url.hostname, port: Number(url.port || 5432) })
      cleanups.push(() => proxy!.close())
      const lost = seeded(options.seed ^ 0x10c7)
      losing = await startPgProxy({ host: '127.0.0.1', port: proxy.port }, LOST_COMMIT_MARKERS, {
        cutTimes: LOST_COMMITS,
        chance: () => lost.chance(LOST_COMMIT_CHANCE),
      })
      cleanups.push(() => losing!.close())
      url.hostname = '127.0.0.1'
      url.port = String(losing.port)
      env.DATABASE_URL = url.toString()
    }
    const cluster = await startCluster(postgres ? 2 : 1, env)
    cleanups.push(() => cluster.stop())
    const senderIndex = new Map<number, number>()
    const customers = {
      write: (index: number, phone: string, body: string, repeat = 0) => fake.customerWrites(cluster.url, index, phone, body, repeat),
    }
    const client = createClient(cluster.url, violations, customers, senderIndex, seeded(options.seed ^ 0xc057))

    // The two senders, each with its own Twilio account, number and pace.
    const senders: (SenderRef & { sid: string; token: string })[] = []
    for (const [i, a] of twilioAccounts.entries()) {
      const made = await client.call('POST', '/admin/v1/senders', {
        provider: 'twilio',
        name: `chaos sender ${i}`,
        number: a.number,
        credentials: { account_sid: a.sid, auth_token: a.token },
        rate_per_second: PACE_PER_SECOND,
        // Messages go to the customers who wrote in, many to each: Twilio's 6 s between two to one
        // recipient would queue most of them (tests/senders/pace.test.ts is about that gap).
        recipient_gap_ms: RECIPIENT_GAP_MS,
        // The operator holds these credentials and trusts their late failures (a Twilio sender keeps them
        // charged by default): a forged failure would then be a refund, which the checks look for.
        late_failures: 'refund',
      })
      if (made?.status !== 201) throw new Error(`sender creation failed: ${JSON.stringify(made)}`)
      senders.push({ id: made.body.data.id, number: a.number, sid: a.sid, token: a.token })
      senderIndex.set(made.body.data.id, i)
    }

    // Accounts: a generous one, a middling one, a tight one (402s, campaigns that pause); the last has no webhook.
    const accounts: Account[] = []
    for (let i = 0; i < ACCOUNTS; i++) {
      const made = await client.call('POST', '/admin/v1/accounts', { name: `chaos ${i}`, balance: [5_000, 800, 150][i] })
      const key = await client.call('POST', `/admin/v1/accounts/${made!.body.data.id}/keys`, { label: 'chaos' })
      const own = ACCOUNT_SENDERS[i]!.map((s) => senders[s]!)
      for (const [j, sender] of own.entries()) {
        const assigned = await client.call('PUT', `/admin/v1/accounts/${made!.body.data.id}/senders/${sender.id}`, { default: j === 0 })
        if (assigned?.status !== 200) throw new Error(`sender assignment failed: ${JSON.stringify(assigned)}`)
      }
      const account: Account = {
        id: made!.body.data.id,
        key: key!.body.data.key,
        keyId: key!.body.data.id,
        webhook: i < ACCOUNTS - 1,
        senders: own.map(({ id, number }) => ({ id, number })),
      }
      if (account.webhook) {
        // The first account also chooses the events of what customers write (issue 19).
        const events = i === 0 ? { events: ['message.status', 'message.received', 'contact.opted_out', 'contact.opted_in'] } : {}
        const hook = await client.call('POST', '/api/v1/webhook', { url: receiver.url('127.0.0.1', `/hook/${i}`), ...events }, account.key)
        if (hook?.status !== 200) throw new Error(`webhook registration failed: ${JSON.stringify(hook)}`)
      }
      accounts.push(account)
    }
    await client.call('PUT', '/admin/v1/price', { cost_per_message: 2 })
    // The Meta sender, its templates synced, and an account that sends them (the last of `accounts`).
    await templates.setup(client, accounts, cluster.url)
    // Two more Meta senders, two business portfolios, each with an account whose customers hide their phones (user-ids.ts).
    await userIds.setup(client, accounts, cluster.url)
    log(`set up after ${((Date.now() - started) / 1000).toFixed(1)} s`)

    // The fault phase: clients work through the plan while the kill loop crashes instances.
    const random = seeded(options.seed)
    const ops = planOps(random, ACCOUNTS, 100_000)
    const crashes = seeded(options.seed ^ 0x5eed)
    let nextOp = 0
    // The plan's first operation, a campaign, is set up before any crash or outage can abandon it
    // halfway (a slow machine's setup outlasted the first kill, and the run handed no campaign over).
    await client.run(ops[nextOp++]!, accounts)
    const until = Date.now() + options.seconds * 1000
    let killerDone = false
    const clients = Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < until || !killerDone || nextOp < MIN_OPERATIONS) {
        await client.run(ops[nextOp++]!, accounts)
        await Bun.sleep(50)
      }
    })
    // Kills only in the first 60% of the phase: what a kill leaves behind (leases, a request's
    // Idempotency-Key) takes up to STALE_AFTER_SECONDS (30 s) to be recovered, and the drain waits for it.
    // At least MIN_KILLS happen whatever the machine's speed (a loaded machine restarts slowly): the
    // phase, clients included, goes on until they have.
    const lastKill = Date.now() + options.seconds * 600
    const killer = (async () => {
      for (;;) {
        const wait = crashes.int(1_500, 4_000)
        if (Date.now() + wait >= lastKill && cluster.kills.length >= MIN_KILLS) break
        await Bun.sleep(wait)
        const instance = crashes.int(0, cluster.size - 1)
        log(`kill -9 instance ${instance} after ${((Date.now() - started) / 1000).toFixed(1)} s`)
        await cluster.crash(instance, crashes.int(200, 1_500))
      }
      killerDone = true
    })()
    // PostgreSQL outages of several seconds (every connection cut, new ones refused), in the same
    // first 60% of the phase: live holders must keep their messages through them.
    const outages = seeded(options.seed ^ 0xd0d0)
    let outageCount = 0
    const outager = (async () => {
      if (!proxy) return
      for (let i = 0; i < OUTAGES; i++) {
        await Bun.sleep(outages.int(2_000, (options.seconds * 600) / OUTAGES))
        const ms = outages.int(2_000, 5_000)
        log(`database outage of ${(ms / 1000).toFixed(1)} s after ${((Date.now() - started) / 1000).toFixed(1)} s (at ${Date.now()})`)
        await proxy.outage(ms)
        outageCount++
      }
    })()
    const templateWork = templates.run(client, accounts, until, started + RUN_BUDGET_MS - 60_000)
    const userIdWork = userIds.run(client, accounts, until, started + RUN_BUDGET_MS - 60_000)
    await Promise.all([...clients, killer, outager, templateWork, userIdWork])
    log(`fault phase over: ${nextOp} operations, ${cluster.kills.length} kills`)
    // Meta's last word: the campaigns' template approved, the webhooks held back posted (stale after newer).
    await templates.finish(started + RUN_BUDGET_MS - 60_000)
    log(`template webhooks all posted after ${((Date.now() - started) / 1000).toFixed(1)} s`)

    // The drain: every idempotent request repeated until it has its final answer, then quiet.
    const idempotent = client.requests.filter((r) => r.idempotencyKey)
    const drainUntil = Math.min(Date.now() + DRAIN_LIMIT_MS, started + RUN_BUDGET_MS)
    let repeated = 0
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let request = idempotent[repeated++]; request; request = idempotent[repeated++]) {
          do {
            await client.issue(request, accounts)
            if (isFinal(request.answers.at(-1)!)) break
            await Bun.sleep(500)
          } while (Date.now() < drainUntil)
          const last = request.answers.at(-1)!
          if (!isFinal(request.answers.at(-1)!)) {
            // What it last answered names the way to look (a 409's words say which wait it is in).
            const said = last === null ? 'no answer' : `${last.status} ${JSON.stringify(last.body).slice(0, 200)}`
            violations.push(`Idempotency-Key ${request.idempotencyKey} never got a final answer (last: ${said})`)
          }
        }
      }),
    )
    log(`every Idempotency-Key answered after ${((Date.now() - started) / 1000).toFixed(1)} s`)
    const busy = await waitForQuiet(client, accounts, fake, receiver, drainUntil, (reason) =>
      log(`draining after ${((Date.now() - started) / 1000).toFixed(1)} s: ${reason}`),
    )
    if (busy) violations.push(`not quiet ${((drainUntil - started) / 1000).toFixed(0)} s into the run: ${busy}`)
    log(`drained after ${((Date.now() - started) / 1000).toFixed(1)} s`)
    await templates.stop()
    await cluster.stop()
    violations.push(...cluster.exits())
    violations.push(...fake.problems)

    const db = await openDatabase({ databaseUrl, dataDir })
    try {
      const checked = await checkInvariants({
        sql: db.sql,
        accounts,
        requests: client.requests,
        campaigns: client.campaigns,
        receipts: fake.receipts,
        callbacks: fake.callbacks,
        leaseMs: LEASE_SECONDS * 1000,
        kills: cluster.kills,
        webhooks: receiver.requests,
        senders,
        senderOf: client.senderOf,
        inbound: fake.inbound,
        forgedStatuses: fake.forgedStatuses,
        forgedInbound: fake.forgedInbound,
        templates: templates.evidence(),
        userIds: userIds.evidence(),
      })
      violations.push(...checked.violations)
      // The service never meets an error it did not expect: each such log line (its kind, where it was
      // thrown, the request's path) is a finding of its own, named in the failure.
      const output = cluster.output()
      for (const line of output.split('\n').filter((l) => l.includes('unhandled error'))) violations.push(`service logged: ${line.trim()}`)
      if (violations.length > 0) log(`service output (tail):\n${output.slice(-Number(process.env.CHAOS_LOG_TAIL ?? 4000))}`)
      return {
        seed: options.seed,
        mode: postgres ? 'postgres' : 'embedded',
        violations,
        stats: {
          operations: nextOp,
          ...Object.fromEntries(
            senders.flatMap((s, i) => [
              [`sender ${s.id}: fake rate per second`, twilioAccounts[i]!.rate.perSecond],
              [`sender ${s.id}: fake rate in busy spells`, twilioAccounts[i]!.rate.busyPerSecond],
            ]),
          ),
          ...checked.stats,
          'forged status callbacks refused': fake.forgedRefused(),
          'own-secret status forgeries refused': fake.forgedStatuses.filter((f) => f.refused).length,
          'own-secret inbound forgeries refused': fake.forgedInbound.filter((f) => f.refused).length,
          'lost COMMIT answers': losing?.cuts() ?? 0,
          'database outages': outageCount,
        },
        senders: senders.map((s) => s.id),
        kills: cluster.kills.length,
        ms: Date.now() - started,
      }
    } finally {
      await db.close()
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup()
  }
}

/**
 * Waits, through the API, until nothing is left to happen: no message charged but not yet handed
 * over or refunded (ledger charges vs. listed messages), no campaign sending, no webhook delivery
 * pending, no status callback in flight, and no new hand-off or delivery for two seconds.
 */
async function waitForQuiet(
  client: ReturnType<typeof createClient>,
  accounts: Account[],
  fake: ReturnType<typeof startFakeTwilio>,
  receiver: ReturnType<typeof startReceiver>,
  deadline: number,
  /** Told each new reason for waiting, as it comes. */
  onReason: (reason: string) => void,
): Promise<string | null> {
  /** What a request that should have answered 200 got instead: its status and code, or no answer. */
  const notAnswered = (path: string, answer: { status: number; body: any } | null) =>
    `the API does not answer: GET ${path} ${answer ? `${answer.status} ${answer.body?.code ?? ''}` : 'no answer (network error or 90 s)'}`
  let refused = ''
  const all = async (path: string, key?: string) => {
    const items: any[] = []
    for (let offset = 0; ; offset += 200) {
      const page = await client.call('GET', `${path}${path.includes('?') ? '&' : '?'}limit=200&offset=${offset}`, undefined, key)
      if (page?.status !== 200) {
        refused = notAnswered(path, page)
        return null
      }
      items.push(...page.body.data.items)
      if (items.length >= page.body.data.total) return items
    }
  }
  /** What is still going on, or null. */
  const busy = async (): Promise<string | null> => {
    if (fake.pending() > 0) return `${fake.pending()} status callbacks in flight`
    // Quarantined messages are settled for the drain: charged, never listed, left for an operator.
    const quarantine = await all('/admin/v1/quarantine')
    if (!quarantine) return refused
    for (const a of accounts) {
      const ledger = await all(`/admin/v1/accounts/${a.id}/ledger`)
      if (!ledger) return refused
      const listed = await client.call('GET', '/api/v1/messages?limit=1', undefined, a.key)
      if (listed?.status !== 200) return notAnswered('/api/v1/messages', listed)
      const charged = ledger.filter((r) => r.kind === 'charge').length
      const settled = listed.body.data.total + quarantine.filter((q) => q.account_id === a.id).length
      if (charged !== settled) return `account ${a.id}: ${charged - settled} messages charged, not yet handed over`
      // Messages answered `queued` are listed while they wait (status queued): not settled yet.
      const queued = await client.call('GET', '/api/v1/messages?status=queued&limit=1', undefined, a.key)
      if (queued?.status !== 200) return notAnswered('/api/v1/messages?status=queued', queued)
      if (queued.body.data.total > 0) return `account ${a.id}: ${queued.body.data.total} messages answered queued, not yet settled`
      if (!a.webhook) continue
      const pending = await client.call('GET', `/admin/v1/keys/${a.keyId}/deliveries?status=pending&limit=1`)
      if (pending?.status !== 200) return notAnswered(`/admin/v1/keys/${a.keyId}/deliveries`, pending)
      if (pending.body.data.total > 0) return `account ${a.id}: ${pending.body.data.total} webhook deliveries pending`
    }
    for (const c of client.campaigns) {
      const detail = await client.call('GET', `/admin/v1/campaigns/${c.id}`)
      if (detail?.body?.data?.campaign?.status === 'sending') return `campaign ${c.id} sending`
    }
    return null
  }
  let last = ''
  let stableSince = Date.now()
  let reason: string | null = 'not checked'
  // The drain's end, as a promise (unref'd: it keeps no process alive once the run is over).
  const drainEnd = new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now())).unref())
  while (Date.now() < deadline) {
    const before: string | null = reason
    // Each look asks the API (up to 90 s a call): one that stopped answering must not keep the drain
    // past its end, so that the run reports what it waited for (and the service's log) instead of
    // meeting the test runner's timeout.
    reason = await Promise.race([busy(), drainEnd.then((): string => `${before ?? 'nothing'}, then the API stopped answering`)])
    if (reason !== null && reason !== before) onReason(reason)
    const now = `${fake.receipts.length}/${receiver.requests.length}`
    if (now !== last) {
      last = now
      stableSince = Date.now()
    }
    if (reason === null && Date.now() - stableSince >= 2_000) return null
    await Bun.sleep(500)
  }
  return reason ?? 'hand-offs or deliveries still arriving'
}
