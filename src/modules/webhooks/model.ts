// The webhook registration of the integrator's API, the event it receives, and the operator's view of
// deliveries, attempts, replays and test events.

import { t } from 'elysia'
import { dateRangeFields, pageFields } from '../../http/models'
import { errorCodeDescription } from '../../providers/error-codes'

/** The events a registration can choose; message.status alone by default. */
export const EVENT_TYPES = [
  'message.status',
  'message.received',
  'contact.opted_out',
  'contact.opted_in',
  'balance.low',
  'template.status_changed',
  'verification.approved',
  'sender.status_changed',
  'message.settled',
] as const
export type EventType = (typeof EVENT_TYPES)[number]
export const DEFAULT_EVENTS: EventType[] = ['message.status']

const EVENTS_CHOICE =
  'The events this registration receives, any of `message.status` (a message of this key changed status), `message.received` ' +
  '(a customer wrote to the account), `contact.opted_out` / `contact.opted_in` (a contact of the account opted out or back in), ' +
  "`balance.low` (the account's balance fell below its low-balance threshold), `template.status_changed` (the status, category " +
  'or quality of a WhatsApp template the account may use changed), `verification.approved` (a one-time code of the account was ' +
  'checked right: POST /verifications/{id}/check), `sender.status_changed` (the health of a sender the account sends through ' +
  'changed: its quality, flag, messaging limit, throughput or restrictions, as Meta said it), `message.settled` (a message of the ' +
  "account was settled on Meta's pricing: its category or cost changed). A new registration without it receives " +
  '`["message.status"]`; a replacement without it keeps its choice. An unknown name or an empty list: 422 `VALIDATION_ERROR`.'

export const RegisterWebhookBody = t.Object(
  {
    url: t.String({
      description: 'HTTPS URL, at most 2048 characters, whose host is a public address (checked now and at every delivery)',
      examples: ['https://erp.example.com/hooks/messaging'],
    }),
    events: t.Optional(t.Array(t.String(), { description: EVENTS_CHOICE, examples: [['message.status', 'message.received']] })),
  },
  { additionalProperties: false },
)
export type RegisterWebhookBody = typeof RegisterWebhookBody.static

export const WebhookRegistration = t.Object(
  {
    url: t.String({ description: 'The URL as it will be called (normalised by the URL parser)' }),
    signing_secret: t.String({ description: 'whsec_ + base64; kept when the URL is replaced, new after a DELETE' }),
    events: t.Array(t.String(), { description: 'The events it receives, in the order of the list of known events' }),
  },
  {
    examples: [
      {
        url: 'https://erp.example.com/hooks/messaging',
        signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        events: ['message.status', 'message.received'],
      },
    ],
  },
)

export const Webhook = t.Object(
  { url: t.String(), events: t.Array(t.String(), { description: 'The events it receives' }) },
  { examples: [{ url: 'https://erp.example.com/hooks/messaging', events: ['message.status'] }] },
)

/**
 * The body of every delivery (spec section 6), as the status machine writes it: a forward move only,
 * so `previous_status` is `sent` or `delivered`; or the hand-off outcome of a message answered
 * `queued` (an extension: from `queued` to `sent`, or to `failed` without a SID). A failure also says whether it was refunded
 * (`refunded`, after `error_message`; the spec's fields keep their order). Receivers should ignore
 * fields they do not know.
 */
export const MessageStatusEvent = t.Object(
  {
    event: t.Literal('message.status'),
    timestamp: t.String({
      description: 'When the change was recorded: YYYY-MM-DD HH:MM:SS in the service time zone',
      examples: ['2026-11-21 10:15:02'],
    }),
    data: t.Object({
      message_sid: t.Union([t.String(), t.Null()], {
        description:
          'The message SID (`message_id` of the send answer); null only for a message answered `queued` that failed without ' +
          'the provider taking it',
        examples: ['SM0123456789abcdef0123456789abcdef'],
      }),
      to: t.String({ description: 'Destination in + international form', examples: ['+6281234567890'] }),
      status: t.Union([t.Literal('sent'), t.Literal('delivered'), t.Literal('read'), t.Literal('failed')], {
        description: 'The new status (`sent` only after `queued`)',
      }),
      previous_status: t.Union([t.Literal('queued'), t.Literal('sent'), t.Literal('delivered')], {
        description:
          'The status before the change; `queued` (an extension) for the hand-off outcome of a message whose send or bulk entry ' +
          'was answered `queued` (the provider throttled it): `sent` with its SID, or `failed` and refunded when its validity ran ' +
          'out or its recipient opted out before it was handed over',
      }),
      error_code: t.Union([t.Integer(), t.Null()], {
        description: errorCodeDescription("The provider's numeric error code when `failed`; otherwise null."),
      }),
      error_message: t.Union([t.String(), t.Null()], {
        description:
          "The provider's error text when `failed`; otherwise null. A message stopped before its hand-off because its recipient " +
          'opted out (never handed over, refunded, `error_code` null, `message_sid` null) has a text beginning with `RECIPIENT_OPTED_OUT`',
      }),
      refunded: t.Optional(
        t.Boolean({
          description:
            'Only when `status` is `failed` (an extension): `true` when the charge was given back with this change (the ' +
            "message's `refunded` in GET /messages says the same); `false` when the message stays charged because its price " +
            'keeps failures after acceptance charged (an operator choice)',
        }),
      ),
      test: t.Optional(
        t.Literal(true, {
          description: 'Only on test events (sent from the dashboard or the admin API; `message_sid` and `to` are "test"): ignore them',
        }),
      ),
    }),
  },
  {
    examples: [
      {
        event: 'message.status',
        timestamp: '2026-11-21 10:15:02',
        data: {
          message_sid: 'SM0123456789abcdef0123456789abcdef',
          to: '+6281234567890',
          status: 'delivered',
          previous_status: 'sent',
          error_code: null,
          error_message: null,
        },
      },
      {
        event: 'message.status',
        timestamp: '2026-11-21 10:16:40',
        data: {
          message_sid: 'SM0123456789abcdef0123456789abcdef',
          to: '+6281234567890',
          status: 'failed',
          previous_status: 'delivered',
          error_code: 63016,
          error_message: 'Failed to send freeform message because you are outside the allowed window',
          refunded: true,
        },
      },
    ],
  },
)
export type MessageStatusEvent = typeof MessageStatusEvent.static

// The admin API: deliveries, their attempts, replays and test events.
export const DeliveriesQuery = t.Object({
  status: t.Optional(t.String({ description: '`pending`, `delivered` or `failed`; all when omitted' })),
  ...pageFields,
  ...dateRangeFields('created_at'),
})

const EventPayload = t.Object(
  {
    event: t.String({ description: 'The event type' }),
    timestamp: t.String(),
    data: t.Record(t.String(), t.Unknown(), { description: "The event's data, as in the webhooks document (see README, Events)" }),
  },
  { description: 'The body as sent (and signed) on every attempt' },
)

export const Delivery = t.Object({
  id: t.Integer({ description: 'Delivery (event) id, used by the attempts and replay calls' }),
  webhook_id: t.String({ description: 'The `webhook-id` header: the same on every attempt and replay' }),
  api_key_id: t.Integer(),
  event: t.String({
    description: 'The event type: `message.status`, `message.received`, `balance.low`, ...',
    examples: ['message.status'],
  }),
  message_sid: t.Union([t.String(), t.Null()], {
    description: 'The message of a `message.status` event; null for the others and for test events',
  }),
  status: t.Union([t.Literal('pending'), t.Literal('delivered'), t.Literal('failed')]),
  attempts: t.Integer({ description: 'Attempts made since the event was created or last replayed' }),
  next_attempt_at: t.Union([t.String(), t.Null()], { description: 'When the next attempt is due; null unless pending' }),
  last_error: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
  delivered_at: t.Union([t.String(), t.Null()]),
  payload: EventPayload,
})

export const Attempt = t.Object({
  id: t.Integer(),
  attempt: t.Integer({ description: 'Attempt number; starts again at 1 after a replay' }),
  url: t.String(),
  status_code: t.Union([t.Integer(), t.Null()], { description: "The receiver's HTTP status; null when no answer came" }),
  latency_ms: t.Integer(),
  error: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
})

export const ReplaySinceBody = t.Object(
  {
    since: t.String({
      description: '`YYYY-MM-DD HH:MM:SS`: failed deliveries created at or after this time are replayed',
      examples: ['2025-01-31 00:00:00'],
    }),
  },
  { additionalProperties: false },
)

export const Replayed = t.Object({ replayed: t.Integer({ description: 'How many failed deliveries were set pending again' }) })

export const TestEventBody = t.Object(
  {
    deliver: t.Optional(
      t.Boolean({
        description:
          'Default true: record the test event and deliver it (201). false: record and send nothing; the answer is the ' +
          'signed event for the caller to send itself (200), as `admin webhook test --forward-to` does',
      }),
    ),
  },
  { additionalProperties: false },
)

export const QueuedTestEvent = t.Object({
  id: t.Integer({ description: 'The event id: a delivery id when `url` is set (its attempts: GET /admin/v1/deliveries/{id}/attempts)' }),
  webhook_id: t.String({ description: 'The `webhook-id` header it is sent with' }),
  url: t.Union([t.String(), t.Null()], {
    description: 'The registered URL it is delivered to; null when the key has none and only its listeners get it',
  }),
})

export const SignedEvent = t.Object(
  {
    webhook_id: t.String(),
    headers: t.Record(t.String(), t.String(), {
      description: '`content-type`, `webhook-id`, `webhook-timestamp` and `webhook-signature`, signed now',
    }),
    body: t.String({ description: 'The exact request body to send: compact JSON, the bytes the signature covers' }),
  },
  {
    description:
      "Signed with the secret of the key's registered URL, or with the key's listen secret when it has none (shown by " +
      '`admin webhook listen`)',
  },
)
export type SignedEvent = typeof SignedEvent.static

// The stream of GET /admin/v1/keys/{id}/webhook/listen (server-sent events): `ready` first, then each event.
export const ListenReady = t.Object({
  key_id: t.Integer(),
  url: t.Union([t.String(), t.Null()], { description: "The key's registered URL; null when it has none" }),
  signing_secret: t.Union([t.String(), t.Null()], {
    description: "The key's listen secret, which signs its events when it has no registered URL; null when it has one",
  }),
})
export type ListenReady = typeof ListenReady.static

export const ListenedEvent = t.Composite([t.Object({ id: t.Integer({ description: "The event id, the stream's `id:`" }) }), SignedEvent])
export type ListenedEvent = typeof ListenedEvent.static

const eventTimestamp = t.String({
  description: 'When the event was recorded: YYYY-MM-DD HH:MM:SS in the service time zone',
  examples: ['2026-11-21 10:15:02'],
})

/** `message.received`: a customer wrote to one of the account's numbers (GET /inbound/{id} shows the same message). */
export const MessageReceivedEvent = t.Object(
  {
    event: t.Literal('message.received'),
    timestamp: eventTimestamp,
    data: t.Object({
      id: t.Integer({ description: 'The inbound message id (GET /api/v1/inbound/{id})' }),
      phone: t.String({ description: "The customer's number in + international form", examples: ['+6281234567890'] }),
      name: t.Union([t.String(), t.Null()], { description: 'The name the provider gave for the customer' }),
      type: t.String({
        description: 'text, image, document, audio, video, sticker, location, contacts, interactive, button, reaction or unsupported',
        examples: ['text'],
      }),
      text: t.Union([t.String(), t.Null()], { description: "The text, a caption, a reply's title, a reaction's emoji" }),
      content: t.Record(t.String(), t.Unknown(), {
        description:
          'Normalised by type, as in GET /inbound/{id}: text `body`; media `media_id`, `media_url`, `mime_type`, `caption`, ' +
          '`filename`; location `latitude`, `longitude`, `name`, `address`; interactive (a reply to buttons or a list) `kind` ' +
          '(`button_reply`/`list_reply`), `id` (the chosen button or row id), `title`, `description`; button `payload`, `text`; ' +
          'reaction `emoji`, `message_id`',
      }),
      sender_id: t.Union([t.Integer(), t.Null()], { description: "The account's sender it reached; null: the service's own number" }),
      received_at: t.String({ description: "When the customer sent it (the provider's time), YYYY-MM-DD HH:MM:SS" }),
      reply_to: t.Optional(
        t.Object(
          {
            provider_message_id: t.String({ description: "The provider's id of the quoted message" }),
            id: t.Union([t.Integer(), t.Null()], {
              description: 'Our id of it (see `direction`); null when the account has no such message',
            }),
            direction: t.Union([t.Literal('inbound'), t.Literal('outbound'), t.Null()], {
              description: '`outbound`: GET /api/v1/messages `id`; `inbound`: GET /api/v1/inbound `id`',
            }),
          },
          { description: 'Extension: the message the customer answered, quoting it (swiped reply); present only when it quotes one' },
        ),
      ),
    }),
  },
  {
    examples: [
      {
        event: 'message.received',
        timestamp: '2026-11-21 10:15:03',
        data: {
          id: 41,
          phone: '+6281234567890',
          name: 'Budi',
          type: 'interactive',
          text: 'Yes, deliver',
          content: { kind: 'button_reply', id: 'confirm-1042', title: 'Yes, deliver', description: null },
          sender_id: 3,
          received_at: '2026-11-21 10:15:01',
          reply_to: { provider_message_id: 'wamid.HBgNNjI4MTIzNDU2Nzg5MBUCABEYEjAwMDAwMDAxA=', id: 1042, direction: 'outbound' },
        },
      },
    ],
  },
)

/** `balance.low`: a charge took the account's balance below its threshold (once per crossing). */
export const BalanceLowEvent = t.Object(
  {
    event: t.Literal('balance.low'),
    timestamp: eventTimestamp,
    data: t.Object({
      balance: t.Integer({ description: 'The balance right after the charge that crossed the threshold (CURRENCY units)' }),
      threshold: t.Integer({ description: "The account's low_balance_threshold" }),
    }),
  },
  { examples: [{ event: 'balance.low', timestamp: '2026-11-21 10:15:02', data: { balance: 49650, threshold: 50000 } }] },
)

const contactData = t.Object(
  {
    phone: t.String({ description: "The contact's number in + international form", examples: ['+6281234567890'] }),
    contact_id: t.Union([t.Integer(), t.Null()], { description: "The account's contact with that phone (null: none)" }),
    source: t.String({
      description: 'How: `inbound` (a STOP/START word), `provider` (its own signal), `api`, `dashboard`, `admin`, `import`',
      examples: ['inbound'],
    }),
    detail: t.Union([t.String(), t.Null()], { description: "The word, or the provider's signal", examples: ['STOP'] }),
    inbound_message_id: t.Union([t.Integer(), t.Null()], { description: 'The inbound message that said it (GET /inbound/{id})' }),
  },
  { additionalProperties: true, description: 'The contact, and how it happened (see README, Opt-outs)' },
)

/** `contact.opted_out` / `contact.opted_in`: a contact of the account opted out (STOP) or back in (START). */
export const ContactOptedOutEvent = t.Object({ event: t.Literal('contact.opted_out'), timestamp: eventTimestamp, data: contactData })
export const ContactOptedInEvent = t.Object({ event: t.Literal('contact.opted_in'), timestamp: eventTimestamp, data: contactData })

/** `template.status_changed`: the status, category or quality of a WhatsApp template the account may use changed. */
export const TemplateStatusChangedEvent = t.Object(
  {
    event: t.Literal('template.status_changed'),
    timestamp: eventTimestamp,
    data: t.Object({
      template_id: t.Integer({ description: 'The template (GET /api/v1/templates/{id}; the `template_id` of a send)' }),
      name: t.String({ examples: ['order_shipped'] }),
      language: t.String({ examples: ['id'] }),
      sender_id: t.Union([t.Integer(), t.Null()], { description: "The sender it belongs to; null: the service's own number" }),
      field: t.Union([t.Literal('status'), t.Literal('category'), t.Literal('quality'), t.Literal('flagged')], {
        description:
          'What changed: `status` (`draft`, `pending`, `approved`, `rejected`, `paused`, `disabled`, `in_appeal`, ' +
          '`pending_deletion`, `deleted`, `limit_exceeded`, `archived`, `locked`; only `approved` sends), `category` ' +
          '(`marketing`, `utility`, `authentication`), `quality` (`green`, `yellow`, `red`, `unknown`), or `flagged`: Meta warns ' +
          'that the template is at risk of being paused or disabled (its status is unchanged; `old` and `new` are null)',
      }),
      old: t.Union([t.String(), t.Null()], { description: 'The value before' }),
      new: t.Union([t.String(), t.Null()], { description: 'The value now' }),
      reason: t.Union([t.String(), t.Null()], {
        description: "Meta's reason when it gives one (a rejection's, a pause's: `INVALID_FORMAT`, `FIRST_PAUSE: ...`), else null",
      }),
    }),
  },
  {
    examples: [
      {
        event: 'template.status_changed',
        timestamp: '2026-11-21 10:15:02',
        data: {
          template_id: 57,
          name: 'order_shipped',
          language: 'id',
          sender_id: 3,
          field: 'status',
          old: 'approved',
          new: 'paused',
          reason: 'FIRST_PAUSE: Your WhatsApp message template has been paused',
        },
      },
    ],
  },
)

/** `verification.approved`: a one-time code of the account (POST /verifications) was checked right. */
export const VerificationApprovedEvent = t.Object(
  {
    event: t.Literal('verification.approved'),
    timestamp: eventTimestamp,
    data: t.Object({
      verification_id: t.Integer({ description: 'The verification (POST /verifications/{id}/check)' }),
      to: t.String({ description: 'The number the code was sent to', examples: ['+6281234567890'] }),
      template_id: t.Integer({ description: 'The authentication template it went with' }),
      message_sid: t.Union([t.String(), t.Null()], { description: "The code's message (null: still queued when answered)" }),
    }),
  },
  {
    examples: [
      {
        event: 'verification.approved',
        timestamp: '2026-12-02 05:40:12',
        data: { verification_id: 12, to: '+6281234567890', template_id: 57, message_sid: 'wamid.HBgNNjI4MTIzNDU2Nzg5MBUCABEYEjQ' },
      },
    ],
  },
)

/** `sender.status_changed`: the health of a sender the account sends through changed (issue 32 §4). */
export const SenderStatusChangedEvent = t.Object(
  {
    event: t.Literal('sender.status_changed'),
    timestamp: eventTimestamp,
    data: t.Object({
      sender_id: t.Integer({ description: 'The sender (GET /api/v1/senders lists the account’s)' }),
      field: t.Union(
        [t.Literal('quality'), t.Literal('flagged'), t.Literal('messaging_limit'), t.Literal('throughput'), t.Literal('restrictions')],
        {
          description:
            'What changed: `quality` (`green`, `yellow`, `red`, `unknown`), `flagged` (`true`: Meta flagged the number for low ' +
            "quality, its campaigns pause; `false`: unflagged), `messaging_limit` (the portfolio's unique recipients per 24 hours, or " +
            '`unlimited`), `throughput` (`standard`, `high`), `restrictions` (Meta’s restriction types with their end, or `none`: ' +
            'RESTRICTED_BIZ_INITIATED_MESSAGING refuses business-initiated sends, RESTRICTED_CUSTOMER_INITIATED_MESSAGING every send, ' +
            '422 `SENDER_RESTRICTED`, nothing charged)',
        },
      ),
      old: t.Union([t.String(), t.Null()], { description: 'The value before (null: never said)' }),
      new: t.Union([t.String(), t.Null()], { description: 'The value now' }),
      source: t.Union([t.Literal('meta'), t.Literal('check'), t.Literal('sync')], {
        description: "Who said it: Meta's webhook, or the number's node read at a sender check or a template sync",
      }),
    }),
  },
  {
    examples: [
      {
        event: 'sender.status_changed',
        timestamp: '2026-12-02 09:12:40',
        data: { sender_id: 3, field: 'flagged', old: 'false', new: 'true', source: 'meta' },
      },
    ],
  },
)

/** `message.settled`: a message was settled on Meta's pricing report, its category or cost changed (once per message). */
export const MessageSettledEvent = t.Object(
  {
    event: t.Literal('message.settled'),
    timestamp: eventTimestamp,
    data: t.Object({
      message_sid: t.String({ description: 'The message SID (GET /messages/{message_sid})' }),
      to: t.String({ description: 'Destination in + international form (or the WhatsApp user id it was sent to)' }),
      category: t.String({
        description:
          "The category it is now charged for, Meta's mapped onto the four (`marketing`, `utility`, `authentication`, `service`; " +
          '`service` when Meta marked it free)',
        examples: ['marketing'],
      }),
      previous_category: t.String({ description: 'The category it was charged for when sent', examples: ['utility'] }),
      cost: t.Integer({ description: 'What it finally costs (CURRENCY units): `cost` in GET /messages/{message_sid}' }),
      previous_cost: t.Integer({ description: 'What it was charged when sent' }),
      unsettled: t.Integer({
        description:
          'The part of an upward difference the balance could not pay (the balance never goes below 0): listed in the ' +
          "operator's reconciliation; 0 when all was taken",
      }),
    }),
  },
  {
    examples: [
      {
        event: 'message.settled',
        timestamp: '2026-12-02 10:15:02',
        data: {
          message_sid: 'wamid.HBgNNjI4MTIzNDU2Nzg5MBUCABEYEjQ',
          to: '+6281234567890',
          category: 'marketing',
          previous_category: 'utility',
          cost: 700,
          previous_cost: 350,
          unsettled: 0,
        },
      },
    ],
  },
)
