// The operator's side of campaigns: the templates and segments a campaign is built from, and the
// templates' bindings to providers' approved templates.

import { t } from 'elysia'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { Id, IdParams, listOf, PageQuery } from '../../http/models'
import { deleteBinding, setBinding } from './bindings'
import { Binding, BindingBody, CreateSegmentBody, CreateTemplateBody, Deleted, Segment, Template, UpdateTemplateBody } from './model'
import { createTemplate, deleteTemplate, getTemplate, isRowId, listTemplates, updateTemplate } from './service'
import { createSegment, getSegment, listSegments } from './segments'
import { page } from '../../http/values'
import { formatTimes } from '../../lib/time'
import type { AdminActor } from '../../http/admin-auth'
import { audit } from '../users/service'

const tags = ['Admin']
const BindingParams = t.Object({
  id: Id('template', 'Template id'),
  provider: t.String({ description: 'simulator, twilio or meta', examples: ['twilio'] }),
})

export const templatesAdmin = (deps: Deps) => {
  const { sql } = deps
  const tz = deps.config.timezone
  // A change to a template by its id, audited under the template's account once it is made. The
  // account is read first: a deleted template names it no more.
  const changed = async <T>(actor: AdminActor, action: string, id: number, change: () => Promise<T>, provider?: string) => {
    const [owner] = isRowId(id) ? await sql<{ account_id: number }[]>`select account_id from templates where id = ${id}` : []
    const result = await change()
    await audit(sql, {
      ...actor,
      accountId: owner?.account_id ?? null,
      action,
      detail: provider ? { template_id: id, provider } : { template_id: id },
    })
    return result
  }
  return adminRoutes(deps.config)
    .post(
      '/accounts/:id/templates',
      async ({ params, body, set, actor }) => {
        const template = await createTemplate(sql, params.id, body)
        await audit(sql, {
          ...actor,
          accountId: params.id,
          action: 'template created',
          detail: { template_id: template.id, name: template.name },
        })
        set.status = 201
        return ok(formatTimes(template, tz))
      },
      {
        params: IdParams,
        body: CreateTemplateBody,
        response: { 201: envelopeOf(Template), ...errorsOf(400, 401, 404, 422) },
        detail: { tags, summary: 'Create a message template ({{name}}-style placeholders from contact fields)' },
      },
    )
    .get('/accounts/:id/templates', async ({ params, query }) => ok(formatTimes(await listTemplates(sql, params.id, page(query)), tz)), {
      params: IdParams,
      query: PageQuery,
      response: { 200: envelopeOf(listOf(Template)), ...errorsOf(400, 401, 404, 422) },
      detail: { tags, summary: "An account's templates, newest first" },
    })
    .post(
      '/accounts/:id/segments',
      async ({ params, body, set, actor }) => {
        const segment = await createSegment(sql, params.id, body)
        await audit(sql, {
          ...actor,
          accountId: params.id,
          action: 'segment created',
          detail: { segment_id: segment.id, name: segment.name },
        })
        set.status = 201
        return ok(formatTimes(segment, tz))
      },
      {
        params: IdParams,
        body: CreateSegmentBody,
        response: { 201: envelopeOf(Segment), ...errorsOf(400, 401, 404, 422) },
        detail: { tags, summary: 'Create a segment: the contacts carrying one tag' },
      },
    )
    .get('/accounts/:id/segments', async ({ params, query }) => ok(formatTimes(await listSegments(sql, params.id, page(query)), tz)), {
      params: IdParams,
      query: PageQuery,
      response: { 200: envelopeOf(listOf(Segment)), ...errorsOf(400, 401, 404, 422) },
      detail: { tags, summary: "An account's segments, newest first" },
    })
    .get('/templates/:id', async ({ params }) => ok(formatTimes(await getTemplate(sql, params.id), tz)), {
      params: IdParams,
      response: { 200: envelopeOf(Template), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: 'One template' },
    })
    .patch(
      '/templates/:id',
      async ({ params, body, actor }) =>
        ok(formatTimes(await changed(actor, 'template changed', params.id, () => updateTemplate(sql, params.id, body)), tz)),
      {
        params: IdParams,
        body: UpdateTemplateBody,
        response: { 200: envelopeOf(Template), ...errorsOf(400, 401, 404, 409, 422) },
        detail: { tags, summary: 'Change a template (409 while a scheduled, sending or paused campaign uses it)' },
      },
    )
    .delete(
      '/templates/:id',
      async ({ params, actor }) => ok(await changed(actor, 'template deleted', params.id, () => deleteTemplate(sql, params.id))),
      {
        params: IdParams,
        response: { 200: envelopeOf(Deleted), ...errorsOf(400, 401, 404, 409) },
        detail: { tags, summary: 'Delete a template (409 while any campaign refers to it)' },
      },
    )
    .put(
      '/templates/:id/bindings/:provider',
      async ({ params, body, actor }) =>
        ok(
          formatTimes(
            await changed(actor, 'template bound', params.id, () => setBinding(sql, params.id, params.provider, body), params.provider),
            tz,
          ),
        ),
      {
        params: BindingParams,
        body: BindingBody,
        response: { 200: envelopeOf(Binding), ...errorsOf(400, 401, 404, 409, 422) },
        detail: {
          tags,
          summary: "Bind a template to a provider's approved template",
          description:
            'Sets (or replaces) the binding of the template for one provider: `twilio` (a Content SID, no language), `meta` ' +
            "(the template name and its language code) or `simulator` (any name). `variables` lists, in the provider template's " +
            "order, the account template's placeholders that fill its variables; each must be one the template uses (422 otherwise). " +
            'A template has at most one binding per provider. While bound for the provider in use, a campaign with this template ' +
            "sends the approved template with each contact's values (and records the rendered text), and so does a send with " +
            '`template_id`. 409 while a scheduled, sending or paused campaign uses the template; 422 for a provider that sends no templates.',
        },
      },
    )
    .delete(
      '/templates/:id/bindings/:provider',
      async ({ params, actor }) =>
        ok(await changed(actor, 'template unbound', params.id, () => deleteBinding(sql, params.id, params.provider), params.provider)),
      {
        params: BindingParams,
        response: { 200: envelopeOf(Deleted), ...errorsOf(400, 401, 404, 409, 422) },
        detail: {
          tags,
          summary: "Remove a template's binding for a provider (it goes as free-form text there again)",
          description:
            '404 when the template has no binding for that provider; 409 while a scheduled, sending or paused campaign uses the template.',
        },
      },
    )
    .get('/segments/:id', async ({ params }) => ok(formatTimes(await getSegment(sql, params.id), tz)), {
      params: IdParams,
      response: { 200: envelopeOf(Segment), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: 'One segment with its current contact count' },
    })
}
