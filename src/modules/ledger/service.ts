// Money has one owner: this module is the only code that writes `accounts.balance` or `ledger` rows,
// and prices are resolved by one SQL function, `account_price(account)` (sql/0007_money_owner.sql).
// Each movement is one statement (so one transaction, or part of the caller's): the balance update
// row-locks the account, and its ledger rows are written with it, so balance = sum(ledger) at every
// moment. Statements that lock several accounts lock them in id order, so they cannot deadlock.
//
// Charges carry the token of the request that made them, unique per (request, entry): running a
// charge again with the same token (after a lost COMMIT answer, a deadlock retry, an Idempotency-Key
// recovery) returns the charge already made instead of charging twice.
//
// A message whose final status is `failed` is refunded exactly what it was charged, once: a failed
// hand-off by refundFailed; a failure the provider reports after accepting it (a late failure) by
// statusMoney, inside the state machine's statement (status/machine.ts), unless its price keeps
// late failures charged. A charge fixes on its messages both the price and that choice
// (`refund_late_failure`, from the price's `refund_late_failures`, sql/0015): changing a price
// changes neither for messages already charged.
//
// A key's daily spend cap (api_keys.daily_spend_cap, sql/0016) is checked by the charge statements
// themselves: after the account, they lock the key's row (`for no key update`: the messages' foreign
// key still takes its share lock) and read what it was charged today in the service's time zone
// (spent_today, counted from 0 again once spend_day is not today), refuse what would pass the cap,
// and count what they charge on that row. The lock gives every statement the key's latest count, so
// the cap holds across concurrent requests and instances; the account comes first, as in updateKey
// (accounts/keys.ts), so the two cannot deadlock. The count is charges only: a refund gives money back
// to the balance, not room under the cap (README, "The integrator's limits"). Keys without a cap are
// locked but not written: setting a cap counts the key's charges of the day from its messages.
//
// An account's low-balance threshold (accounts.low_balance_threshold, sql/0021; null: none) is watched
// by the same statements: a charge that takes the balance from at or above the threshold to below it
// records one `balance.low` event in its own statement (lowBalanceEvents). The balance update holds
// the account's row lock, so concurrent debits see each other's results and exactly one of them
// crosses; a debit that starts below crosses nothing, so the event is sent once per crossing and
// re-arms by itself once a top-up or a refund brings the balance back to the threshold.
//
// Each movement is counted for GET /metrics (balanceMoved) once its statement succeeded. A statement
// run inside a caller's transaction that later rolls back (a database error) is counted anyway: the
// counters are for rates and alerts, the ledger table is the record.

import type { Db, Fragment, Sql, Tx } from '../../db/client'
import { Batcher } from '../../lib/batch'
import type { Clock } from '../../lib/clock'
import { nowOf } from '../../db/now'
import { messageUserId } from '../customers/service'
import { retrying } from '../../db/retry'
import type { Pricing, RichContent, StoredTemplate } from '../../providers/provider'
import { insertAccountEvents, insertEvents, statusPayload } from '../webhooks/events'
import { balanceMoved } from '../../http/metrics/measures'

/**
 * A message to charge and record: its text (a template's rendered text), and for a template message
 * which template it was and the approved template the provider is to be sent (messages/content.ts).
 */
export type NewMessage = {
  phone: string
  body: string
  mediaUrl: string | null
  templateId?: number | null
  providerTemplate?: StoredTemplate | null
  /** Its rich content (messages.content): what a recovered hand-off sends again. */
  content?: RichContent | null
  /** How long it may wait while the provider throttles it (messages.valid_until = now + this). */
  validitySeconds: number
  /** Its sender (null: the deployment's default sender). */
  senderId?: number | null
  /**
   * The category it is charged for; omitted: its WhatsApp template's category (`templateId` naming
   * one) at the moment of the charge, else `service` (the SQL function message_category).
   */
  category?: Category | null
  /** The provider's id of the message it answers, quoting it (messages.reply_to, issue 32). */
  replyTo?: string | null
  /**
   * The most it may cost (`max_price`; null or omitted: no cap). Admission refuses a message above it from
   * its read of the price; the charge statement checks it again against the price it charges, so a price
   * raised in between (while a send waited for its pace) is refused, not charged.
   */
  maxPrice?: number | null
}

/** WhatsApp's pricing categories: a message is charged the price of its category (sql/0042). */
export const CATEGORIES = ['marketing', 'utility', 'authentication', 'service'] as const
export type Category = (typeof CATEGORIES)[number]
/** The four prices of an account (or the global price), each resolved: its own, else `cost_per_message`. */
export type CategoryPrices = Record<Category, number>
/** What Meta's pricing report settles: to the price of the category it reports (`provider`), or not at all (`keep`). */
export type SettleMode = 'provider' | 'keep'

// Arrays of a batch's template columns (mostly nulls: free-form sends carry none).
const templateIds = (messages: NewMessage[]) => messages.map((m) => m.templateId ?? null) as number[]
const senderIds = (messages: NewMessage[]) => messages.map((m) => m.senderId ?? null) as number[]
const providerTemplates = (messages: NewMessage[]) =>
  messages.map((m) => (m.providerTemplate ? JSON.stringify(m.providerTemplate) : null)) as string[]
/** The WhatsApp templates of a batch's messages (messages/content.ts: provider_template.templateId). */
const waTemplateIds = (messages: NewMessage[]) => [
  ...new Set(messages.flatMap((m) => (m.providerTemplate?.templateId === undefined ? [] : [m.providerTemplate.templateId]))),
]
const contents = (messages: NewMessage[]) => messages.map((m) => (m.content ? JSON.stringify(m.content) : null)) as string[]
const replyTos = (messages: NewMessage[]) => messages.map((m) => m.replyTo ?? null) as string[]
const categories = (messages: NewMessage[]) => messages.map((m) => m.category ?? null) as string[]
const maxPrices = (messages: NewMessage[]) => messages.map((m) => m.maxPrice ?? null) as number[]
/**
 * `fresh`: this call made the charge; false when it found one made earlier with the same token.
 * `costs`: each message's price, in order (its category's); `cost`: the first one's.
 */
export type Charged = { ids: number[]; cost: number; costs: number[]; balanceAfter: number; fresh: boolean }
/**
 * A charge refused, nothing changed: the balance cannot pay, or it would take what the key was
 * charged today (`spentToday`) past its daily cap. The cap is checked first.
 */
export type Refused =
  | { refused: 'balance' }
  | { refused: 'spend_cap'; cap: number; spentToday: number }
  /** A WhatsApp template of the messages is no longer approved (chargeSingles, chargeAll): its status now. */
  | { refused: 'template'; status: string }
  /**
   * Messages whose price now is above their `maxPrice` (checked first, after the template): their
   * positions in the call's messages (0-based), categories and prices. Nothing was charged.
   */
  | { refused: 'price'; over: PriceOver[] }
/** A message the charge refused for its price cap: its position in the charge's messages, its category, price and cap. */
export type PriceOver = { index: number; category: Category; cost: number; maxPrice: number }
/** Who holds the hand-off of the charged messages, and for how long. */
export type Lease = { token: string; seconds: number }
type Owner = { accountId: number; keyId: number | null }

/**
 * CTEs recording a `balance.low` event for each account that this statement's debit took from at or
 * above its threshold to below it. `source` names a CTE of the statement with `account_id`,
 * `balance_before`, `balance_after` and `threshold` (read under the account's row lock).
 */
const lowBalanceEvents = (db: Db, tz: string, source: string, clock: Pick<Clock, 'sqlNow'>): Fragment => db`
  low_balance as (
    select account_id, 'balance.low' as event, account_id as ord,
           '{"balance":' || balance_after || ',"threshold":' || threshold || '}' as data
    from ${db(source)}
    where threshold is not null and balance_before >= threshold and balance_after < threshold
  ), low_balance_events as (${insertAccountEvents(db, tz, 'low_balance', clock)})`

/** Today in the service's time zone `tz`, as a SQL date: the day a key's spend counts in. */
const today = (db: Db, tz: string, clock: Pick<Clock, 'sqlNow'>): Fragment => db`(${nowOf(db, clock)} at time zone ${tz})::date`
/** The system's time: statements of callers that pass no clock take the database's now(). */
const SYSTEM: Pick<Clock, 'sqlNow'> = { sqlNow: () => null }

/**
 * The price of one message for an account now (the global price for null), whether it is the
 * account's own price, and whether it refunds messages that fail after the provider accepted them.
 */
export async function priceOf(
  db: Db,
  accountId: number | null,
): Promise<{
  cost: number
  overridden: boolean
  refundLateFailures: boolean
  prices: CategoryPrices
  /** The categories this price gives a price of their own (the others pay `cost`). */
  own: Partial<CategoryPrices>
  settle: SettleMode
}> {
  const [row] = await db<
    (CategoryPrices & {
      cost: number
      overridden: boolean
      refund_late_failures: boolean
      settle: SettleMode
      own: Partial<CategoryPrices>
    })[]
  >`
    select account_price(${accountId}) as cost,
           exists (select 1 from prices where account_id = ${accountId}) as overridden,
           account_refunds_late_failures(${accountId}) as refund_late_failures,
           account_category_price(${accountId}, 'marketing') as marketing, account_category_price(${accountId}, 'utility') as utility,
           account_category_price(${accountId}, 'authentication') as authentication,
           account_category_price(${accountId}, 'service') as service, account_settle(${accountId}) as settle,
           (select jsonb_strip_nulls(jsonb_build_object('marketing', p.marketing, 'utility', p.utility,
                                                        'authentication', p.authentication, 'service', p.service))
            from prices p where p.account_id = ${accountId} or p.account_id is null order by p.account_id is null limit 1) as own`
  const r = row!
  return {
    cost: r.cost,
    overridden: r.overridden,
    refundLateFailures: r.refund_late_failures,
    prices: { marketing: r.marketing, utility: r.utility, authentication: r.authentication, service: r.service },
    own: r.own,
    settle: r.settle,
  }
}

/**
 * The price of one message of `category` for an account now (the global price for null): the one
 * place a price is resolved (sql/0042's account_category_price), for the quote and the charges alike.
 */
export async function categoryPriceOf(db: Db, accountId: number | null, category: Category): Promise<number> {
  const [row] = await db<{ cost: number }[]>`select account_category_price(${accountId}, ${category}) as cost`
  return row!.cost
}

/** The category each template id's message is charged for now (null: a message without a template): `service` unless a WhatsApp template's. */
export async function categoriesOf(db: Db, templateIds: (number | null)[]): Promise<Category[]> {
  if (templateIds.length === 0) return []
  const rows = await db<{ category: Category }[]>`
    select message_category(t) as category from unnest(${templateIds as number[]}::bigint[]) with ordinality as v(t, ord) order by ord`
  return rows.map((r) => r.category)
}

/** As SQL: the price of a message of `category` (an expression) for account `account` (an expression). */
export const categoryPrice = (db: Db, account: Fragment, category: Fragment): Fragment =>
  db`account_category_price(${account}, ${category})`

/**
 * When a request token was made: a UUIDv7 (http/idempotency.ts makes them) carries its milliseconds in
 * its first 48 bits; null for another kind. A charge's messages take it as created_at, so every run of
 * one charge (a retry after a lost commit, a twin racing it) writes the same created_at and lands in
 * the same month, where the unique (request_token, request_item, created_at) refuses the second: the
 * guard holds across monthly partitions without an extra statement. (A lookup by token, global, finds
 * an earlier run first; this catches the one still uncommitted.)
 */
export function tokenTime(token: string): string | null {
  if (token[14] !== '7') return null
  const ms = parseInt(token.slice(0, 8) + token.slice(9, 13), 16)
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null
}

// staleCandidate: why a charge statement computes the new balance from the balance its locking CTE
// read, not from the row it updates. Under READ COMMITTED, PostgreSQL's UPDATE first builds the new row
// from the version its snapshot sees, and checks accounts_balance_not_negative on that candidate before
// it writes; only the write finds the row changed since, and then recomputes from the latest version
// (EvalPlanQual). A top-up or a refund that committed while the statement waited for the account's row
// lock is newer than its snapshot: `balance - cost` from that older version is below 0 whenever it is
// the credit that pays, and the check raised 23514 (a 500) for a charge the locked balance did pay.
// The locked balance is the latest (the lock is held until commit), so candidate and final row agree.
// (A credit only adds, so its candidate is never below 0; chargeRecorded runs after lockForCharge's
// statement, so its own snapshot sees the version it locked.)

/**
 * Charges the current price for every message and records them as queued under `lease`, in one
 * statement. Refused, with nothing changed, when the key's daily cap or the balance cannot take all
 * of them.
 */
export async function chargeAll(
  db: Db,
  tz: string,
  owner: Owner,
  requestToken: string,
  lease: Lease,
  messages: NewMessage[],
  clock: Pick<Clock, 'sqlNow'> = SYSTEM,
): Promise<Charged | Refused> {
  const now = nowOf(db, clock)
  const rows = await db<
    {
      id: number
      cost: number
      balance: number
      ord: number
      fresh: boolean
      refused: 'balance' | 'spend_cap' | 'template' | 'price' | null
      cap: number
      spent: number
      status: string | null
    }[]
  >`
    with existing as materialized (
      select m.id, m.cost, l.balance_after as balance, m.request_item as ord
      from messages m join ledger l on l.message_id = m.id and l.kind = 'charge'
      where m.request_token = ${requestToken}
    ), unapproved as materialized (
      -- A WhatsApp template a webhook paused, disabled or rejected after the request checked it: the
      -- statement charges nothing (the caller fails that template's entries and charges the rest).
      select w.status from wa_templates w
      where w.id = any(${waTemplateIds(messages)}::bigint[]) and w.status <> 'approved' and not exists (select 1 from existing)
      limit 1
    ), priced as materialized (
      -- Each message's category (given, else its WhatsApp template's, else service), that category's price,
      -- and whether that price is above the message's max_price: the price this statement charges, so a
      -- price raised since admission read it cannot be charged past the cap.
      select ord, category, cost, max_price, max_price is not null and cost > max_price as over_max
      from (select ord, category, max_price, account_category_price(${owner.accountId}, category) as cost
            from (select coalesce(given, message_category(template_id)) as category, max_price, ord
                  from unnest(${categories(messages)}::text[], ${templateIds(messages)}::bigint[], ${maxPrices(messages)}::bigint[])
                    with ordinality as p(given, template_id, max_price, ord)) c) p
    ), account as materialized (
      select a.balance, (select sum(cost) from priced)::bigint as cost, account_refunds_late_failures(a.id) as refund_late
      from accounts a
      where a.id = ${owner.accountId} and not exists (select 1 from existing)
      for update
    ), spender as materialized (
      -- After the account (the condition reads it first), as every charge and updateKey take them.
      select k.id, k.daily_spend_cap as cap, case when k.spend_day = ${today(db, tz, clock)} then k.spent_today else 0 end as spent
      from api_keys k
      where k.id = ${owner.keyId} and exists (select 1 from account)
      for no key update
    ), verdict as materialized (
      select a.*, s.cap, s.spent,
             case when exists (select 1 from unapproved) then 'template'
                  when exists (select 1 from priced where over_max) then 'price'
                  when s.cap is not null and s.spent + a.cost > s.cap then 'spend_cap'
                  when a.balance < a.cost then 'balance' end as refused
      from account a left join spender s on true
    ), debit as (
      -- From the balance read under the lock (v.balance), never accounts.balance: see staleCandidate.
      -- v.cost: the whole charge (the sum of the messages' prices).
      update accounts set balance = v.balance - v.cost
      from verdict v
      where accounts.id = ${owner.accountId} and v.refused is null
      returning accounts.balance, v.cost, v.refund_late, v.balance as balance_before, accounts.low_balance_threshold
    ), debit_moved as (
      select ${owner.accountId}::bigint as account_id, balance_before, balance as balance_after, low_balance_threshold as threshold
      from debit
    ), ${lowBalanceEvents(db, tz, 'debit_moved', clock)}, spend as (
      update api_keys k set spend_day = ${today(db, tz, clock)}, spent_today = s.spent + debit.cost
      from spender s, debit
      where k.id = s.id and s.cap is not null
    ), input as materialized (
      select nextval(pg_get_serial_sequence('messages', 'id')) as id, phone, body, media_url, template_id, provider_template, validity,
             sender_id, content, reply_to, ord
      from unnest(${messages.map((m) => m.phone)}::text[], ${messages.map((m) => m.body)}::text[],
                  ${messages.map((m) => m.mediaUrl) as string[]}::text[], ${templateIds(messages)}::bigint[],
                  ${providerTemplates(messages)}::text[], ${messages.map((m) => m.validitySeconds)}::int[],
                  ${senderIds(messages)}::bigint[], ${contents(messages)}::text[], ${replyTos(messages)}::text[])
           with ordinality as i(phone, body, media_url, template_id, provider_template, validity, sender_id, content, reply_to, ord)
      where exists (select 1 from debit)
    ), inserted as (
      insert into messages (id, account_id, api_key_id, phone, body, media_url, template_id, provider_template, status, cost,
                            category, refund_late_failure, request_token, request_item, handoff_token, handoff_until, valid_until,
                            sender_id, content, reply_to, created_at)
      select input.id, ${owner.accountId}, ${owner.keyId}, phone, body, media_url, template_id, provider_template::jsonb, 'queued', p.cost,
             p.category, debit.refund_late, ${requestToken}, input.ord, ${lease.token}, ${now} + make_interval(secs => ${lease.seconds}),
             ${now} + make_interval(secs => validity), sender_id, content::jsonb, reply_to, coalesce(${tokenTime(requestToken)}::timestamptz, ${now})
      from input join priced p using (ord), debit
    ), charged as (
      -- The balance after each message: what stays once it and those before it are paid.
      select input.id, input.ord, p.cost, debit.balance + debit.cost - (sum(p.cost) over (order by input.ord))::bigint as balance
      from input join priced p using (ord), debit
    ), ledger_rows as (
      insert into ledger (account_id, kind, amount, balance_after, message_id, created_at)
      select ${owner.accountId}, 'charge', -cost, balance, id, ${now}
      from charged
    )
    select id, cost, balance, ord, true as fresh, null as refused, null::bigint as cap, null::bigint as spent, null::text as status
    from charged
    union all
    select id, cost, balance, ord, false, null, null, null, null from existing
    union all
    select null, null, null, 0, false, refused, cap, spent, (select status from unapproved) from verdict
    where refused is not null and refused <> 'price'
    union all
    -- The messages above their max_price, each with its price, max_price (in cap) and category (in status).
    select null, cost, null, ord, false, 'price', max_price, null, category from priced
    where over_max and exists (select 1 from verdict where refused = 'price')
    order by ord`
  const refusal = rows.find((r) => r.refused !== null)
  if (refusal?.refused === 'template') return { refused: 'template', status: refusal.status! }
  if (refusal?.refused === 'price') {
    const over = rows.filter((r) => r.refused === 'price')
    return {
      refused: 'price',
      over: over.map((r) => ({ index: Number(r.ord) - 1, category: r.status as Category, cost: Number(r.cost), maxPrice: Number(r.cap) })),
    }
  }
  if (refusal?.refused === 'spend_cap') return { refused: 'spend_cap', cap: refusal.cap, spentToday: refusal.spent }
  if (refusal) return { refused: 'balance' }
  // No row at all: no such account, refused as a short balance (as before caps).
  if (rows.length === 0) return { refused: 'balance' }
  if (rows[0]!.fresh) balanceMoved('charge', rows.length, -rows.reduce((sum, r) => sum + r.cost, 0))
  return {
    ids: rows.map((r) => r.id),
    cost: rows[0]!.cost,
    costs: rows.map((r) => r.cost),
    balanceAfter: Math.min(...rows.map((r) => r.balance)),
    fresh: rows[0]!.fresh,
  }
}

export type SingleCharge = Owner & { requestToken: string; lease: Lease; message: NewMessage }

/**
 * Charges one message each for several requests, of one account or many, in one statement: what a
 * group commit of concurrent single sends writes. Each request is all-or-nothing, in arrival order: a
 * request that would take its key past its daily cap is refused, then one its account's balance
 * cannot pay (with one price per account, the balance refuses a tail of the requests the caps let
 * through, so a request refused never makes room for a later one).
 */
export async function chargeSingles(
  db: Db,
  tz: string,
  requests: SingleCharge[],
  clock: Pick<Clock, 'sqlNow'> = SYSTEM,
): Promise<(Charged | Refused)[]> {
  const now = nowOf(db, clock)
  const rows = await db<
    {
      ord: number
      id: number
      cost: number
      balance: number
      fresh: boolean
      refused: 'spend_cap' | 'template' | 'price' | null
      cap: number
      spent: number
      status: string | null
    }[]
  >`
    with input as (
      select * from unnest(${requests.map((r) => r.accountId)}::bigint[], ${requests.map((r) => r.keyId) as number[]}::bigint[],
                           ${requests.map((r) => r.requestToken)}::uuid[], ${requests.map((r) => r.lease.token)}::uuid[],
                           ${requests.map((r) => r.lease.seconds)}::int[],
                           ${requests.map((r) => r.message.phone)}::text[], ${requests.map((r) => r.message.body)}::text[],
                           ${requests.map((r) => r.message.mediaUrl) as string[]}::text[],
                           ${templateIds(requests.map((r) => r.message))}::bigint[],
                           ${providerTemplates(requests.map((r) => r.message))}::text[],
                           ${requests.map((r) => r.message.validitySeconds)}::int[],
                           ${senderIds(requests.map((r) => r.message))}::bigint[],
                           ${contents(requests.map((r) => r.message))}::text[],
                           ${requests.map((r) => tokenTime(r.requestToken)) as string[]}::text[],
                           ${categories(requests.map((r) => r.message))}::text[],
                           ${replyTos(requests.map((r) => r.message))}::text[],
                           ${maxPrices(requests.map((r) => r.message))}::bigint[])
        with ordinality as i(account_id, key_id, request_token, lease_token, lease_seconds, phone, body, media_url,
                             template_id, provider_template, validity, sender_id, content, created_at, given_category, reply_to,
                             max_price, ord)
    ), existing as materialized (
      -- The tokens as an array, not a join: the index is probed by token even when the statistics
      -- were taken while no message had one (they would plan a scan of every single send).
      select i.ord, m.id, m.cost, l.balance_after as balance
      from messages m
      join input i on i.request_token = m.request_token
      join ledger l on l.message_id = m.id and l.kind = 'charge'
      where m.request_token = any(${requests.map((r) => r.requestToken)}::uuid[]) and m.request_item = 1
    ), unapproved as materialized (
      -- A WhatsApp template (provider_template.templateId) read under this statement's snapshot: one that a
      -- webhook paused, disabled or rejected after the send checked it (while it waited for its pace, say)
      -- is refused here, uncharged, as the check would have refused it.
      select i.ord, w.status from input i
      join wa_templates w on w.id = (i.provider_template::jsonb->>'templateId')::bigint
      where i.ord not in (select ord from existing) and w.status <> 'approved'
    ), fresh as (
      select *, coalesce(given_category, message_category(template_id)) as category from input
      where ord not in (select ord from existing) and ord not in (select ord from unapproved)
    ), locked as materialized (
      select a.id, a.balance, account_refunds_late_failures(a.id) as refund_late
      from accounts a
      where a.id in (select account_id from fresh)
      order by a.id
      for update
    ), spenders as materialized (
      -- Once every account is locked (the count reads all of locked before this scan starts): an
      -- account, then its key, as updateKey takes them.
      select k.id, k.daily_spend_cap as cap, case when k.spend_day = ${today(db, tz, clock)} then k.spent_today else 0 end as spent
      from api_keys k
      where k.id in (select key_id from fresh) and (select count(*) from locked) > 0
      order by k.id
      for no key update
    ), priced as materialized (
      -- Its category's price, read once its account is locked, and whether it is above the request's
      -- max_price (the price charged here, not the one admission read: it may have been raised since).
      select f.*, p.cost, f.max_price is not null and p.cost > f.max_price as over_max, l.refund_late, l.balance as account_balance
      from fresh f join locked l on l.id = f.account_id
        cross join lateral (select account_category_price(f.account_id, f.category) as cost) p
    ), capped as materialized (
      -- A request over its max_price is refused before the spend cap counts it (admission's order).
      select f.*, s.cap, s.spent,
             not f.over_max and coalesce(s.spent + sum(f.cost) filter (where not f.over_max)
                                                     over (partition by f.key_id order by f.ord) > s.cap, false) as over_cap
      from priced f left join spenders s on s.id = f.key_id
    ), accepted as materialized (
      select nextval(pg_get_serial_sequence('messages', 'id')) as id, r.*
      from (
        select c.*, c.account_balance - (sum(c.cost) over (partition by c.account_id order by c.ord))::bigint as balance
        from capped c where not c.over_cap and not c.over_max
      ) r
      where r.balance >= 0
    ), debit as (
      -- From the balance read under the lock (account_balance), never a.balance: see staleCandidate.
      update accounts a set balance = s.account_balance - s.total
      from (select account_id, account_balance, sum(cost) as total from accepted group by account_id, account_balance) s
      where a.id = s.account_id
      returning a.id as account_id, a.balance + s.total as balance_before, a.balance as balance_after, a.low_balance_threshold as threshold
    ), ${lowBalanceEvents(db, tz, 'debit', clock)}, spend as (
      update api_keys k set spend_day = ${today(db, tz, clock)}, spent_today = s.spent + t.total
      from (select key_id, sum(cost) as total from accepted group by key_id) t join spenders s on s.id = t.key_id
      where k.id = t.key_id and s.cap is not null
    ), inserted as (
      insert into messages (id, account_id, api_key_id, phone, body, media_url, template_id, provider_template, status, cost,
                            category, refund_late_failure, request_token, request_item, handoff_token, handoff_until, valid_until,
                            sender_id, content, reply_to, created_at)
      select id, account_id, key_id, phone, body, media_url, template_id, provider_template::jsonb, 'queued', cost,
             category, refund_late, request_token, 1, lease_token, ${now} + make_interval(secs => lease_seconds),
             ${now} + make_interval(secs => validity), sender_id, content::jsonb, reply_to, coalesce(created_at::timestamptz, ${now})
      from accepted
    ), ledger_rows as (
      insert into ledger (account_id, kind, amount, balance_after, message_id, created_at)
      select account_id, 'charge', -cost, balance, id, ${now} from accepted
    )
    select ord::int as ord, id, cost, balance, true as fresh, null as refused, null::bigint as cap, null::bigint as spent,
           null::text as status from accepted
    union all
    select ord::int, id, cost, balance, false, null, null, null, null from existing
    union all
    select ord::int, null, null, null, false, 'template', null, null, status from unapproved
    union all
    select ord::int, null, cost, null, false, 'price', max_price, null, category from capped where over_max
    union all
    -- What the key was charged today includes this statement's charges before the refused request.
    select ord::int, null, null, null, false, 'spend_cap', cap,
           (spent + coalesce((select sum(a.cost) from accepted a where a.key_id = c.key_id), 0))::bigint, null
    from capped c where over_cap`
  const byOrd = new Map(rows.map((r) => [r.ord, r]))
  const charged = rows.filter((r) => r.fresh)
  balanceMoved('charge', charged.length, -charged.reduce((sum, r) => sum + r.cost, 0))
  return requests.map((_, i): Charged | Refused => {
    const row = byOrd.get(i + 1)
    if (!row) return { refused: 'balance' }
    if (row.refused === 'template') return { refused: 'template', status: row.status! }
    if (row.refused === 'price')
      return { refused: 'price', over: [{ index: 0, category: row.status as Category, cost: Number(row.cost), maxPrice: Number(row.cap) }] }
    if (row.refused === 'spend_cap') return { refused: 'spend_cap', cap: row.cap, spentToday: row.spent }
    return { ids: [row.id], cost: row.cost, costs: [row.cost], balanceAfter: row.balance, fresh: row.fresh }
  })
}

/**
 * Group commit of single-send charges: concurrent requests share one statement. A write that fails
 * (a deadlock, a reset connection, a lost COMMIT answer) is retried, item by item by the Batcher;
 * the request tokens make each retry find a charge that did commit instead of making a second one.
 */
export function createSingleCharger(sql: Sql, tz: string, clock: Clock): (request: SingleCharge) => Promise<Charged | Refused> {
  const batcher = new Batcher<SingleCharge, Charged | Refused>((requests) => retrying(() => chargeSingles(sql, tz, requests, clock)))
  return (request) => batcher.add(request)
}

/**
 * The account row locked for a charge in the caller's transaction: its balance and price now, and
 * whether that price refunds late failures (the caller records both on the messages it charges);
 * then the key's row (`keyId`; null: none), and what the key may still be charged today (by `clock`)
 * under its daily cap (`capRoom`; null: no cap).
 */
export async function lockForCharge(
  tx: Tx,
  tz: string,
  accountId: number,
  keyId: number | null,
  clock: Pick<Clock, 'sqlNow'>,
  /** The messages' template (a campaign's): their category is its WhatsApp template's, else `service`. */
  templateId: number | null = null,
): Promise<{ balance: number; cost: number; category: Category; refundLateFailure: boolean; capRoom: number | null; cap: number | null }> {
  const [row] = await tx<{ balance: number; cost: number; category: Category; refund_late: boolean }[]>`
    select balance, account_category_price(id, c.category) as cost, c.category, account_refunds_late_failures(id) as refund_late
    from accounts, (select message_category(${templateId}) as category) c where id = ${accountId} for update of accounts`
  const [key] = await tx<{ cap: number | null; spent: number }[]>`
    select daily_spend_cap as cap, case when spend_day = ${today(tx, tz, clock)} then spent_today else 0 end as spent
    from api_keys where id = ${keyId} for no key update`
  const cap = key?.cap ?? null
  return {
    balance: row!.balance,
    cost: row!.cost,
    category: row!.category,
    refundLateFailure: row!.refund_late,
    cap,
    capRoom: cap === null ? null : Math.max(0, cap - key!.spent),
  }
}

/**
 * Charges `cost` for each of `messageIds`, messages the caller's transaction has just recorded (a
 * campaign batch, after lockForCharge said how many the balance and the key's cap pay for), and
 * counts them in the key's spend today (by `clock`) when it has a cap.
 */
export async function chargeRecorded(
  tx: Tx,
  tz: string,
  owner: Owner,
  cost: number,
  messageIds: number[],
  clock: Pick<Clock, 'sqlNow'>,
): Promise<void> {
  if (messageIds.length === 0) return
  const total = cost * messageIds.length
  await tx`
    with debit as (
      update accounts set balance = balance - ${total} where id = ${owner.accountId}
      returning id as account_id, balance, balance + ${total} as balance_before, balance as balance_after, low_balance_threshold as threshold
    ), ${lowBalanceEvents(tx, tz, 'debit', clock)}, spend as (
      update api_keys set spend_day = ${today(tx, tz, clock)},
                          spent_today = case when spend_day = ${today(tx, tz, clock)} then spent_today else 0 end + ${total}
      where id = ${owner.keyId} and daily_spend_cap is not null
    )
    insert into ledger (account_id, kind, amount, balance_after, message_id, created_at)
    select ${owner.accountId}, 'charge', ${-cost}, debit.balance + ${cost} * (${messageIds.length} - v.ord), v.id, ${nowOf(tx, clock)}
    from debit, unnest(${messageIds}::bigint[]) with ordinality as v(id, ord)`
  balanceMoved('charge', messageIds.length, -total)
}

export type Failure = { id: number; errorCode: number | null; errorMessage: string }

/**
 * Marks failed hand-offs `failed` and refunds exactly what each was charged, one ledger row per
 * message. Only messages still queued change, so a refund can never happen twice.
 */
export async function refundFailed(
  db: Db,
  failures: Failure[],
  timezone: string,
  clock: Pick<Clock, 'sqlNow'>,
): Promise<{ ids: number[]; announced: number }> {
  if (failures.length === 0) return { ids: [], announced: 0 }
  const [row] = await db<{ ids: number[]; announced: number; refunded: number }[]>`
    with locked as materialized (
      select id from accounts
      where id in (select account_id from messages where id = any(${failures.map((f) => f.id)}::bigint[]) and status = 'queued')
      order by id
      for update
    ), failed as (
      update messages m
      set status = 'failed', failed_at = ${nowOf(db, clock)}, refunded_at = ${nowOf(db, clock)}, handoff_until = null,
          error_code = v.error_code, error_message = v.error_message
      from unnest(${failures.map((f) => f.id)}::bigint[], ${failures.map((f) => f.errorCode) as number[]}::int[],
                  ${failures.map((f) => f.errorMessage)}::text[]) as v(id, error_code, error_message)
      where m.id = v.id and m.status = 'queued' and m.account_id in (select id from locked)
      returning m.id, m.account_id, m.cost, m.api_key_id, m.phone, m.sender_id, m.error_code, m.error_message, m.announce_outcome
    ), per_account as (
      select account_id, sum(cost)::bigint as total from failed group by account_id
    ), credited as (
      update accounts set balance = accounts.balance + per_account.total
      from per_account
      where accounts.id = per_account.account_id
      returning accounts.id, accounts.balance - per_account.total as balance_before
    ), ledger_rows as (
      insert into ledger (account_id, kind, amount, balance_after, message_id)
      select failed.account_id, 'refund', failed.cost,
             credited.balance_before + sum(failed.cost) over (partition by failed.account_id order by failed.id),
             failed.id
      from failed join credited on credited.id = failed.account_id
    ), announced as (
      -- A message answered \`queued\` learns its outcome by its message.status event (queued → failed).
      select f.api_key_id, f.id as message_id, f.id as ord,
             ${statusPayload(
               db,
               timezone,
               db`null::text, f.phone, 'failed', 'queued', f.error_code, f.error_message, false, true, ${messageUserId(db, db`f.sender_id`, db`f.phone`)}`,
               clock,
             )} as payload
      from failed f where f.announce_outcome
    ), event as (${insertEvents(db, 'announced', { clock })})
    select array(select id from failed) as ids, (select count(*)::int from event) as announced,
           (select coalesce(sum(cost), 0)::bigint from failed) as refunded`
  balanceMoved('refund', row!.ids.length, row!.refunded)
  return { ids: row!.ids, announced: row!.announced }
}

/**
 * Whether message row `m` (read under its lock) is refunded when it fails now: it has not been
 * refunded, it was charged under a price that refunds late failures, and it went through the default
 * number or a stored sender whose late failures the operator trusts (`senders.late_failures`: a tenant
 * holding its sender's credentials could sign `failed` for its own delivered messages). As SQL, for
 * the state machine's statement, which marks it `refunded_at` with the status change.
 */
export const refundsWhenFailing = (sql: Db, m: string): Fragment =>
  sql`(${sql(m)}.refunded_at is null and ${sql(m)}.refund_late_failure) and ${trustedSender(sql, m)}`
const trustedSender = (sql: Db, m: string): Fragment =>
  sql`(${sql(m)}.sender_id is null or exists (select 1 from senders s where s.id = ${sql(m)}.sender_id and s.late_failures = 'refund'))`

// Settlement on the provider's word (sql/0043). Meta's status webhooks say how it priced each message
// (`pricing`). The category it reports, mapped onto the four (reportedCategory), or `service` when it
// marks the message free, settles the message once: its cost becomes that category's price now for its
// account (unless the account's price keeps charges: `settle: keep`), with one `settlement` ledger row,
// in the state machine's statement, so the status change and its money commit together. The guard is
// the message's settled_at, read under the message's row lock: a repeated, late or out-of-order report
// finds it set and moves nothing. A downward difference is given back; an upward one takes what the
// balance has after the statement's credits (never below 0), messages in id order, and what it could not
// take stays on the message as `unsettled` (for the reconciliation). Accounts are locked in id order
// after the messages, as the late failures' refunds always were (one lock for both: an account's row is
// updated once per statement).

/** Meta's pricing categories onto the four this service prices (README, "Prices per category"). */
export const PROVIDER_CATEGORIES: Readonly<Record<string, Category>> = {
  marketing: 'marketing',
  marketing_lite: 'marketing',
  utility: 'utility',
  authentication: 'authentication',
  authentication_international: 'authentication',
  service: 'service',
  referral_conversion: 'service',
}

/**
 * The category a provider's pricing report settles a message to: `service` when it is free (a
 * `free_*` type, or the retiring `billable: false`), else its category mapped onto the four; null
 * when it says nothing this service can price (no report, an unknown category).
 */
export function reportedCategory(pricing: Pricing | null | undefined): Category | null {
  if (!pricing) return null
  if (pricing.type?.startsWith('free') || pricing.billable === false) return 'service'
  return pricing.category ? (PROVIDER_CATEGORIES[pricing.category] ?? null) : null
}

/**
 * As SQL, for the state machine's statement: the difference a settlement to `reported` makes to message
 * row `m` (read under its lock; 0 when its account's price keeps charges or the category is the one
 * charged).
 */
export const settlementDifference = (sql: Db, m: string, reported: Fragment): Fragment =>
  sql`case when ${reported} is not null and ${reported} <> ${sql(m)}.category and ${settlesByProvider(sql, m, reported)}
           then account_category_price(${sql(m)}.account_id, ${reported}) - ${sql(m)}.cost else 0 end`

/**
 * Whether the provider's category settles message `m` (else the charge is kept and Meta's category only
 * recorded): the account's price settles (`settle: provider`) and, when the settlement would give money
 * back, the report came through a sender whose reports the operator trusts with money, as for late
 * failures (trustedSender): a tenant holding its own sender's secret can sign a report of its own
 * messages, and must not price them down by it.
 */
export const settlesByProvider = (sql: Db, m: string, reported: Fragment): Fragment =>
  sql`(account_settle(${sql(m)}.account_id) = 'provider'
       and (account_category_price(${sql(m)}.account_id, ${reported}) >= ${sql(m)}.cost or ${trustedSender(sql, m)}))`

/**
 * CTEs of the state machine's statement, before it updates the messages: the accounts of `source`'s
 * money locked in id order (`status_money_accounts`), and what each upward settlement takes
 * (`settle_takes`: id, taken). `source` names a CTE with `id`, `account_id`, `cost`, `refund` (a late
 * failure refunded now) and `diff` (a settlement's difference, 0 for none) of the messages it locked.
 */
export const settlementTakes = (sql: Db, source: string): Fragment => sql`
  status_money_accounts as materialized (
    select id, balance from accounts
    where id in (select account_id from ${sql(source)} where refund or diff <> 0)
    order by id for update
  ), status_credits as materialized (
    select account_id, sum(case when refund then cost else -diff end)::bigint as total
    from ${sql(source)} where refund or diff < 0 group by account_id
  ), settle_takes as materialized (
    -- Greedy in id order: the first upward differences take all they ask while the balance (after this
    -- statement's credits) lasts, the one that meets its end takes the rest, the later ones nothing.
    select u.id, u.account_id, u.diff,
           least(a.balance + coalesce(c.total, 0), u.asked) - least(a.balance + coalesce(c.total, 0), u.asked - u.diff) as taken
    from (select id, account_id, diff, sum(diff) over (partition by account_id order by id) as asked
          from ${sql(source)} where diff > 0) u
    join status_money_accounts a on a.id = u.account_id
    left join status_credits c on c.account_id = u.account_id
  )`

/**
 * CTEs of the state machine's statement, after it updated the messages: the money of `source` (as
 * for settlementTakes) moved, one ledger row per message (credits first, then the takes, each in id
 * order), and a `balance.low` event where a settlement crossed the threshold. Nothing when none moves.
 */
export const statusMoney = (sql: Db, source: string, tz: string, clock: Pick<Clock, 'sqlNow'>): Fragment => sql`
  status_movements as materialized (
    select id, account_id, 0 as phase, 'refund' as kind, cost as amount,
           'the provider reported it failed after accepting it' || coalesce(' (error ' || error_code || ')', '') as note
    from ${sql(source)} where refund
    union all
    select id, account_id, 0, 'settlement', -diff, 'settled to ' || reported || ', as the provider priced it'
    from ${sql(source)} where diff < 0
    union all
    select k.id, k.account_id, 1, 'settlement', -k.taken,
           'settled to ' || s.reported || ', as the provider priced it' ||
           case when k.taken < k.diff then ' (' || (k.diff - k.taken) || ' not taken: the balance did not have it)' else '' end
    from settle_takes k join ${sql(source)} s on s.id = k.id where k.taken > 0
  ), status_moved as (
    -- From the balance read under the lock (status_money_accounts), never accounts.balance: see staleCandidate.
    update accounts set balance = a.balance + m.total
    from (select account_id, sum(amount)::bigint as total from status_movements group by account_id) m
      join status_money_accounts a on a.id = m.account_id
    where accounts.id = m.account_id
    returning accounts.id as account_id, a.balance as balance_before, accounts.balance as balance_after,
              accounts.low_balance_threshold as threshold
  ), ${lowBalanceEvents(sql, tz, 'status_moved', clock)}, status_ledger_rows as (
    insert into ledger (account_id, kind, amount, balance_after, message_id, note, created_at)
    select v.account_id, v.kind, v.amount,
           a.balance + sum(v.amount) over (partition by v.account_id order by v.phase, v.id), v.id, v.note, ${nowOf(sql, clock)}
    from status_movements v join status_money_accounts a on a.id = v.account_id
  )`

/**
 * A top-up (positive), an adjustment (signed) or an account's opening balance: the balance update and
 * its ledger row in one statement. Null, with nothing changed, when it would make the balance negative.
 */
export async function credit(
  db: Db,
  accountId: number,
  kind: 'topup' | 'adjustment',
  amount: number,
  note: string | null,
  /** The dashboard user who made it; null for the admin API and the CLI. */
  createdBy: number | null = null,
  clock: Pick<Clock, 'sqlNow'> = SYSTEM,
): Promise<{ balance: number } | null> {
  const [row] = await db<{ balance: number }[]>`
    with credited as (
      update accounts set balance = balance + ${amount} where id = ${accountId} and balance + ${amount} >= 0 returning balance
    ), ledger_row as (
      insert into ledger (account_id, kind, amount, balance_after, note, created_by, created_at)
      select ${accountId}, ${kind}, ${amount}, balance, ${note}, ${createdBy}, ${nowOf(db, clock)} from credited
    )
    select balance from credited`
  if (row) balanceMoved(kind, 1, amount)
  return row ?? null
}

/** A price's optional parts: each omitted keeps what the price has (a new own price: none of its own, the account's choices now). */
export type PriceOptions = {
  refundLateFailures?: boolean
  /** Each category's own price; null removes it (the category pays `cost_per_message` again). */
  prices?: Partial<Record<Category, number | null>>
  settle?: SettleMode
}

/**
 * Sets the global price (accountId null) or one account's own price: `cost_per_message`, each
 * category's own price, whether it refunds late failures and whether Meta's pricing settles its
 * messages. Parts omitted keep the choice the account has now (for a new own price: the global
 * price's choices, and no category prices of its own), so setting a price alone never changes them.
 * Every change is kept in price_changes, in the same statement.
 */
export async function setPrice(
  db: Db,
  accountId: number | null,
  cost: number,
  options: PriceOptions = {},
  clock: Pick<Clock, 'sqlNow'> = SYSTEM,
): Promise<void> {
  const refund = options.refundLateFailures ?? null
  const settle = options.settle ?? null
  const given = options.prices ?? {}
  // Per category: whether it was given (a null given removes it), and its value.
  const has = (c: Category) => c in given
  const value = (c: Category) => given[c] ?? null
  const now = nowOf(db, clock)
  const part = (c: Category, current: Fragment) => db`case when ${has(c)}::boolean then ${value(c)}::bigint else ${current} end`
  if (accountId === null) {
    await db`
      with changed as (
        update prices set cost_per_message = ${cost}, refund_late_failures = coalesce(${refund}::boolean, refund_late_failures),
                          marketing = ${part('marketing', db`marketing`)}, utility = ${part('utility', db`utility`)},
                          authentication = ${part('authentication', db`authentication`)}, service = ${part('service', db`service`)},
                          settle = coalesce(${settle}::text, settle), updated_at = ${now}
        where account_id is null
        returning *
      )
      insert into price_changes (account_id, cost_per_message, marketing, utility, authentication, service, refund_late_failures, settle, changed_at)
      select null, cost_per_message, marketing, utility, authentication, service, refund_late_failures, settle, ${now} from changed`
  } else {
    await db`
      with changed as (
        insert into prices (account_id, cost_per_message, refund_late_failures, marketing, utility, authentication, service, settle, updated_at)
        values (${accountId}, ${cost}, coalesce(${refund}::boolean, account_refunds_late_failures(${accountId})),
                ${value('marketing')}::bigint, ${value('utility')}::bigint, ${value('authentication')}::bigint, ${value('service')}::bigint,
                coalesce(${settle}::text, account_settle(${accountId})), ${now})
        on conflict (account_id) where account_id is not null
        do update set cost_per_message = excluded.cost_per_message,
                      refund_late_failures = coalesce(${refund}::boolean, prices.refund_late_failures),
                      marketing = ${part('marketing', db`prices.marketing`)}, utility = ${part('utility', db`prices.utility`)},
                      authentication = ${part('authentication', db`prices.authentication`)},
                      service = ${part('service', db`prices.service`)},
                      settle = coalesce(${settle}::text, prices.settle), updated_at = ${now}
        returning *
      )
      insert into price_changes (account_id, cost_per_message, marketing, utility, authentication, service, refund_late_failures, settle, changed_at)
      select account_id, cost_per_message, marketing, utility, authentication, service, refund_late_failures, settle, ${now} from changed`
  }
}

/** Removes an account's own price: it pays the global price again (kept in price_changes as `removed`). */
export async function clearPrice(db: Db, accountId: number, clock: Pick<Clock, 'sqlNow'> = SYSTEM): Promise<void> {
  await db`
    with removed as (delete from prices where account_id = ${accountId} returning account_id)
    insert into price_changes (account_id, removed, changed_at) select account_id, true, ${nowOf(db, clock)} from removed`
}

export type PriceChange = {
  account_id: number | null
  cost_per_message: number | null
  prices: Partial<CategoryPrices>
  refund_late_failures: boolean | null
  settle: SettleMode | null
  removed: boolean
  changed_at: Date
}

/** The history of the global price (null) or of one account's own price, newest first (at most `limit`). */
export async function priceHistory(db: Db, accountId: number | null, limit = 50): Promise<PriceChange[]> {
  const rows = await db<(Omit<PriceChange, 'prices'> & Partial<Record<Category, number | null>>)[]>`
    select account_id, cost_per_message, marketing, utility, authentication, service, refund_late_failures, settle, removed, changed_at
    from price_changes where coalesce(account_id, 0) = ${accountId ?? 0}
    order by id desc limit ${limit}`
  return rows.map(({ marketing, utility, authentication, service, ...r }) => ({
    ...r,
    prices: Object.fromEntries(
      Object.entries({ marketing, utility, authentication, service }).filter(([, v]) => v !== null && v !== undefined),
    ) as Partial<CategoryPrices>,
  }))
}
