// Components shared by the dashboard's pages.

import { h } from './jsx'

/** Rows per page of the dashboard's paged lists. */
export const PAGE_SIZE = 50

/** `?offset=` of a paged list: a whole number, else 0. */
export const offsetOf = (value: unknown) => {
  const text = typeof value === 'string' ? value : ''
  return /^\d{1,9}$/.test(text) ? Number(text) : 0
}

/** Links to the newer and older pages of a list. */
export function Pager(props: { label: string; path: string; offset: number; total: number; extra?: string }) {
  const at = (offset: number) => `${props.path}?${props.extra ? `${props.extra}&` : ''}offset=${offset}`
  return (
    <nav class="pager" aria-label={props.label}>
      {props.offset > 0 ? <a href={at(Math.max(0, props.offset - PAGE_SIZE))}>Newer</a> : null}
      {props.offset + PAGE_SIZE < props.total ? <a href={at(props.offset + PAGE_SIZE)}>Older</a> : null}
    </nav>
  )
}
