// Customers known by a WhatsApp business-scoped user id (issue 32): following what Meta says of them.
//
// A customer is a phone, a user id (`ID.1349…`: Meta's name for a user who hides the phone behind a
// username), or both. Every table that keys a customer by `phone` holds the customer's key: the phone
// when one is known, else the user id. When Meta names both together (an inbound message's `from` with
// its `from_user_id`, or `contacts[].wa_id` with `contacts[].user_id`), the link is recorded for the
// number it came through and the user id's rows take the phone as their key (rekey): its inbound
// messages and conversation holder on that number, and its opt-outs and contact in the accounts that
// send through that number. From then on either id finds the customer: a send to the user id goes to
// the phone's key (resolveRecipient), so its window, opt-out and budget are the phone's. A changed number
// or user id (Meta's system messages) moves the key the same way.
//
// Scope: a user id is Meta's per business portfolio, and a link is only as trustworthy as the signature
// that brought it, so links are kept per number (modules/customers) and a rekey
// touches only the accounts that send through that number: one tenant's signed webhook never re-keys
// another tenant's customers, and a send finds a user id's phone only through the number that learned it.
// A rekey moves the customer's messaging-limit uses in the number's budget too (modules/budgets): a
// customer messaged first by user id, then by phone once linked, counts once.

import type { Db, Tx } from '../../db/client'
import type { Clock } from '../../lib/clock'
import type { CustomerIds, SenderRef, SignedIdentityChange, SignedReport } from '../../providers/provider'
import { isUserId } from '../../lib/user-id'
import { linkedPhone, moveLinks, recordLink } from '../customers/service'
import { rekeyOptOuts } from '../optouts/service'
import { rekeyContacts } from '../contacts/service'
import { rekeyUses } from '../budgets/service'
import { rekeyHolder } from './holders'
import { inboundPhone } from './phone'

/** The accounts whose customers a number's links may re-key: those it is given to; every account for the deployment's number. */
async function accountsOf(tx: Db, senderId: SenderRef): Promise<number[] | null> {
  if (senderId === null) return null
  const rows = await tx<{ account_id: number }[]>`select account_id from account_senders where sender_id = ${senderId}`
  return rows.map((r) => Number(r.account_id))
}

/**
 * The key a customer named by `ids` is stored under on the number: the phone (normalised), else the phone
 * linked to the user id, else the user id; null when neither id is readable.
 */
export async function customerKey(db: Db, senderId: SenderRef, ids: CustomerIds): Promise<string | null> {
  const phone = ids.phone ? inboundPhone(ids.phone) : null
  if (phone) return phone
  if (!ids.userId || !isUserId(ids.userId)) return null
  return (await linkedPhone(db, senderId, ids.userId)) ?? ids.userId
}

/** The customer's rows keyed `from` take the key `to`, on the number and in the accounts it is given to. */
async function rekey(tx: Tx, senderId: SenderRef, from: string, to: string, userId: string | null): Promise<void> {
  const accounts = await accountsOf(tx, senderId)
  if (from !== to) {
    await tx`update inbound_messages set phone = ${to} where sender_id is not distinct from ${senderId} and phone = ${from}`
    await rekeyHolder(tx, senderId, from, to)
    await rekeyOptOuts(tx, accounts, from, to)
    await rekeyUses(tx, senderId, from, to)
  }
  await rekeyContacts(tx, accounts, from, to, userId)
}

/** Meta named `userId` and `phone` (normalised) together on the number: the link, and the user id's rows take the phone's key. */
export async function linkCustomer(
  tx: Tx,
  clock: Pick<Clock, 'sqlNow'>,
  senderId: SenderRef,
  userId: string,
  phone: string,
): Promise<void> {
  if (await recordLink(tx, clock, senderId, userId, phone)) await rekey(tx, senderId, userId, phone, userId)
}

/**
 * Follows a changed number or user id (Meta's `user_changed_number` / `user_changed_user_id`): the
 * customer's rows on the number move from the previous key to the current one, and its links follow.
 */
export async function followIdentityChange(tx: Tx, clock: Pick<Clock, 'sqlNow'>, change: SignedIdentityChange): Promise<void> {
  const { sender } = change
  const previousUserId = change.previous.userId && isUserId(change.previous.userId) ? change.previous.userId : null
  const userId = change.current.userId && isUserId(change.current.userId) ? change.current.userId : null
  const previousPhone = change.previous.phone ? inboundPhone(change.previous.phone) : null
  const phone = change.current.phone ? inboundPhone(change.current.phone) : null
  const from = await customerKey(tx, sender, { phone: previousPhone, userId: previousUserId })
  // A known phone stays the key; a customer known only by user id is keyed by the new one.
  const to = phone ?? (from !== null && !isUserId(from) ? from : userId)
  if (from === null || to === null) return
  await moveLinks(tx, clock, sender, { previousUserId: previousUserId === userId ? null : previousUserId, previousPhone, phone })
  if (userId !== null && !isUserId(to)) await recordLink(tx, clock, sender, userId, to)
  await rekey(tx, sender, from, to, userId)
}

/**
 * A status report naming both of its recipient's ids (Meta's `recipient_id` with `recipient_user_id`) links
 * them on the number that sent the message: only a message of a sender whose signature brought the report
 * (one tenant's own signed webhook never links another's customer by naming its message), and only when the
 * message went to one of the two ids.
 */
export async function linkFromStatus(tx: Tx, clock: Pick<Clock, 'sqlNow'>, report: SignedReport): Promise<void> {
  const userId = report.recipient?.userId && isUserId(report.recipient.userId) ? report.recipient.userId : null
  const phone = report.recipient?.phone ? inboundPhone(report.recipient.phone) : null
  if (userId === null || phone === null) return
  const [message] = await tx<{ sender_id: number | null }[]>`
    select sender_id from messages
    where message_sid = ${report.sid} and coalesce(sender_id, 0) = any(${report.senders.map((id) => id ?? 0)}::bigint[])
      and phone = any(${[userId, phone]}::text[])
    limit 1`
  if (message) await linkCustomer(tx, clock, message.sender_id === null ? null : Number(message.sender_id), userId, phone)
}
