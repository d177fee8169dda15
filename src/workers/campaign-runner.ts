// Sends the batches of campaigns in `sending` (modules/campaigns/engine.ts): woken when a campaign
// starts or resumes, polling for campaigns another instance started or one whose lease expired.

import { sendCampaignBatches } from '../modules/campaigns/engine'
import type { Worker } from './worker'

const CAMPAIGN_RUNNER_POLL_MS = 1_000

export const campaignRunner: Worker = {
  name: 'campaign-runner',
  pollMs: CAMPAIGN_RUNNER_POLL_MS,
  runOnce: async (deps) => (await sendCampaignBatches(deps)).sent,
}
