// A sender's WhatsApp templates in the admin API (issue 30): listing them, one with its history,
// creating one (the Cloud API's template JSON as given: validated, submitted to the provider when the
// sender's provider keeps templates of its own, then stored `pending`), and syncing them from the
// provider (every template of the sender's WhatsApp Business Account, upserted by name and language:
// a change of status, category or quality is recorded with source `sync` and announced as
// `template.status_changed`, events.ts). Sender 0 is the
// deployment's default sender (the environment's PROVIDER settings; a Meta default sender reaches its
// templates with META_BUSINESS_ACCOUNT_ID). The rows are catalog.ts's; the provider's calls are its
// plugin's (providers/<name>/templates.ts).

import type { Sql } from '../../db/client'
import { transaction } from '../../db/client'
import type { Config } from '../../config'
import type { Clock } from '../../lib/clock'
import type { SecretBox } from '../../lib/secrets'
import { ApiError, badValue } from '../../http/errors'
import { formatTimestamp } from '../../lib/time'
import { PROVIDER_NAMES, templateReviewOf, waTemplatesOf } from '../../providers/registry'
import type { ListedTemplate, WaTemplateSupport } from '../../providers/provider'
import { activeSenderIds, openFields, senderRow, supportOf, whyNotOpen } from '../senders/service'
import { checkSender } from '../senders/check'
import { recordQuality } from '../senders/health'
import {
  changeClock,
  fieldsChangedSince,
  findTemplate,
  getTemplateRow,
  insertTemplate,
  nameHeldUntil,
  NAME_HELD_DAYS,
  replaceDefinition,
  statusOfMeta,
  templateHistory,
  templatesOfSender,
  TEMPLATE_CATEGORIES,
  TEMPLATE_QUALITIES,
  type TemplateCategory,
  type TemplateChange,
  type TemplateQuality,
  type WaTemplate,
} from './catalog'
import { definitionOf } from './components'
import { changeAndAnnounce } from './events'
import { scheduleReview } from './reviews'
import { recordSync, syncedWithin, type SyncTrigger } from './syncs'
import { ADMIN_ACTOR, requireMayChange, sourceOf, type TemplateActor } from './rights'
import { audit } from '../users/service'

/** What to do about a name and language Meta keeps from a new template. */
const HELD = `Meta keeps a deleted template's name and language from a new template for ${NAME_HELD_DAYS} days: use another name, or wait`

export type SubmissionContext = { sql: Sql; config: Config; clock: Clock; secrets: SecretBox }

/** A sender as its templates need it: its id (null: the deployment's), provider and settings. */
export type TemplateSender = { id: number | null; provider: string; settings: unknown; label: string }

/** The sender `id` of an admin path (0: the deployment's default sender), with its opened settings. */
export async function templateSender(ctx: SubmissionContext, id: number): Promise<TemplateSender> {
  const environments = ctx.config.providers as Record<string, unknown>
  if (id === 0) {
    return {
      id: null,
      provider: ctx.config.provider,
      settings: environments[ctx.config.provider],
      label: "the deployment's default sender",
    }
  }
  const row = await senderRow(ctx.sql, id)
  let fields: Record<string, string>
  try {
    fields = await openFields(ctx.secrets, row)
  } catch (error) {
    throw badValue(`sender ${id}'s ${whyNotOpen(error)}`)
  }
  const settings = supportOf(row.provider).settingsOf(fields, row.number, environments[row.provider])
  return { id: row.id, provider: row.provider, settings, label: `sender ${row.id}` }
}

/** The provider's template support for the sender, or why its templates cannot be reached (422). */
function reachable(sender: TemplateSender): WaTemplateSupport<unknown> {
  const support = waTemplatesOf(sender.provider)
  if (!support) {
    throw badValue(
      sender.provider === 'simulator'
        ? `${sender.label} (simulator) keeps its templates here only: there is nothing to sync`
        : `${sender.label} (${sender.provider}): syncing templates from ${sender.provider} is not supported yet`,
    )
  }
  const why = support.unreachable(sender.settings)
  if (why) throw badValue(`${sender.label} (${sender.provider}) cannot reach its templates: ${why}`)
  return support
}

/** A category as stored, from the provider's word (MARKETING), or null for one the service does not know. */
const categoryOf = (word: string): TemplateCategory | null => {
  const w = word.trim().toLowerCase()
  return (TEMPLATE_CATEGORIES as readonly string[]).includes(w) ? (w as TemplateCategory) : null
}
const qualityOf = (word: string | null): TemplateQuality | undefined => {
  const w = word?.trim().toLowerCase()
  return w && (TEMPLATE_QUALITIES as readonly string[]).includes(w) ? (w as TemplateQuality) : undefined
}
const formatOf = (word: string | null): 'positional' | 'named' => (word?.toUpperCase() === 'NAMED' ? 'named' : 'positional')

export type SyncResult = {
  sender_id: number
  provider: string
  /** Templates the provider listed. */
  listed: number
  /** New here. */
  created: number
  /** Known here, with a status, category, quality or definition that changed. */
  changed: number
  unchanged: number
  /** Known here but no longer listed: now `deleted`. */
  gone: number
  /** Listed, not taken: why (a category or status the service does not know). */
  skipped: { name: string; language: string; why: string }[]
}

/** Why a listed template cannot be stored, or null. */
function unfit(t: ListedTemplate): string | null {
  if (!categoryOf(t.category)) return `category "${t.category}" is not marketing, utility or authentication`
  if (!statusOfMeta(t.status)) return `status "${t.status}" is not one the service knows`
  return null
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/**
 * Reads every template of the sender from its provider and brings the sender's templates here in line:
 * a new one is stored, a known one (same name and language) takes the provider's status, reason,
 * category, quality, id and definition (each real change recorded, source `sync`), and one no longer
 * listed becomes `deleted`. Each change of status, category or quality is announced
 * (`template.status_changed`) in its transaction. Nothing changes when the listing fails (502).
 *
 * The listing is older than what changes here while it is read: a field changed after the sync started
 * (Meta's webhook pausing the template, an edit; a template created meanwhile) keeps its newer word,
 * and the next sync reads the provider again (fieldsChangedSince).
 */
export async function syncTemplates(ctx: SubmissionContext, senderId: number, trigger: SyncTrigger = 'demand'): Promise<SyncResult> {
  try {
    const result = await syncOnce(ctx, senderId)
    await recordSync(ctx.sql, ctx.clock, senderId, trigger, true, syncSummary(result))
    if (senderId !== 0) await readQuality(ctx, senderId)
    return result
  } catch (error) {
    // A sender that does not exist has nothing to keep; any other refusal is its last sync's outcome.
    if (error instanceof ApiError && error.code !== 'NOT_FOUND')
      await recordSync(ctx.sql, ctx.clock, senderId, trigger, false, error.message)
    throw error
  }
}

/**
 * The number's quality rating, read on its node at each sync (issue 32: the sender's health keeps it), for
 * a provider whose check reads it (Meta's). A check that fails changes nothing: the sync went well.
 */
async function readQuality(ctx: SubmissionContext, senderId: number): Promise<void> {
  const row = await senderRow(ctx.sql, senderId)
  if (!supportOf(row.provider).checkReadsQuality) return
  const check = await checkSender(ctx, row)
  if (check.ok) await recordQuality(ctx.sql, { clock: ctx.clock, timezone: ctx.config.timezone }, senderId, check.quality, 'sync')
}

/** A sync's counts in words. */
export const syncSummary = (r: SyncResult) =>
  `${r.listed} listed by ${r.provider}, ${r.created} new, ${r.changed} changed, ${r.unchanged} unchanged, ${r.gone} gone` +
  (r.skipped.length ? `, ${r.skipped.length} skipped` : '')

/**
 * Syncs a sender's templates when it is created or its credentials checked, when its provider keeps
 * templates of its own: the outcome (null: nothing to sync, a simulator sender), never an error, so the
 * create or the check goes on whatever the provider answers.
 */
export async function syncWhenReady(
  ctx: SubmissionContext,
  senderId: number,
  trigger: 'created' | 'checked',
): Promise<{ ok: boolean; detail: string } | null> {
  const row = await senderRow(ctx.sql, senderId)
  if (!waTemplatesOf(row.provider)) return null
  try {
    return { ok: true, detail: syncSummary(await syncTemplates(ctx, senderId, trigger)) }
  } catch (error) {
    if (!(error instanceof ApiError)) throw error
    return { ok: false, detail: error.message }
  }
}

async function syncOnce(ctx: SubmissionContext, senderId: number): Promise<SyncResult> {
  const sender = await templateSender(ctx, senderId)
  const support = reachable(sender)
  // What changes here from now on (a webhook's word while the listing is read) is newer than the listing.
  const started = await changeClock(ctx.sql, ctx.clock)
  const listing = await support.list(sender.settings, { timeoutMs: ctx.config.providerTimeoutMs, clock: ctx.clock })
  if (!listing.ok) throw new ApiError('BAD_GATEWAY', `${sender.provider} did not list the templates of ${sender.label}: ${listing.detail}`)
  const result: SyncResult = {
    sender_id: senderId,
    provider: sender.provider,
    listed: listing.templates.length,
    created: 0,
    changed: 0,
    unchanged: 0,
    gone: 0,
    skipped: [],
  }
  const seen = new Set<string>()
  for (const listed of listing.templates) {
    const why = unfit(listed)
    if (why) {
      result.skipped.push({ name: listed.name, language: listed.language, why })
      continue
    }
    seen.add(`${listed.name}\u0000${listed.language}`)
    const outcome = await transaction(ctx.sql, (tx) => syncOne(tx, ctx.clock, ctx.config.timezone, sender, listed, started))
    result[outcome]++
  }
  for (const known of await templatesOfSender(ctx.sql, sender.id)) {
    if (known.status === 'deleted' || seen.has(`${known.name}\u0000${known.language}`)) continue
    if (listing.templates.some((t) => t.name === known.name && t.language === known.language)) continue
    const gone = await transaction(ctx.sql, async (tx) => {
      // Created or given a status since the listing was read (a submission, a webhook): not gone.
      const newer = await fieldsChangedSince(tx, known.id, started)
      if (newer.has('created') || newer.has('status')) return false
      await changeAndAnnounce(
        tx,
        { clock: ctx.clock, timezone: ctx.config.timezone },
        known.id,
        { status: 'deleted', reason: `no longer listed by ${sender.provider}` },
        'sync',
      )
      return true
    })
    if (gone) result.gone++
  }
  return result
}

async function syncOne(
  tx: Parameters<typeof insertTemplate>[0],
  clock: Clock,
  timezone: string,
  sender: TemplateSender,
  listed: ListedTemplate,
  started: Date,
): Promise<'created' | 'changed' | 'unchanged'> {
  const category = categoryOf(listed.category)!
  const status = statusOfMeta(listed.status)!
  const quality = qualityOf(listed.quality)
  const parameterFormat = formatOf(listed.parameterFormat)
  const known = await findTemplate(tx, sender.id, listed.name, listed.language)
  // A deleted one's name and language listed with another id: a new template made at the provider.
  if (!known || (known.status === 'deleted' && known.provider_ref !== listed.ref)) {
    const inserted = await insertTemplate(
      tx,
      clock,
      {
        senderId: sender.id,
        provider: sender.provider,
        name: listed.name,
        language: listed.language,
        category,
        parameterFormat,
        components: listed.components,
        status,
        quality,
        reason: listed.reason,
        providerRef: listed.ref,
      },
      'sync',
    )
    // Created meanwhile (a submission, another sync): taken as known.
    if (inserted) return 'created'
    return syncOne(tx, clock, timezone, sender, listed, started)
  }
  // A field changed here since the listing was read (a webhook's PAUSED while Meta answered the list
  // with APPROVED) keeps its newer word; the next sync reads it again.
  const newer = await fieldsChangedSince(tx, known.id, started)
  // Created here since (a submission): all of it is newer than the listing.
  const madeSince = newer.has('created')
  const change: TemplateChange = { providerRef: listed.ref }
  if (!madeSince && !newer.has('status')) Object.assign(change, { status, reason: listed.reason })
  if (!madeSince && !newer.has('category')) change.category = category
  if (!madeSince && !newer.has('quality')) change.quality = quality
  // Announced in this transaction, as a webhook's change is (template.status_changed).
  const changed = await changeAndAnnounce(tx, { clock, timezone }, known.id, change, 'sync')
  const keepDefinition = madeSince || newer.has('components')
  const definitionChanged =
    !keepDefinition && (!sameJson(known.components, listed.components) || known.parameter_format !== parameterFormat)
      ? await replaceDefinition(tx, clock, known.id, listed.components, parameterFormat, 'sync')
      : false
  return changed!.changes.length > 0 || definitionChanged ? 'changed' : 'unchanged'
}

/** The sender's templates (0: the deployment's), by name and language. */
export async function senderTemplates(ctx: SubmissionContext, senderId: number): Promise<WaTemplate[]> {
  if (senderId !== 0) await senderRow(ctx.sql, senderId)
  return templatesOfSender(ctx.sql, senderId === 0 ? null : senderId)
}

/** One WhatsApp template with its history; 404 when there is none of that id. */
export async function waTemplate(ctx: SubmissionContext, templateId: number) {
  const template = await getTemplateRow(ctx.sql, templateId)
  if (!template) throw new ApiError('NOT_FOUND', `WhatsApp template ${templateId} not found`)
  return { template, history: await templateHistory(ctx.sql, templateId) }
}

/**
 * Creates a template for the sender from the Cloud API's template JSON: checked (422 naming the part),
 * 409 when the sender has one of that name and language (or Meta keeps them from a new one: a deleted
 * template's for 30 days, nameHeldUntil; Meta's own refusal of them, 2388023, likewise), submitted to
 * the provider when it keeps templates of its own (its refusal is 502 with its code and words, nothing stored), then stored with
 * the status the provider answered (`pending`); a simulator sender's is stored `pending` with the
 * simulator's review of it (reviews.ts: approved after SIM_TEMPLATE_APPROVAL_MS, or rejected).
 */
export async function createSenderTemplate(
  ctx: SubmissionContext,
  senderId: number,
  body: Record<string, unknown>,
  actor: TemplateActor = ADMIN_ACTOR,
): Promise<WaTemplate> {
  // Who may, before anything is read or checked: a member learns nothing of a sender not its own.
  await requireMayChange(ctx.sql, actor, senderId === 0 ? null : senderId)
  const definition = definitionOf(body)
  const sender = await templateSender(ctx, senderId)
  const support = waTemplatesOf(sender.provider)
  if (!support && sender.provider !== 'simulator') {
    throw badValue(`${sender.label} (${sender.provider}): submitting templates to ${sender.provider} is not supported yet`)
  }
  const existing = await findTemplate(ctx.sql, sender.id, definition.name, definition.language)
  if (existing && existing.status !== 'deleted') {
    throw new ApiError(
      'CONFLICT',
      existing.status === 'pending_deletion'
        ? `${sender.label}'s template ${definition.name} (${definition.language}) is being deleted at ${sender.provider}: ${HELD}`
        : `${sender.label} has a template ${definition.name} (${definition.language}) already`,
    )
  }
  // Meta's rule (the simulator plays Meta): refused here, before asking, when the deletion's time is known.
  const held = existing && existing.provider !== 'twilio' ? await nameHeldUntil(ctx.sql, ctx.clock, existing.id) : null
  if (held) {
    throw new ApiError(
      'CONFLICT',
      `${sender.label}'s template ${definition.name} (${definition.language}) was deleted less than ${NAME_HELD_DAYS} days ago: ` +
        `${HELD} (until ${formatTimestamp(held, ctx.config.timezone)})`,
    )
  }
  let submitted: { ref: string; status: string; category: string | null } | null = null
  if (support) {
    const why = support.unreachable(sender.settings)
    if (why) throw badValue(`${sender.label} (${sender.provider}) cannot reach its templates: ${why}`)
    const problem = support.definitionProblem?.(body) ?? null
    if (problem) throw badValue(`${problem} (${sender.label} is a ${sender.provider} sender)`)
    const answer = await support.submit(sender.settings, body, { timeoutMs: ctx.config.providerTimeoutMs, clock: ctx.clock })
    if (!answer.ok && answer.nameTaken) {
      throw new ApiError(
        'CONFLICT',
        `${sender.provider} refused the template: its name and language are taken at ${sender.provider} (a template of them ` +
          `is being deleted, or was less than ${NAME_HELD_DAYS} days ago): ${HELD}. ${sender.provider} said: ${answer.detail}`,
        undefined,
        { provider_code: answer.code },
      )
    }
    if (!answer.ok) {
      throw new ApiError(
        answer.throttled ? 'SERVICE_UNAVAILABLE' : 'BAD_GATEWAY',
        `${sender.provider} refused the template: ${answer.detail}`,
        undefined,
        { provider_code: answer.code },
      )
    }
    submitted = answer
  }
  const review = support ? null : (templateReviewOf(sender.provider)?.(sender.settings, definition) ?? null)
  const inserted = await transaction(ctx.sql, async (tx) => {
    const row = await insertTemplate(
      tx,
      ctx.clock,
      {
        senderId: sender.id,
        provider: sender.provider,
        name: definition.name,
        language: definition.language,
        category: (submitted?.category && categoryOf(submitted.category)) || definition.category,
        parameterFormat: definition.parameterFormat,
        components: definition.components,
        status: (submitted && statusOfMeta(submitted.status)) || 'pending',
        providerRef: submitted?.ref ?? null,
      },
      sourceOf(actor),
    )
    if (row && review) await scheduleReview(tx, ctx.clock, row.id, review)
    if (row) {
      await audit(tx, {
        user: actor.user,
        address: actor.address,
        actor: actor.actor,
        accountId: actor.kind === 'member' ? actor.accountId : null,
        action: 'template created',
        detail: { sender_id: senderId, template_id: row.id, name: row.name, language: row.language, status: row.status },
      })
    }
    return row
  })
  if (!inserted) throw new ApiError('CONFLICT', `${sender.label} has a template ${definition.name} (${definition.language}) already`)
  return inserted
}

/**
 * Syncs every sender whose provider keeps templates of its own (not disabled) and that no one synced
 * in the last `minutes`, and the deployment's default sender when it can reach its templates (it keeps
 * no last sync, so each instance lists it): the periodic sync (TEMPLATE_SYNC_MINUTES). One sender's
 * failure (its provider unreachable, its credentials refused) is reported and the others go on.
 */
export async function syncEverySender(
  ctx: SubmissionContext,
  minutes: number,
  report: (senderId: number, why: string) => void,
): Promise<{ synced: number; failed: number }> {
  const providers = PROVIDER_NAMES.filter((name) => waTemplatesOf(name))
  const recent = await syncedWithin(ctx.sql, ctx.clock, minutes)
  const ids = (await activeSenderIds(ctx.sql, providers)).filter((id) => !recent.has(id))
  const own = waTemplatesOf(ctx.config.provider)
  const environment = (ctx.config.providers as Record<string, unknown>)[ctx.config.provider]
  if (own && !own.unreachable(environment)) ids.unshift(0)
  let synced = 0
  let failed = 0
  for (const id of ids) {
    try {
      await syncTemplates(ctx, id, 'periodic')
      synced++
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      failed++
      report(id, error.message)
    }
  }
  return { synced, failed }
}
