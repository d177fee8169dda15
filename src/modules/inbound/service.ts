// Inbound messages: the only SQL on inbound_messages. Storing (from the providers' callbacks and the
// simulator), the account's list and one message, the admin list, and a contact's conversation both
// ways with its 24-hour customer-service window.
//
// Which account an inbound message belongs to: the conversation rule (accountOf), which no tenant can
// steer into another's conversation by sending a message; operators see and move conversations
// (conversation_holders, holders.ts).

import { transaction, type Fragment, type Sql, type Tx } from '../../db/client'
import { nowOf } from '../../db/now'
import { isRolledBack, retrying } from '../../db/retry'
import type { Clock } from '../../lib/clock'
import { ApiError, badValue } from '../../http/errors'
import { page } from '../../http/values'
import { formatTimes } from '../../lib/time'
import { MAX_NAME_CHARS, pageOf, type DateRange } from '../../lib/validate'
import { inboundPhone, requireInboundPhone } from './phone'
import { holdConversation } from './holders'
import type { SenderRef, SignedConsent, SignedIdentityChange, SignedInbound, SignedReport } from '../../providers/provider'
import { isUserId } from '../../lib/user-id'
import { customerKey, followIdentityChange, linkCustomer, linkFromStatus } from './customers'
import { accountCustomerKey, linkedUserId } from '../customers/service'
import { ensureContact } from '../contacts/service'
import { accountEvent } from '../webhooks/events'
import { lastWritten, WINDOW_HOURS } from './window'
import { consentFromInbound, consentFromProvider, type OptOutWords } from '../optouts/service'
import { queueMedia } from './media'
import { repliesOf } from './manners'
import type { ConversationQuery, InboundListQuery, AdminInboundListQuery } from './model'

// PostgreSQL's text and jsonb cannot hold NUL: a provider's text that carries one is stored without it.
const noNul = (text: string | null) => (text === null ? null : text.replaceAll('\0', ''))
const jsonOf = (value: unknown) => JSON.stringify(value ?? {}, (_key, v: unknown) => (typeof v === 'string' ? noNul(v) : v))

/**
 * The stored sender whose number is `number` (any provider's), or null (the deployment's number) when
 * no number is named: where the simulator's operator route writes in. 422 for a number that is no
 * stored sender's. (Provider callbacks name their sender themselves, as their signature allows.)
 */
export async function simulatedSenderOf(sql: Sql, number: string | null): Promise<SenderRef> {
  if (number === null) return null
  const [row] = await sql<{ id: number }[]>`select id from senders where number = ${number} order by id limit 1`
  if (!row) throw badValue(`sender: ${JSON.stringify(number).slice(0, 40)} is not a stored sender's number`)
  return Number(row.id)
}

/**
 * The number a simulated customer writes to when the operator names none: the default sender of
 * `accountId` when given (its first when none is marked), else the number that last wrote to `phone`
 * (a customer answers the number that wrote to them: after the account's default sender wrote, the
 * reply is the account's and opens that sender's window); null, the deployment's number, when neither
 * has one. Its stored number, for the message's `to`.
 */
export async function simulatedTargetOf(sql: Sql, phone: string, accountId: number | null): Promise<string | null> {
  if (accountId !== null) {
    const [account] = await sql`select 1 from accounts where id = ${accountId}`
    if (!account) throw new ApiError('NOT_FOUND', `account ${accountId} not found`)
    const [row] = await sql<{ number: string }[]>`
      select s.number from account_senders a join senders s on s.id = a.sender_id
      where a.account_id = ${accountId} order by a.is_default desc, s.id limit 1`
    return row?.number ?? null
  }
  const [last] = await sql<{ number: string | null }[]>`
    select s.number from messages m left join senders s on s.id = m.sender_id
    where m.phone = ${phone} order by m.created_at desc, m.id desc limit 1`
  return last?.number ?? null
}

/** The account an inbound message was given to (null: none, the deployment's number with no conversation). */
export async function accountOfInbound(sql: Sql, id: number): Promise<number | null> {
  const [row] = await sql<{ account_id: number | null }[]>`select account_id from inbound_messages where id = ${id}`
  return row?.account_id == null ? null : Number(row.account_id)
}

/**
 * Which account a message from `phone` to sender `senderId` (null: the deployment's number) belongs to:
 * the conversation rule, documented in README ("A number several accounts share"). The accounts that may
 * hold a conversation on a stored sender are those it is given to; on the deployment's number, any.
 * 1. A reply quoting one of our messages sent through that number belongs to that message's account,
 *    and moves the conversation there (the customer chose it).
 * 2. Otherwise the conversation's holder (conversation_holders): the account of the first message sent
 *    to that phone through that number, recorded when the first reply comes, moved only by a quoted
 *    reply or an operator. Another account's later send never moves it, so no tenant can take another's
 *    conversation, its opt-outs or its message.received events by sending one message.
 * 3. Otherwise a stored sender's default account (else the first it was given to); on the deployment's
 *    number, no account: operators see the message in GET /admin/v1/inbound and may assign it.
 */
async function accountOf(
  tx: Tx,
  senderId: SenderRef,
  phone: string,
  replyTo: string | null | undefined,
  userId: string | null = null,
): Promise<number | null> {
  const mayHold = (account: Fragment) =>
    senderId === null
      ? tx`true`
      : tx`exists (select 1 from account_senders a where a.sender_id = ${senderId} and a.account_id = ${account})`
  if (replyTo) {
    const [quoted] = await tx<{ account_id: number }[]>`
      select m.account_id from messages m
      where m.message_sid = ${replyTo} and m.sender_id is not distinct from ${senderId} and ${mayHold(tx`m.account_id`)}`
    if (quoted) {
      await holdConversation(tx, senderId, phone, Number(quoted.account_id), 'reply')
      return Number(quoted.account_id)
    }
  }
  const [held] = await tx<{ account_id: number }[]>`
    select h.account_id from conversation_holders h
    where coalesce(h.sender_id, 0) = coalesce(${senderId}::bigint, 0) and h.phone = ${phone} and ${mayHold(tx`h.account_id`)}`
  if (held) return Number(held.account_id)
  const [first] = await tx<{ account_id: number }[]>`
    select m.account_id from messages m
    where m.phone = any(${userId === null ? [phone] : [phone, userId]}::text[]) and m.sender_id is not distinct from ${senderId}
      and ${mayHold(tx`m.account_id`)}
    order by m.created_at, m.id limit 1`
  if (first) {
    await holdConversation(tx, senderId, phone, Number(first.account_id), 'first_message')
    return Number(first.account_id)
  }
  if (senderId === null) return null
  const [assigned] = await tx<{ account_id: number }[]>`
    select account_id from account_senders where sender_id = ${senderId} order by is_default desc, created_at, account_id limit 1`
  return assigned ? Number(assigned.account_id) : null
}

/**
 * Stores inbound messages of `storedAs` (a provider's name, or `simulator`), each once by its provider
 * message id: a repeat changes nothing. Each names the sender it reached, as the callback's signature
 * allowed (or the simulator's route chose). Each in its own short transaction, with its
 * `message.received` event when it belongs to an account. The ids of those stored now (null for a repeat or an unreadable number).
 */
export async function storeInbound(
  sql: Sql,
  storedAs: string,
  messages: SignedInbound[],
  options: { timezone: string; words?: OptOutWords; clock: Clock },
): Promise<(number | null)[]> {
  const ids: (number | null)[] = []
  for (const message of messages) {
    // The customer: a phone, a business-scoped user id (issue 32), or both.
    const userId = message.userId && isUserId(message.userId) ? message.userId : null
    const fromPhone = inboundPhone(message.from)
    if (!fromPhone && !userId) {
      ids.push(null)
      continue
    }
    const providerId = noNul(message.id)!
    // Two deliveries of one customer's messages at once can deadlock (the fault test met it: a 500 to
    // the provider); the loser was rolled back whole, and runs again.
    const id = await retrying(
      () =>
        transaction(sql, async (tx) => {
          const [known] = await tx`select 1 from inbound_message_keys where provider = ${storedAs} and provider_message_id = ${providerId}`
          if (known) return null
          const senderId = message.sender
          // Both ids together: the user id's rows take the phone as their key (customers.ts).
          if (fromPhone && userId) await linkCustomer(tx, options.clock, senderId, userId, fromPhone)
          const phone = (await customerKey(tx, senderId, { phone: fromPhone, userId }))!
          const accountId = await accountOf(tx, senderId, phone, message.replyTo, userId)
          const given = noNul(message.name)?.trim() || null
          const name = (given ?? phone).slice(0, MAX_NAME_CHARS)
          let contactId: number | null = null
          if (accountId !== null) {
            // Created as the provider names the person; an existing contact keeps its name.
            contactId = await ensureContact(tx, accountId, phone, name, userId)
          }
          const receivedAt = message.sentAt && Number.isFinite(message.sentAt.getTime()) ? message.sentAt : options.clock.now()
          // Once per provider message id, in whichever month: inbound_message_keys' key is taken in the same
          // statement (a unique index of the monthly partitions would hold within one month only).
          const [row] = await tx<Row[]>`
        with key as (
          insert into inbound_message_keys (provider, provider_message_id) values (${storedAs}, ${providerId})
          on conflict do nothing
          returning 1
        )
        insert into inbound_messages
          (provider, provider_message_id, sender_id, account_id, contact_id, phone, user_id, name, type, text, content, raw, received_at, created_at,
           reply_to)
        select ${storedAs}, ${providerId}, ${senderId}, ${accountId}, ${contactId}, ${phone}, ${userId}, ${given},
               ${message.type}, ${noNul(message.text)}, ${jsonOf(message.content)}::text::jsonb, ${jsonOf(message.raw)}::text::jsonb, ${receivedAt},
               ${nowOf(tx, options.clock)}, ${noNul(message.replyTo?.trim() || null)}
        from key
        returning ${tx.unsafe(COLUMNS)}`
          // Its media to fetch and keep (the inbound-media worker), once.
          if (row) await queueMedia(tx, options.clock, Number(row.id), message)
          // A STOP/START word or the provider's signal: once, with the message that said it (a repeat is no new row).
          if (row)
            await consentFromInbound(
              tx,
              options.clock,
              options.timezone,
              { accountId, phone, inboundMessageId: Number(row.id), ...message },
              options.words,
            )
          if (row && accountId !== null) {
            // The user id it came with, else the one Meta linked to the phone on this number: the event carries it where known.
            const knownUserId = userId ?? (await linkedUserId(tx, senderId, phone))
            await receivedEvent(tx, options.clock, options.timezone, accountId, row, message.replyTo?.trim() || null, knownUserId)
          }
          return row ? Number(row.id) : null
        }),
      { retryIf: isRolledBack, clock: options.clock, attempts: 5 },
    )
    ids.push(id)
  }
  return ids
}

/** The `message.received` event of inbound message row `r` (as its insert returned it): its public fields, as GET /inbound/{id} shows them. */
async function receivedEvent(
  tx: Tx,
  clock: Clock,
  tz: string,
  accountId: number,
  r: Row,
  replyTo: string | null,
  userId: string | null,
): Promise<void> {
  const v = formatTimes(view(r), tz)
  // What it quotes (issue 32): the provider's id, and ours when the account has that message. Only a
  // message that quotes one carries it: the event of any other message is as it always was.
  const quoted = replyTo === null ? {} : { reply_to: (await repliesOf(tx, accountId, [replyTo])).get(replyTo)! }
  await accountEvent(
    tx,
    tz,
    accountId,
    'message.received',
    {
      id: v.id,
      phone: v.phone,
      // Extension (issue 32): the customer's business-scoped user id, where known (named with it, or linked to its phone).
      ...(userId === null ? {} : { user_id: userId }),
      name: v.name,
      type: v.type,
      text: v.text,
      content: v.content,
      sender_id: v.sender_id,
      received_at: v.received_at,
      ...quoted,
    },
    clock,
  )
}

/** A provider's consent signals without a message (Meta's user_preferences): each for the account the conversation rule names. */
export async function storeConsent(sql: Sql, clock: Clock, timezone: string, signals: SignedConsent[]): Promise<void> {
  for (const signal of signals) {
    await retrying(
      () =>
        transaction(sql, async (tx) => {
          const phone = await customerKey(tx, signal.sender, { phone: signal.from, userId: signal.userId ?? null })
          if (phone === null) return
          const accountId = await accountOf(tx, signal.sender, phone, null)
          if (accountId !== null) await consentFromProvider(tx, clock, timezone, accountId, phone, signal)
        }),
      { retryIf: isRolledBack, clock, attempts: 5 },
    )
  }
}

/** A provider's word that customers' ids changed (Meta's system messages): each followed in its own transaction. */
export async function storeIdentityChanges(sql: Sql, clock: Clock, changes: SignedIdentityChange[]): Promise<void> {
  for (const change of changes) await transaction(sql, (tx) => followIdentityChange(tx, clock, change))
}

/** Status reports that name both of their recipient's ids (issue 32): each links them in its own transaction. */
export async function storeStatusLinks(sql: Sql, clock: Clock, reports: SignedReport[]): Promise<void> {
  for (const report of reports)
    if (report.recipient?.userId && report.recipient.phone) await transaction(sql, (tx) => linkFromStatus(tx, clock, report))
}

type Row = {
  id: number
  provider: string
  provider_message_id: string
  sender_id: number | null
  account_id: number | null
  contact_id: number | null
  phone: string
  user_id: string | null
  name: string | null
  type: string
  text: string | null
  content: Record<string, unknown>
  raw: unknown
  received_at: Date
  created_at: Date
}

const COLUMNS =
  'id, provider, provider_message_id, sender_id, account_id, contact_id, phone, user_id, name, type, text, content, raw, received_at, created_at'

const view = (r: Row) => ({
  id: Number(r.id),
  provider: r.provider,
  provider_message_id: r.provider_message_id,
  sender_id: r.sender_id === null ? null : Number(r.sender_id),
  account_id: r.account_id === null ? null : Number(r.account_id),
  contact_id: r.contact_id === null ? null : Number(r.contact_id),
  phone: r.phone,
  user_id: r.user_id,
  name: r.name,
  type: r.type,
  text: r.text,
  content: r.content,
  raw: r.raw,
  received_at: r.received_at,
  created_at: r.created_at,
})
export type InboundView = ReturnType<typeof view>

/** A list of inbound messages, newest first: `account` (undefined: every account's, null: those without one). */
async function list(
  sql: Sql,
  account: number | null | undefined,
  query: { phone?: string; limit?: number; offset?: number },
  { from, before }: DateRange,
) {
  const p = page(query)
  const named = query.phone === undefined ? null : requireInboundPhone(query.phone, 'phone')
  // A user id linked to a phone finds the phone's messages (the account's links only; the operator's list takes it as given).
  const phone = named !== null && typeof account === 'number' ? await accountCustomerKey(sql, account, named) : named
  const where = sql`
    where ${account === undefined ? sql`true` : account === null ? sql`account_id is null` : sql`account_id = ${account}`}
      and (${phone}::text is null or phone = ${phone})
      and (${from}::timestamptz is null or received_at >= ${from})
      and (${before}::timestamptz is null or received_at < ${before})`
  const rows = await sql<Row[]>`
    select ${sql.unsafe(COLUMNS)} from inbound_messages ${where}
    order by received_at desc, id desc limit ${p.limit} offset ${p.offset}`
  const known = rows.length < p.limit && (rows.length > 0 || p.offset === 0)
  const [count] = known
    ? [{ n: p.offset + rows.length }]
    : await sql<{ n: number }[]>`select count(*)::int as n from inbound_messages ${where}`
  return pageOf(rows.map(view), count!.n, p)
}

/** GET /api/v1/inbound: the account's inbound messages (`range`: date_from/date_to, read at the edge). */
export const listInbound = (sql: Sql, accountId: number, query: InboundListQuery, range: DateRange) => list(sql, accountId, query, range)

/** GET /admin/v1/inbound: every account's, or one account's (`account_id`), or those without an account (`account_id=0`). */
export function listAllInbound(sql: Sql, query: AdminInboundListQuery, range: DateRange) {
  const account = query.account_id
  if (account !== undefined && (!Number.isSafeInteger(account) || account < 0)) {
    throw badValue('account_id: an account id, or 0 for messages without an account')
  }
  return list(sql, account === undefined ? undefined : account === 0 ? null : account, query, range)
}

/** GET /api/v1/inbound/{id}: one of the account's; another account's is 404. */
export async function getInbound(sql: Sql, accountId: number, id: number) {
  const [row] = await sql<Row[]>`select ${sql.unsafe(COLUMNS)} from inbound_messages where id = ${id} and account_id = ${accountId}`
  if (!row) throw new ApiError('NOT_FOUND', `inbound message ${id} not found`)
  return view(row)
}

/**
 * The sender whose window a conversation shows: the account's sender `from` names (its id or number;
 * 422 for another), else the account's default (as a send without `from` picks it), else the
 * deployment's number (null). A disabled sender is shown too: its window is still a fact.
 */
export async function windowSenderOf(sql: Sql, accountId: number, from: string | undefined): Promise<number | null> {
  const rows = await sql<{ id: number; number: string; is_default: boolean }[]>`
    select s.id, s.number, a.is_default from account_senders a join senders s on s.id = a.sender_id
    where a.account_id = ${accountId} order by a.is_default desc, a.created_at, s.id`
  if (from === undefined) return rows.length === 0 ? null : Number(rows[0]!.id)
  const named = from.trim()
  const chosen = rows.find((r) => String(r.id) === named || r.number === named)
  if (!chosen) {
    throw badValue(
      rows.length === 0
        ? "from: this account has no senders of its own; omit from for the deployment's number"
        : `from: ${JSON.stringify(named).slice(0, 60)} is not one of this account's senders (GET /api/v1/senders lists them)`,
    )
  }
  return Number(chosen.id)
}

/** The phone's 24-hour window with the sender: open until 24 hours after its latest message to that sender. */
export async function windowWith(sql: Sql, clock: Clock, senderId: number | null, phone: string) {
  const last = (await lastWritten(sql, clock, senderId, [phone])).get(phone)
  return {
    open: last?.open === true,
    until: last?.open ? new Date(last.at.getTime() + WINDOW_HOURS * 3_600_000) : null,
    sender_id: senderId,
    last_inbound_at: last ? last.at : null,
  }
}

/** GET /api/v1/conversations/{phone}: the account's messages to the phone and the phone's to the account, oldest first. */
export async function conversation(sql: Sql, clock: Clock, accountId: number, phoneInput: string, query: ConversationQuery) {
  const phone = await accountCustomerKey(sql, accountId, requireInboundPhone(phoneInput, 'phone'))
  // The user ids the customer wrote with (issue 32): messages sent to one before its phone was known are theirs too.
  const userIds = (
    await sql<{ user_id: string }[]>`
      select user_id from inbound_messages where account_id = ${accountId} and phone = ${phone} and user_id is not null
      group by user_id order by max(received_at) desc`
  ).map((r) => r.user_id)
  const p = page(query)
  type Item = {
    direction: 'inbound' | 'outbound'
    id: number
    at: Date
    sender_id: number | null
    type: string
    text: string | null
    status: string | null
    message_sid: string | null
    media_url: string | null
    content: Record<string, unknown> | null
    reply_to: string | null
  }
  // Both directions, by time (ties: outbound first, then id). Queued messages still being handed over
  // are not shown, as in GET /messages.
  const both = sql`
    select 'outbound' as direction, id, created_at as at, sender_id, coalesce(content->>'type', 'text') as type, body as text, status, message_sid, media_url,
           null::jsonb as content, reply_to
    from messages where account_id = ${accountId} and phone = any(${[phone, ...userIds]}::text[]) and (status <> 'queued' or announce_outcome)
    union all
    select 'inbound', id, received_at, sender_id, type, text, null, provider_message_id, content->>'media_url', content, reply_to
    from inbound_messages where account_id = ${accountId} and phone = ${phone}`
  const rows = await sql<Item[]>`
    select * from (${both}) c order by at, direction desc, id limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from (${both}) c`
  const items = rows.map((r) => ({
    direction: r.direction,
    id: Number(r.id),
    at: r.at,
    sender_id: r.sender_id === null ? null : Number(r.sender_id),
    type: r.type,
    text: r.text,
    status: r.status,
    message_sid: r.message_sid,
    media_url: r.media_url,
    content: r.content,
    reply_to: r.reply_to,
  }))
  const window = await windowWith(sql, clock, await windowSenderOf(sql, accountId, query.from), phone)
  return { phone, user_id: userIds[0] ?? null, window, ...pageOf(items, count!.n, p) }
}
