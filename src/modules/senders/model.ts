// The models of senders: a provider (twilio, meta, simulator) with its credentials, a number, a display
// name and a pace. Credentials go in and never come out: answers show which fields are set, and the
// fields that are not secret (an account SID, a phone number id).

import { t } from 'elysia'
import { Id, JsonId } from '../../http/models'
import { BudgetUseFields, Tier } from '../budgets/model'

export const SenderId = (description = 'Sender id') => Id('sender', description)
export const SenderParams = t.Object({ id: SenderId() })
export const AccountSenderParams = t.Object({ id: Id('account', 'Account id'), sender_id: SenderId() })

const rate = t.Number({
  exclusiveMinimum: 0,
  maximum: 100000,
  description: "Messages per second the sender takes (its number's throughput); default: the provider's",
  examples: [80],
})
const gap = t.Integer({
  minimum: 0,
  maximum: 86_400_000,
  description: "Least milliseconds between two messages to one recipient; default: the provider's",
  examples: [6000],
})
const credentials = t.Record(t.String(), t.String({ maxLength: 2000 }), {
  description:
    "The provider's credentials. twilio: `account_sid`, `auth_token`, optional `messaging_service_sid`; meta: `access_token`, " +
    '`phone_number_id`, `app_secret`, `business_account_id`, optional `verify_token`; simulator: none. Encrypted at rest, never shown again.',
  examples: [{ account_sid: 'AC0123456789abcdef0123456789abcdef', auth_token: '0123456789abcdef0123456789abcdef' }],
})

const ownTier = Tier(
  "Its WhatsApp messaging limit (Meta's tier for the number): unique recipients of business-initiated messages per rolling 24 " +
    'hours, 250, 2000, 10000 or 100000; null (the default): unlimited. A new number starts at 250. Ignored while it is in a portfolio',
)
const portfolio = t.Union([t.String(), t.Null()], {
  description:
    "The portfolio (its name) whose budget it shares with the portfolio's other senders, under the portfolio's tier " +
    '(POST /admin/v1/portfolios); null: none, its own tier applies',
  examples: ['Toko Maju group'],
})

const lateFailures = t.Union([t.Literal('refund'), t.Literal('keep')], {
  description:
    "What a late failure (a message reported failed after the provider accepted it) reported through this sender's credentials does: " +
    "`refund` it (when the price refunds late failures too), or `keep` it charged. Whoever holds the sender's credentials can sign such " +
    'reports, so the default is `keep` for Twilio and Meta senders (a tenant may have brought its own), `refund` for the simulator',
  examples: ['keep'],
})

export const CreateSenderBody = t.Object({
  provider: t.String({ description: 'twilio, meta or simulator', examples: ['twilio'] }),
  name: t.String({ description: 'The display name (the business name customers see)', examples: ['Toko Maju'] }),
  number: t.String({ description: 'The WhatsApp number, E.164', examples: ['+6281234567890'] }),
  credentials: t.Optional(credentials),
  rate_per_second: t.Optional(rate),
  recipient_gap_ms: t.Optional(gap),
  messaging_limit: t.Optional(ownTier),
  portfolio: t.Optional(portfolio),
  late_failures: t.Optional(lateFailures),
})
export type CreateSenderBody = typeof CreateSenderBody.static

export const UpdateSenderBody = t.Object({
  name: t.Optional(t.String({ description: 'The display name' })),
  credentials: t.Optional(
    t.Record(t.String(), t.String({ maxLength: 2000 }), {
      description: 'Credential fields to replace (the others stay); an empty string removes an optional one',
    }),
  ),
  rate_per_second: t.Optional(t.Union([rate, t.Null()], { description: "Messages per second; null: the provider's default" })),
  recipient_gap_ms: t.Optional(
    t.Union([gap, t.Null()], { description: "Least ms between two messages to one recipient; null: the provider's default" }),
  ),
  messaging_limit: t.Optional(ownTier),
  portfolio: t.Optional(portfolio),
  late_failures: t.Optional(lateFailures),
})
export type UpdateSenderBody = typeof UpdateSenderBody.static

export const AssignSenderBody = t.Object({
  default: t.Optional(t.Boolean({ description: "Make it the account's default sender (an account's first sender is its default)" })),
})

const Check = t.Object({
  at: t.String({ description: 'When it was checked, YYYY-MM-DD HH:MM:SS' }),
  ok: t.Boolean({ description: 'Whether the provider took the credentials' }),
  detail: t.String({ description: 'What the provider answered (never a credential)' }),
})

/** A sender as members (and API keys) see it: no credentials, no pace details. */
export const AccountSender = t.Object({
  id: JsonId({ description: 'Sender id: what `from` names (or its number)' }),
  provider: t.String({ examples: ['twilio'] }),
  name: t.String({ examples: ['Toko Maju'] }),
  number: t.String({ examples: ['+6281234567890'] }),
  default: t.Boolean({ description: "The account's default sender (used when `from` is omitted)" }),
  disabled: t.Boolean({ description: 'A disabled sender refuses new sends' }),
})
export type AccountSender = typeof AccountSender.static

export const Sender = t.Object({
  id: JsonId({ description: 'Sender id' }),
  provider: t.String({ examples: ['twilio'] }),
  name: t.String({ examples: ['Toko Maju'] }),
  number: t.String({ examples: ['+6281234567890'] }),
  identity: t.String({ description: "What the provider's callbacks name it by: Twilio's account SID, Meta's phone number id" }),
  credentials_set: t.Array(t.String(), { description: 'The credential fields it holds (their values are never shown)' }),
  rate_per_second: t.Number({ description: 'Its pace: messages per second (its own, or the provider default)' }),
  recipient_gap_ms: t.Integer({ description: 'Its pace: least ms between two messages to one recipient' }),
  disabled: t.Boolean(),
  messaging_limit: t.Union([t.Integer(), t.Null()], {
    description:
      "Its own tier (null: unlimited); a portfolio's tier overrides it, unless Meta said it (`health.messaging_limit_source` `meta`: then it is in force)",
  }),
  portfolio: t.Union([t.String(), t.Null()], { description: 'The portfolio whose budget it shares, or null' }),
  late_failures: lateFailures,
  budget: t.Object(BudgetUseFields, {
    description:
      "The budget it sends under (its portfolio's, else its own) and its use: the tier in force, recipients counted, when the oldest frees",
  }),
  health: t.Object(
    {
      quality: t.Union([t.Literal('green'), t.Literal('yellow'), t.Literal('red'), t.Literal('unknown'), t.Null()], {
        description:
          "The number's quality rating as Meta last gave it (its node's `quality_rating`, read at each check and template sync); null: never read",
      }),
      flagged: t.Boolean({
        description:
          'Meta flagged the number for low quality (phone_number_quality_update FLAGGED, until UNFLAGGED or a GREEN reading): its campaigns pause',
      }),
      throughput: t.Union([t.Literal('standard'), t.Literal('high'), t.Null()], {
        description:
          "Meta's throughput level for the number (THROUGHPUT_UPGRADE: high, 1,000 messages/s unless its own pace is set); null: never said",
      }),
      messaging_limit_source: t.Union([t.Literal('operator'), t.Literal('meta')], {
        description:
          '`meta`: `messaging_limit` is what Meta said (business_capability_update, or the legacy current_limit tiers) and cannot be typed',
      }),
      restrictions: t.Array(
        t.Object({
          type: t.String({ examples: ['RESTRICTED_BIZ_INITIATED_MESSAGING'] }),
          expires_at: t.Union([t.String(), t.Null()], { description: 'When it ends (ISO 8601, UTC); null: not said' }),
        }),
        { description: "Meta's restrictions of the sender's account (account_update ACCOUNT_RESTRICTION); empty: none" },
      ),
      restricted: t.Union([t.Literal('all'), t.Literal('business'), t.Null()], {
        description:
          'What the restrictions refuse now (422 `SENDER_RESTRICTED`, nothing charged): `all` sends, `business`-initiated ones, or null',
      }),
      history: t.Array(
        t.Object({
          field: t.String({ description: '`quality`, `flagged`, `messaging_limit`, `throughput` or `restrictions`' }),
          old: t.Union([t.String(), t.Null()]),
          new: t.Union([t.String(), t.Null()]),
          source: t.String({ description: "`meta` (a webhook), `check` or `sync` (the number's node read)" }),
          at: t.String({ description: 'When it was recorded, YYYY-MM-DD HH:MM:SS' }),
        }),
        { description: 'Its latest 20 health changes, newest first' },
      ),
    },
    { description: "The sender's health as Meta says it (issue 32): what steers its sends and campaigns" },
  ),
  last_check: t.Union([Check, t.Null()]),
  accounts: t.Array(t.Object({ account_id: JsonId(), default: t.Boolean() }), { description: 'The accounts it sends for' }),
  created_at: t.String(),
})
export type Sender = typeof Sender.static

/** A sender's template sync when it was created or checked: how it went (null: its provider keeps no templates of its own). */
export type ReadySync = { ok: boolean; detail: string } | null

/** A created or checked sender, with the sync of its WhatsApp templates that followed. */
export const ReadySender = t.Object({
  ...Sender.properties,
  templates_sync: t.Union(
    [
      t.Object({
        ok: t.Boolean({ description: 'Whether the sync worked' }),
        detail: t.String({ description: "Its counts, or why it failed (the provider's words, never a credential)" }),
      }),
      t.Null(),
    ],
    {
      description:
        "The sync of its WhatsApp templates that followed (a Meta or Twilio sender's; null for a simulator sender): a failed sync " +
        'never fails the create or the check',
    },
  ),
})

export const RotateResult = t.Object({
  rotated: t.Integer({ description: 'Credentials sealed again under the current SECRETS_KEY' }),
  current: t.Integer({ description: 'Credentials already under it' }),
  key_id: t.String({ description: "The current key's id (not the key)" }),
})
