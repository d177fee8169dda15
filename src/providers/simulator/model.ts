// The models of the simulator's operator route: a number writes in (POST /admin/v1/simulator/inbound).

import { t } from 'elysia'
import { JsonId } from '../../http/models'

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
        description:
          "The number it writes to: a stored sender's number (422 otherwise); without it, the default sender of `account_id`, else " +
          "the number that last wrote to `phone`, else the deployment's number",
        examples: ['+14155550101'],
      }),
    ),
    name: t.Optional(t.String({ description: "The customer's name, as a provider would give it", examples: ['Budi'] })),
    account_id: t.Optional(
      JsonId({ description: "Without `sender`: the account whose default sender it writes to (the deployment's number when it has none)" }),
    ),
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
  sender: t.Union([t.String(), t.Null()], {
    description: "The number it wrote to: a stored sender's, or null for the deployment's number",
    examples: ['+6281234567890'],
  }),
  account_id: t.Union([t.Integer(), t.Null()], {
    description:
      "The account the message belongs to (its message.received event went to it); null: none (the deployment's number, no conversation)",
  }),
  inbound_id: t.Optional(t.Integer({ description: 'The stored inbound message (GET /api/v1/inbound/{id})' })),
})
