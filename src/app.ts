// Composes the modules into one Elysia app. No listen here: main.ts serves it, tests call app.handle.

import { Elysia } from 'elysia'
import { swagger } from '@elysiajs/swagger'
import type { Deps } from './deps'
import { httpShell } from './http/shell'
import { jsonOnlyRequestBodies } from './http/openapi'
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
import { twilioStatusRoutes } from './modules/status/twilio-routes'
import { dashboardRoutes, dashboardErrorPages } from './dashboard/routes'
import { userAdminRoutes } from './modules/users/routes'

const API_DESCRIPTION = `Prepaid messaging API. Every response is an envelope: \`{success: true, data}\` or
\`{success: false, error, code, request_id}\`. Authenticate with \`Authorization: Bearer <API_KEY>\`.
Request bodies are JSON only: any other \`Content-Type\` is 415 \`UNSUPPORTED_MEDIA_TYPE\`, and a body field
the endpoint does not know is 400 naming it (\`mediaUrl: unknown field\`). 400 \`VALIDATION_ERROR\` means the
request has the wrong shape (not JSON, a missing or unknown field, a wrong JSON type); 422
\`VALIDATION_ERROR\` means the shape is right but a value is not acceptable. Timestamps are
\`YYYY-MM-DD HH:MM:SS\` in the service's configured time zone.`

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
    .use(jsonOnlyRequestBodies('/docs/json'))
    .use(
      swagger({
        path: '/docs',
        exclude: ['/healthz', '/readyz', '/docs', '/docs/json', /^\/dashboard/],
        documentation: {
          info: { title: 'Prepaid Messaging API', version: '1.0.0', description: API_DESCRIPTION },
          tags: [
            { name: 'Balance', description: 'Prepaid balance' },
            { name: 'Messages', description: 'Send and read messages' },
            { name: 'Contacts', description: "The account's contacts" },
            { name: 'Campaigns', description: 'Campaign drafts and their statistics (run from the dashboard)' },
            { name: 'Webhooks', description: 'The callback URL for message-status events, one per API key' },
            { name: 'Admin', description: 'Operator API, the dashboard backend (Authorization: Bearer ADMIN_TOKEN)' },
            { name: 'Admin: campaigns', description: 'Running campaigns (Authorization: Bearer ADMIN_TOKEN)' },
            { name: 'Provider callbacks', description: 'Status reports from the messaging provider (signed, no API key)' },
          ],
          components: {
            securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'API key, pm_...' } },
          },
          security: [{ apiKey: [] }],
        },
      }),
    )
    .get('/healthz', () => ({ success: true, data: { status: 'ok' } }))
    .get('/readyz', async () => {
      try {
        if (await migrationsApplied(deps.sql)) return { success: true, data: { status: 'ready' } }
      } catch {
        // fall through: database unreachable
      }
      throw new ApiError('SERVICE_UNAVAILABLE', 'database not reachable or migrations not applied')
    })
    .use(api)
    .use(adminRoutes(deps))
    .use(quarantineRoutes(deps))
    .use(webhookAdminRoutes(deps))
    .use(campaignAdminRoutes(deps))
    .use(campaignRunRoutes(deps))
    .use(twilioStatusRoutes(deps))
    .use(userAdminRoutes(deps))
    .use(dashboardRoutes(deps))
  app = composed
  return composed
}
