// A sender's health (issue 32 §4, sql/0050): the only SQL on the senders' health columns and on
// `sender_health_history`. What Meta says of a sender (its webhooks, parsed by the provider into
// HealthNotices that name only senders of the verified signer; the phone number's `quality_rating`, read
// at each check and template sync) is kept on the sender, each real change a row of its history and a
// `sender.status_changed` event to the accounts the sender serves, in one transaction.
//
// - The messaging limit Meta says becomes the sender's tier (`messaging_limit_source` 'meta'): it is the
//   tier in force for its sends (in its portfolio's budget when it is in one), and an operator can no
//   longer type one (updateSender refuses it).
// - A restriction (RESTRICTED_BIZ_INITIATED_MESSAGING, RESTRICTED_CUSTOMER_INITIATED_MESSAGING) refuses
//   the sends it forbids before charging (422 SENDER_RESTRICTED, messages/admission.ts) and pauses the
//   sender's campaigns; it ends when Meta lifts it or its expiration passes.
// - A flagged number (FLAGGED, until UNFLAGGED or a reading of quality GREEN) pauses its campaigns;
//   single sends still go (Meta takes them; a campaign is what lowers a flagged number's quality further).
// - In Meta's order: a notice older (entry.time) than the latest change recorded for that field changes nothing.

import type { Db, Fragment, Sql } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import { formatTimestamp } from '../../lib/time'
import type { HealthNotice, SignedHealthNotice } from '../../providers/provider'
import { insertAccountEvents } from '../webhooks/events'

export const SENDER_EVENT = 'sender.status_changed'

/** Messages per second of a Meta number whose throughput Meta raised (THROUGHPUT_UPGRADE), unless the sender's own pace is set. */
export const HIGH_THROUGHPUT_PER_SECOND = 1000

/** The restriction types that refuse sends: business-initiated ones, or every one. */
const RESTRICTS_BUSINESS = 'RESTRICTED_BIZ_INITIATED_MESSAGING'
const RESTRICTS_ALL = 'RESTRICTED_CUSTOMER_INITIATED_MESSAGING'

export type Restriction = { type: string; expires_at: string | null }
export type Restricted = 'all' | 'business' | null

const QUALITIES = new Set(['green', 'yellow', 'red', 'unknown'])

/**
 * What a sender's restrictions refuse now, as SQL ('all', 'business' or null): `restrictions` is the
 * senders.restrictions column of the statement (e.g. sql`s.restrictions`); an expired one refuses nothing.
 */
export function restrictedSql(sql: Db, restrictions: Fragment, now: Fragment): Fragment {
  const active = (type: string) => sql`exists (
    select 1 from jsonb_array_elements(coalesce(${restrictions}, '[]'::jsonb)) r
    where r->>'type' = ${type} and (r->>'expires_at' is null or (r->>'expires_at')::timestamptz > ${now}))`
  return sql`(case when ${active(RESTRICTS_ALL)} then 'all' when ${active(RESTRICTS_BUSINESS)} then 'business' end)`
}

/** The same in JavaScript, for what pages and answers show. */
export function restrictedNow(restrictions: Restriction[], now: Date): Restricted {
  const active = (type: string) =>
    restrictions.some((r) => r.type === type && (r.expires_at === null || new Date(r.expires_at).getTime() > now.getTime()))
  return active(RESTRICTS_ALL) ? 'all' : active(RESTRICTS_BUSINESS) ? 'business' : null
}

/** The pause reason of a campaign whose sender's health stops it (it starts with its code: the scheduler resumes it on recovery). */
export function healthPause(senderId: number, restricted: Restricted, flagged: boolean): string | null {
  if (restricted)
    return (
      `SENDER_RESTRICTED: Meta restricted sender ${senderId}'s account (${restricted === 'all' ? 'every message' : 'business-initiated messages'}); ` +
      'nothing more was charged. The campaign resumes by itself once the restriction is lifted or expires'
    )
  if (flagged)
    return (
      `SENDER_FLAGGED: Meta flagged sender ${senderId}'s number for low quality; nothing more was charged. The campaign resumes by ` +
      'itself once Meta unflags it (or its quality reads GREEN at a check)'
    )
  return null
}

type HealthRow = {
  id: number
  messaging_limit: number | null
  messaging_limit_source: 'operator' | 'meta'
  quality_rating: string | null
  quality_flagged: boolean
  throughput: string | null
  restrictions: Restriction[]
}

/** The restrictions column as read (a driver may hand jsonb over as its text). */
const restrictionsOf = (value: unknown): Restriction[] => (typeof value === 'string' ? JSON.parse(value) : (value ?? [])) as Restriction[]

type Change = { field: string; old: string | null; new: string | null }

const limitText = (n: number | null) => (n === null ? 'unlimited' : String(n))
const restrictionsText = (list: Restriction[], tz: string) =>
  list.length === 0
    ? 'none'
    : list.map((r) => (r.expires_at ? `${r.type} until ${formatTimestamp(new Date(r.expires_at), tz)}` : r.type)).join(', ')

/**
 * Applies one notice to one sender under its row's lock, in the caller's transaction: each field it says
 * that differs (and is not older than the latest recorded change of that field) is written, recorded in
 * the history and announced. The changes made.
 */
async function applyToSender(
  tx: Db,
  o: { clock: Clock; timezone: string },
  senderId: number,
  notice: HealthNotice,
  source: 'meta' | 'check' | 'sync',
): Promise<Change[]> {
  const [row] = await tx<HealthRow[]>`
    select id, messaging_limit, messaging_limit_source, quality_rating, quality_flagged, throughput, restrictions
    from senders where id = ${senderId} for update`
  if (!row) return []
  row.restrictions = restrictionsOf(row.restrictions)
  const latest = new Map(
    (
      await tx<{ field: string; at: Date | null }[]>`
        select field, max(provider_at) as at from sender_health_history where sender_id = ${senderId} group by field`
    ).map((r) => [r.field, r.at]),
  )
  const fresh = (field: string) => {
    const last = latest.get(field)
    return !notice.at || !last || notice.at.getTime() >= last.getTime()
  }
  const changes: Change[] = []
  const set: Record<string, unknown> = {}
  if (notice.messagingLimit !== undefined && fresh('messaging_limit')) {
    if (row.messaging_limit_source !== 'meta' || row.messaging_limit !== notice.messagingLimit) {
      changes.push({ field: 'messaging_limit', old: limitText(row.messaging_limit), new: limitText(notice.messagingLimit) })
      set.messaging_limit = notice.messagingLimit
      set.messaging_limit_source = 'meta'
    }
  }
  if (notice.quality !== undefined && QUALITIES.has(notice.quality) && fresh('quality') && row.quality_rating !== notice.quality) {
    changes.push({ field: 'quality', old: row.quality_rating, new: notice.quality })
    set.quality_rating = notice.quality
  }
  // A number whose quality reads GREEN is no longer flagged, whoever read it.
  const flagged = notice.flagged ?? (notice.quality === 'green' ? false : undefined)
  if (flagged !== undefined && fresh('flagged') && row.quality_flagged !== flagged) {
    changes.push({ field: 'flagged', old: String(row.quality_flagged), new: String(flagged) })
    set.quality_flagged = flagged
  }
  if (notice.throughput !== undefined && fresh('throughput') && row.throughput !== notice.throughput) {
    changes.push({ field: 'throughput', old: row.throughput, new: notice.throughput })
    set.throughput = notice.throughput
  }
  if (notice.restrictions !== undefined && fresh('restrictions')) {
    const next: Restriction[] = notice.restrictions.map((r) => ({ type: r.type, expires_at: r.expiresAt?.toISOString() ?? null }))
    if (JSON.stringify(next) !== JSON.stringify(row.restrictions)) {
      changes.push({ field: 'restrictions', old: restrictionsText(row.restrictions, o.timezone), new: restrictionsText(next, o.timezone) })
      set.restrictions = JSON.stringify(next)
    }
  }
  if (changes.length === 0) return []
  const now = nowOf(tx, o.clock)
  // updated_at moves: every process rebuilds the sender (its pace follows its throughput).
  await tx`
    update senders set
      messaging_limit = ${'messaging_limit' in set ? (set.messaging_limit as number | null) : row.messaging_limit},
      messaging_limit_source = ${(set.messaging_limit_source as string | undefined) ?? row.messaging_limit_source},
      quality_rating = ${(set.quality_rating as string | undefined) ?? row.quality_rating},
      quality_flagged = ${(set.quality_flagged as boolean | undefined) ?? row.quality_flagged},
      throughput = ${(set.throughput as string | undefined) ?? row.throughput},
      restrictions = ${(set.restrictions as string | undefined) ?? JSON.stringify(row.restrictions)}::text::jsonb,
      updated_at = ${now}
    where id = ${senderId}`
  await tx`
    insert into sender_health_history (sender_id, field, old, new, source, provider_at, created_at)
    select ${senderId}, c.field, c.old, c.new, ${source}, ${notice.at}::timestamptz, ${now}
    from unnest(${changes.map((c) => c.field)}::text[], ${changes.map((c) => c.old) as string[]}::text[],
                ${changes.map((c) => c.new) as string[]}::text[]) as c(field, old, new)`
  const data = changes.map((c) => JSON.stringify({ sender_id: senderId, field: c.field, old: c.old, new: c.new, source }))
  await tx`
    with changed as (
      select d.data, d.ord from unnest(${data}::text[]) with ordinality as d(data, ord)
    ), source as (
      select a.account_id, ${SENDER_EVENT}::text as event, c.data, c.ord
      from (select distinct account_id from account_senders where sender_id = ${senderId}) a cross join changed c
    ), event as (${insertAccountEvents(tx, o.timezone, 'source', o.clock)})
    select count(*)::int as n from event`
  return changes
}

export type HealthOutcome = { changed: number; refused: number }

/** Applies the health notices of a verified callback (each to the senders it names). A notice naming none is refused: it changes nothing. */
export async function applyHealthNotices(
  sql: Sql,
  o: { clock: Clock; timezone: string },
  notices: SignedHealthNotice[],
): Promise<HealthOutcome> {
  const outcome: HealthOutcome = { changed: 0, refused: 0 }
  for (const notice of notices) {
    const senders = notice.senders.filter((s): s is number => s !== null)
    if (senders.length === 0) {
      outcome.refused++
      continue
    }
    await sql.begin(async (tx) => {
      for (const id of senders) outcome.changed += (await applyToSender(tx, o, id, notice, 'meta')).length
    })
  }
  return outcome
}

/** Records the quality rating a check or a template sync read on the number's node (Meta's GREEN, YELLOW, RED, UNKNOWN). */
export async function recordQuality(
  sql: Sql,
  o: { clock: Clock; timezone: string },
  senderId: number,
  quality: string | null | undefined,
  source: 'check' | 'sync',
): Promise<void> {
  const word = quality?.trim().toLowerCase()
  if (!word || !QUALITIES.has(word)) return
  await sql.begin((tx) => applyToSender(tx, o, senderId, { at: o.clock.now(), quality: word }, source))
}

export type HealthView = {
  quality: string | null
  flagged: boolean
  throughput: string | null
  messaging_limit_source: 'operator' | 'meta'
  restrictions: Restriction[]
  /** What the restrictions refuse now: `all` sends, `business` (business-initiated) ones, or null. */
  restricted: Restricted
  history: { field: string; old: string | null; new: string | null; source: string; at: string }[]
}

/** A sender's health and its latest changes (newest first), as answers and pages show them. */
export async function healthOf(db: Db, clock: Clock, tz: string, senderId: number, limit = 20): Promise<HealthView> {
  const [row] = await db<HealthRow[]>`
    select id, messaging_limit, messaging_limit_source, quality_rating, quality_flagged, throughput, restrictions
    from senders where id = ${senderId}`
  const history = await db<{ field: string; old: string | null; new: string | null; source: string; created_at: Date }[]>`
    select field, old, new, source, created_at from sender_health_history where sender_id = ${senderId}
    order by id desc limit ${limit}`
  const restrictions = restrictionsOf(row?.restrictions)
  return {
    quality: row?.quality_rating ?? null,
    flagged: row?.quality_flagged ?? false,
    throughput: row?.throughput ?? null,
    messaging_limit_source: row?.messaging_limit_source ?? 'operator',
    restrictions,
    restricted: restrictedNow(restrictions, clock.now()),
    history: history.map((h) => ({ field: h.field, old: h.old, new: h.new, source: h.source, at: formatTimestamp(h.created_at, tz)! })),
  }
}
