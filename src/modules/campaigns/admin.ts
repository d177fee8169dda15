// Campaigns in the admin API: an account's list, and running one (now, or scheduled at schedule_at),
// resuming it after a top-up, cancelling it.

import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { IdParams, PageQuery } from '../../http/models'
import { cancelCampaign, resumeCampaign, runCampaign } from './engine'
import { accountOfCampaign, adminCampaignDetail, adminListCampaigns } from './service'
import { CampaignDetail, CampaignList } from './model'
import { page } from '../../http/values'
import type { AdminActor } from '../../http/admin-auth'
import { audit } from '../users/service'
import { formatTimes } from '../../lib/time'

const tags = ['Admin: campaigns']

export const campaignsAdmin = (deps: Deps) => {
  const tz = deps.config.timezone
  const detail = async (id: number) => formatTimes(await adminCampaignDetail(deps.sql, id), tz)
  // The campaign after a change, its audit entry written (the same actions as the dashboard's).
  const audited = async (actor: AdminActor, id: number, action: string) => {
    const changed = await detail(id)
    const detail_ = { campaign_id: id, name: changed.campaign.name, status: changed.campaign.status }
    await audit(deps.sql, { ...actor, accountId: await accountOfCampaign(deps.sql, id), action, detail: detail_ })
    return changed
  }
  const answer = { params: IdParams, response: { 200: envelopeOf(CampaignDetail), ...errorsOf(400, 401, 404, 409) } }
  return adminRoutes(deps.config)
    .get('/campaigns/:id', async ({ params }) => ok(await detail(params.id)), {
      ...answer,
      detail: { tags, summary: 'A campaign of any account, with its live stats' },
    })
    .post(
      '/campaigns/:id/run',
      async ({ params, actor }) => {
        await runCampaign(deps, params.id)
        return ok(await audited(actor, params.id, 'campaign run'))
      },
      {
        ...answer,
        detail: {
          tags,
          summary: 'Run a draft campaign',
          description:
            'Starts the draft now (status `sending`), or at its `schedule_at` when that is in the future (status `scheduled`). ' +
            'The recipients are the contacts of the segment at the moment sending starts. 409 unless the campaign is a draft.',
        },
      },
    )
    .post(
      '/campaigns/:id/resume',
      async ({ params, actor }) => {
        await resumeCampaign(deps, params.id)
        return ok(await audited(actor, params.id, 'campaign resumed'))
      },
      { ...answer, detail: { tags, summary: 'Resume a campaign paused for lack of balance (409 unless paused)' } },
    )
    .post(
      '/campaigns/:id/cancel',
      async ({ params, actor }) => {
        await cancelCampaign(deps, params.id)
        return ok(await audited(actor, params.id, 'campaign cancelled'))
      },
      { ...answer, detail: { tags, summary: 'Cancel a campaign that has not finished (409 when sent or cancelled)' } },
    )
    .get(
      '/accounts/:id/campaigns',
      async ({ params, query }) => ok(formatTimes(await adminListCampaigns(deps.sql, params.id, page(query)), tz)),
      {
        params: IdParams,
        query: PageQuery,
        response: { 200: envelopeOf(CampaignList), ...errorsOf(400, 401, 404, 422) },
        detail: { tags: ['Admin'], summary: "An account's campaigns, newest first" },
      },
    )
}
