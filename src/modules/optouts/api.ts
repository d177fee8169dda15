// The integrator's opt-out routes (extensions): GET /opt-outs, POST /opt-outs, DELETE /opt-outs/{phone}.

import { readSql } from '../../http/reads'
import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { listOf } from '../../http/models'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { OptOut, OptOutAdded, OptOutBody, OptOutListQuery, OptOutPhoneParams, OptOutRemoved } from './model'
import { addOptOut, listOptOuts, removeOptOut } from './service'
import { formatTimes } from '../../lib/time'

const tags = ['Opt-outs']
export const OPT_OUT_RULE =
  "A phone opted out of the account's messages is refused before anything is charged: a send is 422 `RECIPIENT_OPTED_OUT`, a " +
  'bulk entry fails with that code (uncharged, the rest go), a campaign skips it and counts it (`stats.opted_out`). A customer ' +
  'opts out by writing only a STOP word (`OPT_OUT_WORDS`: STOP, UNSUBSCRIBE, BERHENTI) and back in with a START word ' +
  "(`OPT_IN_WORDS`: START, MULAI), or through the provider's own signal (Twilio's Advanced Opt-Out `OptOutType`, Meta's " +
  '`user_preferences` marketing stop/resume).'

export const optOutsApi = (deps: Deps) =>
  apiRoutes()
    .get(
      '/opt-outs',
      async ({ query, principal, request }) =>
        ok(formatTimes(await listOptOuts(await readSql(deps, request), principal.accountId, query), deps.config.timezone)),
      {
        query: OptOutListQuery,
        response: { 200: envelopeOf(listOf(OptOut)), ...errorsOf(400, 401, 422) },
        detail: {
          tags,
          summary: 'List opted-out phones (extension)',
          description:
            "The account's opted-out phones, newest first, each with when, how (`source`, `detail`) and by whom (`by`). `phone` keeps " +
            'one (422 when it is not a number); `limit`/`offset` with `has_more`, as the other lists. ' +
            OPT_OUT_RULE,
        },
      },
    )
    .post(
      '/opt-outs',
      async ({ body, principal, set }) => {
        const { optOut, created } = await addOptOut(deps.sql, deps.clock, deps.config.timezone, principal.accountId, body.phone, 'api', {
          keyId: principal.keyId,
        })
        set.status = created ? 201 : 200
        return ok({ ...formatTimes(optOut, deps.config.timezone), created })
      },
      {
        body: OptOutBody,
        response: { 200: envelopeOf(OptOutAdded), 201: envelopeOf(OptOutAdded), ...errorsOf(400, 401, 415, 422) },
        detail: {
          tags,
          summary: 'Opt a phone out (extension)',
          description:
            'Records that the phone opted out (source `api`, by this key; audited). 201 with the opt-out; 200 with `created: false` ' +
            'when it was opted out already (nothing changes). ' +
            OPT_OUT_RULE,
        },
      },
    )
    .delete(
      '/opt-outs/:phone',
      async ({ params, principal }) =>
        ok(
          await removeOptOut(deps.sql, deps.clock, deps.config.timezone, principal.accountId, params.phone, 'api', {
            keyId: principal.keyId,
          }),
        ),
      {
        params: OptOutPhoneParams,
        response: { 200: envelopeOf(OptOutRemoved), ...errorsOf(400, 401, 404, 422) },
        detail: {
          tags,
          summary: 'Opt a phone back in (extension)',
          description:
            'The phone may be sent to again (source `api`, by this key; audited; the history keeps both). 404 `NOT_FOUND` when it is ' +
            'not opted out; 422 when it is not a number.',
        },
      },
    )
