// The messaging limit, enforced. A business-initiated message (to a phone whose 24-hour window with the
// sending sender is closed, inbound/window.ts) uses its budget: a recipient counts once per rolling 24
// hours, so a second message to the same phone within them uses none, and a message inside the window
// none at all. Unlimited budgets are not counted (no query, no lock: deployments without a tier pay nothing).
//
// Concurrency: whoever records a use locks the budget's row first (messaging_budgets), in the
// statement that reads the count and writes the use (sql/0054's messaging_take), so two instances can
// never both take the last room. A campaign records its uses in the transaction that charges its batch
// (engine.ts), so they commit together. A single or bulk send is charged by the ledger's own statement
// (a group commit shared with other requests), so its uses are held before the charge instead (reserve,
// then release): the held uses count at once. A held use whose request charged its message counts as
// kept, so a charged request needs no further statement; one that charged nothing (refused, or failed)
// drops its held uses at once (`settle`), and a bulk those of the entries its charge left out
// (`release`). A process that dies between the two leaves held uses whose hold runs out: the next taker
// of the budget keeps them if the request's message exists and drops them if not, so nothing leaks and
// nothing charged goes uncounted.

import type { Deps } from '../../deps'
import type { Db, Tx } from '../../db/client'
import { ApiError } from '../../http/errors'
import { formatTimestamp } from '../../lib/time'
import type { Clock } from '../../lib/clock'
import { isRolledBack, retrying } from '../../db/retry'
import { openWindows } from '../inbound/window'
import { budgetOf, usageOf, type Budget, type Usage } from './service'

/** How long a send's held uses count without being settled, beyond SEND_WAIT_MS (its longest wait before the charge). */
const HOLD_MARGIN_SECONDS = 60

type Entry = { senderId?: number | null; phone: string }

/**
 * Under the budget's lock, in one statement (sql/0054's messaging_take: its row locked, what no longer
 * counts cleared, the count, the uses recorded): which of `phones` (business-initiated, in order) fit.
 * A phone counted already fits; a new one takes room while there is some. `prefix`: none fits after the
 * first that does not (a campaign keeps its order). Records a use for each phone that fits and has no
 * kept use yet: held for `hold` (a send's request), or kept (a campaign, charged in this same transaction).
 */
async function take(
  db: Db,
  clock: Clock,
  budget: Budget & { tier: number },
  phones: string[],
  hold: { token: string; seconds: number } | null,
  prefix: boolean,
): Promise<{ fits: boolean[]; usage: Usage }> {
  const [row] = await db<{ fits: boolean[]; used: number; frees_at: Date | null }[]>`
    select fits, used, frees_at
    from messaging_take(${budget.key}, ${budget.tier}::int, ${phones}::text[], ${hold?.token ?? null}::uuid,
                        ${hold?.seconds ?? null}::int, ${prefix}, ${clock.sqlNow()}::timestamptz)`
  return { fits: row!.fits, usage: { used: row!.used, freesAt: row!.frees_at } }
}

/** The words of a full budget: its tier, its use, and when it frees (from `clock`'s now). */
function fullText(budget: Budget & { tier: number }, usage: Usage, tz: string, clock: Clock): string {
  const frees = usage.freesAt
    ? `the oldest frees at ${formatTimestamp(usage.freesAt, tz)} (in ${secondsUntil(usage.freesAt, clock)} s)`
    : 'it frees as its recipients age past 24 hours'
  return (
    `messaging limit reached: ${budget.label} budget of ${budget.tier} unique recipients of business-initiated messages per ` +
    `rolling 24 hours has ${usage.used} used; ${frees}`
  )
}

const secondsUntil = (at: Date, clock: Clock) => Math.max(1, Math.ceil((at.getTime() - clock.now().getTime()) / 1000))

/** The business-initiated ones among `entries`, by budget (unlimited budgets left out). */
async function byBudget<T extends Entry>(sql: Db, clock: Clock, defaultTier: number | null, entries: T[]) {
  const out = new Map<string, { budget: Budget & { tier: number }; entries: T[] }>()
  const senders = [...new Set(entries.map((e) => e.senderId ?? null))]
  for (const senderId of senders) {
    const budget = await budgetOf(sql, senderId, defaultTier)
    if (budget.tier === null) continue
    const own = entries.filter((e) => (e.senderId ?? null) === senderId)
    const open = await openWindows(
      sql,
      clock,
      senderId,
      own.map((e) => e.phone),
    )
    const group = out.get(budget.key) ?? { budget: budget as Budget & { tier: number }, entries: [] }
    group.entries.push(...own.filter((e) => !open.has(e.phone)))
    out.set(budget.key, group)
  }
  return out
}

export type Held<T> = {
  /** The entries within their budgets (every entry, when none has a tier). */
  fit: T[]
  /** The entries past their budget, each with its 429 MESSAGING_LIMIT. */
  refused: { entry: T; error: ApiError }[]
  /** Keeps the held uses whose request's message was charged, drops the others. */
  settle(): Promise<void>
  /**
   * `charge`, then the settle of a request that charged nothing (refused, failed, or none left to charge:
   * null). A request that charged keeps its held uses without a statement: they count as kept from then
   * on (sql/0054), and the next take after their hold runs out settles them.
   */
  settleAfter<R extends object | null>(charge: Promise<R>): Promise<R>
  /**
   * Drops the held uses of `phones`: entries the charge left out though their request charged others
   * (a bulk's entries whose template stopped being approved, or whose price rose above their max_price).
   * The caller leaves out phones charged under another entry.
   */
  release(phones: string[]): Promise<void>
}

/** No hold: a send whose recipient uses no budget (an unlimited one, an open window) or a repeat. */
export const NO_HOLD: Held<never> = {
  fit: [],
  refused: [],
  settle: async () => {},
  settleAfter: (charge) => charge,
  release: async () => {},
}

/**
 * The messaging limit of a send's entries (single: one, bulk: its valid ones), before pace and charge:
 * those past their budget are refused, the uses of the others held under `requestToken` until settled.
 */
export async function holdMessagingLimit<T extends Entry>(
  deps: Pick<Deps, 'sql' | 'config' | 'clock'>,
  requestToken: string,
  entries: T[],
  /**
   * The business-initiated entries by budget, when the caller read them already (messages/admission.ts's
   * one read): no statement to find each sender's budget and the recipients' windows again.
   */
  known?: Map<string, { budget: Budget & { tier: number }; entries: T[] }>,
): Promise<Held<T>> {
  const refused: { entry: T; error: ApiError }[] = []
  const hold = { token: requestToken, seconds: Math.ceil(deps.config.sendWaitMs / 1000) + HOLD_MARGIN_SECONDS }
  let held = false
  const groups = known ?? (await byBudget(deps.sql, deps.clock, deps.config.messagingLimit, entries))
  for (const { budget, entries: mine } of groups.values()) {
    if (mine.length === 0) continue
    held = true
    const { fits, usage } = await take(
      deps.sql,
      deps.clock,
      budget,
      mine.map((e) => e.phone),
      hold,
      false,
    )
    mine.forEach((entry, i) => {
      if (fits[i]) return
      const error = new ApiError(
        'MESSAGING_LIMIT',
        `${fullText(budget, usage, deps.config.timezone, deps.clock)}. Messages to customers who wrote within 24 hours do not count; nothing was charged`,
        undefined,
        {},
        usage.freesAt ? { 'retry-after': String(secondsUntil(usage.freesAt, deps.clock)) } : {},
      )
      refused.push({ entry, error })
    })
  }
  const out = new Set(refused.map((r) => r.entry))
  const settle = async () => {
    if (!held) return // nothing counted (unlimited, or every recipient inside its window): nothing to settle
    // After the charge: a deadlock here must not fail a request whose messages are charged (safe to repeat).
    await retrying(
      () => deps.sql`
      with held as (
        select id, exists (select 1 from messages m where m.request_token = u.request_token) as charged
        from messaging_uses u where u.request_token = ${requestToken} and u.held_until is not null
      ), kept as (
        update messaging_uses set held_until = null where id in (select id from held where charged)
      )
      delete from messaging_uses where id in (select id from held where not charged)`,
      { retryIf: isRolledBack, clock: deps.clock },
    )
  }
  return {
    fit: entries.filter((e) => !out.has(e)),
    refused,
    settle,
    settleAfter: async (charge) => {
      let result
      try {
        result = await charge
      } catch (e) {
        await settle()
        throw e
      }
      if (result === null || 'refused' in result) await settle()
      return result
    },
    async release(phones) {
      if (!held || phones.length === 0) return
      await retrying(
        () => deps.sql`
        delete from messaging_uses
        where request_token = ${requestToken} and held_until is not null and phone = any(${phones}::text[])`,
        { retryIf: isRolledBack, clock: deps.clock },
      )
    },
  }
}

/**
 * A campaign batch's messaging limit, in the transaction that charges it: how many of `phones`, in
 * order, go now (their uses recorded, committed with the charge), and when none does, the campaign's
 * pause reason (it starts with MESSAGING_LIMIT: the scheduler resumes such a campaign once its budget frees).
 */
export async function takeForCampaign(
  tx: Tx,
  clock: Clock,
  config: { messagingLimit: number | null; timezone: string },
  senderId: number | null,
  phones: string[],
): Promise<{ fits: number; reason: string }> {
  const budget = await budgetOf(tx, senderId, config.messagingLimit)
  if (budget.tier === null) return { fits: phones.length, reason: '' }
  const open = await openWindows(tx, clock, senderId, phones)
  const business = phones.filter((p) => !open.has(p))
  const { fits, usage } = await take(tx, clock, budget as Budget & { tier: number }, business, null, true)
  const firstOut = business[fits.indexOf(false)]
  const n = firstOut === undefined ? phones.length : phones.indexOf(firstOut)
  return {
    fits: n,
    reason: `MESSAGING_LIMIT: ${fullText(budget as Budget & { tier: number }, usage, config.timezone, clock)}. It resumes by itself once budget frees`,
  }
}

/** Whether a budget (of `senderId`) has room for one more recipient now (`clock`'s): a limit-paused campaign may resume. */
export async function hasRoom(sql: Db, clock: Clock, defaultTier: number | null, senderId: number | null): Promise<boolean> {
  const budget = await budgetOf(sql, senderId, defaultTier)
  if (budget.tier === null) return true
  return (await usageOf(sql, clock, budget.key)).used < budget.tier
}
