// The operator's reconciliation page (issue 31 §2): a sender and a month chosen, the ledger's messages
// and charges by day and category beside Meta's pricing analytics, and every difference. A row that
// differs says so in words ("differs: Meta +1") and is marked, never by colour alone.

import { h, Fragment } from '../../dashboard/jsx'
import { Layout } from '../../dashboard/layout'
import { PagedTable } from '../../dashboard/components'
import { type Dashboard, orError, respond, pageRoutes } from '../../dashboard/context'
import type { Session } from '../../dashboard/session'
import { queryText } from '../accounts/scope'
import { formatTimes, formatTimestamp, type Formatted } from '../../lib/time'
import { listSenders } from '../senders/service'
import { reconcile, type Report, type ReportRow } from './service'

const OPERATOR = 'operator' as const
const PATH = '/dashboard/reconciliation'

const signed = (n: number) => (n > 0 ? `+${n.toLocaleString('en')}` : n.toLocaleString('en'))

export function reconciliationPages(d: Dashboard) {
  async function page(session: Session, query: Record<string, unknown>) {
    const senderText = queryText(query, 'sender_id')
    const month = queryText(query, 'month') || formatTimestamp(d.deps.clock.now(), d.tz)!.slice(0, 7)
    const senders = (await listSenders(d.deps)).filter((s) => s.provider === 'meta')
    const defaultIsMeta = d.config.provider === 'meta'
    // The report's sender as the select names it (a sender of another provider is refused before a report).
    const nameOf = (id: number) => {
      const s = senders.find((x) => x.id === id)
      return id === 0 ? "the deployment's default sender" : s ? `${s.name} (${s.number})` : `sender #${id}`
    }
    const render = (report: Formatted<Report> | null, error?: string, status = 200) =>
      respond(
        <Layout title="Reconciliation" session={session} error={error}>
          <p class="muted">
            A Meta sender's month: the messages it handed over and what the ledger holds for them, by day and category, beside what Meta
            counted and charged (its pricing analytics). Volumes are compared; Meta's cost is in its own billing currency.
          </p>
          <form class="inline card" method="get" action={PATH}>
            <label>
              Sender
              <select name="sender_id" required>
                <option value="">Choose a sender</option>
                {defaultIsMeta ? (
                  <option value="0" selected={senderText === '0'}>
                    The deployment's default sender
                  </option>
                ) : null}
                {senders.map((s) => (
                  <option value={String(s.id)} selected={senderText === String(s.id)}>
                    {s.name} ({s.number})
                  </option>
                ))}
              </select>
            </label>
            <label>
              Month
              {/* No numeric keyboard: a phone's has no "-" to type between the year and the month. */}
              <input name="month" value={month} placeholder="YYYY-MM" maxlength={7} />
            </label>
            <button type="submit">Reconcile</button>
          </form>
          {report ? <ReportView report={report} money={d.money} sender={nameOf(report.sender_id)} /> : null}
        </Layout>,
        status,
      )
    if (!senderText) return render(null)
    if (!/^\d{1,15}$/.test(senderText)) return render(null, 'sender_id: choose a sender', 422)
    return orError(
      async () => render(formatTimes(await reconcile(d.deps, Number(senderText), month), d.tz)),
      (message, status) => render(null, message, status),
    )
  }

  return pageRoutes().get('/reconciliation', async ({ request, query }) => {
    const session = await d.view(request, OPERATOR)
    return session instanceof Response ? session : page(session, query)
  })
}

function ReportView(props: { report: Formatted<Report>; money: (n: number) => string; sender: string }) {
  const { report, money, sender } = props
  const differs = (r: ReportRow) => r.difference !== 0
  return (
    <>
      <h2>
        {report.month} · {sender}
      </h2>
      <p>
        WhatsApp Business Account {report.business_account_id}
        {report.phone_number ? `, number ${report.phone_number}` : ' (every number of it)'}; days in {report.time_zone}.{' '}
        {report.differences.length === 0 ? (
          <strong>The ledger and Meta agree.</strong>
        ) : (
          <strong>
            {report.differences.length.toLocaleString('en')} difference{report.differences.length === 1 ? '' : 's'} (listed below).
          </strong>
        )}
      </p>
      <PagedTable
        columns={[
          { header: 'Day', cell: (r) => r.day, class: 'nowrap' },
          { header: 'Category', cell: (r) => r.category },
          { header: 'Messages', cell: (r) => r.messages.toLocaleString('en'), class: 'num' },
          { header: 'Charged', cell: (r) => money(r.cost), class: 'num' },
          { header: 'Unsettled', cell: (r) => (r.unsettled ? money(r.unsettled) : ''), class: 'num' },
          { header: 'Meta volume', cell: (r) => r.meta_volume.toLocaleString('en'), class: 'num' },
          { header: 'Meta free', cell: (r) => r.meta_free_volume.toLocaleString('en'), class: 'num' },
          { header: "Meta's cost", cell: (r) => r.meta_cost.toLocaleString('en', { maximumFractionDigits: 6 }), class: 'num' },
          {
            header: 'Difference',
            cell: (r) => (differs(r) ? <strong class="status status-failed">differs: Meta {signed(r.difference)}</strong> : 'agrees'),
          },
        ]}
        rows={report.rows}
        empty="Neither the ledger nor Meta has a message of this sender in this month."
      />
      <p>
        Totals: {report.totals.messages.toLocaleString('en')} messages, {money(report.totals.cost)} charged
        {report.totals.unsettled ? `, ${money(report.totals.unsettled)} unsettled` : ''}; Meta{' '}
        {report.totals.meta_volume.toLocaleString('en')} ({report.totals.meta_free_volume.toLocaleString('en')} free), cost{' '}
        {report.totals.meta_cost.toLocaleString('en', { maximumFractionDigits: 6 })} in Meta's currency.
      </p>
      <h2>Differences</h2>
      {report.differences.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <ul>
          {report.differences.map((x) => (
            <li>
              <strong>{x.kind === 'volume' ? 'Volume' : x.kind === 'unsettled' ? 'Unsettled' : "Meta's category"}</strong> · {x.day} ·{' '}
              {x.category}: {x.detail}
            </li>
          ))}
        </ul>
      )}
    </>
  )
}
