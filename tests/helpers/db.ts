// A fresh database for one test file: a new PostgreSQL database when DATABASE_URL is set (dropped
// afterwards), otherwise an in-memory embedded PGlite. Both migrated, never mocked.

import postgres from 'postgres'
import { openDatabase, type Database } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'

export type TestDatabase = Database & { url: string | undefined; drop(): Promise<void> }

export const usingPostgres = () => Boolean(process.env.DATABASE_URL)

/** A new empty database on the server of DATABASE_URL; returns its URL. */
export async function createPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const base = process.env.DATABASE_URL!
  const name = `test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  const admin = postgres(base, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  await admin.end()
  const url = new URL(base)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const again = postgres(base, { max: 1, onnotice: () => {} })
      await again.unsafe(`drop database if exists ${name} with (force)`)
      await again.end()
    },
  }
}

// A fresh embedded database takes seconds (initdb, then the migrations); a snapshot of the first one,
// migrated, starts every later one of this test process in a fraction of that.
let migratedSeed: Promise<Blob> | undefined
function embeddedSeed(): Promise<Blob> {
  migratedSeed ??= (async () => {
    const db = await openDatabase({})
    await migrate(db.sql)
    const blob = await db.snapshot!()
    await db.close()
    return blob
  })()
  return migratedSeed
}

export async function testDatabase(options: { migrated?: boolean; poolMax?: number } = {}): Promise<TestDatabase> {
  let url: string | undefined
  let dropDatabase = async () => {}
  if (usingPostgres()) {
    const created = await createPostgresDatabase()
    url = created.url
    dropDatabase = created.drop
  }
  const migrated = options.migrated !== false
  const seed = !url && migrated ? await embeddedSeed() : undefined
  const db = await openDatabase({ databaseUrl: url, poolMax: options.poolMax ?? 20, seed })
  if (migrated) await migrate(db.sql)
  let closed = false
  return {
    ...db,
    url,
    async close() {
      if (closed) return
      closed = true
      await db.close()
    },
    async drop() {
      if (!closed) {
        closed = true
        await db.close()
      }
      await dropDatabase()
    },
  }
}
