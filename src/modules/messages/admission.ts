// One place admits a message (issue 31, §4): every rule that refuses a message before it is charged lives
// here, and the single send, the bulk, the quote (POST /messages/quote) and campaigns all use it, so they
// cannot disagree. A message is refused by the first rule it fails, in this order, and nothing is charged:
//
//   1. its values (VALIDATION_ERROR: the phone, the text, the rich content, the variables, validity_seconds)
//   2. its sender: one of the account's, enabled (VALIDATION_ERROR, SENDER_DISABLED)
//   3. its template's status: a WhatsApp template approved, and its sender's own (TEMPLATE_NOT_APPROVED)
//   4. the recipient's opt-out (RECIPIENT_OPTED_OUT)
//   5. the 24-hour window, for a free-form message through a sender held to it (WINDOW_CLOSED)
//   6. the price cap: the message's category price above its `max_price` (PRICE_ABOVE_MAX)
//   7. the sender's messaging limit, for a business-initiated message (MESSAGING_LIMIT)
//   8. the sender's pace, for a single send (RATE_LIMITED)
//   9. the API key's daily spend cap (SPEND_CAP_REACHED), then
//  10. the balance (INSUFFICIENT_BALANCE): both in the charge's own statement (ledger/service.ts).
//
// Rules 1 to 3 need no statement of their own beyond reading the templates and senders named. Rules 4
// to 6 are judged from one read (`readFacts`): the opt-out, when the recipient last wrote to the sender,
// the price of the message's category, the budget and its use, the balance and the key's room under its
// cap, and whether this request charged already (a repeat after a crash goes on with what it charged).
// Concurrent single sends share that read (a group read, like the charge's group commit). A single send
// is then at most three round trips: the read, its slot at the pace, the charge (plus the messaging
// limit's hold when its sender has a tier and the recipient's window is closed).
//
// The quote judges the same rules from the same read and takes nothing: no pace slot, no budget use, no
// charge. What it says a bulk made right after would do, the bulk does (tests/messages/quote.test.ts).

import type { Deps } from '../../deps'
import type { Db, Sql } from '../../db/client'
import type { Clock } from '../../lib/clock'
import { Batcher } from '../../lib/batch'
import { nowOf } from '../../db/now'
import { ApiError, badValue } from '../../http/errors'
import { categoryPrice, type Category, type NewMessage } from '../ledger/service'
import type { Sender } from '../senders/directory'
import { findTemplate, usableTemplate, type WaTemplate } from '../templates/catalog'
import { loadTemplates, templateContent, type SendTemplate } from '../templates/render'
import { fillTemplate, requireApproved, requireSenderOf, type FillOptions } from '../templates/fill'
import { optionalMediaUrl, requireMessageBody, requirePhone } from '../../http/values'
import { optedOutError } from '../optouts/service'
import { WINDOW_HOURS } from '../inbound/window'
import { quotedMessage } from '../inbound/quotes'
import { linkedPhone } from '../customers/service'
import { isUserId } from '../../lib/user-id'
import { BUDGET_HOURS } from '../budgets/service'
import { MAX_VALIDITY_SECONDS, MIN_VALIDITY_SECONDS } from '../../lib/validate'
import { renderText, requireSupported, richOf, type RichFields } from './rich'
import { accountMedia } from '../media/service'
import { linkStart } from '../media/signing'
import { checksWindow, freeForm, windowClosed } from './window'
import { restrictedSql, type Restricted } from '../senders/health'

/** A message's category, as WhatsApp prices it: its template's category, else `service` (a free-form message). */
export type { Category }
export const categoryOf = (wa: Pick<WaTemplate, 'category'> | null | undefined): Category => wa?.category ?? 'service'

/** What a send or a bulk entry gives that admission reads (SendBody and a bulk entry both are). */
export type EntryInput = RichFields & { to: string; from?: string; validity_seconds?: number; max_price?: number }

/** An entry that passed rules 1 to 3: the message to charge, its sender, category and price cap. */
export type Prepared = NewMessage & {
  index: number
  provider: string
  sender: Sender
  category: Category
  maxPrice: number | null
  /** Its `to` as given (a refused entry is answered with it; else its phone). */
  givenTo?: string
  /**
   * Its WhatsApp template, whose status (rule 3) judge() checks with the facts: a repeat of a request
   * whose first run charged it goes on whatever the status is now (a webhook may have paused it since).
   */
  waTemplate?: WaTemplate
}

/** An entry refused before the charge: its index and its error (the code a send answers, a bulk entry fails with). */
export type Refusal = { index: number; to: string; error: ApiError }

/** A request's validity_seconds (422 outside its range), else the default. */
export function validityOf(given: number | undefined, fallback: number, field: string): number {
  if (given === undefined) return fallback
  if (given < MIN_VALIDITY_SECONDS || given > MAX_VALIDITY_SECONDS) {
    throw badValue(`${field}: must be from ${MIN_VALIDITY_SECONDS} to ${MAX_VALIDITY_SECONDS} seconds (got ${given})`)
  }
  return given
}

/** The `from` of a WhatsApp template's own sender (undefined: the deployment's default sender). */
export const senderOfTemplate = (t: WaTemplate): string | undefined => (t.sender_id === null ? undefined : String(t.sender_id))

/**
 * The template a message from `senderId` sends for `t`: `t` itself when it is that sender's, else that
 * sender's template of the same name and language when it has one (a template kept by several senders),
 * else `t` (refused by waTemplateMessage: another sender's).
 */
export async function templateForSender(sql: Db, t: WaTemplate, senderId: number | null): Promise<WaTemplate> {
  if ((t.sender_id ?? null) === (senderId ?? null)) return t
  return (await findTemplate(sql, senderId, t.name, t.language)) ?? t
}

/**
 * Rule 2 for a WhatsApp template, then its values: the filled template. Its status (rule 3) is judged
 * with the facts (notApproved, in judge), except that a template not approved answers that before
 * its values' errors.
 */
export function waTemplateMessage(
  t: WaTemplate,
  input: EntryInput,
  rich: ReturnType<typeof richOf>,
  sender: Sender,
  at: string,
  options: FillOptions = {},
) {
  requireSenderOf(t, sender.id, at)
  try {
    return fillTemplate(t, input, rich, sender.providerName, at, options)
  } catch (error) {
    requireApproved(t, at)
    throw error
  }
}

/** Rule 3: the 422 TEMPLATE_NOT_APPROVED of an entry whose WhatsApp template is not approved now, else null. */
export function notApproved(p: Pick<Prepared, 'waTemplate'>, at: string): ApiError | null {
  if (!p.waTemplate || p.waTemplate.status === 'approved') return null
  try {
    requireApproved(p.waTemplate, at)
  } catch (error) {
    if (error instanceof ApiError) return error
    throw error
  }
  return null
}

/** The extension fields of a WhatsApp template only: an account template takes `variables` and header media alone. */
export function requireNoWaFields(input: { header?: unknown; buttons?: unknown }, at: string): void {
  if (typeof input.header === 'string')
    throw badValue(`${at}header: a text header is for a WhatsApp template only (template_id names an account template)`)
  if (input.buttons !== undefined) throw badValue(`${at}buttons: only with a WhatsApp template (template_id names an account template)`)
}

/** Header media goes with an approved template of the provider only: an unbound template is sent as its text. */
export function requireHeaderBound(header: ReturnType<typeof richOf>, bound: unknown, at: string): void {
  if (header && !bound) {
    throw badValue(
      `${at}header: the template is not bound to an approved template of the sender's provider, so it goes as text and ` +
        'cannot carry header media; nothing was charged',
    )
  }
}

/** `max_price` (extension): a whole number of the balance's units, 0 or more. */
function maxPriceOf(given: number | undefined, at: string): number | null {
  if (given === undefined) return null
  if (!Number.isSafeInteger(given) || given < 0) throw badValue(`${at}max_price: must be a whole number, 0 or more (got ${given})`)
  return given
}

/**
 * Rules 1 to 3 for every entry (a single send: one), in order: each entry's message, or its refusal.
 * The request's templates are read once each and the account templates once per provider in use,
 * whatever the number of entries. `at(i)`: the entry's path in errors (`messages[3].`, or '' for a send).
 */
export async function prepareEntries(
  deps: Pick<Deps, 'sql' | 'senders' | 'config'>,
  accountId: number,
  entries: EntryInput[],
  at: (index: number) => string,
): Promise<(Prepared | Refusal)[]> {
  const waTemplates = new Map<number, WaTemplate>()
  for (const id of new Set(entries.flatMap((m) => (m.template_id === undefined ? [] : [m.template_id])))) {
    const wa = await usableTemplate(deps.sql, accountId, id)
    if (wa) waTemplates.set(id, wa)
  }
  const waOf = (m: { template_id?: number }) => (m.template_id === undefined ? undefined : waTemplates.get(m.template_id))
  // A WhatsApp template (issue 30) goes from its own sender unless the entry's `from` names one.
  const senders = await Promise.all(
    entries.map((m, index) => {
      const wa = waOf(m)
      return deps.senders
        .forSend(accountId, m.from ?? (wa ? senderOfTemplate(wa) : undefined), `${at(index)}from`)
        .catch((error: unknown) => error)
    }),
  )
  const ownTemplates = new Map<string, WaTemplate>()
  const entryTemplates: (WaTemplate | undefined)[] = []
  for (const [index, m] of entries.entries()) {
    const wa = waOf(m)
    const sender = senders[index]
    if (!wa || sender instanceof Error) continue
    const senderId = (sender as Sender).id
    const key = `${senderId ?? 0}:${wa.id}`
    if (!ownTemplates.has(key)) ownTemplates.set(key, await templateForSender(deps.sql, wa, senderId))
    entryTemplates[index] = ownTemplates.get(key)
  }
  const templateIds = [...new Set(entries.flatMap((m) => (m.template_id === undefined || waOf(m) ? [] : [m.template_id])))]
  const templatesByProvider = new Map<string, Map<number, SendTemplate>>()
  for (const provider of new Set(senders.flatMap((s) => (s instanceof Error ? [] : [(s as Sender).providerName])))) {
    templatesByProvider.set(
      provider,
      templateIds.length > 0 ? await loadTemplates(deps.sql, accountId, templateIds, provider) : new Map<number, SendTemplate>(),
    )
  }
  // The customer each entry goes to: a phone, or a WhatsApp user id (issue 32).
  const recipients = await Promise.all(
    entries.map((entry, index) => {
      const found = senders[index]
      if (found instanceof Error) return found
      return recipientOf(deps.sql, found as Sender, entry.to, `${at(index)}to`).catch((error: unknown) => error)
    }),
  )
  // The messages entries quote or react to (issue 32), resolved to the provider's ids in the conversation.
  const quoted = await Promise.all(
    entries.map(async (entry, index) => {
      const found = senders[index]
      const ref = entry.reply_to ?? (entry.type === 'reaction' ? entry.reaction?.message_id?.trim() : undefined)
      const phone = recipients[index]
      if (ref === undefined || found instanceof Error || typeof phone !== 'string') return null
      return await quotedMessage(deps.sql, accountId, (found as Sender).id, phone, ref)
    }),
  )
  // Files uploaded here that entries send by `media_id` (issue 32): the account's own only, one read.
  const mediaIds = entries.flatMap((e) => {
    // A media object's, or a template header's.
    const media = (typeof e.header === 'object' ? e.header : (e as Record<string, unknown>)[e.type ?? 'text']) as
      { media_id?: unknown } | undefined
    return typeof media?.media_id === 'string' ? [media.media_id.trim()] : []
  })
  const files = mediaIds.length > 0 ? await accountMedia(deps.sql, accountId, mediaIds) : new Map()
  // Where a provider that fetches media by URL (Twilio) gets an uploaded file: this service's signed link.
  const fill: FillOptions = { uploadedLink: (id) => linkStart(deps.config.publicBaseUrl, id) }
  return entries.map((entry, index): Prepared | Refusal => {
    const path = at(index)
    try {
      const found = senders[index]
      if (found instanceof Error) throw found
      const sender = found as Sender
      const { id: senderId, providerName: provider } = sender
      const recipient = recipients[index]
      if (typeof recipient !== 'string') throw recipient
      const phone = recipient
      const validitySeconds = validityOf(entry.validity_seconds, deps.config.messageValiditySeconds, `${path}validity_seconds`)
      const maxPrice = maxPriceOf(entry.max_price, path)
      let rich = richOf(entry, path)
      const wa = entryTemplates[index]
      // A kind the sender's provider cannot send is refused here, before anything is charged. A WhatsApp
      // template's header media is judged against the template itself (templates/fill.ts: a Twilio
      // template's media URL says what it takes), an account template's by the provider's kinds.
      if (!(wa && rich?.type === 'template')) requireSupported(rich, sender.provider, path)
      if (rich && 'media_id' in rich && rich.media_id !== undefined) rich = withUploadedFile(rich, files, `${path}${rich.type}.media_id`)
      if (rich?.type === 'template' && rich.header.media_id !== undefined)
        rich = { type: 'template', header: withUploadedFile(rich.header, files, `${path}header.media_id`) }
      if (rich?.type === 'reaction')
        rich = { ...rich, message_id: requireQuoted(quoted[index] ?? null, phone, `${path}reaction.message_id`) }
      const replyTo = entry.reply_to === undefined ? null : requireQuoted(quoted[index] ?? null, phone, `${path}reply_to`)
      if (replyTo !== null && sender.provider.quoteProblem) throw badValue(`${path}${sender.provider.quoteProblem}; nothing was charged`)
      const base = { index, provider, sender, senderId, phone, validitySeconds, maxPrice, replyTo, givenTo: entry.to }
      if (wa) {
        const filled = waTemplateMessage(wa, entry, rich, sender, path, fill)
        return { ...base, mediaUrl: null, ...filled, category: categoryOf(wa), waTemplate: wa }
      }
      if (entry.template_id !== undefined) {
        const template = templatesByProvider.get(provider)!.get(entry.template_id)
        if (template) requireNoWaFields(entry, path)
        const content = templateContent(template, { ...entry, template_id: entry.template_id }, provider, path)
        requireHeaderBound(rich, content.providerTemplate, path)
        return { ...base, mediaUrl: null, ...content, content: rich, category: 'service' }
      }
      if (rich) return { ...base, body: renderText(rich), mediaUrl: null, content: rich, category: 'service' }
      const body = requireMessageBody(entry.body!, `${path}body`)
      const mediaUrl = optionalMediaUrl(entry.media_url, `${path}media_url`)
      return { ...base, body, mediaUrl, category: 'service' }
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      return { index, to: entry.to, error }
    }
  })
}

/**
 * A medium uploaded here (`media_id` of a media object or a template header; `field` names it): the account's own (404 for another's or an unknown one,
 * nothing charged), of the message's kind (422); a document without a name takes the file's.
 */
export function withUploadedFile<T extends { type: string; media_id: string; filename?: string }>(
  rich: T,
  files: Map<string, { kind: string; type: string; filename: string | null }>,
  field: string,
): T {
  const file = files.get(rich.media_id)
  if (!file) {
    throw new ApiError(
      'NOT_FOUND',
      `${field}: no file ${rich.media_id.slice(0, 40)} in this account (POST /api/v1/media uploads one); nothing was charged`,
    )
  }
  if (file.kind !== rich.type) {
    throw badValue(
      `${field}: file ${rich.media_id} is ${file.kind === 'image' ? 'an' : 'a'} ${file.kind} (${file.type}), not ${rich.type === 'image' ? 'an' : 'a'} ${rich.type}; nothing was charged`,
    )
  }
  if (rich.type === 'document' && rich.filename === undefined && file.filename) return { ...rich, filename: file.filename }
  return rich
}

/**
 * The customer's key an entry's `to` names: a phone (requirePhone), or a WhatsApp business-scoped user id
 * (issue 32) through a sender whose provider reaches one (Meta): the phone Meta linked it to on that
 * sender, else the user id itself. Any other provider: 422 before anything is charged.
 */
async function recipientOf(db: Db, sender: Sender, to: string, field: string): Promise<string> {
  const userId = to.trim()
  if (!isUserId(userId)) return requirePhone(to, field)
  if (!sender.provider.userIds) {
    throw badValue(
      `${field}: a WhatsApp user id reaches a customer only through a Meta sender, and this send goes through a ` +
        `${sender.providerName} sender: send to the customer's phone, or choose a Meta sender with from; nothing was charged`,
    )
  }
  return (await linkedPhone(db, sender.id, userId)) ?? userId
}

/** The quoted message's provider id, or 422: it is not a message of this conversation (nothing charged). */
function requireQuoted(found: string | null, phone: string, field: string): string {
  if (found === null) {
    throw badValue(
      `${field}: not a message of this account's conversation with ${phone} through this sender ` +
        '(an inbound message id, or a provider message id of the conversation); nothing was charged',
    )
  }
  return found
}

export const isRefusal = (p: Prepared | Refusal): p is Refusal => 'error' in p

/** What one read says about an entry (rules 4 to 7, 9, 10), and about its account, key and request. */
export type Facts = {
  optedOut: boolean
  /** When the recipient last wrote to the entry's sender (null: never), and whether the window is open now. */
  lastAt: Date | null
  open: boolean
  /** The price of the entry's category for its account now. */
  price: number
  /** The entry's budget (its sender's or its portfolio's), its tier (null: unlimited), its use now, and whether the phone counts already. */
  budget: string
  /** How errors name the budget ("sender 3's", "portfolio \"Toko\"'s", "the default sender's"). */
  label: string
  tier: number | null
  used: number
  counted: boolean
  balance: number
  /** What the key may still be charged today (null: no cap, or no key). */
  capRoom: number | null
  cap: number | null
  spentToday: number
  /** Whether this request (its token) charged a message already: a repeat after its first run died. */
  charged: boolean
  /** What Meta's restriction of the sender's account refuses now: every message, business-initiated ones, or none (senders/health.ts). */
  restricted: Restricted
}

type FactsItem = {
  accountId: number
  keyId: number | null
  token: string | null
  phone: string
  senderId: number | null
  category: Category
}

/**
 * The one read of rules 4 to 10 for `items` (of one account or several, a group of single sends): a
 * statement whatever their number. Only reads: the quote takes nothing.
 */
async function factsOf(sql: Db, clock: Clock, tz: string, defaultTier: number | null, items: FactsItem[]): Promise<Facts[]> {
  const now = nowOf(sql, clock)
  const rows = await sql<
    {
      ord: number
      opted_out: boolean
      last_at: Date | null
      open: boolean
      price: number
      budget: string
      label: string
      tier: number | null
      used: number | null
      counted: boolean | null
      balance: number
      cap: number | null
      spent: number | null
      charged: boolean
      restricted: Restricted
    }[]
  >`
    with e as (
      select * from unnest(${items.map((i) => i.accountId)}::bigint[], ${items.map((i) => i.keyId) as number[]}::bigint[],
                           ${items.map((i) => i.token) as string[]}::uuid[], ${items.map((i) => i.phone)}::text[],
                           ${items.map((i) => i.senderId) as number[]}::bigint[], ${items.map((i) => i.category)}::text[])
        with ordinality as e(account_id, key_id, token, phone, sender_id, category, ord)
    ), acct as materialized (
      select a.id, a.balance from accounts a where a.id in (select account_id from e)
    ), b as (
      select e.*,
             case when e.sender_id is null then 'default' when s.portfolio_id is null then 'sender:' || e.sender_id
                  else 'portfolio:' || s.portfolio_id end as budget,
             -- Meta's word on the sender's limit (sql/0050) is the tier in force, in its portfolio's budget too.
             case when e.sender_id is null then ${defaultTier}::int
                  when s.portfolio_id is null or s.messaging_limit_source = 'meta' then s.messaging_limit
                  else p.messaging_limit end as tier,
             ${restrictedSql(sql, sql`s.restrictions`, now)} as restricted,
             case when e.sender_id is null then 'the default sender''s' when s.portfolio_id is null then 'sender ' || e.sender_id || '''s'
                  else 'portfolio ' || to_json(p.name)::text || '''s' end as label
      from e left join senders s on s.id = e.sender_id left join portfolios p on p.id = s.portfolio_id
    )
    select b.ord::int as ord, b.budget, b.label, b.tier, b.restricted, a.balance,
           -- The price of the entry's category: the ledger's one price rule (sql/0042), as the charge resolves it.
           ${categoryPrice(sql, sql`b.account_id`, sql`b.category`)} as price,
           exists (select 1 from opt_outs o where o.account_id = b.account_id and o.phone = b.phone) as opted_out,
           w.at as last_at, coalesce(w.at > ${now} - make_interval(hours => ${WINDOW_HOURS}), false) as open,
           case when b.tier is not null then (
             select count(distinct u.phone)::int from messaging_uses u
             where u.budget = b.budget and u.first_at > ${now} - make_interval(hours => ${BUDGET_HOURS})) end as used,
           case when b.tier is not null then exists (
             select 1 from messaging_uses u
             where u.budget = b.budget and u.phone = b.phone and u.first_at > ${now} - make_interval(hours => ${BUDGET_HOURS})) end as counted,
           k.daily_spend_cap as cap,
           case when k.spend_day = (${now} at time zone ${tz})::date then k.spent_today else 0 end as spent,
           b.token is not null and exists (select 1 from messages m where m.request_token = b.token) as charged
    from b join acct a on a.id = b.account_id
      left join api_keys k on k.id = b.key_id
      left join lateral (
        select max(i.received_at) as at from inbound_messages i where i.phone = b.phone and i.sender_id is not distinct from b.sender_id
      ) w on true`
  const byOrd = new Map(rows.map((r) => [r.ord, r]))
  return items.map((_, i) => {
    const r = byOrd.get(i + 1)
    if (!r) throw new ApiError('NOT_FOUND', 'account not found', 404)
    const spent = Number(r.spent ?? 0)
    return {
      optedOut: r.opted_out,
      lastAt: r.last_at,
      open: r.open,
      price: Number(r.price),
      budget: r.budget,
      label: r.label,
      tier: r.tier,
      used: r.used ?? 0,
      counted: r.counted ?? false,
      balance: Number(r.balance),
      cap: r.cap === null ? null : Number(r.cap),
      capRoom: r.cap === null ? null : Math.max(0, Number(r.cap) - spent),
      spentToday: spent,
      charged: r.charged,
      restricted: r.restricted,
    }
  })
}

// Concurrent single sends share one read (inside a transaction it goes straight through).
const readers = new WeakMap<Db, Batcher<FactsItem & { clock: Clock; tz: string; tier: number | null }, Facts>>()

/** The read of rules 4 to 10 for `items`: shared by concurrent single sends (one item each), one statement for a bulk or a quote. */
export function readFacts(deps: Pick<Deps, 'sql' | 'clock' | 'config'>, items: FactsItem[]): Promise<Facts[]> {
  if (items.length === 0) return Promise.resolve([])
  const { sql, clock, config } = deps
  if (items.length > 1 || 'savepoint' in sql) return factsOf(sql, clock, config.timezone, config.messagingLimit, items)
  let reader = readers.get(sql)
  if (!reader) {
    reader = new Batcher((group) => factsOf(sql as Sql, group[0]!.clock, group[0]!.tz, group[0]!.tier, group))
    readers.set(sql, reader)
  }
  return reader.add({ ...items[0]!, clock, tz: config.timezone, tier: config.messagingLimit }).then((f) => [f])
}

/** The 422 PRICE_ABOVE_MAX of a message whose price is above its `max_price`. */
export const priceAboveMax = (at: string, category: Category, price: number, maxPrice: number) =>
  new ApiError(
    'PRICE_ABOVE_MAX',
    `${at}max_price: this ${category} message costs ${price}, above its max_price of ${maxPrice}; nothing was charged ` +
      "(this is the service's own cap, not Meta's maximum price for marketing messages)",
  )

/** A campaign's pause reason when its messages' price is above its max_price (it starts with the code). */
export const priceCapPause = (category: Category, price: number, maxPrice: number) =>
  `PRICE_ABOVE_MAX: its ${category} messages cost ${price}, above its max_price of ${maxPrice}; nothing more was charged. ` +
  'Resume it once the price or the cap allows'

/** Rule 6: whether a price passes a cap (null: none). */
export const aboveMax = (price: number, maxPrice: number | null): boolean => maxPrice !== null && price > maxPrice

/**
 * Rules 3 (its WhatsApp template's status) to 6 for one prepared entry and its facts: its refusal, or
 * null. `at`: the entry's path in errors. A repeat of a request that charged (`f.charged`) is not judged.
 */
export function judge(config: Deps['config'], p: Prepared, f: Facts, at: string): ApiError | null {
  const unapproved = notApproved(p, at)
  if (unapproved) return unapproved
  const restricted = senderRestricted(p, f, at)
  if (restricted) return restricted
  if (f.optedOut) return optedOutError(p.phone)
  if (checksWindow(config, p.sender) && freeForm(p) && !f.open)
    return windowClosed(`${at}to`, f.lastAt, config.timezone, p.sender.providerName)
  if (aboveMax(f.price, p.maxPrice)) return priceAboveMax(at, p.category, f.price, p.maxPrice!)
  return null
}

/**
 * Rule 2b: Meta restricted the sender's account (account_update ACCOUNT_RESTRICTION): every message, or the
 * business-initiated ones (the recipient's window is closed). Refused before anything is charged.
 */
export function senderRestricted(p: Prepared, f: Pick<Facts, 'restricted' | 'open'>, at: string): ApiError | null {
  if (f.restricted === null || (f.restricted === 'business' && f.open)) return null
  const what =
    f.restricted === 'all' ? 'every message' : 'business-initiated messages (this recipient has not written to it within 24 hours)'
  return new ApiError(
    'SENDER_RESTRICTED',
    `${at}from: Meta restricted sender ${p.senderId}'s account from ${what}; nothing was charged. It sends again once Meta lifts ` +
      'the restriction or it expires (GET /admin/v1/senders/{id} shows it)',
  )
}

/** Whether a message uses its sender's messaging limit: the recipient's window is closed (a business-initiated message). */
export const businessInitiated = (f: Pick<Facts, 'open' | 'tier'>) => f.tier !== null && !f.open

/** The business-initiated entries among `prepared` by budget, from their facts: what holdMessagingLimit would find again. */
export function budgetGroups<T extends Prepared>(prepared: T[], facts: Facts[]) {
  const groups = new Map<string, { budget: { key: string; tier: number; label: string }; entries: T[] }>()
  prepared.forEach((p, i) => {
    const f = facts[i]!
    if (!businessInitiated(f)) return
    const group = groups.get(f.budget) ?? { budget: { key: f.budget, tier: f.tier!, label: f.label }, entries: [] }
    group.entries.push(p)
    groups.set(f.budget, group)
  })
  return groups
}

/** The facts items of prepared entries. */
export const itemsOf = (accountId: number, keyId: number | null, token: string | null, prepared: Prepared[]): FactsItem[] =>
  prepared.map((p) => ({ accountId, keyId, token, phone: p.phone, senderId: p.senderId ?? null, category: p.category }))

export type QuoteEntry = { to: string; would_send: boolean; code?: string; error?: string; category: Category; price: number }
export type Quote = {
  results: QuoteEntry[]
  would_send: number
  skipped: number
  total_cost: number
  cost_by_category: Partial<Record<Category, number>>
  wa_balance: number
  balance_covers: boolean
}

/**
 * POST /messages/quote: rules 1 to 7, 9 and 10 as a bulk of `entries` made now would meet them, in
 * order, and nothing taken (a read only: no charge, no hand-off, no pace slot, no budget use). The
 * messaging limit is simulated as the bulk's hold takes it: a phone counted already fits, a new one
 * takes room while there is some. The spend cap refuses a bulk whole, so when it cannot take the
 * total every entry that would go says SPEND_CAP_REACHED; the balance is answered as `balance_covers`.
 */
export async function quoteEntries(
  deps: Pick<Deps, 'sql' | 'senders' | 'config' | 'clock'>,
  accountId: number,
  keyId: number | null,
  entries: EntryInput[],
  at: (index: number) => string,
): Promise<Quote> {
  return quotePrepared(deps, accountId, keyId, await prepareEntries(deps, accountId, entries, at), at)
}

/** The quote of entries prepared already (rules 1 to 3 applied): a request's, or a campaign's recipients (campaigns/quote.ts). */
export async function quotePrepared(
  deps: Pick<Deps, 'sql' | 'config' | 'clock'>,
  accountId: number,
  keyId: number | null,
  prepared: (Prepared | Refusal)[],
  at: (index: number) => string,
): Promise<Quote> {
  // A WhatsApp template not approved is refused as in a send (the quote has no request to repeat).
  prepared = prepared.map((p) => {
    const refused = isRefusal(p) ? null : notApproved(p, at(p.index))
    return refused ? { index: p.index, to: (p as Prepared).givenTo ?? (p as Prepared).phone, error: refused } : p
  })
  const ok = prepared.filter((p): p is Prepared => !isRefusal(p))
  // Refused entries are priced too (as service messages, or their WhatsApp template's category).
  const probe: FactsItem[] = [
    ...itemsOf(accountId, keyId, null, ok),
    { accountId, keyId, token: null, phone: '', senderId: null, category: 'service' },
  ]
  const facts = await factsOf(deps.sql, deps.clock, deps.config.timezone, deps.config.messagingLimit, probe)
  const account = facts[facts.length - 1]!
  const factsOfEntry = new Map(ok.map((p, i) => [p.index, facts[i]!]))
  const results: QuoteEntry[] = []
  const rooms = new Map<string, { room: number; counted: Set<string> }>()
  for (const p of prepared) {
    if (isRefusal(p)) {
      results.push({ to: p.to, would_send: false, code: p.error.code, error: p.error.message, category: 'service', price: account.price })
      continue
    }
    const f = factsOfEntry.get(p.index)!
    const entry = { to: p.phone, category: p.category, price: f.price }
    const refused = judge(deps.config, p, f, at(p.index))
    if (refused) {
      results.push({ ...entry, would_send: false, code: refused.code, error: refused.message })
      continue
    }
    if (businessInitiated(f)) {
      const budget = rooms.get(f.budget) ?? { room: f.tier! - f.used, counted: new Set<string>() }
      rooms.set(f.budget, budget)
      if (!f.counted && !budget.counted.has(p.phone)) {
        if (budget.room <= 0) {
          results.push({
            ...entry,
            would_send: false,
            code: 'MESSAGING_LIMIT',
            error: `messaging limit reached: the sender's budget of ${f.tier} unique recipients per rolling 24 hours is used; nothing would be charged`,
          })
          continue
        }
        budget.room--
        budget.counted.add(p.phone)
      }
    }
    results.push({ ...entry, would_send: true })
  }
  let total = results.reduce((sum, r) => sum + (r.would_send ? r.price : 0), 0)
  // The spend cap takes a request whole (the bulk is refused 402 when its charge would pass it).
  if (account.capRoom !== null && total > account.capRoom) {
    for (const r of results) {
      if (!r.would_send) continue
      r.would_send = false
      r.code = 'SPEND_CAP_REACHED'
      r.error = `this API key's daily spend cap of ${account.cap} would be passed: it was charged ${account.spentToday} today`
    }
    total = 0
  }
  const byCategory: Partial<Record<Category, number>> = {}
  for (const r of results) if (r.would_send) byCategory[r.category] = (byCategory[r.category] ?? 0) + r.price
  const going = results.filter((r) => r.would_send).length
  return {
    results,
    would_send: going,
    skipped: results.length - going,
    total_cost: total,
    cost_by_category: byCategory,
    wa_balance: account.balance,
    balance_covers: account.balance >= total,
  }
}
