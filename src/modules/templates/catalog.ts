// WhatsApp templates (issue 30): each belongs to one sender (sender_id null: the deployment's default
// sender), with WhatsApp's own name, language, category and components, a status, a quality and the
// history of their changes (sql/0035). This file owns the rows: reading them, which an account may use,
// and every change of status, category or quality, recorded with who said so. Validating components,
// sending, syncing and submitting are other files' (they call these).
//
// Which an account may use: the templates of its own senders, or, for an account without senders of its
// own (it sends through the deployment's default sender), the deployment's (senders/directory.ts forSend).

import type { Db, Sql } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import { pageOf, type Page } from '../../lib/validate'

export const TEMPLATE_CATEGORIES = ['marketing', 'utility', 'authentication'] as const
export type TemplateCategory = (typeof TEMPLATE_CATEGORIES)[number]

/** Only `approved` sends. Meta's statuses beyond the first six are kept as Meta names them (lower case). */
export const TEMPLATE_STATUSES = [
  'draft',
  'pending',
  'approved',
  'rejected',
  'paused',
  'disabled',
  'in_appeal',
  'pending_deletion',
  'deleted',
  'limit_exceeded',
  'archived',
  'locked',
] as const
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number]

export const TEMPLATE_QUALITIES = ['green', 'yellow', 'red', 'unknown'] as const
export type TemplateQuality = (typeof TEMPLATE_QUALITIES)[number]

/**
 * Who said so: an operator's submission, edit or deletion (a member's, where the operator allows it:
 * rights.ts), a sync, a provider's webhook, the simulator's approval.
 */
export type ChangeSource = 'operator' | 'member' | 'sync' | 'meta' | 'twilio' | 'simulator'

export type WaTemplate = {
  id: number
  sender_id: number | null
  provider: string
  name: string
  language: string
  category: TemplateCategory
  parameter_format: 'positional' | 'named'
  /** The Cloud API's `components`, as given to or read from Meta (Twilio's are mapped onto them). */
  components: Record<string, unknown>[]
  status: TemplateStatus
  reason: string | null
  quality: TemplateQuality
  provider_ref: string | null
  created_at: Date
  updated_at: Date
}

const COLUMNS =
  'id, sender_id, provider, name, language, category, parameter_format, components, status, reason, quality, provider_ref, created_at, updated_at'

const fromRow = (r: WaTemplate): WaTemplate => ({ ...r, id: Number(r.id), sender_id: r.sender_id === null ? null : Number(r.sender_id) })

/**
 * Meta's status word (webhooks' `event`, the list's `status`) as stored, or null for one that is not a
 * status: REINSTATED is approved again; FLAGGED (quality fell, a pause may follow) is recorded as a
 * `flagged` change and leaves the status as it is.
 */
export function statusOfMeta(word: string): TemplateStatus | null {
  const w = word.trim().toLowerCase()
  if (w === 'reinstated') return 'approved'
  return (TEMPLATE_STATUSES as readonly string[]).includes(w) ? (w as TemplateStatus) : null
}

export type NewTemplate = {
  senderId: number | null
  provider: string
  name: string
  language: string
  category: TemplateCategory
  parameterFormat: 'positional' | 'named'
  components: Record<string, unknown>[]
  status?: TemplateStatus
  quality?: TemplateQuality
  reason?: string | null
  providerRef?: string | null
}

/** Stores a template (its `created` change recorded); null when the sender already has one of that name and language. */
export async function insertTemplate(
  tx: Db,
  clock: Pick<Clock, 'sqlNow'>,
  t: NewTemplate,
  source: ChangeSource,
): Promise<WaTemplate | null> {
  const now = nowOf(tx, clock)
  const [row] = await tx<WaTemplate[]>`
    insert into wa_templates (sender_id, provider, name, language, category, parameter_format, components, status, reason, quality,
                              provider_ref, created_at, updated_at)
    values (${t.senderId}, ${t.provider}, ${t.name}, ${t.language}, ${t.category}, ${t.parameterFormat}, ${tx.json(t.components as never)},
            ${t.status ?? 'draft'}, ${t.reason ?? null}, ${t.quality ?? 'unknown'}, ${t.providerRef ?? null}, ${now}, ${now})
    on conflict do nothing
    returning ${tx.unsafe(COLUMNS)}`
  if (!row) return null
  await tx`
    insert into wa_template_changes (template_id, field, old_value, new_value, reason, source, happened_at)
    values (${row.id}, 'created', null, ${row.status}, null, ${source}, ${now})`
  return fromRow(row)
}

export async function getTemplateRow(sql: Db, id: number): Promise<WaTemplate | null> {
  if (!Number.isSafeInteger(id) || id <= 0) return null
  const [row] = await sql<WaTemplate[]>`select ${sql.unsafe(COLUMNS)} from wa_templates where id = ${id}`
  return row ? fromRow(row) : null
}

/**
 * The sender's template of that name and language (sender null: the deployment's), or null: the one
 * not deleted (at most one, sql/0053), else the last deleted one.
 */
export async function findTemplate(sql: Db, senderId: number | null, name: string, language: string): Promise<WaTemplate | null> {
  const [row] = await sql<WaTemplate[]>`
    select ${sql.unsafe(COLUMNS)} from wa_templates
    where coalesce(sender_id, 0) = ${senderId ?? 0} and name = ${name} and language = ${language}
    order by status = 'deleted', id desc
    limit 1`
  return row ? fromRow(row) : null
}

/** The condition "an account may use this template" over wa_templates aliased `t`. */
const usableBy = (sql: Db, accountId: number) => sql`(
  t.sender_id in (select sender_id from account_senders where account_id = ${accountId})
  or (t.sender_id is null and not exists (select 1 from account_senders where account_id = ${accountId})))`

/** The template if the account may use it, else null (another tenant's template is as unknown as a missing one). */
export async function usableTemplate(sql: Db, accountId: number, id: number): Promise<WaTemplate | null> {
  if (!Number.isSafeInteger(id) || id <= 0) return null
  const [row] = await sql<WaTemplate[]>`
    select ${sql.unsafe(COLUMNS.replaceAll(/(\w+)/g, 't.$1'))} from wa_templates t where t.id = ${id} and ${usableBy(sql, accountId)}`
  return row ? fromRow(row) : null
}

export type TemplateFilter = { status?: TemplateStatus; name?: string; language?: string }

/** The templates an account may use, newest first, in the spec's list shape. */
export async function usableTemplates(sql: Sql, accountId: number, filter: TemplateFilter, p: Page) {
  const where = sql`${usableBy(sql, accountId)}
    ${filter.status ? sql`and t.status = ${filter.status}` : sql``}
    ${filter.name ? sql`and t.name = ${filter.name}` : sql``}
    ${filter.language ? sql`and t.language = ${filter.language}` : sql``}`
  const [rows, [count]] = await Promise.all([
    sql<WaTemplate[]>`
      select ${sql.unsafe(COLUMNS.replaceAll(/(\w+)/g, 't.$1'))} from wa_templates t where ${where}
      order by t.created_at desc, t.id desc limit ${p.limit} offset ${p.offset}`,
    sql<{ n: number }[]>`select count(*)::int as n from wa_templates t where ${where}`,
  ])
  return pageOf(rows.map(fromRow), count!.n, p)
}

/** A sender's templates (null: the deployment's), by name and language, for the admin API and the sync. */
export async function templatesOfSender(sql: Db, senderId: number | null): Promise<WaTemplate[]> {
  const rows = await sql<WaTemplate[]>`
    select ${sql.unsafe(COLUMNS)} from wa_templates where coalesce(sender_id, 0) = ${senderId ?? 0} order by name, language`
  return rows.map(fromRow)
}

export type TemplateChange = {
  status?: TemplateStatus
  /** With a status: Meta's reason (a rejection's, a pause's); kept until the next status change. */
  reason?: string | null
  category?: TemplateCategory
  quality?: TemplateQuality
  /** Meta's FLAGGED: recorded, nothing else changes. */
  flagged?: boolean
  providerRef?: string
}

export type RecordedChange = {
  field: 'status' | 'category' | 'quality' | 'flagged'
  old: string | null
  new: string | null
  reason: string | null
}

/**
 * Applies a change to template `id` under its row lock and records each field that really changed
 * (a repeated webhook or sync changes nothing and records nothing). Returns the template as it now
 * is and what changed, so the caller can announce it (`template.status_changed`) in the same
 * transaction; null when there is no such template.
 */
export async function changeTemplate(
  tx: Db,
  clock: Pick<Clock, 'sqlNow'>,
  id: number,
  change: TemplateChange,
  source: ChangeSource,
  /** The provider's time of what said so (a webhook's), kept with each change: see newerProviderChanges. */
  providerAt: Date | null = null,
): Promise<{ template: WaTemplate; changes: RecordedChange[] } | null> {
  const [before] = await tx<WaTemplate[]>`select ${tx.unsafe(COLUMNS)} from wa_templates where id = ${id} for update`
  if (!before) return null
  const changes: RecordedChange[] = []
  const reason = change.reason ?? null
  if (change.status !== undefined && change.status !== before.status)
    changes.push({ field: 'status', old: before.status, new: change.status, reason })
  if (change.category !== undefined && change.category !== before.category)
    changes.push({ field: 'category', old: before.category, new: change.category, reason })
  if (change.quality !== undefined && change.quality !== before.quality)
    changes.push({ field: 'quality', old: before.quality, new: change.quality, reason })
  if (change.flagged) changes.push({ field: 'flagged', old: null, new: null, reason })
  const refChanged = change.providerRef !== undefined && change.providerRef !== before.provider_ref
  if (changes.length === 0 && !refChanged) return { template: fromRow(before), changes }
  const now = nowOf(tx, clock)
  const statusChanged = changes.some((c) => c.field === 'status')
  const [after] = await tx<WaTemplate[]>`
    update wa_templates set
      status = ${statusChanged ? change.status! : before.status},
      reason = ${statusChanged ? reason : before.reason},
      category = ${change.category ?? before.category},
      quality = ${change.quality ?? before.quality},
      provider_ref = ${change.providerRef ?? before.provider_ref},
      updated_at = ${now}
    where id = ${id}
    returning ${tx.unsafe(COLUMNS)}`
  for (const c of changes) {
    await tx`
      insert into wa_template_changes (template_id, field, old_value, new_value, reason, source, happened_at, provider_at)
      values (${id}, ${c.field}, ${c.old}, ${c.new}, ${c.reason}, ${source}, ${now}, ${providerAt})`
  }
  return { template: fromRow(after!), changes }
}

/**
 * The template a provider's notice is about among one sender's (null: the deployment's): the one with
 * the provider's id, else the one of that name and language; null when the sender has none (not synced yet).
 */
export async function findProviderTemplate(
  sql: Db,
  senderId: number | null,
  which: { ref: string | null; name: string | null; language: string | null },
): Promise<WaTemplate | null> {
  const [row] = await sql<WaTemplate[]>`
    select ${sql.unsafe(COLUMNS)} from wa_templates
    where coalesce(sender_id, 0) = ${senderId ?? 0}
      and (${which.ref !== null}::boolean and provider_ref = ${which.ref ?? ''}
           or ${which.name !== null && which.language !== null}::boolean and name = ${which.name ?? ''} and language = ${which.language ?? ''})
    order by (provider_ref is not distinct from ${which.ref}) desc, status = 'deleted', id desc
    limit 1`
  return row ? fromRow(row) : null
}

/**
 * Locks template `id` (its row, as changeTemplate does) and answers, per field, the latest provider
 * time of the changes a provider's notices made (source `source`): a notice older than that for the
 * same field is stale (delivered late or out of order) and must change nothing.
 */
export async function newerProviderChanges(tx: Db, id: number, source: ChangeSource): Promise<Map<string, Date>> {
  await tx`select id from wa_templates where id = ${id} for update`
  const rows = await tx<{ field: string; at: Date }[]>`
    select field, max(provider_at) as at from wa_template_changes
    where template_id = ${id} and source = ${source} and provider_at is not null
    group by field`
  return new Map(rows.map((r) => [r.field, new Date(r.at)]))
}

/**
 * Records a provider's notice that changes nothing yet (Meta's impending category change: `new` is
 * the category it will get), once per notice (a repeat with the same provider time records nothing).
 * Whether it recorded it.
 */
export async function noteTemplate(
  tx: Db,
  clock: Pick<Clock, 'sqlNow'>,
  id: number,
  note: { field: 'category_notice'; old: string | null; new: string | null; reason: string | null },
  source: ChangeSource,
  providerAt: Date | null,
): Promise<boolean> {
  const now = nowOf(tx, clock)
  const rows = await tx`
    insert into wa_template_changes (template_id, field, old_value, new_value, reason, source, happened_at, provider_at)
    select ${id}, ${note.field}, ${note.old}, ${note.new}, ${note.reason}, ${source}, ${now}, ${providerAt}
    where not exists (
      select 1 from wa_template_changes
      where template_id = ${id} and field = ${note.field} and source = ${source}
        and new_value is not distinct from ${note.new} and provider_at is not distinct from ${providerAt})
    returning id`
  return rows.length > 0
}

/**
 * Records that a provider said, at `providerAt`, what template `id`'s `field` already is (its notice
 * changed nothing): kept as a change of the field to the value it has, so that newerProviderChanges
 * counts its time, and an older notice delivered after it changes nothing either (the history leaves
 * it out). Nothing is recorded when a notice of that time or a newer one is already recorded.
 */
export async function noteProviderTime(
  tx: Db,
  clock: Pick<Clock, 'sqlNow'>,
  id: number,
  field: 'status' | 'category' | 'quality',
  value: string,
  source: ChangeSource,
  providerAt: Date,
): Promise<void> {
  const now = nowOf(tx, clock)
  await tx`
    insert into wa_template_changes (template_id, field, old_value, new_value, reason, source, happened_at, provider_at)
    select ${id}, ${field}, ${value}, ${value}, null, ${source}, ${now}, ${providerAt}
    where not exists (
      select 1 from wa_template_changes
      where template_id = ${id} and field = ${field} and source = ${source} and provider_at >= ${providerAt})`
}

/**
 * The database's time now (the test clock's under a test): what a sync takes as its start, on the same
 * clock as the changes' `happened_at`, before it asks the provider for its listing.
 */
export async function changeClock(sql: Db, clock: Pick<Clock, 'sqlNow'>): Promise<Date> {
  const [row] = await sql<{ at: Date }[]>`select ${nowOf(sql, clock)} as at`
  return new Date(row!.at)
}

/**
 * Locks template `id` (as changeTemplate does) and answers the fields changed here after `since`, the
 * start of a sync (a webhook's word, an operator's edit, another sync; `created` for a template made
 * since): the sync's listing was read before them, so for these fields it is the older word and must
 * not overwrite them. A provider's word that confirmed a value (noteProviderTime) counts too.
 */
export async function fieldsChangedSince(tx: Db, id: number, since: Date): Promise<Set<string>> {
  await tx`select id from wa_templates where id = ${id} for update`
  const rows = await tx<{ field: string }[]>`
    select distinct field from wa_template_changes where template_id = ${id} and happened_at > ${since}`
  return new Set(rows.map((r) => r.field))
}

/** How long Meta keeps a deleted template's name and language from a new template. */
export const NAME_HELD_DAYS = 30

/**
 * Until when Meta keeps deleted template `id`'s name and language from a new template: NAME_HELD_DAYS
 * from its deletion (Meta's time of it when its webhook said so, else when this service deleted it),
 * or null when that time has passed, or is not known (a sync found it no longer listed: deleted at
 * some time before).
 */
export async function nameHeldUntil(sql: Db, clock: Pick<Clock, 'sqlNow'>, id: number): Promise<Date | null> {
  const [row] = await sql<{ until: Date }[]>`
    select until from (
      select source, coalesce(provider_at, happened_at) + make_interval(days => ${NAME_HELD_DAYS}) as until
      from wa_template_changes
      where template_id = ${id} and field = 'status' and new_value = 'deleted' and old_value is distinct from new_value
      order by id desc
      limit 1
    ) deletion
    where source <> 'sync' and until > ${nowOf(sql, clock)}`
  return row ? new Date(row.until) : null
}

export type HistoryRow = {
  field: string
  old_value: string | null
  new_value: string | null
  reason: string | null
  source: ChangeSource
  happened_at: Date
}

/** A template's changes, oldest first (not a provider's word that changed nothing: noteProviderTime). */
export async function templateHistory(sql: Db, id: number): Promise<HistoryRow[]> {
  return sql<HistoryRow[]>`
    select field, old_value, new_value, reason, source, happened_at from wa_template_changes
    where template_id = ${id} and not (field in ('status', 'category', 'quality') and old_value is not distinct from new_value)
    order by id`
}

/**
 * Replaces template `id`'s definition (its components and parameter format) with the provider's, as a
 * sync reads it after an edit made at the provider; records a `components` change. False when nothing
 * changed or there is no such template.
 */
export async function replaceDefinition(
  tx: Db,
  clock: Pick<Clock, 'sqlNow'>,
  id: number,
  components: Record<string, unknown>[],
  parameterFormat: 'positional' | 'named',
  source: ChangeSource,
): Promise<boolean> {
  const now = nowOf(tx, clock)
  const [row] = await tx<{ id: number }[]>`
    update wa_templates set components = ${tx.json(components as never)}, parameter_format = ${parameterFormat}, updated_at = ${now}
    where id = ${id} and (components <> ${tx.json(components as never)} or parameter_format <> ${parameterFormat})
    returning id`
  if (!row) return false
  await tx`
    insert into wa_template_changes (template_id, field, old_value, new_value, reason, source, happened_at)
    values (${id}, 'components', null, null, null, ${source}, ${now})`
  return true
}
