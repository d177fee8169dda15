// Work in flight, for a test clock: TestClock.run's `idle` waits until none is, so the clock stands
// still while a hand-off talks to the database or a fake provider (that takes no clock time, as on a
// fast machine), and moves only when every piece of the code under test waits on the clock. Without it
// a statement between a pace slot and its request would let the clock run ahead through other slots,
// bunching requests a fast machine would have spaced.

import type { Provider } from '../../src/providers/provider'
import type { Sql } from '../../src/db/client'

export type InFlight = {
  /** Counts every send of `provider` (its object, wrapped in place) while it runs. */
  track(provider: Provider): void
  /** `sql`, counting every statement (and transaction) while it runs. */
  sql(sql: Sql): Sql
  /** Runs `work`, counted while it runs (a test's own step that time must not pass). */
  run<T>(work: () => PromiseLike<T>): Promise<T>
  /** Resolves once nothing tracked is running. */
  idle(): Promise<void>
}

export function inFlight(): InFlight {
  let running = 0
  let waiting: (() => void)[] = []
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve))
  function counted<T>(work: () => PromiseLike<T>): Promise<T> {
    running++
    return Promise.resolve()
      .then(work)
      .finally(() => {
        running--
        if (running === 0) {
          const woken = waiting
          waiting = []
          for (const resolve of woken) resolve()
        }
      })
  }
  // A statement is a thenable run when first awaited: its `then` counts it. Used as a fragment of
  // another statement, it is never awaited, and never counted.
  const statement = (query: object) =>
    new Proxy(query, {
      get(target, key, receiver) {
        if (key !== 'then') return Reflect.get(target, key, receiver)
        const then = Reflect.get(target, key, target) as PromiseLike<unknown>['then']
        return (ok?: (v: unknown) => unknown, fail?: (e: unknown) => unknown) =>
          counted(() => new Promise((resolve, reject) => then.call(target, resolve, reject))).then(ok, fail)
      },
    })
  return {
    track(provider) {
      const send = provider.send.bind(provider)
      provider.send = (message) => counted(() => send(message))
    },
    sql(sql) {
      return new Proxy(sql, {
        apply(target, self, args) {
          const query = Reflect.apply(target, self, args)
          return query && typeof query === 'object' && 'then' in query ? statement(query) : query
        },
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver)
          if (key === 'begin' && typeof value === 'function')
            return (...args: unknown[]) => counted(() => (value as (...a: unknown[]) => PromiseLike<unknown>).apply(target, args))
          return value
        },
      }) as Sql
    },
    run: counted,
    async idle() {
      // What a finished piece resumes runs first (one turn), then anything still running is waited for.
      await settle()
      while (running > 0) {
        await new Promise<void>((resolve) => waiting.push(resolve))
        await settle()
      }
    },
  }
}
