// Starts scheduled campaigns whose schedule_at has come, and resumes those paused by their sender's
// messaging limit once it has room again, and those paused because their WhatsApp template was not
// approved once it is approved again, and those paused because Meta flagged or restricted their sender
// once it recovers; then wakes the runner. It also gives back to recovery the campaign messages set aside
// while their template was not approved, once it is again (or refunds them when their validity ran out).

import {
  releaseSetAside,
  resumeHealthyCampaigns,
  resumeLimitedCampaigns,
  resumeTemplateCampaigns,
  startDueCampaigns,
} from '../modules/campaigns/engine'
import type { Worker } from './worker'

/** How late a scheduled campaign may start, at most. */
const CAMPAIGN_SCHEDULER_POLL_MS = 500

export const campaignScheduler: Worker = {
  name: 'campaign-scheduler',
  pollMs: CAMPAIGN_SCHEDULER_POLL_MS,
  async runOnce(deps) {
    const started = await startDueCampaigns(deps.sql, deps.clock)
    const resumed = await resumeLimitedCampaigns(deps.sql, deps.clock, deps.config.messagingLimit)
    const approved = await resumeTemplateCampaigns(deps.sql)
    const healthy = await resumeHealthyCampaigns(deps.sql, deps.clock)
    if (started + resumed + approved + healthy > 0) deps.wake('campaign-runner')
    if ((await releaseSetAside(deps.sql, deps.clock, deps.config)) > 0) deps.wake('handoff-recovery')
    return 0
  },
}
