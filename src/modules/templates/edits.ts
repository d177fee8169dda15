// Editing and deleting a sender's WhatsApp templates, as their providers allow (issue 30).
//
// Edit: the template's new `components` (and `category`), its name and language never change.
// - Meta (POST /{template-id}): only an approved, rejected or paused template (409 otherwise, nothing
//   sent); an approved one keeps its category (422: Meta moves it itself, or the operator makes a new
//   template); Meta reviews the edit again, so it is `pending` until Meta says (its webhook, a sync), and
//   its limits (an approved template once a day, ten times a month) are Meta's to refuse (502, nothing
//   stored). An edit that changes nothing is not sent (it would spend one of Meta's edits).
// - Twilio: a Content template never changes (422: create a new template, delete this one).
// - Simulator: taken here and reviewed again by the simulator, as a submission is.
// Delete: the provider's first (Meta: DELETE /{waba-id}/message_templates with the name and the id, so
// one language goes, never the name's others; Twilio: DELETE /v1/Content/{sid}), then the template is
// `deleted` here: it stays listed with its history, a send of it is refused before charging
// (TEMPLATE_NOT_APPROVED naming `deleted`), and a running campaign of it pauses with that reason
// (campaigns/engine.ts reads the status before each batch). A refusal of the provider keeps it as it was.
//
// Each change is recorded in the template's history (source `operator`, or `member`), announced as
// `template.status_changed`, and audited. rights.ts decides who may (a member: its own account's
// senders, where the operator allows it).

import type { Db } from '../../db/client'
import { transaction } from '../../db/client'
import { ApiError, badValue } from '../../http/errors'
import { templateReviewOf, waTemplatesOf } from '../../providers/registry'
import type { TemplateChangeAnswer } from '../../providers/provider'
import { audit } from '../users/service'
import { getTemplateRow, replaceDefinition, type WaTemplate } from './catalog'
import { definitionOf } from './components'
import { changeAndAnnounce } from './events'
import { scheduleReview } from './reviews'
import { requireMayChange, sourceOf, type TemplateActor } from './rights'
import { templateSender, type SubmissionContext } from './submission'

/** The statuses Meta edits a template in. */
const EDITABLE = ['approved', 'rejected', 'paused'] as const

/** The template `id` if the actor may change it (another tenant's, or a missing one: 404). */
async function changeable(sql: Db, actor: TemplateActor, id: number): Promise<WaTemplate> {
  const template = await getTemplateRow(sql, id)
  if (!template) throw new ApiError('NOT_FOUND', `WhatsApp template ${id} not found`)
  try {
    await requireMayChange(sql, actor, template.sender_id)
  } catch (error) {
    if (error instanceof ApiError && error.code === 'NOT_FOUND') throw new ApiError('NOT_FOUND', `WhatsApp template ${id} not found`)
    throw error
  }
  return template
}

/** The provider's refusal of a change as the answer's error: 502 with its words and code (503 when it asks to try later). */
function refused(provider: string, what: string, answer: Extract<TemplateChangeAnswer, { ok: false }>): ApiError {
  return new ApiError(
    answer.throttled ? 'SERVICE_UNAVAILABLE' : 'BAD_GATEWAY',
    `${provider} refused ${what}: ${answer.detail}`,
    undefined,
    {
      provider_code: answer.code,
    },
  )
}

const upper = (v: string) => v.toUpperCase()

/**
 * Edits template `id`: `body` is the Cloud API's edit (`components`, optionally `category`; `name`,
 * `language` and `parameter_format`, when given, must be the template's own). Answers it as it now is.
 */
export async function editTemplate(
  ctx: SubmissionContext,
  actor: TemplateActor,
  id: number,
  body: Record<string, unknown>,
): Promise<WaTemplate> {
  const template = await changeable(ctx.sql, actor, id)
  for (const [key, own] of [
    ['name', template.name],
    ['language', template.language],
  ] as const) {
    if (body[key] !== undefined && body[key] !== own) {
      throw badValue(`${key}: a template's ${key} never changes (it is ${own}); create a new template instead`)
    }
  }
  if (body.parameter_format !== undefined && String(body.parameter_format).toLowerCase() !== template.parameter_format) {
    throw badValue(`parameter_format: an edit keeps the template's (${upper(template.parameter_format)}); create a new template instead`)
  }
  const definition = definitionOf({
    ...body,
    name: template.name,
    language: template.language,
    category: body.category ?? upper(template.category),
    parameter_format: upper(template.parameter_format),
  })
  const sender = await templateSender(ctx, template.sender_id ?? 0)
  const support = waTemplatesOf(sender.provider)
  if (support && !support.edit) {
    throw badValue(
      `${sender.provider} does not edit templates (${sender.label}): a ${sender.provider} template never changes once made; ` +
        'create a new template with the new content, and delete this one',
    )
  }
  if (!(EDITABLE as readonly string[]).includes(template.status)) {
    throw new ApiError(
      'CONFLICT',
      `WhatsApp template ${id} (${template.name}, ${template.language}) is ${template.status}: only an approved, rejected or paused ` +
        'template can be edited',
    )
  }
  const categoryChanged = definition.category !== template.category
  if (categoryChanged && template.status === 'approved') {
    throw badValue(`category: an approved template keeps its category (${template.category}); only a rejected or paused one may change it`)
  }
  // Compared as values (jsonb keeps keys in its own order).
  if (!categoryChanged && Bun.deepEquals(definition.components, template.components)) {
    throw badValue('components: the same as the template has: nothing to edit')
  }
  if (support) {
    const why = support.unreachable(sender.settings)
    if (why) throw badValue(`${sender.label} (${sender.provider}) cannot reach its templates: ${why}`)
    if (!template.provider_ref) throw badValue(`WhatsApp template ${id} has no id at ${sender.provider} yet: sync the sender first`)
    const change: Record<string, unknown> = { components: definition.components }
    if (categoryChanged) change.category = upper(definition.category)
    const answer = await support.edit!(sender.settings, template.provider_ref, change, {
      timeoutMs: ctx.config.providerTimeoutMs,
      clock: ctx.clock,
    })
    if (!answer.ok) throw refused(sender.provider, `the edit of template ${template.provider_ref}`, answer)
  }
  const review = support ? null : (templateReviewOf(sender.provider)?.(sender.settings, definition) ?? null)
  const source = sourceOf(actor)
  return transaction(ctx.sql, async (tx) => {
    await replaceDefinition(tx, ctx.clock, id, definition.components, definition.parameterFormat, source)
    const changed = await changeAndAnnounce(
      tx,
      { clock: ctx.clock, timezone: ctx.config.timezone },
      id,
      { status: 'pending', reason: null, category: definition.category },
      source,
    )
    if (review) {
      await tx`delete from simulator_template_reviews where template_id = ${id}`
      await scheduleReview(tx, ctx.clock, id, review)
    }
    await audit(tx, {
      user: actor.user,
      address: actor.address,
      actor: actor.actor,
      accountId: actor.kind === 'member' ? actor.accountId : null,
      action: 'template edited',
      detail: { template_id: id, sender_id: template.sender_id ?? 0, name: template.name, language: template.language },
    })
    return changed!.template
  })
}

/** Deletes template `id` at its provider, then here (`deleted`, with its history). Answers it as it now is. */
export async function deleteTemplate(ctx: SubmissionContext, actor: TemplateActor, id: number): Promise<WaTemplate> {
  const template = await changeable(ctx.sql, actor, id)
  if (template.status === 'deleted') return template
  const sender = await templateSender(ctx, template.sender_id ?? 0)
  const support = waTemplatesOf(sender.provider)
  if (support) {
    const why = support.unreachable(sender.settings)
    if (why) throw badValue(`${sender.label} (${sender.provider}) cannot reach its templates: ${why}`)
    if (!template.provider_ref) throw badValue(`WhatsApp template ${id} has no id at ${sender.provider} yet: sync the sender first`)
    const answer = await support.remove(
      sender.settings,
      { ref: template.provider_ref, name: template.name, language: template.language },
      { timeoutMs: ctx.config.providerTimeoutMs, clock: ctx.clock },
    )
    if (!answer.ok) throw refused(sender.provider, `the deletion of template ${template.provider_ref}`, answer)
  }
  const source = sourceOf(actor)
  return transaction(ctx.sql, async (tx) => {
    await tx`delete from simulator_template_reviews where template_id = ${id}`
    const changed = await changeAndAnnounce(
      tx,
      { clock: ctx.clock, timezone: ctx.config.timezone },
      id,
      { status: 'deleted', reason: `deleted by ${actor.kind === 'member' ? 'a member' : 'the operator'}` },
      source,
    )
    await audit(tx, {
      user: actor.user,
      address: actor.address,
      actor: actor.actor,
      accountId: actor.kind === 'member' ? actor.accountId : null,
      action: 'template deleted',
      detail: { template_id: id, sender_id: template.sender_id ?? 0, name: template.name, language: template.language },
    })
    return changed!.template
  })
}
