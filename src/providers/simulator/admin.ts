// The simulator's operator route: a number "writes in", opening its 24-hour window (windows.ts), and,
// with a body, a real inbound message, which the route hands to `store` (modules/inbound, wired by
// app.ts: providers/ hold no SQL of other modules). Mounted by app.ts whatever PROVIDER says.

import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { badValue, ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { requireMessageBody, requirePhone } from '../../http/values'
import type { InboundMessage } from '../provider'
import { InboundAnswer, InboundBody } from './model'
import { openWindow } from './windows'

/** Stores a simulated inbound message (its `to.number` must be a stored sender's, 422 otherwise); its id. */
export type StoreSimulated = (message: InboundMessage) => Promise<number | null>

async function writeIn(deps: Deps, store: StoreSimulated, body: InboundBody) {
  requirePhone(body.phone, 'phone')
  const text = body.body === undefined ? null : requireMessageBody(body.body, 'body')
  const sender = body.sender?.trim() || null
  if (sender !== null && !/^\+?[\d\s\-.()]{3,40}$/.test(sender)) throw badValue("sender: a stored sender's number, e.g. +14155550101")
  let inboundId: number | null = null
  if (text !== null) {
    inboundId = await store({
      id: `SIM${crypto.randomUUID().replaceAll('-', '')}`,
      from: body.phone,
      name: body.name?.trim() || null,
      // Stored senders' numbers are E.164: separators typed with it are dropped.
      to: { identity: null, number: sender === null ? null : sender.replace(/[\s\-.()]/g, '') },
      sentAt: null,
      type: 'text',
      text,
      content: { body: text },
      raw: body,
    })
  }
  const window = await openWindow(deps.sql, deps.config.timezone, body.phone)
  return inboundId === null ? window : { ...window, inbound_id: inboundId }
}

export const simulatorAdmin = (deps: Deps, store: StoreSimulated) =>
  adminRoutes(deps.config).post('/simulator/inbound', async ({ body }) => ok(await writeIn(deps, store, body)), {
    body: InboundBody,
    response: { 200: envelopeOf(InboundAnswer), ...errorsOf(400, 401, 422) },
    detail: {
      tags: ['Admin'],
      summary: 'Simulator: a number writes in (opens its 24-hour window; with `body`, an inbound message)',
      description:
        'For trying approved templates and inbound messages without WhatsApp. With `SIM_REQUIRE_TEMPLATE=true` the simulator refuses a free-form ' +
        'message (502 with refund, error_code 63016) to a number that has not written in within the last 24 hours; this ' +
        'records a message from `phone` now, so free-form messages to it are accepted for the next 24 hours. Approved templates ' +
        'are accepted whatever the window. Stored in the database (every instance agrees), whatever PROVIDER says. ' +
        'With `body`, the message is also stored as a real inbound text message (provider `simulator`, `inbound_id`), reaching ' +
        "`sender` (a stored sender's number; 422 when it is none) or the deployment's number, linked to an account and a contact " +
        'like any inbound message (see `GET /api/v1/inbound`).',
    },
  })
