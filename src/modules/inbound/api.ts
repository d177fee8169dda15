// The integrator's inbound routes (extensions): GET /inbound, GET /inbound/{id}, GET /conversations/{phone}.

import { t } from 'elysia'
import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { IdParams, listFields, listOf } from '../../http/models'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { ConversationItem, ConversationParams, ConversationQuery, ConversationWindow, InboundListQuery, InboundMessageView } from './model'
import { conversation, getInbound, listInbound } from './service'

const tags = ['Inbound']
const accountRule =
  'An inbound message belongs to the account that last sent a message to that phone through the number it reached; else, ' +
  "for a stored sender, to the account that has it as its default, else the first account given it; else (the deployment's " +
  'number, and nobody wrote to that phone) to no account (operators see it in `GET /admin/v1/inbound`).'

export const inboundApi = (deps: Deps) =>
  apiRoutes()
    .get('/inbound', async ({ query, principal }) => ok(await listInbound(deps.sql, deps.config.timezone, principal.accountId, query)), {
      query: InboundListQuery,
      response: { 200: envelopeOf(listOf(InboundMessageView)), ...errorsOf(400, 401, 422) },
      detail: {
        tags,
        summary: 'List inbound messages (extension)',
        description:
          "What customers wrote to the account's numbers (Meta's webhook, Twilio's incoming message webhook, the simulator), each " +
          'stored once. Newest first by `received_at` (ties by id, higher first). `offset` counts records; `has_more` says whether ' +
          "records follow this page. `phone` keeps one customer's; `date_from`/`date_to` bound `received_at`, both inclusive, in " +
          "the service time zone (422 for a malformed one). Media is not downloaded: `content` holds the provider's media id or " +
          'URL and its type. ' +
          accountRule,
      },
    })
    .get(
      '/inbound/:id',
      async ({ params, principal }) => ok(await getInbound(deps.sql, deps.config.timezone, principal.accountId, params.id)),
      {
        params: IdParams,
        response: { 200: envelopeOf(InboundMessageView), ...errorsOf(400, 401, 404) },
        detail: {
          tags,
          summary: 'One inbound message (extension)',
          description: "By its `id`. Another account's, or an unknown id, is 404 `NOT_FOUND`.",
        },
      },
    )
    .get(
      '/conversations/:phone',
      async ({ params, query, principal }) =>
        ok(await conversation(deps.sql, deps.config.timezone, principal.accountId, params.phone, query)),
      {
        params: ConversationParams,
        query: ConversationQuery,
        response: {
          200: envelopeOf(t.Object({ phone: t.String(), window: ConversationWindow, items: t.Array(ConversationItem), ...listFields })),
          ...errorsOf(400, 401, 422),
        },
        detail: {
          tags,
          summary: "A contact's conversation, both ways (extension)",
          description:
            "The account's messages to the phone (as in `GET /messages`) and the phone's inbound messages to the account, oldest " +
            'first (`at`; ties: outbound first, then by id), paginated with `limit`/`offset` and `has_more`. `window` says whether ' +
            "WhatsApp's 24-hour customer-service window with a sender is open (free-form messages allowed) and until when: 24 " +
            "hours after the phone's latest message to that sender. The window is per sender: `from` (an id or number of the " +
            "account's senders; 422 for another) chooses it, by default the account's default sender, else the deployment's " +
            'number. A phone that is not a number is 422.',
        },
      },
    )
