// Composes the modules into one Elysia app. No listen here: main.ts serves it, tests call app.handle.

import { Elysia } from 'elysia'
import type { Deps } from './deps'
import { httpShell } from './http/shell'
import { docsRoutes } from './docs/routes'
import { DOCUMENTS, healthAnswers } from './docs/documents'
import type { RouteInfo } from './http/routes'
import { migrationsApplied } from './db/migrate'
import { ApiError } from './http/errors'
import { balanceRoutes } from './modules/balance/routes'
import { messageRoutes } from './modules/messages/routes'
import { adminRoutes } from './modules/admin/routes'
import { quarantineRoutes } from './modules/admin/quarantine'
import { contactRoutes } from './modules/contacts/routes'
import { campaignRoutes } from './modules/campaigns/routes'
import { campaignAdminRoutes } from './modules/campaigns/admin-routes'
import { campaignRunRoutes } from './modules/campaigns/run-routes'
import { webhookRoutes } from './modules/webhooks/routes'
import { webhookAdminRoutes } from './modules/webhooks/admin-routes'
import { providerCallbackRoutes } from './providers/routes'
import { simulatorAdminRoutes } from './providers/simulator/admin-routes'
import { dashboardRoutes, dashboardErrorPages } from './dashboard/routes'
import { userAdminRoutes } from './modules/users/routes'

export function createApp(deps: Deps) {
  let app: { routes: RouteInfo[] } | undefined

  const api = new Elysia({ prefix: '/api/v1' })
    .use(balanceRoutes(deps))
    .use(messageRoutes(deps))
    .use(contactRoutes(deps))
    .use(campaignRoutes(deps))
    .use(webhookRoutes(deps))

  const composed = new Elysia()
    .use(httpShell({ config: deps.config, sql: deps.sql, routes: () => app?.routes ?? [], errorPages: dashboardErrorPages }))
    .use(docsRoutes({ routes: () => app?.routes ?? [], documents: DOCUMENTS }))
    .get('/healthz', () => ({ success: true, data: { status: 'ok' } }), {
      detail: { tags: ['Health'], summary: 'The process is up', responses: healthAnswers('ok') },
    })
    .get(
      '/readyz',
      async () => {
        try {
          if (await migrationsApplied(deps.sql)) return { success: true, data: { status: 'ready' } }
        } catch {
          // fall through: database unreachable
        }
        throw new ApiError('SERVICE_UNAVAILABLE', 'database not reachable or migrations not applied')
      },
      {
        detail: { tags: ['Health'], summary: 'The database is reachable and migrated', responses: healthAnswers('ready', 503) },
      },
    )
    .use(api)
    .use(adminRoutes(deps))
    .use(quarantineRoutes(deps))
    .use(webhookAdminRoutes(deps))
    .use(campaignAdminRoutes(deps))
    .use(campaignRunRoutes(deps))
    .use(providerCallbackRoutes(deps))
    // The simulator's customer windows (a number "writes in"), for trying approved templates without WhatsApp.
    .use(simulatorAdminRoutes(deps))
    .use(userAdminRoutes(deps))
    .use(dashboardRoutes(deps))
  app = composed
  return composed
}
