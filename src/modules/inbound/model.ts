// The models of inbound messages: the lists' queries, an inbound message, a conversation.

import { t } from 'elysia'
import { dateRangeFields, pageFields, QueryInteger } from '../../http/models'

const phoneFilter = t.Optional(
  t.String({
    description:
      "Only this customer's messages: 08xx, 62xx, +62xx, any number in + and digits, or a WhatsApp business-scoped user id " +
      "(`ID.13491208655302741918`; one linked to a phone finds the phone's)",
    examples: ['081234567890'],
  }),
)

export const InboundListQuery = t.Object({ ...pageFields, phone: phoneFilter, ...dateRangeFields('received_at') })
export type InboundListQuery = typeof InboundListQuery.static

export const AdminInboundListQuery = t.Object({
  ...pageFields,
  phone: phoneFilter,
  ...dateRangeFields('received_at'),
  account_id: t.Optional(QueryInteger("Only this account's; 0: those stored without an account")),
})
export type AdminInboundListQuery = typeof AdminInboundListQuery.static

export const ConversationQuery = t.Object({
  ...pageFields,
  from: t.Optional(
    t.String({
      description:
        "Whose 24-hour window `window` shows: one of the account's senders, by id or number; default: the account's default " +
        "sender (the one a send without `from` goes through), else the deployment's number. 422 for another's",
      examples: ['+14155550101'],
    }),
  ),
})
export type ConversationQuery = typeof ConversationQuery.static

export const ConversationParams = t.Object({
  phone: t.String({
    description:
      'The customer: 08xx, 62xx, +62xx, any number in + and digits, or a WhatsApp business-scoped user id (`ID.13491208655302741918`; ' +
      "one linked to a phone through one of the account's numbers finds the phone's conversation)",
    examples: ['+6281234567890'],
  }),
})

const INBOUND_TYPES = 'text, image, document, audio, video, sticker, location, contacts, interactive, button, reaction, unsupported'

export const InboundMessageView = t.Object({
  id: t.Integer(),
  provider: t.String({ description: '`meta`, `twilio` or `simulator`', examples: ['meta'] }),
  provider_message_id: t.String({
    description: "The provider's id of the message (Meta's wamid, Twilio's SID)",
    examples: ['wamid.HBgN…'],
  }),
  sender_id: t.Union([t.Integer(), t.Null()], { description: "The stored sender it reached; null: the deployment's default number" }),
  account_id: t.Union([t.Integer(), t.Null()], { description: 'The account it belongs to (see the account rule); null: none' }),
  contact_id: t.Union([t.Integer(), t.Null()], { description: "The account's contact with that phone (created when missing)" }),
  phone: t.String({
    description:
      "The customer's key: the number in + form, or, for a customer known only by a WhatsApp business-scoped user id (a username " +
      'hides the number), the user id; once Meta names both together, the number',
    examples: ['+6281234567890'],
  }),
  user_id: t.Union([t.String(), t.Null()], {
    description:
      "Extension (issue 32): the customer's WhatsApp business-scoped user id as the provider named it with this message " +
      '(`ID.` and up to 128 letters and digits; Meta only), else null',
    examples: ['ID.13491208655302741918'],
  }),
  name: t.Union([t.String(), t.Null()], { description: 'The name the provider gave for the customer' }),
  type: t.String({ description: INBOUND_TYPES, examples: ['text'] }),
  text: t.Union([t.String(), t.Null()], { description: "What a list shows: the text, a caption, a reply's title, a reaction's emoji" }),
  content: t.Record(t.String(), t.Unknown(), {
    description:
      'Normalised by type. text: `body`; image/document/audio/video/sticker: `media_id`, `media_url`, `mime_type`, `caption`, ' +
      "`filename` (the provider's media id or URL: the media is not downloaded or kept); location: `latitude`, `longitude`, " +
      '`name`, `address`; contacts: `contacts` [{`name`, `phones`}]; interactive: `kind` (`button_reply`/`list_reply`), `id`, ' +
      '`title`, `description`; button: `payload`, `text`; reaction: `emoji`, `message_id` (the message reacted to)',
  }),
  raw: t.Unknown({ description: "The provider's own item, as it came" }),
  received_at: t.String({ description: "When the customer sent it (the provider's time, else when it arrived)" }),
  created_at: t.String({ description: 'When it was stored' }),
})

/** What a message quotes (issue 32): the provider's id, and ours when the account has that message. */
export const ReplyTo = t.Union(
  [
    t.Object({
      provider_message_id: t.String({
        description: "The provider's id of the quoted message (Meta's `context.id`, Twilio's OriginalRepliedMessageSid)",
      }),
      id: t.Union([t.Integer(), t.Null()], {
        description:
          "Our id of it: GET /inbound's `id` (direction inbound) or GET /messages' `id` (outbound); null when the account has no such message",
      }),
      direction: t.Union([t.Literal('inbound'), t.Literal('outbound'), t.Null()]),
    }),
    t.Null(),
  ],
  { description: 'Extension: the message this one answers, quoting it; null when it quotes none' },
)

/** The reactions a message holds now (issue 32). */
export const Reactions = t.Array(
  t.Object({
    emoji: t.String({ examples: ['👍'] }),
    by: t.Union([t.Literal('customer'), t.Literal('business')], {
      description: '`customer`: an inbound reaction; `business`: a reaction the account sent (type `reaction`)',
    }),
    at: t.Union([t.String(), t.Null()], { description: 'When it was made, YYYY-MM-DD HH:MM:SS' }),
  }),
  { description: "Extension: each side's current reaction to this message (a removed one is not listed)" },
)

/** An inbound message as the account's API shows it: with what it quotes, its reactions and when it was marked read. */
export const AccountInboundMessageView = t.Object({
  ...InboundMessageView.properties,
  reply_to: ReplyTo,
  reactions: Reactions,
  read_at: t.Union([t.String(), t.Null()], {
    description: 'Extension: when the account marked it read at the provider (POST /inbound/{id}/read, or the inbox); null: not yet',
  }),
})

export const MarkReadBody = t.Object(
  {
    typing: t.Optional(
      t.Boolean({
        description:
          "Also show the customer a typing indicator (up to 25 seconds, or until the reply). Default false. Twilio's only way to " +
          'mark read is its typing indicator: through a Twilio sender `typing` must be true (else 422)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type MarkReadBody = typeof MarkReadBody.static

export const MarkedRead = t.Object({
  id: t.Integer(),
  read_at: t.String({ description: 'When it was marked read, YYYY-MM-DD HH:MM:SS' }),
  typing: t.Boolean({ description: 'Whether a typing indicator was asked for' }),
})

export const ConversationItem = t.Object({
  direction: t.Union([t.Literal('inbound'), t.Literal('outbound')]),
  id: t.Integer({ description: 'The id in GET /messages (outbound) or GET /inbound (inbound)' }),
  at: t.String({ description: 'Outbound: when it was created; inbound: `received_at`' }),
  sender_id: t.Union([t.Integer(), t.Null()]),
  type: t.String({
    description: 'Outbound: `text`, or its rich type (`image`, `location`, `button`, `list`, `template`…); inbound: its type',
  }),
  text: t.Union([t.String(), t.Null()]),
  status: t.Union([t.String(), t.Null()], { description: 'Outbound: its status; inbound: null' }),
  message_sid: t.Union([t.String(), t.Null()], { description: "The provider's message id" }),
  media_url: t.Union([t.String(), t.Null()]),
  content: t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: 'Inbound: its normalised content; outbound: null' }),
  reply_to: ReplyTo,
  reactions: Reactions,
})

export const ConversationWindow = t.Object(
  {
    open: t.Boolean({ description: 'The customer wrote to the sender within the last 24 hours: free-form messages are allowed' }),
    until: t.Union([t.String(), t.Null()], { description: 'When it closes, YYYY-MM-DD HH:MM:SS; null when closed' }),
    sender_id: t.Union([t.Integer(), t.Null()], { description: "The sender it is the window of; null: the deployment's number" }),
    last_inbound_at: t.Union([t.String(), t.Null()], {
      description: 'When the customer last wrote to that sender, YYYY-MM-DD HH:MM:SS; null: never',
    }),
  },
  {
    description:
      "WhatsApp's 24-hour customer-service window with one sender (`from`, else the account's default sender, else the " +
      "deployment's number): open until 24 hours after the customer's latest message to that sender. Outside it a free-form " +
      'send through a sender whose provider enforces it is refused, 422 `WINDOW_CLOSED`',
  },
)

const senderChoice = t.Union([t.Integer({ minimum: 1 }), t.Null()], {
  description: "The number: a stored sender's id, or null (the default) for the deployment's number",
  examples: [null],
})

export const ConversationHolderQuery = t.Object({
  ...pageFields,
  phone: phoneFilter,
  account_id: t.Optional(QueryInteger('Only conversations this account holds')),
  sender_id: t.Optional(
    t.String({
      pattern: '^([1-9][0-9]{0,14}|default)$',
      description: "Only on this stored sender's number (its id), or `default` for the deployment's number",
      examples: ['default'],
    }),
  ),
})
export type ConversationHolderQuery = typeof ConversationHolderQuery.static

export const ConversationHolder = t.Object({
  sender_id: t.Union([t.Integer(), t.Null()], { description: "The number: a stored sender, or null for the deployment's number" }),
  phone: t.String({ description: "The customer's number", examples: ['+6281234567890'] }),
  account_id: t.Integer({ description: 'The account its unquoted replies, opt-outs and message.received events belong to' }),
  source: t.Union([t.Literal('first_message'), t.Literal('reply'), t.Literal('operator')], {
    description:
      'How it came to hold the conversation: its message was the first the phone received through the number (`first_message`), ' +
      'the customer replied quoting its message (`reply`), or an operator moved it (`operator`)',
  }),
  updated_at: t.String({ description: 'When it last changed, YYYY-MM-DD HH:MM:SS' }),
})

export const MoveConversationBody = t.Object({
  phone: t.String({ description: "The customer's number", examples: ['081234567890'] }),
  sender_id: t.Optional(senderChoice),
  account_id: t.Integer({ minimum: 1, description: 'The account that holds the conversation from now on' }),
  move_messages: t.Optional(
    t.Boolean({ description: 'Also move the messages the phone already sent to that number to the account (default false)' }),
  ),
})
export type MoveConversationBody = typeof MoveConversationBody.static

export const MovedConversation = t.Object({
  ...ConversationHolder.properties,
  messages_moved: t.Integer({ description: 'Inbound messages moved to the account (with move_messages)' }),
})
