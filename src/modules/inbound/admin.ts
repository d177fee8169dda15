// The operator's inbound list (every account's inbound messages, including those stored without one),
// and the conversations on numbers several accounts share: who holds each, and moving one.

import { readSql } from '../../http/reads'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { listOf } from '../../http/models'
import { envelopeOf, errorsOf } from '../../http/openapi'
import {
  AdminInboundListQuery,
  ConversationHolder,
  ConversationHolderQuery,
  InboundMessageView,
  MoveConversationBody,
  MovedConversation,
} from './model'
import { listAllInbound } from './service'
import { listHolders, moveConversation } from './holders'
import { withMedia } from './media-view'
import { dateRange } from '../../http/values'
import { formatTimes } from '../../lib/time'

const SHARED_NUMBER_RULE =
  "On a number several accounts send through (the deployment's number, or a stored sender given to several accounts), a customer's " +
  'reply belongs to the account whose message it quotes; otherwise to the account that holds the conversation: the one whose message ' +
  "the phone received first through that number, until the customer replies quoting another account's message or an operator moves it. " +
  "Another account's send never moves it."

export const inboundAdmin = (deps: Deps) =>
  adminRoutes(deps.config)
    .get('/conversation-holders', async ({ query }) => ok(formatTimes(await listHolders(deps.sql, query), deps.config.timezone)), {
      query: ConversationHolderQuery,
      response: { 200: envelopeOf(listOf(ConversationHolder)), ...errorsOf(400, 401, 422) },
      detail: {
        tags: ['Admin'],
        summary: 'Who holds the conversations on shared numbers',
        description: `${SHARED_NUMBER_RULE} Newest change first; filters \`phone\`, \`account_id\`, \`sender_id\` (an id, or \`default\` for the deployment's number).`,
      },
    })
    .put(
      '/conversation-holders',
      async ({ body, actor }) => ok(formatTimes(await moveConversation(deps.sql, actor, body), deps.config.timezone)),
      {
        body: MoveConversationBody,
        response: { 200: envelopeOf(MovedConversation), ...errorsOf(400, 401, 404, 422) },
        detail: {
          tags: ['Admin'],
          summary: "Move a customer's conversation on a shared number to another account",
          description:
            `${SHARED_NUMBER_RULE} From now on the phone's unquoted replies to that number, its STOP/START words and its ` +
            '`message.received` events belong to `account_id`; with `move_messages`, the messages it already sent to that number ' +
            "move there too. The account must send through the number (any account for the deployment's number; one the sender is " +
            'given to for a stored sender: 422 otherwise). Audited.',
        },
      },
    )
    .get(
      '/inbound',
      async ({ query, request }) => {
        const sql = await readSql(deps, request)
        const tz = deps.config.timezone
        const list = formatTimes(await listAllInbound(sql, query, dateRange(query, tz)), tz)
        return ok({ ...list, items: await withMedia(sql, deps.config.publicBaseUrl, list.items) })
      },
      {
        query: AdminInboundListQuery,
        response: { 200: envelopeOf(listOf(InboundMessageView)), ...errorsOf(400, 401, 422) },
        detail: {
          tags: ['Admin'],
          summary: 'Inbound messages of every account',
          description:
            "Newest first by `received_at`, as `GET /api/v1/inbound`, across accounts: `account_id` keeps one account's, `account_id=0` " +
            "those stored without an account (the deployment's number reached by a phone nobody wrote to). Filters `phone`, " +
            '`date_from`, `date_to`; `limit`/`offset` with `has_more`. Media as in `GET /api/v1/inbound` (their links are for the ' +
            "account's API keys).",
        },
      },
    )
