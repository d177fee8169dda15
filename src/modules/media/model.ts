// The API's shapes of uploaded files (issue 32 §3).

import { t } from 'elysia'

export const MEDIA_RETENTION_RULE =
  'A file is kept `RETENTION_MEDIA_DAYS` (default 30) after its upload or its last send, never while a queued message names it; ' +
  "then it is deleted and its id is 404. Another account's file is 404 everywhere: here, and as a send's `media_id`."

export const MediaParams = t.Object({
  id: t.String({ description: 'The id `POST /media` answered', examples: ['med_3q2Xb0kR4mJmYw1y8eYh3A'] }),
})

export const MediaItem = t.Object(
  {
    id: t.String({ description: 'Opaque: give it as `media_id` in a send', examples: ['med_3q2Xb0kR4mJmYw1y8eYh3A'] }),
    type: t.String({ description: 'The type checked by its bytes', examples: ['application/pdf'] }),
    kind: t.Union([t.Literal('image'), t.Literal('video'), t.Literal('audio'), t.Literal('document'), t.Literal('sticker')], {
      description: 'Which media object of a send takes it',
    }),
    size: t.Integer({ description: 'Bytes', examples: [48213] }),
    sha256: t.String({ description: "The bytes' SHA-256, hex" }),
    filename: t.Union([t.String(), t.Null()], { description: 'The name it was uploaded with, if any', examples: ['invoice-88.pdf'] }),
    created_at: t.String({ description: 'Uploaded, `YYYY-MM-DD HH:MM:SS`' }),
    last_used_at: t.String({ description: 'Uploaded or last sent, `YYYY-MM-DD HH:MM:SS`: retention counts from it' }),
  },
  { description: 'An uploaded file' },
)
