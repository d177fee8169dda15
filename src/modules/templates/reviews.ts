// The simulator's review of a submitted WhatsApp template (issue 30 §5), as Meta's: a template
// submitted to a sender whose provider reviews templates itself (the simulator: providers/provider.ts
// reviewsTemplates) is stored `pending` with its review beside it, in the same transaction
// (sql/0040): approved, or rejected with Meta's reason, due SIM_TEMPLATE_APPROVAL_MS later on the
// service's clock. The simulator-reports worker applies due reviews: claimed with `delete ... skip
// locked` and applied in one transaction (a crash leaves them for the next run; two instances never
// apply one twice), each through changeAndAnnounce (source `simulator`), so `template.status_changed`
// goes out with the change. A template no longer pending when its review falls due (deleted by an
// operator meanwhile) keeps its status.

import type { Db } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import type { TemplateReview } from '../../providers/provider'
import { changeAndAnnounce } from './events'

const BATCH = 100

/** Writes template `templateId`'s review, due `review.afterMs` from now (in the transaction that stores the template). */
export async function scheduleReview(tx: Db, clock: Pick<Clock, 'sqlNow'>, templateId: number, review: TemplateReview): Promise<void> {
  await tx`
    insert into simulator_template_reviews (template_id, status, reason, due_at)
    values (${templateId}, ${review.status}, ${review.reason}, ${nowOf(tx, clock)} + ${review.afterMs} * interval '1 millisecond')`
}

/** Applies the reviews due now (at most a batch); how many it claimed. */
export async function applyDueReviews(tx: Db, o: { clock: Pick<Clock, 'sqlNow'>; timezone: string }): Promise<number> {
  const due = await tx<{ template_id: number; status: 'approved' | 'rejected'; reason: string | null }[]>`
    delete from simulator_template_reviews
    where template_id in (
      select template_id from simulator_template_reviews where due_at <= ${nowOf(tx, o.clock)}
      order by due_at, template_id limit ${BATCH} for update skip locked)
    returning template_id, status, reason`
  // In template id order: every writer locks templates in the same order (no deadlock with a webhook's).
  for (const review of [...due].sort((a, b) => Number(a.template_id) - Number(b.template_id))) {
    const id = Number(review.template_id)
    const [current] = await tx<{ status: string }[]>`select status from wa_templates where id = ${id} for update`
    if (current?.status !== 'pending') continue
    await changeAndAnnounce(tx, o, id, { status: review.status, reason: review.reason }, 'simulator')
  }
  return due.length
}
