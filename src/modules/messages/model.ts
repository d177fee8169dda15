import { t } from 'elysia'

export const SendBody = t.Object(
  {
    to: t.String({ description: 'Destination in one of the forms 08xx, 62xx, +62xx', examples: ['081234567890'] }),
    body: t.String({ description: 'Message text, 1 to 4096 characters', examples: ['Your order #1001 has shipped'] }),
    media_url: t.Optional(t.String({ description: 'Absolute http(s) URL of an image or file' })),
  },
  { additionalProperties: true },
)
export type SendBody = typeof SendBody.static

export const SendResult = t.Object({
  message_id: t.String({ description: 'Provider message SID', examples: ['SM0123456789abcdef0123456789abcdef'] }),
  to: t.String({ examples: ['+6281234567890'] }),
  status: t.Literal('sent'),
  cost: t.Integer(),
  balance_after: t.Integer(),
})
export type SendResult = typeof SendResult.static
