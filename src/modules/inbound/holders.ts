// Who holds a customer's conversation on a number several accounts send through (the deployment's
// default number, or a stored sender given to several accounts): the only SQL on conversation_holders.
// The rule that sets a holder is accountOf in service.ts; here an operator sees holders and moves a
// conversation to another account (optionally with the messages it already received there), audited.

import { transaction, type Db, type Sql } from '../../db/client'
import { ApiError, badValue } from '../../http/errors'
import { page } from '../../http/values'
import { pageOf } from '../../lib/validate'
import type { SenderRef } from '../../providers/provider'
import { ensureContact } from '../contacts/service'
import { audit, type Actor } from '../users/service'
import type { ConversationHolderQuery, MoveConversationBody } from './model'
import { requireInboundPhone } from './phone'

/** How a holder came to hold: the first message sent, the customer's quoted reply, or an operator. */
export type HolderSource = 'first_message' | 'reply' | 'operator'

/** Records (or moves) who holds the phone's conversation on a number. */
export async function holdConversation(db: Db, senderId: SenderRef, phone: string, accountId: number, source: HolderSource): Promise<void> {
  await db`
    insert into conversation_holders (sender_id, phone, account_id, source)
    values (${senderId}, ${phone}, ${accountId}, ${source})
    on conflict (coalesce(sender_id, 0), phone) do update set account_id = excluded.account_id, source = excluded.source, updated_at = now()`
}

/** A customer's key changed on a number (issue 32): its conversation is held under `to`, unless `to`'s is held already. */
export async function rekeyHolder(db: Db, senderId: SenderRef, from: string, to: string): Promise<void> {
  const number = db`coalesce(sender_id, 0) = coalesce(${senderId}::bigint, 0)`
  await db`
    delete from conversation_holders where ${number} and phone = ${from}
      and exists (select 1 from conversation_holders k where coalesce(k.sender_id, 0) = coalesce(${senderId}::bigint, 0) and k.phone = ${to})`
  await db`update conversation_holders set phone = ${to}, updated_at = now() where ${number} and phone = ${from}`
}

type Row = { sender_id: number | null; phone: string; account_id: number; source: HolderSource; updated_at: Date }

const view = (r: Row) => ({
  sender_id: r.sender_id === null ? null : Number(r.sender_id),
  phone: r.phone,
  account_id: Number(r.account_id),
  source: r.source,
  updated_at: r.updated_at,
})
export type HolderView = ReturnType<typeof view>

/** `sender_id` of a query or body: `default` or null for the deployment's number, else a sender id. */
function senderOf(value: number | string | null | undefined): SenderRef | undefined {
  if (value === undefined) return undefined
  if (value === null || value === 'default') return null
  const id = Number(value)
  if (!Number.isSafeInteger(id) || id < 1) throw badValue("sender_id: a sender's id, or default for the deployment's number")
  return id
}

/** GET /admin/v1/conversation-holders: newest change first, filtered by phone, account and number. */
export async function listHolders(sql: Sql, query: ConversationHolderQuery) {
  const p = page(query)
  const phone = query.phone === undefined ? null : requireInboundPhone(query.phone, 'phone')
  const sender = senderOf(query.sender_id)
  if (query.account_id !== undefined && (!Number.isSafeInteger(query.account_id) || query.account_id < 1)) {
    throw badValue('account_id: an account id (a positive integer)')
  }
  const where = sql`
    where (${phone}::text is null or phone = ${phone})
      and (${query.account_id ?? null}::bigint is null or account_id = ${query.account_id ?? null})
      and (${sender === undefined} or coalesce(sender_id, 0) = coalesce(${sender ?? null}::bigint, 0))`
  const rows = await sql<Row[]>`
    select sender_id, phone, account_id, source, updated_at from conversation_holders ${where}
    order by updated_at desc, phone limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from conversation_holders ${where}`
  return pageOf(rows.map(view), count!.n, p)
}

/** The holder of one conversation, or null when nobody holds it yet. */
export async function holderOf(db: Db, senderId: SenderRef, phone: string): Promise<HolderView | null> {
  const [row] = await db<Row[]>`
    select sender_id, phone, account_id, source, updated_at from conversation_holders
    where coalesce(sender_id, 0) = coalesce(${senderId}::bigint, 0) and phone = ${phone}`
  return row ? view(row) : null
}

/**
 * PUT /admin/v1/conversation-holders: the phone's conversation on the number goes to `account_id` (its
 * next unquoted replies, opt-outs and message.received events); with `move_messages`, the messages the
 * phone already sent to that number go to it too (with a contact made for them there). The account must
 * send through the number: any account for the deployment's number, one it is given to for a stored sender.
 */
export async function moveConversation(sql: Sql, actor: Actor, input: MoveConversationBody) {
  const phone = requireInboundPhone(input.phone, 'phone')
  const senderId = senderOf(input.sender_id ?? null)!
  return transaction(sql, async (tx) => {
    const [account] = await tx<{ id: number }[]>`select id from accounts where id = ${input.account_id}`
    if (!account) throw new ApiError('NOT_FOUND', `account ${input.account_id} not found`)
    if (senderId !== null) {
      const [sender] = await tx`select 1 from senders where id = ${senderId}`
      if (!sender) throw new ApiError('NOT_FOUND', `sender ${senderId} not found`)
      const [given] = await tx`select 1 from account_senders where sender_id = ${senderId} and account_id = ${input.account_id}`
      if (!given)
        throw badValue(`account_id: account ${input.account_id} does not send through sender ${senderId}; give it the sender first`)
    }
    const before = await holderOf(tx, senderId, phone)
    await holdConversation(tx, senderId, phone, input.account_id, 'operator')
    let moved = 0
    if (input.move_messages) {
      const [{ name } = { name: null }] = await tx<{ name: string | null }[]>`
        select name from inbound_messages where phone = ${phone} and sender_id is not distinct from ${senderId} and name is not null
        order by received_at desc limit 1`
      const contactId = await ensureContact(tx, input.account_id, phone, name ?? phone)
      const rows = await tx`
        update inbound_messages set account_id = ${input.account_id}, contact_id = ${contactId}
        where phone = ${phone} and sender_id is not distinct from ${senderId} and account_id is distinct from ${input.account_id}
        returning 1`
      moved = rows.length
    }
    await audit(tx, {
      ...actor,
      accountId: input.account_id,
      action: 'conversation moved',
      detail: { phone, sender_id: senderId, from_account_id: before?.account_id ?? null, messages_moved: moved },
    })
    return { ...(await holderOf(tx, senderId, phone))!, messages_moved: moved }
  })
}

/**
 * Whether a phone's conversation on a number is one several accounts may hold (the deployment's number,
 * or a stored sender given to more than one account), and who holds it: for the operator's inbox.
 */
export async function sharedConversation(db: Db, senderId: SenderRef, phone: string) {
  const [given] =
    senderId === null ? [{ n: 2 }] : await db<{ n: number }[]>`select count(*)::int as n from account_senders where sender_id = ${senderId}`
  return { shared: given!.n > 1, holder: await holderOf(db, senderId, phone) }
}
