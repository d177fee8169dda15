// The models of the simulator's operator route: a number writes in (POST /admin/v1/simulator/inbound).

import { t } from 'elysia'

export const InboundBody = t.Object(
  {
    phone: t.String({ description: 'The number that writes in, in one of the forms 08xx, 62xx, +62xx', examples: ['081234567890'] }),
    body: t.Optional(
      t.String({
        description: 'What it writes, stored as a real inbound text message (GET /api/v1/inbound); without it a placeholder text',
        examples: ['halo, pesanan saya sudah sampai?'],
      }),
    ),
    sender: t.Optional(
      t.String({
        description: "The number it writes to: a stored sender's number (422 otherwise); without it, the deployment's default number",
        examples: ['+14155550101'],
      }),
    ),
    name: t.Optional(t.String({ description: "The customer's name, as a provider would give it", examples: ['Budi'] })),
  },
  { additionalProperties: false },
)
export type InboundBody = typeof InboundBody.static

export const InboundAnswer = t.Object({
  phone: t.String({ examples: ['+6281234567890'] }),
  window_until: t.String({
    description: 'End of its window with that sender, YYYY-MM-DD HH:MM:SS in the service time zone',
    examples: ['2026-11-22 10:15:02'],
  }),
  inbound_id: t.Optional(t.Integer({ description: 'The stored inbound message (GET /api/v1/inbound/{id})' })),
})
