// The simulator's operator route: a number "writes in", opening its 24-hour window (windows.ts).
// Mounted by app.ts whatever PROVIDER says (it only records the window).

import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { InboundAnswer, InboundBody } from './model'
import { openWindow } from './windows'

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
