import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { apiKeyAuth } from '../../http/auth'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'

export const Balance = t.Object({
  wa_balance: t.Integer({ examples: [150000] }),
  cost_per_message: t.Integer({ examples: [350] }),
  estimated_sends: t.Integer({ examples: [428] }),
  currency: t.String({ examples: ['IDR'] }),
})

export const balanceRoutes = (deps: Deps) =>
  new Elysia().use(apiKeyAuth(deps.sql)).get(
    '/balance',
    async ({ principal }) => {
      const [row] = await deps.sql<{ balance: number; cost: number }[]>`
        select balance, account_price(id) as cost from accounts where id = ${principal.accountId}`
      return ok({
        wa_balance: row!.balance,
        cost_per_message: row!.cost,
        estimated_sends: Math.floor(row!.balance / row!.cost),
        currency: deps.config.currency,
      })
    },
    {
      response: { 200: envelopeOf(Balance), ...errorsOf(401) },
      detail: { tags: ['Balance'], summary: 'Current prepaid balance and price per message' },
    },
  )
