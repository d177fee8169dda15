// Components shared by the dashboard's pages: the list (a table that becomes cards on a phone) and
// its pager.

import { h, Fragment, type Child } from './jsx'

/** Rows per page of the dashboard's paged lists. */
export const PAGE_SIZE = 50

/** `?offset=` of a paged list: a whole number, else 0. */
export const offsetOf = (value: unknown) => {
  const text = typeof value === 'string' ? value : ''
  return /^\d{1,9}$/.test(text) ? Number(text) : 0
}

export type PagerProps = {
  /** Names the pager for screen readers, e.g. "Pages of the audit log". */
  label: string
  /** 1-based. */
  page: number
  pages: number
  href: (page: number) => string
}

/** The page's number and links to the previous and next pages; nothing for a list of one page. */
export function Pager(props: PagerProps) {
  if (props.pages <= 1 && props.page <= 1) return <></>
  return (
    <nav class="pager" aria-label={props.label}>
      {props.page > 1 ? (
        <a rel="prev" href={props.href(Math.min(props.page - 1, props.pages))}>
          Previous
        </a>
      ) : null}
      <span>
        Page {props.page.toLocaleString('en')} of {props.pages.toLocaleString('en')}
      </span>
      {props.page < props.pages ? (
        <a rel="next" href={props.href(props.page + 1)}>
          Next
        </a>
      ) : null}
    </nav>
  )
}

/** The pager of a list read with `?offset=`, `size` rows a page: `at(offset)` links to the rows from `offset` on. */
export const offsetPager = (
  label: string,
  offset: number,
  total: number,
  at: (offset: number) => string,
  size = PAGE_SIZE,
): PagerProps => ({
  label,
  page: Math.floor(offset / size) + 1,
  pages: Math.max(1, Math.ceil(total / size)),
  href: (page) => at((page - 1) * size),
})

export type Column<T> = {
  header: string
  cell: (row: T) => Child
  /** false: left out on a phone, where each row is a card (default: shown). */
  phone?: boolean
  /** Classes of the column's cells, e.g. `num` (right-aligned) or `nowrap`. */
  class?: string
}

/**
 * A list as a table; on a phone (see style.css) each row is a card whose cells carry their column's
 * header (data-label), so nothing scrolls sideways. `detail`: a full-width row under a row (e.g. a
 * delivery's attempts). `empty`: what to say instead of a table without rows. A pager follows when given.
 */
export function PagedTable<T>(props: { columns: Column<T>[]; rows: T[]; detail?: (row: T) => Child; empty?: string; pager?: PagerProps }) {
  const { columns } = props
  const classOf = (c: Column<T>) => [c.class, c.phone === false ? 'wide' : undefined].filter(Boolean).join(' ') || undefined
  return (
    <>
      {props.rows.length === 0 ? (
        props.empty ? (
          <p class="muted">{props.empty}</p>
        ) : null
      ) : (
        <table class="list">
          <thead>
            <tr>
              {columns.map((c) => (
                <th scope="col" class={classOf(c)}>
                  {c.header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {props.rows.map((row) => {
              const detail = props.detail?.(row)
              return (
                <>
                  <tr>
                    {columns.map((c) => (
                      <td data-label={c.header} class={classOf(c)}>
                        {c.cell(row)}
                      </td>
                    ))}
                  </tr>
                  {detail ? (
                    <tr class="sub">
                      <td colspan={columns.length}>{detail}</td>
                    </tr>
                  ) : null}
                </>
              )
            })}
          </tbody>
        </table>
      )}
      {props.pager ? <Pager {...props.pager} /> : null}
    </>
  )
}
