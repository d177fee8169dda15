// Composes the modules into one Elysia app. No listen here: main.ts serves it, tests call app.handle.

import { Elysia } from 'elysia'
import type { Deps } from './deps'
import { httpShell } from './http/shell'
import { docsRoutes } from './docs/routes'
import { DOCUMENTS, healthAnswers } from './docs/documents'
import type { RouteInfo } from './http/routes'
import { migrationsApplied } from './db/migrate'
import { ApiError } from './http/errors'
import { balanceRoutes } from './modules/accounts/api'
import { messageRoutes } from './modules/messages/api'
import { adminRoutes } from './modules/accounts/admin'
import { quarantineRoutes } from './modules/messages/admin'
import { ledgerAdminRoutes } from './modules/ledger/admin'
import { contactRoutes } from './modules/contacts/api'
import { campaignRoutes } from './modules/campaigns/api'
import { campaignAdminRoutes } from './modules/templates/admin'
import { campaignRunRoutes } from './modules/campaigns/admin'
import { webhookRoutes } from './modules/webhooks/api'
import { webhookAdminRoutes } from './modules/webhooks/admin'
import { providerCallbackRoutes } from './modules/status/callbacks'
import { simulatorAdminRoutes } from './providers/simulator/admin'
import { dashboardRoutes, dashboardErrorPages } from './dashboard/routes'
import { userAdminRoutes } from './modules/users/admin'
import { signInPages } from './modules/users/sign-in'
import { userPages } from './modules/users/pages'
import { overviewPages } from './modules/accounts/overview'
import { keyPages } from './modules/accounts/key-pages'
import { accountPages } from './modules/accounts/pages'
import { pricePages } from './modules/accounts/price-page'
import { contactPages } from './modules/contacts/pages'
import { templatePages } from './modules/templates/pages'
import { campaignPages } from './modules/campaigns/pages'
import { messagePages } from './modules/messages/pages'
import { ledgerPages } from './modules/ledger/pages'
import { webhookPages } from './modules/webhooks/pages'
import { failedDeliveryPages } from './modules/webhooks/deliveries-page'

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
    .use(ledgerAdminRoutes(deps))
    .use(quarantineRoutes(deps))
    .use(webhookAdminRoutes(deps))
    .use(campaignAdminRoutes(deps))
    .use(campaignRunRoutes(deps))
    .use(providerCallbackRoutes(deps))
    // The simulator's customer windows (a number "writes in"), for trying approved templates without WhatsApp.
    .use(simulatorAdminRoutes(deps))
    .use(userAdminRoutes(deps))
    .use(
      dashboardRoutes(deps, {
        open: [signInPages],
        guarded: [
          overviewPages,
          keyPages,
          accountPages,
          pricePages,
          contactPages,
          templatePages,
          campaignPages,
          messagePages,
          ledgerPages,
          webhookPages,
          failedDeliveryPages,
          userPages,
        ],
      }),
    )
  app = composed
  return composed
}
