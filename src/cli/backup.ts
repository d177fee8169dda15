// `backup FILE` and `restore FILE`: the embedded database's backups (db/backup.ts). A backup is taken by
// the running service (GET /admin/v1/backup), checked, and written under a temporary name renamed
// into place, so FILE is whole or absent. A restore runs here, with the service stopped: only the
// process holding DATA_DIR may touch its database. The service's modules load only when these run.

import { renameSync, rmSync, writeFileSync } from 'node:fs'
import { readConfig } from '../config'
import { CliError, unreachable } from './client'
import type { Command } from './command'
import { program } from './program'

const megabytes = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`

const backup: Command = {
  name: 'backup',
  args: ['FILE'],
  summary: 'save a consistent backup of the embedded database while the service runs',
  details:
    'The running service copies its database (statements wait a moment: the pause is printed) and this writes it to ' +
    'FILE. The secrets key is not in it: keep DATA_DIR/secrets-key (or SECRETS_KEY) beside it, or sealed sender ' +
    'credentials cannot be opened after a restore. With DATABASE_URL (PostgreSQL), use pg_dump instead.',
  example: 'bun run admin backup messaging-$(date +%F).backup',
  async run(ctx) {
    const file = ctx.args.FILE!
    const { base, origin, token } = ctx.api
    let response: Response
    try {
      response = await fetch(`${base}/admin/v1/backup`, { headers: { authorization: `Bearer ${token}` } })
    } catch (error) {
      throw unreachable(base, origin, error)
    }
    if (!response.ok) {
      const payload = (await response.json().catch(() => null)) as { error?: string; code?: string } | null
      throw new CliError(
        payload?.error ? `${response.status} ${payload.code}: ${payload.error}` : `${base} answered HTTP ${response.status}`,
        response.status,
        payload?.code,
      )
    }
    const bytes = new Uint8Array(await response.arrayBuffer())
    const { readBackup } = await import('../db/backup')
    const { header } = readBackup(bytes, 'the answer') // a cut connection is caught here, not at restore
    const partial = `${file}.partial-${process.pid}`
    try {
      writeFileSync(partial, bytes, { mode: 0o600 })
      renameSync(partial, file)
    } catch (error) {
      rmSync(partial, { force: true })
      throw new CliError(`cannot write ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
    }
    return {
      data: { file, bytes: bytes.byteLength, ...header },
      text: () =>
        [
          `backup written to ${file}: ${megabytes(bytes.byteLength)}, migration ${header.migration.name}, taken ${header.taken_at}`,
          `the database paused ${header.pause_ms} ms for it`,
          `keep the secrets key with it (fingerprint ${header.secrets_key_fingerprint}): DATA_DIR/secrets-key or SECRETS_KEY; it is not in the backup, and restore needs it to verify the file`,
        ].join('\n'),
    }
  },
}

const restore: Command = {
  name: 'restore',
  args: ['FILE'],
  summary: 'restore a backup into DATA_DIR (the service stopped; --force replaces a database, kept aside)',
  details:
    'Runs here, not through the service: stop the service first (restore refuses while a process holds DATA_DIR). ' +
    'Put the secrets key kept with the backup in DATA_DIR/secrets-key (or SECRETS_KEY) first: the file must verify ' +
    'with it (an HMAC: a file changed or made without the key is refused). The file is checked whole, and must be a ' +
    'PostgreSQL data directory, before anything changes; it is unpacked beside DATA_DIR/pgdata, opened once, then put in ' +
    'place. An existing database is refused unless --force, which moves it to DATA_DIR/pgdata.before-restore-<time>. ' +
    'DATA_DIR/secrets-key and DATA_DIR/admin-token are left as they are.',
  example: 'bun run admin restore messaging-2026-11-25.backup --force',
  flags: { force: { help: 'replace the database in DATA_DIR (moved aside, not deleted)' } },
  async run(ctx) {
    const config = readConfig()
    if (config.databaseUrl) {
      throw new CliError(
        'DATABASE_URL is set: this service uses PostgreSQL, which restore does not touch; restore a pg_dump with pg_restore. restore is for the embedded database in DATA_DIR',
      )
    }
    const { restoreBackup, BackupError } = await import('../db/backup')
    let restored: Awaited<ReturnType<typeof restoreBackup>>
    try {
      restored = await restoreBackup(ctx.args.FILE!, config.dataDir, {
        force: ctx.flags.force === true,
        secretsKey: config.secretsKey,
        previousKeys: config.secretsKeysPrevious,
      })
    } catch (error) {
      if (error instanceof BackupError) throw new CliError(error.message)
      throw error
    }
    const { header } = restored
    const key = {
      same: 'verified with the secrets key here, the one its credentials were sealed with',
      previous:
        'verified with a key of SECRETS_KEY_PREVIOUS, the one its credentials were sealed with: they open; seal them again under SECRETS_KEY with `secrets rotate` once the service runs',
      different: `WARNING: verified with DATA_DIR/secrets-key, but SECRETS_KEY is another key: set SECRETS_KEY to that key (fingerprint ${header.secrets_key_fingerprint}), or add it to SECRETS_KEY_PREVIOUS, before starting, or sealed sender credentials cannot be opened`,
    }[restored.secretsKey]
    return {
      data: { ...restored },
      text: () =>
        [
          `restored ${ctx.args.FILE} (taken ${header.taken_at}, migration ${header.migration.name}) into ${restored.pgDir}`,
          ...(restored.aside ? [`the database that was there is kept in ${restored.aside}`] : []),
          key,
          `start the service: ${program.start}`,
        ].join('\n'),
    }
  },
}

export const backupCommands: Command[] = [backup, restore]
