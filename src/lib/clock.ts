// The clock: where every decision that depends on time asks the time, and where code waits for time
// to pass. In production it is the system's (Date, performance.now, timers), and SQL keeps the
// database's own now(): one clock for every instance, whatever their hosts' clocks say. A test clock
// stands still until the test moves it; SQL then takes the test's time too (River's
// `coalesce($now, now())`, see db/now.ts), timers fire in order as time passes, and a test waits for
// the code to reach its next sleep (an event), never for real time.
//
// Two kinds of waiting, because a test clock treats them differently:
// - `sleep`: the code is idle until then (a pace slot, a retry's backoff, a poll). TestClock.run
//   advances time to the next sleep as soon as the code reaches it.
// - `setTimeout`: a guard racing something else (an answer that may come first). Time passes a guard
//   only when the test advances past it.

export type Timer = { readonly clockTimer: number }

export interface Clock {
  /** The current time. */
  now(): Date
  /** Milliseconds on a monotonic scale, for durations and deadlines (never for timestamps). */
  monotonic(): number
  /** The time a statement takes as its now: null leaves it to the database's now() (production). */
  sqlNow(): Date | null
  /** Resolves after `ms` (at once for 0 or less), or when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>
  /** Calls `fn` after `ms`, unless cleared: a guard racing something else. */
  setTimeout(fn: () => void, ms: number): Timer
  clearTimeout(timer: Timer | undefined): void
  /** Calls `fn` every `ms` until cleared. */
  setInterval(fn: () => void, ms: number): Timer
  clearInterval(timer: Timer | undefined): void
  /** A signal that aborts after `ms` (AbortSignal.timeout on the clock's time). */
  timeoutSignal(ms: number): AbortSignal
}

/** The system's clock: what the service runs on. */
export function systemClock(): Clock {
  let next = 0
  const handles = new Map<number, ReturnType<typeof setTimeout>>()
  const keep = (handle: ReturnType<typeof setTimeout>): Timer => {
    const id = ++next
    handles.set(id, handle)
    return { clockTimer: id }
  }
  const drop = (timer: Timer | undefined, clear: (h: ReturnType<typeof setTimeout>) => void) => {
    if (!timer) return
    const handle = handles.get(timer.clockTimer)
    if (handle !== undefined) clear(handle)
    handles.delete(timer.clockTimer)
  }
  return {
    now: () => new Date(),
    monotonic: () => performance.now(),
    sqlNow: () => null,
    sleep(ms, signal) {
      if (signal?.aborted) return Promise.resolve()
      if (!signal) return Bun.sleep(Math.max(0, ms))
      return new Promise((resolve) => {
        const handle = setTimeout(done, Math.max(0, ms))
        function done() {
          clearTimeout(handle)
          signal!.removeEventListener('abort', done)
          resolve()
        }
        signal.addEventListener('abort', done, { once: true })
      })
    },
    setTimeout(fn, ms) {
      const timer = keep(
        setTimeout(
          () => {
            handles.delete(timer.clockTimer)
            fn()
          },
          Math.max(0, ms),
        ),
      )
      return timer
    },
    clearTimeout: (timer) => drop(timer, clearTimeout),
    setInterval: (fn, ms) => keep(setInterval(fn, Math.max(1, ms))),
    clearInterval: (timer) => drop(timer, clearInterval),
    timeoutSignal: (ms) => AbortSignal.timeout(Math.max(0, ms)),
  }
}

type Pending = { id: number; at: number; fn: () => void; every: number | null; sleep: boolean }

/**
 * A clock that moves only when the test moves it. `advance(ms)` fires every timer due on the way, in
 * order, letting what each one resumes run before the next fires; `run(promise)` lets the code under
 * test sleep as long as it wants, advancing to each sleep it reaches, until the promise settles.
 */
export class TestClock implements Clock {
  #now: number
  #monotonic = 0
  #next = 0
  readonly #pending = new Map<number, Pending>()
  #onSleep: (() => void)[] = []

  /** Starts at `start`, by default the real time now, whole seconds (so the months the database has partitions for exist). */
  constructor(start: Date | number = Math.floor(Date.now() / 1000) * 1000) {
    this.#now = typeof start === 'number' ? start : start.getTime()
  }

  now(): Date {
    return new Date(this.#now)
  }
  monotonic(): number {
    return this.#monotonic
  }
  sqlNow(): Date {
    return new Date(this.#now)
  }

  #add(fn: () => void, ms: number, every: number | null, sleep: boolean): Timer {
    const id = ++this.#next
    this.#pending.set(id, { id, at: this.#now + Math.max(0, ms), fn, every, sleep })
    if (sleep) {
      const waiting = this.#onSleep
      this.#onSleep = []
      for (const resolve of waiting) resolve()
    }
    return { clockTimer: id }
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = this.#add(() => done(), ms, null, true)
      const done = () => {
        this.#pending.delete(timer.clockTimer)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      signal?.addEventListener('abort', done, { once: true })
    })
  }
  setTimeout(fn: () => void, ms: number): Timer {
    return this.#add(fn, ms, null, false)
  }
  clearTimeout(timer: Timer | undefined): void {
    if (timer) this.#pending.delete(timer.clockTimer)
  }
  setInterval(fn: () => void, ms: number): Timer {
    return this.#add(fn, Math.max(1, ms), Math.max(1, ms), false)
  }
  clearInterval(timer: Timer | undefined): void {
    this.clearTimeout(timer)
  }
  timeoutSignal(ms: number): AbortSignal {
    const controller = new AbortController()
    this.setTimeout(() => controller.abort(new DOMException('The operation timed out.', 'TimeoutError')), ms)
    return controller.signal
  }

  /** How many sleeps are pending (guards and intervals not counted). */
  get sleeping(): number {
    let n = 0
    for (const p of this.#pending.values()) if (p.sleep) n++
    return n
  }

  /** Resolves when the code under test next goes to sleep (at once when one is pending already and `fresh` is false). */
  nextSleep(fresh = false): Promise<void> {
    if (!fresh && this.sleeping > 0) return Promise.resolve()
    return new Promise((resolve) => this.#onSleep.push(resolve))
  }

  /** Moves time forward by `ms`, firing every timer due on the way in order. */
  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.#now + ms)
  }

  /** Moves time forward to `at` (never back), firing every timer due on the way in order. */
  async advanceTo(at: Date | number): Promise<void> {
    const target = typeof at === 'number' ? at : at.getTime()
    for (;;) {
      const due = this.#earliest()
      if (!due || due.at > target) break
      this.#step(due.at)
      if (due.every !== null) due.at += due.every
      else this.#pending.delete(due.id)
      due.fn()
      await settle()
    }
    this.#step(Math.max(this.#now, target))
  }

  /**
   * Lets `promise` run to its end while the code sleeps as long as it wants: each time it sleeps, time
   * moves to that sleep's end. Guards and intervals due on the way fire too. Fails when more than
   * `limitMs` of clock time would pass. `idle`, when given, is awaited before each move: time stands
   * still while it says work is in flight (a request to a fake provider, whose answer takes no clock time).
   */
  async run<T>(promise: Promise<T>, limitMs = 24 * 3_600_000, idle?: () => Promise<void>): Promise<T> {
    let settled = false
    const done = promise.then(
      () => void (settled = true),
      () => void (settled = true),
    )
    const deadline = this.#now + limitMs
    while (!settled) {
      await Promise.race([done, this.nextSleep()])
      if (settled) break
      if (idle) {
        await idle()
        if (settled) break
      }
      const sleep = this.#earliest(true)
      if (!sleep) continue
      if (sleep.at > deadline) throw new Error(`TestClock.run: still waiting after ${limitMs} ms of clock time`)
      if (!idle) {
        await this.advanceTo(sleep.at)
        continue
      }
      // One due moment at a time, each one's work done before the next: a timer on the way (an answer's
      // deadline) and the sleep after it (a retry's wait) would otherwise race, as they never do in time.
      for (let due = this.#earliest(); due && due.at <= sleep.at && !settled; due = this.#earliest()) {
        await this.advanceTo(due.at)
        await idle()
      }
    }
    return promise
  }

  #step(to: number) {
    if (to > this.#now) {
      this.#monotonic += to - this.#now
      this.#now = to
    }
  }

  #earliest(sleepsOnly = false): Pending | undefined {
    let best: Pending | undefined
    for (const p of this.#pending.values()) {
      if (sleepsOnly && !p.sleep) continue
      if (!best || p.at < best.at || (p.at === best.at && p.id < best.id)) best = p
    }
    return best
  }
}

/** Lets what a fired timer resumed run on (its promise continuations, then one turn of the event loop). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))
