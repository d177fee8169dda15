// The models of the simulator's operator route: a number writes in (POST /admin/v1/simulator/inbound).

import { t } from 'elysia'

export const InboundBody = t.Object(
  { phone: t.String({ description: 'The number that writes in, in one of the forms 08xx, 62xx, +62xx', examples: ['081234567890'] }) },
  { additionalProperties: false },
)
export const InboundAnswer = t.Object({
  phone: t.String({ examples: ['+6281234567890'] }),
  window_until: t.String({
    description: 'End of its window, YYYY-MM-DD HH:MM:SS in the service time zone',
    examples: ['2026-11-22 10:15:02'],
  }),
})
