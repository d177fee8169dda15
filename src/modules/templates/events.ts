// The `template.status_changed` event (issue 30): each recorded change of a WhatsApp template's
// status, category or quality (and Meta's FLAGGED warning), announced in the transaction that made it,
// to every account that may use the template (catalog.ts: the accounts its sender serves; for the
// deployment's default sender, the accounts without senders of their own), one delivery per key of
// such an account whose registration chose the event (webhooks/events.ts).

import type { Db } from '../../db/client'
import type { Clock } from '../../lib/clock'
import { insertAccountEvents, type EventClock } from '../webhooks/events'
import { changeTemplate, type ChangeSource, type RecordedChange, type TemplateChange, type WaTemplate } from './catalog'

export const TEMPLATE_EVENT = 'template.status_changed'

/** The event's `data` for one change, as the webhooks document shows it (its keys in this order). */
export function templateEventData(template: WaTemplate, change: RecordedChange) {
  return {
    template_id: template.id,
    name: template.name,
    language: template.language,
    sender_id: template.sender_id,
    field: change.field,
    old: change.old,
    new: change.new,
    reason: change.reason,
  }
}

/**
 * Records one `template.status_changed` event per change, in the caller's transaction, for each key
 * (of an account that may use the template) whose registration chose it. The number of deliveries.
 */
export async function announceTemplateChanges(
  tx: Db,
  timezone: string,
  template: WaTemplate,
  changes: RecordedChange[],
  clock: EventClock,
): Promise<number> {
  if (changes.length === 0) return 0
  const data = changes.map((c) => JSON.stringify(templateEventData(template, c)))
  const accounts =
    template.sender_id === null
      ? tx`select a.id from accounts a where not exists (select 1 from account_senders s where s.account_id = a.id)`
      : tx`select distinct s.account_id as id from account_senders s where s.sender_id = ${template.sender_id}`
  const [row] = await tx<{ n: number }[]>`
    with changed as (
      select d.data, d.ord from unnest(${data}::text[]) with ordinality as d(data, ord)
    ), source as (
      select a.id as account_id, ${TEMPLATE_EVENT}::text as event, c.data, c.ord
      from (${accounts}) a cross join changed c
    ), event as (${insertAccountEvents(tx, timezone, 'source', clock)})
    select count(*)::int as n from event`
  return row!.n
}

/**
 * catalog.changeTemplate, and each change it recorded announced in the same transaction: what every
 * writer of a template's status, category or quality (a webhook, a sync) calls, so that none changes
 * a template silently. Its answer is changeTemplate's.
 */
export async function changeAndAnnounce(
  tx: Db,
  o: { clock: Pick<Clock, 'sqlNow'>; timezone: string },
  id: number,
  change: TemplateChange,
  source: ChangeSource,
  providerAt: Date | null = null,
): Promise<{ template: WaTemplate; changes: RecordedChange[] } | null> {
  const result = await changeTemplate(tx, o.clock, id, change, source, providerAt)
  if (result && result.changes.length > 0) await announceTemplateChanges(tx, o.timezone, result.template, result.changes, o.clock)
  return result
}
