// Outer ring (real time): the service's client through a real PgBouncer, with instances installing at once.
// Statements kept as functions behind PgBouncer (src/db/statement-functions.ts, sql/0029): the service's
// own client through a real PgBouncer in transaction mode (2 server sessions), against PostgreSQL. A
// statement that recurs becomes a function and its later runs call it, with the same answers, errors and
// transaction; statements that cannot be one stay plain; instances installing at once make one function;
// a function dropped under a running service is replaced by the plain statement (outside a
// transaction at once; inside one after that one call has failed).
//
// PostgreSQL mode only (DATABASE_URL). Without /usr/sbin/pgbouncer it is skipped, except in CI.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { openDatabase, type Database } from '../../src/db/client'
import { GENERIC_PLAN, RECUR_AFTER } from '../../src/db/statement-functions'
import { createMigratedPostgresDatabase, usingPostgres } from '../helpers/db'
import { havePgbouncer, startPgbouncer, type Bouncer } from '../helpers/pgbouncer'
import { until } from '../helpers/wait'

const skip = !usingPostgres() || (!havePgbouncer() && !process.env.CI)
if (usingPostgres() && !havePgbouncer() && !process.env.CI)
  console.warn('tests/db/statement-functions.outer.test.ts skipped: /usr/sbin/pgbouncer is missing (apt-get install pgbouncer)')

describe.skipIf(skip)('statements kept as functions behind PgBouncer', () => {
  let database: { url: string; drop(): Promise<void> }
  let bouncer: Bouncer
  let direct: postgres.Sql
  const opened: Database[] = []
  const pooled = async (after?: number) => {
    const db = await openDatabase({ databaseUrl: bouncer.url, pooler: 'pgbouncer', poolMax: 2, statementFunctionsAfter: after })
    opened.push(db)
    return db
  }
  const functions = async () => [
    ...(await direct<{ name: string; body: string }[]>`
      select proname as name, prosrc as body from pg_proc where proname like 'stmt\\_%' order by proname`),
  ]

  beforeAll(async () => {
    database = await createMigratedPostgresDatabase()
    bouncer = await startPgbouncer(database.url, { poolSize: 2 })
    direct = postgres(database.url, { max: 2, onnotice: () => {} })
    await direct`create table items (id bigint generated always as identity primary key, name text not null unique, size int)`
  }, 60_000)
  afterAll(async () => {
    for (const db of opened) await db.close()
    await direct?.end()
    await bouncer?.stop()
    await database?.drop()
  }, 60_000)

  test('a statement that succeeded often enough becomes a function; its later runs call it and answer the same', async () => {
    const db = await pooled()
    const insert = (names: string[], size: number) =>
      db.sql<{ id: number; name: string; size: number | null; big: boolean }[]>`
        with added as (
          insert into items (name, size) select n, ${size}::int from unnest(${names}::text[]) as n returning id, name, size
        )
        select id, name, size, size > 10 as big from added order by id`
    const answers = []
    for (let i = 0; i < RECUR_AFTER; i++) answers.push(await insert([`a${i}`, `b${i}`], i))
    await until(functions, (f) => f.length === 1, 10_000, 'the function to be installed')
    const [installed] = await functions()
    // Its body is the statement itself.
    expect(installed!.body).toContain('insert into items (name, size) select n, $1::int from unnest($2::text[])')
    // The later runs answer as the plain statement did: the same columns, types and rows.
    const later = await insert(['c', 'd'], 12)
    expect(later.map((r) => ({ ...r, id: typeof r.id }))).toEqual([
      { id: 'number', name: 'c', size: 12, big: true },
      { id: 'number', name: 'd', size: 12, big: true },
    ])
    expect(later.columns.map((c) => c.name)).toEqual(answers[0]!.columns.map((c) => c.name))
    expect(later.columns.map((c) => c.type)).toEqual(answers[0]!.columns.map((c) => c.type))

    // The call is what runs: the function changed behind the client's back answers instead.
    await direct.unsafe(
      `create or replace function ${installed!.name}(integer, text[]) returns setof record language plpgsql as
       'begin return query select -1::bigint, ''from the function''::text, $1, true; end'`,
    )
    expect([...(await insert(['e'], 1))]).toEqual([{ id: -1, name: 'from the function', size: 1, big: true }])
    await direct.unsafe(`drop function ${installed!.name}(integer, text[])`)
  })

  test('a statement marked GENERIC_PLAN gets a function that always runs its generic plan; the others the server’s choice', async () => {
    const db = await pooled(1)
    const sizes = (names: string[], marked: boolean) =>
      marked
        ? db.sql<{ name: string; size: number }[]>`
            /* generic plan */ select i.name, i.size from items i join unnest(${names}::text[]) as n(name) on n.name = i.name order by i.name`
        : db.sql<{ name: string; size: number }[]>`
            select i.name, i.size from items i join unnest(${names}::text[]) as n(name) on n.name = i.name order by i.name`
    const settings = async () =>
      (
        await direct<{ body: string; config: string[] | null }[]>`
          select prosrc as body, proconfig as config from pg_proc where proname like 'stmt\\_%' and prosrc like '%join unnest%'`
      ).map((f) => ({ marked: f.body.includes(GENERIC_PLAN), config: f.config }))
    await sizes(['a1'], true)
    await sizes(['a1'], false)
    await until(settings, (f) => f.length === 2, 10_000, 'both functions')
    expect((await settings()).sort((a, b) => Number(b.marked) - Number(a.marked))).toEqual([
      { marked: true, config: ['plan_cache_mode=force_generic_plan'] },
      { marked: false, config: null },
    ])
    // Called, they answer as the statement did.
    expect([...(await sizes(['a1', 'a2', 'none'], true))]).toEqual([
      { name: 'a1', size: 1 },
      { name: 'a2', size: 2 },
    ])
    expect([...(await sizes(['a2'], false))]).toEqual([{ name: 'a2', size: 2 }])
  })

  test('a failure inside it is the statement’s own (code, constraint), and it is part of its transaction', async () => {
    const db = await pooled(1)
    const add = (tx: postgres.Sql | postgres.TransactionSql, name: string) =>
      tx<{ id: number }[]>`insert into items (name, size) values (${name}, 1) returning id`
    await add(db.sql, 'unique-1')
    await until(functions, (f) => f.some((x) => x.body.includes('values ($1, 1) returning id')), 10_000, 'the function')
    const error = await add(db.sql, 'unique-1').catch((e) => e)
    expect(error).toBeInstanceOf(postgres.PostgresError)
    expect(error.code).toBe('23505')
    expect(error.constraint_name).toBe('items_name_key')
    // Rolled back with its transaction.
    await db.sql
      .begin(async (tx) => {
        await add(tx, 'rolled-back')
        throw new Error('roll back')
      })
      .catch(() => {})
    expect((await direct`select count(*)::int as n from items where name = 'rolled-back'`)[0]!.n).toBe(0)
    // Still a function, not dropped back to plain by a data error.
    await add(db.sql, 'unique-2')
    expect((await direct`select count(*)::int as n from items where name = 'unique-2'`)[0]!.n).toBe(1)
  })

  test('statements that answer no rows, or a void column, stay plain', async () => {
    const db = await pooled(1)
    const before = (await functions()).length
    for (let i = 0; i < 3; i++) {
      await db.sql`update items set size = size + ${1} where name = ${'c'}`
      await db.sql.begin((tx) => tx`select pg_advisory_xact_lock(${42})`)
    }
    await Bun.sleep(500)
    expect((await functions()).length).toBe(before)
    expect((await direct`select size from items where name = 'c'`)[0]!.size).toBe(15)
  })

  test('two instances installing the same statement at once make one function, with no error', async () => {
    const [one, two] = [await pooled(1), await pooled(1)]
    const count = (db: Database) => db.sql<{ n: number }[]>`select count(*)::int as n from items where size >= ${0} and name <> ${'x'}`
    const before = (await functions()).length
    await Promise.all([count(one), count(two), count(one), count(two)])
    await until(functions, (f) => f.length === before + 1, 10_000, 'the function')
    const answers = await Promise.all([count(one), count(two)])
    expect(answers[0]![0]!.n).toBe(answers[1]![0]!.n)
    expect((await functions()).length).toBe(before + 1)
  })

  test('a function dropped under a running client: outside a transaction the plain statement answers at once; inside, one call fails', async () => {
    const db = await pooled(1)
    const marker = (body: string) => async () => (await functions()).find((f) => f.body.includes(body))
    const read = () => db.sql<{ name: string }[]>`select name from items where name = ${'d'} and size > ${-1}`
    await read()
    const first = (await until(marker('where name = $1 and size > $2'), Boolean, 10_000, 'the function'))!
    await direct.unsafe(`drop function ${first.name}(text, integer)`)
    expect([...(await read())]).toEqual([{ name: 'd' }])
    expect([...(await read())]).toEqual([{ name: 'd' }])

    // In a transaction the failed call has aborted it: the caller gets the error, and the next run is plain.
    const inTx = () => db.sql.begin((tx) => tx<{ name: string }[]>`select name from items where name = ${'c'} and size < ${1000}`)
    await inTx()
    const second = (await until(marker('where name = $1 and size < $2'), Boolean, 10_000, 'the function'))!
    await direct.unsafe(`drop function ${second.name}(text, integer)`)
    expect((await inTx().catch((e) => e)).code).toBe('42883') // undefined_function
    expect([...(await inTx())]).toEqual([{ name: 'c' }])
  })

  test('a column read from a view of a domain type (information_schema) is declared with the domain', async () => {
    const db = await pooled(1)
    const tables = () => db.sql<{ name: string }[]>`select table_name as name from information_schema.tables where table_name = ${'items'}`
    expect([...(await tables())]).toEqual([{ name: 'items' }])
    await until(functions, (f) => f.some((x) => x.body.includes('information_schema.tables')), 10_000, 'the function')
    expect([...(await tables())]).toEqual([{ name: 'items' }])
    expect([...(await tables())]).toEqual([{ name: 'items' }])
  })
})
