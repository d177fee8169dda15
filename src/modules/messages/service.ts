import type { Deps } from '../../deps'
import type { Principal } from '../../http/auth'
import { ApiError } from '../../http/errors'
import { credentialHelp } from '../../providers/credential-help'
import type { NewMessage, Refused } from '../ledger/service'
import type { WaTemplate } from '../templates/catalog'
import { outgoingOf, requireContentShape } from './content'
import { sealedMessage } from './redact'
import type { SendBody, SendQueued, SendResult } from './model'
import { holdMessagingLimit, NO_HOLD } from '../budgets/guard'
import { optedOutAtHandoffError, stoppedByOptOut } from '../optouts/service'
import {
  budgetGroups,
  businessInitiated,
  isRefusal,
  itemsOf,
  judge,
  prepareEntries,
  priceAboveMax,
  readFacts,
  type Prepared,
} from './admission'
export { requireHeaderBound, requireNoWaFields, senderOfTemplate, templateForSender, validityOf, waTemplateMessage } from './admission'

/** Who sends: an API key's principal, or a dashboard user of the account (no key: `keyId` null, no spend cap). */
export type Sending = Pick<Principal, 'accountId'> & { keyId: number | null }

/**
 * POST /messages/send (and the dashboard inbox's reply). `requestToken` identifies this request's charge: run again with the same token
 * (an Idempotency-Key recovery), it finds the charge and the outcome instead of making new ones.
 */
export async function sendOne(
  deps: Deps,
  principal: Sending,
  input: SendBody,
  requestToken: string,
  /** A secret among the values (a verification's code): masked in what the row keeps, sealed for a recovered hand-off (redact.ts). */
  secret?: string,
): Promise<SendResult | SendQueued> {
  requireContentShape(input)
  // The rules, in admission.ts' order: values, sender and template first (no statement of their own
  // beyond reading the sender and template named), then one read judges opt-out, window and price cap.
  const [prepared] = await prepareEntries(deps, principal.accountId, [input], () => '')
  if (isRefusal(prepared!)) throw prepared.error
  const [facts] = await readFacts(deps, itemsOf(principal.accountId, principal.keyId, requestToken, [prepared as Prepared]))
  // A repeat of a request whose first run charged (it died, or its answer was not stored) is not
  // refused by what the rules say now: its message is found by the charge below, and goes on to the
  // recipient it was charged for (a user id Meta has linked to a phone since is still that user id).
  const repeat = facts!.charged
  const p = repeat ? { ...(prepared as Prepared), phone: await chargedRecipient(deps, requestToken) } : (prepared as Prepared)
  const { sender, phone: to } = p
  const message: NewMessage = p
  if (!repeat) {
    const refused = judge(deps.config, p, facts!, '')
    if (refused) throw refused
  }

  // The messaging limit: a business-initiated message past its sender's budget is refused (429), nothing charged.
  const limit =
    !repeat && businessInitiated(facts!) ? await holdMessagingLimit(deps, requestToken, [p], budgetGroups([p], [facts!])) : NO_HOLD
  if (limit.refused.length > 0) throw limit.refused[0]!.error

  // Its slot at the sender's pace first: a send the pace cannot take within SEND_WAIT_MS is refused
  // before anything is charged (unless a repeat, as above).
  const slot = await sender.pacer.takeWithin(to, deps.config.sendWaitMs)
  if (slot.waitMs === null && !repeat) {
    await limit.settle()
    const seconds = Math.max(1, Math.ceil(slot.wouldWaitMs / 1000))
    throw new ApiError(
      'RATE_LIMITED',
      `the sender is at its pace (${sender.pacer.pace.perSecond} messages per second): this message could not go within ` +
        `${deps.config.sendWaitMs / 1000} s; nothing was charged, retry in ${seconds} s`,
      429,
      {},
      { 'retry-after': String(seconds) },
    )
  }
  const lease = deps.handoff.lease()
  // The row keeps a secret masked (and sealed); the hand-off below is given the message as filled.
  const stored = secret === undefined ? message : await sealedMessage(deps.secrets, message, secret, requestToken)
  const charged = await limit.settleAfter(
    deps.chargeOne({ accountId: principal.accountId, keyId: principal.keyId, requestToken, lease, message: stored }),
  )
  if ('refused' in charged) throw refusal(charged, 'this message', deps.config.timezone, p.waTemplate)
  const id = charged.ids[0]!

  const outgoing = outgoingOf(
    {
      id,
      phone: to,
      body: message.body,
      media_url: message.mediaUrl,
      provider_template: message.providerTemplate ?? null,
      content: message.content ?? null,
      reply_to: message.replyTo ?? null,
    },
    sender.providerName,
  )
  const validUntilMs = deps.clock.now().getTime() + p.validitySeconds * 1000
  let result = await deps.handoff.one(
    { ...outgoing, validUntilMs, senderId: sender.id, accountId: principal.accountId },
    lease,
    charged.fresh,
    slot.waitMs ?? 0,
    deps.config.sendWaitMs,
  )
  if ('queued' in result) {
    // Still throttled when the answer is due: answered queued, its outcome announced by webhook. An
    // outcome recorded just now is answered as it is instead.
    if ((await deps.handoff.announce([id])).length === 1) {
      return { id, to, status: 'queued', cost: charged.cost, balance_after: charged.balanceAfter }
    }
    result = await deps.handoff.outcomeOf(id)
  }
  if (!result.ok) {
    if (result.pending) throw new ApiError('CONFLICT', 'this message is still being handed to the provider; repeat the request later')
    // Its recipient opted out while it waited for its hand-off: not sent, refunded (handoff.ts).
    if (stoppedByOptOut(result)) throw optedOutAtHandoffError(to, id)
    // `id` is the message's id in GET /messages, where it stays listed as failed and refunded.
    throw new ApiError('BAD_GATEWAY', `${notAccepted(sender.providerName, result)}; the charge was refunded`, undefined, { id })
  }
  return { message_id: result.sid, to, status: 'sent', cost: charged.cost, balance_after: charged.balanceAfter }
}

/** The recipient a request's message was charged for (the request charged it: `facts.charged`). */
async function chargedRecipient(deps: Pick<Deps, 'sql'>, requestToken: string): Promise<string> {
  const [row] = await deps.sql<
    { phone: string }[]
  >`select phone from messages where request_token = ${requestToken} order by request_item limit 1`
  return row!.phone
}

/**
 * Why the provider did not take a message (sendOne, sendBulk: the 502's words), with its own words.
 * When it refused the sender's credentials the integrator can change nothing: it says so, and that
 * the operator of the service must correct them (credential-help.ts).
 */
export function notAccepted(provider: string, result: { errorCode: number | null; errorMessage: string }): string {
  if (credentialHelp(provider, 'send', null, result.errorCode) === null)
    return `the messaging provider did not accept the message (${result.errorMessage})`
  return (
    "the messaging provider refused the credentials of this account's sender, so nothing can be sent from it until the operator " +
    `of this service corrects them on the sender; a repeat of the request will not help (${result.errorMessage})`
  )
}

/**
 * The 402 of a charge refused (sendOne, sendBulk): the balance cannot pay `what`, or it would take
 * what the key was charged today past its daily cap (the cap's own code, so that an integration
 * tells waiting for tomorrow from asking for a top-up).
 */
export function refusal(refused: Refused, what: string, tz: string, template?: WaTemplate | null): ApiError {
  if (refused.refused === 'balance') return new ApiError('INSUFFICIENT_BALANCE', `wa_balance is not enough for ${what}`)
  if (refused.refused === 'price') {
    // Its price was raised between admission's check and the charge, which checks it again (ledger/service.ts).
    const over = refused.over[0]!
    return priceAboveMax('', over.category, over.cost, over.maxPrice)
  }
  if (refused.refused === 'template') {
    // Its WhatsApp template stopped being approved between the check and the charge (a webhook in between).
    const named = template ? `template ${template.id} (${template.name}, ${template.language})` : 'its WhatsApp template'
    return new ApiError(
      'TEMPLATE_NOT_APPROVED',
      `template_id: ${named} is ${refused.status}, not approved, so it cannot be sent; nothing was charged`,
    )
  }
  return new ApiError(
    'SPEND_CAP_REACHED',
    `this API key's daily spend cap of ${refused.cap} would be passed by ${what}: it was charged ${refused.spentToday} today ` +
      `(the day ends at midnight, ${tz}); nothing was charged`,
  )
}

/** Whether a request (its token) has charged a message already: a repeat of a request that died or lost its answer. */
export async function chargedAlready(deps: Pick<Deps, 'sql'>, requestToken: string): Promise<boolean> {
  const [row] = await deps.sql<
    { charged: boolean }[]
  >`select exists (select 1 from messages where request_token = ${requestToken}) as charged`
  return row!.charged
}
