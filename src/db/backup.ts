// Backups of the embedded database: taken by the running service (only the process holding DATA_DIR
// may read PGlite's files), restored by the command line while no service holds DATA_DIR.
//
// The file: one line of JSON (the header), then a gzip'd tar of DATA_DIR/pgdata.
//   head -1 FILE                  the header
//   tail -n +2 FILE | tar -tz     the files
// The header names the format and its version, the service version and migration that wrote it, when
// it was taken, how long the database paused, a fingerprint of the secrets key in use (never the key),
// the payload's size and SHA-256, and an HMAC of all that keyed by the secrets key. The checksum finds
// a truncated or damaged file (an accident); the HMAC finds a file anyone without the key made or
// changed (tampering: a checksum anyone can recompute). Restore refuses both before anything changes,
// and then anything that is not a PostgreSQL data directory: only folders and files, under the names a
// data directory has at its top. The tar (ustar, folders included: PostgreSQL needs its empty ones) is
// written and read here.

import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { timingSafeEqual } from 'node:crypto'
import { gunzipSync, gzip } from 'node:zlib'
import { version } from '../../package.json'
import type { Database } from './client'
import { MIGRATIONS } from './migrations'
import { DataDirLockedError, lockDataDir } from './lock'
import { decodeKey } from '../lib/secrets'

export const BACKUP_FORMAT = 'messaging-api-backup'
export const BACKUP_FORMAT_VERSION = 2

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
  /** HMAC-SHA256 (hex) of the header line without this field, keyed by backupKeyOf(the secrets key). */
  hmac: string
}

/** A file that is no backup, or not a whole one, or cannot go into DATA_DIR: nothing was changed. */
export class BackupError extends Error {}

export const keyFingerprint = (key: Uint8Array) => new Bun.CryptoHasher('sha256').update(key).digest('hex').slice(0, 16)
const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex')
const hmacSha256 = (key: Uint8Array, data: string | Uint8Array) => new Bun.CryptoHasher('sha256', key).update(data).digest()

/** The key of a backup's HMAC: derived from the secrets key (HMAC-SHA256 of "messaging-api backup"), so the key itself signs nothing. */
export const backupKeyOf = (secretsKey: Uint8Array): Uint8Array => hmacSha256(secretsKey, 'messaging-api backup')

/** The HMAC of a header (every field but `hmac`, as the JSON line it is written as) under `secretsKey`. */
function headerMac(header: Omit<BackupHeader, 'hmac'>, secretsKey: Uint8Array): Buffer {
  const { hmac: _, ...fields } = header as BackupHeader
  return hmacSha256(backupKeyOf(secretsKey), JSON.stringify(fields))
}

/** The one of `keys` whose HMAC the header carries, or null: a file no key here made, or one changed since. */
function authenticatingKey(header: BackupHeader, keys: Uint8Array[]): Uint8Array | null {
  if (typeof header.hmac !== 'string' || !/^[0-9a-f]{64}$/.test(header.hmac)) return null
  const claimed = Buffer.from(header.hmac, 'hex')
  return keys.find((key) => timingSafeEqual(claimed, headerMac(header, key))) ?? null
}

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
  const fields: Omit<BackupHeader, 'hmac'> = {
    format: BACKUP_FORMAT,
    format_version: BACKUP_FORMAT_VERSION,
    service_version: version,
    taken_at: new Date().toISOString(),
    migration: { version: last!.version, name: last!.name },
    pause_ms: Math.round(copy.pauseMs),
    secrets_key_fingerprint: keyFingerprint(secretsKey),
    payload: { bytes: payload.byteLength, sha256: sha256(payload) },
  }
  const header: BackupHeader = { ...fields, hmac: headerMac(fields, secretsKey).toString('hex') }
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
  if (header.format_version === 1) {
    throw new BackupError(
      `${name} is a backup of format 1, from before backups were authenticated: this version restores format ${BACKUP_FORMAT_VERSION} only (take a new backup with it)`,
    )
  }
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
  /**
   * The key that verified the file, against the one DATA_DIR's service will use: that key, one of
   * SECRETS_KEY_PREVIOUS (its credentials open until rotated), or another (DATA_DIR/secrets-key while
   * SECRETS_KEY is set to something else: they will not open).
   */
  secretsKey: 'same' | 'previous' | 'different'
}

/**
 * Restores the backup `file` into `dataDir`/pgdata. Refuses, changing nothing, when the file is no whole
 * backup, when no secrets key here verifies its HMAC, when it is not a PostgreSQL data directory, when
 * a process holds DATA_DIR, or when pgdata already holds a database and `force` is not set (with it,
 * that database is moved aside, never deleted). The backup is unpacked beside pgdata, opened once to
 * prove it starts, and only then renamed into place.
 */
export async function restoreBackup(
  file: string,
  dataDir: string,
  options: { force: boolean; secretsKey: Uint8Array | undefined; previousKeys?: Uint8Array[] },
): Promise<Restored> {
  let bytes: Uint8Array
  try {
    bytes = readFileSync(file)
  } catch (error) {
    throw new BackupError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
  const { header, payload } = readBackup(bytes, file)

  // The keys the operator holds here: SECRETS_KEY, else DATA_DIR/secrets-key (the one the service will
  // use), the file's key too when SECRETS_KEY is set, and SECRETS_KEY_PREVIOUS.
  const fileKey = keyFile(dataDir)
  const current = options.secretsKey ?? fileKey
  const previous = options.previousKeys ?? []
  const keys = [current, fileKey, ...previous].filter((key): key is Uint8Array => key !== undefined)
  if (keys.length === 0) {
    throw new BackupError(
      `${file} cannot be verified: there is no secrets key here. Put the one kept with the backup (fingerprint ${header.secrets_key_fingerprint}) in ${join(dataDir, 'secrets-key')} (or SECRETS_KEY), then restore; nothing restored`,
    )
  }
  const verifiedBy = authenticatingKey(header, keys)
  if (!verifiedBy) {
    throw new BackupError(
      `${file} does not verify with the secrets key here (fingerprint ${keyFingerprint(keys[0]!)}): it was changed after it was taken, or taken with another key (its header names ${header.secrets_key_fingerprint}); nothing restored`,
    )
  }
  // Checked whole before DATA_DIR is touched: only a data directory's folders and files go in.
  const entries = dataDirectoryEntries(payload, file)

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
      writeTree(staging, entries)
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
    const same = (a: Uint8Array | undefined) => a !== undefined && keyFingerprint(a) === keyFingerprint(verifiedBy)
    const secretsKey = same(current) ? 'same' : previous.some(same) ? 'previous' : 'different'
    return { header, pgDir, aside, secretsKey }
  } finally {
    lock.release()
  }
}

/** DATA_DIR/secrets-key's key (what the service generated or was given), or undefined. */
function keyFile(dataDir: string): Uint8Array | undefined {
  const file = join(dataDir, 'secrets-key')
  return existsSync(file) ? decodeKey(readFileSync(file, 'utf8').trim()) : undefined
}

/**
 * What a PostgreSQL data directory holds at its top: its folders, and its files (PG_VERSION, the
 * configuration files initdb writes there, what the postmaster notes: PGlite's copy taken while it
 * runs holds its postmaster.pid); see https://www.postgresql.org/docs/current/storage-file-layout.html.
 */
const DATA_DIR_FOLDERS = new Set([
  'base',
  'global',
  'pg_commit_ts',
  'pg_dynshmem',
  'pg_logical',
  'pg_multixact',
  'pg_notify',
  'pg_replslot',
  'pg_serial',
  'pg_snapshots',
  'pg_stat',
  'pg_stat_tmp',
  'pg_subtrans',
  'pg_tblspc',
  'pg_twophase',
  'pg_wal',
  'pg_xact',
])
const DATA_DIR_FILES = new Set([
  'PG_VERSION',
  'postgresql.conf',
  'postgresql.auto.conf',
  'pg_hba.conf',
  'pg_ident.conf',
  'postmaster.opts',
  'postmaster.pid',
  'current_logfiles',
])
/** A name PostgreSQL gives a file or folder of its data directory (digits, letters, _ . -), not "." or "..". */
const DATA_DIR_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/
/** What tar's other entry types are, to say what was refused. */
const TAR_TYPES: Record<string, string> = {
  '1': 'hard link',
  '2': 'symbolic link',
  '3': 'character device',
  '4': 'block device',
  '6': 'FIFO',
  '7': 'contiguous file',
  x: 'pax extended header',
  g: 'pax global header',
  L: 'GNU long name',
  K: 'GNU long link name',
}

/**
 * The folders and files of a backup's gzip'd tar, read whole before anything is written: a BackupError
 * unless every entry is a folder or a regular file, named as a data directory names them, under a
 * name a data directory has at its top, once, and PG_VERSION is there. Nothing can point or reach
 * outside the folder it is written into: no links, no devices, no absolute path, no "..".
 */
function dataDirectoryEntries(payload: Uint8Array, file: string): Entry[] {
  const refuse = (why: string) => new BackupError(`${file}: ${why}; nothing restored`)
  let tar: Buffer
  try {
    tar = gunzipSync(payload)
  } catch {
    throw refuse("its content is not gzip'd")
  }
  const entries: Entry[] = []
  const seen = new Set<string>()
  for (let at = 0; ;) {
    if (at + 512 > tar.byteLength) throw refuse('its tar ends before its end marker')
    const block = tar.subarray(at, at + 512)
    if (block.every((byte) => byte === 0)) break
    const field = (from: number, width: number) => block.toString('utf8', from, from + width).replace(/\0[\s\S]*$/, '')
    let sum = 0
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : block[i]!
    if (block.toString('latin1', 257, 262) !== 'ustar' || parseInt(field(148, 8).trim(), 8) !== sum) {
      throw refuse(`its content is not a ustar archive (at byte ${at} of the tar)`)
    }
    const prefix = field(345, 155)
    const raw = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100)
    const size = field(124, 12).trim()
    if (!/^[0-7]{1,12}$/.test(size)) throw refuse(`its tar gives ${JSON.stringify(raw)} no size`)
    const start = at + 512
    const length = parseInt(size, 8)
    at = start + Math.ceil(length / 512) * 512
    if (at > tar.byteLength) throw refuse('its tar is cut short')

    const type = String.fromCharCode(block[156]!)
    const kind = type === '5' ? 'folder' : type === '0' || type === '\0' ? 'file' : null
    if (!kind) {
      throw refuse(
        `holds ${JSON.stringify(raw)}, a ${TAR_TYPES[type] ?? `tar entry of type ${JSON.stringify(type)}`}: a data directory holds only folders and files`,
      )
    }
    const path = kind === 'folder' ? raw.replace(/\/$/, '') : raw
    const parts = path.split('/')
    if (path.startsWith('/') || parts.includes('..')) throw refuse(`holds a path outside its data directory (${raw})`)
    if (!parts.every((part) => DATA_DIR_NAME.test(part))) throw refuse(`holds ${JSON.stringify(raw)}, a name no data directory has`)
    const top = parts[0]!
    const placed = parts.length > 1 || kind === 'folder' ? DATA_DIR_FOLDERS.has(top) : DATA_DIR_FILES.has(top)
    if (!placed) throw refuse(`holds ${path}, which is not part of a PostgreSQL data directory`)
    if (seen.has(path)) throw refuse(`holds ${path} twice`)
    seen.add(path)
    entries.push({ path, data: kind === 'file' ? tar.subarray(start, start + length) : null })
  }
  if (!entries.some((entry) => entry.path === 'PG_VERSION' && entry.data !== null)) {
    throw refuse('has no PG_VERSION: it is not a PostgreSQL data directory')
  }
  return entries
}

/** Writes checked entries under `root` (a folder this process just made): folders 0700, files 0600, never over anything. */
function writeTree(root: string, entries: Entry[]): void {
  for (const { path, data } of entries) {
    const target = join(root, path)
    if (data === null) {
      mkdirSync(target, { recursive: true, mode: 0o700 })
      continue
    }
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
    writeFileSync(target, data, { mode: 0o600, flag: 'wx' })
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
