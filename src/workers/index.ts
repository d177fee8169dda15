// Every background worker of the service, in one list. startWorkers runs each in its own loop.

import type { Deps } from '../deps'
import { startLoop, type Loop } from './loop'
import type { Worker } from './worker'
import { handoffRecovery } from './handoff-recovery'
import { simulatorReports } from './simulator-reports'
import { webhookDelivery } from './webhook-delivery'
import { campaignRunner } from './campaign-runner'
import { campaignScheduler } from './campaign-scheduler'
import { parkedReports } from './parked-reports'
import { retention } from './retention'
import { inboundMedia } from './inbound-media'
import { partitions } from './partitions'
import { templateSync } from './template-sync'
import { type WorkerName } from '../deps'

export const WORKERS: Worker[] = [
  handoffRecovery,
  simulatorReports,
  webhookDelivery,
  campaignRunner,
  campaignScheduler,
  parkedReports,
  retention,
  inboundMedia,
  partitions,
  templateSync,
]

export function startWorkers(deps: Deps, loops: Map<WorkerName, Loop>): void {
  for (const worker of WORKERS) loops.set(worker.name, startWorker(deps, worker))
}

/** One worker's loop, started. */
export function startWorker(deps: Deps, worker: Worker): Loop {
  return 'start' in worker
    ? worker.start(deps)
    : startLoop(worker.name, () => worker.runOnce(deps), { pollMs: worker.pollMs, minGapMs: worker.minGapMs, clock: deps.clock })
}
