// Bounded concurrency, shared by everything that talks to the provider (its pace: modules/senders/pace.ts).

export class Semaphore {
  private waiting: (() => void)[] = []
  private active = 0
  constructor(private readonly limit: number) {}

  /** Tasks running or waiting for a slot. */
  get load(): number {
    return this.active + this.waiting.length
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve))
    else this.active++
    try {
      return await task()
    } finally {
      const next = this.waiting.shift()
      if (next) next()
      else this.active--
    }
  }
}
