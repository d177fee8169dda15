// The simulator's operator route: a number "writes in": a real inbound message, which the route hands
// to `store` (modules/inbound, wired by app.ts: providers/ hold no SQL of other modules). Like any
// inbound message it opens the number's 24-hour window with the sender it reached, which the service's
// check and SIM_REQUIRE_TEMPLATE read. Mounted by app.ts whatever PROVIDER says.

import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { badValue, ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { requireMessageBody, requirePhone } from '../../http/values'
import type { InboundMessage } from '../provider'
import { InboundAnswer, InboundBody } from './model'
import { formatTimestamp } from '../../lib/time'
import { isUserId } from '../../lib/user-id'

/** What a number writes when the operator gives no body. */
const WRITES_IN = '(the customer wrote in)'
const WINDOW_MS = 24 * 3_600_000

/**
 * Stores a simulated inbound message (its `to.number` must be a stored sender's, 422 otherwise; null: the
 * number `target` names for the phone and account). Answers where it went and whose it is.
 */
export type StoreSimulated = (
  message: InboundMessage,
  target: { phone: string; accountId: number | null },
) => Promise<{ inboundId: number | null; accountId: number | null; to: string | null }>

async function writeIn(deps: Deps, store: StoreSimulated, body: InboundBody) {
  // A customer known only by a WhatsApp user id (issue 32) is Meta's: the simulator cannot answer one (its
  // sends to a user id are refused), so a conversation it opened could never be answered.
  if (isUserId(body.phone.trim())) {
    throw badValue(
      'phone: a WhatsApp user id reaches the service only through a Meta sender, and the simulator cannot answer one; give a phone number',
    )
  }
  const phone = requirePhone(body.phone, 'phone')
  const text = body.body === undefined ? WRITES_IN : requireMessageBody(body.body, 'body')
  const sender = body.sender?.trim() || null
  if (sender !== null && !/^\+?[\d\s\-.()]{3,40}$/.test(sender)) throw badValue("sender: a stored sender's number, e.g. +14155550101")
  const receivedAt = deps.clock.now()
  const stored = await store(
    {
      id: `SIM${crypto.randomUUID().replaceAll('-', '')}`,
      from: phone,
      name: body.name?.trim() || null,
      // Stored senders' numbers are E.164: separators typed with it are dropped.
      to: { identity: null, number: sender === null ? null : sender.replace(/[\s\-.()]/g, '') },
      sentAt: receivedAt,
      type: 'text',
      text,
      content: { body: text },
      raw: body,
    },
    { phone, accountId: body.account_id ?? null },
  )
  const until = formatTimestamp(new Date(receivedAt.getTime() + WINDOW_MS), deps.config.timezone)!
  return {
    phone,
    sender: stored.to,
    account_id: stored.accountId,
    window_until: until,
    ...(stored.inboundId === null ? {} : { inbound_id: stored.inboundId }),
  }
}

export const simulatorAdmin = (deps: Deps, store: StoreSimulated) =>
  adminRoutes(deps.config).post('/simulator/inbound', async ({ body }) => ok(await writeIn(deps, store, body)), {
    body: InboundBody,
    response: { 200: envelopeOf(InboundAnswer), ...errorsOf(400, 401, 422) },
    detail: {
      tags: ['Admin'],
      summary: 'Simulator: a number writes in (an inbound message, which opens its 24-hour window with the sender)',
      description:
        'For trying approved templates and inbound messages without WhatsApp. Stores a real inbound text message from `phone` ' +
        "(provider `simulator`; `body`, else a placeholder text) to `sender` (a stored sender's number; 422 when it is none). " +
        'Without `sender`: the default sender of `account_id` when given, else the number that last wrote to `phone` (a ' +
        "customer answers the number that wrote to them), else the deployment's number. Linked to an account and a contact " +
        'like any inbound message (`GET /api/v1/inbound`, `inbound_id`; `account_id` in the answer, null when the message ' +
        "belongs to no account: the deployment's number with no conversation, and no `message.received` event goes out). " +
        'Like any inbound message it opens the 24-hour window of that (sender, phone): with ' +
        '`SIM_REQUIRE_TEMPLATE=true` the simulator refuses a free-form message outside it (422 `WINDOW_CLOSED` before charging ' +
        'with `WINDOW_CHECK=provider`, else 63016 with refund); approved templates go whatever the window.',
    },
  })
