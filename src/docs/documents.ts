// What the two API reference documents say beyond their routes: titles, descriptions, the order and
// descriptions of tags, and the integrator's webhook.

import type { DocumentsOptions } from './openapi'
import { DOCS } from './paths'
import { WEBHOOKS, WEBHOOK_SCHEMAS } from './webhooks'

const API_DESCRIPTION = `Prepaid messaging API. Every response is an envelope: \`{success: true, data}\` or
\`{success: false, error, code, request_id}\` (\`request_id\` is also the \`x-request-id\` header). Authenticate with \`Authorization: Bearer <API_KEY>\`.
Request bodies are JSON only: any other \`Content-Type\` is 415 \`UNSUPPORTED_MEDIA_TYPE\`, and a body field
the endpoint does not know is 400 naming it (\`mediaUrl: unknown field\`). 400 \`VALIDATION_ERROR\` means the
request has the wrong shape (not JSON, a missing or unknown field, a wrong JSON type); 422
\`VALIDATION_ERROR\` means the shape is right but a value is not acceptable. Timestamps are
\`YYYY-MM-DD HH:MM:SS\` in the service's configured time zone. Every error answer an operation can give is
listed under it, with its possible \`code\` values.

Every answer carries an \`x-request-id\` header. A path answers only the methods listed under it: any other (\`GET
/api/v1/messages/send\`, or HEAD or OPTIONS anywhere: there are no CORS preflights, call the API from your backend) is 405
\`METHOD_NOT_ALLOWED\` in the envelope, with an \`Allow\` header naming the methods the path answers
(\`components.responses.MethodNotAllowed\`).

The \`message.status\` events POSTed to your webhook URL, with their signature headers, are under **Webhooks**.
Operators: the admin API (accounts, keys, top-ups, prices, senders, webhook deliveries) and the provider callbacks are
described separately, at [${DOCS.admin.page}](${DOCS.admin.page}).`

const ADMIN_DESCRIPTION = `The operator's API: accounts, API keys, top-ups and prices, templates, segments and campaign runs,
senders (with their sealed credentials, and their rotation under a new \`SECRETS_KEY\`), webhook deliveries, dashboard users
(the dashboard's backend and \`bun run admin\`'s). Authenticate with
\`Authorization: Bearer <ADMIN_TOKEN>\` (the \`ADMIN_TOKEN\` setting, or the token generated into
\`DATA_DIR/admin-token\`). Also here: the provider callbacks (called by the messaging provider, signed, no
credentials of ours) and the health checks. Responses use the same envelope as the integrator's API,
described at [${DOCS.api.page}](${DOCS.api.page}). Every answer carries an \`x-request-id\` header; a method a path does not
list is 405 \`METHOD_NOT_ALLOWED\` with an \`Allow\` header (\`components.responses.MethodNotAllowed\`).`

export const DOCUMENTS: DocumentsOptions = {
  api: {
    info: { title: 'Prepaid Messaging API', version: '1.0.0', description: API_DESCRIPTION },
    webhooks: WEBHOOKS,
    schemas: WEBHOOK_SCHEMAS,
  },
  admin: { info: { title: 'Prepaid Messaging API: admin', version: '1.0.0', description: ADMIN_DESCRIPTION } },
  tags: [
    { name: 'Balance', description: 'Prepaid balance' },
    { name: 'Messages', description: 'Send and read messages' },
    { name: 'Contacts', description: "The account's contacts" },
    { name: 'Campaigns', description: 'Campaign drafts and their statistics (run from the dashboard)' },
    { name: 'Webhooks', description: 'The callback URL for message-status events, one per API key' },
    {
      name: 'Senders',
      description:
        "The account's own WhatsApp numbers (extension): what `from` may name on a send, a bulk entry or a campaign; never their credentials",
    },
    {
      name: 'Inbound',
      description:
        "What customers write to the account's numbers (extension): inbound messages, and a contact's conversation both ways with its 24-hour window",
    },
    {
      name: 'Opt-outs',
      description:
        "Phones opted out of the account's messages (extension): STOP words, the provider's signal, or by hand; sends to them are 422 `RECIPIENT_OPTED_OUT`",
    },
    {
      name: 'Media',
      description: 'Files uploaded to send without a public link (extension): a send names one by `media_id` instead of `link`',
    },
    { name: 'Admin', description: 'Operator API, the dashboard backend (Authorization: Bearer ADMIN_TOKEN)' },
    { name: 'Admin: campaigns', description: 'Running campaigns (Authorization: Bearer ADMIN_TOKEN)' },
    {
      name: 'Admin: senders',
      description:
        'Senders: a provider with its own credentials (sealed, never shown again), a number and a pace; checking, disabling, ' +
        'assigning them to accounts, and sealing every credential again under a new SECRETS_KEY (Authorization: Bearer ADMIN_TOKEN)',
    },
    {
      name: 'Admin: opt-outs',
      description: "An account's opted-out phones: list, add, remove, CSV import and export, audited (Authorization: Bearer ADMIN_TOKEN)",
    },
    { name: 'Provider callbacks', description: 'Status reports and inbound messages from the messaging provider (signed, no API key)' },
    { name: 'Health', description: 'Liveness and readiness for load balancers and orchestrators (no credentials)' },
    {
      name: 'Metrics',
      description: 'Prometheus metrics of this instance and the queue depths of the database (Authorization: Bearer ADMIN_TOKEN)',
    },
  ],
}
