// The reconciliation report in the admin API (issue 31 §2): one sender's month, the ledger beside
// Meta's pricing analytics, with every difference.

import { t } from 'elysia'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ApiError, ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { DECIMAL } from '../../http/models'
import { formatTimes } from '../../lib/time'
import { reconcile } from './service'

const tags = ['Admin']

const SenderQuery = t
  .Transform(
    t.String({
      pattern: DECIMAL,
      description: "Sender id (a positive decimal integer), or 0: the deployment's default sender",
      examples: ['3'],
    }),
  )
  .Decode((text) => {
    const value = Number(text)
    if (!Number.isSafeInteger(value) || value < 0) throw new ApiError('NOT_FOUND', `sender ${text.slice(0, 30)} not found`)
    return value
  })
  .Encode((value) => String(value))

export const ReconciliationQuery = t.Object({
  sender_id: SenderQuery,
  month: t.Optional(
    t.String({ description: 'The month, YYYY-MM, in the service time zone (default: the current month)', examples: ['2026-12'] }),
  ),
})

export const ReportRowModel = t.Object({
  day: t.String({ description: 'YYYY-MM-DD in the service time zone', examples: ['2026-12-01'] }),
  category: t.String({ description: 'marketing, utility, authentication or service', examples: ['marketing'] }),
  messages: t.Integer({ description: 'Messages handed over that day that did not fail, under the category finally charged' }),
  cost: t.Integer({ description: 'What the ledger holds for them (charges less refunds, with settlements), in CURRENCY' }),
  unsettled: t.Integer({ description: 'What their settlements could not take from the balance, in CURRENCY' }),
  meta_volume: t.Integer({ description: "Meta's count of delivered messages of the category that day (every pricing type)" }),
  meta_free_volume: t.Integer({ description: 'Of those, the ones Meta did not charge (a FREE_* pricing type)' }),
  meta_cost: t.Number({ description: "Meta's cost, in Meta's billing currency (not CURRENCY)" }),
  difference: t.Integer({ description: 'meta_volume − messages: 0 when both agree' }),
})

export const DifferenceModel = t.Object({
  kind: t.String({
    description:
      '`volume` (the counts of a day and category differ), `unsettled` (a message whose settlement could not take the whole ' +
      'difference from the balance) or `meta_category` (Meta counted a category the service does not charge)',
    examples: ['volume'],
  }),
  day: t.String(),
  category: t.String(),
  ours: t.Integer({ description: 'Our messages (volume), the amount not taken (unsettled), 0 (meta_category)' }),
  meta: t.Integer({ description: "Meta's volume" }),
  message_sid: t.Union([t.String(), t.Null()], { description: 'The message (unsettled), else null' }),
  detail: t.String({ examples: ['Meta counted 1 marketing message more than the ledger charged'] }),
})

export const ReportModel = t.Object({
  sender_id: t.Integer({ description: "0: the deployment's default sender" }),
  provider: t.String({ examples: ['meta'] }),
  business_account_id: t.String({ description: 'The WhatsApp Business Account whose analytics were read' }),
  phone_number: t.Union([t.String(), t.Null()], {
    description: "The number (digits) Meta's figures are kept to; null: the whole business account (the default sender)",
  }),
  month: t.String({ examples: ['2026-12'] }),
  time_zone: t.String({ examples: ['Asia/Jakarta'] }),
  from: t.String({ description: 'The month’s first instant, YYYY-MM-DD HH:MM:SS' }),
  to: t.String({ description: 'The next month’s first instant (excluded)' }),
  rows: t.Array(ReportRowModel, { description: 'Each day and category either side has, by day then category' }),
  totals: t.Object({
    messages: t.Integer(),
    cost: t.Integer(),
    unsettled: t.Integer(),
    meta_volume: t.Integer(),
    meta_free_volume: t.Integer(),
    meta_cost: t.Number(),
  }),
  differences: t.Array(DifferenceModel, { description: 'Every difference: none when the ledger and Meta agree' }),
})

export const reconciliationAdmin = (deps: Deps) =>
  adminRoutes(deps.config).get(
    '/reconciliation',
    async ({ query }) => ok(formatTimes(await reconcile(deps, query.sender_id, query.month), deps.config.timezone)),
    {
      query: ReconciliationQuery,
      response: { 200: envelopeOf(ReportModel), ...errorsOf(400, 401, 404, 422, 502) },
      detail: {
        tags,
        summary: "A sender's month: the ledger's messages and charges beside Meta's pricing analytics, with every difference",
        description:
          "Reads Meta's `pricing_analytics` of the sender's WhatsApp Business Account (kept to its number; half-hour buckets cut " +
          'into days of the service time zone, every page) and sets it beside the messages the sender handed over that month ' +
          '(not failed; under the category finally charged) and what the ledger holds for them. Volumes are compared (Meta ' +
          "charges in its billing currency: `meta_cost` is Meta's). Meta counts a message when delivered: one sent just before " +
          "midnight may be the next day's there. 422: a month not YYYY-MM or not begun, a sender that is not a Meta sender or has " +
          'no WhatsApp Business Account id; 404: no such sender; 502: Meta refused or did not answer (its words, no secret).',
      },
    },
  )
