import type { Deps } from '../../deps'
import type { Principal } from '../../http/auth'
import { ApiError } from '../../http/errors'
import { optionalMediaUrl, requireMessageBody, requirePhone } from '../../lib/validate'
import type { SendBody, SendResult } from './model'

/**
 * POST /messages/send. `requestToken` identifies this request's charge: run again with the same token
 * (an Idempotency-Key recovery), it finds the charge and the outcome instead of making new ones.
 */
export async function sendOne(deps: Deps, principal: Principal, input: SendBody, requestToken: string): Promise<SendResult> {
  const to = requirePhone(input.to, 'to')
  const body = requireMessageBody(input.body, 'body')
  const mediaUrl = optionalMediaUrl(input.media_url, 'media_url')

  const lease = deps.handoff.lease(1)
  const charged = await deps.chargeOne({
    accountId: principal.accountId,
    keyId: principal.keyId,
    requestToken,
    lease,
    message: { phone: to, body, mediaUrl },
  })
  if (!charged) throw new ApiError('INSUFFICIENT_BALANCE', 'wa_balance is not enough for this message')
  const id = charged.ids[0]!

  const result = await deps.handoff.one({ id, to, body, mediaUrl }, lease, charged.fresh)
  if (!result.ok) {
    if (result.pending) throw new ApiError('CONFLICT', 'this message is still being handed to the provider; repeat the request later')
    // `id` is the message's id in GET /messages, where it stays listed as failed and refunded.
    throw new ApiError(
      'BAD_GATEWAY',
      `the messaging provider did not accept the message (${result.errorMessage}); the charge was refunded`,
      undefined,
      { id },
    )
  }
  return { message_id: result.sid, to, status: 'sent', cost: charged.cost, balance_after: charged.balanceAfter }
}
