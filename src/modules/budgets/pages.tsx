// A messaging-limit budget's use as the dashboard shows it: recipients counted of the tier in the last
// 24 hours, and when the oldest of them frees. Shown on the operator's senders list and sender page,
// and on the members' overview.

import { h, Fragment } from '../../dashboard/jsx'
import type { BudgetUse } from './service'
import type { Formatted } from '../../lib/time'

/** "17 / 250 in 24 h, oldest frees 2026-11-26 09:30:00", or "unlimited". */
export function BudgetText(props: { use: Formatted<BudgetUse> }) {
  const { use } = props
  if (use.messaging_limit === null) return <span class="muted">unlimited</span>
  const full = use.used >= use.messaging_limit
  return (
    <>
      <span class={full ? 'status status-failed' : undefined}>
        {use.used.toLocaleString('en')} / {use.messaging_limit.toLocaleString('en')}
      </span>{' '}
      <span class="muted">
        recipients in 24{'\u00a0'}h
        {use.frees_at ? (
          <>
            , oldest frees <span class="nowrap">{use.frees_at}</span>
          </>
        ) : null}
        {full ? '; new ones wait' : ''}
      </span>
    </>
  )
}
