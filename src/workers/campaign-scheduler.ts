// Starts scheduled campaigns whose schedule_at has come, then wakes the runner.

import { startDueCampaigns } from '../modules/campaigns/engine'
import type { Worker } from './worker'

/** How late a scheduled campaign may start, at most. */
const CAMPAIGN_SCHEDULER_POLL_MS = 500

export const campaignScheduler: Worker = {
  name: 'campaign-scheduler',
  pollMs: CAMPAIGN_SCHEDULER_POLL_MS,
  async runOnce(deps) {
    if ((await startDueCampaigns(deps.sql)) > 0) deps.wake('campaign-runner')
    return 0
  },
}
