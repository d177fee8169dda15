// A secret a message carries (a verification's one-time code, issue 30 §4) is never kept readable on
// the message's row: from the moment the message is charged its `body` and every value of its
// `provider_template` equal to the code show it masked (SECRET_MASK's dots, one per character), so GET
// /messages, the message pages, the inbox, exports, logs and webhooks' payloads, which all read the row,
// never show it. The provider must get the code: the hand-off is given the message as it was filled,
// and the row keeps the code sealed (AES-GCM under the secrets key, bound to the request's token) in
// provider_template.sealedSecret, so a hand-off recovered from the row (another process, after a
// crash) opens it and sends the same. Once the provider has taken the message the sealed copy is dropped
// (handoff.ts markSent, in the statement that records its SID).

import type { SecretBox } from '../../lib/secrets'
import type { NewMessage } from '../ledger/service'
import type { StoredTemplate } from '../../providers/provider'

/** One mask character per character of the secret. */
export const SECRET_MASK = '•'

const maskOf = (secret: string) => SECRET_MASK.repeat(secret.length)
// The token as the row's uuid column gives it back (lower case, no dashes), whatever form it was made in.
const contextOf = (requestToken: string) => `message-secret:${requestToken.toLowerCase().replaceAll('-', '')}`

/** Every string equal to `from` in `value` replaced by `to`. */
function swapped(value: unknown, from: string, to: string): unknown {
  if (typeof value === 'string') return value === from ? to : value
  if (Array.isArray(value)) return value.map((v) => swapped(v, from, to))
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, swapped(v, from, to)]))
  return value
}

/**
 * The message as its row keeps it: `secret` masked in its body and its template's values, and sealed
 * (for `requestToken`'s row only) in its template's `sealedSecret`. A message without a template keeps
 * nothing to open, so a secret can only go in a template's parameter.
 */
export async function sealedMessage(secrets: SecretBox, message: NewMessage, secret: string, requestToken: string): Promise<NewMessage> {
  const template = message.providerTemplate
  if (!template) throw new Error('a secret goes in a template parameter only')
  const mask = maskOf(secret)
  const sealedSecret = await secrets.seal(secret, contextOf(requestToken))
  return {
    ...message,
    body: message.body.split(secret).join(mask),
    providerTemplate: { ...(swapped(template, secret, mask) as StoredTemplate), sealedSecret },
  }
}

/**
 * A row's message as its provider must get it (a recovered hand-off): its sealed secret opened and put
 * back where it was masked. A row without one is returned as it is.
 */
export async function openedMessage<T extends { body: string; provider_template: StoredTemplate | null; request_token: string | null }>(
  secrets: SecretBox,
  row: T,
): Promise<T> {
  const template = row.provider_template
  if (!template?.sealedSecret || !row.request_token) return row
  const { sealedSecret, ...rest } = template
  const secret = await secrets.open(sealedSecret, contextOf(row.request_token))
  const mask = maskOf(secret)
  return { ...row, body: row.body.split(mask).join(secret), provider_template: swapped(rest, mask, secret) as StoredTemplate }
}

/** A stored template as shown (API, pages): without its sealed secret. */
export function shownTemplate(t: StoredTemplate | null): StoredTemplate | null {
  if (!t || t.sealedSecret === undefined) return t
  const { sealedSecret: _sealed, ...rest } = t
  return rest
}
