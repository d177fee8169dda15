import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { Id, JsonId, listOf, PageQuery } from '../../http/models'

const timestamp = (description: string) => t.String({ description: `${description}, YYYY-MM-DD HH:MM:SS in the service time zone` })
const nullableTimestamp = (description: string) => t.Union([timestamp(description), t.Null()])

const Source = t.Object(
  {
    field: t.Optional(t.String({ description: "A contact's field: name, phone, email or city" })),
    attribute: t.Optional(t.String({ description: "One of the contact's own attributes, by its key" })),
    constant: t.Optional(t.String({ description: 'The same text for every recipient' })),
  },
  { additionalProperties: false, description: 'Where the value comes from: exactly one of field, attribute or constant' },
)

const HeaderMedia = t.Object(
  {
    type: t.Union([t.Literal('image'), t.Literal('video'), t.Literal('document')], {
      description: "The template's header kind: image, video or document",
    }),
    link: t.Optional(
      t.String({
        description: 'An https link to the media, the same for every recipient (or `media_id`: one of the two)',
        examples: ['https://cdn.example.com/promo.jpg'],
      }),
    ),
    media_id: t.Optional(
      t.String({
        description:
          "A file this account uploaded (`POST /api/v1/media`), the same for every recipient (or `link`): 404 if it is not the account's, " +
          "422 if it is not of the header's kind; kept while the campaign may still send it",
        examples: ['med_3vQb7Jx0S9aLq2Wc8Zt1Ke'],
      }),
    ),
    filename: t.Optional(t.String({ description: "A document's file name, as the customer sees it" })),
  },
  {
    additionalProperties: false,
    description:
      "A media header's media (a template whose header is an image, video or document): one `link` or `media_id` for the whole campaign",
  },
)

const CampaignParametersInput = t.Object(
  {
    variables: t.Optional(t.Record(t.String(), Source, { description: 'The body\'s parameters by key ("1", "2"… or names)' })),
    header: t.Optional(
      t.Union([Source, HeaderMedia], {
        description:
          "A text header's parameter (a source), or a media header's media ({type, link} or {type, media_id}, the same for every recipient)",
      }),
    ),
    buttons: t.Optional(t.Record(t.String(), Source, { description: 'The buttons that take a value, by position ("0" for the first)' })),
  },
  {
    additionalProperties: false,
    description:
      "Extension, for a WhatsApp template only: where each of its parameters comes from, per recipient: every parameter the template's " +
      '`parameters` lists (body, header, URL or copy-code buttons) and no other, else 422 naming it; a media header takes its ' +
      'link or media_id once for the campaign',
    examples: [{ variables: { '1': { field: 'name' }, '2': { attribute: 'order_id' } }, buttons: { '0': { constant: 'SALE' } } }],
  },
)

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
    template_id: JsonId({
      description:
        'Id of a message template of the account, or of a WhatsApp template it may use (GET /templates; the campaign then ' +
        "goes from the template's own sender and needs `parameters`)",
      examples: [3],
    }),
    parameters: t.Optional(CampaignParametersInput),
    segment_id: JsonId({ description: 'Id of a contact segment of the account', examples: [7] }),
    schedule_at: t.Optional(
      t.String({
        description: 'Send time, YYYY-MM-DD HH:MM:SS in the service time zone, not in the past',
        examples: ['2025-03-01 09:00:00'],
      }),
    ),
    max_price: t.Optional(
      t.Integer({
        minimum: 0,
        description:
          "Extension: the most each of its messages may cost. When its messages' price is above it (Meta recategorised its template, a " +
          'price was raised), nothing more is charged and the campaign pauses with a reason that starts with `PRICE_ABOVE_MAX`; resume ' +
          'it once the price or the cap allows. Not Meta\'s own "maximum price" for marketing messages',
        examples: [500],
      }),
    ),
    from: t.Optional(
      t.String({
        description:
          "Extension: the sender it goes from, by id or number (one of the account's); omitted: the account's default sender when " +
          'the campaign is created. A campaign whose sender is disabled while it runs pauses',
        examples: ['+6281234567890'],
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
  sender_id: t.Union([jsonInteger(), t.Null()], {
    description: "Extension: the sender it goes from; null: the deployment's default sender",
  }),
  parameters: t.Union([CampaignParametersInput, t.Null()], {
    description: "Extension: where the WhatsApp template's parameters come from; null for an account template",
  }),
  schedule_at: nullableTimestamp('Scheduled send time'),
  created_at: timestamp('Creation time'),
  max_price: t.Optional(t.Union([jsonInteger(), t.Null()], { description: 'Extension: the most each message may cost; null: no cap' })),
}

export const Campaign = t.Object(campaignFields, {
  examples: [
    {
      id: 12,
      name: 'Ramadan promo',
      status: 'draft',
      template_id: 3,
      segment_id: 7,
      sender_id: null,
      parameters: null,
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
    pause_reason: t.Union([t.String(), t.Null()], {
      description:
        "Why a paused campaign stopped (e.g. the balance ran out). One starting with `MESSAGING_LIMIT` stopped at its sender's messaging " +
        'limit (unique recipients of business-initiated messages per rolling 24 hours) and resumes by itself once that frees; one ' +
        'starting with `TEMPLATE_NOT_APPROVED` stopped because its WhatsApp template is no longer approved (paused, disabled, ' +
        'rejected…) and resumes by itself once it is approved again',
    }),
  }),
  stats: t.Object(
    {
      total: jsonInteger({ description: 'Messages of the campaign (including those not yet handed to the provider)' }),
      sent: jsonInteger({ description: 'Messages that reached the provider: status sent, delivered or read' }),
      delivered: jsonInteger({ description: 'Messages delivered: status delivered or read' }),
      read: jsonInteger({ description: 'Messages read' }),
      failed: jsonInteger({ description: 'Messages failed' }),
      window_closed: jsonInteger({
        description:
          "Recipients skipped, uncharged, because their 24-hour window with the sender was closed: a campaign whose template is not bound to an approved template of the sender's provider goes free-form, which WhatsApp takes only within the window (extension)",
      }),
      opted_out: jsonInteger({
        description: "Recipients skipped because they opted out of the account's messages (extension): never charged, no message",
      }),
      missing_values: jsonInteger({
        description:
          "Recipients skipped, uncharged, because a WhatsApp template's parameter had no value for them (an attribute they lack, " +
          'an e-mail not given) or one WhatsApp would refuse (extension)',
      }),
      user_id_only: jsonInteger({
        description:
          'Recipients skipped, uncharged, because they are known only by a WhatsApp user id (a username hiding the phone) and the ' +
          "campaign's sender is not a Meta sender, the only provider that reaches a user id (extension)",
      }),
    },
    {
      examples: [
        { total: 100, sent: 95, delivered: 90, read: 41, failed: 3, window_closed: 2, opted_out: 1, missing_values: 0, user_id_only: 0 },
      ],
    },
  ),
})
export type CampaignDetail = typeof CampaignDetail.static

export const CampaignList = listOf(Campaign)
