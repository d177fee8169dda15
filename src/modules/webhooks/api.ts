import { t } from 'elysia'
import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { RegisterWebhookBody, Webhook, WebhookRegistration } from './model'
import { deleteWebhook, getWebhook, registerWebhook } from './service'

const tags = ['Webhooks']

export const webhooksApi = (deps: Deps) => {
  const { sql } = deps
  return apiRoutes()
    .post('/webhook', async ({ body, principal }) => ok(await registerWebhook(sql, principal, body, deps.config.webhookAllowPrivate)), {
      body: RegisterWebhookBody,
      response: { 200: envelopeOf(WebhookRegistration), ...errorsOf(400, 401, 422) },
      detail: {
        tags,
        summary: "Set (or replace) this API key's callback URL",
        description:
          'One URL per API key; the events it chose (`events`, default `["message.status"]`: the status changes of messages sent ' +
          'with the key; see the webhooks of this document for each event) are POSTed to it. An unknown event name or an empty ' +
          '`events` list is 422 `VALIDATION_ERROR` naming the problem. Replacing the URL without `events` keeps the choice. The URL must be ' +
          '`https`, at most 2048 characters, and its host must not be or resolve to a loopback, private, link-local, CGNAT, ' +
          'metadata or otherwise non-public address (IPv4-mapped IPv6 included); otherwise 422. Deliveries carry the ' +
          'Standard Webhooks headers, signed with `signing_secret`, which stays the same when the URL is replaced.',
      },
    })
    .get('/webhook', async ({ principal }) => ok(await getWebhook(sql, principal)), {
      response: { 200: envelopeOf(Webhook), ...errorsOf(401, 404) },
      detail: {
        tags,
        summary: "This API key's callback URL and chosen events (without the secret)",
        description: '404 `NOT_FOUND` when none is registered.',
      },
    })
    .delete('/webhook', async ({ principal }) => ok(await deleteWebhook(sql, principal)), {
      response: { 200: envelopeOf(t.Object({ deleted: t.Literal(true) })), ...errorsOf(401, 404) },
      detail: {
        tags,
        summary: "Remove this API key's callback URL",
        description:
          'Events are no longer delivered to it. A later registration gets a new signing secret. 404 `NOT_FOUND` when none is registered.',
      },
    })
}
