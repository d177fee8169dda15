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
