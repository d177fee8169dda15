// The operator's inbound list: every account's inbound messages, including those stored without one.

import { readSql } from '../../http/reads'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { listOf } from '../../http/models'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { AdminInboundListQuery, InboundMessageView } from './model'
import { listAllInbound } from './service'
import { withMedia } from './media-view'

export const inboundAdmin = (deps: Deps) =>
  adminRoutes(deps.config).get(
    '/inbound',
    async ({ query, request }) => {
      const sql = await readSql(deps, request)
      const list = await listAllInbound(sql, deps.config.timezone, query)
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
