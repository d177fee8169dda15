// Composes the modules into one Elysia app. No listen here: server.ts serves it, tests call app.handle.
// Each module declares its routes in the group of their kind (http/groups.ts, dashboard pageRoutes);
// the route table built from them is the one the shell, the documents and the server read.

import { Elysia } from 'elysia'
import type { Deps } from './deps'
import { httpShell } from './http/shell'
import { healthRoutes } from './http/health'
import { RouteTable, type RouteInfo } from './http/routes'
import { docsRoutes } from './docs/routes'
import { DOCUMENTS } from './docs/documents'
import { dashboardErrorPages, dashboardRoutes } from './dashboard/routes'
import { accountsApi } from './modules/accounts/api'
import { usageApi } from './modules/ledger/usage'
import { accountsAdmin } from './modules/accounts/admin'
import { accountPages } from './modules/accounts/pages'
import { keyPages } from './modules/accounts/key-pages'
import { overviewPages } from './modules/accounts/overview-pages'
import { pricePages } from './modules/accounts/price-pages'
import { ledgerAdmin } from './modules/ledger/admin'
import { ledgerPages } from './modules/ledger/pages'
import { usagePages } from './modules/ledger/usage-pages'
import { reconciliationAdmin } from './modules/reconciliation/admin'
import { reconciliationPages } from './modules/reconciliation/pages'
import { messagesApi } from './modules/messages/api'
import { messagesAdmin } from './modules/messages/admin'
import { messagePages } from './modules/messages/pages'
import { errorCodePages } from './modules/messages/error-code-pages'
import { inboxPages } from './modules/inbound/pages'
import { templatesAdmin } from './modules/templates/admin'
import { templatePages } from './modules/templates/pages'
import { waTemplatePages } from './modules/templates/wa-pages'
import { templatesApi } from './modules/templates/api'
import { verificationsApi } from './modules/verifications/api'
import { campaignsApi } from './modules/campaigns/api'
import { campaignsAdmin } from './modules/campaigns/admin'
import { campaignPages } from './modules/campaigns/pages'
import { contactsApi } from './modules/contacts/api'
import { contactPages } from './modules/contacts/pages'
import { providerCallbacks } from './modules/inbound/callbacks'
import { mediaApi } from './modules/media/api'
import { mediaLinks } from './modules/media/links'
import { webhooksApi } from './modules/webhooks/api'
import { webhooksAdmin } from './modules/webhooks/admin'
import { webhookPages } from './modules/webhooks/pages'
import { failedDeliveryPages } from './modules/webhooks/deliveries-pages'
import { usersAdmin } from './modules/users/admin'
import { sendersAdmin } from './modules/senders/admin'
import { waTemplatesAdmin } from './modules/templates/wa-admin'
import { syncWhenReady } from './modules/templates/submission'
import { sendersApi } from './modules/senders/api'
import { senderPages } from './modules/senders/pages'
import { accountSenderPages } from './modules/senders/account-pages'
import { userPages } from './modules/users/pages'
import { signInPages } from './modules/users/sign-in-pages'
import { simulatorAdmin } from './providers/simulator/admin'
import { inboundApi } from './modules/inbound/api'
import { inboundAdmin } from './modules/inbound/admin'
import { budgetsAdmin } from './modules/budgets/admin'
import { backupsAdmin } from './modules/backups/admin'
import { accountOfInbound, simulatedSenderOf, simulatedTargetOf, storeInbound } from './modules/inbound/service'
import { optOutsApi } from './modules/optouts/api'
import { optOutsAdmin } from './modules/optouts/admin'
import { optOutPages } from './modules/optouts/pages'
import { inboundMediaPages } from './modules/inbound/media-pages'
import { metricsRoutes } from './http/metrics/routes'
import { callerOf } from './http/access-log'

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

export function createApp(deps: Deps) {
  // Read once the app below is composed (the shell and the documents only ask while serving).
  const routes: RouteTable = new RouteTable((): RouteInfo[] => composed.routes)
  const composed = new Elysia()
    .state('routes', routes)
    .use(httpShell({ config: deps.config, sql: deps.sql, clock: deps.clock, routes, errorPages: dashboardErrorPages(deps) }))
    // After a change, before its answer leaves: the caller's next reads wait for the replica to replay it.
    .onAfterHandle({ as: 'global' }, async ({ request }) => {
      if (!READS.has(request.method)) await deps.reads.wrote(callerOf(request))
    })
    .use(docsRoutes({ routes, documents: DOCUMENTS, baseUrl: deps.config.publicBaseUrl }))
    .use(healthRoutes(deps.sql))
    .use(metricsRoutes(deps.config, deps.sql, deps.clock))
    .use(integratorApi(deps))
    .use(operatorApi(deps))
    // The simulator's customer windows (a number "writes in"), for trying approved templates and inbound messages without WhatsApp.
    .use(
      simulatorAdmin(deps, async (message, target) => {
        const to = message.to.number ?? (await simulatedTargetOf(deps.sql, target.phone, target.accountId))
        const sender = await simulatedSenderOf(deps.sql, to)
        const [id] = await storeInbound(deps.sql, 'simulator', [{ ...message, to: { ...message.to, number: to }, sender }], {
          timezone: deps.config.timezone,
          words: deps.config,
          clock: deps.clock,
        })
        const inboundId = id ?? null
        return { inboundId, to, accountId: inboundId === null ? null : await accountOfInbound(deps.sql, inboundId) }
      }),
    )
    // The providers' status callbacks
    .use(providerCallbacks(deps))
    // Signed links to uploaded files, for providers that fetch media by URL
    .use(mediaLinks(deps))
    // The dashboard
    .use(
      dashboardRoutes(deps, {
        open: [signInPages],
        guarded: [
          overviewPages,
          keyPages,
          accountPages,
          pricePages,
          senderPages,
          accountSenderPages,
          contactPages,
          optOutPages,
          templatePages,
          waTemplatePages,
          campaignPages,
          messagePages,
          errorCodePages,
          inboxPages,
          ledgerPages,
          usagePages,
          reconciliationPages,
          webhookPages,
          failedDeliveryPages,
          userPages,
          inboundMediaPages,
        ],
      }),
    )
  return composed
}

/** The integrator's API (keys). Grouped apart from the app's chain, which is otherwise too deep for TypeScript's inference (TS2589). */
function integratorApi(deps: Deps) {
  return new Elysia()
    .use(accountsApi(deps))
    .use(usageApi(deps))
    .use(messagesApi(deps))
    .use(contactsApi(deps))
    .use(campaignsApi(deps))
    .use(webhooksApi(deps))
    .use(sendersApi(deps))
    .use(inboundApi(deps))
    .use(optOutsApi(deps))
    .use(templatesApi(deps))
    .use(verificationsApi(deps))
    .use(mediaApi(deps))
}

/** The operator's API (the admin token). */
function operatorApi(deps: Deps) {
  return new Elysia()
    .use(accountsAdmin(deps))
    .use(ledgerAdmin(deps))
    .use(reconciliationAdmin(deps))
    .use(messagesAdmin(deps))
    .use(webhooksAdmin(deps))
    .use(templatesAdmin(deps))
    .use(campaignsAdmin(deps))
    .use(usersAdmin(deps))
    .use(sendersAdmin(deps, (id, trigger) => syncWhenReady(deps, id, trigger)))
    .use(waTemplatesAdmin(deps))
    .use(inboundAdmin(deps))
    .use(budgetsAdmin(deps))
    .use(optOutsAdmin(deps))
    .use(backupsAdmin(deps))
}

/** The route table of an app made by createApp. */
export const routesOf = (app: ReturnType<typeof createApp>): RouteTable => app.store.routes
