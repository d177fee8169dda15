// A fresh database for one test file: a new PostgreSQL database when DATABASE_URL is set (dropped
// afterwards), otherwise an in-memory embedded PGlite. Both migrated, never mocked.

import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { openDatabase, type Database } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'

export type TestDatabase = Database & { url: string | undefined; drop(): Promise<void> }

export const usingPostgres = () => Boolean(process.env.DATABASE_URL)

const databaseUrl = (name: string) => {
  const url = new URL(process.env.DATABASE_URL!)
  url.pathname = `/${name}`
  return url.toString()
}

/**
 * A new database on the server of DATABASE_URL (empty, or a copy of `template`); returns its URL.
 * Services started on it (a child process, startService) migrate it themselves.
 */
export async function createPostgresDatabase(template?: string): Promise<{ url: string; drop(): Promise<void> }> {
  const base = process.env.DATABASE_URL!
  const name = `test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  const admin = postgres(base, { max: 1, onnotice: () => {} })
  await admin.unsafe(template ? `create database ${name} template ${template}` : `create database ${name}`)
  await admin.end()
  return {
    url: databaseUrl(name),
    async drop() {
      const again = postgres(base, { max: 1, onnotice: () => {} })
      await again.unsafe(`drop database if exists ${name} with (force)`)
      await again.end()
    },
  }
}

// Migrating a fresh PostgreSQL database takes about a second; a copy of a migrated one (`create
// database ... template`) a fraction of that. One template per test process, named by its pid: the
// first process to make one after it ended drops it (and .ci/run drops those left at the end).
const TEMPLATE_PREFIX = 'test_template_'
let migratedTemplate: Promise<string> | undefined
function postgresTemplate(): Promise<string> {
  migratedTemplate ??= (async () => {
    const admin = postgres(process.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
    try {
      const left = await admin<{ datname: string }[]>`select datname from pg_database where datname like ${TEMPLATE_PREFIX + '%'}`
      for (const { datname } of left) {
        const pid = Number(datname.slice(TEMPLATE_PREFIX.length).split('_')[0])
        if (pid !== process.pid && !alive(pid)) await admin.unsafe(`drop database if exists ${datname} with (force)`).catch(() => {})
      }
      const name = `${TEMPLATE_PREFIX}${process.pid}_${Math.random().toString(36).slice(2, 8)}`
      await admin.unsafe(`create database ${name}`)
      const db = await openDatabase({ databaseUrl: databaseUrl(name), poolMax: 1 })
      await migrate(db.sql)
      // A template must have no session while it is copied.
      await db.close()
      return name
    } finally {
      await admin.end()
    }
  })()
  return migratedTemplate
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

// A fresh embedded database takes seconds (initdb, then the migrations); a snapshot of the first one,
// migrated, starts every later one of this test process in a fraction of that.
//
// Most of what is left of a start is PGlite setting up its shared buffers: 128 MB by default (the
// service's own), though a test database holds a few MB. The snapshot's postgresql.auto.conf asks for
// TEST_SHARED_BUFFERS instead, which starts each test database in about half the CPU time (measured:
// 2.2 s to 1.3 s a start); a query reads the same rows either way, from memory. (embeddedFiles puts the
// default back for the services that tests start on a copy.)
const TEST_SHARED_BUFFERS = '4MB'
let migratedSeed: Promise<Blob> | undefined
function embeddedSeed(): Promise<Blob> {
  migratedSeed ??= (async () => {
    const db = await openDatabase({})
    await migrate(db.sql)
    await db.sql.unsafe(`alter system set shared_buffers = '${TEST_SHARED_BUFFERS}'`)
    const blob = await db.snapshot!()
    await db.close()
    return blob
  })()
  return migratedSeed
}

// A service on a fresh DATA_DIR (a child process, startService) would initialise and migrate its
// embedded database first: seconds. A copy of the files of a migrated one, made once per test process
// from the snapshot above, opens at once.
let migratedFiles: Promise<string> | undefined
function embeddedFiles(): Promise<string> {
  migratedFiles ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'test-migrated-data-'))
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
    const db = await openDatabase({ dataDir: dir, seed: await embeddedSeed() })
    await migrate(db.sql)
    // A service runs on what it would have on its own DATA_DIR: PostgreSQL's shared buffers.
    await db.sql`alter system reset shared_buffers`
    await db.close()
    return join(dir, 'pgdata')
  })()
  return migratedFiles
}

/**
 * A new temporary DATA_DIR for a service whose test is not about its first start: on the embedded
 * database it holds a migrated database already. `cleanup` gets its removal.
 */
export async function migratedDataDir(prefix: string, cleanup: (fn: () => void) => void): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  cleanup(() => rmSync(dir, { recursive: true, force: true }))
  await premigrate(dir)
  return dir
}

/**
 * Puts a migrated embedded database into `dataDir` (made if missing) for a service started on it, so
 * that a test not about a first start skips initdb and the migrations (seconds each start). Nothing on
 * PostgreSQL, where the service uses DATABASE_URL.
 */
export async function premigrate(dataDir: string): Promise<void> {
  if (!usingPostgres()) cpSync(await embeddedFiles(), join(dataDir, 'pgdata'), { recursive: true })
}

/** A new PostgreSQL database, migrated already (a copy of this process's template). */
export async function createMigratedPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  return createPostgresDatabase(await postgresTemplate())
}

export async function testDatabase(
  options: {
    migrated?: boolean
    poolMax?: number
    /** PostgreSQL: settings of the new database (`alter database ... set`), which every session takes. */
    settings?: Record<string, string>
  } = {},
): Promise<TestDatabase> {
  let url: string | undefined
  let dropDatabase = async () => {}
  const migrated = options.migrated !== false
  if (usingPostgres()) {
    const created = await createPostgresDatabase(migrated ? await postgresTemplate() : undefined)
    url = created.url
    dropDatabase = created.drop
    if (options.settings) {
      const admin = postgres(url, { max: 1, onnotice: () => {} })
      const name = new URL(url).pathname.slice(1)
      for (const [setting, value] of Object.entries(options.settings))
        await admin.unsafe(`alter database "${name}" set ${setting} = ${value}`)
      await admin.end()
    }
  }
  const seed = !url && migrated ? await embeddedSeed() : undefined
  // TEST_DATABASE_POOLER=pgbouncer (by hand, with DATABASE_URL): every test app's client as behind PgBouncer
  // (unnamed statements, one at a time, each statement a function from its first success), to check
  // that every statement of the service runs the same that way.
  const pooled = url && process.env.TEST_DATABASE_POOLER === 'pgbouncer'
  const db = await openDatabase({
    databaseUrl: url,
    poolMax: options.poolMax ?? 20,
    seed,
    ...(pooled ? { pooler: 'pgbouncer' as const, statementFunctionsAfter: 1 } : {}),
  })
  // Nothing to migrate: a copy of the migrated seed or template (migrating it again only reads
  // schema_migrations, some 100 statements: a fifth of a second on the embedded database).
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
