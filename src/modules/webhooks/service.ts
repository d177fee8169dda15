// The callback URL of an API key. Registration applies the same scheme rule, resolver and address rule
// as every delivery (lib/address.ts); delivery checks again on the address it connects to.

import type { Sql } from '../../db/client'
import type { Principal } from '../../http/auth'
import { ApiError, badValue } from '../../http/errors'
import { resolveWebhookHost, webhookSchemeProblem } from '../../lib/address'
import { newSigningSecret } from '../../lib/keys'

const MAX_WEBHOOK_URL = 2048

/** The URL as it will be called, once it passes every rule; 422 naming the rule otherwise. */
async function validateWebhookUrl(value: string, allowPrivate: boolean): Promise<string> {
  if (value.length > MAX_WEBHOOK_URL) throw badValue(`url: must be at most ${MAX_WEBHOOK_URL} characters`)
  let url: URL
  try {
    url = new URL(value.trim())
  } catch {
    throw badValue('url: must be an absolute https URL')
  }
  const scheme = webhookSchemeProblem(url, allowPrivate)
  if (scheme) throw badValue(`url: ${scheme}`)
  // Normalising can lengthen it (percent-encoding); the stored form must fit too.
  if (url.href.length > MAX_WEBHOOK_URL) throw badValue(`url: must be at most ${MAX_WEBHOOK_URL} characters`)
  const check = await resolveWebhookHost(url.hostname, allowPrivate)
  if (!check.ok) throw badValue(`url: ${check.reason}`)
  return url.href
}

export async function registerWebhook(sql: Sql, principal: Principal, input: { url: string }, allowPrivate: boolean) {
  const url = await validateWebhookUrl(input.url, allowPrivate)
  // The secret is chosen once per registration: replacing the URL keeps it, so receivers need not re-key.
  const [row] = await sql<{ url: string; signing_secret: string }[]>`
    insert into webhook_endpoints (api_key_id, url, signing_secret) values (${principal.keyId}, ${url}, ${newSigningSecret()})
    on conflict (api_key_id) do update set url = excluded.url, updated_at = now()
    returning url, signing_secret`
  return row!
}

export async function getWebhook(sql: Sql, principal: Principal) {
  const [row] = await sql<{ url: string }[]>`select url from webhook_endpoints where api_key_id = ${principal.keyId}`
  if (!row) throw new ApiError('NOT_FOUND', 'no webhook is registered for this API key')
  return { url: row.url }
}

export async function deleteWebhook(sql: Sql, principal: Principal) {
  const [row] = await sql`delete from webhook_endpoints where api_key_id = ${principal.keyId} returning api_key_id`
  if (!row) throw new ApiError('NOT_FOUND', 'no webhook is registered for this API key')
  return { deleted: true as const }
}

/** An account's API keys, each with its registered URL (null when none); the dashboard's list. */
export async function listKeyWebhooks(sql: Sql, accountId: number) {
  return sql<{ key_id: number; label: string; prefix: string; active: boolean; url: string | null }[]>`
    select k.id as key_id, k.label, k.prefix, k.active, w.url
    from api_keys k left join webhook_endpoints w on w.api_key_id = k.id
    where k.account_id = ${accountId}
    order by k.id`
}

/** The signing secret of a key's registration, for showing it once on request. */
export async function webhookSecret(sql: Sql, principal: Principal): Promise<string> {
  const [row] = await sql<{ signing_secret: string }[]>`
    select signing_secret from webhook_endpoints where api_key_id = ${principal.keyId}`
  if (!row) throw new ApiError('NOT_FOUND', 'no webhook is registered for this API key')
  return row.signing_secret
}

/**
 * A test event through the normal outbox: signed and retried like any delivery, shaped as a
 * `message.status` event of no real message, with `data.test: true` (and message_id null). It goes to
 * the key's registered URL (a delivery) and, like every event of the key, to its listeners (`admin
 * webhook listen`); a key without a URL but with a live listener gets it for the listeners only. 404
 * when the key has neither. The caller wakes the delivery loop and the listeners (eventsCommitted).
 */
export async function sendTestEvent(sql: Sql, timezone: string, keyId: number) {
  const [row] = await sql<{ id: number; webhook_id: string; url: string | null }[]>`
    with target as (
      select k.id as api_key_id, w.url, case when w.api_key_id is null then 'listen_only' else 'pending' end as status
      from api_keys k
      left join webhook_endpoints w on w.api_key_id = k.id
      left join webhook_listeners l on l.api_key_id = k.id and l.listening_until > now()
      where k.id = ${keyId} and (w.api_key_id is not null or l.api_key_id is not null)
    ), event as (
      insert into webhook_events (webhook_id, api_key_id, message_id, payload, status)
      select ${newWebhookId()}, t.api_key_id, null, ${testPayloadSql(sql, timezone)}, t.status
      from target t
      returning id, webhook_id
    )
    select e.id, e.webhook_id, t.url from event e cross join target t`
  if (!row) throw new ApiError('NOT_FOUND', `API key ${keyId} has no webhook URL and no listener`)
  return row
}

/** A new `webhook-id`: the same shape as the outbox's (msg_ + 32 hex digits). */
export const newWebhookId = () => `msg_${crypto.randomUUID().replaceAll('-', '')}`

/** The test event's body (see sendTestEvent), as SQL: compact, in the spec's field order, stamped now. */
export const testPayloadSql = (sql: Sql, timezone: string) =>
  sql`message_status_payload(to_char(now() at time zone ${timezone}, 'YYYY-MM-DD HH24:MI:SS'), 'test', 'test', 'delivered', 'sent', null, null, true)`
