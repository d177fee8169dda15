// Outer ring (real time): a child process waits through a real outage proxy for its PostgreSQL.
// A service started while its PostgreSQL cannot be reached (an outage, or a database that comes up
// after it) waits for it, up to 30 s, instead of exiting; then it serves. PostgreSQL only: the
// embedded database is the process's own.

import { afterAll, expect, test } from 'bun:test'
import { createPostgresDatabase, usingPostgres } from '../helpers/db'
import { startOutageProxy } from '../helpers/pg-proxy'
import { startChild, type Child } from '../helpers/child'

const cleanups: (() => Promise<unknown> | unknown)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
}, 30_000)

// Turned away with an error (as by a database that is not there), with a clean close (as by some TCP
// proxies without a server) or with 57P03 (a database starting up): either way the service says that it waits.
for (const refuseWith of ['reset', 'close', 'starting'] as const)
  test.skipIf(!usingPostgres())(
    `a start during a database outage waits for the database, then serves (connections refused with a ${refuseWith})`,
    async () => {
      const db = await createPostgresDatabase()
      cleanups.push(db.drop)
      const target = new URL(db.url)
      const proxy = await startOutageProxy({ host: target.hostname, port: Number(target.port || 5432) }, refuseWith)
      cleanups.push(() => proxy.close())
      const through = new URL(db.url)
      through.hostname = '127.0.0.1'
      through.port = String(proxy.port)

      // Down until the service has been turned away twice (it tried, waited, tried again), then up. A
      // fixed 3 s outage was over before a slow machine's service first tried to connect.
      const outage = proxy.outageUntil(() => proxy.refused() >= 2, 25_000)
      const child: Child = await startChild({ DATABASE_URL: through.toString() }, { readyMs: 45_000 })
      cleanups.push(() => child.stop())
      await outage
      expect(proxy.refused()).toBeGreaterThanOrEqual(2)
      expect(child.output()).toContain('database unreachable; waiting for it')
      expect(child.output()).not.toContain('cannot start')
      const ready = await fetch(`${child.url}/readyz`)
      expect(ready.status).toBe(200)
    },
    90_000,
  )

// A database away for longer than the start waits (about 30 s): the start gives up with `cannot start`
// and exit code 1, for a supervisor to start it again, also when connections are closed cleanly (on
// which postgres.js, unpatched, tried again for ever and the start never ended). Both kinds at once.
test.skipIf(!usingPostgres())(
  'a start during a long outage gives up after about 30 s: cannot start, exit code 1 (connections refused with a reset and with a close)',
  async () => {
    const db = await createPostgresDatabase()
    cleanups.push(db.drop)
    const target = new URL(db.url)
    const gaveUp = await Promise.all(
      (['reset', 'close'] as const).map(async (refuseWith) => {
        const proxy = await startOutageProxy({ host: target.hostname, port: Number(target.port || 5432) }, refuseWith)
        cleanups.push(() => proxy.close())
        void proxy.outage(80_000)
        const through = new URL(db.url)
        through.hostname = '127.0.0.1'
        through.port = String(proxy.port)
        const started = Date.now()
        const failure = await startChild({ DATABASE_URL: through.toString() }, { readyMs: 75_000 }).then(
          () => 'it served',
          (error: Error) => error.message,
        )
        return { refuseWith, failure, seconds: (Date.now() - started) / 1000, refused: proxy.refused() }
      }),
    )
    for (const { failure, seconds, refused } of gaveUp) {
      expect(failure).toStartWith('service exited with 1: ')
      expect(failure).toContain('database unreachable; waiting for it')
      expect(failure).toContain('cannot start')
      expect(seconds).toBeGreaterThanOrEqual(29)
      expect(seconds).toBeLessThan(60)
      expect(refused).toBeGreaterThan(10)
    }
  },
  90_000,
)
