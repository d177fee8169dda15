// Conversations with manners (issue 32 §2): marking a customer's message read at the provider (with a
// typing indicator where it has one; never charged: nothing here touches the ledger), what a message
// quotes (`reply_to`) and the reactions a message got, as GET /inbound, the conversation and the inbox
// show them, and the account's choice that its inbox marks conversations read when an agent opens them.

import type { Deps } from '../../deps'
import type { Db, Sql } from '../../db/client'
import { nowOf } from '../../db/now'
import { ApiError, badValue } from '../../http/errors'
import { formatTimestamp } from '../../lib/time'

/** What a message quotes: the provider's id, and our id of it (GET /inbound's or GET /messages' `id`) when we know it. */
export type ReplyRef = { provider_message_id: string; id: number | null; direction: 'inbound' | 'outbound' | null }
/** The reaction a message holds from each side: the customer's (an inbound reaction) and the business's (a sent one). */
export type ReactionView = { emoji: string; by: 'customer' | 'business'; at: string | null }

/** The quoted messages of `refs` (provider ids) among the account's messages both ways. */
export async function repliesOf(sql: Db, accountId: number, refs: string[]): Promise<Map<string, ReplyRef>> {
  const out = new Map<string, ReplyRef>(refs.map((r) => [r, { provider_message_id: r, id: null, direction: null }]))
  if (refs.length === 0) return out
  const rows = await sql<{ pid: string; id: number; direction: 'inbound' | 'outbound' }[]>`
    select provider_message_id as pid, id, 'inbound' as direction from inbound_messages
    where account_id = ${accountId} and provider_message_id = any(${refs}::text[])
    union all
    select message_sid, id, 'outbound' from messages where account_id = ${accountId} and message_sid = any(${refs}::text[])`
  for (const r of rows) out.set(r.pid, { provider_message_id: r.pid, id: Number(r.id), direction: r.direction })
  return out
}

/**
 * The reactions each message (by its provider id) holds now: each side's latest reaction, unless that
 * one removed it (an empty emoji). The customer's come as inbound reactions; the business's are the
 * account's sent reaction messages (not those that failed or wait for their hand-off).
 */
export async function reactionsOf(sql: Db, accountId: number, targets: string[], tz: string): Promise<Map<string, ReactionView[]>> {
  const out = new Map<string, ReactionView[]>()
  if (targets.length === 0) return out
  const rows = await sql<{ target: string; by: 'customer' | 'business'; emoji: string; at: Date }[]>`
    select distinct on (target, by) target, by, emoji, at from (
      select content->>'message_id' as target, 'customer' as by, coalesce(content->>'emoji', '') as emoji, received_at as at, id
      from inbound_messages
      where account_id = ${accountId} and type = 'reaction' and content->>'message_id' = any(${targets}::text[])
      union all
      select content->>'message_id', 'business', coalesce(content->>'emoji', ''), created_at, id
      from messages
      where account_id = ${accountId} and content->>'type' = 'reaction' and content->>'message_id' = any(${targets}::text[])
        and status in ('sent', 'delivered', 'read')
    ) r
    order by target, by, at desc, id desc`
  for (const r of rows) {
    if (r.emoji === '') continue
    out.set(r.target, [...(out.get(r.target) ?? []), { emoji: r.emoji, by: r.by, at: formatTimestamp(r.at, tz) }])
  }
  return out
}

/** Inbound items (GET /inbound, one message, a conversation's inbound items) with `reply_to`, `reactions` and `read_at`. */
export async function withManners<T extends { id: number; provider_message_id?: string; message_sid?: string | null }>(
  sql: Db,
  accountId: number,
  tz: string,
  items: T[],
): Promise<(T & { reply_to: ReplyRef | null; reactions: ReactionView[]; read_at: string | null })[]> {
  const ids = items.map((i) => i.id)
  const own =
    ids.length === 0
      ? []
      : await sql<{ id: number; reply_to: string | null; read_marked_at: Date | null }[]>`
          select id, reply_to, read_marked_at from inbound_messages where account_id = ${accountId} and id = any(${ids}::bigint[])`
  const byId = new Map(own.map((r) => [Number(r.id), r]))
  const replies = await repliesOf(sql, accountId, [...new Set(own.flatMap((r) => (r.reply_to ? [r.reply_to] : [])))])
  const pids = items.map((i) => i.provider_message_id ?? i.message_sid ?? '').filter((p) => p !== '')
  const reactions = await reactionsOf(sql, accountId, pids, tz)
  return items.map((i) => {
    const row = byId.get(i.id)
    const pid = i.provider_message_id ?? i.message_sid ?? ''
    return {
      ...i,
      reply_to: row?.reply_to ? replies.get(row.reply_to)! : null,
      reactions: reactions.get(pid) ?? [],
      read_at: formatTimestamp(row?.read_marked_at ?? null, tz),
    }
  })
}

/** The outbound items of a conversation with the reactions they hold (the customer's, mostly). */
export async function withOutboundReactions<T extends { message_sid: string | null }>(
  sql: Db,
  accountId: number,
  tz: string,
  items: T[],
): Promise<(T & { reactions: ReactionView[] })[]> {
  const reactions = await reactionsOf(
    sql,
    accountId,
    items.flatMap((i) => (i.message_sid ? [i.message_sid] : [])),
    tz,
  )
  return items.map((i) => ({ ...i, reactions: (i.message_sid && reactions.get(i.message_sid)) || [] }))
}

/**
 * POST /api/v1/inbound/{id}/read: marks the account's inbound message read at the provider of the
 * sender it reached, with a typing indicator when `typing` (Meta's `status: read` with
 * `typing_indicator`; Twilio's typing indicator, which marks read too). Never charged. Another account's
 * message is 404; a provider that cannot is 422 naming why; a provider's refusal is 502 with its words
 * (no secret in them). Marking again asks the provider again (a typing indicator lasts 25 seconds).
 */
export async function markInboundRead(
  deps: Pick<Deps, 'sql' | 'senders' | 'clock' | 'config'>,
  accountId: number,
  id: number,
  typing: boolean,
): Promise<{ id: number; read_at: string; typing: boolean }> {
  const [row] = await deps.sql<{ provider_message_id: string; sender_id: number | null; phone: string; type: string }[]>`
    select provider_message_id, sender_id, phone, type from inbound_messages where id = ${id} and account_id = ${accountId}`
  if (!row) throw new ApiError('NOT_FOUND', `inbound message ${id} not found`)
  const sender = await deps.senders.get(row.sender_id === null ? null : Number(row.sender_id))
  const provider = sender.provider
  if (!provider.markRead) {
    throw badValue(`id: the sender's provider (${provider.name}) has no read receipts; nothing was sent`)
  }
  const answer = await provider.markRead({ messageId: row.provider_message_id, phone: row.phone, typing })
  if (!answer.ok) {
    if (answer.unsupported) throw badValue(answer.detail)
    throw new ApiError(
      'BAD_GATEWAY',
      `the messaging provider did not mark the message read (${answer.code === null ? '' : `${answer.code}: `}${answer.detail}); nothing was charged`,
    )
  }
  const [marked] = await deps.sql<{ read_marked_at: Date }[]>`
    update inbound_messages set read_marked_at = ${nowOf(deps.sql, deps.clock)}
    where id = ${id} and account_id = ${accountId}
    returning read_marked_at`
  return { id, read_at: formatTimestamp(marked!.read_marked_at, deps.config.timezone)!, typing }
}

/** Whether the account's inbox marks a conversation read when an agent opens it (off by default). */
export async function inboxMarksRead(sql: Sql, accountId: number): Promise<boolean> {
  const [row] = await sql<{ on: boolean }[]>`select inbox_marks_read as on from accounts where id = ${accountId}`
  return row?.on === true
}

/** Sets the account's choice (the account settings page). */
export async function setInboxMarksRead(sql: Sql, accountId: number, on: boolean): Promise<void> {
  await sql`update accounts set inbox_marks_read = ${on} where id = ${accountId}`
}

/**
 * The inbox opened a conversation: its customer's latest message not yet marked read is marked read
 * (which marks the earlier ones read too, as WhatsApp does), when the account chose so. Never charged;
 * a provider's refusal changes nothing here (the page still opens). Returns whether one was marked.
 */
export async function markOpenedConversation(
  deps: Pick<Deps, 'sql' | 'senders' | 'clock' | 'config'>,
  accountId: number,
  phone: string,
): Promise<boolean> {
  if (!(await inboxMarksRead(deps.sql, accountId))) return false
  const [latest] = await deps.sql<{ id: number; read_marked_at: Date | null }[]>`
    select id, read_marked_at from inbound_messages where account_id = ${accountId} and phone = ${phone} and type <> 'reaction'
    order by received_at desc, id desc limit 1`
  if (!latest || latest.read_marked_at !== null) return false
  try {
    await markInboundRead(deps, accountId, Number(latest.id), false)
    return true
  } catch {
    return false
  }
}

/** What a quoted message said, for the inbox: its side and its text (or its type), among the account's messages. */
export type QuotedPreview = { direction: 'inbound' | 'outbound'; text: string }

/** The quoted messages of `refs` (provider ids) with what they said; refs of no message of the account are left out. */
export async function quotedPreviews(sql: Db, accountId: number, refs: string[]): Promise<Map<string, QuotedPreview>> {
  if (refs.length === 0) return new Map()
  const rows = await sql<{ pid: string; direction: 'inbound' | 'outbound'; text: string }[]>`
    select provider_message_id as pid, 'inbound' as direction, coalesce(text, '[' || type || ']') as text from inbound_messages
    where account_id = ${accountId} and provider_message_id = any(${refs}::text[])
    union all
    select message_sid, 'outbound', body from messages where account_id = ${accountId} and message_sid = any(${refs}::text[])`
  return new Map(rows.map((r) => [r.pid, { direction: r.direction, text: r.text }]))
}

/** The customer's message the inbox's reply box quotes: one of the account's inbound messages from `phone` (by our id), or null. */
export async function inboundToQuote(sql: Db, accountId: number, phone: string, id: number): Promise<{ id: number; text: string } | null> {
  const [row] = await sql<{ id: number; text: string }[]>`
    select id, coalesce(text, '[' || type || ']') as text from inbound_messages
    where id = ${id} and account_id = ${accountId} and phone = ${phone} and type <> 'reaction'`
  return row ? { id: Number(row.id), text: row.text } : null
}
