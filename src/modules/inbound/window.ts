// WhatsApp's 24-hour customer-service window, from the inbound messages stored (the only place that
// knows when a customer last wrote). The window is per (sender, customer): a message from a phone to
// one of our numbers lets that number answer free-form for 24 hours; another number of ours may not.
// The default number (the environment's provider) is the sender null.

import type { Db } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'

/** How long a customer's message lets the business answer free-form (WhatsApp's customer-service window). */
export const WINDOW_HOURS = 24

/**
 * The phones among `phones` whose window with `senderId` (null: the deployment's default number) is
 * open now, each with when it closes. One query, whatever the number of phones (bulk, campaigns).
 */
export async function openWindows(sql: Db, clock: Clock, senderId: number | null, phones: string[]): Promise<Map<string, Date>> {
  if (phones.length === 0) return new Map()
  const rows = await sql<{ phone: string; until: Date }[]>`
    select phone, max(received_at) + make_interval(hours => ${WINDOW_HOURS}) as until
    from inbound_messages
    where phone = any(${[...new Set(phones)]}::text[])
      and sender_id is not distinct from ${senderId}
      and received_at > ${nowOf(sql, clock)} - make_interval(hours => ${WINDOW_HOURS})
    group by phone`
  return new Map(rows.map((r) => [r.phone, r.until]))
}

/** Whether `phone`'s window with `senderId` is open now. */
export async function windowIsOpen(sql: Db, clock: Clock, senderId: number | null, phone: string): Promise<boolean> {
  return (await openWindows(sql, clock, senderId, [phone])).has(phone)
}

/**
 * When each of `phones` last wrote to `senderId` (any time; a phone that never did is absent), and
 * whether its window is open now, by the clock's time. One query, whatever the number of phones.
 */
export async function lastWritten(
  sql: Db,
  clock: Clock,
  senderId: number | null,
  phones: string[],
): Promise<Map<string, { at: Date; open: boolean }>> {
  if (phones.length === 0) return new Map()
  const rows = await sql<{ phone: string; at: Date; open: boolean }[]>`
    select phone, max(received_at) as at, max(received_at) > ${nowOf(sql, clock)} - make_interval(hours => ${WINDOW_HOURS}) as open
    from inbound_messages
    where phone = any(${[...new Set(phones)]}::text[]) and sender_id is not distinct from ${senderId}
    group by phone`
  return new Map(rows.map((r) => [r.phone, { at: r.at, open: r.open }]))
}
