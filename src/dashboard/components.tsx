// Components shared by the dashboard's pages: the list (a table that becomes cards on a phone) and
// its pager.

import { h, Fragment, type Child } from './jsx'
import { FORM_TOKEN, issueFormToken } from './form-token'
import type { Session } from './session'

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

/** A hidden field with a single-use token (form-token.ts): in every form whose change must happen once. */
export const FormToken = (props: { session: Session }) => <input type="hidden" name={FORM_TOKEN} value={issueFormToken(props.session)} />

/** A form that came back with a problem: which form of the page, what was typed, and the problem. */
export type FormState = {
  form: string
  values: Record<string, string>
  /** `field`: the field the problem names (`amount: must be ...`), or null for the form as a whole. */
  problem: { field: string | null; message: string } | null
}

/**
 * The state of form `form` after `message` refused it: what was typed in `names`, and the problem at
 * the field the message names (messages start with the field's name, as lib/validate words them).
 */
export function formState(form: string, body: unknown, names: readonly string[], message: string | null): FormState {
  const typed = (body ?? {}) as Record<string, unknown>
  const values = Object.fromEntries(names.map((n) => [n, typeof typed[n] === 'string' ? (typed[n] as string) : '']))
  const named = message === null ? undefined : /^([a-z_]+)(?:\[\d+\])?: /.exec(message)?.[1]
  return { form, values, problem: message === null ? null : { field: named && names.includes(named) ? named : null, message } }
}

const errorId = (form: string, name: string) => `${form}-${name}-error`

/**
 * A form control's state: what was typed (undefined when its form did not come back), and its
 * attributes: when the problem is its own, aria-invalid, aria-describedby naming the message, and
 * autofocus (there is no script to move the focus there).
 */
export function fieldProps(state: FormState | undefined, form: string, name: string) {
  const mine = state?.form === form ? state : undefined
  const invalid = mine?.problem?.field === name
  return {
    typed: mine?.values[name],
    attributes: {
      id: `${form}-${name}`,
      name,
      'aria-invalid': invalid ? 'true' : undefined,
      'aria-describedby': invalid ? errorId(form, name) : undefined,
      autofocus: invalid,
    },
  }
}

/** The problem of a field, where aria-describedby of its control points. */
export function FormError(props: { state: FormState | undefined; form: string; name: string }) {
  const { state, form, name } = props
  if (state?.form !== form || state.problem?.field !== name) return null
  return (
    <p class="field-error" id={errorId(form, name)}>
      {state.problem.message}
    </p>
  )
}

/** The problem of a whole form (one that names none of its fields), at the top of the form. */
export function FormProblem(props: { state: FormState | undefined; form: string }) {
  const { state, form } = props
  if (state?.form !== form || !state.problem || state.problem.field !== null) return null
  return (
    <p class="notice error" role="alert">
      {state.problem.message}
    </p>
  )
}

type FieldProps = {
  state: FormState | undefined
  form: string
  name: string
  label: Child
  /** The rules of what it takes, under the control in plain type (its description). */
  hint?: string
  /** The value when the form did not come back (e.g. what is stored now). */
  value?: string
  rows?: number
  [attribute: string]: unknown
}

/** A labelled input (or a textarea, given `rows`) with what was typed, its hint and its problem. */
export function Field(props: FieldProps) {
  const { state, form, name, label, hint, value, rows, children: _, ...attributes } = props
  const { typed, attributes: control } = fieldProps(state, form, name)
  const hintId = `${form}-${name}-hint`
  if (hint) control['aria-describedby'] = [hintId, control['aria-describedby']].filter(Boolean).join(' ')
  const shown = typed ?? value ?? ''
  return (
    <div class="field">
      <label>
        {label}
        {rows === undefined ? (
          <input {...attributes} {...control} value={attributes.type === 'password' ? undefined : shown} />
        ) : (
          <textarea {...attributes} {...control} rows={rows}>
            {shown}
          </textarea>
        )}
      </label>
      {hint ? (
        <p class="hint" id={hintId}>
          {hint}
        </p>
      ) : null}
      <FormError state={state} form={form} name={name} />
    </div>
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
