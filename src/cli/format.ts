// Text output: aligned tables, counted nouns, amounts with thousands separators. Dates are shown as
// the API gives them (`YYYY-MM-DD HH:MM:SS` in the service's TIMEZONE).

import type { Static, TObject } from '@sinclair/typebox'
import type { listFields } from '../http/models'

/** "1 account", "3 accounts", "0 deliveries" (give the plural when adding an s is wrong). */
export const count = (n: number, singular: string, plural = `${singular}s`) => `${amount(n)} ${n === 1 ? singular : plural}`

/** 1234567 → "1,234,567"; with `signed`, a + before positive amounts. */
export const amount = (n: number, signed = false) => `${signed && n > 0 ? '+' : ''}${n.toLocaleString('en-US')}`

/** Text from the database made safe for a terminal cell: control characters shown, long text cut. */
export function cell(value: string | number | boolean | null | undefined, max = 48): string {
  if (value === null || value === undefined) return '-'
  const text = String(value).replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => (c === '\n' ? '⏎' : '�'))
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

export type Column<T> = { header: string; value: (row: T) => string; right?: boolean }

/** Columns padded to their widest value, a header line first, numbers right-aligned. */
export function table<T>(columns: Column<T>[], rows: T[]): string {
  const cells = rows.map((row) => columns.map((c) => c.value(row)))
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)))
  const line = (values: string[]) =>
    values
      .map((v, i) => (columns[i]!.right ? v.padStart(widths[i]!) : i === values.length - 1 ? v : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n')
}

/** A list answer of the admin API (http/models.ts listOf) with items of type T. */
export type Page<T> = Static<TObject<typeof listFields>> & { items: T[] }

/**
 * A list page as a table with a count under it: "3 accounts", or, when the page is not all of it,
 * "51-100 of 230 ledger rows, newest first; --offset 100 for the next".
 */
export function listing<T>(page: Page<T>, noun: [string, string?], columns: Column<T>[], order = ''): string {
  const [singular, plural] = noun
  if (page.total === 0) return `no ${plural ?? `${singular}s`}`
  const counted = count(page.total, singular, plural)
  if (page.items.length === 0) return `${counted}; none from offset ${amount(page.offset)}`
  const first = page.offset + 1
  const last = page.offset + page.items.length
  const all = first === 1 && last === page.total
  const footer = all
    ? `${counted}${order ? `, ${order}` : ''}`
    : `${first}-${last} of ${counted}${order ? `, ${order}` : ''}${last < page.total ? `; --offset ${last} for the next` : ''}`
  return `${table(columns, page.items)}\n\n${footer}`
}
