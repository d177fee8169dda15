import { t } from 'elysia'
import { dateRangeFields, pageFields } from '../../http/models'

export const LedgerQuery = t.Object({ ...pageFields, ...dateRangeFields('created_at') })

export const LedgerRow = t.Object({
  id: t.Integer(),
  kind: t.Union([t.Literal('topup'), t.Literal('charge'), t.Literal('refund'), t.Literal('adjustment')]),
  amount: t.Integer({ description: 'Signed: top-up +, charge −, refund +' }),
  balance_after: t.Integer(),
  message_id: t.Union([t.Integer(), t.Null()]),
  note: t.Union([t.String(), t.Null()]),
  created_by: t.Union([t.String(), t.Null()], {
    description:
      'E-mail of the dashboard user who made a top-up or adjustment; null when it was made through the admin API or the CLI, and for charges and refunds',
  }),
  created_at: t.String(),
})
