// Single-use form tokens: a creating or money-moving form carries one, and the change it asks for
// records the token's use in its own transaction, so a form sent twice (a reload of an old answer,
// the back button, a double click, a replayed request) is done once and refused after that.
//
// A token is a random nonce and its HMAC under the session's CSRF token, so it is issued by this
// service for this session and needs no row until it is used. A session lives at most ABSOLUTE_HOURS,
// and with it the key of its tokens, so used nonces older than that can never come back and are deleted.

import type { Tx } from '../db/client'
import { nowOf } from '../db/now'
import type { Clock } from '../lib/clock'
import { constantTimeEqual, randomBase62 } from '../lib/keys'
import { ABSOLUTE_HOURS, type Session } from './session'

/** The form field that carries the token. */
export const FORM_TOKEN = '_once'

const macOf = (session: Session, nonce: string) => new Bun.CryptoHasher('sha256', session.csrf).update(nonce).digest('hex').slice(0, 32)

export function issueFormToken(session: Session): string {
  const nonce = randomBase62(22)
  return `${nonce}.${macOf(session, nonce)}`
}

/** The nonce of a token this session was issued, or null (missing, malformed, another session's). */
export function formTokenNonce(session: Session, value: string): string | null {
  const [nonce, mac, ...rest] = value.split('.')
  if (!nonce || !mac || rest.length > 0 || !/^[0-9A-Za-z]{22}$/.test(nonce)) return null
  return constantTimeEqual(mac, macOf(session, nonce)) ? nonce : null
}

/** Records the nonce's use in the caller's transaction: false when it was used already. */
export async function useFormToken(tx: Tx, clock: Pick<Clock, 'sqlNow'>, nonce: string): Promise<boolean> {
  const now = nowOf(tx, clock)
  await tx`
    delete from form_tokens where nonce in (
      select nonce from form_tokens where used_at < ${now} - make_interval(hours => ${ABSOLUTE_HOURS}) limit 100 for update skip locked
    )`
  const [row] = await tx`insert into form_tokens (nonce, used_at) values (${nonce}, ${now}) on conflict do nothing returning 1`
  return row !== undefined
}
