import { t } from 'elysia'
import { dateRangeFields, pageFields } from '../../http/models'

export const DeliveriesQuery = t.Object({
  status: t.Optional(t.String({ description: '`pending`, `delivered` or `failed`; all when omitted' })),
  ...pageFields,
  ...dateRangeFields('created_at'),
})

const EventPayload = t.Object(
  {
    event: t.String(),
    timestamp: t.String(),
    data: t.Object({
      message_sid: t.String(),
      to: t.String(),
      status: t.String(),
      previous_status: t.String(),
      error_code: t.Union([t.Integer(), t.Null()]),
      error_message: t.Union([t.String(), t.Null()]),
      test: t.Optional(t.Boolean({ description: 'true only on a test event sent from the dashboard' })),
    }),
  },
  { description: 'The body as sent (and signed) on every attempt' },
)

export const Delivery = t.Object({
  id: t.Integer({ description: 'Delivery (event) id, used by the attempts and replay calls' }),
  webhook_id: t.String({ description: 'The `webhook-id` header: the same on every attempt and replay' }),
  api_key_id: t.Integer(),
  message_sid: t.Union([t.String(), t.Null()]),
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
