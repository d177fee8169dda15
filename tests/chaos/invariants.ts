// The invariants the chaos runner checks at the end, read from the database (with every instance
// stopped), the fake provider's receipts, the webhook receiver's log and the client's answers.
// Each broken one is a line in `violations`; `stats` says how much of each thing the run had.

import type { Sql } from '../../src/db/client'
import type { Received } from '../helpers/receiver'
import type { Callback, ForgedInbound, ForgedStatus, Inbound, Receipt } from './fake-twilio'
import { FORGED_ERROR_CODE, tagOf, THROTTLE_CODES } from './fake-twilio'
import { TEMPLATE_PRICES, type TemplateEvidence } from './templates'
import type { UserIdEvidence } from './user-ids'
import { e164, isFinal, type Account, type Campaign, type Request } from './workload'

type MessageRow = {
  id: number
  account_id: number
  api_key_id: number | null
  body: string
  status: string
  cost: number
  message_sid: string | null
  quarantined: boolean
  recoveries: number
  refunded: boolean
  refund_late_failure: boolean
  /** Its sender refunds late failures (senders.late_failures = 'refund'), as the run's senders do. */
  sender_refunds: boolean
  error_code: number | null
  announce_outcome: boolean
  sender_id: number | null
  /** Its hand-off lease and validity, as ISO text (a message still queued after the drain names them). */
  handoff_until: string | null
  valid_until: string | null
  /** Failed at hand-off because its recipient opted out after its charge (error_message RECIPIENT_OPTED_OUT: ...). */
  stopped: boolean
  /** Its account recorded an opt-out of its phone before it failed (what alone explains `stopped`). */
  stop_before: boolean
}
type LedgerRow = {
  id: number
  account_id: number
  kind: string
  amount: number
  balance_after: number
  message_id: number | null
  note: string | null
}
type EventRow = {
  id: number
  webhook_id: string
  message_id: number
  status: string
  payload: string
  attempts: number
  next: string | null
  lease: string | null
  last_error: string | null
}

export type Evidence = {
  sql: Sql
  accounts: Account[]
  requests: Request[]
  campaigns: Campaign[]
  receipts: Receipt[]
  /** The status callbacks the service answered, per SID. */
  callbacks: Callback[]
  /** The hand-off lease (HANDOFF_LEASE_SECONDS), in ms. */
  leaseMs: number
  /** Each SIGKILL: sent at `at`, its process gone at `until` (what it had written may arrive in between). */
  kills: { at: number; until: number }[]
  webhooks: Received[]
  /** The stored senders: their ids and the Twilio account (SID, token, number) each sends with. */
  senders: { id: number; sid: string; token: string; number: string }[]
  /** The sender each tag's message was asked to go through (its `from`, or its account's default). */
  senderOf: Map<string, number>
  /** What customers wrote, as the fake posted it. */
  inbound: Inbound[]
  /** Status reports forged with another account's own credentials, for messages of a victim sender. */
  forgedStatuses: ForgedStatus[]
  /** Messages forged in customers' names with another account's own credentials. */
  forgedInbound: ForgedInbound[]
  /** The WhatsApp templates of the Meta sender and Meta's changes to them (templates.ts; rule 7). */
  templates?: TemplateEvidence
  /** The customers known only by a user id, on two more Meta senders, and what the fake Graph API got for them (user-ids.ts; rule 9). */
  userIds?: UserIdEvidence
}

const FORWARD: Record<string, number> = { sent: 0, delivered: 1, read: 2, failed: 3 }
/** The message status each of the fake's reports means. */
const STATUS_OF_REPORT: Record<string, string> = { delivered: 'delivered', read: 'read', undelivered: 'failed' }

export async function checkInvariants(e: Evidence): Promise<{ violations: string[]; stats: Record<string, number> }> {
  const violations: string[] = []
  const fail = (line: string) => violations.push(line)
  const stats: Record<string, number> = {}
  const count = (name: string, n = 1) => (stats[name] = (stats[name] ?? 0) + n)

  const messages = await e.sql<MessageRow[]>`
    select m.id, m.account_id, m.api_key_id, m.body, m.status, m.cost, m.message_sid, m.quarantined_at is not null as quarantined,
           m.handoff_recoveries as recoveries, m.refunded_at is not null as refunded, m.refund_late_failure, m.error_code,
           m.announce_outcome, m.sender_id, m.handoff_until::text, m.valid_until::text,
           m.sender_id is null or exists (select 1 from senders s where s.id = m.sender_id and s.late_failures = 'refund') as sender_refunds,
           coalesce(m.error_message like 'RECIPIENT_OPTED_OUT%', false) as stopped,
           exists (select 1 from opt_out_events o where o.account_id = m.account_id and o.phone = m.phone and o.opted_out
                   and o.created_at <= coalesce(m.failed_at, now())) as stop_before
    from messages m order by m.id`
  const ledger = await e.sql<LedgerRow[]>`select id, account_id, kind, amount, balance_after, message_id, note from ledger order by id`
  const accounts = await e.sql<{ id: number; balance: number }[]>`select id, balance from accounts order by id`
  const events = await e.sql<EventRow[]>`
    select id, webhook_id, message_id, status, payload::text as payload, attempts, last_error,
           to_char(next_attempt_at - now(), 'HH24:MI:SS') as next, to_char(lease_until - now(), 'HH24:MI:SS') as lease
    from webhook_events order by id`

  // 1. Money: every balance is the sum of its ledger, every running balance follows from the one before, none negative.
  for (const account of accounts) {
    const rows = ledger.filter((r) => r.account_id === account.id)
    let running = 0
    for (const row of rows) {
      running += row.amount
      if (row.balance_after !== running)
        fail(`account ${account.id}: ledger row ${row.id} says balance_after ${row.balance_after}, its rows sum to ${running}`)
      if (row.balance_after < 0) fail(`account ${account.id}: ledger row ${row.id} leaves the balance negative (${row.balance_after})`)
    }
    if (account.balance !== running) fail(`account ${account.id}: balance ${account.balance}, ledger sum ${running}`)
    count('ledger rows', rows.length)
  }

  // 2. Each message charged once, and handed over or refunded exactly once; none left queued. A failed
  //    message is refunded exactly what it was charged, once: at hand-off (no SID), or when the provider
  //    reported it failed after accepting it, unless it was charged under a price that keeps late
  //    failures charged or its sender keeps them (issue 28). (Until issue 17, late failures stayed charged.)
  const chargesOf = new Map<number, LedgerRow[]>()
  const refundsOf = new Map<number, LedgerRow[]>()
  const settlementsOf = new Map<number, LedgerRow[]>()
  for (const row of ledger) {
    if (row.message_id === null) continue
    const into = row.kind === 'charge' ? chargesOf : row.kind === 'refund' ? refundsOf : row.kind === 'settlement' ? settlementsOf : null
    if (!into) continue
    into.set(row.message_id, [...(into.get(row.message_id) ?? []), row])
  }
  const byTag = new Map<string, MessageRow>()
  for (const m of messages) {
    const tag = tagOf(m.body)
    if (byTag.has(tag)) fail(`tag ${tag}: two messages (${byTag.get(tag)!.id} and ${m.id}): a request was charged twice`)
    byTag.set(tag, m)
    const charges = chargesOf.get(m.id) ?? []
    const refunds = refundsOf.get(m.id) ?? []
    // Its cost is what it was charged, moved by its settlement if Meta's pricing settled it (rule 8).
    const settled = (settlementsOf.get(m.id) ?? []).reduce((sum, r) => sum + r.amount, 0)
    if (charges.length !== 1 || charges[0]!.amount + settled !== -m.cost)
      fail(`message ${m.id} [${tag}]: charges ${JSON.stringify(charges.map((c) => c.amount))}, settled ${settled}, cost ${m.cost}`)
    const lateFailure = m.status === 'failed' && m.message_sid !== null
    const refundDue = m.status === 'failed' && (m.message_sid === null || (m.refund_late_failure && m.sender_refunds))
    if (
      refundDue !== (refunds.length === 1) ||
      refunds.length > 1 ||
      (refunds[0] && refunds[0].amount !== m.cost) ||
      m.refunded !== refunds.length > 0
    )
      fail(
        `message ${m.id} [${tag}]: status ${m.status}, sid ${m.message_sid}, refunded ${m.refunded}, ` +
          `late failures refunded ${m.refund_late_failure}, refunds ${JSON.stringify(refunds.map((r) => r.amount))}`,
      )
    if (lateFailure) count(m.refund_late_failure && m.sender_refunds ? 'late failures refunded' : 'late failures kept charged')
    if (m.status === 'queued') {
      if (m.quarantined && m.recoveries >= 3) count('quarantined')
      else
        fail(
          `message ${m.id} [${tag}] is still queued after the drain (recovered ${m.recoveries} times, ` +
            `lease until ${m.handoff_until}, valid until ${m.valid_until}, answered queued ${m.announce_outcome})`,
        )
    }
    count(`messages ${m.status}`)
  }

  // 3. The provider saw each message at most once, but for a crash between two hand-offs and for
  //    retries after its throttling answers; it accepted each at most once (but across a crash); what
  //    it accepted is what the database says, and nothing it accepted in time went out free.
  const receiptsOf = new Map<string, Receipt[]>()
  for (const r of e.receipts) receiptsOf.set(r.tag, [...(receiptsOf.get(r.tag) ?? []), r])
  const crashBetween = (from: number, to: number) => e.kills.some((k) => k.until >= from && k.at <= to)
  for (const [tag, receipts] of receiptsOf) {
    const m = byTag.get(tag)
    if (!m) {
      fail(`the provider received [${tag}], which the database does not hold`)
      continue
    }
    for (let i = 1; i < receipts.length; i++) {
      if (receipts[i - 1]!.answer === 'throttled') count('retries after a throttle')
      else if (crashBetween(receipts[i - 1]!.at, receipts[i]!.at)) count('second hand-offs after a crash')
      else
        fail(
          `[${tag}] handed over ${receipts.length} times; no throttle or crash between attempts ${i} and ${i + 1} ` +
            `(message ${m.id}: ${m.status}, recovered ${m.recoveries} times; kills at ${JSON.stringify(e.kills.map((k) => k.at))}; ` +
            `attempts ${JSON.stringify(receipts.map((r) => ({ at: r.at, answeredAt: r.answeredAt, fault: r.fault, answer: r.answer, sid: r.sid })))})`,
        )
    }
    const accepted = receipts.filter((r) => r.answer === 'accepted')
    for (let i = 1; i < accepted.length; i++)
      if (!crashBetween(accepted[i - 1]!.at, accepted[i]!.at)) fail(`[${tag}] accepted twice by the provider with no crash between`)
    if (m.message_sid !== null && !accepted.some((r) => r.sid === m.message_sid))
      fail(`message ${m.id} [${tag}] has SID ${m.message_sid}, which the provider never gave it`)
    if (m.message_sid === null && accepted.length > 0) {
      // Accepted, yet refunded: only a crash after the acceptance (before its recording) explains it.
      if (crashBetween(accepted[0]!.at, Number.MAX_SAFE_INTEGER)) count('deliveries refunded after a crash')
      else fail(`message ${m.id} [${tag}]: the provider accepted it, yet it was refunded (a free delivery)`)
    }
    if (receipts.some((r) => r.answer === 'late')) count('hand-offs timed out (refunded)')
    count('throttling answers', receipts.filter((r) => r.answer === 'throttled').length)
    // A slow answer past the lease: its holder lived (no crash meanwhile), so nobody else may have handed it over.
    for (const r of accepted) {
      if (r.answeredAt !== undefined && r.answeredAt - r.at > e.leaseMs && !crashBetween(r.at, r.answeredAt))
        count('slow answers past the lease')
    }
    // Throttled last means still to be tried again (the drain ends only when nothing is left to try),
    // unless its recipient's STOP stopped it before the next try (checked below).
    if (receipts.at(-1)!.answer === 'throttled' && !m.quarantined && !m.stopped)
      fail(`message ${m.id} [${tag}]: its last hand-off was throttled, yet it is ${m.status} (error ${m.error_code})`)
  }
  // The Meta senders' messages went to the fake Graph API, not the fake Twilio: rules 7 and 9 hold them to its requests.
  const metaSenders = new Set([e.templates?.senderId, ...(e.userIds?.sides ?? []).map((s) => s.senderId)])
  const viaMeta = (m: MessageRow) => m.sender_id !== null && metaSenders.has(m.sender_id)
  for (const m of messages) {
    const tag = tagOf(m.body)
    if (viaMeta(m)) continue
    if (m.message_sid !== null && !receiptsOf.has(tag)) fail(`message ${m.id} is sent but the provider never received it`)
    // A STOP that came after its charge stops what was not handed over yet: failed, refunded, never sent.
    if (m.stopped) {
      if (m.status !== 'failed' || !m.refunded || m.message_sid !== null || !m.stop_before)
        fail(
          `message ${m.id} [${tag}] says its recipient opted out (${m.status}, refunded ${m.refunded}, opt-out before it ${m.stop_before})`,
        )
      else count('messages stopped at hand-off by a STOP, refunded')
      continue
    }
    if (m.status === 'failed' && m.message_sid === null && !receiptsOf.has(tag))
      fail(`message ${m.id} [${tag}] failed and was refunded, yet the provider never received it`)
    // The validity is 4 h: a throttle is never a failure within the run.
    if (m.status === 'failed' && m.message_sid === null && THROTTLE_CODES.includes(m.error_code ?? 0))
      fail(`message ${m.id} [${tag}] failed for throttling (${m.error_code}) within its validity`)
  }

  // 3b. Every accepted message ends where the provider's reports took it: the furthest status of the
  //     reports the service answered for its SID (none: sent); a late failure refunded as rule 2 says.
  const reportsOf = new Map<string, string[]>()
  for (const c of e.callbacks) reportsOf.set(c.sid, [...(reportsOf.get(c.sid) ?? []), c.status])
  for (const m of messages) {
    if (m.message_sid === null || viaMeta(m)) continue // Meta's reports: rule 8
    let expected = 'sent'
    for (const report of reportsOf.get(m.message_sid) ?? []) {
      const status = STATUS_OF_REPORT[report]
      if (status && FORWARD[status]! > FORWARD[expected]!) expected = status
    }
    if (m.status !== expected) fail(`message ${m.id} [${tagOf(m.body)}]: ${m.status}, the provider's reports for it say ${expected}`)
  }

  // 3c. Per sender: each message records the sender its request named (or its account's default), every
  //     request the provider got for it came with that sender's own credentials (the account SID in the
  //     path and Basic auth, its token) and its number as From, and every status callback applied to it
  //     named that sender's account. Each sender's hand-offs and throttles are counted apart.
  const senderById = new Map(e.senders.map((s) => [s.id, s]))
  const callbackAccounts = new Map<string, string[]>()
  for (const c of e.callbacks) callbackAccounts.set(c.sid, [...(callbackAccounts.get(c.sid) ?? []), c.accountSid])
  const campaignSenders = await e.sql<{ id: number; sender_id: number | null }[]>`select id, sender_id from campaigns order by id`
  for (const c of e.campaigns) {
    const row = campaignSenders.find((r) => r.id === c.id)
    if (row && row.sender_id !== c.sender) fail(`campaign ${c.id} records sender ${row.sender_id}, its request named ${c.sender}`)
  }
  for (const m of messages) {
    const tag = tagOf(m.body)
    const asked = e.senderOf.get(tag)
    if (asked === undefined) fail(`message ${m.id} [${tag}]: no request named its sender`)
    else if (m.sender_id !== asked) fail(`message ${m.id} [${tag}] records sender ${m.sender_id}, its request named ${asked}`)
    if (viaMeta(m)) continue
    const sender = m.sender_id === null ? undefined : senderById.get(m.sender_id)
    if (!sender) {
      fail(`message ${m.id} [${tag}] has sender ${m.sender_id}, not one of the run's`)
      continue
    }
    const name = `sender ${sender.id}`
    count(`${name}: messages`)
    if (m.message_sid !== null) count(`${name}: messages accepted`)
    for (const r of receiptsOf.get(tag) ?? []) {
      count(`${name}: hand-offs`)
      if (r.answer === 'throttled') count(`${name}: throttling answers`)
      if (r.pathSid !== sender.sid || r.authSid !== sender.sid || r.authToken !== sender.token)
        fail(
          `message ${m.id} [${tag}] of ${name} (${sender.sid}) was handed over to account ${r.pathSid} with the credentials of ` +
            `${r.authSid}${r.authToken === sender.token ? '' : ' and another token'}`,
        )
      if (r.from !== `whatsapp:${sender.number}`)
        fail(`message ${m.id} [${tag}] of ${name} went From ${r.from}, not whatsapp:${sender.number}`)
    }
    for (const accountSid of (m.message_sid !== null && callbackAccounts.get(m.message_sid)) || [])
      if (accountSid !== sender.sid)
        fail(`message ${m.id} [${tag}] of ${name}: a status callback naming account ${accountSid} was applied to it`)
  }

  // 3d. Status reports forged with another account's own credentials (its AccountSid and token: the
  //     signature verifies) changed nothing: no message carries their error code, none is failed or
  //     refunded as a late failure unless a legit report said it failed, none is read unless a legit
  //     report said so. (Rule 3b holds every message to its legit reports as a whole; these name the forgery.)
  const bySid = new Map(messages.filter((m) => m.message_sid !== null).map((m) => [m.message_sid!, m]))
  for (const m of messages)
    if (m.error_code === FORGED_ERROR_CODE)
      fail(`message ${m.id} [${tagOf(m.body)}] carries error ${FORGED_ERROR_CODE}, which only forged reports use`)
  const forgedNotes = ledger.filter((r) => r.kind === 'refund' && r.note?.includes(`(error ${FORGED_ERROR_CODE})`))
  for (const r of forgedNotes) fail(`ledger row ${r.id} refunds message ${r.message_id} for a forged failure (${r.note})`)
  for (const f of e.forgedStatuses) {
    count('own-secret status forgeries')
    const m = bySid.get(f.sid)
    if (!m) continue // its SID was never recorded (a crash after the acceptance): nothing to change
    const legit = reportsOf.get(f.sid) ?? []
    const what = `message ${m.id} [${f.tag}] of ${f.victim}`
    if (f.status === 'read') {
      if (m.status === 'read' && !legit.includes('read'))
        fail(`${what} is read, yet only a report forged with the own credentials of ${f.signer} said so`)
      continue
    }
    if (legit.includes('undelivered')) continue
    if (m.status === 'failed') fail(`${what} is failed, yet only a report forged with the own credentials of ${f.signer} said so`)
    if (refundsOf.has(m.id))
      fail(`${what} was refunded after it was accepted, yet only a report forged with the own credentials of ${f.signer} said it failed`)
  }

  // 4. Every accepted status change made exactly one event, in a chain from `sent`; every event reached the receiver.
  const webhookKeys = new Set(e.accounts.filter((a) => a.webhook).map((a) => a.keyId))
  const eventsOf = new Map<number, EventRow[]>()
  for (const ev of events) eventsOf.set(ev.message_id, [...(eventsOf.get(ev.message_id) ?? []), ev])
  const received = new Map<string, Received[]>()
  for (const r of e.webhooks) {
    const id = r.headers['webhook-id'] ?? ''
    received.set(id, [...(received.get(id) ?? []), r])
  }
  for (const m of messages) {
    const chain = (eventsOf.get(m.id) ?? []).map((ev) => JSON.parse(ev.payload).data as { status: string; previous_status: string })
    const hooked = m.api_key_id !== null && webhookKeys.has(m.api_key_id)
    // A message answered `queued` has its hand-off outcome announced first: queued → sent, or queued → failed (refunded).
    const announced = hooked && m.announce_outcome
    const moved = m.message_sid !== null && m.status !== 'sent'
    if (!hooked || (!moved && !announced)) {
      if (chain.length > 0) fail(`message ${m.id}: ${chain.length} events, expected none`)
      continue
    }
    if (announced) {
      const first = chain.shift()
      const outcome = m.message_sid !== null ? 'sent' : 'failed'
      if (first?.previous_status !== 'queued' || first.status !== outcome)
        fail(
          `message ${m.id} was answered queued: its first event is ${first?.previous_status} → ${first?.status}, not queued → ${outcome}`,
        )
      count('outcomes announced after a queued answer')
      if (m.message_sid === null) continue
    }
    let previous = 'sent'
    for (const step of chain) {
      if (step.previous_status !== previous || FORWARD[step.status]! <= FORWARD[previous]!)
        fail(`message ${m.id}: event ${step.previous_status} → ${step.status} does not follow ${previous}`)
      previous = step.status
    }
    if (previous !== m.status) fail(`message ${m.id}: its events end at ${previous}, the message is ${m.status}`)
    count('events', chain.length)
  }
  for (const ev of events) {
    const arrivals = received.get(ev.webhook_id) ?? []
    if (ev.status !== 'delivered')
      fail(
        `event ${ev.webhook_id} of message ${ev.message_id}: ${ev.status} after ${ev.attempts} attempts (next ${ev.next}, lease ${ev.lease}, last error ${ev.last_error})`,
      )
    if (arrivals.length === 0) fail(`event ${ev.webhook_id} never reached the receiver`)
    const expected = JSON.stringify(JSON.parse(ev.payload))
    for (const a of arrivals)
      if (JSON.stringify(JSON.parse(a.body)) !== expected) fail(`event ${ev.webhook_id}: a delivery's body differs from the event`)
    count('webhook deliveries', arrivals.length)
  }
  const known = new Set(events.map((ev) => ev.webhook_id))
  for (const id of received.keys()) if (!known.has(id)) fail(`the receiver got webhook-id ${id}, which is no event`)

  // 5. Every final answer agrees with the database.
  for (const request of e.requests) {
    count(`${request.kind} requests`)
    if (request.idempotencyKey && request.answers.length > 1) count('idempotent repeats', request.answers.length - 1)
    for (const answer of request.answers) if (!isFinal(answer)) count('answers lost or in progress')
    const answer = request.reference
    if (!answer) continue
    if (answer.status === 429) count('sends refused before charging (429)')
    const results: { status: string; message_id?: string; id?: number }[] =
      request.kind === 'send'
        ? [
            answer.status === 200
              ? { status: 'sent', message_id: answer.body.data.message_id }
              : answer.status === 202
                ? answer.body.data
                : { status: 'failed' },
          ]
        : answer.status === 200
          ? answer.body.data.results
          : request.tags.map(() => ({ status: 'failed' }))
    request.tags.forEach((tag, i) => {
      const m = tag === null ? undefined : byTag.get(tag)
      const result = results[i]!
      if (result.status === 'queued') {
        // Answered queued: charged, its outcome announced later (rule 4), whatever it was.
        count('answered queued')
        if (!m || m.id !== result.id || !m.announce_outcome)
          fail(`[${tag}] answered queued as message ${result.id}; the database has ${m?.id}, announced ${m?.announce_outcome}`)
      } else if (result.status === 'sent') {
        if (!m || m.message_sid !== result.message_id)
          fail(`[${tag}] answered sent as ${result.message_id}; the database has ${m?.message_sid}`)
      } else if (m && (answer.status === 200 || answer.status === 502)) {
        if (!(m.status === 'failed' && m.message_sid === null))
          fail(
            `[${tag}] answered ${JSON.stringify(result)}; the database has it ${m.status} with SID ${m.message_sid}, refunds ${refundsOf.get(m.id)?.length ?? 0}`,
          )
      } else if (m && answer.status === 422 && answer.body?.code === 'RECIPIENT_OPTED_OUT' && answer.body?.id === m.id) {
        // Charged, then stopped at hand-off by its recipient's STOP: answered with the refused message's id
        // (whether it was stopped rightly and refunded once is checked with the messages above).
        if (!(m.stopped && m.status === 'failed' && m.message_sid === null))
          fail(`[${tag}] answered 422 RECIPIENT_OPTED_OUT as message ${m.id}; the database has it ${m.status}, stopped ${m.stopped}`)
        count('single sends stopped at hand-off')
      } else if (m) fail(`[${tag}] answered ${answer.status} ${answer.body?.code}, yet the database holds message ${m.id}`)
    })
  }
  for (const c of e.campaigns) {
    const sent = c.tags.filter((t) => byTag.has(t)).length
    count('campaign messages', sent)
  }
  count('provider hand-offs', e.receipts.length)

  await checkCustomers(e, byTag, fail, count)
  if (e.templates) await checkTemplates(e, e.templates, byTag, refundsOf, fail, count)
  if (e.templates) await checkSettlements(e, e.templates, ledger, fail, count)
  if (e.userIds) await checkUserIds(e, e.userIds, byTag, fail, count)
  return { violations, stats }
}

/**
 * 6. What customers wrote: every message stored once (repeat deliveries add nothing), at the sender
 *    written to; and every request made after a customer's message was taken obeys it. A STOP opts
 *    the phone out of the account the service gave the message to: that account's messages to it,
 *    asked for after the STOP was taken and answered before any START to that account was written,
 *    are refused before charging (RECIPIENT_OPTED_OUT). A message through a sender the customer wrote
 *    to before it was asked for is not refused for the window; one through a sender the customer had
 *    not written to when it was answered is refused before charging (WINDOW_CLOSED, or the opt-out
 *    first). A campaign's contacts that had not written to its sender are skipped, uncharged.
 *    Messages forged in customers' names with another account's own credentials stored nothing: no
 *    window opened by one, and every opt-out change is a STOP or START a customer wrote (none a forgery's).
 */
async function checkCustomers(
  e: Evidence,
  byTag: Map<string, MessageRow>,
  fail: (line: string) => void,
  count: (name: string, n?: number) => void,
) {
  const rows = await e.sql<{ sid: string; sender_id: number | null; account_id: number | null; phone: string; text: string | null }[]>`
    select provider_message_id as sid, sender_id, account_id, phone, text from inbound_messages where provider = 'twilio' order by id`
  const stored = new Map<string, (typeof rows)[number][]>()
  for (const r of rows) stored.set(r.sid, [...(stored.get(r.sid) ?? []), r])
  const posted = new Map(e.inbound.map((i) => [i.sid, i]))
  const forged = new Map(e.forgedInbound.map((f) => [f.sid, f]))
  for (const [sid, [row]] of stored) {
    if (posted.has(sid)) continue
    const f = forged.get(sid)
    fail(
      f
        ? `inbound ${sid} from ${f.phone} (${JSON.stringify(f.body)}) to ${f.to}, forged with the own credentials of ${f.signer}, ` +
            `is stored at sender ${row!.sender_id}, account ${row!.account_id}`
        : `inbound ${sid} is stored, yet no customer wrote it`,
    )
  }
  /** Per account id and phone: when its STOPs and STARTs were taken (ackAt) and written (startedAt). */
  const consent = new Map<string, { word: 'STOP' | 'START'; startedAt: number; ackAt: number }[]>()
  for (const i of e.inbound) {
    count('inbound messages written')
    count('inbound repeat deliveries', i.repeats)
    const found = stored.get(i.sid) ?? []
    if (i.ackAt === null) continue // a problem of the fake's already
    if (found.length !== 1) {
      fail(`inbound ${i.sid} from ${i.phone} is stored ${found.length} times`)
      continue
    }
    const row = found[0]!
    const sender = e.senders[i.sender]!
    if (row.sender_id !== sender.id || row.phone !== i.phone)
      fail(`inbound ${i.sid}: stored as from ${row.phone} at sender ${row.sender_id}, written from ${i.phone} to sender ${sender.id}`)
    const word = i.body === 'STOP' || i.body === 'START' ? i.body : null
    if (word && row.account_id !== null) {
      const key = `${row.account_id} ${i.phone}`
      consent.set(key, [...(consent.get(key) ?? []), { word, startedAt: i.startedAt, ackAt: i.ackAt }])
      count(`customers' ${word}s`)
    }
  }
  /** When each customer wrote to each sender (by id): `sender phone` → times written, taken. */
  const wrote = new Map<string, { startedAt: number; ackAt: number | null }[]>()
  for (const i of e.inbound) {
    const key = `${e.senders[i.sender]!.id} ${i.phone}`
    wrote.set(key, [...(wrote.get(key) ?? []), i])
  }

  // Forged messages opened no window: the window of (sender, phone) is its inbound messages, so a phone
  // that never wrote to the number a forgery named has none there (nobody writes to the deployment's number).
  for (const f of e.forgedInbound) {
    count('own-secret inbound forgeries')
    const sender = e.senders.find((s) => s.number === f.to)
    if (sender && wrote.has(`${sender.id} ${f.phone}`)) continue // its window was opened by the customer
    count("forged customers' windows")
    if (rows.some((r) => r.phone === f.phone && r.sender_id === (sender?.id ?? null)))
      fail(
        `the window of ${f.phone} with ${sender ? `sender ${sender.id}` : `the deployment's number ${f.to}`} is open, ` +
          `yet only a message forged with the own credentials of ${f.signer} was written there`,
      )
  }
  // Every opt-out change is a customer's own STOP or START (nothing else opts out in the run): the
  // inbound message it names is one a customer wrote with that word, from that phone, to that account.
  const changesOf = await e.sql<
    {
      id: number
      account_id: number
      phone: string
      opted_out: boolean
      source: string
      sid: string | null
      inbound_account: number | null
    }[]
  >`
    select o.id, o.account_id, o.phone, o.opted_out, o.source, i.provider_message_id as sid, i.account_id as inbound_account
    from opt_out_events o left join inbound_messages i on i.id = o.inbound_message_id order by o.id`
  // The user-id accounts' changes are Meta's customers' (rule 9 holds them to what those wrote).
  const userIdAccounts = new Set((e.userIds?.sides ?? []).map((s) => e.accounts[s.account]!.id))
  for (const c of changesOf) {
    if (userIdAccounts.has(Number(c.account_id))) continue
    const word = c.opted_out ? 'STOP' : 'START'
    const written = c.sid === null ? undefined : posted.get(c.sid)
    const f = c.sid === null ? undefined : forged.get(c.sid)
    if (!written || written.body !== word || written.phone !== c.phone || Number(c.inbound_account) !== Number(c.account_id))
      fail(
        `opt-out change ${c.id} (account ${c.account_id}, ${c.phone}, ${word}, source ${c.source}) is not a ${word} a customer wrote` +
          (f ? `: a message forged with the own credentials of ${f.signer}` : c.sid ? ` (inbound ${c.sid})` : ''),
      )
    else count("opt-out changes, each a customer's own word")
  }

  for (const request of e.requests) {
    const answer = request.reference
    if (!answer || request.answeredAt === undefined || request.templates || request.byUserId) continue
    const account = e.accounts[request.account]!
    request.recipients.forEach((to, i) => {
      const tag = request.tags[i]
      if (!to || !tag) return
      const phone = e164(to.phone)
      const m = byTag.get(tag)
      const code: string | undefined =
        request.kind === 'send' ? answer.body?.code : answer.status === 200 ? answer.body?.data?.results?.[i]?.code : undefined
      // Opted out for sure: a STOP to this account taken before the request, and no START to it written before its answer.
      const words = consent.get(`${account.id} ${phone}`) ?? []
      const stop = words.filter((w) => w.word === 'STOP' && w.ackAt < request.issuedAt)
      const optedOut =
        stop.length > 0 &&
        !words.some((w) => w.word === 'START' && w.startedAt < request.answeredAt! && w.startedAt > stop.at(-1)!.startedAt)
      const everStopped = words.some((w) => w.word === 'STOP' && w.startedAt < request.answeredAt!)
      if (optedOut) {
        count('messages to customers who wrote STOP')
        if (m) fail(`[${tag}] to ${phone}, who wrote STOP to account ${account.id} before it was asked for, was charged as message ${m.id}`)
        // CONFLICT: a bulk repeated after a crash, whose first run refused the entry (README, Idempotency-Key).
        else if (code !== undefined && code !== 'RECIPIENT_OPTED_OUT' && code !== 'CONFLICT')
          fail(`[${tag}] to ${phone}, opted out, was refused with ${code}`)
        return
      }
      if (code === 'RECIPIENT_OPTED_OUT' && !everStopped)
        fail(`[${tag}] to ${phone} was refused as opted out; the customer never wrote STOP to account ${account.id}`)
      const written = wrote.get(`${to.sender} ${phone}`) ?? []
      const open = written.some((w) => w.ackAt !== null && w.ackAt < request.issuedAt)
      const closed = !written.some((w) => w.startedAt < request.answeredAt!)
      if (open) {
        count('messages inside the window')
        if (code === 'WINDOW_CLOSED')
          fail(`[${tag}] to ${phone} was refused WINDOW_CLOSED; the customer wrote to sender ${to.sender} before it was asked for`)
      } else if (closed) {
        count('messages outside the window')
        if (m) fail(`[${tag}] to ${phone} through sender ${to.sender}, who never wrote to it, was charged as message ${m.id}`)
        else if (code !== undefined && code !== 'WINDOW_CLOSED' && code !== 'RECIPIENT_OPTED_OUT' && code !== 'CONFLICT')
          fail(`[${tag}] to ${phone} outside the window was refused with ${code}, not WINDOW_CLOSED`)
        if (code === 'WINDOW_CLOSED') count('refused for the window (WINDOW_CLOSED)')
        if (code === 'CONFLICT') count('entries refused by a first run, repeated after a crash')
      } else count('messages racing a customer')
    })
  }
  // Each inbound message of the first account (whose registration chose message.received) made exactly
  // one message.received event, and each opt-out change of it one contact event (rule 4 checks delivery).
  const first = e.accounts[0]!
  const received = await e.sql<{ id: number }[]>`
    select (payload::jsonb->'data'->>'id')::bigint as id from webhook_events where api_key_id = ${first.keyId} and event = 'message.received'`
  const eventsOf = new Map<number, number>()
  for (const r of received) eventsOf.set(Number(r.id), (eventsOf.get(Number(r.id)) ?? 0) + 1)
  const mine = await e.sql<{ id: number }[]>`select id from inbound_messages where account_id = ${first.id}`
  for (const { id } of mine) {
    count('message.received events')
    if (eventsOf.get(Number(id)) !== 1)
      fail(`inbound message ${id} of account ${first.id} made ${eventsOf.get(Number(id)) ?? 0} message.received events`)
  }
  if (received.length !== mine.length)
    fail(`account ${first.id}: ${received.length} message.received events for ${mine.length} inbound messages`)
  const [changes] = await e.sql<{ changes: number; events: number }[]>`
    select (select count(*)::int from opt_out_events where account_id = ${first.id}) as changes,
           (select count(*)::int from webhook_events where api_key_id = ${first.keyId} and event like 'contact.%') as events`
  count('opt-out changes', changes!.changes)
  if (changes!.changes !== changes!.events)
    fail(`account ${first.id}: ${changes!.changes} opt-out changes, ${changes!.events} contact events`)

  for (const c of e.campaigns) {
    if (c.template) continue
    c.tags.forEach((tag, i) => {
      const phone = e164(c.phones[i]!)
      const written = wrote.get(`${c.sender} ${phone}`) ?? []
      if (written.some((w) => w.startedAt < c.ranAt)) return
      const m = byTag.get(tag)
      count('campaign contacts outside the window')
      if (m) fail(`campaign ${c.id}'s [${tag}] to ${phone}, who never wrote to sender ${c.sender}, was charged as message ${m.id}`)
    })
  }
}

/** Within this of a webhook's answer or a charge's time, the two may have overlapped (clocks read apart). */
const TEMPLATE_MARGIN_MS = 100
/** A moment of the run as a time of day to the millisecond (UTC), for a finding's words. */
const clockTime = (ms: number) => new Date(ms).toISOString().slice(11, 23)

/**
 * 7. WhatsApp templates changed by Meta while they are sent (templates.ts):
 *    - no message was charged for a template the service knew was not approved at charge time: Meta's
 *      newest status (by its `time`) among the webhooks the service had taken (answered 200) before
 *      the charge was paused or disabled, and no newer approval had been posted by then;
 *    - a send asked for while the service knew so was refused before charging (TEMPLATE_NOT_APPROVED);
 *    - a message Meta refused with 132015 (paused) or 132016 (disabled) after its hand-off failed and
 *      was refunded (rule 2: exactly once), and Meta did refuse it so;
 *    - Meta accepted each message at most once (but across a crash), every message sent has the id
 *      Meta gave it, none refunded that Meta accepted (but for a crash) or that Meta never refused;
 *    - each campaign of a template ends sent (its template ends approved), every contact with exactly
 *      one message; while paused, the reason is its template's (TEMPLATE_NOT_APPROVED...);
 *    - each template's final status, category and quality here are Meta's last word.
 *    (Rule 1 holds every balance to its ledger, the template account's too.)
 */
async function checkTemplates(
  e: Evidence,
  t: TemplateEvidence,
  byTag: Map<string, MessageRow>,
  refundsOf: Map<number, LedgerRow[]>,
  fail: (line: string) => void,
  count: (name: string, n?: number) => void,
) {
  const statuses = t.notices.filter((n) => n.kind === 'status')
  for (const n of t.notices) {
    count(`template changes by Meta (${n.kind})`)
    count(
      `template webhooks posted ${n.delivery === 'now' ? 'at once' : n.delivery === 'late' ? 'late' : n.delivery === 'twice' ? 'twice' : 'out of order'}`,
    )
    if (n.ackAt === null) fail(`Meta's ${n.kind} ${n.value} of template ${n.templateId} (time ${n.metaTime}) was never taken (no 200)`)
  }
  /**
   * Whether the service knew template `id` was not approved: by `knownBy`, it had taken a webhook
   * saying so, newer (Meta's time) than every other status it had taken, and no newer approval was
   * posted before `approvalBy`. The status it knew, or null.
   */
  const knewNotApproved = (id: number, knownBy: number, approvalBy: number): string | null => {
    const taken = statuses.filter((n) => n.templateId === id && n.ackAt !== null && n.ackAt < knownBy)
    if (taken.length === 0) return null // as synced: approved
    const latest = taken.reduce((a, b) => (b.metaTime > a.metaTime ? b : a))
    if (latest.status === 'APPROVED') return null
    const approval = statuses.some(
      (n) =>
        n.templateId === id && n.status === 'APPROVED' && n.metaTime > latest.metaTime && n.postedAt !== null && n.postedAt < approvalBy,
    )
    return approval ? null : latest.status.toLowerCase()
  }

  const rows = await e.sql<
    {
      id: number
      body: string
      status: string
      message_sid: string | null
      error_code: number | null
      refunded: boolean
      template_id: number | null
      campaign_id: number | null
      contact_id: number | null
      charged_at: number
    }[]
  >`
    select m.id, m.body, m.status, m.message_sid, m.error_code, m.refunded_at is not null as refunded,
           (m.provider_template->>'templateId')::bigint as template_id, m.campaign_id, m.contact_id,
           (extract(epoch from l.created_at) * 1000)::float8 as charged_at
    from messages m join ledger l on l.message_id = m.id and l.kind = 'charge'
    where m.sender_id = ${t.senderId} order by m.id`
  const handoffsOf = new Map<string, TemplateEvidence['handoffs']>()
  for (const h of t.handoffs) handoffsOf.set(h.tag, [...(handoffsOf.get(h.tag) ?? []), h])
  const crashBetween = (from: number, to: number) => e.kills.some((k) => k.until >= from && k.at <= to)
  for (const m of rows) {
    const tag = tagOf(m.body)
    const what = `template message ${m.id} [${tag}]`
    count('template messages')
    if (m.template_id === null) {
      fail(`${what} of the Meta sender names no WhatsApp template`)
      continue
    }
    const known = knewNotApproved(
      Number(m.template_id),
      Number(m.charged_at) - TEMPLATE_MARGIN_MS,
      Number(m.charged_at) + TEMPLATE_MARGIN_MS,
    )
    if (known)
      fail(
        `${what} was charged at ${new Date(Number(m.charged_at)).toISOString()} for template ${m.template_id}, which the service knew was ${known}`,
      )
    const handoffs = handoffsOf.get(tag) ?? []
    const accepted = handoffs.filter((h) => h.status === 200)
    for (let i = 1; i < accepted.length; i++)
      if (!crashBetween(accepted[i - 1]!.at, accepted[i]!.at))
        fail(
          `${what} accepted twice by Meta with no crash between (its requests: ${handoffs.map((h) => `${clockTime(h.at)} ${h.status}`).join(', ')}; ` +
            `charged ${clockTime(Number(m.charged_at))}; kills: ${e.kills.map((k) => clockTime(k.at)).join(', ') || 'none'})`,
        )
    if (m.message_sid !== null) {
      if (!t.wamids.has(m.message_sid) || accepted.length === 0)
        fail(`${what} is ${m.status} as ${m.message_sid}, which Meta never gave it`)
      else count('template messages accepted by Meta')
    } else if (accepted.length > 0 && !crashBetween(accepted[0]!.at, Number.MAX_SAFE_INTEGER))
      fail(`${what}: Meta accepted it, yet it was refunded (a free delivery)`)
    if (m.status === 'failed' && m.message_sid === null) {
      if (!handoffs.some((h) => h.status >= 400)) fail(`${what} failed and was refunded, yet Meta never refused it`)
      if (!m.refunded || (refundsOf.get(m.id) ?? []).length !== 1) fail(`${what} failed at its hand-off but is not refunded once`)
    }
    if (m.error_code === 132015 || m.error_code === 132016) {
      if (m.status !== 'failed' || m.message_sid !== null || !m.refunded)
        fail(`${what}: refused by Meta with ${m.error_code}, yet ${m.status}, SID ${m.message_sid}, refunded ${m.refunded}`)
      if (!handoffs.some((h) => h.code === m.error_code)) fail(`${what} records error ${m.error_code}, which Meta never answered it`)
      count(`template messages refused by Meta after hand-off (${m.error_code}), refunded`)
    }
  }

  // Sends asked for while the service knew the template was not approved: refused, nothing charged.
  for (const request of e.requests) {
    const answer = request.reference
    if (!request.templates || !answer || request.answeredAt === undefined) continue
    request.tags.forEach((tag, i) => {
      if (tag === null) return
      count('template send entries')
      const entry = request.kind === 'send' ? answer.body : answer.status === 200 ? answer.body?.data?.results?.[i] : answer.body
      if (entry?.code) count(`template send entries refused: ${entry.code}`)
      const id = request.templates![i]!
      const known = knewNotApproved(id, request.issuedAt, request.answeredAt!)
      if (!known) return
      const code: string | undefined =
        request.kind === 'send' ? answer.body?.code : answer.status === 200 ? answer.body?.data?.results?.[i]?.code : answer.body?.code
      const m = byTag.get(tag)
      if (m) fail(`[${tag}] of template ${id}, asked for while the service knew it was ${known}, was charged as message ${m.id}`)
      else if (code !== 'TEMPLATE_NOT_APPROVED' && code !== 'CONFLICT')
        fail(`[${tag}] of template ${id}, asked for while the service knew it was ${known}, was refused with ${code}`)
      else count('template sends refused before charging (TEMPLATE_NOT_APPROVED)')
    })
  }

  // Campaigns: sent in the end, one message per contact, paused only for their template.
  const campaignRows = await e.sql<{ id: number; status: string; pause_reason: string | null }[]>`
    select id, status, pause_reason from campaigns where account_id = ${t.accountId} order by id`
  for (const c of t.campaigns) {
    const row = campaignRows.find((r) => r.id === c.id)
    if (!row) {
      fail(`template campaign ${c.id} is not in the database`)
      continue
    }
    if (row.status !== 'sent') fail(`template campaign ${c.id} ends ${row.status} (${row.pause_reason}), its template approved`)
    for (const tag of c.tags) if (!byTag.has(tag)) fail(`template campaign ${c.id}'s contact [${tag}] got no message`)
    const perContact = new Map<number, number>()
    for (const m of rows.filter((r) => r.campaign_id === c.id))
      perContact.set(Number(m.contact_id), (perContact.get(Number(m.contact_id)) ?? 0) + 1)
    for (const [contact, n] of perContact) if (n > 1) fail(`template campaign ${c.id}: contact ${contact} got ${n} messages`)
    const seen = t.observed.get(c.id) ?? []
    const paused = seen.filter((o) => o.status === 'paused')
    for (const o of paused)
      if (!o.reason?.startsWith('TEMPLATE_NOT_APPROVED'))
        fail(`template campaign ${c.id} was paused at ${new Date(o.at).toISOString()} for another reason: ${o.reason}`)
    if (paused.length > 0) count('template campaigns paused for their template, then sent')
    if (c.pausedFirst) count('template campaigns run while their template was paused')
  }

  // Meta's last word per template is the catalog's.
  const catalog = await e.sql<{ id: number; status: string; category: string; quality: string }[]>`
    select id, status, category, quality from wa_templates where sender_id = ${t.senderId} order by id`
  for (const [id, last] of t.final) {
    const row = catalog.find((r) => Number(r.id) === id)
    const here = row ? { status: row.status, category: row.category, quality: row.quality } : null
    if (JSON.stringify(here) !== JSON.stringify(last))
      fail(`template ${id}: the catalog ends ${JSON.stringify(here)}, Meta's last word is ${JSON.stringify(last)}`)
  }
  count('template hand-offs to Meta', t.handoffs.length)
}

/**
 * 8. Settlement on Meta's word (templates.ts, `reports`): Meta reported messages of the template account
 *    priced, in order, out of order, repeated, failed after or before their `sent`, while instances died
 *    and the database went away; some before the service had recorded the message's id (parked).
 *    - each message has at most one settlement row, and its ledger rows sum to what it finally cost
 *      (nothing once refunded);
 *    - one whose priced report the service took (200) and that is still sent, delivered or read is settled,
 *      to the category Meta reported (mapped onto the four; `free_*` types are `service`), and then costs
 *      that category's price, less what the balance could not give (`unsettled`);
 *    - none settled without such a report, none that failed before any priced report was taken;
 *    - each ends at the furthest status of the reports the service took (a stale report moves nothing).
 */
async function checkSettlements(
  e: Evidence,
  t: TemplateEvidence,
  ledger: LedgerRow[],
  fail: (line: string) => void,
  count: (name: string, n?: number) => void,
) {
  const byWamid = new Map(t.reports.map((r) => [r.wamid, r]))
  const rows = await e.sql<
    {
      id: number
      status: string
      cost: number
      unsettled: number
      category: string
      settled: boolean
      settled_category: string | null
      refunded: boolean
      message_sid: string | null
    }[]
  >`
    select id, status, cost, unsettled, category, settled_at is not null as settled, settled_category, refunded_at is not null as refunded, message_sid
    from messages where sender_id = ${t.senderId} order by id`
  for (const m of rows) {
    const rows = ledger.filter((l) => l.message_id === m.id)
    const settlements = rows.filter((l) => l.kind === 'settlement')
    const what = `template message ${m.id} (${m.message_sid ?? 'no SID'})`
    if (settlements.length > 1) fail(`${what} was settled ${settlements.length} times: ${JSON.stringify(settlements.map((l) => l.amount))}`)
    const sum = rows.reduce((total, l) => total + l.amount, 0)
    if (sum !== (m.refunded ? 0 : -m.cost)) fail(`${what}: its ledger rows sum to ${sum}, it costs ${m.cost} (refunded ${m.refunded})`)
    const reports = m.message_sid === null ? undefined : byWamid.get(m.message_sid)
    const pricedTaken = (reports?.posts ?? []).filter((p) => p.status !== 'failed' && p.ackAt !== null)
    if (!reports || pricedTaken.length === 0) {
      if (m.settled) fail(`${what} is settled (to ${m.settled_category}), yet no priced report of Meta's for it was taken`)
      continue
    }
    count('template messages reported by Meta, priced')
    const p = reports.pricing
    const reported = p.type?.startsWith('free') ? 'service' : CATEGORY_OF[p.category]!
    // Failed before any priced report was taken: nothing to settle (a failed message is never settled).
    const failedAt = reports.posts.find((x) => x.status === 'failed')?.ackAt ?? null
    const failedFirst = failedAt !== null && pricedTaken.every((x) => x.ackAt! > failedAt)
    if (failedFirst) {
      if (m.settled) fail(`${what} failed before Meta's priced report was taken, yet it was settled to ${m.settled_category}`)
      else count('template messages failed before their priced report: not settled')
    } else if (!m.settled) {
      fail(
        `${what}: Meta's report pricing it ${p.category}/${p.type} was taken, yet it is not settled (${m.status}, ${m.category}, cost ${m.cost})`,
      )
    } else {
      const price = TEMPLATE_PRICES[reported as keyof typeof TEMPLATE_PRICES]
      if (m.settled_category !== reported || m.category !== reported || m.cost + m.unsettled !== price)
        fail(
          `${what}: settled to ${m.settled_category} (category ${m.category}, cost ${m.cost}, unsettled ${m.unsettled}), ` +
            `Meta priced it ${p.category}/${p.type}: ${reported} at ${price}`,
        )
      count(
        settlements.length === 0
          ? 'template messages settled to what they were charged'
          : settlements[0]!.amount > 0
            ? 'template messages settled down'
            : 'template messages settled up',
      )
      if (m.unsettled > 0) count('template messages settled up beyond the balance (unsettled)')
    }
    // Its status: the furthest of the reports taken (sent, delivered, read; failed only from sent or delivered).
    let expected = 'sent'
    for (const post of [...reports.posts].filter((x) => x.ackAt !== null).sort((a, b) => a.ackAt! - b.ackAt!)) {
      if (post.status === 'failed' ? expected !== 'read' : FORWARD[post.status]! > FORWARD[expected]! && expected !== 'failed')
        expected = post.status
    }
    if (m.status !== expected) fail(`${what}: ${m.status}, Meta's reports taken for it say ${expected}`)
  }
}

/** Meta's pricing categories onto the four (src/modules/ledger/service.ts's PROVIDER_CATEGORIES, as the README documents them). */
const CATEGORY_OF: Record<string, string> = {
  marketing: 'marketing',
  marketing_lite: 'marketing',
  utility: 'utility',
  authentication: 'authentication',
  authentication_international: 'authentication',
  service: 'service',
}

/**
 * 9. Customers known only by a WhatsApp user id (user-ids.ts), per business portfolio (A, B: a sender
 *    and an account each) and user id; a twin in B (A's user id string, another person) is another customer:
 *    - every webhook Meta's customers wrote that the service took is stored once, at that portfolio's
 *      sender and account, under the user id, or under the phone once Meta named the two together;
 *    - every opt-out change of the two accounts is a STOP or START a customer of that portfolio wrote;
 *    - a send asked for after the customer's STOP was taken (no START or STOP of theirs written before
 *      its answer but not taken before it was asked for) was refused before charging
 *      (RECIPIENT_OPTED_OUT) and nothing of it reached the fake Graph API; one asked for while the
 *      customer's last word taken was START, or none (whatever the twin in the other portfolio wrote),
 *      was not refused as opted out;
 *    - one asked for after the customer's message was taken was not refused for the window; one to a
 *      user id nobody had written from by its answer was charged nothing and reached no one;
 *    - every request the fake got for them named the customer by exactly one of `recipient` (the user
 *      id: always while no phone was named with it before the request) and `to` (the linked phone:
 *      always once the link was taken before the send was asked for), through the portfolio's own
 *      number, and none was refused by Meta for the window (131047: the service refuses first);
 *    - Meta accepted each at most once (but across a crash), every one sent was accepted, none accepted
 *      was refunded (but for a crash);
 *    - every refused entry cost nothing: no message, or one failed before its hand-off and refunded.
 *    A send admitted while the customer's link was being taken is held to less (a known race: the
 *    admission reads the link before its charge): after a STOP it may be charged if stopped at its
 *    hand-off and refunded, and it may be refused WINDOW_CLOSED; it still never reaches Meta.
 *    (Rule 1 holds both balances to their ledgers; rule 2 each refund to its charge.)
 */
async function checkUserIds(
  e: Evidence,
  u: UserIdEvidence,
  byTag: Map<string, MessageRow>,
  fail: (line: string) => void,
  count: (name: string, n?: number) => void,
) {
  const accountOf = (side: number) => e.accounts[u.sides[side]!.account]!.id
  const postsOf = new Map<string, UserIdEvidence['posts']>()
  for (const p of u.posts) postsOf.set(`${p.side} ${p.userId}`, [...(postsOf.get(`${p.side} ${p.userId}`) ?? []), p])
  // The phone Meta named with the user id (its first message naming both; `taken`: once the service took it).
  const linkOf = (posts: UserIdEvidence['posts'], taken = false) =>
    posts.find((p) => p.phone !== null && (!taken || p.ackAt !== null))?.phone ?? null
  // Taken before a request: the service answered 200 no later than the request was asked for (one process,
  // one after the other: the same millisecond is before).
  const takenBy = (p: UserIdEvidence['posts'][number], at: number) => p.ackAt !== null && p.ackAt <= at

  // Stored once each, where it was written, under the customer's key.
  const senderIds = u.sides.map((s) => s.senderId)
  const rows = (
    await e.sql<{ sid: string; sender_id: number; account_id: number | null; phone: string; user_id: string | null }[]>`
      select provider_message_id as sid, sender_id, account_id, phone, user_id from inbound_messages where sender_id is not null order by id`
  ).filter((r) => senderIds.includes(Number(r.sender_id)))
  const stored = new Map<string, typeof rows>()
  for (const r of rows) stored.set(r.sid, [...(stored.get(r.sid) ?? []), r])
  const written = new Set(u.posts.map((p) => p.wamid))
  for (const r of rows)
    if (!written.has(r.sid)) fail(`inbound ${r.sid} is stored at user-id sender ${r.sender_id}, yet no customer wrote it`)
  for (const p of u.posts) {
    count('user-id customers: messages written')
    if (p.repeats > 0) count('user-id customers: repeat deliveries', p.repeats)
    if (p.ackAt === null) {
      fail(`user-id customer ${p.userId} of portfolio ${p.side}: ${JSON.stringify(p.body)} (${p.wamid}) was never taken (no 200)`)
      continue
    }
    const found = stored.get(p.wamid) ?? []
    const link = linkOf(postsOf.get(`${p.side} ${p.userId}`)!, true)
    const key = link ? `+${link}` : p.userId
    const row = found[0]
    if (found.length !== 1) fail(`inbound ${p.wamid} of user-id customer ${p.userId} is stored ${found.length} times`)
    else if (
      Number(row!.sender_id) !== u.sides[p.side]!.senderId ||
      Number(row!.account_id) !== accountOf(p.side) ||
      row!.phone !== key ||
      row!.user_id !== p.userId
    )
      fail(
        `inbound ${p.wamid} of user-id customer ${p.userId} (portfolio ${p.side}) is stored at sender ${row!.sender_id}, account ` +
          `${row!.account_id}, as ${row!.phone} (user id ${row!.user_id}); written to sender ${u.sides[p.side]!.senderId}, account ${accountOf(p.side)}, key ${key}`,
      )
    if (p.body === 'STOP' || p.body === 'START') count(`user-id customers' ${p.body}s`)
    if (p.phone !== null && p === postsOf.get(`${p.side} ${p.userId}`)!.find((x) => x.phone !== null))
      count('user-id customers linked to a phone')
  }

  // Every opt-out change of the two accounts is a word their own customers wrote.
  const posted = new Map(u.posts.map((p) => [p.wamid, p]))
  const changes = await e.sql<{ id: number; account_id: number; opted_out: boolean; sid: string | null }[]>`
    select o.id, o.account_id, o.opted_out, i.provider_message_id as sid
    from opt_out_events o left join inbound_messages i on i.id = o.inbound_message_id order by o.id`
  for (const c of changes) {
    const side = [0, 1].find((s) => accountOf(s) === Number(c.account_id))
    if (side === undefined) continue
    const word = c.opted_out ? 'STOP' : 'START'
    const p = c.sid === null ? undefined : posted.get(c.sid)
    if (!p || p.body !== word || p.side !== side)
      fail(
        `opt-out change ${c.id} of account ${c.account_id} (${word}) is not a ${word} its customers wrote` +
          (p ? `: ${JSON.stringify(p.body)} of a customer of portfolio ${p.side}` : ''),
      )
    else count("user-id opt-out changes, each the customer's own word")
  }

  // Requests to Meta, by tag.
  const handoffsOf = new Map<string, UserIdEvidence['handoffs']>()
  for (const h of u.handoffs) handoffsOf.set(h.tag, [...(handoffsOf.get(h.tag) ?? []), h])
  const crashBetween = (from: number, to: number) => e.kills.some((k) => k.until >= from && k.at <= to)
  const tags = new Set<string>()
  for (const request of e.requests) {
    if (!request.byUserId) continue
    const side = u.sides.findIndex((s) => s.account === request.account)
    const answer = request.reference
    request.tags.forEach((tag, i) => {
      const userId = request.recipients[i]?.phone
      if (tag === null || userId === undefined) return
      tags.add(tag)
      count('user-id send entries')
      const m = byTag.get(tag)
      const handoffs = handoffsOf.get(tag) ?? []
      const what = `[${tag}] of portfolio ${side} to ${userId}`
      const posts = postsOf.get(`${side} ${userId}`) ?? []
      const link = linkOf(posts)
      const linkPost = posts.find((p) => p.phone !== null)

      // What went to Meta: through the portfolio's number, the customer named by exactly one id.
      for (const h of handoffs) {
        if (h.phoneNumberId !== u.sides[side]!.phoneNumberId) fail(`${what} went to Meta through phone number ${h.phoneNumberId}`)
        if (h.code === 131047) fail(`${what} was handed to Meta outside the customer's window (131047)`)
        const linkedFirst = linkPost !== undefined && takenBy(linkPost, request.issuedAt)
        const unlinked = !linkPost || linkPost.startedAt === 0 || linkPost.startedAt > h.at
        if (h.to !== undefined && h.recipient !== undefined) fail(`${what} went to Meta with both to ${h.to} and recipient ${h.recipient}`)
        else if (h.recipient !== undefined) {
          if (h.recipient !== userId || linkedFirst)
            fail(
              `${what} went to Meta as recipient ${h.recipient}${linkedFirst ? `, though its phone ${link} was linked before it was asked for` : ''}`,
            )
          else count('user-id messages to Meta by recipient (no to)')
        } else if (h.to !== undefined) {
          if (link === null || h.to !== link || unlinked)
            fail(
              `${what} went to Meta as to ${h.to}; ${link === null ? 'no phone was ever named with it' : `its phone ${link} was linked later`}`,
            )
          else count('user-id messages to Meta at the phone linked to them')
        } else fail(`${what} went to Meta naming no one`)
      }
      const accepted = handoffs.filter((h) => h.status === 200)
      for (let k = 1; k < accepted.length; k++)
        if (!crashBetween(accepted[k - 1]!.at, accepted[k]!.at)) fail(`${what} accepted twice by Meta with no crash between`)
      if (m?.message_sid != null && accepted.length === 0) fail(`${what} is ${m.status} as ${m.message_sid}, yet Meta never accepted it`)
      if (m && m.message_sid === null && accepted.length > 0 && !crashBetween(accepted[0]!.at, Number.MAX_SAFE_INTEGER))
        fail(`${what}: Meta accepted it, yet it was refunded (a free delivery)`)
      if (m?.message_sid != null) count('user-id messages sent')

      if (!answer || request.answeredAt === undefined) return
      const code: string | undefined =
        request.kind === 'send' ? answer.body?.code : answer.status === 200 ? answer.body?.data?.results?.[i]?.code : answer.body?.code
      // A refused entry cost nothing: no message, or one stopped before its hand-off and refunded.
      if (code !== undefined && m && !(m.status === 'failed' && m.message_sid === null && m.refunded))
        fail(`${what} was refused with ${code}, yet message ${m.id} is ${m.status} (SID ${m.message_sid}, refunded ${m.refunded})`)

      // Opted out or in, by the customer's own words in this portfolio (taken in the order written).
      const words = posts.filter((p) => p.body === 'STOP' || p.body === 'START')
      const takenBefore = words.filter((w) => takenBy(w, request.issuedAt))
      const racing = words.some((w) => w.startedAt !== 0 && w.startedAt < request.answeredAt! && !takenBefore.includes(w))
      const last = takenBefore.at(-1)?.body
      // Meta's link of the customer's phone, taken while the send was admitted: the admission reads the link
      // before its charge, so the link's re-keying in between may leave the charge looking under the user id
      // (a known race): such a send may be charged, but its hand-off finds the phone's opt-out and refunds it.
      const linkRacing =
        linkPost !== undefined &&
        linkPost.startedAt !== 0 &&
        linkPost.startedAt < request.answeredAt! &&
        !takenBy(linkPost, request.issuedAt)
      if (racing) count('user-id sends racing their STOP or START')
      else if (last === 'STOP') {
        count('user-id sends after a STOP')
        const stoppedAtHandoff = m && linkRacing && m.status === 'failed' && m.message_sid === null && m.refunded
        if (m && !stoppedAtHandoff) fail(`${what}, asked for after the customer's STOP was taken, was charged as message ${m.id}`)
        if (handoffs.length > 0) fail(`${what}, asked for after the customer's STOP was taken, reached Meta ${handoffs.length} times`)
        if (code !== undefined && code !== 'RECIPIENT_OPTED_OUT' && code !== 'CONFLICT')
          fail(`${what}, opted out, was refused with ${code}`)
        if (code === 'RECIPIENT_OPTED_OUT') count('user-id sends refused before charging (RECIPIENT_OPTED_OUT)')
      } else {
        if (code === 'RECIPIENT_OPTED_OUT')
          fail(`${what} was refused as opted out; the customer's last word taken before it was ${last ?? 'none'}, none written since`)
        else if (last === 'START') count('user-id sends after a START, not refused as opted out')
        const twin = postsOf.get(`${1 - side} ${userId}`) ?? []
        if (twin.some((w) => w.body === 'STOP' && takenBy(w, request.issuedAt)))
          count("user-id sends not stopped by another portfolio's STOP of the same user id")
      }

      // The window: open once the customer's message was taken; closed while nobody wrote from the user id.
      const open = posts.some((p) => takenBy(p, request.issuedAt))
      const closed = !posts.some((p) => p.startedAt !== 0 && p.startedAt < request.answeredAt!)
      if (open && code === 'WINDOW_CLOSED') {
        if (linkRacing) count('user-id sends refused WINDOW_CLOSED while their link was taken (the admission race)')
        else fail(`${what} was refused WINDOW_CLOSED; the customer wrote before it was asked for`)
      }
      if (closed) {
        count('user-id sends to a user id nobody wrote from')
        if (m) fail(`${what}, to a user id nobody had written from, was charged as message ${m.id}`)
        if (handoffs.length > 0) fail(`${what}, to a user id nobody had written from, reached Meta`)
        if (code === 'WINDOW_CLOSED') count('user-id sends refused for the window (WINDOW_CLOSED)')
      }
    })
  }
  for (const [tag] of handoffsOf) if (!tags.has(tag)) fail(`Meta got [${tag}] through a user-id sender, which no user-id send asked for`)
}
