// Group commit: items that arrive while writes are in flight go together into the next write, so
// under load many requests share one statement (and one commit) while a lone request waits for
// nobody. Up to `parallel` writes run at once. Every caller's promise settles when the write
// carrying its item has finished. A failed write of several items is retried item by item, so one
// item the database rejects fails alone (the writes given to a Batcher must be safe to repeat:
// atomic, or guarded so that a second run changes nothing). A write that found no connection fails
// them all at once: alone, each would wait for one again (CONNECT_WAIT_SECONDS), one after another.

import { isUnreachable } from './no-connection'

export class Batcher<I, O> {
  private queued: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = []
  private inFlight = 0
  private scheduled = false

  constructor(
    private readonly write: (items: I[]) => Promise<O[]>,
    private readonly options: { maxBatch?: number; parallel?: number } = {},
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
    try {
      const out = await this.write(batch.map((b) => b.item))
      batch.forEach((b, i) => b.resolve(out[i]!))
    } catch (error) {
      if (batch.length === 1 || isUnreachable(error)) for (const b of batch) b.reject(error)
      else
        for (const b of batch) {
          await this.write([b.item]).then(
            ([out]) => b.resolve(out!),
            (alone) => b.reject(alone),
          )
        }
    } finally {
      this.inFlight--
      this.schedule()
    }
  }
}
