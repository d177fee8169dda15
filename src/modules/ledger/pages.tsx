// An account's ledger: rows newest first with the balance after each (the running balance), a
// created_at filter, 50 a page, and the same rows as CSV. Members at /dashboard/ledger, operators
// at /dashboard/accounts/:id/ledger.

import { csvText } from '../../lib/csv'
import { h, Fragment } from '../../dashboard/jsx'
import { Layout } from '../../dashboard/layout'
import { PagedTable } from '../../dashboard/components'
import { type Dashboard, csvDownload, orError, respond, pageRoutes } from '../../dashboard/context'
import { AccountLink, accountScope, listHref, pageNumber, queryText, type Scope } from '../accounts/scope'
import { listLedger } from './listing'
import { formatTimes, type Formatted } from '../../lib/time'
import { dateRange } from '../../http/values'

const PER_PAGE = 50

/**
 * Who made a row: the dashboard user of a top-up or adjustment, else the admin API or the CLI (which
 * act with the admin token, no user); charges and refunds are the service's own, by no one.
 */
const authorOf = (row: { kind: string; created_by: string | null }) =>
  row.kind === 'topup' || row.kind === 'adjustment' ? (row.created_by ?? 'admin API or CLI') : null

export function ledgerPages(d: Dashboard) {
  const filterOf = (query: Record<string, unknown>) => ({ date_from: queryText(query, 'date_from'), date_to: queryText(query, 'date_to') })

  async function ledgerPage(scope: Scope, query: Record<string, unknown>) {
    const { session, accountId, base } = scope
    const filter = filterOf(query)
    const pageNo = pageNumber(query)
    const path = `${base}/ledger`
    const render = (list: Formatted<Awaited<ReturnType<typeof listLedger>>> | null, error?: string, status = 200) => {
      const pages = list ? Math.max(1, Math.ceil(list.total / PER_PAGE)) : 1
      const current = typeof pageNo === 'number' ? pageNo : 1
      return respond(
        <Layout title="Ledger" session={session} error={error}>
          <AccountLink scope={scope} />
          <form class="inline card" method="get" action={path} role="search">
            <label>
              From
              <input name="date_from" value={filter.date_from ?? ''} placeholder="YYYY-MM-DD HH:MM:SS" maxlength={19} />
            </label>
            <label>
              To
              <input name="date_to" value={filter.date_to ?? ''} placeholder="YYYY-MM-DD HH:MM:SS" maxlength={19} />
            </label>
            <button type="submit">Filter</button>
            <a class="button-link" href={listHref(`${path}.csv`, filter)}>
              Export CSV
            </a>
          </form>
          {list ? (
            <>
              <p>
                {list.total.toLocaleString('en')} {list.total === 1 ? 'row' : 'rows'}
              </p>
              <PagedTable
                columns={[
                  { header: 'Created', cell: (r) => r.created_at, class: 'nowrap' },
                  { header: 'Kind', cell: (r) => r.kind },
                  {
                    header: 'Amount',
                    cell: (r) => (r.amount > 0 ? `+${r.amount.toLocaleString('en')}` : r.amount.toLocaleString('en')),
                    class: 'num',
                  },
                  { header: 'Balance after', cell: (r) => r.balance_after.toLocaleString('en'), class: 'num' },
                  { header: 'Note', cell: (r) => r.note ?? '' },
                  {
                    header: 'Message',
                    cell: (r) => (r.message_id !== null ? <a href={`${base}/messages/${r.message_id}`}>#{r.message_id}</a> : ''),
                  },
                  { header: 'By', cell: (r) => authorOf(r) ?? '', class: 'wrap' },
                ]}
                rows={list.items}
                pager={{ label: 'Pages of the ledger', page: current, pages, href: (n) => listHref(path, { ...filter, page: n }) }}
              />
            </>
          ) : null}
        </Layout>,
        status,
      )
    }
    if (typeof pageNo === 'string') return render(null, pageNo, 422)
    return orError(
      async () =>
        render(
          formatTimes(
            await listLedger(await scope.read(), accountId, { limit: PER_PAGE, offset: (pageNo - 1) * PER_PAGE }, dateRange(filter, d.tz)),
            d.tz,
          ),
        ),
      (message, status) => render(null, message, status),
    )
  }

  /** Every row of the filter, newest first, in one statement (one snapshot). */
  async function ledgerCsv(scope: Scope, query: Record<string, unknown>) {
    const filter = filterOf(query)
    return orError(
      async () => {
        const all = formatTimes(
          await listLedger(await scope.read(), scope.accountId, { limit: Number.MAX_SAFE_INTEGER, offset: 0 }, dateRange(filter, d.tz)),
          d.tz,
        )
        const header = ['id', 'created_at', 'kind', 'amount', 'balance_after', 'message_id', 'note', 'created_by']
        const rows = all.items.map((r) => [r.id, r.created_at, r.kind, r.amount, r.balance_after, r.message_id, r.note, authorOf(r)])
        return csvDownload(csvText(header, rows), `ledger-account-${scope.accountId}.csv`)
      },
      // A bad filter: the ledger page with the same filter says what is wrong (422).
      () => ledgerPage(scope, query),
    )
  }

  return pageRoutes()
    .get('/ledger', async ({ request, query }) => {
      const scope = await accountScope(d, request)
      return scope instanceof Response ? scope : ledgerPage(scope, query)
    })
    .get('/ledger.csv', async ({ request, query }) => {
      const scope = await accountScope(d, request)
      return scope instanceof Response ? scope : ledgerCsv(scope, query)
    })
    .get('/accounts/:id/ledger', async ({ request, params, query }) => {
      const scope = await accountScope(d, request, params.id)
      return scope instanceof Response ? scope : ledgerPage(scope, query)
    })
    .get('/accounts/:id/ledger.csv', async ({ request, params, query }) => {
      const scope = await accountScope(d, request, params.id)
      return scope instanceof Response ? scope : ledgerCsv(scope, query)
    })
}
