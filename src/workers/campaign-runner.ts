// Sends the batches of campaigns in `sending` (modules/campaigns/engine.ts): woken when a campaign
// starts or resumes, polling for campaigns another instance started or one whose lease expired.
//
// A step sends every campaign it can claim at once (up to MAX_AT_ONCE), each for its turn: campaigns of
// different senders each go at their own sender's pace, and one account's campaign never waits for
// another's to end. While they run, the step keeps claiming, so a campaign started meanwhile joins
// within a poll; it claims none anew after CLAIM_FOR_MS, and none it sent already in this step, so a
// step ends (and a stopping service with it) once the campaigns it holds have had their turn.

import { claimCampaign, sendClaimedCampaign } from '../modules/campaigns/engine'
import type { Worker } from './worker'

const CAMPAIGN_RUNNER_POLL_MS = 1_000
const MAX_AT_ONCE = 16
const CLAIM_FOR_MS = 30_000

export const campaignRunner: Worker = {
  name: 'campaign-runner',
  pollMs: CAMPAIGN_RUNNER_POLL_MS,
  async runOnce(deps) {
    const { clock } = deps
    const startedAt = clock.monotonic()
    const claimedHere: number[] = []
    const running = new Set<Promise<void>>()
    let sent = 0
    let failure: unknown = null
    let oneEnded: (() => void) | undefined
    for (;;) {
      while (running.size < MAX_AT_ONCE && failure === null && clock.monotonic() - startedAt < CLAIM_FOR_MS) {
        const claimed = await claimCampaign(deps.sql, clock, claimedHere)
        if (!claimed) break
        claimedHere.push(claimed.id)
        const step: Promise<void> = sendClaimedCampaign(deps, claimed)
          .then(
            (r) => void (sent += r.sent),
            (error: unknown) => void (failure ??= error),
          )
          .finally(() => {
            running.delete(step)
            oneEnded?.()
          })
        running.add(step)
      }
      if (running.size === 0) break
      // A guard, not a sleep: the step waits for a campaign to end, or for the poll to claim one started meanwhile.
      await new Promise<void>((resolve) => {
        const poll = clock.setTimeout(resolve, CAMPAIGN_RUNNER_POLL_MS)
        oneEnded = () => {
          clock.clearTimeout(poll)
          resolve()
        }
      })
    }
    if (failure !== null) throw failure
    return sent
  },
}
