// Outer ring (real time): a real PgBouncer, with its round trips counted by a TCP proxy.
// Behind PgBouncer the service's client sends statements unnamed (prepare: false). postgres.js asks
// for the parameter types of such a statement first (Parse/Describe/Flush, one round trip), then binds
// and runs it (Bind/Execute/Sync, another). The client's sockets (src/db/wire.ts) keep the types it learned
// per connection, so the next use of the statement goes in one round trip. Counted here on the wire:
// a loopback proxy between the client and a real PgBouncer counts the frontend's Flush and Sync
// messages, each of which waits for an answer. With the values the service sends and reads (bigint
// as numbers, arrays, json, timestamps), and statements that fail leaving the next use right.
//
// PostgreSQL mode only (DATABASE_URL), with /usr/sbin/pgbouncer (required in CI, as in pgbouncer.outer.test.ts).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createPostgresDatabase, usingPostgres } from '../helpers/db'
import { havePgbouncer, startPgbouncer, type Bouncer } from '../helpers/pgbouncer'
import { startCountingProxy, type CountingProxy } from '../helpers/pg-proxy'
import { openDatabase, type Database } from '../../src/db/client'

const skip = !usingPostgres() || (!havePgbouncer() && !process.env.CI)

/** How many round trips `fn` took through `proxy`, and its value. */
async function counted<T>(proxy: CountingProxy, fn: () => Promise<T>): Promise<{ value: T; trips: number }> {
  const before = proxy.roundTrips()
  const value = await fn()
  return { value, trips: proxy.roundTrips() - before }
}

describe.skipIf(skip)('unnamed statements through PgBouncer', () => {
  let db: { url: string; drop(): Promise<void> }
  let bouncer: Bouncer
  let proxy: CountingProxy
  let service: Database

  beforeAll(async () => {
    db = await createPostgresDatabase()
    const direct = postgres(db.url, { max: 1, onnotice: () => {} })
    await direct`create table items (id bigint primary key, tags text[] not null, doc jsonb not null, at timestamptz not null)`
    await direct.end()
    bouncer = await startPgbouncer(db.url, { poolSize: 2 })
    const url = new URL(bouncer.url)
    proxy = await startCountingProxy({ host: url.hostname, port: Number(url.port) })
    url.port = String(proxy.port)
    // The service's own client behind PgBouncer, on one connection so every statement meets its cache.
    service = await openDatabase({ databaseUrl: url.toString(), pooler: 'pgbouncer', poolMax: 1 })
    await service.sql`select 1` // connected (and the array types fetched) before anything is counted
  }, 30_000)

  afterAll(async () => {
    await service?.close()
    proxy?.close()
    await bouncer?.stop()
    await db?.drop()
  })

  const at = new Date('2026-11-25T12:34:56.789Z')
  const insert = (id: number, tags: string[], doc: object) =>
    service.sql`insert into items (id, tags, doc, at) values (${id}, ${tags}::text[], ${JSON.stringify(doc)}::text::jsonb, ${at})
                returning id, tags, doc, at`
  const select = (ids: number[]) =>
    service.sql<{ id: number; tags: string[]; doc: unknown; at: Date }[]>`
      select id, tags, doc, at from items where id = any(${ids}::bigint[]) and at <= ${at} order by id`

  test("a statement's second use goes in one round trip, with the same values", async () => {
    const first = await counted(proxy, () => insert(1, ['a', 'b,c'], { n: 1 }))
    const second = await counted(proxy, () => insert(2, [], { n: [2] }))
    expect([first.trips, second.trips]).toEqual([2, 1])
    expect([...second.value]).toEqual([{ id: 2, tags: [], doc: { n: [2] }, at }])

    const read = await counted(proxy, () => select([1, 2]))
    const again = await counted(proxy, () => select([2]))
    expect([read.trips, again.trips]).toEqual([2, 1])
    expect([...read.value]).toEqual([
      { id: 1, tags: ['a', 'b,c'], doc: { n: 1 }, at },
      { id: 2, tags: [], doc: { n: [2] }, at },
    ])
    expect([...again.value]).toEqual([{ id: 2, tags: [], doc: { n: [2] }, at }])
    expect(typeof again.value[0]!.id).toBe('number') // bigint as a number (TYPES in src/db/client.ts)
    // sql.unsafe with parameters, as the list endpoints send their statements.
    const text = 'select count(*) as n from items where id > $1'
    const unsafe = [await counted(proxy, () => service.sql.unsafe(text, [0])), await counted(proxy, () => service.sql.unsafe(text, [1]))]
    expect(unsafe.map((x) => x.trips)).toEqual([2, 1])
    expect(unsafe.map((x) => x.value[0]!.n)).toEqual([2, 1])
  })

  test('a statement that fails leaves the next use right', async () => {
    // Parse fails (no such table yet): nothing is kept; once the table exists the statement runs.
    const missing = (id: number) => service.sql`select id from later where id = ${id}`
    await expect(missing(1)).rejects.toMatchObject({ code: '42P01' })
    await service.sql`create table later (id int)`
    await service.sql`insert into later values (${5})`
    const found = [await counted(proxy, () => missing(5)), await counted(proxy, () => missing(6))]
    expect(found.map((x) => x.trips)).toEqual([2, 1])
    expect(found.map((x) => [...x.value])).toEqual([[{ id: 5 }], []])
    // Fails when run with the types kept (a duplicate key): the types are asked for again, then kept.
    await expect(insert(1, [], {})).rejects.toMatchObject({ code: '23505' })
    const after = [await counted(proxy, () => insert(3, ['x'], {})), await counted(proxy, () => insert(4, ['y'], {}))]
    expect(after.map((x) => x.trips)).toEqual([2, 1])
    expect(after.map((x) => x.value[0]!.tags)).toEqual([['x'], ['y']])
    // Values of another JavaScript type for one statement (a Date where a string was): its own entry.
    const since = (x: string | Date) => service.sql<{ n: number }[]>`select count(*)::int as n from items where at >= ${x}`
    expect((await since('2026-01-01T00:00:00Z'))[0]!.n).toBe(4)
    expect((await since(at))[0]!.n).toBe(4)
    expect((await since('2027-01-01T00:00:00Z'))[0]!.n).toBe(0)
  })
})
