// The account in the integrator's API: its prepaid balance and price (GET /balance).

import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { Balance } from './model'
import { getBalance } from './service'

export const accountsApi = (deps: Deps) =>
  apiRoutes().get('/balance', async ({ principal }) => ok(await getBalance(deps.sql, principal.accountId, deps.config.currency)), {
    response: { 200: envelopeOf(Balance), ...errorsOf(401) },
    detail: {
      tags: ['Balance'],
      summary: 'Current prepaid balance and price per message',
      description:
        '`wa_balance` and `cost_per_message` are integers in `currency` units. Each message is charged `cost_per_message` as it is ' +
        'at the moment of sending (the operator sets the price and may change it at any time), and refunded in full if the provider ' +
        'refuses it. `estimated_sends` is `floor(wa_balance / cost_per_message)`. Top-ups are made in the dashboard; the balance ' +
        'does not expire.',
    },
  })
