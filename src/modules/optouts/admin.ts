// The operator's opt-out routes: an account's list, add, remove, CSV import and export (the command
// line's backend), each change audited as the admin token's.

import { readSql } from '../../http/reads'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { IdParams, listOf } from '../../http/models'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { requireAccount } from '../accounts/service'
import {
  AccountOptOutParams,
  ExportAnswer,
  ImportBody,
  ImportReport,
  OptOut,
  OptOutAdded,
  OptOutBody,
  OptOutListQuery,
  OptOutRemoved,
} from './model'
import { addOptOut, exportOptOuts, importOptOuts, listOptOuts, optOutsCsv, removeOptOut } from './service'
import { formatTimes } from '../../lib/time'
import { OPT_OUT_RULE } from './api'

const tags = ['Admin: opt-outs']

export const optOutsAdmin = (deps: Deps) => {
  const tz = deps.config.timezone
  return adminRoutes(deps.config)
    .get(
      '/accounts/:id/opt-outs',
      async ({ params, query, request }) => {
        const sql = await readSql(deps, request)
        await requireAccount(sql, params.id)
        return ok(formatTimes(await listOptOuts(sql, params.id, query), tz))
      },
      {
        params: IdParams,
        query: OptOutListQuery,
        response: { 200: envelopeOf(listOf(OptOut)), ...errorsOf(400, 401, 404, 422) },
        detail: { tags, summary: "An account's opted-out phones", description: 'As `GET /api/v1/opt-outs`. ' + OPT_OUT_RULE },
      },
    )
    .post(
      '/accounts/:id/opt-outs',
      async ({ params, body, set, actor }) => {
        await requireAccount(deps.sql, params.id)
        const { optOut, created } = await addOptOut(deps.sql, deps.clock, tz, params.id, body.phone, 'admin', actor)
        set.status = created ? 201 : 200
        return ok({ ...formatTimes(optOut, tz), created })
      },
      {
        params: IdParams,
        body: OptOutBody,
        response: { 200: envelopeOf(OptOutAdded), 201: envelopeOf(OptOutAdded), ...errorsOf(400, 401, 404, 415, 422) },
        detail: {
          tags,
          summary: 'Opt a phone out of an account',
          description: 'Source `admin`, audited. 201; 200 with `created: false` when it was opted out already.',
        },
      },
    )
    .delete(
      '/accounts/:id/opt-outs/:phone',
      async ({ params, actor }) => {
        await requireAccount(deps.sql, params.id)
        return ok(await removeOptOut(deps.sql, deps.clock, deps.config.timezone, params.id, params.phone, 'admin', actor))
      },
      {
        params: AccountOptOutParams,
        response: { 200: envelopeOf(OptOutRemoved), ...errorsOf(400, 401, 404, 422) },
        detail: { tags, summary: 'Opt a phone back into an account', description: 'Audited. 404 when it is not opted out.' },
      },
    )
    .post(
      '/accounts/:id/opt-outs-csv',
      async ({ params, body, actor }) => {
        await requireAccount(deps.sql, params.id)
        return ok(await importOptOuts(deps.sql, deps.clock, deps.config.timezone, params.id, body.csv, 'admin', actor))
      },
      {
        params: IdParams,
        body: ImportBody,
        response: { 200: envelopeOf(ImportReport), ...errorsOf(400, 401, 404, 415, 422) },
        detail: {
          tags,
          summary: 'Import opt-outs from CSV',
          description:
            'Opts out every phone of the CSV (source `import`), in one transaction, audited as one import. The report counts the ' +
            'phones opted out now (`accepted`), those opted out already or repeated (`duplicates`), and lists each bad line with ' +
            'its reason (`invalid`); those are skipped, the rest imported. 422 for a CSV that cannot be read, has no phone column, ' +
            'or has over 10,000 rows.',
        },
      },
    )
    .get(
      '/accounts/:id/opt-outs-csv',
      async ({ params, request }) => {
        const sql = await readSql(deps, request)
        await requireAccount(sql, params.id)
        return ok(optOutsCsv(formatTimes(await exportOptOuts(sql, params.id), tz)))
      },
      {
        params: IdParams,
        response: { 200: envelopeOf(ExportAnswer), ...errorsOf(400, 401, 404) },
        detail: {
          tags,
          summary: 'Export opt-outs as CSV',
          description:
            'Every opt-out of the account as CSV text in the envelope (`csv`): `phone,opted_out_at,source,detail,by`, newest first. ' +
            'It imports again as it is (`POST /admin/v1/accounts/{id}/opt-outs-csv`).',
        },
      },
    )
}
