// GET /admin/v1/backup: a consistent backup of the embedded database, taken by the running service
// (the only process that may read DATA_DIR's database) and sent whole. The format is db/backup.ts's.

import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { UNTIMED } from '../../http/routes'
import { ApiError } from '../../http/errors'
import { errorsOf } from '../../http/openapi'

export const backupsAdmin = (deps: Deps) =>
  adminRoutes(deps.config).get(
    '/backup',
    async () => {
      if (!deps.backup) {
        throw new ApiError(
          'CONFLICT',
          deps.config.databaseUrl
            ? 'this service uses PostgreSQL (DATABASE_URL): back it up with pg_dump (e.g. pg_dump -Fc -f FILE "$DATABASE_URL"); backup is for the embedded database'
            : 'this service keeps its database in memory: there is nothing to back up',
          409,
        )
      }
      const { bytes, header } = await deps.backup()
      const name = `messaging-api-${header.taken_at.replace(/[:.]/g, '-')}.backup`
      return new Response(bytes, {
        headers: {
          'content-type': 'application/octet-stream',
          'content-disposition': `attachment; filename="${name}"`,
          'cache-control': 'no-store',
          'x-backup-pause-ms': String(header.pause_ms),
        },
      })
    },
    {
      response: errorsOf(401, 409),
      detail: {
        ...UNTIMED, // a large database takes a while to read and compress before the first byte
        tags: ['Admin'],
        summary: 'Back up the embedded database',
        description: [
          'A consistent copy of the embedded database (PGlite in `DATA_DIR`), taken while the service serves: what',
          '`admin backup FILE` saves. Statements wait while the database is checkpointed and its files are read',
          '(`x-backup-pause-ms` says how long); no transaction is half in the copy. Restore it with `admin restore FILE`',
          'while the service is stopped.',
          '',
          'The body: one line of JSON (the header: `format` `messaging-api-backup`, `format_version` 2, `service_version`,',
          '`taken_at`, `migration` {version, name}, `pause_ms`, `secrets_key_fingerprint`, `payload` {bytes, sha256},',
          "`hmac`), then a gzip'd tar of `DATA_DIR/pgdata` of `payload.bytes` bytes. The secrets key is not in it;",
          '`hmac` (HMAC-SHA256 of the header line without it, keyed by HMAC-SHA256(secrets key, "messaging-api backup"))',
          'is what restore verifies with the key: the checksum alone finds accidents, not tampering.',
          '',
          '409 `CONFLICT` when the service uses PostgreSQL (`DATABASE_URL`: back it up with `pg_dump`) or an in-memory database.',
        ].join('\n'),
        responses: {
          200: {
            description: 'The backup file',
            content: {
              'application/octet-stream': { schema: { type: 'string', description: "A header line of JSON, then a gzip'd tar" } },
            },
          },
          ...Object.fromEntries(
            Object.entries(errorsOf(401, 409)).map(([status, schema]) => [
              status,
              { description: schema.description ?? 'Error', content: { 'application/json': { schema } } },
            ]),
          ),
        },
      },
    },
  )
