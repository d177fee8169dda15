// Signed, expiring links to uploaded files (issue 32 §3), for a provider that fetches media by URL
// (Twilio's MediaUrl): `{PUBLIC_BASE_URL}/media/{id}?expires={epoch seconds}&sig={signature}`, the
// signature a keyed digest (HMAC-SHA-256, lib/secrets.ts) of the id and the expiry under the
// deployment's secrets key, so only this service makes them, each for one file and until its time. The
// route needs no credentials: a bad signature is 403, an expired link 403, a file gone 404; a good one
// serves the bytes with their Content-Type.

import { t } from 'elysia'
import type { Deps } from '../../deps'
import { callbackRoutes } from '../../http/groups'
import { ApiError } from '../../http/errors'
import { errorsOf } from '../../http/openapi'
import { safeFilename } from '../inbound/media-view'
import { MEDIA_ID, mediaBytes } from './service'
import { LINK_CONTEXT, MEDIA_LINK_SECONDS } from './signing'

const LinkQuery = t.Object({
  expires: t.Optional(t.String({ description: 'When the link stops working (seconds since the epoch)', examples: ['1767225600'] })),
  sig: t.Optional(t.String({ description: "The service's signature of the id and the expiry" })),
})

const DESCRIPTION =
  'A file uploaded with `POST /api/v1/media`, as a provider that fetches media by URL gets it (Twilio: the `MediaUrl` of a ' +
  "message sent with `media_id`). The link is made at hand-off, signed with the service's secrets key (HMAC-SHA-256 of the " +
  `id and the expiry) and valid ${MEDIA_LINK_SECONDS / 3600} hours; no credentials. The bytes come with their Content-Type, ` +
  "Content-Length, `X-Content-Type-Options: nosniff` and a Content-Disposition with the file's name. A missing or bad " +
  'signature, or an expired link: 403 `FORBIDDEN`; a file deleted since (RETENTION_MEDIA_DAYS): 404 `NOT_FOUND`.'

export function mediaLinks(deps: Pick<Deps, 'sql' | 'clock' | 'secrets'>) {
  return callbackRoutes('media-links').get(
    '/media/:id',
    async ({ params, query }) => {
      const expires = Number(query.expires)
      const valid =
        MEDIA_ID.test(params.id) &&
        /^\d{1,12}$/.test(query.expires ?? '') &&
        typeof query.sig === 'string' &&
        (await deps.secrets.matchesDigest(`${params.id}.${expires}`, LINK_CONTEXT, query.sig))
      if (!valid) throw new ApiError('FORBIDDEN', 'this media link is not signed by this service (a link is made for each hand-off)')
      if (expires * 1000 <= deps.clock.now().getTime()) throw new ApiError('FORBIDDEN', 'this media link has expired')
      const file = await mediaBytes(deps.sql, deps.clock, params.id)
      if (!file) throw new ApiError('NOT_FOUND', 'this file is gone (kept RETENTION_MEDIA_DAYS after its last use)')
      const name = safeFilename(file.filename, `${params.id}.${file.mime_type.split('/')[1]}`)
      return new Response(new Uint8Array(file.bytes), {
        headers: {
          'content-type': file.mime_type === 'text/plain' ? 'text/plain; charset=utf-8' : file.mime_type,
          'content-length': String(file.bytes.byteLength),
          'x-content-type-options': 'nosniff',
          'cache-control': 'private, no-store',
          etag: `"${file.sha256}"`,
          'content-disposition': `${file.kind === 'document' ? 'attachment' : 'inline'}; filename="${name.ascii}"`,
        },
      })
    },
    {
      query: LinkQuery,
      response: errorsOf(403, 404),
      detail: {
        tags: ['Provider callbacks'],
        security: [],
        summary: 'An uploaded file, by a signed link (for providers)',
        description: DESCRIPTION,
        responses: {
          200: {
            description: 'The file',
            content: {
              'application/octet-stream': { schema: { type: 'string', description: "The bytes; the real Content-Type is the file's" } },
            },
          },
        },
      },
    },
  )
}
