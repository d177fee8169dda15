// Which account a page is about: a member's own (from the session, never the URL), or for an
// operator the account in /dashboard/accounts/:id/... (404 when it does not exist). Members get 404
// on the operator's paths, operators on the members' ones.

import type { Dashboard } from './context'
import { notFound } from './context'
import type { Session } from './session'

export type Scope = { session: Session; accountId: number; /** the page's path prefix */ base: string; accountName: string | null }

export async function scopeOf(d: Dashboard, session: Session, accountParam: string | undefined): Promise<Scope | Response> {
  if (accountParam === undefined) {
    if (session.user.role !== 'member' || session.user.account_id === null) return notFound(session)
    return { session, accountId: session.user.account_id, base: '/dashboard', accountName: null }
  }
  if (session.user.role !== 'operator' || !/^\d{1,15}$/.test(accountParam)) return notFound(session)
  const id = Number(accountParam)
  const [account] = await d.sql<{ name: string }[]>`select name from accounts where id = ${id}`
  if (!account) return notFound(session)
  return { session, accountId: id, base: `/dashboard/accounts/${id}`, accountName: account.name }
}

/** A page (GET). */
export async function viewScope(d: Dashboard, request: Request, accountParam: string | undefined): Promise<Scope | Response> {
  const session = await d.view(request)
  return session instanceof Response ? session : scopeOf(d, session, accountParam)
}

/** A change (POST): the CSRF checks of d.change first. */
export async function changeScope(d: Dashboard, request: Request, body: unknown, accountParam: string | undefined) {
  const session = await d.change(request, body)
  return session instanceof Response ? session : scopeOf(d, session, accountParam)
}

/** "Contacts" for a member, "Contacts · Toko Budi" for an operator looking at an account. */
export const titleOf = (scope: Scope, title: string) => (scope.accountName === null ? title : `${title} · ${scope.accountName}`)

/** An id in a path: a positive whole number, or null (then 404). */
export const idParam = (value: string | undefined) => (value && /^\d{1,15}$/.test(value) ? Number(value) : null)
