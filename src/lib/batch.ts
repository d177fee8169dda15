// Group commit: items that arrive while writes are in flight go together into the next write, so
// under load many requests share one statement (and one commit) while a lone request waits for
// nobody. Up to `parallel` writes run at once, so a batch never waits long behind another. Every
// caller's promise settles when the write carrying its item has finished.

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
      batch.forEach((b) => b.reject(error))
    } finally {
      this.inFlight--
      this.schedule()
    }
  }
}
