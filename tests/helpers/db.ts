// A fresh database for one test file: a new PostgreSQL database when DATABASE_URL is set (dropped
// afterwards), otherwise an in-memory embedded PGlite. Both migrated, never mocked.

import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
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

// Migrating a fresh database takes a second on PostgreSQL and seconds on the embedded one (initdb, then
// the migrations); a copy of a migrated one (`create database ... template`, a PGlite snapshot) a fraction
// of that. `bun test --parallel` runs every file in a fresh module registry (--isolate), so what a file
// keeps in memory is gone for the next: the migrated database is built once for the whole run instead,
// by tests/preload.ts (bunfig.toml) before any test file starts, outside every test's and hook's bound,
// and shared by name across the run's files and workers:
// - PostgreSQL: a template database, test_template_<run>_<migrations>;
// - embedded: a snapshot file and a migrated DATA_DIR under the temporary directory, named alike.
// <run> is the pid of the `bun test` process (the coordinator of --parallel workers), <migrations> a hash
// of sql/ and src/db/ (what a migrated database is made of). The first to find one missing builds it
// under a lock (an advisory lock on PostgreSQL, a lock file for the embedded files) while the others
// wait for it; a build's leftovers whose run has ended are removed by the next build (and .ci/run drops
// the templates at its end).
const TEMPLATE_PREFIX = 'test_template_'
const ROOT = join(import.meta.dir, '..', '..')

/** The pid of this run's `bun test` process: a --parallel worker's parent, or this process. */
const runPid = () => (process.env.BUN_TEST_WORKER_ID ? process.ppid : process.pid)

let migrationsHash: string | undefined
/** What a migrated database is made of: the migrations and the code that applies them. */
function migrationsKey(): string {
  if (migrationsHash) return migrationsHash
  const hash = createHash('sha256')
  for (const dir of ['sql', 'src/db'])
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name)))
      if (entry.isFile()) hash.update(`${dir}/${entry.name}\n`).update(readFileSync(join(ROOT, dir, entry.name)))
  migrationsHash = hash.digest('hex').slice(0, 12)
  return migrationsHash
}

/** This run's template database, built by the first process of the run to ask (tests/preload.ts). */
let migratedTemplate: Promise<string> | undefined
function postgresTemplate(): Promise<string> {
  migratedTemplate ??= buildPostgresTemplate()
  return migratedTemplate
}
async function buildPostgresTemplate(): Promise<string> {
  const name = `${TEMPLATE_PREFIX}${runPid()}_${migrationsKey()}`
  const admin = postgres(process.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
  try {
    // Session-scoped, on the one connection: a process that dies while building releases it.
    await admin`select pg_advisory_lock(hashtext(${name}))`
    const [found] = await admin`select 1 from pg_database where datname = ${name}`
    if (found) return name
    const left = await admin<{ datname: string }[]>`select datname from pg_database where datname like ${TEMPLATE_PREFIX + '%'}`
    for (const { datname } of left) {
      const pid = Number(datname.slice(TEMPLATE_PREFIX.length).split('_')[0])
      if (pid !== runPid() && !alive(pid)) await admin.unsafe(`drop database if exists ${datname} with (force)`).catch(() => {})
    }
    // Built under another name and renamed when complete: a template is never seen half-migrated.
    const building = `${name}_b${process.pid}`
    await admin.unsafe(`drop database if exists ${building} with (force)`)
    await admin.unsafe(`create database ${building}`)
    const db = await openDatabase({ databaseUrl: databaseUrl(building), poolMax: 1 })
    await migrate(db.sql)
    // A template must have no session while it is copied.
    await db.close()
    await admin.unsafe(`alter database ${building} rename to ${name}`)
    return name
  } finally {
    await admin.end()
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * `path` made by `build(path under construction)` under `lock`, unless it exists: one process builds,
 * the others wait for it. A lock left by a process that died is broken.
 */
async function builtOnce(path: string, build: (partial: string) => Promise<void>): Promise<void> {
  const lock = `${path}.lock`
  for (;;) {
    if (existsSync(path)) return
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const holder = Number(readFileSync(lock, 'utf8'))
      // Written but not yet filled (0), or held by a live process: wait for its build.
      if (holder && !alive(holder)) rmSync(lock, { force: true })
      else await Bun.sleep(50)
      continue
    }
    try {
      if (existsSync(path)) return
      const partial = `${path}.b${process.pid}`
      rmSync(partial, { recursive: true, force: true })
      await build(partial)
      renameSync(partial, path)
      return
    } finally {
      rmSync(lock, { force: true })
    }
  }
}

/** The embedded files of runs that ended (theirs is the first number in the name). */
function removeEndedRuns(): void {
  for (const name of readdirSync(tmpdir())) {
    const match = /^test-(?:seed|migrated-data)-(\d+)-[0-9a-f]{12}/.exec(name)
    if (match && Number(match[1]) !== runPid() && !alive(Number(match[1]))) rmSync(join(tmpdir(), name), { recursive: true, force: true })
  }
}

// Most of what is left of a start is PGlite setting up its shared buffers: 128 MB by default (the
// service's own), though a test database holds a few MB. The snapshot's postgresql.auto.conf asks for
// TEST_SHARED_BUFFERS instead, which starts each test database in about half the CPU time (measured:
// 2.2 s to 1.3 s a start); a query reads the same rows either way, from memory. (embeddedFiles puts the
// default back for the services that tests start on a copy.)
const TEST_SHARED_BUFFERS = '4MB'
const seedPath = () => join(tmpdir(), `test-seed-${runPid()}-${migrationsKey()}.tar`)
async function buildEmbeddedSeed(): Promise<void> {
  await builtOnce(seedPath(), async (partial) => {
    removeEndedRuns()
    const db = await openDatabase({})
    await migrate(db.sql)
    await db.sql.unsafe(`alter system set shared_buffers = '${TEST_SHARED_BUFFERS}'`)
    const blob = await db.snapshot!()
    await db.close()
    await Bun.write(partial, blob)
  })
}
let migratedSeed: Promise<Blob> | undefined
function embeddedSeed(): Promise<Blob> {
  migratedSeed ??= buildEmbeddedSeed().then(async () => new Blob([await Bun.file(seedPath()).arrayBuffer()]))
  return migratedSeed
}

// A service on a fresh DATA_DIR (a child process, startService) would initialise and migrate its
// embedded database first: seconds. A copy of the files of a migrated one, made once per run from the
// snapshot above, opens at once.
async function embeddedFiles(): Promise<string> {
  const dir = join(tmpdir(), `test-migrated-data-${runPid()}-${migrationsKey()}`)
  await builtOnce(dir, async (partial) => {
    const db = await openDatabase({ dataDir: partial, seed: await embeddedSeed() })
    await migrate(db.sql)
    // A service runs on what it would have on its own DATA_DIR: PostgreSQL's shared buffers.
    await db.sql`alter system reset shared_buffers`
    await db.close()
  })
  return join(dir, 'pgdata')
}

/**
 * Builds this run's migrated database (tests/preload.ts, before each test file): on PostgreSQL the
 * template, on the embedded database the snapshot and the migrated files. The first file of the run
 * builds them, every later one finds them.
 */
export async function prepareTestDatabases(): Promise<void> {
  if (usingPostgres()) await postgresTemplate()
  else {
    await buildEmbeddedSeed()
    await embeddedFiles()
  }
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
