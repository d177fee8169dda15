// Contacts: list with search and pages, add one, and import a CSV file (name, phone, email, city,
// tags, and a column `attr:KEY` per attribute) that reports every bad row with its line and reason,
// then imports the valid rows or nothing, as the user chose; export them all in the same columns. A
// contact's page shows it and changes its attributes (one `name = value` a line). A member's own
// account at /dashboard/contacts; an operator's view of any account at /dashboard/accounts/:id/contacts.

import { h, Fragment } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, csvDownload, field, notFound, orError, respond, pageRoutes } from '../../dashboard/context'
import { Field, FormProblem, FormToken, PagedTable, formState, type FormState } from '../../dashboard/components'
import { AccountLink, changeScope, idParam, inScope, titleOf, viewScope, type Scope } from '../accounts/scope'
import { ApiError, badValue } from '../../http/errors'
import { csvText, parseCsv } from '../../lib/csv'
import { audit } from '../users/service'
import { formatTimes } from '../../lib/time'
import {
  MAX_EMAIL,
  MAX_SEARCH,
  MAX_TAG,
  MAX_TAGS,
  MAX_TEXT,
  MAX_ATTRIBUTES,
  MAX_ATTRIBUTE_KEY,
  MAX_ATTRIBUTE_VALUE,
  attributeValues,
  changeContactAttributes,
  contactValues,
  createContact,
  exportContacts,
  getContact,
  importContacts,
  listContacts,
  type Attributes,
  type ContactValues,
} from './service'

const PAGE_SIZE = 50
export const MAX_IMPORT_ROWS = 10_000
export const MAX_IMPORT_BYTES = 2 * 1024 * 1024
const COLUMNS = ['name', 'phone', 'email', 'city', 'tags'] as const
type Column = (typeof COLUMNS)[number]
/** A CSV column holding one attribute: `attr:order_id` (the prefix in any case, the key as written). */
const ATTRIBUTE_COLUMN = /^attr:/i
const CONTACT_FIELDS = [...COLUMNS, 'attributes'] as const
const IMPORT_FIELDS = ['csv', 'mode'] as const
const ATTRIBUTES_HELP = `One name = value a line; names are letters, digits and underscores (at most ${MAX_ATTRIBUTE_KEY}), at most ${MAX_ATTRIBUTES} attributes, each value at most ${MAX_ATTRIBUTE_VALUE.toLocaleString('en')} characters`

/**
 * The attributes of a form's text, one `name = value` a line (spaces around both trimmed, blank lines
 * skipped, an empty value meaning none); a 422 (ApiError) naming the line otherwise. The rules of the
 * names and values are the service's (attributeValues), checked when the contact is written.
 */
export function attributeLines(text: string): Record<string, string> {
  const out = new Map<string, string>()
  text.split(/\r\n|\r|\n/).forEach((line, i) => {
    if (line.trim() === '') return
    const at = line.indexOf('=')
    if (at < 0) throw badValue(`attributes: line ${i + 1} has no "=": write one name = value a line`)
    const key = line.slice(0, at).trim()
    if (out.has(key)) throw badValue(`attributes: line ${i + 1}: ${key} is given twice`)
    out.set(key, line.slice(at + 1).trim())
  })
  return Object.fromEntries(out)
}

/** Attributes as the form shows them: one `name = value` a line. */
const attributesText = (attributes: Attributes) =>
  Object.entries(attributes)
    .map(([key, value]) => `${key} = ${value}`)
    .join('\n')

/** A service's message about one attribute (`attributes.order_id: ...`) as a form shows it, at its field. */
const atAttributesField = (message: string) => message.replace(/^attributes\./, 'attributes: ')

/**
 * Attributes in a list's cell: each `name = value` a line (the column stays narrow beside the e-mails), a
 * long value cut (its page shows it whole).
 */
const attributesCell = (attributes: Attributes) => {
  const entries = Object.entries(attributes)
  if (entries.length === 0) return ''
  return (
    <ul class="plain">
      {entries.map(([key, value]) => (
        <li>{`${key} = ${value.length > 40 ? `${value.slice(0, 40)}…` : value}`}</li>
      ))}
    </ul>
  )
}

/** An e-mail address in a narrow column: it breaks before its @ first, anywhere only when a part is still too long. */
const emailCell = (email: string | null) => {
  const at = email?.lastIndexOf('@') ?? -1
  if (!email || at <= 0) return email ?? ''
  return (
    <>
      {email.slice(0, at)}
      <wbr />
      {email.slice(at)}
    </>
  )
}

/** A query parameter given once, as text (a repeated one is ignored). */
const textParam = (query: unknown, name: string) => {
  const value = (query as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

type BadRow = { line: number; reason: string }
/** What an import did, shown on its report page. */
type Report = { imported: number; bad: BadRow[]; allOrNothing: boolean }
/** An import of "nothing if any row is bad" that found bad rows: nothing changed, the report comes back at once. */
class NothingImported extends Error {
  constructor(readonly report: Report) {
    super('nothing imported')
  }
}
type Checked = { rows: { line: number; values: ContactValues }[]; bad: BadRow[] }

/** The rows of a CSV text, each checked by the contact service's own rules; duplicates within the file are bad rows too. */
export function checkContactsCsv(text: string): Checked | { error: string } {
  const records = parseCsv(text)
  if ('error' in records) return { error: `The CSV cannot be read: ${records.error}.` }
  const [header, ...data] = records
  if (!header) return { error: 'The CSV is empty: it needs a header row (name, phone, email, city, tags) and at least one row.' }
  // An attribute's column keeps its key as written (keys are case-sensitive); the others are read in any case.
  const names = header.fields.map((f) => {
    const name = f.trim()
    return ATTRIBUTE_COLUMN.test(name) ? `attr:${name.slice(5).trim()}` : name.toLowerCase()
  })
  const attributeColumns = names.filter((n) => ATTRIBUTE_COLUMN.test(n))
  const unknown = names.filter((n) => !(COLUMNS as readonly string[]).includes(n) && !ATTRIBUTE_COLUMN.test(n))
  if (unknown.length > 0) {
    return {
      error: `Unknown column ${unknown.map((u) => `"${u}"`).join(', ')} in the header row: the columns are ${COLUMNS.join(', ')}, and attr:NAME for each attribute.`,
    }
  }
  const repeated = names.find((n, i) => names.indexOf(n) !== i)
  if (repeated) return { error: `The column "${repeated}" appears twice in the header row.` }
  if (attributeColumns.length > MAX_ATTRIBUTES) {
    return { error: `The header row has ${attributeColumns.length} attribute columns; a contact has at most ${MAX_ATTRIBUTES} attributes.` }
  }
  for (const column of attributeColumns) {
    try {
      attributeValues({ [column.slice(5)]: 'x' })
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      return { error: `The column "${column}": ${error.message.replace(/^attributes\.[^:]*: /, '')}.` }
    }
  }
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
    const get = (column: Column | `attr:${string}`) => {
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
        attributes: Object.fromEntries(attributeColumns.map((column) => [column.slice(5), get(column as `attr:${string}`) ?? ''])),
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
  async function contactsPage(scope: Scope, query: { q?: string; page?: string }, options: { state?: FormState; status?: number } = {}) {
    const { session, base } = scope
    const term = (query.q ?? '').trim()
    const pageNumber = /^\d{1,6}$/.test(query.page ?? '') ? Math.max(1, Number(query.page)) : 1
    // A search longer than the service takes is refused at its field, never cut.
    const search: FormState | undefined =
      term.length > MAX_SEARCH
        ? { form: 'search', values: { q: term }, problem: { field: 'q', message: `search: must be at most ${MAX_SEARCH} characters` } }
        : undefined
    const list = search
      ? { items: [], total: 0 }
      : formatTimes(
          await listContacts(
            await scope.read(),
            { accountId: scope.accountId, keyId: 0 },
            { limit: PAGE_SIZE, offset: (pageNumber - 1) * PAGE_SIZE },
            term,
          ),
          d.tz,
        )
    const pages = Math.max(1, Math.ceil(list.total / PAGE_SIZE))
    const link = (n: number) => `${base}/contacts?${new URLSearchParams({ ...(term ? { q: term } : {}), page: String(n) })}`
    const { state } = options
    const mode = state?.form === 'import' ? state.values.mode : 'valid'
    return respond(
      <Layout title={titleOf(scope, 'Contacts')} session={session}>
        <AccountLink scope={scope} />
        <form class="inline card" method="get" action={`${base}/contacts`} role="search">
          <Field
            state={search}
            form="search"
            name="q"
            label="Search name, phone or e-mail"
            type="search"
            value={term}
            maxlength={MAX_SEARCH}
          />
          <button type="submit">Search</button>
        </form>
        <p class="muted">
          {list.total.toLocaleString('en')} {list.total === 1 ? 'contact' : 'contacts'}
          {term ? ` matching “${term}”` : ''}
        </p>
        <PagedTable
          columns={[
            { header: 'Name', cell: (c) => <a href={`${base}/contacts/${c.id}`}>{c.name}</a> },
            { header: 'Phone', cell: (c) => c.phone, class: 'nowrap' },
            { header: 'E-mail', cell: (c) => emailCell(c.email), class: 'wrap' },
            { header: 'City', cell: (c) => c.city ?? '' },
            { header: 'Tags', cell: (c) => c.tags.join(', ') },
            { header: 'Attributes', cell: (c) => attributesCell(c.attributes), class: 'wrap' },
            { header: 'Added', cell: (c) => c.created_at, class: 'nowrap', phone: false },
          ]}
          rows={list.items}
          pager={{ label: 'Pages of contacts', page: pageNumber, pages, href: link }}
        />
        <p>
          <a href={`${base}/contacts.csv`} download>
            Export all contacts as CSV
          </a>
        </p>
        <h2>Add a contact</h2>
        <form class="stack card" method="post" action={`${base}/contacts`}>
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={state} form="contact" />
          <Field state={state} form="contact" name="name" label="Name" required maxlength={MAX_TEXT} />
          <Field state={state} form="contact" name="phone" label="Phone" type="tel" required maxlength={40} placeholder="0812-3456-7890" />
          <Field state={state} form="contact" name="email" label="E-mail" type="email" maxlength={MAX_EMAIL} />
          <Field state={state} form="contact" name="city" label="City" maxlength={MAX_TEXT} />
          <Field
            state={state}
            form="contact"
            name="tags"
            label={`Tags (separated by commas; at most ${MAX_TAGS}, each at most ${MAX_TAG} characters)`}
            maxlength={MAX_TAGS * (MAX_TAG + 2)}
            placeholder="vip, reseller"
          />
          <Field
            state={state}
            form="contact"
            name="attributes"
            label="Attributes"
            hint={ATTRIBUTES_HELP}
            rows={3}
            placeholder={'order_id = INV-1001\ndue_date = 5 December'}
          />
          <button type="submit">Add contact</button>
        </form>
        <h2>Import from CSV</h2>
        <form class="stack card" method="post" action={`${base}/contacts/import`} enctype="multipart/form-data">
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={state} form="import" />
          <p class="muted">
            A header row is required; the columns are name, phone, email, city and tags, in any order (name and phone are needed), and
            attr:NAME for each attribute (attr:order_id; an empty cell is none). At most {MAX_IMPORT_ROWS.toLocaleString('en')} rows and 2
            MB. The export has these columns, so it imports again.
          </p>
          <label>
            CSV file
            <input type="file" name="file" accept=".csv,text/csv" />
          </label>
          <Field
            state={state}
            form="import"
            name="csv"
            label="Or paste the CSV text"
            rows={5}
            placeholder={'name,phone,tags,attr:order_id\nBudi,0812-3456-7890,vip,INV-1001'}
          />
          <fieldset>
            <legend>When some rows are bad</legend>
            <label class="choice">
              <input type="radio" name="mode" value="valid" checked={mode !== 'all'} />
              Import the valid rows
            </label>
            <label class="choice">
              <input type="radio" name="mode" value="all" checked={mode === 'all'} />
              Import nothing if any row is bad
            </label>
          </fieldset>
          <button type="submit">Import contacts</button>
        </form>
      </Layout>,
      search ? 422 : (options.status ?? 200),
    )
  }

  /** A contact's page: its fields, and its attributes with the form that changes them. */
  async function contactPage(scope: Scope, id: number, options: { state?: FormState; status?: number } = {}) {
    const { session, base } = scope
    const contact = formatTimes(await getContact(d.sql, scope.accountId, id), d.tz)
    const entries = Object.entries(contact.attributes)
    return respond(
      <Layout title={titleOf(scope, `Contact ${contact.name}`)} session={session}>
        <AccountLink scope={scope} />
        <dl class="facts card">
          <dt>Phone</dt>
          <dd>{contact.phone}</dd>
          <dt>E-mail</dt>
          <dd>{contact.email ?? 'none'}</dd>
          <dt>City</dt>
          <dd>{contact.city ?? 'none'}</dd>
          <dt>Tags</dt>
          <dd>{contact.tags.length > 0 ? contact.tags.join(', ') : 'none'}</dd>
          <dt>Added</dt>
          <dd>{contact.created_at}</dd>
        </dl>
        <h2>Attributes</h2>
        {entries.length === 0 ? (
          <p class="muted" id="no-attributes">
            No attributes yet.
          </p>
        ) : (
          <dl class="facts card attributes" id="attribute-list">
            {entries.map(([key, value]) => (
              <>
                <dt>{key}</dt>
                <dd>{value}</dd>
              </>
            ))}
          </dl>
        )}
        <form class="stack card" method="post" action={`${base}/contacts/${contact.id}/attributes`}>
          <Csrf session={session} />
          <FormProblem state={options.state} form="attributes" />
          <Field
            state={options.state}
            form="attributes"
            name="attributes"
            label="Attributes"
            hint={`${ATTRIBUTES_HELP}. Saving replaces them all: a line removed, or left without a value, removes that attribute.`}
            rows={Math.min(20, Math.max(4, entries.length + 2))}
            value={attributesText(contact.attributes)}
            placeholder={'order_id = INV-1001\ndue_date = 5 December'}
          />
          <button type="submit">Save attributes</button>
        </form>
        <p>
          <a href={`${base}/contacts`}>Back to the contacts</a>
        </p>
      </Layout>,
      options.status ?? 200,
    )
  }

  /** An import's report: shown once after the import's redirect (from its flash), or at once when nothing was imported. */
  function reportPage(scope: Scope, result: Report | null, status = 200) {
    const nothing = result !== null && result.allOrNothing && result.bad.length > 0
    return respond(
      <Layout
        title={titleOf(scope, 'Contact import')}
        session={scope.session}
        notice={
          result === null || nothing
            ? undefined
            : `${result.imported.toLocaleString('en')} ${result.imported === 1 ? 'contact' : 'contacts'} imported.`
        }
        error={
          nothing
            ? `Nothing was imported: ${result.bad.length.toLocaleString('en')} ${result.bad.length === 1 ? 'row is' : 'rows are'} bad.`
            : undefined
        }
      >
        <AccountLink scope={scope} />
        {result === null ? (
          <p>There is no import report to show: a report is shown once, right after its import.</p>
        ) : (
          <>
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
          </>
        )}
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
        return contactsPage(scope, { q: textParam(query, 'q'), page: textParam(query, 'page') })
      })
      .post(`${prefix}/contacts`, ({ request, body, params, server }) =>
        d.formAction(
          request,
          body,
          inScope(d, request, accountOf(params)),
          (scope) => {
            const to = `${scope.base}/contacts`
            return d.once(scope.session, body, to, async (tx) => {
              const contact = await createContact(
                tx,
                { accountId: scope.accountId, keyId: 0 },
                {
                  name: field(body, 'name'),
                  phone: field(body, 'phone'),
                  email: field(body, 'email'),
                  city: field(body, 'city'),
                  tags: field(body, 'tags'),
                  attributes: attributeLines(field(body, 'attributes')),
                },
              )
              await audit(tx, {
                user: scope.session.user,
                address: d.addressOf(request, server),
                accountId: scope.accountId,
                action: 'contact created',
                detail: { contact_id: contact.id, phone: contact.phone },
              })
              return { to, notice: `Contact ${contact.name} (${contact.phone}) added.` }
            })
          },
          (message, status, scope) =>
            contactsPage(scope, {}, { state: formState('contact', body, CONTACT_FIELDS, atAttributesField(message)), status }),
        ),
      )
      .get(`${prefix}/contacts.csv`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const contacts = await exportContacts(await scope.read(), scope.accountId)
        const keys = [...new Set(contacts.flatMap((c) => Object.keys(c.attributes)))].sort()
        const csv = csvText(
          [...COLUMNS, ...keys.map((key) => `attr:${key}`)],
          contacts.map((c) => [
            c.name,
            c.phone,
            c.email,
            c.city,
            c.tags.join(', '),
            ...keys.map((key) => (Object.hasOwn(c.attributes, key) ? c.attributes[key]! : null)),
          ]),
        )
        return csvDownload(csv, `contacts-account-${scope.accountId}.csv`)
      })
      .get(`${prefix}/contacts/:contact`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const id = idParam(params.contact)
        if (id === null) return notFound(scope.session)
        return orError(
          () => contactPage(scope, id),
          () => notFound(scope.session),
        )
      })
      .post(`${prefix}/contacts/:contact/attributes`, ({ request, body, params, server }) => {
        const id = idParam(params.contact)
        return d.formAction(
          request,
          body,
          inScope(d, request, accountOf(params)),
          async (scope) => {
            if (id === null) return notFound(scope.session)
            const contact = await d.sql.begin(async (tx) => {
              const changed = await changeContactAttributes(tx, scope.accountId, id, attributeLines(field(body, 'attributes')), {
                replace: true,
              })
              await audit(tx, {
                user: scope.session.user,
                address: d.addressOf(request, server),
                accountId: scope.accountId,
                action: 'contact attributes changed',
                detail: { contact_id: changed.id, keys: Object.keys(changed.attributes) },
              })
              return changed
            })
            const n = Object.keys(contact.attributes).length
            return d.finish(scope.session, {
              to: `${scope.base}/contacts/${contact.id}`,
              notice: `Attributes of ${contact.name} saved: ${n === 1 ? '1 attribute' : `${n} attributes`}.`,
            })
          },
          (message, status, scope) =>
            status === 404 || id === null
              ? notFound(scope.session)
              : contactPage(scope, id, { state: formState('attributes', body, ['attributes'], atAttributesField(message)), status }),
        )
      })
      .get(`${prefix}/contacts/import`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const flashed = scope.session.flashes.find((f) => f.report)
        return reportPage(scope, (flashed?.report as Report | undefined) ?? null)
      })
      .post(`${prefix}/contacts/import`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const refuse = (message: string) =>
          contactsPage(scope, {}, { state: formState('import', body, IMPORT_FIELDS, message), status: 422 })
        const mode = field(body, 'mode')
        if (mode !== 'valid' && mode !== 'all') return refuse('Choose whether to import the valid rows or nothing when a row is bad.')
        const text = await csvTextOf(body)
        if (typeof text !== 'string') return refuse(text.error)
        const checked = checkContactsCsv(text)
        if ('error' in checked) return refuse(checked.error)
        const allOrNothing = mode === 'all'
        if (allOrNothing && checked.bad.length > 0) return reportPage(scope, { imported: 0, bad: checked.bad, allOrNothing }, 422)
        const to = `${scope.base}/contacts/import`
        try {
          return await d.once(scope.session, body, `${scope.base}/contacts`, async (tx) => {
            const done = await importContacts(tx, scope.accountId, checked.rows, allOrNothing)
            const bad = [...checked.bad, ...done.bad].sort((a, b) => a.line - b.line)
            // Numbers the account has already make the whole file bad in this mode: nothing changed, the form may be sent again.
            if (allOrNothing && bad.length > 0) throw new NothingImported({ imported: 0, bad, allOrNothing })
            if (done.imported > 0) {
              await audit(tx, {
                user: scope.session.user,
                address: d.addressOf(request, server),
                accountId: scope.accountId,
                action: 'contacts imported',
                detail: { imported: done.imported, bad_rows: bad.length, mode },
              })
            }
            return { to, report: { imported: done.imported, bad, allOrNothing } satisfies Report }
          })
        } catch (error) {
          if (error instanceof NothingImported) return reportPage(scope, error.report, 422)
          throw error
        }
      })
  }
  return app
}
