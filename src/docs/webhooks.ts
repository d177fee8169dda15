// The `message.status` webhook in the integrator's document (OpenAPI 3.1 `webhooks`): what the
// service POSTs to the URL registered with POST /api/v1/webhook, its Standard Webhooks headers and
// what the receiver's answer means.

import { MessageStatusEvent } from '../modules/webhooks/model'

export const WEBHOOK_SCHEMAS = { MessageStatusEvent }

export const WEBHOOKS = {
  'message.status': {
    post: {
      operationId: 'messageStatusEvent',
      tags: ['Webhooks'],
      summary: 'A message changed status (POSTed to your registered URL)',
      description: [
        'Sent to the URL registered for the API key that sent the message, once per status change ' +
          '(`delivered`, `read`, `failed`; a repeat or a backwards report sends nothing). One message’s events arrive in order.',
        'A `failed` event also carries `refunded` (after `error_message`): `true` when the charge was given back with this change, ' +
          '`false` when the operator keeps failures after acceptance charged for the price it was sent at. Ignore fields you do not know.',
        'Verify the signature before trusting the body: `webhook-signature` is `v1,` + base64 HMAC-SHA256 of ' +
          '`{webhook-id}.{webhook-timestamp}.{raw body}`, keyed with the base64 part of the `signing_secret` (after `whsec_`). ' +
          'Any [Standard Webhooks](https://www.standardwebhooks.com) library does it: `new Webhook(secret).verify(body, headers)`.',
        'Answer any 2xx within 5 seconds. Anything else (another status, a redirect, a time-out, a TLS or connection error) is retried ' +
          'after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (±20% jitter; the `Retry-After` of a 429 or 503 is honoured), then the event ' +
          'is marked failed; operators can replay it. Delivery is at least once: drop duplicates by `webhook-id`.',
      ].join('\n\n'),
      security: [],
      parameters: [
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
      ],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/MessageStatusEvent' } } },
      },
      responses: {
        '2XX': { description: 'Received: the event is delivered and not sent again' },
        default: { description: 'Not received: the event is retried on the schedule above' },
      },
    },
  },
}
