// A provider's word about its senders' WhatsApp templates (Meta's template webhooks, parsed by the
// provider into TemplateNotices, each naming the senders its verified signer owns), applied: status,
// category and quality through catalog.changeTemplate (source: the provider), each real change
// announced as a `template.status_changed` event in the same transaction.
//
// - Once however often delivered: a repeat changes nothing (changeTemplate records only real changes;
//   a FLAGGED or an impending category notice is recorded once per notification time).
// - In Meta's order, not the delivery's: each change keeps the notification's time (`provider_at`);
//   a notice older than the latest one the provider already gave for that field changes nothing. A
//   notice that changed nothing (the template already was so) keeps its time too (noteProviderTime):
//   APPROVED at 10:02 taken while the template was still approved, then PAUSED of 10:01 delivered late,
//   leaves it approved.
// - Only what its signer owns: a notice naming no sender (an account none of the signer's senders is
//   in) changes nothing; a template the sender does not have yet (not synced) is skipped.
// - Status words: Meta's own, lower case (catalog.statusOfMeta); REINSTATED is approved again, FLAGGED
//   is recorded and leaves the status, a word the service does not know (UNARCHIVED...) changes nothing
//   (the next sync reads the status as it is).
// - Category: only the completed notice (with `previous_category`) changes it; the impending one
//   (`correct_category`, with a `new_category` that is still the current one) is kept in the history
//   as a `category_notice` and changes nothing.

import type { Db, Sql } from '../../db/client'
import type { Clock } from '../../lib/clock'
import type { SignedTemplateNotice } from '../../providers/provider'
import {
  findProviderTemplate,
  newerProviderChanges,
  noteProviderTime,
  noteTemplate,
  statusOfMeta,
  TEMPLATE_CATEGORIES,
  TEMPLATE_QUALITIES,
  type ChangeSource,
  type TemplateCategory,
  type TemplateChange,
  type TemplateQuality,
} from './catalog'
import { changeAndAnnounce } from './events'

const categoryOf = (word: string | null): TemplateCategory | null => {
  const w = word?.toLowerCase() ?? ''
  return (TEMPLATE_CATEGORIES as readonly string[]).includes(w) ? (w as TemplateCategory) : null
}
const qualityOf = (word: string): TemplateQuality | null => {
  const w = word.toLowerCase()
  return (TEMPLATE_QUALITIES as readonly string[]).includes(w) ? (w as TemplateQuality) : null
}

/** The change a notice asks for, or null when it asks for none (an unknown word; an impending category change). */
function changeOf(notice: SignedTemplateNotice): TemplateChange | null {
  switch (notice.kind) {
    case 'status': {
      if (notice.event === 'FLAGGED') return { flagged: true, reason: notice.reason }
      const status = statusOfMeta(notice.event)
      return status ? { status, reason: notice.reason } : null
    }
    case 'category': {
      if (notice.previous === null) return null
      const category = categoryOf(notice.next)
      return category ? { category } : null
    }
    case 'quality': {
      const quality = qualityOf(notice.score)
      return quality ? { quality } : null
    }
  }
}

/** The history field a change is ordered by (FLAGGED by its own). */
const fieldOf = (change: TemplateChange) =>
  change.flagged ? 'flagged' : change.status ? 'status' : change.category ? 'category' : 'quality'

export type NoticeOutcome = {
  /** Changes recorded (each announced). */
  changed: number
  /** Notices that named no sender of their signer: they changed nothing. */
  refused: number
  /** Notices about a template the sender does not have (not synced yet). */
  unknown: number
}

/** Applies one notice to one sender's template, in `tx`. Changes recorded. */
async function applyOne(
  tx: Db,
  o: { clock: Pick<Clock, 'sqlNow'>; timezone: string; source: ChangeSource },
  notice: SignedTemplateNotice,
  templateId: number,
): Promise<number> {
  const newer = await newerProviderChanges(tx, templateId, o.source)
  if (notice.kind === 'category' && notice.previous === null) {
    // The impending notice: Meta will change the category (to `correct`) at `due`; nothing changes now.
    const correct = categoryOf(notice.correct)
    if (!correct) return 0
    const due = notice.due ? ` on ${notice.due.toISOString().slice(0, 10)}` : ''
    await noteTemplate(
      tx,
      o.clock,
      templateId,
      { field: 'category_notice', old: categoryOf(notice.next), new: correct, reason: `Meta will change the category to ${correct}${due}` },
      o.source,
      notice.at,
    )
    return 0
  }
  const change = changeOf(notice)
  if (!change) return 0
  const latest = newer.get(fieldOf(change))
  // Older than what the provider already said of this field: stale. A FLAGGED of the same time: a repeat.
  if (notice.at && latest && (latest > notice.at || (change.flagged && latest.getTime() === notice.at.getTime()))) return 0
  const result = await changeAndAnnounce(tx, o, templateId, change, o.source, notice.at)
  // A word that changed nothing (the template already was so) still counts in Meta's order: an older
  // notice delivered after it must not undo it.
  const field = fieldOf(change)
  if (result && notice.at && field !== 'flagged' && !result.changes.some((c) => c.field === field))
    await noteProviderTime(tx, o.clock, templateId, field, result.template[field], o.source, notice.at)
  return result?.changes.length ?? 0
}

/**
 * Applies a callback's template notices in one transaction: each to the template of that name (or
 * provider id) of every sender it names. What happened, for the route's answer and log.
 */
export async function applyTemplateNotices(
  sql: Sql,
  o: { clock: Pick<Clock, 'sqlNow'>; timezone: string; provider: string },
  notices: SignedTemplateNotice[],
): Promise<NoticeOutcome> {
  const outcome: NoticeOutcome = { changed: 0, refused: 0, unknown: 0 }
  const source: ChangeSource = o.provider === 'twilio' ? 'twilio' : o.provider === 'simulator' ? 'simulator' : 'meta'
  await sql.begin(async (tx) => {
    // Which template of which sender each notice is about, found first; then applied template by
    // template in id order (a callback locks its templates in the order every other callback does:
    // no deadlock), each template's notices in Meta's order (oldest first, a notification may batch
    // several entries), so the latest word is the one that stays.
    const work: { notice: SignedTemplateNotice; templateId: number; i: number }[] = []
    for (const [i, notice] of notices.entries()) {
      if (notice.senders.length === 0) {
        outcome.refused++
        continue
      }
      for (const sender of notice.senders) {
        const template = await findProviderTemplate(tx, sender, notice)
        if (template) work.push({ notice, templateId: template.id, i })
        else outcome.unknown++
      }
    }
    work.sort((a, b) => a.templateId - b.templateId || (a.notice.at?.getTime() ?? 0) - (b.notice.at?.getTime() ?? 0) || a.i - b.i)
    for (const { notice, templateId } of work) {
      outcome.changed += await applyOne(tx, { clock: o.clock, timezone: o.timezone, source }, notice, templateId)
    }
  })
  return outcome
}
