// The operator's side of campaigns: the templates and segments a campaign is built from.

import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { adminAuth } from '../../http/admin-auth'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { page } from '../../lib/validate'
import { IdParams, listOf, PageQuery } from '../../http/models'
import { CampaignList, CreateSegmentBody, CreateTemplateBody, Segment, Template, UpdateTemplateBody } from './model'
import {
  adminListCampaigns,
  createSegment,
  createTemplate,
  deleteTemplate,
  getSegment,
  getTemplate,
  listSegments,
  listTemplates,
  updateTemplate,
} from './service'

const tags = ['Admin']

export const campaignAdminRoutes = (deps: Deps) => {
  const { sql } = deps
  const tz = deps.config.timezone
  return new Elysia({ prefix: '/admin/v1' })
    .use(adminAuth(deps.config))
    .post(
      '/accounts/:id/templates',
      async ({ params, body, set }) => {
        set.status = 201
        return ok(await createTemplate(sql, tz, params.id, body))
      },
      {
        params: IdParams,
        body: CreateTemplateBody,
        response: { 201: envelopeOf(Template), ...errorsOf(400, 401, 404, 422) },
        detail: { tags, summary: 'Create a message template ({{name}}-style placeholders from contact fields)' },
      },
    )
    .get('/accounts/:id/templates', async ({ params, query }) => ok(await listTemplates(sql, tz, params.id, page(query))), {
      params: IdParams,
      query: PageQuery,
      response: { 200: envelopeOf(listOf(Template)), ...errorsOf(400, 401, 404, 422) },
      detail: { tags, summary: "An account's templates, newest first" },
    })
    .post(
      '/accounts/:id/segments',
      async ({ params, body, set }) => {
        set.status = 201
        return ok(await createSegment(sql, tz, params.id, body))
      },
      {
        params: IdParams,
        body: CreateSegmentBody,
        response: { 201: envelopeOf(Segment), ...errorsOf(400, 401, 404, 422) },
        detail: { tags, summary: 'Create a segment: the contacts carrying one tag' },
      },
    )
    .get('/accounts/:id/segments', async ({ params, query }) => ok(await listSegments(sql, tz, params.id, page(query))), {
      params: IdParams,
      query: PageQuery,
      response: { 200: envelopeOf(listOf(Segment)), ...errorsOf(400, 401, 404, 422) },
      detail: { tags, summary: "An account's segments, newest first" },
    })
    .get('/templates/:id', async ({ params }) => ok(await getTemplate(sql, tz, params.id)), {
      params: IdParams,
      response: { 200: envelopeOf(Template), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: 'One template' },
    })
    .patch('/templates/:id', async ({ params, body }) => ok(await updateTemplate(sql, tz, params.id, body)), {
      params: IdParams,
      body: UpdateTemplateBody,
      response: { 200: envelopeOf(Template), ...errorsOf(400, 401, 404, 409, 422) },
      detail: { tags, summary: 'Change a template (409 while a scheduled, sending or paused campaign uses it)' },
    })
    .delete('/templates/:id', async ({ params }) => ok(await deleteTemplate(sql, params.id)), {
      params: IdParams,
      response: { 200: envelopeOf(t.Object({ deleted: t.Literal(true) })), ...errorsOf(400, 401, 404, 409) },
      detail: { tags, summary: 'Delete a template (409 while any campaign refers to it)' },
    })
    .get('/segments/:id', async ({ params }) => ok(await getSegment(sql, tz, params.id)), {
      params: IdParams,
      response: { 200: envelopeOf(Segment), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: 'One segment with its current contact count' },
    })
    .get('/accounts/:id/campaigns', async ({ params, query }) => ok(await adminListCampaigns(sql, tz, params.id, page(query))), {
      params: IdParams,
      query: PageQuery,
      response: { 200: envelopeOf(CampaignList), ...errorsOf(400, 401, 404, 422) },
      detail: { tags, summary: "An account's campaigns, newest first" },
    })
}
