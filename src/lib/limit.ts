// Bounded concurrency and an optional per-second cap, shared by everything that talks to the provider.

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

/** Spaces calls evenly so no more than `perSecond` start in any second; 0 means no cap. */
export class RateLimiter {
  private nextSlot = 0
  constructor(private readonly perSecond: number) {}

  async take(): Promise<void> {
    if (this.perSecond <= 0) return
    const now = Date.now()
    const slot = Math.max(now, this.nextSlot)
    this.nextSlot = slot + 1000 / this.perSecond
    if (slot > now) await Bun.sleep(slot - now)
  }
}
