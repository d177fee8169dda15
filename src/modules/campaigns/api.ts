import { t } from 'elysia'
import { readSql } from '../../http/reads'
import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { Campaign, CampaignDetail, CampaignList, CampaignIdParams, CampaignsQuery, CreateCampaignBody } from './model'
import { createCampaign, getCampaign, listCampaigns, templateSenderOf } from './service'
import { optionalTimestamp, page } from '../../http/values'
import { formatTimes } from '../../lib/time'
import { linkStart } from '../media/signing'

const tags = ['Campaigns']

export const campaignsApi = (deps: Deps) => {
  const { sql } = deps
  const tz = deps.config.timezone
  return apiRoutes()
    .get(
      '/campaigns',
      async ({ query, principal, request }) =>
        ok(formatTimes(await listCampaigns(await readSql(deps, request), principal, page(query)), tz)),
      {
        query: CampaignsQuery,
        response: { 200: envelopeOf(CampaignList), ...errorsOf(400, 401, 422) },
        detail: {
          tags,
          summary: "List the account's campaigns, newest first",
          description:
            '`data` is `{items, total, limit, offset, has_more}`: `offset` counts records. Ties in creation time are broken by id, higher first.',
        },
      },
    )
    .get('/campaigns/:id', async ({ params, principal }) => ok(formatTimes(await getCampaign(sql, principal, params.id), tz)), {
      params: CampaignIdParams,
      response: { 200: envelopeOf(CampaignDetail), ...errorsOf(400, 401, 404) },
      detail: {
        tags,
        summary: 'One campaign with its delivery statistics',
        description:
          "`stats` counts the campaign's messages by their current status: `total` every message of the campaign " +
          '(including ones not yet handed to the provider), `sent` those that reached the provider (status `sent`, ' +
          '`delivered` or `read`), `delivered` those delivered (`delivered` or `read`), `read` those read, `failed` ' +
          "those failed. Another account's campaign is 404 `NOT_FOUND`.",
      },
    })
    .post(
      '/campaigns',
      async ({ body, principal, set }) => {
        set.status = 201
        // A WhatsApp template goes from its own sender unless `from` names one.
        const sender = await deps.senders.forSend(
          principal.accountId,
          body.from ?? (await templateSenderOf(sql, principal.accountId, body.template_id)),
        )
        const input = { ...body, schedule_at: optionalTimestamp(body.schedule_at, 'schedule_at', tz) }
        return ok({
          campaign: formatTimes(
            await createCampaign(sql, deps.clock, principal, input, sender.id, {
              uploadedLink: (id) => linkStart(deps.config.publicBaseUrl, id),
            }),
            tz,
          ),
        })
      },
      {
        body: CreateCampaignBody,
        response: { 201: envelopeOf(t.Object({ campaign: Campaign })), ...errorsOf(400, 401, 422) },
        detail: {
          tags,
          summary: 'Create a campaign (draft)',
          description:
            'Creates a campaign in state `draft`; running it happens in the dashboard. `template_id` and `segment_id` ' +
            'must name a template and a segment of the same account (422 otherwise); `schedule_at`, when given, must not be in the past. ' +
            "Extension: `template_id` may name a WhatsApp template the account may use (GET /templates): the campaign goes from the template's " +
            'own sender (another `from` is 422) and `parameters` maps each of its parameters to a contact field, a contact attribute or a ' +
            'constant (a parameter unmapped or unknown: 422 naming it). Before each batch is charged the template must be approved; ' +
            'otherwise the campaign pauses (`pause_reason` starting `TEMPLATE_NOT_APPROVED`) and resumes by itself once it is approved again.',
        },
      },
    )
}
