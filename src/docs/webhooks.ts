// The webhooks in the integrator's document (OpenAPI 3.1 `webhooks`): each event the service POSTs to
// the URL registered with POST /api/v1/webhook (the events the registration chose), its Standard
// Webhooks headers and what the receiver's answer means.

import {
  BalanceLowEvent,
  ContactOptedInEvent,
  ContactOptedOutEvent,
  MessageReceivedEvent,
  MessageSettledEvent,
  MessageStatusEvent,
  SenderStatusChangedEvent,
  TemplateStatusChangedEvent,
  VerificationApprovedEvent,
} from '../modules/webhooks/model'

export const WEBHOOK_SCHEMAS = {
  MessageStatusEvent,
  MessageReceivedEvent,
  BalanceLowEvent,
  ContactOptedOutEvent,
  ContactOptedInEvent,
  TemplateStatusChangedEvent,
  VerificationApprovedEvent,
  SenderStatusChangedEvent,
  MessageSettledEvent,
}

const VERIFY_AND_ANSWER = [
  'Verify the signature before trusting the body: `webhook-signature` is `v1,` + base64 HMAC-SHA256 of ' +
    '`{webhook-id}.{webhook-timestamp}.{raw body}`, keyed with the base64 part of the `signing_secret` (after `whsec_`). ' +
    'Any [Standard Webhooks](https://www.standardwebhooks.com) library does it: `new Webhook(secret).verify(body, headers)`.',
  'Answer any 2xx within 5 seconds. Anything else (another status, a redirect, a time-out, a TLS or connection error) is retried ' +
    'after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (±20% jitter; the `Retry-After` of a 429 or 503 is honoured), then the event ' +
    'is marked failed; operators can replay it. Delivery is at least once: drop duplicates by `webhook-id`.',
]

const HEADERS = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'The event’s id: the same on every retry and replay (use it to drop duplicates)',
    schema: { type: 'string', examples: ['msg_2b1f0c7e9d8a4f6b8c1d2e3f4a5b6c7d'] },
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Unix time in seconds of this attempt (reject one too far from your clock)',
    schema: { type: 'integer', examples: [1795169702] },
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description: '`v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the signing secret',
    schema: { type: 'string', pattern: '^v1,', examples: ['v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4='] },
  },
]

/** One event's operation: what it is (`about`, paragraphs), then the signing and answering rules every event shares. */
const webhook = (operationId: string, summary: string, schema: string, about: string[]) => ({
  post: {
    operationId,
    tags: ['Webhooks'],
    summary,
    description: [...about, ...VERIFY_AND_ANSWER].join('\n\n'),
    security: [],
    parameters: HEADERS,
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } },
    },
    responses: {
      '2XX': { description: 'Received: the event is delivered and not sent again' },
      default: { description: 'Not received: the event is retried on the schedule above' },
    },
  },
})

const CHOSEN =
  'Sent only to registrations whose `events` include it (POST /webhook `events`; the default is `["message.status"]`), one per ' +
  'API key of the account that chose it.'

export const WEBHOOKS = {
  'message.status': webhook('messageStatusEvent', 'A message changed status (POSTed to your registered URL)', 'MessageStatusEvent', [
    'Sent to the URL registered for the API key that sent the message, once per status change ' +
      '(`delivered`, `read`, `failed`; a repeat or a backwards report sends nothing). One message’s events arrive in order. ' +
      'Chosen by default; a registration whose `events` leave it out does not get it.',
    'A `failed` event also carries `refunded` (after `error_message`): `true` when the charge was given back with this change, ' +
      '`false` when the operator keeps failures after acceptance charged for the price it was sent at. Ignore fields you do not know.',
  ]),
  'message.received': webhook('messageReceivedEvent', 'A customer wrote to the account (an extension)', 'MessageReceivedEvent', [
    CHOSEN,
    'Recorded with the inbound message, once per message: a provider’s repeat delivery of the same message sends nothing. ' +
      'Replies to buttons and lists carry the chosen id: `content.id` for an `interactive` reply, `content.payload` for a `button` ' +
      '(a template’s quick reply). `data` holds the message’s fields as ' +
      'GET /inbound/{id} shows them (without the provider’s raw item).',
  ]),
  'balance.low': webhook('balanceLowEvent', 'The balance fell below the low-balance threshold (an extension)', 'BalanceLowEvent', [
    CHOSEN,
    'Sent once per crossing: when a charge takes the account’s balance from at or above its `low_balance_threshold` (set by the ' +
      'operator in the dashboard or the admin API) to below it. Further charges below it send nothing; the next event needs the ' +
      'balance back at or above the threshold first (a top-up, a refund). Concurrent charges send one.',
  ]),
  'contact.opted_out': webhook('contactOptedOutEvent', 'A contact opted out (an extension)', 'ContactOptedOutEvent', [
    CHOSEN,
    'A contact of the account opted out (an inbound STOP word, the provider’s opt-out signal, or an operator or member): sends to it ' +
      'are refused with 422 `RECIPIENT_OPTED_OUT` until it opts back in.',
  ]),
  'contact.opted_in': webhook('contactOptedInEvent', 'A contact opted back in (an extension)', 'ContactOptedInEvent', [
    CHOSEN,
    'A contact of the account that had opted out opted back in (an inbound START word, or an operator or member).',
  ]),
  'template.status_changed': webhook(
    'templateStatusChangedEvent',
    "A WhatsApp template's status, category or quality changed (an extension)",
    'TemplateStatusChangedEvent',
    [
      CHOSEN +
        ' Every account that may use the template gets it: the accounts its sender serves (the accounts without senders of ' +
        "their own for a template of the service's own number).",
      'One event per change, recorded with it: Meta’s webhook (a template approved, rejected, paused, disabled, reinstated, ' +
        'recategorised, its quality changed, or FLAGGED: `field` `flagged`) or a sync that found it changed or no longer listed ' +
        '(`deleted`). A repeated or ' +
        'out-of-date notification from Meta changes nothing and sends nothing. Only an `approved` template sends: from this ' +
        'event on, a send with a template in another status is refused with 422 `TEMPLATE_NOT_APPROVED`, nothing charged.',
    ],
  ),
  'sender.status_changed': webhook('senderStatusChangedEvent', "A sender's health changed (an extension)", 'SenderStatusChangedEvent', [
    CHOSEN + ' Every account the sender sends for gets it.',
    "One event per change, recorded with it: Meta's `business_capability_update` (the portfolio's messaging limit), " +
      '`account_update` (ACCOUNT_RESTRICTION, and its lifting) and `phone_number_quality_update` (FLAGGED, UNFLAGGED, ' +
      'THROUGHPUT_UPGRADE, a new limit), or the quality rating read on the number at a sender check or a template sync. A ' +
      'repeated or out-of-date notification changes nothing and sends nothing. While a sender is flagged or restricted its ' +
      'campaigns pause (`SENDER_FLAGGED: …`, `SENDER_RESTRICTED: …`) and resume by themselves when it recovers; the sends a ' +
      'restriction forbids are refused with 422 `SENDER_RESTRICTED`, nothing charged.',
  ]),
  'message.settled': webhook('messageSettledEvent', "A message was settled on Meta's pricing (an extension)", 'MessageSettledEvent', [
    CHOSEN,
    "Meta's `sent`, `delivered` and `read` status webhooks say how Meta priced a message. The first that prices it settles it, " +
      "in the status change's transaction: when that changes its category or cost (Meta reported another category, or marked it " +
      'free, and the price of the account settles on Meta’s word), this event says so, once per message: repeated, late and ' +
      'out-of-order reports settle nothing and send nothing. A settlement that changes nothing (the category charged, or a ' +
      'price set to keep charges) sends nothing.',
  ]),
  'verification.approved': webhook(
    'verificationApprovedEvent',
    'A one-time code was checked right (an extension)',
    'VerificationApprovedEvent',
    [
      CHOSEN,
      'Sent once per verification, recorded with the approval: when `POST /verifications/{id}/check` answers `approved` for ' +
        'the first time. A repeated check with the right code answers `approved` again and sends nothing.',
    ],
  ),
}
