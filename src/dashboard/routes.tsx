// The dashboard at /dashboard: server-rendered pages, plain forms, post-redirect-get. Public pages
// (sign-in, the one-time link that sets a password, the stylesheet) and pages behind the session
// guard, one module each under pages/. Members see their own account only: it comes from the
// session, never from the URL; operators see every account. Pages call the same services as the
// admin API.

import { Elysia } from 'elysia'
import type { Deps } from '../deps'
import { dashboardContext, redirect, respond } from './context'
import { h } from './jsx'
import { Layout } from './layout'
import type { ErrorPages } from '../http/shell'
import { signInPages } from '../modules/users/sign-in'
import { overviewPages } from '../modules/accounts/overview'
import { keyPages } from '../modules/accounts/key-pages'
import { accountPages } from '../modules/accounts/pages'
import { contactPages } from '../modules/contacts/pages'
import { templatePages } from '../modules/templates/pages'
import { campaignPages } from '../modules/campaigns/pages'
import { messagePages } from '../modules/messages/pages'
import { ledgerPages } from '../modules/ledger/pages'
import { webhookPages } from '../modules/webhooks/pages'
import { operatorPages } from '../modules/users/pages'

export function dashboardRoutes(deps: Deps) {
  const d = dashboardContext(deps)
  // Everything but the public pages sits behind this guard: no session, no page (each page still
  // checks the role, the account and, for changes, the CSRF rules itself).
  const guarded = new Elysia({ name: 'dashboard-guard' })
    .onBeforeHandle(async ({ request }) => ((await d.sessionOf(request)) ? undefined : redirect('/dashboard/sign-in')))
    .use(overviewPages(d))
    .use(keyPages(d))
    .use(accountPages(d))
    .use(contactPages(d))
    .use(templatePages(d))
    .use(campaignPages(d))
    .use(messagePages(d))
    .use(ledgerPages(d))
    .use(webhookPages(d))
    .use(operatorPages(d))
  return new Elysia({ name: 'dashboard' }).use(signInPages(d)).use(guarded)
}

/** The dashboard's answer to what no page handles (an unknown path, an unreadable form, a failure). */
export const dashboardErrorPages: ErrorPages = {
  prefix: '/dashboard',
  render: (status, message) => respond(<Layout title={status === 404 ? 'Not found' : 'Something went wrong'} error={message} />, status),
}
