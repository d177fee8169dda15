// The ledger in the admin API: an account's rows, newest first.

import { readSql } from '../../http/reads'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { IdParams, listOf } from '../../http/models'
import { LedgerQuery, LedgerRow } from './model'
import { listLedger } from './listing'
import { formatTimes } from '../../lib/time'
import { dateRange, page } from '../../http/values'

const tags = ['Admin']

export const ledgerAdmin = (deps: Deps) => {
  const tz = deps.config.timezone
  return adminRoutes(deps.config).get(
    '/accounts/:id/ledger',
    async ({ params, query, request }) =>
      ok(formatTimes(await listLedger(await readSql(deps, request), params.id, page(query), dateRange(query, tz)), tz)),
    {
      params: IdParams,
      query: LedgerQuery,
      response: { 200: envelopeOf(listOf(LedgerRow)), ...errorsOf(400, 401, 404, 422) },
      detail: {
        tags,
        summary: "An account's ledger, newest first",
        description: '`date_from`/`date_to` bound `created_at`, both inclusive (to the whole second), in the service time zone.',
      },
    },
  )
}
