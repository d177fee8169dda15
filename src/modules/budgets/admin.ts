// Portfolios in the admin API: senders put in one portfolio share one messaging-limit budget, under the
// portfolio's tier (as Meta counts per business portfolio). A sender joins one with PATCH /senders/{id}
// `{portfolio: "<name>"}`. Every change is audited.

import { t } from 'elysia'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { CreatePortfolioBody, Portfolio, PortfolioParams, UpdatePortfolioBody } from './model'
import { createPortfolio, getPortfolio, listPortfolios, updatePortfolio } from './service'
import { formatTimes } from '../../lib/time'

const tags = ['Admin: senders']

export const budgetsAdmin = (deps: Deps) =>
  adminRoutes(deps.config)
    .post(
      '/portfolios',
      async ({ body, set, actor }) => {
        set.status = 201
        return ok(formatTimes(await createPortfolio(deps.sql, deps.clock, actor, body), deps.config.timezone))
      },
      {
        body: CreatePortfolioBody,
        response: { 201: envelopeOf(Portfolio), ...errorsOf(400, 401, 409, 422) },
        detail: {
          tags,
          summary: 'Create a portfolio: senders that share one messaging-limit budget',
          description:
            'WhatsApp limits the unique recipients of business-initiated messages (to customers whose 24-hour window is closed) per rolling ' +
            '24 hours per business portfolio: 250, 2000, 10000, 100000 or unlimited (`messaging_limit` null, the default). Senders put in ' +
            'the portfolio (PATCH /senders/{id} `{portfolio}`) count their recipients in its one budget, under its tier. 409 for a name taken.',
        },
      },
    )
    .get('/portfolios', async () => ok(formatTimes(await listPortfolios(deps.sql, deps.clock), deps.config.timezone)), {
      response: { 200: envelopeOf(t.Array(Portfolio)), ...errorsOf(401) },
      detail: { tags, summary: 'Every portfolio with its senders and its budget use (recipients counted, when the oldest frees)' },
    })
    .get(
      '/portfolios/:id',
      async ({ params }) => ok(formatTimes(await getPortfolio(deps.sql, deps.clock, params.id), deps.config.timezone)),
      {
        params: PortfolioParams,
        response: { 200: envelopeOf(Portfolio), ...errorsOf(400, 401, 404) },
        detail: { tags, summary: 'One portfolio' },
      },
    )
    .patch(
      '/portfolios/:id',
      async ({ params, body, actor }) => {
        const portfolio = formatTimes(await updatePortfolio(deps.sql, deps.clock, actor, params.id, body), deps.config.timezone)
        deps.senders.forget()
        return ok(portfolio)
      },
      {
        params: PortfolioParams,
        body: UpdatePortfolioBody,
        response: { 200: envelopeOf(Portfolio), ...errorsOf(400, 401, 404, 409, 422) },
        detail: {
          tags,
          summary: "Change a portfolio's name or tier",
          description:
            'A new tier applies to the next send; the recipients counted in the last 24 hours stay counted. Moving up a tier is what ' +
            "Meta does as a number's quality and volume allow: set it here when Meta's WhatsApp Manager shows it.",
        },
      },
    )
