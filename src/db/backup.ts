// Backups of the embedded database: taken by the running service (only the process holding DATA_DIR
// may read PGlite's files), restored by the command line while no service holds DATA_DIR.
//
// The file: one line of JSON (the header), then a gzip'd tar of DATA_DIR/pgdata.
//   head -1 FILE                  the header
//   tail -n +2 FILE | tar -tz     the files
// The header names the format and its version, the service version and migration that wrote it, when
// it was taken, how long the database paused, a fingerprint of the secrets key in use (never the key),
// and the payload's size and SHA-256: a truncated, altered or foreign file is refused before anything
// changes. The tar (ustar, folders included: PostgreSQL needs its empty ones) is written here.

import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { gzip } from 'node:zlib'
import { version } from '../../package.json'
import type { Database } from './client'
import { MIGRATIONS } from './migrations'
import { DataDirLockedError, lockDataDir } from './lock'
import { decodeKey } from '../lib/secrets'

export const BACKUP_FORMAT = 'messaging-api-backup'
export const BACKUP_FORMAT_VERSION = 1

export type BackupHeader = {
  format: typeof BACKUP_FORMAT
  format_version: number
  /** The service version that took it. */
  service_version: string
  taken_at: string
  /** The last migration applied to the database in it. */
  migration: { version: number; name: string }
  /** How long statements waited for the copy (checkpoint and reading the files), in ms. */
  pause_ms: number
  /** sha256 of the secrets key in use, first 16 hex digits: which key opens its sealed credentials. */
  secrets_key_fingerprint: string
  /** The gzip'd tar after the header line. */
  payload: { bytes: number; sha256: string }
}

/** A file that is no backup, or not a whole one, or cannot go into DATA_DIR: nothing was changed. */
export class BackupError extends Error {}

export const keyFingerprint = (key: Uint8Array) => new Bun.CryptoHasher('sha256').update(key).digest('hex').slice(0, 16)
const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex')

/** The backup of a running embedded database: the file's bytes and its header. */
export async function takeBackup(database: Database, secretsKey: Uint8Array): Promise<{ bytes: Uint8Array; header: BackupHeader }> {
  if (!database.quiesced) throw new Error('backups are of an embedded database in a DATA_DIR')
  // Migrations run only at start, so the level read here is the copy's.
  const [last] = await database.sql<{ version: number; name: string }[]>`
    select version, name from schema_migrations order by version desc limit 1`
  // Only reading the files happens in the pause; the tar and its compression (on zlib's own thread,
  // so requests keep being served) wait until statements run again. The read is synchronous too: PGlite
  // runs on this thread, so not one write reaches the files while they are read.
  const copy = await database.quiesced(readTree)
  const payload = await gzipped(tarOf(copy.value))
  const header: BackupHeader = {
    format: BACKUP_FORMAT,
    format_version: BACKUP_FORMAT_VERSION,
    service_version: version,
    taken_at: new Date().toISOString(),
    migration: { version: last!.version, name: last!.name },
    pause_ms: Math.round(copy.pauseMs),
    secrets_key_fingerprint: keyFingerprint(secretsKey),
    payload: { bytes: payload.byteLength, sha256: sha256(payload) },
  }
  const line = new TextEncoder().encode(`${JSON.stringify(header)}\n`)
  const bytes = new Uint8Array(line.byteLength + payload.byteLength)
  bytes.set(line)
  bytes.set(payload, line.byteLength)
  return { bytes, header }
}

type Entry = { path: string; data: Uint8Array | null } // null: a folder

/** Every folder and file under `root`, by relative path, parents first. */
function readTree(root: string): Entry[] {
  const entries: Entry[] = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        entries.push({ path: relative(root, path), data: null })
        walk(path)
      } else if (entry.isFile()) entries.push({ path: relative(root, path), data: readFileSync(path) })
    }
  }
  walk(root)
  return entries
}

/** A ustar archive of `entries` (mode 0700 folders, 0600 files). */
function tarOf(entries: Entry[]): Uint8Array {
  const chunks: Uint8Array[] = []
  const mtime = Math.floor(Date.now() / 1000)
  for (const { path, data } of entries) {
    const header = Buffer.alloc(512)
    const name = data === null ? `${path}/` : path
    // Names over 100 bytes go into the 155-byte prefix, split at a slash.
    const cut = name.length > 100 ? name.lastIndexOf('/', name.length - 2) : -1
    if (Buffer.byteLength(name) > (cut < 0 ? 100 : 256)) throw new Error(`path too long for a tar entry: ${name}`)
    header.write(cut < 0 ? name : name.slice(cut + 1), 0)
    if (cut >= 0) header.write(name.slice(0, cut), 345)
    const octal = (value: number, at: number, width: number) => header.write(`${value.toString(8).padStart(width - 1, '0')}\0`, at)
    octal(data === null ? 0o700 : 0o600, 100, 8)
    octal(0, 108, 8)
    octal(0, 116, 8)
    octal(data?.byteLength ?? 0, 124, 12)
    octal(mtime, 136, 12)
    header.write(data === null ? '5' : '0', 156)
    header.write('ustar\x0000', 257, 'latin1')
    header.fill(' ', 148, 156) // the checksum counts its own field as spaces
    let sum = 0
    for (const byte of header) sum += byte
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148)
    chunks.push(header)
    if (data) {
      chunks.push(data)
      if (data.byteLength % 512) chunks.push(new Uint8Array(512 - (data.byteLength % 512)))
    }
  }
  chunks.push(new Uint8Array(1024))
  return Buffer.concat(chunks)
}

const gzipped = (bytes: Uint8Array) =>
  new Promise<Uint8Array>((done, fail) => gzip(bytes, (error, result) => (error ? fail(error) : done(result))))

/** The header and payload of a backup file's bytes, or a BackupError saying why it is none. */
export function readBackup(bytes: Uint8Array, name = 'the file'): { header: BackupHeader; payload: Uint8Array } {
  const foreign = new BackupError(`${name} is not a messaging-api backup (it does not start with a backup header)`)
  const newline = bytes.subarray(0, 1 << 20).indexOf(10)
  if (newline < 0) throw foreign
  let header: BackupHeader
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(0, newline)))
  } catch {
    throw foreign
  }
  if (header?.format !== BACKUP_FORMAT) throw foreign
  if (header.format_version !== BACKUP_FORMAT_VERSION) {
    throw new BackupError(
      `${name} is a backup of format ${header.format_version}, written by messaging-api ${header.service_version}; this version (${version}) reads format ${BACKUP_FORMAT_VERSION}`,
    )
  }
  const payload = bytes.subarray(newline + 1)
  if (payload.byteLength !== header.payload?.bytes) {
    throw new BackupError(
      `${name} is damaged or incomplete: ${payload.byteLength} bytes after its header, which says ${header.payload?.bytes} (a copy cut short?)`,
    )
  }
  if (sha256(payload) !== header.payload.sha256)
    throw new BackupError(`${name} is damaged: its content does not match the checksum in its header`)
  const known = MIGRATIONS.at(-1)!
  if (header.migration.version > known.version) {
    throw new BackupError(
      `${name} holds a database at migration ${header.migration.name}, newer than this version knows (${known.name}): restore it with messaging-api ${header.service_version} or later`,
    )
  }
  return { header, payload }
}

export type Restored = {
  header: BackupHeader
  /** DATA_DIR/pgdata, now the backup's database. */
  pgDir: string
  /** Where the database that was there before went (restore --force), or null. */
  aside: string | null
  /** The secrets key DATA_DIR's service will use, against the one the backup's credentials were sealed with. */
  secretsKey: 'same' | 'different' | 'missing'
}

/**
 * Restores the backup `file` into `dataDir`/pgdata. Refuses, changing nothing, when the file is no whole
 * backup, when a process holds DATA_DIR, or when pgdata already holds a database and `force` is not set
 * (with it, that database is moved aside, never deleted). The backup is unpacked beside pgdata, opened
 * once to prove it starts, and only then renamed into place.
 */
export async function restoreBackup(
  file: string,
  dataDir: string,
  options: { force: boolean; secretsKey: Uint8Array | undefined },
): Promise<Restored> {
  let bytes: Uint8Array
  try {
    bytes = readFileSync(file)
  } catch (error) {
    throw new BackupError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
  const { header, payload } = readBackup(bytes, file)

  let lock: { release(): void }
  try {
    lock = lockDataDir(dataDir)
  } catch (error) {
    if (error instanceof DataDirLockedError) throw new BackupError(`nothing restored: stop the service first (${error.message})`)
    throw error
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const pgDir = resolve(join(dataDir, 'pgdata'))
  const staging = `${pgDir}.restoring-${stamp}`
  try {
    const occupied = existsSync(pgDir) && readdirSync(pgDir).length > 0
    if (occupied && !options.force) {
      throw new BackupError(
        `${pgDir} already holds a database; nothing restored. restore --force moves it aside (to ${pgDir}.before-restore-<time>) and restores in its place`,
      )
    }
    mkdirSync(staging, { recursive: true, mode: 0o700 })
    try {
      const archive = new Bun.Archive(payload)
      // A header's checksum proves the file whole, not harmless: nothing may land outside the staging folder.
      for (const path of (await archive.files()).keys()) {
        if (path.startsWith('/') || path.split('/').includes('..'))
          throw new BackupError(`${file}: holds a path outside its data directory (${path}); nothing restored`)
      }
      await archive.extract(staging)
      await proveItOpens(staging, header)
    } catch (error) {
      rmSync(staging, { recursive: true, force: true })
      throw error instanceof BackupError
        ? error
        : new BackupError(`${file}: its database does not open (${String(error)}); nothing restored`)
    }
    const aside = occupied ? `${pgDir}.before-restore-${stamp}` : null
    if (aside) renameSync(pgDir, aside)
    else rmSync(pgDir, { recursive: true, force: true }) // an empty folder
    renameSync(staging, pgDir)
    return { header, pgDir, aside, secretsKey: compareKey(dataDir, options.secretsKey, header) }
  } finally {
    lock.release()
  }
}

/** Opens the unpacked database and reads its migration level: a backup that does not start is refused. */
async function proveItOpens(pgDir: string, header: BackupHeader): Promise<void> {
  const { PGlite } = await import('@electric-sql/pglite')
  const { embeddedAssets } = await import('./client')
  const db = await PGlite.create({ dataDir: pgDir, ...(await embeddedAssets()) })
  try {
    const result = await db.query<{ version: number }>('select max(version) as version from schema_migrations')
    if (result.rows[0]?.version !== header.migration.version) {
      throw new BackupError(`the database in it is at migration ${result.rows[0]?.version}, its header says ${header.migration.version}`)
    }
  } finally {
    await db.close()
  }
}

function compareKey(dataDir: string, configured: Uint8Array | undefined, header: BackupHeader): Restored['secretsKey'] {
  let key = configured
  if (!key) {
    const file = join(dataDir, 'secrets-key')
    key = existsSync(file) ? decodeKey(readFileSync(file, 'utf8').trim()) : undefined
  }
  if (!key) return 'missing'
  return keyFingerprint(key) === header.secrets_key_fingerprint ? 'same' : 'different'
}
