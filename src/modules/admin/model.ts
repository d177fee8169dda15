import { t } from 'elysia'
import { Type } from '@sinclair/typebox'

// In JSON bodies an integer must be a JSON number: Elysia's t.Integer also accepts "100" (it is made
// for query strings), so bodies use TypeBox's own.
const bodyInteger = Type.Integer

export const IdParams = t.Object({ id: t.Integer({ description: 'Record id' }) })
export const PageQuery = t.Object({
  limit: t.Optional(t.Integer({ description: '1 to 200, default 50' })),
  offset: t.Optional(t.Integer({ description: 'records to skip, default 0' })),
})

export const CreateAccountBody = t.Object({
  name: t.String({ examples: ['Acme Retail'] }),
  balance: t.Optional(bodyInteger({ description: 'Opening balance, recorded as a top-up', examples: [100000] })),
})
export const Account = t.Object({
  id: t.Integer(),
  name: t.String(),
  wa_balance: t.Integer(),
  cost_per_message: t.Integer(),
  created_at: t.String(),
})

export const CreateKeyBody = t.Object({ label: t.String({ examples: ['ERP production'] }) })
export const ApiKey = t.Object({
  id: t.Integer(),
  account_id: t.Integer(),
  label: t.String(),
  prefix: t.String({ description: 'The first characters of the key, to recognise it' }),
  active: t.Boolean(),
  last_used_at: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
})
export const CreatedApiKey = t.Composite([ApiKey, t.Object({ key: t.String({ description: 'Shown only in this answer' }) })])
export const PatchKeyBody = t.Object({ active: t.Boolean() })

export const TopupBody = t.Object({
  amount: bodyInteger({ description: 'Positive amount in CURRENCY units', examples: [50000] }),
  note: t.Optional(t.String()),
})
export const AdjustmentBody = t.Object({
  amount: bodyInteger({ description: 'Signed correction; the balance may not go below 0' }),
  note: t.String(),
})
export const PriceBody = t.Object({
  cost_per_message: bodyInteger({ examples: [350] }),
  account_id: t.Optional(t.Union([bodyInteger(), t.Null()], { description: 'Omit for the global price' })),
})
export const PriceQuery = t.Object({ account_id: t.Optional(t.Integer()) })

export const LedgerRow = t.Object({
  id: t.Integer(),
  kind: t.Union([t.Literal('topup'), t.Literal('charge'), t.Literal('refund'), t.Literal('adjustment')]),
  amount: t.Integer({ description: 'Signed: top-up +, charge −, refund +' }),
  balance_after: t.Integer(),
  message_id: t.Union([t.Integer(), t.Null()]),
  note: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
})

export const listOf = <T extends import('elysia').TSchema>(item: T) =>
  t.Object({ items: t.Array(item), total: t.Integer(), limit: t.Integer(), offset: t.Integer() })
