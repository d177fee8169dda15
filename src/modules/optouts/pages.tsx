// Opt-outs in the dashboard: the account's opted-out phones with when, how and by whom, a form to opt
// one out and a button to opt one back in, a CSV import (a file or pasted text; the report counts the
// accepted, duplicate and invalid rows and names each bad line) and a CSV download. A member's own
// account at /dashboard/opt-outs; an operator's view of any account at /dashboard/accounts/:id/opt-outs.
// Every change is audited as the signed-in user's.

import { h, Fragment } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, csvDownload, field, respond, pageRoutes } from '../../dashboard/context'
import { Field, FormProblem, FormToken, PagedTable, formState, type FormState } from '../../dashboard/components'
import { AccountLink, inScope, titleOf, viewScope, type Scope } from '../accounts/scope'
import {
  addOptOut,
  exportOptOuts,
  importOptOuts,
  listOptOuts,
  optOutsCsv,
  removeOptOut,
  type ImportReport,
  type OptOutView,
} from './service'
import { formatTimes, type Formatted } from '../../lib/time'

const PAGE_SIZE = 50
const MAX_IMPORT_BYTES = 2 * 1024 * 1024
const SOURCES: Record<string, string> = {
  inbound: 'wrote a STOP word',
  provider: "the provider's signal",
  api: 'API key',
  dashboard: 'dashboard',
  admin: 'admin API',
  import: 'CSV import',
}

const textParam = (query: unknown, name: string) => {
  const value = (query as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

export function optOutPages(d: Dashboard) {
  async function optOutsPage(
    scope: Scope,
    query: { phone?: string; page?: string },
    options: { state?: FormState; status?: number; report?: ImportReport } = {},
  ) {
    const { session, base } = scope
    const phone = (query.phone ?? '').trim()
    const pageNumber = /^\d{1,6}$/.test(query.page ?? '') ? Math.max(1, Number(query.page)) : 1
    let search: FormState | undefined
    let list: { items: Formatted<OptOutView>[]; total: number } = { items: [], total: 0 }
    try {
      const found = await listOptOuts(await scope.read(), scope.accountId, {
        ...(phone ? { phone } : {}),
        limit: PAGE_SIZE,
        offset: (pageNumber - 1) * PAGE_SIZE,
      })
      list = formatTimes(found, d.tz)
    } catch (error) {
      search = { form: 'search', values: { phone }, problem: { field: 'phone', message: (error as Error).message } }
    }
    const pages = Math.max(1, Math.ceil(list.total / PAGE_SIZE))
    const link = (n: number) => `${base}/opt-outs?${new URLSearchParams({ ...(phone ? { phone } : {}), page: String(n) })}`
    const { state, report } = options
    return respond(
      <Layout title={titleOf(scope, 'Opt-outs')} session={session}>
        <AccountLink scope={scope} />
        <p class="muted">
          These phones are not sent to: a send is refused with RECIPIENT_OPTED_OUT and nothing is charged, a campaign skips them. A customer
          opts out by writing STOP, UNSUBSCRIBE or BERHENTI, and back in with START or MULAI.
        </p>
        {report ? <ImportResult report={report} /> : null}
        <form class="inline card" method="get" action={`${base}/opt-outs`} role="search">
          <Field state={search} form="search" name="phone" label="Find a phone" type="search" value={phone} maxlength={40} />
          <button type="submit">Find</button>
        </form>
        <p class="muted">
          {list.total.toLocaleString('en')} opted-out {list.total === 1 ? 'phone' : 'phones'}
          {phone && !search ? ` matching ${phone}` : ''} · <a href={`${base}/opt-outs.csv`}>Download CSV</a>
        </p>
        <PagedTable
          columns={[
            { header: 'Phone', cell: (o) => o.phone, class: 'nowrap' },
            { header: 'Opted out', cell: (o) => o.opted_out_at, class: 'nowrap' },
            { header: 'How', cell: (o) => `${SOURCES[o.source] ?? o.source}${o.detail ? ` (${o.detail})` : ''}` },
            { header: 'By', cell: (o) => o.by, class: 'wrap', phone: false },
            {
              header: 'Opt back in',
              cell: (o) => (
                <form method="post" action={`${base}/opt-outs/remove`}>
                  <Csrf session={session} />
                  <FormToken session={session} />
                  <input type="hidden" name="phone" value={o.phone} />
                  <button type="submit" class="secondary" aria-label={`Opt back in ${o.phone}`}>
                    Opt back in
                  </button>
                </form>
              ),
            },
          ]}
          rows={list.items}
          empty="No opted-out phones."
          pager={{ label: 'Pages of opt-outs', page: pageNumber, pages, href: link }}
        />
        <h2>Opt a phone out</h2>
        <form class="stack card" method="post" action={`${base}/opt-outs`}>
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={state} form="add" />
          <Field state={state} form="add" name="phone" label="Phone" type="tel" required maxlength={40} placeholder="0812-3456-7890" />
          <button type="submit">Opt out</button>
        </form>
        <h2>Import from CSV</h2>
        <form class="stack card" method="post" action={`${base}/opt-outs/import`} enctype="multipart/form-data">
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={state} form="import" />
          <p class="muted">
            A header row naming a phone column (other columns are ignored, so a downloaded CSV imports again), or one phone a line. At most
            10,000 rows and 2 MB. Bad lines are reported and skipped; the rest are opted out.
          </p>
          <label>
            CSV file
            <input type="file" name="file" accept=".csv,text/csv" />
          </label>
          <Field state={state} form="import" name="csv" label="Or paste the CSV text" rows={5} placeholder={'phone\n0812-3456-7890'} />
          <button type="submit">Import opt-outs</button>
        </form>
      </Layout>,
      search ? 422 : (options.status ?? 200),
    )
  }

  async function csvTextOf(body: unknown): Promise<string | { error: string }> {
    const file = (body as Record<string, unknown> | null)?.file
    if (file instanceof File && file.size > 0) {
      if (file.size > MAX_IMPORT_BYTES) return { error: 'The file is over 2 MB; at most 2 MB can be imported at once. Split the file.' }
      return await file.text()
    }
    const text = field(body, 'csv')
    if (text.length > MAX_IMPORT_BYTES) return { error: 'The pasted text is over 2 MB; at most 2 MB can be imported at once. Split it.' }
    if (text.trim() === '') return { error: 'Choose a CSV file or paste the CSV text.' }
    return text
  }

  const app = pageRoutes()
  for (const prefix of ['', '/accounts/:id']) {
    const accountOf = (params: Record<string, string>) => (prefix ? params.id : undefined)
    const by = (scope: Scope, request: Request) => ({ user: scope.session.user, address: d.addressOf(request) })
    app
      .get(`${prefix}/opt-outs`, async ({ request, params, query }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const flashed = scope.session.flashes.find((f) => f.report)
        return optOutsPage(
          scope,
          { phone: textParam(query, 'phone'), page: textParam(query, 'page') },
          { report: flashed?.report as ImportReport | undefined },
        )
      })
      .get(`${prefix}/opt-outs.csv`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const { csv } = optOutsCsv(formatTimes(await exportOptOuts(await scope.read(), scope.accountId), d.tz))
        return csvDownload(csv, `opt-outs-account-${scope.accountId}.csv`)
      })
      .post(`${prefix}/opt-outs`, ({ request, body, params }) =>
        d.formAction(
          request,
          body,
          inScope(d, request, accountOf(params)),
          (scope) => {
            const to = `${scope.base}/opt-outs`
            return d.once(scope.session, body, to, async (tx) => {
              const { optOut, created } = await addOptOut(
                tx,
                d.deps.clock,
                d.tz,
                scope.accountId,
                field(body, 'phone'),
                'dashboard',
                by(scope, request),
              )
              return { to, notice: created ? `${optOut.phone} is opted out.` : `${optOut.phone} was opted out already.` }
            })
          },
          (message, status, scope) => optOutsPage(scope, {}, { state: formState('add', body, ['phone'], message), status }),
        ),
      )
      .post(`${prefix}/opt-outs/remove`, ({ request, body, params }) =>
        d.formAction(
          request,
          body,
          inScope(d, request, accountOf(params)),
          (scope) => {
            const to = `${scope.base}/opt-outs`
            return d.once(scope.session, body, to, async (tx) => {
              const { phone } = await removeOptOut(
                tx,
                d.deps.clock,
                d.tz,
                scope.accountId,
                field(body, 'phone'),
                'dashboard',
                by(scope, request),
              )
              return { to, notice: `${phone} is opted back in: it may be sent to again.` }
            })
          },
          (message, status, scope) => optOutsPage(scope, {}, { state: formState('add', body, ['phone'], message), status }),
        ),
      )
      .post(`${prefix}/opt-outs/import`, ({ request, body, params }) => {
        const refuse = (scope: Scope, message: string) =>
          optOutsPage(scope, {}, { state: formState('import', body, ['csv'], message), status: 422 })
        return d.formAction(
          request,
          body,
          inScope(d, request, accountOf(params)),
          async (scope) => {
            const text = await csvTextOf(body)
            if (typeof text !== 'string') return refuse(scope, text.error)
            const to = `${scope.base}/opt-outs`
            return d.once(scope.session, body, to, async (tx) => {
              const report = await importOptOuts(tx, d.deps.clock, d.tz, scope.accountId, text, 'dashboard', by(scope, request))
              return { to, report }
            })
          },
          (message, _status, scope) => refuse(scope, message),
        )
      })
  }
  return app
}

function ImportResult(props: { report: ImportReport }) {
  const { report } = props
  return (
    <section class="card" aria-labelledby="import-report">
      <h2 id="import-report">Import report</h2>
      <div class="stats">
        {(
          [
            ['accepted', 'Accepted', report.accepted],
            ['duplicates', 'Duplicates', report.duplicates],
            ['invalid', 'Invalid', report.invalid.length],
          ] as const
        ).map(([id, label, n]) => (
          <div class="card stat">
            <div class="value" id={`import-${id}`}>
              {n.toLocaleString('en')}
            </div>
            <div class="label">{label}</div>
          </div>
        ))}
      </div>
      {report.invalid.length > 0 ? (
        <>
          <h3>Invalid lines (skipped)</h3>
          <PagedTable
            columns={[
              { header: 'Line', cell: (b) => b.line },
              { header: 'Problem', cell: (b) => b.error },
            ]}
            rows={report.invalid}
          />
        </>
      ) : null}
    </section>
  )
}
