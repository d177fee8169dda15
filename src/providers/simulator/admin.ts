// The simulator's operator route: a number "writes in", opening its 24-hour window (windows.ts).
// Mounted by app.ts whatever PROVIDER says (it only records the window).

import { t } from 'elysia'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { openWindow } from './windows'

const InboundBody = t.Object(
  { phone: t.String({ description: 'The number that writes in, in one of the forms 08xx, 62xx, +62xx', examples: ['081234567890'] }) },
  { additionalProperties: false },
)
const InboundAnswer = t.Object({
  phone: t.String({ examples: ['+6281234567890'] }),
  window_until: t.String({
    description: 'End of its window, YYYY-MM-DD HH:MM:SS in the service time zone',
    examples: ['2026-11-22 10:15:02'],
  }),
})

export const simulatorAdmin = (deps: Deps) =>
  adminRoutes(deps.config).post(
    '/simulator/inbound',
    async ({ body }) => ok(await openWindow(deps.sql, deps.config.timezone, body.phone)),
    {
      body: InboundBody,
      response: { 200: envelopeOf(InboundAnswer), ...errorsOf(400, 401, 422) },
      detail: {
        tags: ['Admin'],
        summary: 'Simulator: a number writes in (opens its 24-hour window)',
        description:
          'For trying approved templates without WhatsApp. With `SIM_REQUIRE_TEMPLATE=true` the simulator refuses a free-form ' +
          'message (502 with refund, error_code 63016) to a number that has not written in within the last 24 hours; this ' +
          'records a message from `phone` now, so free-form messages to it are accepted for the next 24 hours. Approved templates ' +
          'are accepted whatever the window. Stored in the database (every instance agrees), whatever PROVIDER says.',
      },
    },
  )
