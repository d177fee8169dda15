// Which account a page of an account is about. A member's page (/dashboard/<page>): always the
// session's own account. The operator's same page (/dashboard/accounts/:id/<page>): the account of
// the URL, 404 when it does not exist; members get 404 there, and operators on the member paths.

import { type Dashboard, redirect } from './context'
import { scopeOf, type Scope } from './account-scope'
import type { Session } from './session'

export type { Scope } from './account-scope'

/** The account scope of a page (account-scope.ts); `loaded`: the session, when the caller has read it already. */
export async function accountScope(
  d: Dashboard,
  request: Request,
  accountParam?: string,
  loaded?: Session | null,
): Promise<Scope | Response> {
  const session = loaded === undefined ? await d.view(request) : loaded
  if (session === null) return redirect('/dashboard/sign-in')
  return session instanceof Response ? session : scopeOf(d, session, accountParam)
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
