// Group commit: items that arrive while writes are in flight go together into the next write, so
// under load many requests share one statement (and one commit) while a lone request waits for
// nobody. Up to `parallel` writes run at once. Every caller's promise settles when the write
// carrying its item has finished. A failed write of several items is retried item by item, so one
// item the database rejects fails alone (the writes given to a Batcher must be safe to repeat:
// atomic, or guarded so that a second run changes nothing). A write that found no connection fails
// them all at once: alone, each would wait for one again (CONNECT_WAIT_SECONDS), one after another.
// With a `deadline`, a write that has not settled within it fails its items (the deadline's error),
// all at once, and the next write starts: a statement that never comes back (a connection that went
// quiet, a lock that is never released) holds up its own items only, not every later one. The write's
// signal then aborts, for it to end what it waits on; it is not retried, and what it does after is ignored.

import { isUnreachable } from './no-connection'
import type { Clock } from './clock'

export type Deadline = { ms: number; clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>; error: () => unknown }

export class Batcher<I, O> {
  private queued: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = []
  private inFlight = 0
  private scheduled = false

  constructor(
    private readonly write: (items: I[], signal: AbortSignal) => Promise<O[]>,
    private readonly options: { maxBatch?: number; parallel?: number; deadline?: Deadline } = {},
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queued.push({ item, resolve, reject })
      this.schedule()
    })
  }

  private schedule(): void {
    if (this.scheduled || this.queued.length === 0 || this.inFlight >= (this.options.parallel ?? 1)) return
    this.scheduled = true
    // Let the requests of the same tick join this write.
    queueMicrotask(() => {
      this.scheduled = false
      void this.flush()
    })
  }

  private async flush(): Promise<void> {
    if (this.queued.length === 0 || this.inFlight >= (this.options.parallel ?? 1)) return
    const batch = this.queued.splice(0, this.options.maxBatch ?? 500)
    this.inFlight++
    const late = { error: undefined as unknown }
    try {
      const out = await this.bounded(
        batch.map((b) => b.item),
        late,
      )
      batch.forEach((b, i) => b.resolve(out[i]!))
    } catch (error) {
      if (batch.length === 1 || isUnreachable(error) || late.error !== undefined) for (const b of batch) b.reject(error)
      else
        for (const b of batch) {
          // Past a deadline, the rest fail with it at once: the database did not answer one.
          if (late.error !== undefined) b.reject(late.error)
          else
            await this.bounded([b.item], late).then(
              ([out]) => b.resolve(out!),
              (alone) => b.reject(alone),
            )
        }
    } finally {
      this.inFlight--
      this.schedule()
    }
  }

  /** `write(items)`, failed with the deadline's error (kept in `late`) once it has taken longer. */
  private bounded(items: I[], late: { error: unknown }): Promise<O[]> {
    const deadline = this.options.deadline
    const controller = new AbortController()
    if (!deadline) return this.write(items, controller.signal)
    return new Promise<O[]>((resolve, reject) => {
      const timer = deadline.clock.setTimeout(() => {
        late.error = deadline.error()
        reject(late.error)
        controller.abort(late.error)
      }, deadline.ms)
      this.write(items, controller.signal)
        .then(resolve, reject)
        .finally(() => deadline.clock.clearTimeout(timer))
    })
  }
}
