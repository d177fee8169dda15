// Each sender's last template sync, kept with its outcome (sql/0041): on demand, periodic, or when the
// sender is created or its credentials checked (senders' admin routes and pages call syncWhenReady
// through app.ts's wiring). A sync that fails when the sender is created or checked never fails the
// create or the check: its error is kept here and shown (the sender's answer, its page), never a
// credential (the provider's words went through providerText).

import type { Db } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'

export type SyncTrigger = 'created' | 'checked' | 'demand' | 'periodic'

export type LastSync = { trigger: SyncTrigger; ok: boolean; detail: string; synced_at: Date }

/** Keeps sender `senderId`'s last sync (the deployment's default sender, 0, has no row). */
export async function recordSync(
  sql: Db,
  clock: Pick<Clock, 'sqlNow'>,
  senderId: number,
  trigger: SyncTrigger,
  ok: boolean,
  detail: string,
): Promise<void> {
  if (senderId === 0) return
  await sql`
    insert into sender_template_syncs (sender_id, trigger, ok, detail, synced_at)
    select ${senderId}, ${trigger}, ${ok}, ${detail}, ${nowOf(sql, clock)} where exists (select 1 from senders where id = ${senderId})
    on conflict (sender_id) do update set trigger = excluded.trigger, ok = excluded.ok, detail = excluded.detail, synced_at = excluded.synced_at`
}

/** Sender `senderId`'s last template sync, or null when none was made. */
export async function lastSync(sql: Db, senderId: number): Promise<LastSync | null> {
  const [row] = await sql<LastSync[]>`select trigger, ok, detail, synced_at from sender_template_syncs where sender_id = ${senderId}`
  return row ?? null
}

/**
 * The senders whose templates were synced (by any instance, on any trigger) within the last `minutes`:
 * the periodic sync passes them by, so several instances together list a sender about once an interval.
 */
export async function syncedWithin(sql: Db, clock: Pick<Clock, 'sqlNow'>, minutes: number): Promise<Set<number>> {
  const rows = await sql<{ sender_id: number }[]>`
    select sender_id from sender_template_syncs where synced_at > ${nowOf(sql, clock)} - make_interval(mins => ${minutes}::int)`
  return new Set(rows.map((r) => Number(r.sender_id)))
}
