// Who may create, edit and delete a sender's WhatsApp templates (issue 30): the operator (the admin
// token, an operator's session) any sender's, the deployment's default sender's included; a member only
// where the operator allows it for the member's account (template_member_rights, off by default, sql/0041),
// and then only the templates of the account's OWN senders: never the deployment's default sender (the
// operator's number, shared by every account without senders), never another account's sender. A sender
// the member may not touch is as unknown as a missing one (404), so a member learns nothing of other
// tenants' senders; a member of an account without the permission is refused (403).

import type { Db } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import { ApiError } from '../../http/errors'
import type { Actor } from '../users/service'
import type { ChangeSource } from './catalog'

/** Who changes a template (for its audit row too): the operator (the admin token: no user), or a member of an account. */
export type TemplateActor = Actor & ({ kind: 'operator' } | { kind: 'member'; accountId: number })

/** The admin token's actor. */
export const ADMIN_ACTOR: TemplateActor = { kind: 'operator', user: null, address: null }

/** The history's source of an actor's change. */
export const sourceOf = (actor: TemplateActor): ChangeSource => (actor.kind === 'member' ? 'member' : 'operator')

/** Whether the account's members may create, edit and delete its own senders' templates. */
export async function membersMayChange(sql: Db, accountId: number): Promise<boolean> {
  const [row] = await sql`select 1 from template_member_rights where account_id = ${accountId}`
  return row !== undefined
}

/** The account's permission as the admin API shows it; 404 for an account that does not exist. */
export async function memberRights(sql: Db, accountId: number) {
  const [row] = await sql<{ allowed: boolean }[]>`
    select exists (select 1 from template_member_rights where account_id = a.id) as allowed from accounts a where a.id = ${accountId}`
  if (!row) throw new ApiError('NOT_FOUND', `account ${accountId} not found`)
  return { account_id: accountId, members_create_templates: row.allowed }
}

/** Grants or takes back the permission; 404 for an account that does not exist. Whether it changed. */
export async function setMembersMayChange(sql: Db, clock: Pick<Clock, 'sqlNow'>, accountId: number, allowed: boolean): Promise<boolean> {
  const [account] = await sql`select id from accounts where id = ${accountId}`
  if (!account) throw new ApiError('NOT_FOUND', `account ${accountId} not found`)
  const rows = allowed
    ? await sql`insert into template_member_rights (account_id, granted_at) values (${accountId}, ${nowOf(sql, clock)}) on conflict do nothing returning account_id`
    : await sql`delete from template_member_rights where account_id = ${accountId} returning account_id`
  return rows.length > 0
}

/**
 * Refuses an actor the templates of sender `senderId` (null: the deployment's default sender) unless it
 * may change them: an operator always; a member only for a sender of its own account whose members the
 * operator allows it (403 without the permission; 404 for any other sender, the default one included).
 */
export async function requireMayChange(sql: Db, actor: TemplateActor, senderId: number | null): Promise<void> {
  if (actor.kind === 'operator') return
  const notFound = () => new ApiError('NOT_FOUND', `sender ${senderId ?? 0} not found`)
  if (senderId === null) throw notFound()
  const [own] = await sql`select 1 from account_senders where account_id = ${actor.accountId} and sender_id = ${senderId}`
  if (!own) throw notFound()
  if (!(await membersMayChange(sql, actor.accountId))) {
    throw new ApiError('FORBIDDEN', "this account's members may not create, edit or delete WhatsApp templates: the operator allows it")
  }
}
