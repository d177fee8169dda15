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
        'messages); otherwise its rendered text. Charged like any message; the message records the rendered text as `body`. ' +
        'Or a WhatsApp template (GET /api/v1/templates): sent from its own sender (unless `from` names it), only when `approved` ' +
        '(else 422 `TEMPLATE_NOT_APPROVED`), filled with `variables`, `header` and `buttons`; the 24-hour window does not apply',
      examples: [3],
    }),
  ),
  variables: t.Optional(
    t.Object(
      {},
      {
        additionalProperties: t.String(),
        description:
          'With `template_id`: a value (string) for every placeholder the template uses (`name`, `phone`, `email`, `city`) and no other; ' +
          'for a WhatsApp template, every body parameter by its key (`"1"`, `"2"`… or its name) and no other',
        examples: [{ name: 'Budi', city: 'Bandung' }],
      },
    ),
  ),
}

// The extension: rich messages (rich.ts), as the Cloud API names them: `type` and one object named after it.
const strict = { additionalProperties: false } as const
const link = t.Optional(
  t.String({
    description: 'An https URL WhatsApp fetches the file from (up to 2048 characters); or `media_id` instead',
    examples: ['https://cdn.example.com/p/1001.jpg'],
  }),
)
const headerLink = t.Optional(
  t.String({ description: 'An https URL WhatsApp fetches the file from (up to 2048 characters); or `media_id` instead' }),
)
const media_id = t.Optional(
  t.String({
    description:
      'Extension (issue 32), instead of `link`: the `id` of a file uploaded with `POST /api/v1/media`, of this kind. Another ' +
      "account's file, or an unknown one, is 404 `NOT_FOUND` before anything is charged; a file of another kind 422. A Meta " +
      'sender uploads it to the Graph API once per number (kept 29 days, uploaded again after); a Twilio sender gets a signed ' +
      'link to this service (`GET /media/{id}`, valid 24 hours). A document without `filename` is named as it was uploaded',
    examples: ['med_3q2Xb0kR4mJmYw1y8eYh3A'],
  }),
)
const caption = t.Optional(t.String({ description: 'Shown under the media, up to 1024 characters' }))
const filename = t.Optional(t.String({ description: 'The name the recipient sees, up to 240 characters', examples: ['invoice-88.pdf'] }))
const captioned = (what: string) =>
  t.Optional(t.Object({ link, media_id, caption }, { ...strict, description: `With \`type: "${what}"\`: \`link\` or \`media_id\`` }))
const bare = (what: string) =>
  t.Optional(
    t.Object({ link, media_id }, { ...strict, description: `With \`type: "${what}"\` (no caption on WhatsApp): \`link\` or \`media_id\`` }),
  )
const richFields = {
  type: t.Optional(
    t.String({
      description:
        'Extension: what the message is: `text` (the default, with `body`), `image`, `video`, `audio`, `document`, `sticker`, ' +
        '`location` or `interactive` (reply buttons or a list), each with the object named after it, as the WhatsApp Cloud API names ' +
        "them; not with `body`, `media_url` or `template_id`. A type the sender's provider cannot send is 422 before anything is charged. " +
        '`reaction` (with `reaction`) reacts to a message of the conversation with `to`',
      examples: ['image'],
    }),
  ),
  image: captioned('image'),
  video: captioned('video'),
  audio: bare('audio'),
  sticker: bare('sticker'),
  document: t.Optional(
    t.Object({ link, media_id, caption, filename }, { ...strict, description: 'With `type: "document"`: `link` or `media_id`' }),
  ),
  location: t.Optional(
    t.Object(
      {
        latitude: t.Number({ description: '-90 to 90', examples: [-6.2088] }),
        longitude: t.Number({ description: '-180 to 180', examples: [106.8456] }),
        name: t.Optional(t.String({ description: 'Up to 1000 characters', examples: ['Toko Budi'] })),
        address: t.Optional(t.String({ description: 'Up to 1000 characters', examples: ['Jl. Sudirman 1, Jakarta'] })),
      },
      { ...strict, description: 'With `type: "location"`' },
    ),
  ),
  interactive: t.Optional(
    t.Object(
      {
        type: t.String({ description: '`button` (reply buttons) or `list`', examples: ['button'] }),
        body: t.Object({ text: t.String({ description: '1 to 1024 characters' }) }, strict),
        action: t.Object(
          {
            buttons: t.Optional(
              t.Array(
                t.Object(
                  {
                    type: t.String({ description: '`reply`' }),
                    reply: t.Object(
                      {
                        id: t.String({ description: 'Up to 256 characters (200 through Twilio), unique; comes back with the reply' }),
                        title: t.String({ description: 'The label, up to 20 characters, unique' }),
                      },
                      strict,
                    ),
                  },
                  strict,
                ),
                { description: 'type `button`: 1 to 3 reply buttons' },
              ),
            ),
            button: t.Optional(t.String({ description: 'type `list`: the text of the button that opens the list, up to 20 characters' })),
            sections: t.Optional(
              t.Array(
                t.Object(
                  {
                    title: t.Optional(t.String({ description: 'Up to 24 characters; required with more than one section' })),
                    rows: t.Array(
                      t.Object(
                        {
                          id: t.String({ description: 'Up to 200 characters, unique; comes back with the reply' }),
                          title: t.String({ description: 'Up to 24 characters' }),
                          description: t.Optional(t.String({ description: 'Up to 72 characters (required through Twilio)' })),
                        },
                        strict,
                      ),
                    ),
                  },
                  strict,
                ),
                { description: 'type `list`: 1 to 10 sections, 1 to 10 rows in all' },
              ),
            ),
          },
          strict,
        ),
      },
      { ...strict, description: 'With `type: "interactive"`: reply buttons or a list, as the Cloud API names them' },
    ),
  ),
  reaction: t.Optional(
    t.Object(
      {
        message_id: t.String({
          description:
            "The message reacted to, in the account's conversation with `to` through the same sender: an inbound message's `id` " +
            "(GET /inbound), or a provider's message id of the conversation (a `message_sid`, or an inbound message's " +
            '`provider_message_id`). Another is 422, nothing charged',
          examples: ['wamid.HBgNNjI4MTIzNDU2Nzg5MBUCABIYFjNFQjBDMUQ2QjRGRTA2QjI4RjM0AA=='],
        }),
        emoji: t.String({ description: 'One emoji; an empty string removes the reaction', examples: ['👍'] }),
      },
      {
        ...strict,
        description:
          'Extension, with `type: "reaction"` (Meta and the simulator; 422 through Twilio): charged and settled as a service message ' +
          '(README: "Reading, replying and reacting")',
      },
    ),
  ),
  header: t.Optional(
    t.Union(
      [
        t.String({ description: "A WhatsApp template's text header parameter (its `{{1}}` or `{{name}}`), up to 60 characters filled" }),
        t.Object(
          {
            type: t.String({ description: '`image`, `video` or `document`', examples: ['image'] }),
            link: headerLink,
            media_id,
            filename: t.Optional(t.String({ description: 'With `document` only' })),
          },
          { ...strict, description: 'Header media: `link` or `media_id`' },
        ),
      ],
      {
        description:
          "Extension, with `template_id` only: the approved template's header parameter: its media (an image, video or document " +
          "header: an account template must be bound to an approved template of the sender's provider), or, for a WhatsApp " +
          "template whose text header has a parameter, that parameter's text",
      },
    ),
  ),
  buttons: t.Optional(
    t.Array(
      t.Object(
        {
          index: t.Integer({ description: "The button's position among the template's buttons, 0 for the first", examples: [0] }),
          value: t.String({
            description:
              "A URL button's `{{1}}` suffix (the URL filled at most 2000 characters), a copy-code button's coupon code or an " +
              "authentication template's one-time code (at most 15 characters)",
            examples: ['INV-1001'],
          }),
        },
        strict,
      ),
      {
        description:
          'Extension, with a WhatsApp template only: the value of each button that takes one (a URL suffix, a coupon code, a ' +
          "one-time code; an authentication template's code button takes the body's code when left out); missing or extra is 422",
        examples: [[{ index: 0, value: 'INV-1001' }]],
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
    { title: 'Text', required: ['body'], properties: { body: {}, template_id: false, variables: false, header: false, buttons: false } },
    { title: 'Template', required: ['template_id'], properties: { template_id: {}, body: false, media_url: false } },
    {
      title: 'Rich',
      required: ['type'],
      properties: {
        type: { not: { const: 'text' } },
        body: false,
        media_url: false,
        template_id: false,
        variables: false,
        header: false,
        buttons: false,
      },
    },
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

// The extension: the most this message may cost (issue 31).
const maxPriceField = {
  max_price: t.Optional(
    t.Integer({
      minimum: 0,
      description:
        "Extension: the most this message may cost, in the balance's units. When its category's price is above it, it is refused " +
        "before anything is charged: 422 `PRICE_ABOVE_MAX` (a bulk entry fails alone with that code). The service's own cap, not Meta's " +
        '"maximum price" for marketing messages (a bid in Meta\'s own auction, which this does not set)',
      examples: [500],
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
  to: t.String({
    description:
      'Destination in one of the forms 08xx, 62xx, +62xx; or, through a Meta sender, a WhatsApp business-scoped user id ' +
      '(`ID.13491208655302741918`: two uppercase letters, a dot, up to 128 letters and digits), for a customer who hides the phone ' +
      "behind a username (sent as Meta's `recipient`; once Meta named the customer's phone with it, sent to the phone). A user id " +
      'through a Twilio or simulator sender is 422 `VALIDATION_ERROR`, nothing charged',
    examples: ['081234567890'],
  }),
  reply_to: t.Optional(
    t.String({
      description:
        "Extension: the message this one answers, quoted above it in WhatsApp: an inbound message's `id` (GET /inbound) or a " +
        "provider's message id of the account's conversation with `to` through the same sender. Another is 422, nothing charged; " +
        'so is a sender whose provider cannot quote (Twilio). Not with `type: "reaction"`',
      examples: ['42'],
    }),
  ),
  body: t.Optional(
    t.String({
      description: 'Message text, 1 to 4096 characters; required unless `template_id` is given',
      examples: ['Your order #1001 has shipped'],
    }),
  ),
  media_url: t.Optional(t.String({ description: 'Absolute http(s) URL of an image or file (not with `template_id`)' })),
  ...templateFields,
  ...richFields,
  ...validityField,
  ...fromField,
  ...maxPriceField,
}

export const SendBody = t.Object(sendFields, { additionalProperties: false })
export type SendBody = typeof SendBody.static
/** SendBody with the content rule, for the documents. */
export const DocumentedSendBody = t.Object(sendFields, { additionalProperties: false, ...contentRule })

// A body of each shape, for the documents (an example made from the fields' own would hold both).
const textMessage = { to: '081234567890', body: 'Your order #1001 has shipped' }
const templateMessage = { to: '081234567891', template_id: 3, variables: { name: 'Budi', city: 'Bandung' } }
const imageMessage = { to: '081234567892', type: 'image', image: { link: 'https://cdn.example.com/p/1001.jpg', caption: 'Your order' } }
const buttonMessage = {
  to: '081234567893',
  type: 'interactive',
  interactive: {
    type: 'button',
    body: { text: 'Confirm delivery tomorrow?' },
    action: {
      buttons: [
        { type: 'reply', reply: { id: 'confirm', title: 'Yes' } },
        { type: 'reply', reply: { id: 'reschedule', title: 'Another day' } },
      ],
    },
  },
}
export const SEND_EXAMPLES = {
  text: { summary: 'Free-form text', value: textMessage },
  template: { summary: 'An account template with its variables', value: templateMessage },
  image: { summary: 'An image with a caption', value: imageMessage },
  document: {
    summary: 'A document with its file name',
    value: { to: '081234567890', type: 'document', document: { link: 'https://cdn.example.com/inv/88.pdf', filename: 'invoice-88.pdf' } },
  },
  location: {
    summary: 'A location',
    value: { to: '081234567890', type: 'location', location: { latitude: -6.2088, longitude: 106.8456, name: 'Toko Budi' } },
  },
  buttons: { summary: 'Reply buttons', value: buttonMessage },
  list: {
    summary: 'A list',
    value: {
      to: '081234567890',
      type: 'interactive',
      interactive: {
        type: 'list',
        body: { text: 'Pick a delivery slot' },
        action: {
          button: 'Slots',
          sections: [
            {
              title: 'Tomorrow',
              rows: [
                { id: 'am', title: 'Morning', description: '08:00-12:00' },
                { id: 'pm', title: 'Afternoon' },
              ],
            },
          ],
        },
      },
    },
  },
  template_header: {
    summary: 'An approved template with header media',
    value: { to: '081234567890', template_id: 3, header: { type: 'image', link: 'https://cdn.example.com/promo.jpg' } },
  },
  whatsapp_template: {
    summary: 'A WhatsApp template with body, header and URL button parameters',
    value: {
      to: '081234567890',
      template_id: 41,
      variables: { '1': 'INV-1001', '2': 'Rp 1.250.000', '3': '5 December' },
      header: 'INV-1001',
      buttons: [{ index: 0, value: 'INV-1001' }],
    },
  },
  whatsapp_template_named: {
    summary: 'A WhatsApp template with named parameters and a coupon code',
    value: {
      to: '081234567890',
      template_id: 42,
      variables: { first_name: 'Budi', order_id: 'A-1001' },
      buttons: [{ index: 0, value: 'SAVE10' }],
    },
  },
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
            ...richFields,
            ...validityField,
            ...fromField,
            ...maxPriceField,
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
export const BULK_EXAMPLES = {
  mixed: {
    summary: 'Free-form text, a template, an image and reply buttons',
    value: { messages: [textMessage, templateMessage, imageMessage, buttonMessage] },
  },
}

export const BulkEntry = t.Union([
  t.Object({ to: t.String(), status: t.Literal('sent'), message_id: t.String() }),
  t.Object({
    to: t.String({ description: 'Normalised, or as given when it could not be normalised' }),
    status: t.Literal('failed'),
    code: t.String({
      description:
        'VALIDATION_ERROR, SENDER_DISABLED, RECIPIENT_OPTED_OUT, WINDOW_CLOSED (a free-form entry outside the 24-hour window), ' +
        'TEMPLATE_NOT_APPROVED (its WhatsApp template is not approved for its sender), PRICE_ABOVE_MAX (its price is above its `max_price`) or ' +
        'MESSAGING_LIMIT: not charged; CONFLICT: in the repeat of a request whose first run died after charging, an entry that ' +
        'run refused (not charged); BAD_GATEWAY: refused by the provider, refunded; RECIPIENT_OPTED_OUT with an `id`: the ' +
        'recipient opted out after the charge, before the hand-off: not sent, refunded',
      examples: ['VALIDATION_ERROR', 'WINDOW_CLOSED', 'BAD_GATEWAY'],
    }),
    error: t.String(),
    id: t.Optional(
      Type.Integer({
        description:
          'BAD_GATEWAY, and RECIPIENT_OPTED_OUT after the charge, only: the refused (and refunded) message, as `id` in GET /messages',
      }),
    ),
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
  cost: t.Integer({
    description:
      "What the message finally cost: its category's price when charged, settled to the price of the category Meta reported " +
      '(extension; see `category`)',
  }),
  category: t.Union([t.Literal('marketing'), t.Literal('utility'), t.Literal('authentication'), t.Literal('service')], {
    description:
      "Extension: the WhatsApp pricing category it was charged for (its WhatsApp template's category, else `service`); once Meta's " +
      'pricing report settled it, the category Meta reported',
  }),
  error_code: t.Union([t.Integer(), t.Null()], {
    description: errorCodeDescription(
      "The provider's numeric error code when the message failed (with `error_message`, its text); otherwise null.",
    ),
  }),
  error_message: t.Union([t.String(), t.Null()], {
    description:
      "The provider's error text when the message failed; a message stopped before its hand-off because its recipient opted out " +
      '(refunded, `error_code` null) has a text that begins with `RECIPIENT_OPTED_OUT`',
  }),
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
          description: "The values sent, in the provider template's order (a WhatsApp template's: its body's)",
          examples: [['Budi', 'Bandung']],
        }),
        components: t.Optional(
          t.Array(t.Object({}, { additionalProperties: true }), {
            description: "A WhatsApp template sent through Meta: the Cloud API's `template.components` exactly as sent",
          }),
        ),
        contentVariables: t.Optional(
          t.Object({}, { additionalProperties: t.String(), description: 'A WhatsApp template sent through Twilio: its ContentVariables' }),
        ),
        templateId: t.Optional(t.Integer({ description: "A WhatsApp template's id" })),
        category: t.Optional(t.String({ description: "A WhatsApp template's category when it was sent", examples: ['utility'] })),
      }),
      t.Null(),
    ],
    { description: 'The approved template the provider was asked to send instead of free-form text; null for free-form text' },
  ),
  type: t.String({
    description:
      'Extension: `text`, `template`, or the rich type it was sent as (`image`, `video`, `audio`, `document`, `sticker`, `location`, ' +
      '`interactive`); `body` then holds a text rendering of it (the caption, the interactive body, `[location] name`, `[image]`)',
    examples: ['image'],
  }),
  content: t.Union([t.Object({}, { additionalProperties: true }), t.Null()], {
    description:
      'Extension: what it carried beyond text, as the request gave it (the object of its `type`; `{header}` for a template with ' +
      'header media); null for text and plain templates',
    examples: [{ link: 'https://cdn.example.com/p/1001.jpg', caption: 'Your order' }],
  }),
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

/** POST /messages/quote: a bulk's body, or a send's. */
export const QuoteBody = t.Union([BulkBody, SendBody])
export type QuoteBody = typeof QuoteBody.static
export const DocumentedQuoteBody = t.Union([DocumentedBulkBody, DocumentedSendBody])

const CATEGORY = t.Union([t.Literal('marketing'), t.Literal('utility'), t.Literal('authentication'), t.Literal('service')], {
  description: "The message's category, as WhatsApp prices it: its WhatsApp template's category, else `service` (free-form)",
})
export const QuoteResult = t.Object({
  results: t.Array(
    t.Object({
      to: t.String({ description: 'Normalised, or as given when it could not be normalised' }),
      would_send: t.Boolean({ description: 'Whether the send (or this bulk entry) made now would be charged and handed over' }),
      code: t.Optional(
        t.String({
          description:
            'When it would not: the code the send would answer (a bulk entry fail with): VALIDATION_ERROR, SENDER_DISABLED, ' +
            'TEMPLATE_NOT_APPROVED, RECIPIENT_OPTED_OUT, WINDOW_CLOSED, PRICE_ABOVE_MAX, MESSAGING_LIMIT, SPEND_CAP_REACHED',
          examples: ['WINDOW_CLOSED'],
        }),
      ),
      error: t.Optional(t.String({ description: 'Why, in words' })),
      category: CATEGORY,
      price: t.Integer({ description: "Its category's price for the account now" }),
    }),
  ),
  would_send: t.Integer({ description: 'How many would go' }),
  skipped: t.Integer({ description: 'How many would not' }),
  total_cost: t.Integer({ description: 'What those that would go would cost together' }),
  cost_by_category: t.Record(t.String(), t.Integer(), { description: 'total_cost by category' }),
  wa_balance: t.Integer({ description: 'The balance now' }),
  balance_covers: t.Boolean({
    description: 'Whether the balance pays total_cost (a bulk whose valid entries it cannot pay is refused whole with 402)',
  }),
})
export type QuoteResult = typeof QuoteResult.static
