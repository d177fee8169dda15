// The callback URL of an API key. Registration applies the same scheme rule, resolver and address rule
// as every delivery (lib/address.ts); delivery checks again on the address it connects to.

import type { Sql } from '../../db/client'
import type { Principal } from '../../http/auth'
import { ApiError, badValue } from '../../http/errors'
import { resolveWebhookHost, webhookSchemeProblem } from '../../lib/address'
import { newSigningSecret } from '../../lib/keys'
import { DEFAULT_EVENTS, EVENT_TYPES, type EventType } from './model'

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

/**
 * The events chosen, each once, in the order of EVENT_TYPES; undefined when not given. 422 naming the
 * unknown ones, or for an empty list.
 */
export function validateEvents(events: string[] | undefined): EventType[] | undefined {
  if (events === undefined) return undefined
  const unknown = [...new Set(events.filter((e) => !(EVENT_TYPES as readonly string[]).includes(e)))]
  if (unknown.length > 0) {
    const names = unknown.slice(0, 5).map((e) => JSON.stringify(e.slice(0, 40)))
    throw badValue(`events: unknown event${unknown.length === 1 ? '' : 's'} ${names.join(', ')}; known: ${EVENT_TYPES.join(', ')}`)
  }
  if (events.length === 0) throw badValue(`events: must name at least one of ${EVENT_TYPES.join(', ')}`)
  return EVENT_TYPES.filter((e) => events.includes(e))
}

export async function registerWebhook(sql: Sql, principal: Principal, input: { url: string; events?: string[] }, allowPrivate: boolean) {
  const events = validateEvents(input.events)
  const url = await validateWebhookUrl(input.url, allowPrivate)
  // The secret is chosen once per registration: replacing the URL keeps it, so receivers need not re-key.
  // The events too, unless the replacement names them.
  const [row] = await sql<{ url: string; signing_secret: string; events: string[] }[]>`
    insert into webhook_endpoints (api_key_id, url, signing_secret, events)
    values (${principal.keyId}, ${url}, ${newSigningSecret()}, ${events ?? DEFAULT_EVENTS}::text[])
    on conflict (api_key_id) do update
      set url = excluded.url, events = coalesce(${events ?? null}::text[], webhook_endpoints.events), updated_at = now()
    returning url, signing_secret, events`
  return row!
}

export async function getWebhook(sql: Sql, principal: Principal) {
  const [row] = await sql<{ url: string; events: string[] }[]>`
    select url, events from webhook_endpoints where api_key_id = ${principal.keyId}`
  if (!row) throw new ApiError('NOT_FOUND', 'no webhook is registered for this API key')
  return { url: row.url, events: row.events }
}

export async function deleteWebhook(sql: Sql, principal: Principal) {
  const [row] = await sql`delete from webhook_endpoints where api_key_id = ${principal.keyId} returning api_key_id`
  if (!row) throw new ApiError('NOT_FOUND', 'no webhook is registered for this API key')
  return { deleted: true as const }
}

/** An account's API keys, each with its registered URL (null when none); the dashboard's list. */
export async function listKeyWebhooks(sql: Sql, accountId: number) {
  return sql<{ key_id: number; label: string; prefix: string; active: boolean; url: string | null; events: string[] | null }[]>`
    select k.id as key_id, k.label, k.prefix, k.active, w.url, w.events
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
