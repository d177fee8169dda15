// An account's usage by day and category (issue 31 §5) on the dashboard: the cost of each day as bars
// split by category (a picture beside the table, hidden from screen readers, which read the table), the
// table of GET /api/v1/usage, and the same rows as CSV. Members at /dashboard/usage, operators at
// /dashboard/accounts/:id/usage.

import { csvText } from '../../lib/csv'
import { h, Fragment } from '../../dashboard/jsx'
import { Layout } from '../../dashboard/layout'
import { type Dashboard, csvDownload, orError, respond, pageRoutes } from '../../dashboard/context'
import { AccountLink, accountScope, listHref, queryText, type Scope } from '../accounts/scope'
import { CATEGORIES } from './service'
import { allUsage, usageRange, type UsageRow } from './usage'

/** The days of `rows` (newest first) with each category's cost, and the largest day's total. */
function byDay(rows: UsageRow[]) {
  const days = new Map<string, Record<string, number>>()
  for (const r of rows) {
    const day = days.get(r.day) ?? {}
    day[r.category] = (day[r.category] ?? 0) + Number(r.cost)
    days.set(r.day, day)
  }
  const totals = [...days.values()].map((d) => Object.values(d).reduce((a, b) => a + b, 0))
  return { days: [...days], max: Math.max(1, ...totals) }
}

/**
 * Cost per day as horizontal bars split by category (an SVG: the pages' policy allows no inline style),
 * each category its colour and its name in the key; the table below has the figures.
 */
function UsageChart(props: { rows: UsageRow[]; currency: string }) {
  const { days, max } = byDay(props.rows)
  return (
    <figure class="card usage-chart" aria-hidden="true">
      <figcaption>
        {`Cost per day (${props.currency}): `}
        {CATEGORIES.map((c) => (
          <span class={`usage-key usage-${c}`}>{c}</span>
        ))}
      </figcaption>
      {days.map(([day, costs]) => {
        // One bar a day, its own SVG stretched to the row's width (percentages of the largest day).
        let x = 0
        return (
          <div class="usage-day">
            <span>{day}</span>
            <svg viewBox="0 0 100 10" preserveAspectRatio="none">
              {CATEGORIES.filter((c) => (costs[c] ?? 0) > 0).map((c) => {
                const width = (costs[c]! / max) * 100
                const rect = <rect class={`usage-${c}`} x={x.toFixed(2)} y="0" width={width.toFixed(2)} height="10" />
                x += width
                return rect
              })}
            </svg>
          </div>
        )
      })}
    </figure>
  )
}

export function usagePages(d: Dashboard) {
  const filterOf = (query: Record<string, unknown>) => ({ date_from: queryText(query, 'date_from'), date_to: queryText(query, 'date_to') })

  async function usagePage(scope: Scope, query: Record<string, unknown>) {
    const { session, accountId, base } = scope
    const filter = filterOf(query)
    const path = `${base}/usage`
    const render = (rows: UsageRow[] | null, error?: string, status = 200) =>
      respond(
        <Layout title="Usage" session={session} error={error}>
          <AccountLink scope={scope} />
          <form class="inline card" method="get" action={path} role="search">
            <label>
              From (day)
              <input name="date_from" value={filter.date_from ?? ''} placeholder="YYYY-MM-DD" maxlength={19} />
            </label>
            <label>
              To (day)
              <input name="date_to" value={filter.date_to ?? ''} placeholder="YYYY-MM-DD" maxlength={19} />
            </label>
            <button type="submit">Filter</button>
            <a class="button-link" href={listHref(`${path}.csv`, filter)}>
              Export CSV
            </a>
          </form>
          {rows === null ? null : rows.length === 0 ? (
            <p>No messages charged in this range.</p>
          ) : (
            <>
              <p>
                {`${rows.reduce((a, r) => a + r.count, 0).toLocaleString('en')} messages, `}
                {d.money(rows.reduce((a, r) => a + Number(r.cost), 0))}
                {' in all. Refunded messages are left out; a settled message counts at its final cost.'}
              </p>
              <UsageChart rows={rows} currency={d.config.currency} />
              <div class="table-wrap">
                <table id="usage">
                  <caption>Messages and their cost by day and category</caption>
                  <thead>
                    <tr>
                      <th scope="col">Day</th>
                      <th scope="col">Category</th>
                      <th scope="col" class="num">
                        Messages
                      </th>
                      <th scope="col" class="num">
                        {`Cost (${d.config.currency})`}
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((r) => (
                      <tr>
                        <td class="nowrap">{r.day}</td>
                        <td>{r.category}</td>
                        <td class="num">{r.count.toLocaleString('en')}</td>
                        <td class="num">{Number(r.cost).toLocaleString('en')}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
        </Layout>,
        status,
      )
    return orError(
      async () => render(await allUsage(await scope.read(), accountId, d.tz, usageRange(filter, d.tz))),
      (message, status) => render(null, message, status),
    )
  }

  async function usageCsv(scope: Scope, query: Record<string, unknown>) {
    const filter = filterOf(query)
    return orError(
      async () => {
        const rows = await allUsage(await scope.read(), scope.accountId, d.tz, usageRange(filter, d.tz))
        return csvDownload(
          csvText(
            ['day', 'category', 'count', 'cost'],
            rows.map((r) => [r.day, r.category, r.count, Number(r.cost)]),
          ),
          `usage-account-${scope.accountId}.csv`,
        )
      },
      // A bad filter: the usage page with the same filter says what is wrong (422).
      () => usagePage(scope, query),
    )
  }

  return pageRoutes()
    .get('/usage', async ({ request, query }) => {
      const scope = await accountScope(d, request)
      return scope instanceof Response ? scope : usagePage(scope, query)
    })
    .get('/usage.csv', async ({ request, query }) => {
      const scope = await accountScope(d, request)
      return scope instanceof Response ? scope : usageCsv(scope, query)
    })
    .get('/accounts/:id/usage', async ({ request, params, query }) => {
      const scope = await accountScope(d, request, params.id)
      return scope instanceof Response ? scope : usagePage(scope, query)
    })
    .get('/accounts/:id/usage.csv', async ({ request, params, query }) => {
      const scope = await accountScope(d, request, params.id)
      return scope instanceof Response ? scope : usageCsv(scope, query)
    })
}
