// Outer ring (real time): the service is a child process under a send load while the command line takes a backup.
// Backups of the embedded database, as an operator takes them: the service as a child process, the
// command line through its real entry. A backup taken during a send load, restored into a fresh
// DATA_DIR (its secrets key put there first) and started: every send acknowledged before the backup
// began is there, and balances equal the ledger. Restore refuses while a service holds DATA_DIR,
// refuses a damaged or foreign file, one without a secrets key to verify it, one repacked with a
// planted file and its checksum recomputed (its HMAC does not verify), and a file signed with the key
// that is not a PostgreSQL data directory (an unknown top-level entry, a link, no PG_VERSION, a path
// outside): nothing changed. It replaces a database only with --force (the old one kept aside). On
// PostgreSQL, backup and restore refuse and name pg_dump / pg_restore.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createHmac } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN_TOKEN } from '../helpers/app'
import { call, startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'

const ROOT = join(import.meta.dir, '..', '..')
const temps: string[] = []
const children: Child[] = []
const temp = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  temps.push(dir)
  return dir
}

afterAll(async () => {
  for (const child of children) if (child.proc.exitCode === null) await child.stop()
  for (const dir of temps) rmSync(dir, { recursive: true, force: true })
})

type Run = { code: number; out: string; err: string }

/** The command line through its real entry, as an operator's shell runs it (asynchronously: the service keeps serving). */
async function admin(env: Record<string, string>, ...args: string[]): Promise<Run> {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'DATABASE_URL') base[k] = v
  const proc = Bun.spawn(['bun', join(ROOT, 'src/cli/admin.ts'), ...args], {
    cwd: ROOT,
    env: { ...base, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  return { code, out, err }
}

/** The environment the command line needs to find a child service. */
const serviceEnv = (child: Child, dataDir: string) => ({ HOST: '127.0.0.1', PORT: new URL(child.url).port, DATA_DIR: dataDir, ADMIN_TOKEN })

describe.skipIf(usingPostgres())('embedded', () => {
  let dataDir = ''
  let child: Child
  let accountId = 0
  let key = ''
  let file = ''

  beforeAll(async () => {
    dataDir = join(temp('backup-a-'), 'data')
    await premigrate(dataDir)
    child = await startChild({ DATA_DIR: dataDir, KEY_RATE_LIMIT_PER_MINUTE: '1000000', SIM_DELIVERED_MS: '50', SIM_READ_MS: '100' })
    children.push(child)
    const account = await call(child.url, 'POST', '/admin/v1/accounts', { name: 'backup', balance: 1_000_000 })
    expect(account.status).toBe(201)
    accountId = account.body.data.id
    key = (await call(child.url, 'POST', `/admin/v1/accounts/${accountId}/keys`, { label: 'backup' })).body.data.key
    file = join(temp('backup-file-'), 'messaging.backup')
  })

  test('a backup during a send load, restored into a fresh DATA_DIR: every send acknowledged before it is there, balances equal the ledger', async () => {
    type Send = { started: number; ended: number; status: number; id?: string }
    const sends: Send[] = []
    let backup: { started: number; ended: number; run: Run } | undefined
    const deadline = Date.now() + 60_000
    // Four senders keep going until the backup is done and at least 300 sends are; the backup starts once 100 are acknowledged.
    const sender = async () => {
      while ((!backup?.ended || sends.length < 300) && sends.length < 3_000 && Date.now() < deadline) {
        const started = performance.now()
        const sent = await call(child.url, 'POST', '/api/v1/messages/send', { to: '081234567890', body: `load ${sends.length}` }, key)
        sends.push({ started, ended: performance.now(), status: sent.status, id: sent.body?.data?.message_id })
      }
    }
    const backupOnce = async () => {
      while (sends.filter((s) => s.status === 200).length < 100) await Bun.sleep(5)
      const started = performance.now()
      const run = await admin(serviceEnv(child, dataDir), 'backup', file, '--json')
      backup = { started, ended: performance.now(), run }
    }
    await Promise.all([sender(), sender(), sender(), sender(), backupOnce()])

    expect(backup!.run).toMatchObject({ code: 0, err: '' })
    expect(sends.filter((s) => s.status !== 200)).toEqual([])
    const taken = JSON.parse(backup!.run.out)
    expect([taken.format, taken.format_version]).toEqual(['messaging-api-backup', 2])
    // The pause: the longest send that overlapped the backup, against the pause the service measured.
    const during = sends.filter((s) => s.started < backup!.ended && s.ended > backup!.started)
    const longest = Math.max(...during.map((s) => s.ended - s.started))
    const typical = sends.filter((s) => s.ended < backup!.started).map((s) => s.ended - s.started)
    console.log(
      `backup of ${taken.bytes} bytes during ${sends.length} sends: pause ${taken.pause_ms} ms (service), ` +
        `longest send overlapping it ${Math.round(longest)} ms over ${during.length} sends, median send before it ` +
        `${Math.round(typical.sort((a, b) => a - b)[typical.length >> 1]!)} ms`,
    )
    expect(during.length).toBeGreaterThan(0)
    expect(longest).toBeLessThan(5_000)
    const before = sends.filter((s) => s.ended < backup!.started)
    expect(before.length).toBeGreaterThanOrEqual(100)

    // Restored into a fresh DATA_DIR with the command line (the service elsewhere keeps running). Without
    // the secrets key there, the file cannot be verified: refused, nothing created.
    const fresh = join(temp('backup-b-'), 'data')
    const keyless = await admin({ DATA_DIR: fresh }, 'restore', file)
    expect(keyless.code).toBe(1)
    expect(keyless.err).toStartWith(
      `admin: ${file} cannot be verified: there is no secrets key here. Put the one kept with the backup (fingerprint ${taken.secrets_key_fingerprint}) in ${fresh}/secrets-key`,
    )
    expect(existsSync(fresh)).toBe(false)
    // As the README says: the secrets key kept with the backup goes into the new DATA_DIR first.
    mkdirSync(fresh, { recursive: true })
    copyFileSync(join(dataDir, 'secrets-key'), join(fresh, 'secrets-key'))
    const restored = await admin({ DATA_DIR: fresh }, 'restore', file)
    expect(restored).toMatchObject({ code: 0, err: '' })
    expect(restored.out).toContain(`restored ${file} (taken ${taken.taken_at}, migration ${taken.migration.name}) into ${fresh}/pgdata`)
    expect(restored.out).toContain('verified with the secrets key here, the one its credentials were sealed with')

    const second = await startChild({ DATA_DIR: fresh })
    children.push(second)
    for (const send of before) {
      const message = await call(second.url, 'GET', `/api/v1/messages/${send.id}`, undefined, key)
      expect({ id: send.id, status: message.status }).toEqual({ id: send.id, status: 200 })
    }
    const account = await call(second.url, 'GET', `/admin/v1/accounts/${accountId}`)
    let ledgerSum = 0
    let rows = 0
    for (let offset = 0; ; offset += 200) {
      const ledger = await call(second.url, 'GET', `/admin/v1/accounts/${accountId}/ledger?limit=200&offset=${offset}`)
      for (const row of ledger.body.data.items) ledgerSum += row.amount
      rows += ledger.body.data.items.length
      if (rows >= ledger.body.data.total) break
    }
    expect(account.body.data.wa_balance).toBe(ledgerSum)
    // Nothing half: one charge a message at most, the opening top-up, and at least every send before it.
    expect(rows).toBeGreaterThanOrEqual(1 + before.length)
    expect(rows).toBeLessThanOrEqual(1 + sends.length)
    // The restored service works: it takes a send.
    expect((await call(second.url, 'POST', '/api/v1/messages/send', { to: '081234567890', body: 'after restore' }, key)).status).toBe(200)
    expect(await second.stop()).toBe(0)

    // Its DATA_DIR now holds a database: refused without --force; with it, the old one is kept aside.
    const again = await admin({ DATA_DIR: fresh }, 'restore', file)
    expect(again.code).toBe(1)
    expect(again.err).toContain(`${fresh}/pgdata already holds a database; nothing restored. restore --force moves it aside`)
    expect(readdirSync(fresh).sort()).toEqual(['pgdata', 'secrets-key'])
    const forced = await admin({ DATA_DIR: fresh }, 'restore', file, '--force')
    expect(forced.code).toBe(0)
    const aside = readdirSync(fresh).find((name) => name.startsWith('pgdata.before-restore-'))
    expect(aside).toBeDefined()
    expect(forced.out).toContain(`the database that was there is kept in ${fresh}/${aside}`)
    expect(forced.out).toContain('verified with the secrets key here, the one its credentials were sealed with')
    // The one kept aside is the database that took the send after the restore; the restored one is the backup's.
    const third = await startChild({ DATA_DIR: fresh })
    children.push(third)
    const afterForce = await call(third.url, 'GET', `/admin/v1/accounts/${accountId}/ledger?limit=1`)
    expect(afterForce.body.data.total).toBe(rows)
    expect(await third.stop()).toBe(0)
  }, 180_000)

  test('restore refuses while a service holds DATA_DIR, and changes nothing', async () => {
    expect(existsSync(file)).toBe(true)
    const before = readdirSync(dataDir).sort()
    const refused = await admin({ DATA_DIR: dataDir }, 'restore', file, '--force')
    expect(refused.code).toBe(1)
    expect(refused.err).toStartWith(
      `admin: nothing restored: stop the service first (DATA_DIR ${dataDir} is in use by process ${child.proc.pid}`,
    )
    expect(readdirSync(dataDir).sort()).toEqual(before)
    expect((await call(child.url, 'GET', `/admin/v1/accounts/${accountId}`)).status).toBe(200)
  }, 60_000)

  test('a truncated, altered or foreign file is refused with a clear error, and nothing is created', async () => {
    const bytes = readFileSync(file)
    const dir = temp('backup-bad-')
    const target = join(dir, 'data')
    const newline = bytes.indexOf(10)
    const header = JSON.parse(bytes.subarray(0, newline).toString())
    const cases: [string, Uint8Array, string][] = [
      [
        'truncated',
        bytes.subarray(0, bytes.length - 1000),
        `is damaged or incomplete: ${header.payload.bytes - 1000} bytes after its header`,
      ],
      [
        'altered',
        Buffer.concat([bytes.subarray(0, bytes.length - 10), Buffer.from('0123456789')]),
        'is damaged: its content does not match',
      ],
      ['foreign', Buffer.from('hello\nworld\n'), 'is not a messaging-api backup'],
      [
        'format 1',
        Buffer.concat([Buffer.from(JSON.stringify({ ...header, format_version: 1 })), bytes.subarray(newline)]),
        'is a backup of format 1, from before backups were authenticated',
      ],
      ['empty', Buffer.alloc(0), 'is not a messaging-api backup'],
      [
        'newer',
        Buffer.concat([
          Buffer.from(JSON.stringify({ ...header, migration: { version: 9999, name: '9999_future.sql' } })),
          bytes.subarray(newline),
        ]),
        'holds a database at migration 9999_future.sql, newer than this version knows',
      ],
    ]
    const missing = await admin({ DATA_DIR: target }, 'restore', join(dir, 'nothing-here.backup'))
    expect(missing).toMatchObject({ code: 1, err: `admin: cannot read ${join(dir, 'nothing-here.backup')}: ENOENT\n` })
    expect(existsSync(target)).toBe(false)
    for (const [name, content, message] of cases) {
      const bad = join(dir, `${name}.backup`)
      writeFileSync(bad, content)
      const refused = await admin({ DATA_DIR: target }, 'restore', bad)
      expect({ name, code: refused.code }).toEqual({ name, code: 1 })
      expect(refused.err).toStartWith(`admin: ${bad} ${message}`)
      expect(existsSync(target)).toBe(false) // refused before DATA_DIR is touched
    }
  }, 60_000)

  /** A target DATA_DIR holding the service's secrets key, as the README says to prepare one. */
  const keyedTarget = (dir: string) => {
    const target = join(dir, 'data')
    mkdirSync(target)
    copyFileSync(join(dataDir, 'secrets-key'), join(target, 'secrets-key'))
    return target
  }
  const tar = (cwd: string, ...args: string[]) => {
    const run = Bun.spawnSync(['tar', ...args], { cwd, stdout: 'pipe', stderr: 'pipe' })
    expect({ tar: args.join(' '), code: run.exitCode, err: run.stderr.toString() }).toEqual({ tar: args.join(' '), code: 0, err: '' })
  }
  /** `payload`'s size and SHA-256, as a header names them. */
  const checksum = (payload: Uint8Array) => ({
    bytes: payload.byteLength,
    sha256: new Bun.CryptoHasher('sha256').update(payload).digest('hex'),
  })
  /** A backup file of `header` and `payload`, its checksum recomputed: what anyone can do, key or not. */
  const repacked = (header: Record<string, unknown>, payload: Uint8Array) =>
    Buffer.concat([Buffer.from(`${JSON.stringify({ ...header, payload: checksum(payload) })}\n`), payload])

  /** The backup's header, and its data directory unpacked into `dir`/tree by tar, as anyone can. */
  const unpacked = (dir: string) => {
    const bytes = readFileSync(file)
    const newline = bytes.indexOf(10)
    const tree = join(dir, 'tree')
    mkdirSync(tree)
    writeFileSync(join(dir, 'payload.tar.gz'), bytes.subarray(newline + 1))
    tar(dir, '-xzf', 'payload.tar.gz', '-C', tree)
    return { header: JSON.parse(bytes.subarray(0, newline).toString()), tree }
  }
  /** `tree`'s entries (all of them, or `names`) packed again as a gzip'd ustar. */
  const packed = (dir: string, tree: string, names = readdirSync(tree)) => {
    tar(dir, '--format=ustar', '-czf', 'repacked.tar.gz', '-C', tree, ...names)
    return readFileSync(join(dir, 'repacked.tar.gz'))
  }

  test('a backup repacked with a planted file, its checksum recomputed, is refused: it does not verify with the secrets key', async () => {
    const dir = temp('backup-repacked-')
    const { header, tree } = unpacked(dir)
    // Planted where a data directory has files (base/), so only the HMAC can tell.
    writeFileSync(join(tree, 'base', 'planted.sh'), '#!/bin/sh\necho planted\n')
    const forged = join(dir, 'forged.backup')
    writeFileSync(forged, repacked(header, packed(dir, tree)))
    const target = keyedTarget(dir)
    const refused = await admin({ DATA_DIR: target }, 'restore', forged)
    expect({ code: refused.code, err: refused.err }).toEqual({
      code: 1,
      err: expect.stringContaining(
        `admin: ${forged} does not verify with the secrets key here (fingerprint ${header.secrets_key_fingerprint})`,
      ),
    })
    expect(readdirSync(target)).toEqual(['secrets-key'])
  }, 60_000)

  test('signed with the secrets key but not a PostgreSQL data directory: refused, nothing created', async () => {
    const dir = temp('backup-not-pgdata-')
    const { header, tree } = unpacked(dir)
    // The HMAC as the README documents it: HMAC-SHA256 of the header line without `hmac`, keyed by
    // HMAC-SHA256(secrets key, "messaging-api backup").
    const secretsKey = Buffer.from(readFileSync(join(dataDir, 'secrets-key'), 'utf8').trim(), 'base64')
    const backupKey = createHmac('sha256', secretsKey).update('messaging-api backup').digest()
    const signed = (payload: Uint8Array) => {
      const { hmac: _, ...fields } = { ...header, payload: checksum(payload) }
      const hmac = createHmac('sha256', backupKey).update(JSON.stringify(fields)).digest('hex')
      return Buffer.concat([Buffer.from(`${JSON.stringify({ ...fields, hmac })}\n`), payload])
    }
    const gz = (files: Record<string, string>) => new Bun.Archive(files, { compress: 'gzip' }).bytes()
    // The real data directory, and beside it at the top a file no data directory has (PGlite would open it all the same).
    writeFileSync(join(tree, 'planted.sh'), '#!/bin/sh\necho planted\n')
    const planted = packed(dir, tree)
    const withoutVersion = packed(
      dir,
      tree,
      readdirSync(tree).filter((name) => name !== 'PG_VERSION' && name !== 'planted.sh'),
    )
    // A data directory with a symbolic link where pg_wal goes (real PostgreSQL allows one; a restore does not).
    const linked = join(dir, 'linked')
    mkdirSync(join(linked, 'base'), { recursive: true })
    writeFileSync(join(linked, 'PG_VERSION'), '17\n')
    symlinkSync('/tmp', join(linked, 'pg_wal'))
    tar(dir, '--format=ustar', '-czf', 'linked.tar.gz', '-C', linked, 'PG_VERSION', 'base', 'pg_wal')
    const cases: [string, Uint8Array, string][] = [
      ['unknown top-level', planted, 'holds planted.sh, which is not part of a PostgreSQL data directory'],
      ['no PG_VERSION', withoutVersion, 'has no PG_VERSION: it is not a PostgreSQL data directory'],
      ['escaping', await gz({ PG_VERSION: '17\n', '../escaped': 'x' }), 'holds a path outside its data directory (../escaped)'],
      ['link', readFileSync(join(dir, 'linked.tar.gz')), 'holds "pg_wal", a symbolic link: a data directory holds only folders and files'],
    ]
    for (const [name, payload, message] of cases) {
      const bad = join(dir, `${name.replaceAll(' ', '-')}.backup`)
      writeFileSync(bad, signed(payload))
      const target = keyedTarget(temp('backup-not-pgdata-target-'))
      const refused = await admin({ DATA_DIR: target }, 'restore', bad)
      expect({ name, code: refused.code, err: refused.err }).toEqual({
        name,
        code: 1,
        err: `admin: ${bad}: ${message}; nothing restored\n`,
      })
      expect(readdirSync(target)).toEqual(['secrets-key'])
    }
  }, 60_000)
})

describe.skipIf(!usingPostgres())('PostgreSQL', () => {
  test('backup and restore refuse and name pg_dump and pg_restore; no file is written', async () => {
    const db = await createMigratedPostgresDatabase()
    const dataDir = temp('backup-pg-')
    try {
      const child = await startChild({ DATA_DIR: dataDir, DATABASE_URL: db.url })
      children.push(child)
      const file = join(dataDir, 'messaging.backup')
      const refused = await admin(serviceEnv(child, dataDir), 'backup', file)
      expect(refused.code).toBe(1)
      expect(refused.err).toStartWith('admin: 409 CONFLICT: this service uses PostgreSQL (DATABASE_URL): back it up with pg_dump')
      expect(readdirSync(dataDir).filter((name) => name.includes('backup'))).toEqual([])
      const restore = await admin({ ...serviceEnv(child, dataDir), DATABASE_URL: db.url }, 'restore', file)
      expect(restore.code).toBe(1)
      expect(restore.err).toContain(
        'DATABASE_URL is set: this service uses PostgreSQL, which restore does not touch; restore a pg_dump with pg_restore',
      )
      expect(await child.stop()).toBe(0)
    } finally {
      await db.drop()
    }
  }, 60_000)
})
