import { t } from 'elysia'
import { dateRangeFields, pageFields } from '../../http/models'

export const LedgerQuery = t.Object({ ...pageFields, ...dateRangeFields('created_at') })

export const LedgerRow = t.Object({
  id: t.Integer(),
  kind: t.Union([t.Literal('topup'), t.Literal('charge'), t.Literal('refund'), t.Literal('adjustment'), t.Literal('settlement')]),
  amount: t.Integer({
    description:
      "Signed: top-up +, charge −, refund +; settlement (a message settled on the provider's pricing): the difference, either way",
  }),
  balance_after: t.Integer(),
  message_id: t.Union([t.Integer(), t.Null()]),
  note: t.Union([t.String(), t.Null()]),
  created_by: t.Union([t.String(), t.Null()], {
    description:
      'E-mail of the dashboard user who made a top-up or adjustment; null when it was made through the admin API or the CLI, and for charges and refunds',
  }),
  created_at: t.String(),
})

export const UsageQuery = t.Object({
  ...pageFields,
  date_from: t.Optional(
    t.String({
      description: 'First day (inclusive), YYYY-MM-DD (or a timestamp YYYY-MM-DD HH:MM:SS) in the service time zone',
      examples: ['2026-11-01'],
    }),
  ),
  date_to: t.Optional(
    t.String({ description: 'Last day (inclusive), YYYY-MM-DD (or a timestamp YYYY-MM-DD HH:MM:SS)', examples: ['2026-11-30'] }),
  ),
})

export const UsageItem = t.Object({
  day: t.String({ description: 'The day it was charged, YYYY-MM-DD in the service time zone', examples: ['2026-11-03'] }),
  category: t.Union([t.Literal('marketing'), t.Literal('utility'), t.Literal('authentication'), t.Literal('service')]),
  count: t.Integer({ description: 'Messages charged that day in that category, not refunded', examples: [120] }),
  cost: t.Integer({ description: 'What they finally cost (settlements included), in currency units', examples: [36000] }),
})
