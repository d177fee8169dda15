import type { Deps } from '../../deps'
import type { Principal } from '../../http/auth'
import { ApiError, badValue } from '../../http/errors'
import { MAX_VALIDITY_SECONDS, MIN_VALIDITY_SECONDS } from '../../lib/validate'
import type { NewMessage, Refused } from '../ledger/service'
import { outgoingOf, requireContentShape } from './content'
import type { SendBody, SendQueued, SendResult } from './model'
import { loadTemplates, templateContent } from '../templates/render'
import { optionalMediaUrl, requireMessageBody, requirePhone } from '../../http/values'
import { requireOpenWindow } from './window'
import { holdMessagingLimit } from '../budgets/guard'
import { optedOutAtHandoffError, refuseOptedOut, stoppedByOptOut } from '../optouts/service'
import type { RichContent } from '../../providers/provider'
import { renderText, requireSupported, richOf } from './rich'
import { findTemplate, usableTemplate, type WaTemplate } from '../templates/catalog'
import type { Db } from '../../db/client'
import { fillTemplate, requireApproved, requireSenderOf, type FillInput } from '../templates/fill'
import type { Sender } from '../senders/directory'

/** Who sends: an API key's principal, or a dashboard user of the account (no key: `keyId` null, no spend cap). */
export type Sending = Pick<Principal, 'accountId'> & { keyId: number | null }

/**
 * POST /messages/send (and the dashboard inbox's reply). `requestToken` identifies this request's charge: run again with the same token
 * (an Idempotency-Key recovery), it finds the charge and the outcome instead of making new ones.
 */
export async function sendOne(deps: Deps, principal: Sending, input: SendBody, requestToken: string): Promise<SendResult | SendQueued> {
  requireContentShape(input)
  const to = requirePhone(input.to, 'to')
  const validitySeconds = validityOf(input.validity_seconds, deps.config.messageValiditySeconds, 'validity_seconds')
  // A WhatsApp template (issue 30) goes from its own sender unless `from` names one.
  const wa = input.template_id === undefined ? null : await usableTemplate(deps.sql, principal.accountId, input.template_id)
  const sender = await deps.senders.forSend(principal.accountId, input.from ?? (wa ? senderOfTemplate(wa) : undefined))
  const rich = richOf(input, '')
  // A kind the sender's provider cannot send is refused here, before anything is charged.
  requireSupported(rich, sender.provider, '')
  const own = wa && (await templateForSender(deps.sql, wa, sender.id))
  // A repeat whose first run charged (its Idempotency-Key recovers it) goes on with that charge,
  // whatever the template's status is now: its answer says how that message ended, never "not approved".
  const recovering = own ? await chargedAlready(deps, requestToken) : false
  const message: NewMessage = own
    ? {
        phone: to,
        mediaUrl: null,
        ...waTemplateMessage(own, input, rich, sender, '', !recovering),
        validitySeconds,
        senderId: sender.id,
      }
    : input.template_id !== undefined
      ? {
          ...(await fromTemplate(deps, principal, to, input as SendBody & { template_id: number }, sender.providerName, rich)),
          validitySeconds,
          senderId: sender.id,
        }
      : rich
        ? { phone: to, body: renderText(rich), mediaUrl: null, content: rich, validitySeconds, senderId: sender.id }
        : {
            phone: to,
            body: requireMessageBody(input.body!, 'body'),
            mediaUrl: optionalMediaUrl(input.media_url, 'media_url'),
            validitySeconds,
            senderId: sender.id,
          }

  // Refused before anything is charged, in this order: the recipient opted out, their 24-hour window
  // is closed, the sender's messaging limit is reached (then the pace, then the balance).
  await refuseOptedOut(deps.sql, principal.accountId, to, () => chargedAlready(deps, requestToken))
  await requireOpenWindow(deps, sender, message, () => chargedAlready(deps, requestToken))

  // The messaging limit: a business-initiated message past its sender's budget is refused (429), nothing charged.
  const limit = await holdMessagingLimit(deps, requestToken, [{ senderId: sender.id, phone: to }])
  if (limit.refused.length > 0) throw limit.refused[0]!.error

  // Its slot at the sender's pace first: a send the pace cannot take within SEND_WAIT_MS is refused
  // before anything is charged. A repeat of a request whose charge was made already (its first run
  // died, or its answer was not stored) is not refused: its message is charged, and found below.
  const slot = await sender.pacer.takeWithin(to, deps.config.sendWaitMs)
  if (slot.waitMs === null && !(await chargedAlready(deps, requestToken))) {
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
  const charged = await limit.settleAfter(
    deps.chargeOne({ accountId: principal.accountId, keyId: principal.keyId, requestToken, lease, message }),
  )
  if ('refused' in charged) throw refusal(charged, 'this message', deps.config.timezone, own)
  const id = charged.ids[0]!

  const outgoing = outgoingOf(
    {
      id,
      phone: to,
      body: message.body,
      media_url: message.mediaUrl,
      provider_template: message.providerTemplate ?? null,
      content: message.content ?? null,
    },
    sender.providerName,
  )
  const validUntilMs = deps.clock.now().getTime() + validitySeconds * 1000
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
    throw new ApiError(
      'BAD_GATEWAY',
      `the messaging provider did not accept the message (${result.errorMessage}); the charge was refunded`,
      undefined,
      { id },
    )
  }
  return { message_id: result.sid, to, status: 'sent', cost: charged.cost, balance_after: charged.balanceAfter }
}

/** A request's validity_seconds (422 outside its range), else the default. */
export function validityOf(given: number | undefined, fallback: number, field: string): number {
  if (given === undefined) return fallback
  if (given < MIN_VALIDITY_SECONDS || given > MAX_VALIDITY_SECONDS) {
    throw badValue(`${field}: must be from ${MIN_VALIDITY_SECONDS} to ${MAX_VALIDITY_SECONDS} seconds (got ${given})`)
  }
  return given
}

/** The `from` of a WhatsApp template's own sender (undefined: the deployment's default sender). */
export const senderOfTemplate = (t: WaTemplate): string | undefined => (t.sender_id === null ? undefined : String(t.sender_id))

/**
 * The template a message from `senderId` sends for `t`: `t` itself when it is that sender's, else that
 * sender's template of the same name and language when it has one (a template kept by several senders),
 * else `t` (refused by waTemplateMessage: another sender's).
 */
export async function templateForSender(sql: Db, t: WaTemplate, senderId: number | null): Promise<WaTemplate> {
  if ((t.sender_id ?? null) === (senderId ?? null)) return t
  return (await findTemplate(sql, senderId, t.name, t.language)) ?? t
}

/**
 * A WhatsApp template's message, refused before anything is charged (in this order): sent from another
 * sender than its own or not approved (422 TEMPLATE_NOT_APPROVED), a parameter missing, unknown or
 * past Meta's limits (422 naming it). `approvedNow` false: a repeat of a request whose first run
 * charged it, which goes on whatever the template's status is now.
 */
export function waTemplateMessage(
  t: WaTemplate,
  input: FillInput,
  rich: RichContent | null,
  sender: Sender,
  at: string,
  approvedNow = true,
) {
  requireSenderOf(t, sender.id, at)
  if (approvedNow) requireApproved(t, at)
  return fillTemplate(t, input, rich, sender.providerName, at)
}

/** The extension fields of a WhatsApp template only: an account template takes `variables` and header media alone. */
export function requireNoWaFields(input: { header?: unknown; buttons?: unknown }, at: string): void {
  if (typeof input.header === 'string')
    throw badValue(`${at}header: a text header is for a WhatsApp template only (template_id names an account template)`)
  if (input.buttons !== undefined) throw badValue(`${at}buttons: only with a WhatsApp template (template_id names an account template)`)
}

/** A send with `template_id`: the template (one query; a send with `body` makes none) rendered with `variables`. */
async function fromTemplate(
  deps: Deps,
  principal: Sending,
  to: string,
  input: { template_id: number; variables?: Record<string, string>; header?: unknown; buttons?: unknown },
  provider: string,
  header: RichContent | null,
) {
  const templates = await loadTemplates(deps.sql, principal.accountId, [input.template_id], provider)
  if (templates.has(input.template_id)) requireNoWaFields(input, '')
  const content = templateContent(templates.get(input.template_id), input, provider)
  requireHeaderBound(header, content.providerTemplate, '')
  return { phone: to, mediaUrl: null, ...content, content: header }
}

/** Header media goes with an approved template of the provider only: an unbound template is sent as its text. */
export function requireHeaderBound(header: RichContent | null, bound: unknown, at: string): void {
  if (header && !bound) {
    throw badValue(
      `${at}header: the template is not bound to an approved template of the sender's provider, so it goes as text and ` +
        'cannot carry header media; nothing was charged',
    )
  }
}

/**
 * The 402 of a charge refused (sendOne, sendBulk): the balance cannot pay `what`, or it would take
 * what the key was charged today past its daily cap (the cap's own code, so that an integration
 * tells waiting for tomorrow from asking for a top-up).
 */
export function refusal(refused: Refused, what: string, tz: string, template?: WaTemplate | null): ApiError {
  if (refused.refused === 'balance') return new ApiError('INSUFFICIENT_BALANCE', `wa_balance is not enough for ${what}`)
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
