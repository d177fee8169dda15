import { t } from 'elysia'
import { Id, JsonId, JsonInteger } from '../../http/models'

export { IdParams, listOf, PageQuery } from '../../http/models'

const closed = { additionalProperties: false } as const

/** The four categories' prices, each resolved (its own price, else `cost_per_message`). */
export const CategoryPrices = t.Object(
  {
    marketing: t.Integer({ examples: [700] }),
    utility: t.Integer({ examples: [350] }),
    authentication: t.Integer({ examples: [300] }),
    service: t.Integer({ examples: [350] }),
  },
  {
    description:
      "The price of one message of each WhatsApp category (extension): a WhatsApp template's message is charged its template's " +
      'category, any other message `service`. A category without a price of its own costs `cost_per_message`.',
  },
)

export const Balance = t.Object({
  wa_balance: t.Integer({ examples: [150000] }),
  cost_per_message: t.Integer({ examples: [350] }),
  estimated_sends: t.Integer({ examples: [428] }),
  currency: t.String({ examples: ['IDR'] }),
  prices: CategoryPrices,
})
export type Balance = typeof Balance.static

const LOW_BALANCE_THRESHOLD =
  'A positive integer in CURRENCY units, or null (the default): no alert. A charge that takes the balance from at or above it to ' +
  'below it sends one `balance.low` webhook event to the registrations of the account that chose it; the next one needs the ' +
  'balance back at or above it first (a top-up, a refund)'

export const CreateAccountBody = t.Object(
  {
    name: t.String({ examples: ['Acme Retail'] }),
    balance: t.Optional(JsonInteger({ description: 'Opening balance, recorded as a top-up', examples: [100000] })),
    low_balance_threshold: t.Optional(t.Union([JsonInteger(), t.Null()], { description: LOW_BALANCE_THRESHOLD, examples: [50000] })),
  },
  closed,
)
export const UpdateAccountBody = t.Object(
  {
    low_balance_threshold: t.Union([JsonInteger(), t.Null()], { description: LOW_BALANCE_THRESHOLD, examples: [50000] }),
  },
  closed,
)
export const Account = t.Object({
  id: t.Integer(),
  name: t.String(),
  wa_balance: t.Integer(),
  cost_per_message: t.Integer(),
  low_balance_threshold: t.Union([t.Integer(), t.Null()], { description: 'The `balance.low` threshold; null: none' }),
  created_at: t.String(),
})

export const CreateKeyBody = t.Object({ label: t.String({ examples: ['ERP production'] }) }, closed)
export const ApiKey = t.Object({
  id: t.Integer(),
  account_id: t.Integer(),
  label: t.String(),
  prefix: t.String({ description: 'The first characters of the key, to recognise it' }),
  active: t.Boolean(),
  last_used_at: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
  rate_limit_per_minute: t.Union([t.Integer(), t.Null()], {
    description: "Requests per minute this key may make; null: the service's default (KEY_RATE_LIMIT_PER_MINUTE, 600 unless set)",
  }),
  daily_spend_cap: t.Union([t.Integer(), t.Null()], {
    description: 'The most this key may be charged per day (TIMEZONE), in CURRENCY units; null: no cap',
  }),
  spent_today: t.Integer({ description: 'What this key was charged today (TIMEZONE), refunded messages included' }),
})
export const CreatedApiKey = t.Composite([ApiKey, t.Object({ key: t.String({ description: 'Shown only in this answer' }) })])
export const PatchKeyBody = t.Object(
  {
    active: t.Optional(t.Boolean()),
    rate_limit_per_minute: t.Optional(
      t.Union([JsonInteger(), t.Null()], {
        description: "Requests per minute, 1 to 1,000,000,000; null: the service's default",
        examples: [1200],
      }),
    ),
    daily_spend_cap: t.Optional(
      t.Union([JsonInteger(), t.Null()], { description: 'In CURRENCY units, from 0; null: no cap', examples: [500000] }),
    ),
  },
  { ...closed, description: 'At least one of the fields; those left out do not change' },
)

export const TopupBody = t.Object(
  {
    amount: JsonInteger({ description: 'Positive amount in CURRENCY units', examples: [50000] }),
    note: t.Optional(t.String()),
  },
  closed,
)
export const AdjustmentBody = t.Object(
  {
    amount: JsonInteger({ description: 'Signed correction; the balance may not go below 0' }),
    note: t.String(),
  },
  closed,
)
const REFUND_LATE_FAILURES =
  'Whether a message the provider accepted and later reported `failed` is refunded (true, the default) or stays charged ' +
  '(false). Fixed on each message when it is charged, as its price is: a change applies to messages charged from then on.'

const SETTLE =
  "What Meta's pricing report does to a message charged under this price: `provider` (the default) settles it to the price of " +
  'the category Meta reports (or the `service` price when Meta says it is free), once, with a ledger row; `keep` keeps the charge ' +
  'as made (the reported category is still recorded). Read when the report comes.'

export const PriceBody = t.Object(
  {
    cost_per_message: JsonInteger({ examples: [350] }),
    account_id: t.Optional(t.Union([JsonId(), t.Null()], { description: 'Omit for the global price' })),
    refund_late_failures: t.Optional(
      t.Boolean({
        description: `${REFUND_LATE_FAILURES} Omitted: unchanged (an account's new own price starts with the choice it follows now).`,
      }),
    ),
    prices: t.Optional(
      t.Object(
        {
          marketing: t.Optional(t.Union([JsonInteger(), t.Null()])),
          utility: t.Optional(t.Union([JsonInteger(), t.Null()])),
          authentication: t.Optional(t.Union([JsonInteger(), t.Null()])),
          service: t.Optional(t.Union([JsonInteger(), t.Null()])),
        },
        {
          ...closed,
          description:
            "Each category's own price (a positive integer), or null to remove it (the category costs `cost_per_message` again). " +
            "A category omitted keeps what the price has; an account's new own price starts without any.",
          examples: [{ marketing: 700, utility: 350, authentication: 300 }],
        },
      ),
    ),
    settle: t.Optional(
      t.Union([t.Literal('provider'), t.Literal('keep')], {
        description: `${SETTLE} Omitted: unchanged (an account's new own price starts with the choice it follows now).`,
      }),
    ),
  },
  closed,
)
export const PriceQuery = t.Object({ account_id: t.Optional(Id('account_id', 'Account id; omit for the global price')) })

/** The answer of a top-up or an adjustment. */
export const BalanceAfter = t.Object({ wa_balance: t.Integer() })

export const Price = t.Object({
  cost_per_message: t.Integer(),
  account_id: t.Union([t.Integer(), t.Null()]),
  account_override: t.Boolean(),
  refund_late_failures: t.Boolean({ description: REFUND_LATE_FAILURES }),
  prices: CategoryPrices,
  own_prices: t.Object(
    {
      marketing: t.Optional(t.Integer()),
      utility: t.Optional(t.Integer()),
      authentication: t.Optional(t.Integer()),
      service: t.Optional(t.Integer()),
    },
    { description: 'The categories this price gives a price of their own (the others cost `cost_per_message`)' },
  ),
  settle: t.Union([t.Literal('provider'), t.Literal('keep')], { description: SETTLE }),
})

/** One change of a price, as kept (GET /admin/v1/price/history). */
export const PriceChange = t.Object({
  account_id: t.Union([t.Integer(), t.Null()]),
  cost_per_message: t.Union([t.Integer(), t.Null()]),
  prices: t.Record(t.String(), t.Integer(), { description: 'The categories given their own price by this change' }),
  refund_late_failures: t.Union([t.Boolean(), t.Null()]),
  settle: t.Union([t.String(), t.Null()]),
  removed: t.Boolean({ description: "The account's own price was removed: it pays the global price again" }),
  changed_at: t.String(),
})
