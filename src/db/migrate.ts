// Forward-only migrations: numbered .sql files embedded in the build, applied in order at start.
// Each runs in its own transaction holding a transaction-scoped advisory lock, so several instances
// starting together apply each migration exactly once. An applied migration whose text changed stops the start.

import type { Sql } from './client'
import { MIGRATIONS, type Migration } from './migrations'
import { sha256Hex } from '../lib/keys'
import { ensurePartitions, partitionEmptyTables } from './partitions'

const MIGRATION_LOCK = 7_240_001

export class MigrationError extends Error {}

export async function migrate(
  sql: Sql,
  migrations: Migration[] = MIGRATIONS,
  /** `now`: the moment a fresh install's partitions start from (tests back-date it). */
  options: { now?: Date } = {},
): Promise<{ applied: string[] }> {
  // Under the lock too: two instances running `create table if not exists` at once can both find no
  // table, and the loser fails (a duplicate type or key) instead of waiting.
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`
    await tx`
      create table if not exists schema_migrations (
        version integer primary key,
        name text not null,
        checksum text not null,
        applied_at timestamptz not null default now()
      )`
  })
  const applied: string[] = []
  for (const migration of migrations) {
    const checksum = sha256Hex(migration.text)
    const ran = await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`
      const [row] = await tx<{ checksum: string }[]>`select checksum from schema_migrations where version = ${migration.version}`
      if (row) {
        if (row.checksum !== checksum) {
          throw new MigrationError(
            `migration ${migration.name} was edited after it was applied (checksum differs); add a new migration instead`,
          )
        }
        return false
      }
      await tx.unsafe(migration.text)
      await tx`insert into schema_migrations (version, name, checksum) values (${migration.version}, ${migration.name}, ${checksum})`
      return true
    })
    if (ran) applied.push(migration.name)
  }
  // A fresh install's history tables are empty: partitioned at once (db/partitions.ts), and the months
  // ahead checked on every start. (Migrations sliced before 0027, as tests build old installs, skip it.)
  if (migrations.some((m) => m.name === '0027_partitioned_history.sql')) {
    await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`
      await partitionEmptyTables(tx, options.now)
    })
    await ensurePartitions(sql, options.now)
  }
  return { applied }
}

export async function migrationsApplied(sql: Sql, migrations: Migration[] = MIGRATIONS): Promise<boolean> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from schema_migrations`
  return (row?.n ?? 0) >= migrations.length
}
