import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { dateRangeFields, JsonId, pageFields, QueryInteger } from '../../http/models'
import { errorWith } from '../../http/openapi'
import { errorCodeDescription } from '../../providers/error-codes'

// The extension: `template_id` with `variables` instead of `body`.
const templateFields = {
  template_id: t.Optional(
    JsonId({
      description:
        "Extension: instead of `body`, the id of one of the account's templates, filled with `variables`. When the template is " +
        "bound to an approved template of the provider in use, the provider is sent that template (WhatsApp's business-initiated " +
        'messages); otherwise its rendered text. Charged like any message; the message records the rendered text as `body`',
      examples: [3],
    }),
  ),
  variables: t.Optional(
    t.Object(
      {},
      {
        additionalProperties: t.String(),
        description:
          'With `template_id`: a value (string) for every placeholder the template uses (`name`, `phone`, `email`, `city`) and no other',
        examples: [{ name: 'Budi', city: 'Bandung' }],
      },
    ),
  ),
}

// What a message carries: exactly one of `body` and `template_id`, `variables` only with the template,
// `media_url` only with the text. The route checks it in code (content.ts requireContentShape), for 400s
// that name the field; the documents say it as a `oneOf` of the two shapes, so generated clients and
// validators know it too. The runtime schemas leave it out, so Elysia's validation stays as it is: each
// body below is one set of fields with two schemas, the route's and the documented one (its `detail`).
const contentRule = {
  oneOf: [
    { title: 'Text', required: ['body'], properties: { body: {}, template_id: false, variables: false } },
    { title: 'Template', required: ['template_id'], properties: { template_id: {}, body: false, media_url: false } },
  ],
}

// The extension: how long a throttled message may keep trying.
const validityField = {
  validity_seconds: t.Optional(
    t.Integer({
      description:
        'Extension: how long the message may wait while the provider throttles it (retried after its Retry-After), from 60 to ' +
        "259200 seconds; after it, it fails with the provider's code and is refunded. Default MESSAGE_VALIDITY_SECONDS (4 hours)",
      examples: [3600],
    }),
  ),
}

// The extension: which of the account's senders it goes from.
const fromField = {
  from: t.Optional(
    t.String({
      description:
        "Extension: the sender, by its id (as a string) or its number (GET /api/v1/senders lists the account's). Omitted: the account's default " +
        "sender, or the deployment's number for an account without senders. One that is not the account's is 422 `VALIDATION_ERROR`; " +
        'a disabled one 422 `SENDER_DISABLED`; nothing is charged either way',
      examples: ['+6281234567890'],
    }),
  ),
}

const sendFields = {
  to: t.String({ description: 'Destination in one of the forms 08xx, 62xx, +62xx', examples: ['081234567890'] }),
  body: t.Optional(
    t.String({
      description: 'Message text, 1 to 4096 characters; required unless `template_id` is given',
      examples: ['Your order #1001 has shipped'],
    }),
  ),
  media_url: t.Optional(t.String({ description: 'Absolute http(s) URL of an image or file (not with `template_id`)' })),
  ...templateFields,
  ...validityField,
  ...fromField,
}

export const SendBody = t.Object(sendFields, { additionalProperties: false })
export type SendBody = typeof SendBody.static
/** SendBody with the content rule, for the documents. */
export const DocumentedSendBody = t.Object(sendFields, { additionalProperties: false, ...contentRule })

// A body of each shape, for the documents (an example made from the fields' own would hold both).
const textMessage = { to: '081234567890', body: 'Your order #1001 has shipped' }
const templateMessage = { to: '081234567891', template_id: 3, variables: { name: 'Budi', city: 'Bandung' } }
export const SEND_EXAMPLES = {
  text: { summary: 'Free-form text', value: textMessage },
  template: { summary: 'An account template with its variables', value: templateMessage },
}

export const SendResult = t.Object({
  message_id: t.String({ description: 'Provider message SID', examples: ['SM0123456789abcdef0123456789abcdef'] }),
  to: t.String({ examples: ['+6281234567890'] }),
  status: t.Literal('sent'),
  cost: t.Integer(),
  balance_after: t.Integer(),
})
export type SendResult = typeof SendResult.static

export const SendQueued = t.Object(
  {
    id: t.Integer({ description: "The message's id in GET /messages (it has no SID until the provider takes it)" }),
    to: t.String({ examples: ['+6281234567890'] }),
    status: t.Literal('queued'),
    cost: t.Integer({ description: 'Charged; refunded if the message fails when its validity runs out' }),
    balance_after: t.Integer(),
  },
  {
    description:
      'The provider is throttling the sender (or the pace is full): the message is charged and queued, and is handed over as soon as ' +
      'the provider takes it. Its outcome comes as a `message.status` event with `previous_status: "queued"`.',
  },
)
export type SendQueued = typeof SendQueued.static

const bulkBody = (entryRule: object) =>
  t.Object(
    {
      messages: t.Array(
        t.Object(
          {
            to: t.String({ examples: ['081234567890'] }),
            body: t.Optional(
              t.String({ description: 'Required unless `template_id` is given', examples: ['Invoice #88 is due on Friday'] }),
            ),
            media_url: t.Optional(t.String()),
            ...templateFields,
            ...validityField,
            ...fromField,
          },
          { additionalProperties: false, ...entryRule },
        ),
        { description: '1 to 1000 messages' },
      ),
    },
    { additionalProperties: false },
  )

export const BulkBody = bulkBody({})
export type BulkBody = typeof BulkBody.static
/** BulkBody with the content rule on every entry, for the documents. */
export const DocumentedBulkBody = bulkBody(contentRule)
export const BULK_EXAMPLES = { mixed: { summary: 'Free-form text and a template', value: { messages: [textMessage, templateMessage] } } }

export const BulkEntry = t.Union([
  t.Object({ to: t.String(), status: t.Literal('sent'), message_id: t.String() }),
  t.Object({
    to: t.String({ description: 'Normalised, or as given when it could not be normalised' }),
    status: t.Literal('failed'),
    code: t.String({
      description:
        'VALIDATION_ERROR, SENDER_DISABLED or WINDOW_CLOSED (a free-form entry outside the 24-hour window): not charged; BAD_GATEWAY: refused by the provider, refunded',
      examples: ['VALIDATION_ERROR', 'WINDOW_CLOSED', 'BAD_GATEWAY'],
    }),
    error: t.String(),
    id: t.Optional(Type.Integer({ description: 'BAD_GATEWAY only: the refused (and refunded) message, as `id` in GET /messages' })),
  }),
  t.Object(
    {
      to: t.String(),
      status: t.Literal('queued'),
      id: t.Integer({ description: "The message's id in GET /messages" }),
    },
    {
      description:
        "Charged, and not handed over within the answer's bound (BULK_WAIT_MS; the provider throttles the sender): its outcome comes " +
        'as a `message.status` event with `previous_status: "queued"`',
    },
  ),
])
export type BulkEntry = typeof BulkEntry.static

export const BulkResult = t.Object({
  total: t.Integer(),
  sent: t.Integer(),
  failed: t.Integer(),
  queued: t.Optional(t.Integer({ description: 'Entries answered `queued` (only when there are some)' })),
  total_cost: t.Integer({ description: 'Charged for the sent (and queued) messages only' }),
  balance_after: t.Integer({ description: 'Balance after the charge and the refunds of this request' }),
  results: t.Array(BulkEntry, { description: 'One entry per submitted message, in request order' }),
})
export type BulkResult = typeof BulkResult.static

export const MessageStatus = t.Union(
  [t.Literal('queued'), t.Literal('sent'), t.Literal('delivered'), t.Literal('read'), t.Literal('failed')],
  {
    description: '`queued` (an extension): charged and answered `queued`, the provider still throttling it; its outcome comes by webhook',
  },
)

export const Message = t.Object({
  id: t.Integer({ description: "The message's own id (a refused send's 502 names it too)" }),
  message_sid: t.Union([t.String(), t.Null()], { description: 'null when the provider never accepted the message' }),
  phone: t.String(),
  status: MessageStatus,
  body: t.String(),
  media_url: t.Union([t.String(), t.Null()]),
  cost: t.Integer(),
  error_code: t.Union([t.Integer(), t.Null()], {
    description: errorCodeDescription(
      "The provider's numeric error code when the message failed (with `error_message`, its text); otherwise null.",
    ),
  }),
  error_message: t.Union([t.String(), t.Null()]),
  campaign_id: t.Union([t.Integer(), t.Null()]),
  sender_id: t.Union([t.Integer(), t.Null()], {
    description: "Extension: the sender it went from (GET /api/v1/senders); null: the deployment's default sender",
  }),
  template_id: t.Union([t.Integer(), t.Null()], {
    description: "The account template the text was rendered from (a campaign's, or a send's `template_id`); null for a free-form body",
  }),
  provider_template: t.Union(
    [
      t.Object({
        provider: t.String({ examples: ['twilio'] }),
        ref: t.String({
          description: "The provider's template: Twilio's Content SID, Meta's template name",
          examples: ['HX0123456789abcdef0123456789abcdef'],
        }),
        language: t.Union([t.String(), t.Null()], { description: "Meta's language code; null for Twilio" }),
        variables: t.Array(t.String(), {
          description: "The values sent, in the provider template's order",
          examples: [['Budi', 'Bandung']],
        }),
      }),
      t.Null(),
    ],
    { description: 'The approved template the provider was asked to send instead of free-form text; null for free-form text' },
  ),
  created_at: t.String(),
  sent_at: t.Union([t.String(), t.Null()]),
  delivered_at: t.Union([t.String(), t.Null()]),
  read_at: t.Union([t.String(), t.Null()]),
  refunded: t.Boolean({
    description:
      '`cost` was given back: the provider refused the message, or reported it `failed` after accepting it (unless the ' +
      'operator keeps such late failures charged). Summing `cost` over a list, leave these out',
  }),
})

/** 502 of a send: the provider refused the message, which was refunded and stays listed under `id`. */
export const SendRefused = errorWith(502, {
  id: Type.Integer({ description: "The refused message's `id` in GET /messages (listed as `failed`, `refunded: true`)" }),
})

export const ListQuery = t.Object({
  ...pageFields,
  status: t.Optional(t.String({ description: 'sent, delivered, read or failed; or queued (messages answered `queued`)' })),
  ...dateRangeFields('sent_at'),
  sender_id: t.Optional(QueryInteger("Extension: only messages from this sender; 0: the deployment's default sender")),
})
export type ListQuery = typeof ListQuery.static

export const IdempotencyHeaders = t.Object({
  'idempotency-key': t.Optional(t.String({ description: 'Up to 255 characters; repeats within 24 h replay the first answer' })),
})

export const SettleBody = t.Object({ outcome: t.String({ description: '`sent` or `refund`' }) })
export const Settled = t.Object({ id: t.Integer(), outcome: t.String() })

/** A message in quarantine (GET /admin/v1/quarantine). */
export const QuarantinedMessage = t.Object({
  id: t.Integer(),
  account_id: t.Integer(),
  phone: t.String(),
  body: t.String(),
  cost: t.Integer(),
  handoff_recoveries: t.Integer({ description: 'How many times recovery handed it over' }),
  created_at: t.String(),
  quarantined_at: t.String(),
})
