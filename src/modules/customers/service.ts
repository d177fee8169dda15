// Links between WhatsApp business-scoped user ids and phones (issue 32): the only SQL on customer_links.
// What Meta said of a user id and a phone seen together, per number it said it on (a sender, or 0 for the
// deployment's number): a user id is Meta's per business portfolio, and a link is only as trustworthy as
// the signature that brought it. modules/inbound/customers.ts records links and re-keys the customer's rows;
// here they are read: a send resolves a user id to its phone through the sender it goes through, an
// account's request through the numbers the account sends through.

import type { Db, Fragment } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import { isUserId } from '../../lib/user-id'
import type { SenderRef } from '../../providers/provider'

const senderKey = (senderId: SenderRef) => senderId ?? 0

/** The phone linked to `userId` on the number, or null. */
export async function linkedPhone(db: Db, senderId: SenderRef, userId: string): Promise<string | null> {
  const [row] = await db<{ phone: string }[]>`
    select phone from customer_links where sender_key = ${senderKey(senderId)} and user_id = ${userId}`
  return row?.phone ?? null
}

/** The user id linked to `phone` on the number (the latest Meta named), or null. */
export async function linkedUserId(db: Db, senderId: SenderRef, phone: string): Promise<string | null> {
  const [row] = await db<{ user_id: string }[]>`
    select user_id from customer_links where sender_key = ${senderKey(senderId)} and phone = ${phone} order by updated_at desc limit 1`
  return row?.user_id ?? null
}

/**
 * A customer's key as an account's request names it (a filter, a path, an opt-out): a user id linked to a
 * phone on one of the numbers the account sends through (its senders, or the deployment's number) is that
 * phone; anything else is itself. Another account's links are never read.
 */
export async function accountCustomerKey(db: Db, accountId: number, key: string): Promise<string> {
  if (!isUserId(key)) return key
  const [row] = await db<{ phone: string }[]>`
    select l.phone from customer_links l
    where l.user_id = ${key}
      and (l.sender_key = 0 or exists (select 1 from account_senders a where a.account_id = ${accountId} and a.sender_id = l.sender_key))
    order by l.updated_at desc limit 1`
  return row?.phone ?? key
}

/**
 * The user id of a message's customer, as SQL for its message.status event: its `to` (`phone`) when that is
 * a user id, else the user id linked to that phone on its number (`sender`: the message's sender_id), else
 * null. Read when the event is written: a link Meta made after the send shows too.
 */
export const messageUserId = (db: Db, sender: Fragment, phone: Fragment): Fragment => db`
  case when ${phone} ~ '^[A-Z]{2}\\.' then ${phone}
       else (select l.user_id from customer_links l
             where l.sender_key = coalesce(${sender}, 0) and l.phone = ${phone} order by l.updated_at desc limit 1) end`

/** Records that `userId` is `phone` on the number (a later word replaces an earlier one); false when it said so already. */
export async function recordLink(
  db: Db,
  clock: Pick<Clock, 'sqlNow'>,
  senderId: SenderRef,
  userId: string,
  phone: string,
): Promise<boolean> {
  // updated_at orders a phone's links (the latest Meta named wins): the clock's time, as every decision's.
  const rows = await db`
    insert into customer_links (sender_key, user_id, phone, updated_at)
    values (${senderKey(senderId)}, ${userId}, ${phone}, ${nowOf(db, clock)})
    on conflict (sender_key, user_id) do update set phone = excluded.phone, updated_at = excluded.updated_at
      where customer_links.phone is distinct from excluded.phone
    returning 1`
  return rows.length > 0
}

/** A customer changed: the number's links of `previousUserId` go (it names nobody now), those of `previousPhone` follow to `phone`. */
export async function moveLinks(
  db: Db,
  clock: Pick<Clock, 'sqlNow'>,
  senderId: SenderRef,
  change: { previousUserId: string | null; previousPhone: string | null; phone: string | null },
): Promise<void> {
  if (change.previousUserId !== null)
    await db`delete from customer_links where sender_key = ${senderKey(senderId)} and user_id = ${change.previousUserId}`
  if (change.previousPhone !== null && change.phone !== null && change.previousPhone !== change.phone)
    await db`
      update customer_links set phone = ${change.phone}, updated_at = ${nowOf(db, clock)}
      where sender_key = ${senderKey(senderId)} and phone = ${change.previousPhone}`
}
