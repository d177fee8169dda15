// Components shared by the dashboard's pages.

import { h, type Child } from './jsx'
import { FORM_TOKEN, issueFormToken } from './form-token'
import type { Session } from './session'

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
  /** The value when the form did not come back (e.g. what is stored now). */
  value?: string
  rows?: number
  [attribute: string]: unknown
}

/** A labelled input (or a textarea, given `rows`) with what was typed and its problem. */
export function Field(props: FieldProps) {
  const { state, form, name, label, value, rows, children: _, ...attributes } = props
  const { typed, attributes: control } = fieldProps(state, form, name)
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
      <FormError state={state} form={form} name={name} />
    </div>
  )
}
