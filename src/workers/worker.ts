// The shape of every background worker: a name (the one wake-ups use), a poll interval, and one
// step. The loop (loop.ts) runs the step again at once while it finds work, otherwise waits for the
// poll or a wake-up. The webhook delivery worker runs a pipeline of concurrent requests instead of
// single steps, so it starts its own loop (and has a step for tests all the same).

import type { Deps, WorkerName } from '../deps'
import type { Loop } from './loop'

type Common = {
  name: WorkerName
  pollMs: number
}

export type Worker = Common &
  (
    | {
        /** One step; the count of what it did (> 0: run again at once). */
        runOnce(deps: Deps): Promise<number>
        /** Steps run at most this often, however often the worker is woken. */
        minGapMs?: number
      }
    | {
        start(deps: Deps): Loop
        /** One step of what its loop does, finished (a test steps it on its test clock instead of waiting). */
        runOnce(deps: Deps): Promise<number>
      }
  )
