// Contacts: list with search and pages, add one, and import a CSV file (name, phone, email, city,
// tags) that reports every bad row with its line and reason, then imports the valid rows or nothing,
// as the user chose. A member's own account at /dashboard/contacts; an operator's view of any
// account at /dashboard/accounts/:id/contacts.

import { h, Fragment } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { PagedTable } from '../../dashboard/components'
import { type Dashboard, field, orError, redirect, respond, pageRoutes } from '../../dashboard/context'
import { changeScope, titleOf, viewScope, type Scope } from '../accounts/scope'
import { ApiError } from '../../http/errors'
import { parseCsv } from '../../lib/csv'
import { audit } from '../users/service'
import { contactValues, createContact, importContacts, listContacts, type ContactValues } from './service'

const PAGE_SIZE = 50
export const MAX_IMPORT_ROWS = 10_000
export const MAX_IMPORT_BYTES = 2 * 1024 * 1024
const COLUMNS = ['name', 'phone', 'email', 'city', 'tags'] as const
type Column = (typeof COLUMNS)[number]

/** A query parameter given once, as text (a repeated one is ignored). */
const textParam = (query: unknown, name: string) => {
  const value = (query as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

type BadRow = { line: number; reason: string }
type Checked = { rows: { line: number; values: ContactValues }[]; bad: BadRow[] }

/** The rows of a CSV text, each checked by the contact service's own rules; duplicates within the file are bad rows too. */
export function checkContactsCsv(text: string): Checked | { error: string } {
  const records = parseCsv(text)
  if ('error' in records) return { error: `The CSV cannot be read: ${records.error}.` }
  const [header, ...data] = records
  if (!header) return { error: 'The CSV is empty: it needs a header row (name, phone, email, city, tags) and at least one row.' }
  const names = header.fields.map((f) => f.trim().toLowerCase())
  const unknown = names.filter((n) => !(COLUMNS as readonly string[]).includes(n))
  if (unknown.length > 0) {
    return { error: `Unknown column ${unknown.map((u) => `"${u}"`).join(', ')} in the header row: the columns are ${COLUMNS.join(', ')}.` }
  }
  const repeated = names.find((n, i) => names.indexOf(n) !== i)
  if (repeated) return { error: `The column "${repeated}" appears twice in the header row.` }
  for (const needed of ['name', 'phone']) {
    if (!names.includes(needed))
      return { error: `The header row has no "${needed}" column (the columns are ${COLUMNS.join(', ')}, in any order).` }
  }
  if (data.length === 0) return { error: 'The CSV has a header row but no contacts.' }
  if (data.length > MAX_IMPORT_ROWS) {
    return {
      error: `The CSV has ${data.length.toLocaleString('en')} rows; at most ${MAX_IMPORT_ROWS.toLocaleString('en')} can be imported at once. Split the file.`,
    }
  }
  const rows: Checked['rows'] = []
  const bad: BadRow[] = []
  const firstLineOf = new Map<string, number>()
  for (const record of data) {
    if (record.fields.length > names.length) {
      bad.push({ line: record.line, reason: `${record.fields.length} fields, but the header row has ${names.length} columns` })
      continue
    }
    const get = (column: Column) => {
      const at = names.indexOf(column)
      return at < 0 ? undefined : (record.fields[at] ?? '')
    }
    try {
      const values = contactValues({
        name: get('name') ?? '',
        phone: get('phone') ?? '',
        email: get('email'),
        city: get('city'),
        tags: get('tags'),
      })
      const first = firstLineOf.get(values.phone)
      if (first !== undefined) {
        bad.push({ line: record.line, reason: `phone: ${values.phone} already appears on line ${first}` })
        continue
      }
      firstLineOf.set(values.phone, record.line)
      rows.push({ line: record.line, values })
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      bad.push({ line: record.line, reason: error.message })
    }
  }
  return { rows, bad }
}

export function contactPages(d: Dashboard) {
  async function contactsPage(
    scope: Scope,
    query: { q?: string; page?: string },
    options: { error?: string; status?: number; notice?: string } = {},
  ) {
    const { session, base } = scope
    const term = (query.q ?? '').trim().slice(0, 200)
    const pageNumber = /^\d{1,6}$/.test(query.page ?? '') ? Math.max(1, Number(query.page)) : 1
    const list = await listContacts(
      d.sql,
      d.tz,
      { accountId: scope.accountId, keyId: 0 },
      { limit: PAGE_SIZE, offset: (pageNumber - 1) * PAGE_SIZE },
      term,
    )
    const pages = Math.max(1, Math.ceil(list.total / PAGE_SIZE))
    const link = (n: number) => `${base}/contacts?${new URLSearchParams({ ...(term ? { q: term } : {}), page: String(n) })}`
    return respond(
      <Layout title={titleOf(scope, 'Contacts')} session={session} error={options.error} notice={options.notice}>
        <form class="inline card" method="get" action={`${base}/contacts`} role="search">
          <label>
            Search name, phone or e-mail
            <input type="search" name="q" value={term} maxlength={200} />
          </label>
          <button type="submit">Search</button>
        </form>
        <p class="muted">
          {list.total.toLocaleString('en')} {list.total === 1 ? 'contact' : 'contacts'}
          {term ? ` matching “${term}”` : ''}
        </p>
        <PagedTable
          columns={[
            { header: 'Name', cell: (c) => c.name },
            { header: 'Phone', cell: (c) => c.phone, class: 'nowrap' },
            { header: 'E-mail', cell: (c) => c.email ?? '', class: 'wrap' },
            { header: 'City', cell: (c) => c.city ?? '' },
            { header: 'Tags', cell: (c) => c.tags.join(', ') },
            { header: 'Added', cell: (c) => c.created_at, class: 'nowrap', phone: false },
          ]}
          rows={list.items}
          pager={{ label: 'Pages of contacts', page: pageNumber, pages, href: link }}
        />
        <h2>Add a contact</h2>
        <form class="stack card" method="post" action={`${base}/contacts`}>
          <Csrf session={session} />
          <label>
            Name
            <input name="name" required maxlength={200} />
          </label>
          <label>
            Phone
            <input name="phone" type="tel" required maxlength={40} placeholder="0812-3456-7890" />
          </label>
          <label>
            E-mail
            <input name="email" type="email" maxlength={254} />
          </label>
          <label>
            City
            <input name="city" maxlength={200} />
          </label>
          <label>
            Tags (separated by commas)
            <input name="tags" placeholder="vip, reseller" />
          </label>
          <button type="submit">Add contact</button>
        </form>
        <h2>Import from CSV</h2>
        <form class="stack card" method="post" action={`${base}/contacts/import`} enctype="multipart/form-data">
          <Csrf session={session} />
          <p class="muted">
            A header row is required; the columns are name, phone, email, city and tags, in any order (name and phone are needed). At most{' '}
            {MAX_IMPORT_ROWS.toLocaleString('en')} rows and 2 MB.
          </p>
          <label>
            CSV file
            <input type="file" name="file" accept=".csv,text/csv" />
          </label>
          <label>
            Or paste the CSV text
            <textarea name="csv" rows={5} placeholder={'name,phone,tags\nBudi,0812-3456-7890,vip'}></textarea>
          </label>
          <fieldset>
            <legend>When some rows are bad</legend>
            <label class="choice">
              <input type="radio" name="mode" value="valid" checked />
              Import the valid rows
            </label>
            <label class="choice">
              <input type="radio" name="mode" value="all" />
              Import nothing if any row is bad
            </label>
          </fieldset>
          <button type="submit">Import contacts</button>
        </form>
      </Layout>,
      options.status ?? 200,
    )
  }

  function summaryPage(scope: Scope, result: { imported: number; bad: BadRow[]; allOrNothing: boolean }, status: number) {
    const nothing = result.allOrNothing && result.bad.length > 0
    return respond(
      <Layout
        title={titleOf(scope, 'Contact import')}
        session={scope.session}
        notice={nothing ? undefined : `${result.imported.toLocaleString('en')} ${result.imported === 1 ? 'contact' : 'contacts'} imported.`}
        error={
          nothing
            ? `Nothing was imported: ${result.bad.length.toLocaleString('en')} ${result.bad.length === 1 ? 'row is' : 'rows are'} bad.`
            : undefined
        }
      >
        <div class="stats">
          <div class="card stat">
            <div class="value" id="imported">
              {result.imported.toLocaleString('en')}
            </div>
            <div class="label">Imported</div>
          </div>
          <div class="card stat">
            <div class="value" id="bad-rows">
              {result.bad.length.toLocaleString('en')}
            </div>
            <div class="label">Bad rows</div>
          </div>
        </div>
        {result.bad.length > 0 ? (
          <>
            <h2>Bad rows</h2>
            <PagedTable
              columns={[
                { header: 'Line', cell: (b) => b.line },
                { header: 'Reason', cell: (b) => b.reason },
              ]}
              rows={result.bad}
            />
          </>
        ) : null}
        <p>
          <a href={`${scope.base}/contacts`}>Back to the contacts</a>
        </p>
      </Layout>,
      status,
    )
  }

  async function csvTextOf(body: unknown): Promise<string | { error: string }> {
    const file = (body as Record<string, unknown> | null)?.file
    if (file instanceof File && file.size > 0) {
      if (file.size > MAX_IMPORT_BYTES)
        return { error: `The file is ${(file.size / 1024 / 1024).toFixed(1)} MB; at most 2 MB can be imported at once. Split the file.` }
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
    app
      .get(`${prefix}/contacts`, async ({ request, params, query }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        return orError(
          () => contactsPage(scope, { q: textParam(query, 'q'), page: textParam(query, 'page') }),
          (message, status) => contactsPage(scope, {}, { error: message, status }),
        )
      })
      .post(`${prefix}/contacts`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        return orError(
          async () => {
            const contact = await createContact(
              d.sql,
              d.tz,
              { accountId: scope.accountId, keyId: 0 },
              {
                name: field(body, 'name'),
                phone: field(body, 'phone'),
                email: field(body, 'email'),
                city: field(body, 'city'),
                tags: field(body, 'tags'),
              },
            )
            await audit(d.sql, {
              user: scope.session.user,
              address: d.addressOf(request, server),
              accountId: scope.accountId,
              action: 'contact created',
              detail: { contact_id: contact.id, phone: contact.phone },
            })
            return redirect(`${scope.base}/contacts`)
          },
          (message, status) => contactsPage(scope, {}, { error: message, status }),
        )
      })
      .post(`${prefix}/contacts/import`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const mode = field(body, 'mode')
        if (mode !== 'valid' && mode !== 'all') {
          return contactsPage(scope, {}, { error: 'Choose whether to import the valid rows or nothing when a row is bad.', status: 422 })
        }
        const text = await csvTextOf(body)
        if (typeof text !== 'string') return contactsPage(scope, {}, { error: text.error, status: 422 })
        const checked = checkContactsCsv(text)
        if ('error' in checked) return contactsPage(scope, {}, { error: checked.error, status: 422 })
        const allOrNothing = mode === 'all'
        if (allOrNothing && checked.bad.length > 0) return summaryPage(scope, { imported: 0, bad: checked.bad, allOrNothing }, 422)
        const done = await importContacts(d.sql, scope.accountId, checked.rows, allOrNothing)
        const bad = [...checked.bad, ...done.bad].sort((a, b) => a.line - b.line)
        if (done.imported > 0) {
          await audit(d.sql, {
            user: scope.session.user,
            address: d.addressOf(request, server),
            accountId: scope.accountId,
            action: 'contacts imported',
            detail: { imported: done.imported, bad_rows: bad.length, mode },
          })
        }
        return summaryPage(scope, { imported: done.imported, bad, allOrNothing }, allOrNothing && bad.length > 0 ? 422 : 200)
      })
  }
  return app
}
