// Opt-outs: the only SQL on opt_outs (the current state: a row while a phone is opted out of an
// account's messages) and opt_out_events (the history: every change, when, how and by whom). Every
// change goes through setOptOut, which says whether the state changed (where the contact.opted_out /
// contact.opted_in events belong). Sends, bulk entries and campaign recipients that are opted out are
// refused before anything is charged (RECIPIENT_OPTED_OUT; a campaign skips and counts them). A message
// charged already is checked again right before it is handed over (messages/handoff.ts): one whose
// recipient opted out meanwhile fails with OPTED_OUT_AT_HANDOFF and is refunded, never handed over.

import { accountEvent } from '../webhooks/events'
import { transaction, type Db, type Tx } from '../../db/client'
import { ApiError, badValue } from '../../http/errors'
import { page } from '../../http/values'
import { normalizePhone } from '../../lib/phone'
import { isUserId } from '../../lib/user-id'
import { accountCustomerKey } from '../customers/service'
import type { Formatted } from '../../lib/time'
import { MAX_PHONE_CHARS, pageOf } from '../../lib/validate'
import { csvText, parseCsv } from '../../lib/csv'
import type { User } from '../../dashboard/session'
import { audit } from '../users/service'
import { Batcher } from '../../lib/batch'
import type { OptOutListQuery } from './model'
import type { Clock } from '../../lib/clock'
import { nowOf } from '../../db/now'

export type OptOutSource = 'inbound' | 'provider' | 'api' | 'dashboard' | 'admin' | 'import'

/** Who makes a change by hand: an API key, a dashboard user, or the admin token (neither); `address` for the audit log. */
export type OptOutActor = { keyId?: number | null; user?: User | null; address?: string | null; actor?: string }

export type OptOutChange = {
  /** Whose time stamps the change (Deps.clock). */
  clock: Pick<Clock, 'sqlNow'>
  /** The deployment's TIMEZONE, for the timestamp of its contact.opted_out / contact.opted_in event. */
  timezone: string
  accountId: number
  phone: string
  optedOut: boolean
  source: OptOutSource
  /** The STOP/START word, or the provider's signal. */
  detail?: string | null
  inboundMessageId?: number | null
  by?: OptOutActor
  /** An opt-in that lifts only an opt-out of this source (Meta's "resume marketing" lifts only its own "stop"). */
  liftsOnly?: OptOutSource
  /** When the signal was given: one older than the phone's latest change (a late repeat) changes nothing. */
  at?: Date | null
}

const actorOf = (change: OptOutChange): string =>
  change.by?.user?.email ??
  (change.by?.keyId
    ? `API key ${change.by.keyId}`
    : change.source === 'inbound'
      ? 'customer'
      : change.source === 'provider'
        ? 'provider'
        : 'admin token')

/**
 * THE one way an opt-out changes: opts `phone` out of (or back into) the account's messages, records the
 * event, and answers whether the state changed (a repeat changes nothing and records nothing).
 * The account row is locked (FOR NO KEY UPDATE, as a charge's balance update does): an opt-out and a
 * charge of the same account never overlap, so a campaign batch charged after this commits sees it.
 */
export async function setOptOut(tx: Tx, change: OptOutChange): Promise<{ changed: boolean }> {
  const [account] = await tx`select 1 from accounts where id = ${change.accountId} for no key update`
  if (!account) throw new ApiError('NOT_FOUND', `account ${change.accountId} not found`)
  const [current] = await tx<{ source: string }[]>`
    select e.source from opt_outs o join opt_out_events e on e.id = o.event_id
    where o.account_id = ${change.accountId} and o.phone = ${change.phone}`
  if (change.optedOut ? current : !current || (change.liftsOnly && current.source !== change.liftsOnly)) return { changed: false }
  if (change.at) {
    const [latest] = await tx<{ stale: boolean }[]>`
      select coalesce(max(happened_at) > ${change.at}, false) as stale
      from opt_out_events where account_id = ${change.accountId} and phone = ${change.phone}`
    if (latest!.stale) return { changed: false }
  }
  const [event] = await tx<{ id: number }[]>`
    insert into opt_out_events (account_id, phone, opted_out, source, detail, inbound_message_id, api_key_id, user_id, actor, created_at, happened_at)
    values (${change.accountId}, ${change.phone}, ${change.optedOut}, ${change.source}, ${change.detail ?? null},
            ${change.inboundMessageId ?? null}, ${change.by?.keyId || null}, ${change.by?.user?.id ?? null}, ${actorOf(change)},
            ${nowOf(tx, change.clock)}, coalesce(${change.at ?? null}::timestamptz, ${nowOf(tx, change.clock)}))
    returning id`
  if (change.optedOut) {
    await tx`insert into opt_outs (account_id, phone, event_id) values (${change.accountId}, ${change.phone}, ${event!.id})`
  } else {
    await tx`delete from opt_outs where account_id = ${change.accountId} and phone = ${change.phone}`
  }
  // Its webhook event, to the account's registrations that chose it, committed with the change.
  const [contact] = await tx<{ id: number }[]>`select id from contacts where account_id = ${change.accountId} and phone = ${change.phone}`
  await accountEvent(
    tx,
    change.timezone,
    change.accountId,
    change.optedOut ? 'contact.opted_out' : 'contact.opted_in',
    {
      phone: change.phone,
      contact_id: contact ? Number(contact.id) : null,
      source: change.source,
      detail: change.detail ?? null,
      inbound_message_id: change.inboundMessageId ?? null,
    },
    change.clock,
  )
  return { changed: true }
}

/**
 * A customer's key changed (issue 32: a user id linked to a phone, a changed number or user id): the
 * opt-outs of `from` in `accounts` (null: every account) become `to`'s, with their history. Where both
 * are opted out, one opt-out remains. A STOP sent by user id so keeps the phone from being sent to.
 */
export async function rekeyOptOuts(tx: Tx, accounts: number[] | null, from: string, to: string): Promise<void> {
  const scope = accounts === null ? tx`true` : tx`account_id = any(${accounts}::bigint[])`
  await tx`
    delete from opt_outs o where o.phone = ${from} and ${scope}
      and exists (select 1 from opt_outs k where k.account_id = o.account_id and k.phone = ${to})`
  await tx`update opt_outs set phone = ${to} where phone = ${from} and ${scope}`
  await tx`update opt_out_events set phone = ${to} where phone = ${from} and ${scope}`
}

// ---- Refusals before charging ----

/** The phones of `phones` (normalised) that are opted out of the account's messages: one query whatever their number. */
export async function optedOutAmong(db: Db, accountId: number, phones: string[]): Promise<Set<string>> {
  if (phones.length === 0) return new Set()
  const rows = await db<{ phone: string }[]>`
    select phone from opt_outs where account_id = ${accountId} and phone = any(${[...new Set(phones)]}::text[])`
  return new Set(rows.map((r) => r.phone))
}

// Concurrent single sends share one statement for their checks (a group read, as the key lookup's
// group commit), the checks before their charges and those right before their hand-offs alike; a lone
// send waits for nobody. Under load this was a statement of its own per send, the only one not
// shared. Inside a transaction (`db` a Tx) the check goes straight through.
const checks = new WeakMap<Db, Batcher<{ accountId: number; phone: string }, boolean>>()
/** Whether `phone` (normalised) is opted out of the account's messages now: one indexed read, shared. */
export function isOptedOut(db: Db, accountId: number, phone: string): Promise<boolean> {
  if ('savepoint' in db) return optedOutAmong(db, accountId, [phone]).then((found) => found.has(phone))
  let batcher = checks.get(db)
  if (!batcher) {
    batcher = new Batcher(async (items) => {
      const rows = await db<{ n: number }[]>`
        select i.n::int as n
        from unnest(${items.map((i) => i.accountId)}::bigint[], ${items.map((i) => i.phone)}::text[]) with ordinality as i(account_id, phone, n)
        where exists (select 1 from opt_outs o where o.account_id = i.account_id and o.phone = i.phone)`
      const found = new Set(rows.map((r) => r.n))
      return items.map((_, i) => found.has(i + 1))
    })
    checks.set(db, batcher)
  }
  return batcher.add({ accountId, phone })
}

/** The 422 of a recipient who opted out. */
export const optedOutError = (phone: string) =>
  new ApiError(
    'RECIPIENT_OPTED_OUT',
    `${phone} opted out of this account's messages (see GET /opt-outs); nothing was charged. It is sent to again once opted back in`,
  )

/**
 * The stored error (`error_message`, `error_code` null) of a message charged and then stopped at its
 * hand-off because its recipient opted out meanwhile: failed, refunded, never handed over. A single
 * send answers it as 422 RECIPIENT_OPTED_OUT, a bulk entry fails with that code, and a message.status
 * event carries this text; it begins with the code so that a receiver can match it.
 */
export const OPTED_OUT_AT_HANDOFF =
  "RECIPIENT_OPTED_OUT: the recipient opted out of this account's messages before it was handed to the provider; refunded"

/** Whether a hand-off's outcome is the stop of an opt-out (OPTED_OUT_AT_HANDOFF), not the provider's refusal. */
export const stoppedByOptOut = (outcome: { ok: boolean; errorCode?: number | null; errorMessage?: string }): boolean =>
  !outcome.ok && outcome.errorCode === null && outcome.errorMessage === OPTED_OUT_AT_HANDOFF

/** The 422 of a message charged and then stopped at its hand-off by its recipient's opt-out (refunded). */
export const optedOutAtHandoffError = (phone: string, id: number) =>
  new ApiError(
    'RECIPIENT_OPTED_OUT',
    `${phone} opted out of this account's messages while this message waited to be handed to the provider: it was not sent, ` +
      'and its charge was refunded',
    undefined,
    { id },
  )

/**
 * Refuses (422 RECIPIENT_OPTED_OUT) a message to a phone opted out of the account's messages, unless
 * `chargedAlready` says this request's message was charged before (a repeat of a request that died):
 * that one is found and answered as it went, not refused.
 */
export async function refuseOptedOut(db: Db, accountId: number, phone: string, chargedAlready?: () => Promise<boolean>): Promise<void> {
  if (!(await isOptedOut(db, accountId, phone))) return
  if (chargedAlready && (await chargedAlready())) return
  throw optedOutError(phone)
}

// ---- Inbound words and provider signals ----

export type OptOutWords = { optOutWords: string[]; optInWords: string[] }
export const DEFAULT_WORDS: OptOutWords = { optOutWords: ['STOP', 'UNSUBSCRIBE', 'BERHENTI'], optInWords: ['START', 'MULAI'] }

/** The word a whole text is (trimmed, upper case, trailing punctuation dropped), for comparing with the lists. */
export const wordOf = (text: string) =>
  text
    .trim()
    .replace(/[\p{P}\p{S}\s]+$/u, '')
    .replace(/\s+/g, ' ')
    .toUpperCase()

/** What an inbound message says about consent: the provider's own signal first, else a STOP/START word. */
export type InboundConsent = {
  accountId: number | null
  phone: string
  inboundMessageId: number
  type: string
  text: string | null
  /** The provider's own signal on the message (Twilio's OptOutType STOP/START). */
  consent?: { optedOut: boolean; detail: string } | null
}

/** Called once by storeInbound for a newly stored message: opts its sender out (or back in) when it says so. */
export async function consentFromInbound(
  tx: Tx,
  clock: Pick<Clock, 'sqlNow'>,
  timezone: string,
  message: InboundConsent,
  words: OptOutWords = DEFAULT_WORDS,
): Promise<{ changed: boolean }> {
  if (message.accountId === null) return { changed: false }
  const base = { clock, timezone, accountId: message.accountId, phone: message.phone, inboundMessageId: message.inboundMessageId }
  if (message.consent) {
    return setOptOut(tx, { ...base, optedOut: message.consent.optedOut, source: 'provider', detail: message.consent.detail })
  }
  if (message.type !== 'text' || message.text === null || message.text.length > 100) return { changed: false }
  const word = wordOf(message.text)
  if (words.optOutWords.includes(word)) return setOptOut(tx, { ...base, optedOut: true, source: 'inbound', detail: word })
  if (words.optInWords.includes(word)) return setOptOut(tx, { ...base, optedOut: false, source: 'inbound', detail: word })
  return { changed: false }
}

/**
 * A provider's signal without a message (Meta's user_preferences stop/resume): a stop opts out; a resume
 * lifts only an opt-out a provider's signal made (a STOP the customer wrote stays until they write START).
 */
export function consentFromProvider(
  tx: Tx,
  clock: Pick<Clock, 'sqlNow'>,
  timezone: string,
  accountId: number,
  phone: string,
  signal: { optedOut: boolean; detail: string; at: Date | null },
): Promise<{ changed: boolean }> {
  return setOptOut(tx, {
    clock,
    timezone,
    accountId,
    phone,
    optedOut: signal.optedOut,
    source: 'provider',
    detail: signal.detail,
    at: signal.at,
    liftsOnly: 'provider',
  })
}

// ---- Management (API, admin API, dashboard, CSV) ----

/**
 * A phone of a request: an Indonesian number in its +62 form, any other as + and its digits, or a WhatsApp
 * business-scoped user id as it is (a customer known by one, issue 32); 422 otherwise.
 */
export function requireOptOutPhone(value: string, field = 'phone'): string {
  const trimmed = value.trim()
  if (isUserId(trimmed)) return trimmed
  const indonesian = trimmed.length > MAX_PHONE_CHARS ? null : normalizePhone(trimmed)
  if (indonesian) return indonesian
  const digits = trimmed.replace(/^whatsapp:/i, '').replace(/[\s\-.()]/g, '')
  if (trimmed.length <= MAX_PHONE_CHARS && /^\+\d{6,15}$/.test(digits)) return digits
  throw badValue(
    `${field}: not a valid phone number (08xx, 62xx, +62xx, or + and the digits of another country's number) nor a WhatsApp user id (ID.1349…)`,
  )
}

type Row = {
  phone: string
  created_at: Date
  source: OptOutSource
  detail: string | null
  inbound_message_id: number | null
  api_key_id: number | null
  user_id: number | null
  actor: string
}

const view = (r: Row) => ({
  phone: r.phone,
  opted_out_at: r.created_at,
  source: r.source,
  detail: r.detail,
  inbound_message_id: r.inbound_message_id === null ? null : Number(r.inbound_message_id),
  by: r.actor,
})
export type OptOutView = ReturnType<typeof view>

/** The account's opted-out phones, newest first (`phone`: only that one). */
export async function listOptOuts(sql: Db, accountId: number, query: OptOutListQuery) {
  const p = page(query)
  const phone = query.phone === undefined ? null : await accountCustomerKey(sql, accountId, requireOptOutPhone(query.phone))
  const where = sql`where o.account_id = ${accountId} and (${phone}::text is null or o.phone = ${phone})`
  const rows = await sql<Row[]>`
    select o.phone, e.created_at, e.source, e.detail, e.inbound_message_id, e.api_key_id, e.user_id, e.actor
    from opt_outs o join opt_out_events e on e.id = o.event_id ${where}
    order by e.id desc limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from opt_outs o ${where}`
  return pageOf(rows.map(view), count!.n, p)
}

/** One phone's history in the account, newest first (at most 50 changes). */
export async function optOutHistory(sql: Db, accountId: number, phone: string) {
  const rows = await sql<(Row & { opted_out: boolean })[]>`
    select phone, created_at, source, detail, inbound_message_id, api_key_id, user_id, actor, opted_out
    from opt_out_events where account_id = ${accountId} and phone = ${phone} order by id desc limit 50`
  return rows.map((r) => ({
    ...view(r),
    action: r.opted_out ? ('opted_out' as const) : ('opted_in' as const),
    at: r.created_at,
  }))
}

/** Where a change by hand comes from, for its event and audit row. */
export type ManualSource = 'api' | 'dashboard' | 'admin'

/** Opts a phone out by hand (audited). Answers the opt-out and whether it is new (false: it was opted out already). */
export async function addOptOut(
  sql: Db,
  clock: Pick<Clock, 'sqlNow'>,
  tz: string,
  accountId: number,
  phoneInput: string,
  source: ManualSource,
  by: OptOutActor,
) {
  // A WhatsApp user id linked to a phone on one of the account's numbers is the phone (issue 32).
  const phone = await accountCustomerKey(sql, accountId, requireOptOutPhone(phoneInput))
  const { changed } = await transaction(sql, async (tx) => {
    const done = await setOptOut(tx, { clock, timezone: tz, accountId, phone, optedOut: true, source, by })
    if (done.changed) await auditChange(tx, accountId, by, 'opt-out added', { phone, source })
    return done
  })
  const [item] = (await listOptOuts(sql, accountId, { phone })).items
  return { optOut: item!, created: changed }
}

/** Opts a phone back in by hand (audited); 404 when it is not opted out. */
export async function removeOptOut(
  sql: Db,
  clock: Pick<Clock, 'sqlNow'>,
  tz: string,
  accountId: number,
  phoneInput: string,
  source: ManualSource,
  by: OptOutActor,
) {
  // A WhatsApp user id linked to a phone on one of the account's numbers is the phone (issue 32).
  const phone = await accountCustomerKey(sql, accountId, requireOptOutPhone(phoneInput))
  await transaction(sql, async (tx) => {
    const { changed } = await setOptOut(tx, { clock, timezone: tz, accountId, phone, optedOut: false, source, by })
    if (!changed) throw new ApiError('NOT_FOUND', `${phone} is not opted out`)
    await auditChange(tx, accountId, by, 'opt-out removed', { phone, source })
  })
  return { phone, opted_out: false as const }
}

const auditChange = (tx: Tx, accountId: number, by: OptOutActor, action: string, detail: Record<string, unknown>) =>
  audit(tx, {
    user: by.user ?? null,
    address: by.address ?? null,
    accountId,
    action,
    detail,
    actor: by.keyId ? `API key ${by.keyId}` : by.actor,
  })

// ---- CSV ----

export const MAX_IMPORT_ROWS = 10_000
export const CSV_COLUMNS = ['phone', 'opted_out_at', 'source', 'detail', 'by'] as const

/** Every opt-out of the account, newest first (`optOutsCsv` writes them, formatted, as the export). */
export async function exportOptOuts(sql: Db, accountId: number): Promise<OptOutView[]> {
  const rows = await sql<Row[]>`
    select o.phone, e.created_at, e.source, e.detail, e.inbound_message_id, e.api_key_id, e.user_id, e.actor
    from opt_outs o join opt_out_events e on e.id = o.event_id where o.account_id = ${accountId} order by e.id desc`
  return rows.map(view)
}

/** The export as CSV (phone, opted_out_at, source, detail, by), its times formatted at the edge. */
export function optOutsCsv(optOuts: Formatted<OptOutView>[]): { csv: string; count: number } {
  const lines = optOuts.map((v) => [v.phone, v.opted_out_at, v.source, v.detail, v.by])
  return { csv: csvText(CSV_COLUMNS, lines), count: optOuts.length }
}

export type ImportReport = { accepted: number; duplicates: number; invalid: { line: number; error: string }[] }

/**
 * Opts out every phone of a CSV: a header row naming a `phone` column (other columns are ignored, so an
 * export imports again), or no header and the phone in the first column. A phone opted out already, or
 * repeated in the file, is a duplicate; a bad line is reported with its number and reason. One
 * transaction; audited as one import.
 */
export async function importOptOuts(
  sql: Db,
  clock: Pick<Clock, 'sqlNow'>,
  tz: string,
  accountId: number,
  text: string,
  source: ManualSource,
  by: OptOutActor,
) {
  const records = parseCsv(text)
  if ('error' in records) throw badValue(`csv: cannot be read: ${records.error}`)
  if (records.length === 0) throw badValue('csv: is empty: give a phone column (with a header row "phone"), one phone a line')
  const header = records[0]!.fields.map((f) => f.trim().toLowerCase())
  const headed = !isPhone(records[0]!.fields[0] ?? '')
  const column = headed ? header.indexOf('phone') : 0
  if (column < 0) throw badValue('csv: the header row has no "phone" column (or give no header, the phone in the first column)')
  const data = headed ? records.slice(1) : records
  if (data.length > MAX_IMPORT_ROWS) throw badValue(`csv: ${data.length} rows; at most ${MAX_IMPORT_ROWS} at once, split the file`)
  const report: ImportReport = { accepted: 0, duplicates: 0, invalid: [] }
  const phones: { line: number; phone: string }[] = []
  const seen = new Set<string>()
  for (const record of data) {
    const value = (record.fields[column] ?? '').trim()
    if (value === '') {
      report.invalid.push({ line: record.line, error: 'phone: is empty' })
      continue
    }
    try {
      const phone = requireOptOutPhone(value)
      if (seen.has(phone)) report.duplicates++
      else phones.push({ line: record.line, phone })
      seen.add(phone)
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      report.invalid.push({ line: record.line, error: `${error.message.replace(/ \(08xx.*$/, '')}: ${JSON.stringify(value.slice(0, 40))}` })
    }
  }
  await transaction(sql, async (tx) => {
    for (const { phone } of phones) {
      const { changed } = await setOptOut(tx, {
        clock,
        timezone: tz,
        accountId,
        phone,
        optedOut: true,
        source: 'import',
        detail: source,
        by,
      })
      if (changed) report.accepted++
      else report.duplicates++
    }
    await auditChange(tx, accountId, by, 'opt-outs imported', {
      accepted: report.accepted,
      duplicates: report.duplicates,
      invalid: report.invalid.length,
    })
  })
  return report
}

const isPhone = (value: string) => {
  try {
    requireOptOutPhone(value)
    return true
  } catch {
    return false
  }
}
