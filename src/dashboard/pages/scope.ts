// Which account a page of an account is about. A member's page (/dashboard/<page>): always the
// session's own account. The operator's same page (/dashboard/accounts/:id/<page>): the account of
// the URL, 404 when it does not exist; members get 404 there, and operators on the member paths.

import { type Dashboard, notFound, redirect } from '../context'
import type { Session } from '../session'
import { ApiError } from '../../http/errors'
import { getAccount } from '../../modules/admin/service'

export type Scope = { session: Session; accountId: number; /** Where the account's pages live. */ base: string }

export async function accountScope(
  d: Dashboard,
  request: Request,
  accountParam?: string,
  loaded?: Session | null,
): Promise<Scope | Response> {
  const session = loaded === undefined ? await d.sessionOf(request) : loaded
  if (!session) return redirect('/dashboard/sign-in')
  if (accountParam === undefined) {
    if (session.user.role !== 'member' || session.user.account_id === null) return notFound(session)
    return { session, accountId: session.user.account_id, base: '/dashboard' }
  }
  if (session.user.role !== 'operator' || !/^\d{1,15}$/.test(accountParam)) return notFound(session)
  const accountId = Number(accountParam)
  const account = await getAccount(d.sql, d.tz, accountId).catch((error) => {
    if (error instanceof ApiError && error.code === 'NOT_FOUND') return null
    throw error
  })
  if (!account) return notFound(session)
  return { session, accountId, base: `/dashboard/accounts/${accountId}` }
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
