// A sender's WhatsApp templates in the admin API (issue 30): list, one with its history, create and
// submit, sync from the provider. Sender `0` is the deployment's default sender.

import type { AdminActor } from '../../http/admin-auth'
import { t } from 'elysia'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ApiError, ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { DECIMAL, Id } from '../../http/models'
import { formatTimes, formatTimestamp } from '../../lib/time'
import type { HistoryRow, WaTemplate } from './catalog'
import { createSenderTemplate, senderTemplates, syncTemplates, waTemplate } from './submission'
import { deleteTemplate, editTemplate } from './edits'
import { memberRights, setMembersMayChange, type TemplateActor } from './rights'
import { audit } from '../users/service'
import { IdParams } from '../../http/models'

const tags = ['Admin: WhatsApp templates']

/** The admin token's changes are an operator's, recorded with the request's actor. */
const operator = (actor: AdminActor): TemplateActor => ({ kind: 'operator', ...actor })

/** A sender id in an admin path where 0 names the deployment's default sender. */
const SenderOrDefault = t
  .Transform(
    t.String({
      pattern: DECIMAL,
      description: "Sender id (a positive decimal integer), or 0: the deployment's default sender",
      examples: ['3'],
    }),
  )
  .Decode((text) => {
    const value = Number(text)
    if (!Number.isSafeInteger(value) || value < 0) throw new ApiError('NOT_FOUND', `sender ${text.slice(0, 30)} not found`)
    return value
  })
  .Encode((value) => String(value))

const SenderTemplatesParams = t.Object({ id: SenderOrDefault })

const nullableText = (description: string) => t.Union([t.String(), t.Null()], { description })

export const WaTemplateModel = t.Object({
  id: t.Integer({ description: 'Template id: the `template_id` of a send' }),
  sender_id: t.Integer({ description: "Its sender (0: the deployment's default sender)" }),
  provider: t.String({ examples: ['meta'] }),
  name: t.String({ examples: ['invoice_due'] }),
  language: t.String({ examples: ['id'] }),
  category: t.String({ description: 'marketing, utility or authentication (as the provider last said)', examples: ['utility'] }),
  parameter_format: t.String({ description: 'positional ({{1}}) or named ({{order_id}})', examples: ['positional'] }),
  components: t.Array(t.Record(t.String(), t.Unknown()), {
    description: "The Cloud API's components, as given or as the provider lists them",
  }),
  status: t.String({ description: "draft, pending, approved, rejected, paused, disabled, or another of Meta's", examples: ['pending'] }),
  reason: nullableText("The provider's reason for a rejection or a pause"),
  quality: t.String({ description: 'green, yellow, red or unknown', examples: ['unknown'] }),
  provider_ref: nullableText(
    "The provider's id of the template (Meta's template id, Twilio's Content SID); null until submitted or synced",
  ),
  created_at: t.String(),
  updated_at: t.String(),
})

const HistoryModel = t.Object({
  field: t.String({ description: 'created, status, category, quality, flagged or components' }),
  old: nullableText('The value before'),
  new: nullableText('The value after'),
  reason: nullableText("The provider's reason, when it gave one"),
  source: t.String({ description: 'Who said so: operator, member, sync, meta, twilio or simulator' }),
  at: t.String({ description: 'When, YYYY-MM-DD HH:MM:SS' }),
})

const OneTemplate = t.Object({
  ...WaTemplateModel.properties,
  history: t.Array(HistoryModel, { description: 'Its changes, oldest first' }),
})

export const SyncModel = t.Object({
  sender_id: t.Integer(),
  provider: t.String(),
  listed: t.Integer({ description: 'Templates the provider listed' }),
  created: t.Integer({ description: 'New here' }),
  changed: t.Integer({ description: 'Known here, their status, category, quality or definition changed' }),
  unchanged: t.Integer(),
  gone: t.Integer({ description: 'Known here, no longer listed: now deleted' }),
  skipped: t.Array(t.Object({ name: t.String(), language: t.String(), why: t.String() }), {
    description: 'Listed but not taken (a category or status the service does not know), with why',
  }),
})

const DefinitionBody = t.Object(
  {
    name: t.String({ description: 'Lowercase letters, digits and underscores, at most 512', examples: ['invoice_due'] }),
    language: t.String({ description: 'The language code', examples: ['id'] }),
    category: t.String({ description: 'MARKETING, UTILITY or AUTHENTICATION', examples: ['UTILITY'] }),
    parameter_format: t.Optional(t.String({ description: 'POSITIONAL (the default: {{1}}, {{2}}…) or NAMED ({{order_id}})' })),
    components: t.Array(t.Record(t.String(), t.Unknown()), { description: "The Cloud API's components: HEADER, BODY, FOOTER, BUTTONS" }),
  },
  {
    additionalProperties: true,
    description: "A template in the Cloud API's own JSON, passed to the provider as given (other fields of Meta's too)",
    examples: [
      {
        name: 'invoice_due',
        language: 'id',
        category: 'UTILITY',
        components: [{ type: 'BODY', text: 'Tagihan {{1}} jatuh tempo {{2}}.', example: { body_text: [['INV-1001', '5 Desember']] } }],
      },
    ],
  },
)

const EditBody = t.Object(
  {
    components: t.Array(t.Record(t.String(), t.Unknown()), {
      description:
        "The template's new components (the Cloud API's HEADER, BODY, FOOTER, BUTTONS): all of them, as Meta's edit replaces them",
    }),
    category: t.Optional(
      t.String({ description: 'MARKETING, UTILITY or AUTHENTICATION: a rejected or paused template may change it, an approved one not' }),
    ),
    name: t.Optional(t.String({ description: "The template's own (a name never changes)" })),
    language: t.Optional(t.String({ description: "The template's own (a language never changes)" })),
    parameter_format: t.Optional(t.String({ description: "The template's own (an edit keeps it)" })),
  },
  {
    additionalProperties: false,
    description: "An edit in the Cloud API's JSON (POST /{template-id}): the new components, and the category where Meta allows it",
    examples: [
      {
        components: [
          { type: 'BODY', text: 'Tagihan {{1}} jatuh tempo {{2}}. Terima kasih.', example: { body_text: [['INV-1001', '5 Desember']] } },
        ],
      },
    ],
  },
)

const TemplateRights = t.Object({
  account_id: t.Integer(),
  members_create_templates: t.Boolean({
    description:
      "Whether the account's members may create, edit and delete WhatsApp templates for the account's own senders (default false)",
  }),
})

export const waTemplatesAdmin = (deps: Deps) => {
  const tz = deps.config.timezone
  const shown = (template: WaTemplate) => formatTimes({ ...template, sender_id: template.sender_id ?? 0 }, tz)
  const history = (rows: HistoryRow[]) =>
    rows.map((r) => ({
      field: r.field,
      old: r.old_value,
      new: r.new_value,
      reason: r.reason,
      source: r.source,
      at: formatTimestamp(r.happened_at, tz)!,
    }))
  const rightsOf = (accountId: number) => memberRights(deps.sql, accountId)
  return adminRoutes(deps.config)
    .get('/senders/:id/templates', async ({ params }) => ok((await senderTemplates(deps, params.id)).map(shown)), {
      params: SenderTemplatesParams,
      response: { 200: envelopeOf(t.Array(WaTemplateModel)), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: "A sender's WhatsApp templates, by name and language (sender 0: the deployment's)" },
    })
    .get(
      '/whatsapp-templates/:id',
      async ({ params }) => {
        const one = await waTemplate(deps, params.id)
        return ok({ ...shown(one.template), history: history(one.history) })
      },
      {
        params: t.Object({ id: Id('template', 'WhatsApp template id') }),
        response: { 200: envelopeOf(OneTemplate), ...errorsOf(400, 401, 404) },
        detail: {
          tags,
          summary: "One WhatsApp template (any sender's), with the history of its status, category, quality and definition",
          description:
            "Its `sender_id` names its sender (0: the deployment's). An account template's id (the `{{name}}` kind) is 404 here.",
        },
      },
    )
    .post(
      '/senders/:id/templates',
      async ({ params, body, set, actor }) => {
        const created = await createSenderTemplate(deps, params.id, body as Record<string, unknown>, operator(actor))
        set.status = 201
        return ok(shown(created))
      },
      {
        params: SenderTemplatesParams,
        body: DefinitionBody,
        response: { 201: envelopeOf(WaTemplateModel), ...errorsOf(400, 401, 404, 409, 422, 502, 503) },
        detail: {
          tags,
          summary: 'Create a WhatsApp template and submit it for approval',
          description:
            "The Cloud API's template JSON (`name`, `language`, `category`, `parameter_format`, `components`), checked (422 naming the " +
            'part), then for a Meta sender submitted as given to its WhatsApp Business Account (POST /{waba-id}/message_templates) and ' +
            "stored with Meta's answer (status `pending`, Meta's id and category); Meta's refusal is 502 `BAD_GATEWAY` with its words and " +
            "`provider_code` (503 when Meta asks to try later: its creation limit), and nothing is stored. A Twilio sender's is made a " +
            "Content template (POST /v1/Content) and submitted for WhatsApp's approval (POST /v1/Content/{sid}/ApprovalRequests/whatsapp), " +
            'stored `pending` with its Content SID; what a Content template cannot be (NAMED parameters, a text header) is 422. A simulator ' +
            "sender's template is stored `pending` and reviewed by the simulator as Meta would: `approved` SIM_TEMPLATE_APPROVAL_MS later, " +
            'or `rejected` (INVALID_FORMAT) when its name starts with `reject_`. 409 `CONFLICT` when the sender has a template of that name and ' +
            "language, or while Meta keeps them from a new one (a deleted template's, for 30 days from its deletion; `pending_deletion`): " +
            "before asking Meta when the service knows the deletion's time, else Meta's refusal (error_subcode 2388023) with `provider_code`. " +
            'After the 30 days the new template is stored beside the deleted one.',
        },
      },
    )
    .patch(
      '/whatsapp-templates/:id',
      async ({ params, body, actor }) => ok(shown(await editTemplate(deps, operator(actor), params.id, body as Record<string, unknown>))),
      {
        params: t.Object({ id: Id('template', 'WhatsApp template id') }),
        body: EditBody,
        response: { 200: envelopeOf(WaTemplateModel), ...errorsOf(400, 401, 404, 409, 422, 502, 503) },
        detail: {
          tags,
          summary: 'Edit a WhatsApp template (its components, and its category where Meta allows it)',
          description:
            'Meta: POST /{template-id} with the new `components` (and `category`), then the template is `pending` (Meta reviews the edit; ' +
            'it does not send until approved again) and its history records the new definition (source `operator`). Meta edits only ' +
            "approved, rejected and paused templates (409 otherwise, nothing sent), never an approved one's category (422), never a " +
            "name or language (422), and an approved one at most once a day and ten times a month (Meta's refusal: 502 with its words and " +
            '`provider_code`; 503 when it asks to try later). An edit that changes nothing is 422 and spends no edit. Twilio edits no ' +
            'Content template: 422 (create a new template and delete this one). A simulator template is taken and reviewed again.',
        },
      },
    )
    .delete('/whatsapp-templates/:id', async ({ params, actor }) => ok(shown(await deleteTemplate(deps, operator(actor), params.id))), {
      params: t.Object({ id: Id('template', 'WhatsApp template id') }),
      response: { 200: envelopeOf(WaTemplateModel), ...errorsOf(400, 401, 404, 422, 502, 503) },
      detail: {
        tags,
        summary: 'Delete a WhatsApp template at its provider, then here',
        description:
          'Meta: DELETE /{waba-id}/message_templates?name=…&hsm_id=… (that language only; Meta keeps the name from being used again ' +
          'for 30 days); Twilio: DELETE /v1/Content/{sid}; the simulator: here only. Then the template is `deleted` (kept, with its ' +
          'history): a send of it is 422 `TEMPLATE_NOT_APPROVED` naming `deleted`, nothing charged, and a running campaign of it pauses ' +
          "with that reason. The provider's refusal is 502 with its words, and nothing changes. Deleting a deleted template changes nothing.",
      },
    })
    .get('/accounts/:id/template-rights', async ({ params }) => ok(await rightsOf(params.id)), {
      params: IdParams,
      response: { 200: envelopeOf(TemplateRights), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: "Whether an account's members may create, edit and delete its own senders' WhatsApp templates" },
    })
    .put(
      '/accounts/:id/template-rights',
      async ({ params, body, actor }) => {
        const changed = await setMembersMayChange(deps.sql, deps.clock, params.id, body.members_create_templates)
        if (changed) {
          await audit(deps.sql, {
            ...actor,
            accountId: params.id,
            action: body.members_create_templates ? 'template rights granted' : 'template rights withdrawn',
          })
        }
        return ok(await rightsOf(params.id))
      },
      {
        params: IdParams,
        body: t.Object({ members_create_templates: t.Boolean() }, { additionalProperties: false }),
        response: { 200: envelopeOf(TemplateRights), ...errorsOf(400, 401, 404) },
        detail: {
          tags,
          summary: "Let an account's members create, edit and delete its own senders' WhatsApp templates (or not)",
          description:
            "Off by default. With it on, a member of the account may, from the dashboard (the member's page of one of the account's " +
            "senders, `/dashboard/my-senders/{id}`), create, submit, edit and delete that sender's templates: never the deployment's " +
            "default sender's, never another account's sender's (not found). Each change is in the template's history (source " +
            '`member`) and the audit log.',
        },
      },
    )
    .post('/senders/:id/templates/sync', async ({ params }) => ok(await syncTemplates(deps, params.id)), {
      params: SenderTemplatesParams,
      response: { 200: envelopeOf(SyncModel), ...errorsOf(400, 401, 404, 422, 502) },
      detail: {
        tags,
        summary: "Sync a sender's WhatsApp templates from its provider",
        description:
          "Meta: every template of the sender's WhatsApp Business Account (GET /{waba-id}/message_templates, every page), upserted by " +
          'name and language; each change of status, category or quality is recorded with source `sync`, and a template no longer ' +
          "listed becomes `deleted`. A field changed here after the sync started (Meta's webhook, an edit, a submission) keeps " +
          'that newer word: the listing was read before it. Twilio: every Content template of the account with its WhatsApp approval (GET ' +
          "/v1/ContentAndApprovals, every page), mapped onto the Cloud API components. The deployment's default sender (0) syncs when " +
          'it is a Twilio sender, or a Meta one with META_BUSINESS_ACCOUNT_ID set. 422 for a sender ' +
          'whose templates live here only (the simulator) or that cannot reach them; 502 when the provider does not list them (nothing changes).',
      },
    })
}
