import { t } from 'elysia'

export const RegisterWebhookBody = t.Object(
  {
    url: t.String({
      description: 'HTTPS URL, at most 2048 characters, whose host is a public address (checked now and at every delivery)',
      examples: ['https://erp.example.com/hooks/messaging'],
    }),
  },
  { additionalProperties: false },
)
export type RegisterWebhookBody = typeof RegisterWebhookBody.static

export const WebhookRegistration = t.Object(
  {
    url: t.String({ description: 'The URL as it will be called (normalised by the URL parser)' }),
    signing_secret: t.String({ description: 'whsec_ + base64; kept when the URL is replaced, new after a DELETE' }),
  },
  { examples: [{ url: 'https://erp.example.com/hooks/messaging', signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }] },
)

export const Webhook = t.Object({ url: t.String() }, { examples: [{ url: 'https://erp.example.com/hooks/messaging' }] })

/**
 * The body of every delivery (spec section 6), as the status machine writes it: a forward move only,
 * so `previous_status` is `sent` or `delivered`. Receivers should ignore fields they do not know.
 */
export const MessageStatusEvent = t.Object(
  {
    event: t.Literal('message.status'),
    timestamp: t.String({
      description: 'When the change was recorded: YYYY-MM-DD HH:MM:SS in the service time zone',
      examples: ['2026-11-21 10:15:02'],
    }),
    data: t.Object({
      message_sid: t.String({
        description: 'The message SID (`message_id` of the send answer)',
        examples: ['SM0123456789abcdef0123456789abcdef'],
      }),
      to: t.String({ description: 'Destination in + international form', examples: ['+6281234567890'] }),
      status: t.Union([t.Literal('delivered'), t.Literal('read'), t.Literal('failed')], { description: 'The new status' }),
      previous_status: t.Union([t.Literal('sent'), t.Literal('delivered')], { description: 'The status before the change' }),
      error_code: t.Union([t.Integer(), t.Null()], { description: "The provider's numeric error code when `failed`; otherwise null" }),
      error_message: t.Union([t.String(), t.Null()], { description: "The provider's error text when `failed`; otherwise null" }),
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
    ],
  },
)
export type MessageStatusEvent = typeof MessageStatusEvent.static
