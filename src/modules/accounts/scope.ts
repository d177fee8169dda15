// Which account a page of an account is about. A member's page (/dashboard/<page>): always the
// session's own account. The operator's same page (/dashboard/accounts/:id/<page>): the account of
// the URL, 404 when it does not exist; members get 404 there, and operators on the member paths.

import { type Dashboard, notFound, redirect } from '../../dashboard/context'
import { h } from '../../dashboard/jsx'
import type { Session } from '../../dashboard/session'
import { accountName } from './service'
import type { Sql } from '../../db/client'
import { readSql } from '../../http/reads'

export type Scope = {
  session: Session
  accountId: number
  /** the page's path prefix */
  base: string
  accountName: string | null
  /** Where the page's lists, charts and CSVs read: the replica, unless it has not replayed this user's last change (db/replica.ts). */
  read: () => Promise<Sql>
}

async function scopeOf(d: Dashboard, request: Request, session: Session, accountParam: string | undefined): Promise<Scope | Response> {
  const read = () => readSql(d.deps, request)
  if (accountParam === undefined) {
    if (session.user.role !== 'member' || session.user.account_id === null) return notFound(session)
    return { session, accountId: session.user.account_id, base: '/dashboard', accountName: null, read }
  }
  if (session.user.role !== 'operator' || !/^\d{1,15}$/.test(accountParam)) return notFound(session)
  const id = Number(accountParam)
  const name = await accountName(d.sql, id)
  if (name === null) return notFound(session)
  return { session, accountId: id, base: `/dashboard/accounts/${id}`, accountName: name, read }
}

/** A page (GET). */
export async function viewScope(d: Dashboard, request: Request, accountParam: string | undefined): Promise<Scope | Response> {
  const session = await d.view(request)
  return session instanceof Response ? session : scopeOf(d, request, session, accountParam)
}

/** A change (POST): the CSRF checks of d.change first. */
export async function changeScope(d: Dashboard, request: Request, body: unknown, accountParam: string | undefined) {
  const session = await d.change(request, body)
  return session instanceof Response ? session : scopeOf(d, request, session, accountParam)
}

/** A change (POST) through d.formAction: its target, the scope of the session's account or the URL's. */
export const inScope =
  (d: Dashboard, request: Request, accountParam: string | undefined) =>
  (session: Session): Promise<Scope | Response> =>
    scopeOf(d, request, session, accountParam)

/** "Contacts" for a member, "Contacts · Toko Budi" for an operator looking at an account. */
export const titleOf = (scope: Scope, title: string) => (scope.accountName === null ? title : `${title} · ${scope.accountName}`)

/** On an operator's page of an account: which account it is, a link back to its page. Nothing on a member's page. */
export const AccountLink = (props: { scope: Scope }) =>
  props.scope.accountName === null
    ? null
    : h(
        'p',
        { class: 'account-link' },
        'Account ',
        h('a', { href: `/dashboard/accounts/${props.scope.accountId}` }, props.scope.accountName),
      )

/** An id in a path: a positive whole number, or null (then 404). */
export const idParam = (value: string | undefined) => (value && /^\d{1,15}$/.test(value) ? Number(value) : null)

/** The account scope of a page (account-scope.ts); `loaded`: the session, when the caller has read it already. */
export async function accountScope(
  d: Dashboard,
  request: Request,
  accountParam?: string,
  loaded?: Session | null,
): Promise<Scope | Response> {
  const session = loaded === undefined ? await d.view(request) : loaded
  if (session === null) return redirect('/dashboard/sign-in')
  return session instanceof Response ? session : scopeOf(d, request, session, accountParam)
}

/** A query parameter as text; absent, repeated (an array) or blank is undefined. */
export function queryText(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name]
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined
}

/** `?page=` (1-based); a 422 message when it is not a whole number from 1. */
export function pageNumber(query: Record<string, unknown>): number | string {
  const text = queryText(query, 'page') ?? '1'
  if (!/^\d{1,9}$/.test(text) || Number(text) < 1) return 'page: must be a whole number from 1'
  return Number(text)
}

/** A link to the same list with other query parameters (blank ones left out). */
export function listHref(path: string, params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') search.set(k, String(v))
  const text = search.toString()
  return text ? `${path}?${text}` : path
}
