// The shape of every background loop: run a step; if it found work, run again at once; otherwise
// sleep until the poll interval passes or someone wakes it. Errors back off exponentially.
// Loops share nothing in memory with other instances: all coordination is row locks in PostgreSQL.

import { log } from '../lib/log'
import type { Clock } from '../lib/clock'

export type Loop = { name: string; wake(): void; stop(): Promise<void> }

export function startLoop(
  name: string,
  step: () => Promise<number>,
  options: {
    pollMs: number
    maxBackoffMs?: number
    minGapMs?: number
    /** The first step comes this long after the start (default: at once). */
    firstAfterMs?: number
    clock: Clock
  },
): Loop {
  const { clock } = options
  let stopped = false
  let wakeUp: (() => void) | undefined
  let woken = false
  // A poll's sleep ends early on a wake-up (or a stop).
  const sleep = async (ms: number) => {
    if (woken || stopped) {
      woken = false
      return
    }
    const early = new AbortController()
    wakeUp = () => early.abort()
    await clock.sleep(ms, early.signal)
    wakeUp = undefined
    woken = false
  }

  const running = (async () => {
    let failures = 0
    let lastStep = 0
    if (options.firstAfterMs) await sleep(options.firstAfterMs)
    while (!stopped) {
      try {
        const gap = lastStep + (options.minGapMs ?? 0) - clock.monotonic()
        if (gap > 0) await clock.sleep(gap)
        lastStep = clock.monotonic()
        const done = await step()
        failures = 0
        if (done > 0) continue
        await sleep(options.pollMs)
      } catch (error) {
        failures++
        const backoff = Math.min(options.maxBackoffMs ?? 30_000, options.pollMs * 2 ** failures)
        if (!stopped)
          log.warn('worker step failed', {
            worker: name,
            error: error instanceof Error ? error.message.slice(0, 200) : 'unknown',
            retry_in_ms: backoff,
          })
        await sleep(backoff)
      }
    }
  })()

  return {
    name,
    wake() {
      if (wakeUp) wakeUp()
      else woken = true
    },
    async stop() {
      stopped = true
      wakeUp?.()
      await running
    },
  }
}
