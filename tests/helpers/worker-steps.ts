// Workers stepped by the test instead of their loops (tests of the inner ring): a worker's step runs
// again while it finds work, as its loop would run it, and the test clock moves to whatever it sleeps.

import type { Deps, WorkerName } from '../../src/deps'
import { WORKERS } from '../../src/workers'
import type { TestClock } from '../../src/lib/clock'
import type { TestApp } from './app'

/** Runs `name`'s step until one finds nothing to do; the count of what the steps did. */
export async function drain(t: TestApp, clock: TestClock, name: WorkerName): Promise<number> {
  let done = 0
  for (;;) {
    const n = await clock.run(t.runWorker(name))
    if (n === 0) return done
    done += n
  }
}

/** One step of `name` on `deps` (another clock, say: a step taken at another time). */
export function stepWith(deps: Deps, name: WorkerName): Promise<number> {
  const worker = WORKERS.find((w) => w.name === name)
  if (!worker || !('runOnce' in worker)) throw new Error(`${name} has no single step`)
  return worker.runOnce(deps)
}
