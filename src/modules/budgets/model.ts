// The models of the messaging limit: a sender's or a portfolio's tier, and a budget's use.

import { t } from 'elysia'
import { Id, JsonId } from '../../http/models'
import { MESSAGING_TIERS } from '../../lib/validate'

export const PortfolioParams = t.Object({ id: Id('portfolio', 'Portfolio id') })

/** A tier as requests give it: one of WhatsApp's, or null for unlimited. */
export const Tier = (description: string) =>
  t.Union([t.Integer({ description: `one of ${MESSAGING_TIERS.join(', ')} (another is 422)` }), t.Null()], { description, examples: [250] })

const TIER_TEXT =
  'WhatsApp messaging limit: unique recipients of business-initiated messages (to customers whose 24-hour window is closed) ' +
  'per rolling 24 hours: 250, 2000, 10000 or 100000; null: unlimited'

/** The fields of a budget's use, in answers. */
export const BudgetUseFields = {
  messaging_limit: t.Union([t.Integer(), t.Null()], { description: `The tier in force: ${TIER_TEXT}`, examples: [250] }),
  used: t.Integer({ description: 'Unique recipients of business-initiated messages counted in the last 24 hours', examples: [17] }),
  frees_at: t.Union([t.String(), t.Null()], {
    description: 'When the oldest of them stops counting (YYYY-MM-DD HH:MM:SS); null: none counted',
    examples: ['2026-11-26 09:30:00'],
  }),
}
export const BudgetUse = t.Object(BudgetUseFields)

export const Portfolio = t.Object({
  id: JsonId({ description: 'Portfolio id' }),
  name: t.String({ examples: ['Toko Maju group'] }),
  senders: t.Array(t.Integer(), { description: 'The senders that share its budget' }),
  ...BudgetUseFields,
  created_at: t.String(),
})
export type Portfolio = typeof Portfolio.static

export const CreatePortfolioBody = t.Object({
  name: t.String({ description: "A name (the business portfolio's in Meta's Business Manager, say)", examples: ['Toko Maju group'] }),
  messaging_limit: t.Optional(Tier(`${TIER_TEXT}; default unlimited. A new business starts at 250`)),
})
export const UpdatePortfolioBody = t.Object({
  name: t.Optional(t.String({ description: 'A new name' })),
  messaging_limit: t.Optional(Tier(TIER_TEXT)),
})
