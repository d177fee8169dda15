// POST /messages/bulk: entries with unacceptable values fail on their own and are not charged; all
// valid entries are charged in one statement (402 for the whole request if the balance cannot pay
// them all, or the key's daily spend cap cannot take them all); the hand-off pool delivers them to the provider and every refusal is refunded. The
// answer waits for every outcome and keeps the request's order. Entries may use templates
// (content.ts): the request's templates are read in one query, whatever the number of entries.

import type { Deps } from '../../deps'
import type { Principal } from '../../http/auth'
import { ApiError, badValue } from '../../http/errors'
import { MAX_BULK_MESSAGES } from '../../lib/validate'
import { isUserId } from '../../lib/user-id'
import { chargeAll, type Charged, type Lease, type NewMessage, type Refused } from '../ledger/service'
import { retrying } from '../../db/retry'
import { getBalance } from '../accounts/service'
import type { BulkBody, BulkEntry, BulkResult } from './model'
import { outgoingOf, requireContentShape } from './content'
import { notAccepted, refusal } from './service'
import { holdMessagingLimit, NO_HOLD, type Held } from '../budgets/guard'
import { stoppedByOptOut } from '../optouts/service'
import { budgetGroups, isRefusal, itemsOf, judge, prepareEntries, priceAboveMax, readFacts, type Facts, type Prepared } from './admission'

/** `requestToken` identifies this request's charge, as for sendOne. */
export async function sendBulk(deps: Deps, principal: Principal, input: BulkBody, requestToken: string): Promise<BulkResult> {
  const n = input.messages.length
  if (n === 0) throw badValue('messages: must contain at least 1 message')
  if (n > MAX_BULK_MESSAGES) throw badValue(`messages: must contain at most ${MAX_BULK_MESSAGES} messages (got ${n})`)

  // Shape errors reject the whole request before anything else is looked at.
  input.messages.forEach((entry, index) => requireContentShape(entry, `messages[${index}].`))
  // The rules, in admission.ts' order: each entry's values, sender and template (a refused entry fails
  // uncharged: 422 rules, SENDER_DISABLED, TEMPLATE_NOT_APPROVED), then one read for opt-outs, windows
  // and price caps of all of them, then the messaging limit of the rest.
  const prepared = await prepareEntries(deps, principal.accountId, input.messages, (index) => `messages[${index}].`)
  const results: BulkEntry[] = new Array(n)
  const fail = (index: number, to: string, error: ApiError) => {
    results[index] = { to, status: 'failed', code: error.code, error: error.message }
  }
  let valid: Prepared[] = []
  for (const p of prepared) {
    if (isRefusal(p)) fail(p.index, p.to, p.error)
    else valid.push(p)
  }
  const facts = await readFacts(deps, itemsOf(principal.accountId, principal.keyId, requestToken, valid))
  // A repeat of a request whose first run charged and died before answering (its Idempotency-Key
  // recovers it) goes on with the entries charged then, whatever opt-outs, windows and budgets say now
  // (an opt-out made since still stops an entry not handed over yet, at its hand-off).
  const repeat = facts[0]?.charged ?? false
  let limit: Held<Prepared> = { ...NO_HOLD, fit: valid }
  if (repeat) {
    valid = await chargedBefore(deps, requestToken, valid, results)
    limit = { ...NO_HOLD, fit: valid }
  } else {
    const admitted: Prepared[] = []
    const admittedFacts: Facts[] = []
    valid.forEach((p, i) => {
      const refused = judge(deps.config, p, facts[i]!, `messages[${p.index}].`)
      // An opted-out entry, or one of a template not approved, is answered with its `to` as given, the
      // others normalised (as before admission.ts).
      const given = refused?.code === 'RECIPIENT_OPTED_OUT' || refused?.code === 'TEMPLATE_NOT_APPROVED'
      if (refused) return fail(p.index, given ? input.messages[p.index]!.to : p.phone, refused)
      admitted.push(p)
      admittedFacts.push(facts[i]!)
    })
    valid = admitted
    // The messaging limit: entries past their sender's budget fail uncharged (429's code), the rest go.
    const groups = budgetGroups(valid, admittedFacts)
    if (groups.size > 0) {
      limit = await holdMessagingLimit(deps, requestToken, valid, groups)
      for (const { entry, error } of limit.refused) fail(entry.index, entry.phone, error)
      valid = limit.fit
    }
  }

  /**
   * The valid entries charged in one statement, which refuses them all when a WhatsApp template of
   * theirs is no longer approved (a webhook paused it after the checks above), or when the price it
   * charges puts an entry above its max_price (the price was raised after the read above): the entries
   * of such a template, or over their cap, then fail uncharged (TEMPLATE_NOT_APPROVED, PRICE_ABOVE_MAX)
   * and the others are charged. Null when none is left.
   */
  const chargeApproved = async (lease: Lease): Promise<Charged | Refused | null> => {
    for (;;) {
      const charged = await retrying(() => chargeAll(deps.sql, deps.config.timezone, principal, requestToken, lease, valid, deps.clock))
      if (!('refused' in charged)) return charged
      if (charged.refused === 'price') {
        const over = new Map(charged.over.map((o) => [valid[o.index]!, o]))
        for (const [m, o] of over) fail(m.index, m.phone, priceAboveMax(`messages[${m.index}].`, o.category, o.cost, o.maxPrice))
        valid = valid.filter((m) => !over.has(m))
        if (valid.length === 0) return null
        continue
      }
      if (charged.refused !== 'template') return charged
      const ids = [...new Set(valid.flatMap((m) => (m.providerTemplate?.templateId === undefined ? [] : [m.providerTemplate.templateId])))]
      const stopped = new Map(
        (
          await deps.sql<{ id: number; name: string; language: string; status: string }[]>`
            select id, name, language, status from wa_templates where id = any(${ids}::bigint[]) and status <> 'approved'`
        ).map((t) => [Number(t.id), t]),
      )
      valid = valid.filter((m) => {
        const t = m.providerTemplate?.templateId === undefined ? undefined : stopped.get(m.providerTemplate.templateId)
        if (!t) return true
        results[m.index] = {
          to: input.messages[m.index]!.to,
          status: 'failed',
          code: 'TEMPLATE_NOT_APPROVED',
          error:
            `messages[${m.index}].template_id: template ${t.id} (${t.name}, ${t.language}) is ${t.status}, not approved, ` +
            'so it cannot be sent; nothing was charged',
        }
        return false
      })
      if (valid.length === 0) return null
    }
  }

  let sent = 0
  let queued = 0
  let cost = 0
  let balanceAfter: number
  const lease = valid.length === 0 ? null : deps.handoff.lease()
  const held = valid
  const charged = lease === null ? null : await limit.settleAfter(chargeApproved(lease))
  if (charged !== null && !('refused' in charged) && valid.length < held.length) {
    // Entries the charge left out count no recipient: their held uses go (a phone charged under another entry stays).
    const sent = new Set(valid.map((m) => m.phone))
    await limit.release([...new Set(held.filter((m) => !sent.has(m.phone)).map((m) => m.phone))])
  }
  if (charged === null) {
    balanceAfter = (await getBalance(deps.sql, principal.accountId, deps.config.currency)).wa_balance
  } else {
    if ('refused' in charged) throw refusal(charged, `${valid.length} messages`, deps.config.timezone)
    const costs = charged.costs
    const chargedAt = deps.clock.now().getTime()
    const messages = valid.map((m, i) => ({
      ...outgoingOf(
        {
          id: charged.ids[i]!,
          phone: m.phone,
          body: m.body,
          media_url: m.mediaUrl,
          provider_template: m.providerTemplate ?? null,
          content: m.content ?? null,
          reply_to: m.replyTo ?? null,
        },
        m.provider,
      ),
      validUntilMs: chargedAt + m.validitySeconds * 1000,
      senderId: m.senderId ?? null,
    }))
    // A repeat of the request (the charge was found, not made) waits for the outcomes of whoever holds them.
    const outcomes = await deps.handoff.many(messages, lease!, deps.config.bulkWaitMs, charged.fresh)
    // Entries still throttled when the answer is due are answered queued, their outcome announced by
    // webhook; one settled in between is answered with its outcome.
    const late = [...outcomes].filter(([, o]) => 'queued' in o).map(([id]) => id)
    const announced = new Set(await deps.handoff.announce(late))
    for (const id of late) {
      if (announced.has(id)) continue
      outcomes.set(id, await deps.handoff.outcomeOf(id))
    }
    if ([...outcomes.values()].some((o) => !('queued' in o) && !o.ok && o.pending)) {
      throw new ApiError(
        'CONFLICT',
        'some messages of this request are still being handed to the provider; repeat it with the same Idempotency-Key later, or find them in GET /messages',
      )
    }
    let refunded = 0
    valid.forEach((m, i) => {
      const outcome = outcomes.get(charged.ids[i]!)!
      if ('queued' in outcome) {
        queued++
        cost += costs[i]!
        results[m.index] = { to: m.phone, status: 'queued', id: charged.ids[i]! }
      } else if (outcome.ok) {
        sent++
        cost += costs[i]!
        results[m.index] = { to: m.phone, status: 'sent', message_id: outcome.sid }
      } else if (stoppedByOptOut(outcome)) {
        // Its recipient opted out while it waited for its hand-off: not sent, refunded (handoff.ts).
        refunded += costs[i]!
        results[m.index] = {
          to: m.phone,
          status: 'failed',
          code: 'RECIPIENT_OPTED_OUT',
          error: `${m.phone} opted out of this account's messages before this entry was handed to the provider: not sent, refunded`,
          id: charged.ids[i]!,
        }
      } else {
        refunded += costs[i]!
        results[m.index] = {
          to: m.phone,
          status: 'failed',
          code: 'BAD_GATEWAY',
          error: `${notAccepted(m.provider, outcome)}; refunded`,
          id: charged.ids[i]!,
        }
      }
    })
    balanceAfter = charged.balanceAfter + refunded
  }
  const counts = queued > 0 ? { sent, failed: n - sent - queued, queued } : { sent, failed: n - sent }
  return { total: n, ...counts, total_cost: cost, balance_after: balanceAfter, results }
}

/**
 * The entries of a repeated request that its first run charged: its messages, in request order, are a
 * subsequence of the valid entries (same recipient, text and sender). The other entries were refused then
 * (an opt-out, a closed window, the messaging limit) and stay uncharged; they fail with CONFLICT. An entry
 * given a user id that Meta has linked to a phone since resolves to the phone now, but its message went to
 * the user id: it is that entry, and goes on as it was charged.
 */
async function chargedBefore<T extends NewMessage & { index: number; givenTo?: string }>(
  deps: Pick<Deps, 'sql'>,
  requestToken: string,
  valid: T[],
  results: BulkEntry[],
): Promise<T[]> {
  const rows = await deps.sql<{ phone: string; body: string; sender_id: number | null }[]>`
    select phone, body, sender_id from messages where request_token = ${requestToken} order by request_item`
  const kept: T[] = []
  for (const m of valid) {
    const row = rows[kept.length]
    if (
      row &&
      (row.phone === m.phone || (isUserId(row.phone) && row.phone === m.givenTo?.trim())) &&
      row.body === m.body &&
      (row.sender_id === null ? null : Number(row.sender_id)) === (m.senderId ?? null)
    ) {
      kept.push(row.phone === m.phone ? m : { ...m, phone: row.phone })
      continue
    }
    results[m.index] = {
      to: m.phone,
      status: 'failed',
      code: 'CONFLICT',
      error:
        `messages[${m.index}]: refused, uncharged, when this request first ran (an opt-out, a closed 24-hour window or the ` +
        'messaging limit); send it in a new request',
    }
  }
  if (kept.length !== rows.length) {
    throw new ApiError('CONFLICT', "this request's messages no longer match its first run's; repeat it with the same body")
  }
  return kept
}
