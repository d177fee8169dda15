// The 24-hour window, enforced: WhatsApp takes a free-form message (anything but an approved
// template) only within 24 hours of the customer's last message to the sender; outside it Meta refuses
// with 131047 and Twilio with 63016, after the service has charged (and then refunds). So the service
// refuses such a message itself, before anything is charged (before the pace slot too): a send with
// 422 WINDOW_CLOSED, a bulk entry failing the same way, a campaign skipping the recipient. Approved
// templates always go. Checked when WINDOW_CHECK=provider (the default) and the sender's provider
// enforces the window (Meta, Twilio; the simulator with SIM_REQUIRE_TEMPLATE).

import type { Config } from '../../config'
import type { Db } from '../../db/client'
import type { Deps } from '../../deps'
import { ApiError } from '../../http/errors'
import { formatTimestamp } from '../../lib/time'
import type { NewMessage } from '../ledger/service'
import type { BulkEntry } from './model'
import type { Sender } from '../senders/directory'
import { lastWritten, WINDOW_HOURS } from '../inbound/window'

/** Whether sends through `sender` are held to the window here. */
export const checksWindow = (config: Pick<Config, 'windowCheck'>, sender: Pick<Sender, 'provider'>) =>
  config.windowCheck === 'provider' && sender.provider.enforcesWindow === true

/** A message goes as free-form text unless it is an approved template of the sender's provider. */
const freeForm = (m: Pick<NewMessage, 'providerTemplate'>) => !m.providerTemplate

function windowClosed(field: string, last: Date | undefined, tz: string, provider: string): ApiError {
  const wrote = last ? `last wrote to this sender at ${formatTimestamp(last, tz)}` : 'has never written to this sender'
  return new ApiError(
    'WINDOW_CLOSED',
    `${field}: the customer ${wrote}, so WhatsApp's ${WINDOW_HOURS}-hour window is closed and only an approved template can go: ` +
      `send one with template_id (a template bound to ${provider}); nothing was charged`,
  )
}

/**
 * POST /messages/send: 422 WINDOW_CLOSED for a free-form message to a customer whose window with
 * `sender` is closed. `recovering`: whether this request already charged its message (a repeat after
 * its first run died), which goes on whatever the window says now.
 */
export async function requireOpenWindow(
  deps: Pick<Deps, 'sql' | 'config'>,
  sender: Sender,
  message: Pick<NewMessage, 'phone' | 'providerTemplate'>,
  recovering: () => Promise<boolean>,
): Promise<void> {
  if (!checksWindow(deps.config, sender) || !freeForm(message)) return
  const last = (await lastWritten(deps.sql, sender.id, [message.phone])).get(message.phone)
  if (last?.open || (await recovering())) return
  throw windowClosed('to', last?.at, deps.config.timezone, sender.providerName)
}

/**
 * POST /messages/bulk: every free-form entry whose window with its sender is closed fails (its result
 * set here) and leaves `valid`, uncharged; the rest go. One query per sender in the request.
 * Only for a request's first run: a repeat whose first run charged (sendBulk's chargedAlready) goes
 * on with the entries charged then, whatever the windows say now, and never comes here.
 */
export async function dropClosedWindows(
  deps: Pick<Deps, 'sql' | 'config' | 'senders'>,
  valid: (NewMessage & { index: number })[],
  results: BulkEntry[],
): Promise<void> {
  const bySender = new Map<number | null, (NewMessage & { index: number })[]>()
  for (const m of valid.filter(freeForm)) {
    const senderId = m.senderId ?? null
    bySender.set(senderId, [...(bySender.get(senderId) ?? []), m])
  }
  const closed = new Map<number, BulkEntry>()
  for (const [senderId, messages] of bySender) {
    const sender = await deps.senders.get(senderId)
    if (!checksWindow(deps.config, sender)) continue
    const last = await lastWritten(
      deps.sql,
      senderId,
      messages.map((m) => m.phone),
    )
    for (const m of messages) {
      if (last.get(m.phone)?.open) continue
      const error = windowClosed(`messages[${m.index}].to`, last.get(m.phone)?.at, deps.config.timezone, sender.providerName)
      closed.set(m.index, { to: m.phone, status: 'failed', code: error.code, error: error.message })
    }
  }
  if (closed.size === 0) return
  for (const [index, result] of closed) results[index] = result
  valid.splice(0, valid.length, ...valid.filter((m) => !closed.has(m.index)))
}

/**
 * A campaign's batch: the phones of `recipients` whose window with the campaign's sender is closed, when
 * the campaign goes free-form (its template is not bound for the sender's provider) and the sender is
 * held to the window; none otherwise. `tx`: the batch's transaction.
 */
export async function closedWindowsOf(
  tx: Db,
  checked: boolean,
  senderId: number | null,
  recipients: { phone: string }[],
): Promise<Set<string>> {
  if (!checked) return new Set()
  const phones = recipients.map((r) => r.phone)
  const last = await lastWritten(tx, senderId, phones)
  return new Set(phones.filter((phone) => !last.get(phone)?.open))
}
