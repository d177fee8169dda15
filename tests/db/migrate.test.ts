import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testDatabase, type TestDatabase } from '../helpers/db'
import { migrate, MigrationError } from '../../src/db/migrate'
import { MIGRATIONS } from '../../src/db/migrations'

let db: TestDatabase
beforeAll(async () => {
  db = await testDatabase({ migrated: false })
})
afterAll(() => db.drop())

test('applies every migration once, in order, with checksums; concurrent starts do not double-apply', async () => {
  const results = await Promise.all([migrate(db.sql), migrate(db.sql), migrate(db.sql)])
  // Each migration was applied by exactly one of the three callers...
  const applied = results.flatMap((r) => r.applied)
  expect(applied.sort()).toEqual(MIGRATIONS.map((m) => m.name).sort())
  // ...and they were applied in version order (each in its own, later transaction).
  const rows = await db.sql<
    { version: number; checksum: string }[]
  >`select version, checksum from schema_migrations order by applied_at, version`
  expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version))
  expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.checksum))).toBe(true)
  expect((await migrate(db.sql)).applied).toEqual([])
})

test('an applied migration that was edited stops the start with a clear message', async () => {
  const edited = MIGRATIONS.map((m, i) => (i === 0 ? { ...m, text: `${m.text}\n-- edited` } : m))
  const error = await migrate(db.sql, edited).catch((e) => e)
  expect(error).toBeInstanceOf(MigrationError)
  expect(error.message).toContain(MIGRATIONS[0]!.name)
  expect(error.message).toContain('edited')
})

test('the schema keeps its invariants: balance never negative, ledger append-only', async () => {
  const [a] = await db.sql`insert into accounts (name, balance) values ('x', 5) returning id`
  expect(await db.sql`update accounts set balance = -1 where id = ${a!.id}`.catch((e) => e.message)).toContain(
    'accounts_balance_not_negative',
  )
  await db.sql`insert into ledger (account_id, kind, amount, balance_after) values (${a!.id}, 'topup', 5, 5)`
  expect(await db.sql`update ledger set amount = 6`.catch((e) => e.message)).toContain('append-only')
  expect(await db.sql`delete from ledger`.catch((e) => e.message)).toContain('append-only')
})
