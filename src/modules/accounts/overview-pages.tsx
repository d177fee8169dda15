// A member's overview: balance, price and how many messages the balance pays for; the messages of
// the last 30 days by status (an SVG chart built here from the counts, no chart library), the
// latest failures with their error, and the account's senders when it has any. Operators see an account's at /dashboard/accounts/:id/overview.

import { h, Fragment, escapeHtml, raw, type Html } from '../../dashboard/jsx'
import { Layout } from '../../dashboard/layout'
import { PagedTable } from '../../dashboard/components'
import { type Dashboard, redirect, respond, pageRoutes } from '../../dashboard/context'
import { AccountLink, accountScope, type Scope } from './scope'
import { getAccount } from './service'
import { STATUSES, dailyStatusCounts, failuresByCode, recentFailures } from '../messages/queries'
import { ErrorText } from '../messages/error-code-pages'
import { ERROR_CODES } from '../../providers/error-codes'
import { allUsage, usageRange } from '../ledger/usage'
import { formatTimes, formatTimestamp } from '../../lib/time'
import { MemberSenders } from '../senders/account-pages'
import { listAccountSenders } from '../senders/service'
import { senderBudgetUses } from '../budgets/service'

const DAYS = 30

/** The `days` calendar days up to today in `tz`, oldest first, as YYYY-MM-DD. */
export function lastDays(tz: string, days: number, now: Date): string[] {
  const today = formatTimestamp(now, tz)!.slice(0, 10)
  const base = Date.UTC(Number(today.slice(0, 4)), Number(today.slice(5, 7)) - 1, Number(today.slice(8, 10)))
  return Array.from({ length: days }, (_, i) => new Date(base - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10))
}

/** A round upper bound for the y axis: 1, 2, 5 × 10^n. */
function niceMax(value: number): number {
  if (value <= 1) return 1
  const power = 10 ** Math.floor(Math.log10(value))
  return [1, 2, 5, 10].map((m) => m * power).find((m) => m >= value)!
}

/** An axis number in at most four characters: 500, 2.5K, 10K. */
const tickText = (n: number) => new Intl.NumberFormat('en', { notation: 'compact' }).format(n)

/** One segment of a day's bar: its class, its value and what its tooltip says. */
type Segment = { cls: string; n: number; title: string }

/**
 * Bars of stacked segments, one bar per day: the frame both overview charts share. Built only from
 * numbers and the server's own day strings (escaped all the same), so it may go out through raw(). It is
 * drawn to the width of the screen; a day is labelled every 7 days back from today, and on a phone every
 * 14 (style.css hides the `minor` ones there and sets the labels larger). `titleId` names the title the
 * chart is labelled by (a page may hold two).
 */
function dayBars(days: string[], bars: Segment[][], titleId: string, label: string): Html {
  const W = 720
  const H = 220
  const left = 60
  const right = 8
  const top = 22
  const bottom = 34
  const plotW = W - left - right
  const plotH = H - top - bottom
  const totals = bars.map((bar) => bar.reduce((sum, segment) => sum + segment.n, 0))
  const max = niceMax(Math.max(0, ...totals))
  const slot = plotW / days.length
  const barW = Math.max(2, slot * 0.7)
  const y = (n: number) => top + plotH - (n / max) * plotH
  let svg = `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${titleId}"><title id="${titleId}">${escapeHtml(label)}</title>`
  for (const tick of [0, max / 2, max]) {
    if (tick !== Math.round(tick)) continue
    svg += `<line class="grid" x1="${left}" x2="${W - right}" y1="${y(tick).toFixed(1)}" y2="${y(tick).toFixed(1)}"/>`
    svg += `<text class="axis" x="${left - 8}" y="${(y(tick) + 4).toFixed(1)}" text-anchor="end">${tickText(tick)}</text>`
  }
  days.forEach((day, i) => {
    const x = left + i * slot + (slot - barW) / 2
    let base = 0
    for (const { cls, n, title } of bars[i]!) {
      if (n === 0) continue
      const y0 = y(base + n)
      svg += `<rect class="${cls}" x="${x.toFixed(1)}" y="${y0.toFixed(1)}" width="${barW.toFixed(1)}" height="${(y(base) - y0).toFixed(1)}"><title>${escapeHtml(title)}</title></rect>`
      base += n
    }
    const back = days.length - 1 - i
    if (back % 7 === 0) {
      // Today's label ends at the right edge; the others are centred under their day.
      const today = back === 0
      const at = today ? W - right : left + i * slot + slot / 2
      svg += `<text class="axis${back % 14 === 0 ? '' : ' minor'}" x="${at.toFixed(1)}" y="${H - 6}" text-anchor="${today ? 'end' : 'middle'}">${escapeHtml(day)}</text>`
    }
  })
  svg += `<line class="baseline" x1="${left}" x2="${W - right}" y1="${top + plotH}" y2="${top + plotH}"/></svg>`
  return raw(svg)
}

/** Messages per day, one segment per status. */
export function statusChart(days: string[], counts: Map<string, Record<string, number>>): Html {
  const bars = days.map((day) =>
    STATUSES.map((status) => {
      const n = counts.get(day)?.[status] ?? 0
      return { cls: `s-${status}`, n, title: `${day}: ${n} ${status}` }
    }),
  )
  const all = bars.flat().reduce((sum, segment) => sum + segment.n, 0)
  return dayBars(days, bars, 'chart-title', `Messages per day over the last ${days.length} days by status: ${all} in all`)
}

/**
 * What the account paid each day: one bar a day, from the usage by day (refunded messages cost
 * nothing); its title says the total and the dearest day for screen readers.
 */
export function costChart(days: string[], costs: Map<string, number>, currency: string): Html {
  const values = days.map((day) => costs.get(day) ?? 0)
  const all = values.reduce((a, b) => a + b, 0)
  const dearest = values.indexOf(Math.max(...values))
  const label =
    `Cost per day over the last ${days.length} days: ${all.toLocaleString('en')} ${currency} in all` +
    (all > 0 ? `, the most on ${days[dearest]} (${values[dearest]!.toLocaleString('en')} ${currency})` : '')
  const bars = days.map((day, i) => [{ cls: 'cost-bar', n: values[i]!, title: `${day}: ${values[i]!.toLocaleString('en')} ${currency}` }])
  return dayBars(days, bars, 'cost-chart-title', label)
}

/** "87.5%" of `part` in `whole`, or a dash when there is nothing to count. */
const rate = (part: number, whole: number) => (whole === 0 ? '—' : `${((part / whole) * 100).toFixed(1).replace(/\.0$/, '')}%`)

const MEANINGS = new Map(ERROR_CODES.map((c) => [c.code, c.meaning]))

export function overviewPages(d: Dashboard) {
  async function overviewPage(scope: Scope) {
    const { session, accountId, base } = scope
    const account = await getAccount(d.sql, accountId)
    const days = lastDays(d.tz, DAYS, d.deps.clock.now())
    // The chart and the failures read the replica when it is current for this user; the balance above, the primary.
    const reads = await scope.read()
    const counts = await dailyStatusCounts(reads, d.deps.clock, d.tz, accountId, DAYS)
    const failures = formatTimes(await recentFailures(reads, accountId, 10), d.tz)
    const senders = await listAccountSenders(d.sql, accountId)
    const budgets = formatTimes(
      await senderBudgetUses(
        d.sql,
        d.deps.clock,
        senders.map((s) => s.id),
      ),
      d.config.timezone,
    )
    const sums = STATUSES.map((s) => [s, days.reduce((sum, day) => sum + (counts.get(day)?.[s] ?? 0), 0)] as const)
    const total = Object.fromEntries(sums) as Record<(typeof STATUSES)[number], number>
    // Rates of the messages that went out (queued ones are still on their way): delivered counts those read too.
    const out = total.sent + total.delivered + total.read + total.failed
    const reached = total.delivered + total.read
    const byCode = await failuresByCode(reads, d.deps.clock, d.tz, accountId, DAYS)
    const costs = new Map<string, number>()
    for (const r of await allUsage(reads, accountId, d.tz, usageRange({ date_from: days[0] }, d.tz))) {
      costs.set(r.day, (costs.get(r.day) ?? 0) + Number(r.cost))
    }
    return respond(
      <Layout title={base === '/dashboard' ? 'Overview' : `${account.name}: overview`} session={session}>
        {scope.accountName === null ? (
          <p class="account-link">
            Account <strong>{account.name}</strong> <span class="muted">#{account.id}</span>
          </p>
        ) : (
          <AccountLink scope={scope} />
        )}
        <div class="stats">
          <div class="card stat">
            <div class="value">{account.wa_balance.toLocaleString('en')}</div>
            <div class="label">Balance ({d.config.currency})</div>
          </div>
          <div class="card stat">
            <div class="value">{account.cost_per_message.toLocaleString('en')}</div>
            <div class="label">Price per message</div>
          </div>
          <div class="card stat">
            <div class="value">{Math.floor(account.wa_balance / account.cost_per_message).toLocaleString('en')}</div>
            <div class="label">Messages the balance pays for</div>
          </div>
        </div>
        <p id="low-balance">
          {account.low_balance_threshold === null ? (
            'No low-balance alert is set.'
          ) : (
            <>
              Low-balance alert: below <strong>{d.money(account.low_balance_threshold)}</strong>, a <code>balance.low</code> event goes to
              the webhooks that chose it (<a href={`${base}/webhook`}>Webhook</a>).
            </>
          )}
          {scope.accountName === null ? ' The operator sets it.' : null}
        </p>
        {scope.accountName === null ? (
          <p id="top-up-help">
            To top up the balance, ask the operator of this service (whoever gave you access to this dashboard), naming account{' '}
            <strong>{account.name}</strong> (#{account.id}). Each top-up appears in the <a href="/dashboard/ledger">ledger</a>.
          </p>
        ) : null}
        <h2>Messages of the last {DAYS} days</h2>
        <figure class="card chart-card">
          {statusChart(days, counts)}
          <figcaption>
            <ul class="legend">
              {sums.map(([status, n]) => (
                <li>
                  <span class={`swatch s-${status}`} aria-hidden="true"></span>
                  {status}: {n.toLocaleString('en')}
                </li>
              ))}
            </ul>
          </figcaption>
        </figure>
        <h2>Delivery and read rates</h2>
        <div class="stats" id="rates">
          <div class="card stat">
            <div class="value">{rate(reached, out)}</div>
            <div class="label">{`Delivered: ${reached.toLocaleString('en')} of ${out.toLocaleString('en')} messages that went out`}</div>
          </div>
          <div class="card stat">
            <div class="value">{rate(total.read, reached)}</div>
            <div class="label">{`Read: ${total.read.toLocaleString('en')} of the ${reached.toLocaleString('en')} delivered`}</div>
          </div>
          <div class="card stat">
            <div class="value">{rate(total.failed, out)}</div>
            <div class="label">{`Failed: ${total.failed.toLocaleString('en')} of ${out.toLocaleString('en')}`}</div>
          </div>
        </div>
        <h2>Cost per day</h2>
        <figure class="card chart-card">
          {costChart(days, costs, d.config.currency)}
          <figcaption>
            {`${d.money([...costs.values()].reduce((a, b) => a + b, 0))} in the last ${DAYS} days; refunded messages cost nothing. `}
            <a href={`${base}/usage?date_from=${days[0]}`}>The usage page</a> has each day's figures by category.
          </figcaption>
        </figure>
        <h2>Errors by code</h2>
        <PagedTable
          columns={[
            { header: 'Code', cell: (r) => (r.code === null ? 'none given' : <ErrorText code={r.code} message={null} />) },
            { header: 'Messages', cell: (r) => r.count.toLocaleString('en'), class: 'num' },
            {
              header: 'Meaning',
              cell: (r) =>
                r.code === null
                  ? "the service's own: no answer in time, or an opt-out before the hand-off"
                  : (MEANINGS.get(r.code) ?? "the provider's code"),
            },
          ]}
          rows={byCode}
          empty={`No failed messages in the last ${DAYS} days.`}
        />
        <h2>Recent failures</h2>
        <PagedTable
          columns={[
            { header: 'Created', cell: (m) => m.created_at, class: 'nowrap' },
            { header: 'To', cell: (m) => <a href={`${base}/messages/${m.id}`}>{m.phone}</a>, class: 'nowrap' },
            {
              header: 'Error',
              cell: (m) =>
                m.error_code === null && !m.error_message ? 'no error given' : <ErrorText code={m.error_code} message={m.error_message} />,
            },
          ]}
          rows={failures}
          empty="No failed messages."
        />
        <p>
          <a href={`${base}/messages?status=failed`}>All failed messages</a>
        </p>
        <MemberSenders senders={senders} budgets={budgets} link={scope.accountName === null} />
      </Layout>,
    )
  }

  return pageRoutes()
    .get('', async ({ request }) => {
      const session = await d.sessionOf(request)
      if (!session) return redirect('/dashboard/sign-in')
      if (session.user.role === 'operator') return redirect('/dashboard/accounts')
      const scope = await accountScope(d, request, undefined, session)
      return scope instanceof Response ? scope : overviewPage(scope)
    })
    .get('/accounts/:id/overview', async ({ request, params }) => {
      const scope = await accountScope(d, request, params.id)
      return scope instanceof Response ? scope : overviewPage(scope)
    })
}
