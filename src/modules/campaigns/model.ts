import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { Id, JsonId, listOf, PageQuery } from '../../http/models'

const timestamp = (description: string) => t.String({ description: `${description}, YYYY-MM-DD HH:MM:SS in the service time zone` })
const nullableTimestamp = (description: string) => t.Union([timestamp(description), t.Null()])

const CampaignStatus = t.Union(
  [t.Literal('draft'), t.Literal('scheduled'), t.Literal('sending'), t.Literal('paused'), t.Literal('sent'), t.Literal('cancelled')],
  { description: 'draft on creation through the API; the other states come from running it in the dashboard' },
)

export const CampaignIdParams = t.Object({ id: Id('id', 'Campaign id') })
export const CampaignsQuery = PageQuery

// Answers' integers: TypeBox's own (Elysia's t.Integer would document them as maybe a string).
const jsonInteger = Type.Integer

export const CreateCampaignBody = t.Object(
  {
    name: t.String({ description: 'Campaign name, 1 to 200 characters', examples: ['Ramadan promo'] }),
    template_id: JsonId({ description: 'Id of a message template of the account', examples: [3] }),
    segment_id: JsonId({ description: 'Id of a contact segment of the account', examples: [7] }),
    schedule_at: t.Optional(
      t.String({
        description: 'Send time, YYYY-MM-DD HH:MM:SS in the service time zone, not in the past',
        examples: ['2025-03-01 09:00:00'],
      }),
    ),
  },
  { additionalProperties: false },
)
export type CreateCampaignBody = typeof CreateCampaignBody.static

const campaignFields = {
  id: jsonInteger(),
  name: t.String(),
  status: CampaignStatus,
  template_id: jsonInteger(),
  segment_id: jsonInteger(),
  schedule_at: nullableTimestamp('Scheduled send time'),
  created_at: timestamp('Creation time'),
}

export const Campaign = t.Object(campaignFields, {
  examples: [
    {
      id: 12,
      name: 'Ramadan promo',
      status: 'draft',
      template_id: 3,
      segment_id: 7,
      schedule_at: '2025-03-01 09:00:00',
      created_at: '2025-02-20 14:02:11',
    },
  ],
})
export type Campaign = typeof Campaign.static

export const CampaignDetail = t.Object({
  campaign: t.Object({
    ...campaignFields,
    started_at: nullableTimestamp('When sending started'),
    finished_at: nullableTimestamp('When sending finished or was cancelled'),
    pause_reason: t.Union([t.String(), t.Null()], { description: 'Why a paused campaign stopped (e.g. the balance ran out)' }),
  }),
  stats: t.Object(
    {
      total: jsonInteger({ description: 'Messages of the campaign (including those not yet handed to the provider)' }),
      sent: jsonInteger({ description: 'Messages that reached the provider: status sent, delivered or read' }),
      delivered: jsonInteger({ description: 'Messages delivered: status delivered or read' }),
      read: jsonInteger({ description: 'Messages read' }),
      failed: jsonInteger({ description: 'Messages failed' }),
    },
    { examples: [{ total: 100, sent: 97, delivered: 90, read: 41, failed: 3 }] },
  ),
})
export type CampaignDetail = typeof CampaignDetail.static

// Admin: templates and segments, the campaign's building blocks.
export const CreateTemplateBody = t.Object(
  {
    name: t.String({ description: '1 to 200 characters', examples: ['Order shipped'] }),
    body: t.String({
      description: 'Message text with {{name}}-style placeholders filled from contact fields, 1 to 4096 characters',
      examples: ['Hi {{name}}, your order has shipped.'],
    }),
  },
  { additionalProperties: false },
)
export type CreateTemplateBody = typeof CreateTemplateBody.static

// A binding of an account template to a provider's approved template (one per provider per template).
export const Binding = t.Object({
  provider: t.String({ description: 'The provider whose template this is', examples: ['twilio'] }),
  ref: t.String({
    description: "Twilio: the Content SID (HX…); Meta: the approved template's name; simulator: any name",
    examples: ['HX0123456789abcdef0123456789abcdef'],
  }),
  language: t.Union([t.String(), t.Null()], { description: "Meta: the template's language code (en_US, id); null for Twilio" }),
  variables: t.Array(t.String(), {
    description:
      "Placeholder names of the account template, in the provider template's order: Twilio's {{1}}, {{2}}…, Meta's body parameters",
    examples: [['name', 'city']],
  }),
  updated_at: t.String(),
})
export type Binding = typeof Binding.static

export const BindingBody = t.Object(
  {
    ref: t.String({
      description:
        "Twilio: the Content SID (HX + 32 hex characters); Meta: the approved template's name (lowercase letters, digits, underscores); " +
        'simulator: any name without spaces',
      examples: ['HX0123456789abcdef0123456789abcdef'],
    }),
    language: t.Optional(
      t.Union([t.String(), t.Null()], {
        description: 'Meta: required, a language code such as en_US or id; Twilio: none',
        examples: ['id'],
      }),
    ),
    variables: t.Optional(
      t.Array(t.String(), {
        description:
          "The provider template's variables in its order, each a placeholder of the account template (name, phone, email, city) " +
          'that it uses; at most 100, default none',
        examples: [['name', 'city']],
      }),
    ),
  },
  { additionalProperties: false },
)
export type BindingBody = typeof BindingBody.static

export const Template = t.Object({
  id: jsonInteger(),
  name: t.String(),
  body: t.String(),
  created_at: t.String(),
  bindings: t.Array(Binding, { description: "Its bindings to providers' approved templates, by provider name" }),
})
export type Template = typeof Template.static

export const CreateSegmentBody = t.Object(
  {
    name: t.String({ description: '1 to 200 characters', examples: ['VIP customers'] }),
    tag: t.String({
      description: 'Contacts carrying this tag (compared case-insensitively) form the segment; no commas, at most 100 characters',
      examples: ['vip'],
    }),
  },
  { additionalProperties: false },
)
export type CreateSegmentBody = typeof CreateSegmentBody.static
export const Segment = t.Object({
  id: jsonInteger(),
  name: t.String(),
  tag: t.String(),
  contact_count: jsonInteger({ description: "The account's contacts carrying the tag now (case-insensitive)" }),
  created_at: t.String(),
})
export const UpdateTemplateBody = t.Object({ name: t.Optional(t.String()), body: t.Optional(t.String()) }, { additionalProperties: false })
export type Segment = typeof Segment.static

export const CampaignList = listOf(Campaign)
