// The dashboard's shell at /dashboard: its assets, the session guard in front of every page that is
// not public, and its error pages. The pages themselves live with their nouns (modules/<noun>/pages.tsx)
// and are composed by app.ts: server-rendered, plain forms, post-redirect-get. Members see their own
// account only (from the session, never the URL); operators see every account.

import { Elysia } from 'elysia'
import type { Deps } from '../deps'
import type { ErrorPages } from '../http/shell'
import { dashboardContext, redirect, respond, type Dashboard } from './context'
import type { Session } from './session'
import { h } from './jsx'
import { Layout } from './layout'
import { kind } from '../http/routes'
import css from './assets/style.css' with { type: 'text' }
import copyScript from './assets/copy.js' with { type: 'text' }
import formTokenScript from './assets/form-token.js' with { type: 'text' }
import campaignScript from './assets/campaign.js' with { type: 'text' }
import inboxScript from './assets/inbox.js' with { type: 'text' }
import sendersScript from './assets/senders.js' with { type: 'text' }
import templateEditorScript from './assets/template-editor.js' with { type: 'text' }
import favicon from './assets/favicon.svg' with { type: 'text' }

/** A module's dashboard pages: an Elysia plugin built from the dashboard's context. */
export type Pages = (d: Dashboard) => Elysia<any, any, any, any, any, any, any>

const ASSETS: Record<string, { text: string; type: string }> = {
  'style.css': { text: css, type: 'text/css' },
  'copy.js': { text: copyScript, type: 'text/javascript' },
  'form-token.js': { text: formTokenScript, type: 'text/javascript' },
  'campaign.js': { text: campaignScript, type: 'text/javascript' },
  'inbox.js': { text: inboxScript, type: 'text/javascript' },
  'senders.js': { text: sendersScript, type: 'text/javascript' },
  'template-editor.js': { text: templateEditorScript, type: 'text/javascript' },
  'favicon.svg': { text: favicon, type: 'image/svg+xml' },
}

const asset = (file: { text: string; type: string }) =>
  new Response(file.text, {
    headers: {
      'content-type': `${file.type}; charset=utf-8`,
      'cache-control': 'public, max-age=3600',
      'x-content-type-options': 'nosniff',
    },
  })

/** `open`: pages anyone may see (sign-in, the one-time link); `guarded`: every other page, behind the session guard. */
export function dashboardRoutes(deps: Deps, pages: { open: Pages[]; guarded: Pages[] }) {
  const d = dashboardContext(deps)
  // Everything but the public pages sits behind this guard: no session, no page (each page still
  // checks the role, the account and, for changes, the CSRF rules itself).
  const guarded = new Elysia({ name: 'dashboard-guard' }).onBeforeHandle(async ({ request }) =>
    (await d.sessionOf(request)) ? undefined : redirect('/dashboard/sign-in'),
  )
  for (const page of pages.guarded) guarded.use(page(d))
  const app = new Elysia({ name: 'dashboard', detail: kind('page') }).get('/dashboard/assets/:name', ({ params }) => {
    const file = Object.hasOwn(ASSETS, params.name) ? ASSETS[params.name] : undefined
    return file ? asset(file) : errorPage(404, 'This page does not exist.', null)
  })
  for (const page of pages.open) app.use(page(d))
  return app.use(guarded)
}

const errorPage = (status: number, message: string, session: Session | null) =>
  respond(<Layout title={status === 404 ? 'Not found' : 'Something went wrong'} session={session} error={message} />, status)

/**
 * The dashboard's answer to what no page handles (an unknown path, an unreadable form, a failure):
 * inside the layout, with the navigation when the browser is signed in. A session that cannot be
 * read (the database is what failed) leaves the page without it.
 */
export function dashboardErrorPages(deps: Deps): ErrorPages {
  const d = dashboardContext(deps)
  return {
    prefix: '/dashboard',
    render: async (status, message, request) => errorPage(status, message, await d.sessionOf(request).catch(() => null)),
  }
}
