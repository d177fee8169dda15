// The reconciliation report from the command line (issue 31 §2; the README's "Reconciliation"):
// `reconcile --sender N [--month YYYY-MM]` prints a Meta sender's month, the ledger beside Meta's
// pricing analytics by day and category, and every difference.

// The answer's type is the admin API's own model, imported as a type only (see commands.ts).
import type * as reconciliation from '../modules/reconciliation/admin'
import type { Command } from './command'
import { amount, cell, table, type Column } from './format'
import { senderOf } from './wa-templates'

type Report = typeof reconciliation.ReportModel.static
type Row = Report['rows'][number]

const columns: Column<Row>[] = [
  { header: 'DAY', value: (r) => r.day },
  { header: 'CATEGORY', value: (r) => r.category },
  { header: 'MESSAGES', value: (r) => amount(r.messages), right: true },
  { header: 'CHARGED', value: (r) => amount(r.cost), right: true },
  { header: 'UNSETTLED', value: (r) => amount(r.unsettled), right: true },
  { header: 'META', value: (r) => amount(r.meta_volume), right: true },
  { header: 'META FREE', value: (r) => amount(r.meta_free_volume), right: true },
  { header: "META'S COST", value: (r) => String(r.meta_cost), right: true },
  { header: 'DIFFERENCE', value: (r) => (r.difference === 0 ? 'agrees' : `differs: Meta ${amount(r.difference, true)}`) },
]

function reportText(r: Report): string {
  const whose = r.sender_id === 0 ? "the deployment's default sender" : `sender ${r.sender_id}`
  const head =
    `${whose}, ${r.month} (${r.time_zone}): WhatsApp Business Account ${r.business_account_id}` +
    (r.phone_number ? `, number ${r.phone_number}` : ' (every number)')
  const body = r.rows.length === 0 ? 'neither the ledger nor Meta has a message this month' : table(columns, r.rows)
  const totals =
    `totals: ${amount(r.totals.messages)} messages, ${amount(r.totals.cost)} charged, ${amount(r.totals.unsettled)} unsettled; ` +
    `Meta ${amount(r.totals.meta_volume)} (${amount(r.totals.meta_free_volume)} free), cost ${r.totals.meta_cost} in Meta's currency`
  const differences =
    r.differences.length === 0
      ? 'no differences: the ledger and Meta agree'
      : [`${amount(r.differences.length)} difference${r.differences.length === 1 ? '' : 's'}:`]
          .concat(r.differences.map((d) => `  ${d.kind} ${d.day} ${d.category}: ${cell(d.detail, Infinity)}`))
          .join('\n')
  return [head, '', body, '', totals, differences].join('\n')
}

export const reconcileCommands: Command[] = [
  {
    name: 'reconcile',
    args: [],
    summary: "a Meta sender's month: the ledger's messages and charges beside Meta's pricing analytics, and every difference",
    details:
      "By day (the service's TIMEZONE) and category: the messages the sender handed over that did not fail and what the ledger holds " +
      "for them, beside Meta's count (and its cost, in Meta's billing currency). Differences: a day and category whose counts differ, " +
      "a message whose settlement could not take the whole difference, a category of Meta's the service does not charge. SENDER 0 is " +
      "the deployment's default sender (with META_BUSINESS_ACCOUNT_ID). Exits 0 whatever the differences; --json for the figures.",
    example: 'bun run admin reconcile --sender "$SENDER_ID" --month 2026-12',
    flags: {
      sender: { value: 'SENDER_ID', required: true, help: "the Meta sender (0: the deployment's default sender)" },
      month: { value: 'YYYY-MM', help: 'the month in the service time zone (default: the current one)' },
    },
    async run(ctx) {
      const query = new URLSearchParams({ sender_id: String(senderOf(ctx, 'sender')) })
      if (typeof ctx.flags.month === 'string') query.set('month', ctx.flags.month)
      const report = await ctx.api.call<Report>('GET', `/admin/v1/reconciliation?${query}`)
      return { data: report, text: () => reportText(report) }
    },
  },
]
