// Messages in the admin API: the quarantine (hand-offs whose outcome could not be recorded) and
// settling it.

import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { IdParams, listOf, PageQuery } from '../../http/models'
import { QuarantinedMessage, SettleBody, Settled } from './model'
import { listQuarantine, settleQuarantined } from './quarantine'
import { formatTimes } from '../../lib/time'
import { page } from '../../http/values'
import { audit } from '../users/service'

export const messagesAdmin = (deps: Deps) =>
  adminRoutes(deps.config)
    .get('/quarantine', async ({ query }) => ok(formatTimes(await listQuarantine(deps.sql, page(query)), deps.config.timezone)), {
      query: PageQuery,
      response: { 200: envelopeOf(listOf(QuarantinedMessage)), ...errorsOf(400, 401, 422) },
      detail: {
        tags: ['Admin'],
        summary: 'Messages in quarantine',
        description:
          'Charged messages whose hand-off outcome could not be recorded after several recoveries; they are not handed over again until settled.',
      },
    })
    .post(
      '/quarantine/:id/settle',
      async ({ params, body, actor }) => {
        const { account_id, ...settled } = await settleQuarantined(deps.sql, deps.config.timezone, params.id, body.outcome, deps.clock)
        await audit(deps.sql, { ...actor, accountId: account_id, action: 'quarantined message settled', detail: settled })
        return ok(settled)
      },
      {
        params: IdParams,
        body: SettleBody,
        response: { 200: envelopeOf(Settled), ...errorsOf(400, 401, 404, 422) },
        detail: {
          tags: ['Admin'],
          summary: 'Settle a quarantined message',
          description: '`sent`: the provider has it, the charge stays. `refund`: it never went out, it is marked failed and refunded.',
        },
      },
    )
