// A secret a message carried (a one-time code, issue 30 §4), masked in what the service keeps of the
// message once the provider has taken it: its `body` and its `provider_template` (the values of the
// template's parameters). Until then a recovered hand-off needs them as they were; after it nothing
// reads them but the account's own GET /messages, which must not show a code the service keeps only
// as a hash.

import type { Db } from '../../db/client'

/** Every string equal to `secret` in `value` replaced by `mask`. */
function masked(value: unknown, secret: string, mask: string): unknown {
  if (typeof value === 'string') return value === secret ? mask : value
  if (Array.isArray(value)) return value.map((v) => masked(v, secret, mask))
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, masked(v, secret, mask)]))
  return value
}

/**
 * Masks `secret` in the handed-over messages of a request (its token): each occurrence in the body,
 * each parameter value equal to it in provider_template. A message not handed over yet (no SID) keeps it.
 */
export async function maskSentSecret(sql: Db, requestToken: string, secret: string): Promise<number> {
  const mask = '*'.repeat(secret.length)
  const rows = await sql<{ id: number; body: string; provider_template: unknown }[]>`
    select id, body, provider_template from messages where request_token = ${requestToken} and message_sid is not null`
  for (const row of rows) {
    const stored = typeof row.provider_template === 'string' ? JSON.parse(row.provider_template) : row.provider_template
    const template = stored === null ? null : masked(stored, secret, mask)
    await sql`
      update messages set body = ${row.body.split(secret).join(mask)}, provider_template = ${template === null ? null : sql.json(template as Parameters<typeof sql.json>[0])}
      where id = ${row.id} and request_token = ${requestToken}`
  }
  return rows.length
}
