// The 24-hour window, enforced: WhatsApp takes a free-form message (anything but an approved
// template) only within 24 hours of the customer's last message to the sender; outside it Meta refuses
// with 131047 and Twilio with 63016, after the service has charged (and then refunds). So the service
// refuses such a message itself, before anything is charged (before the pace slot too): a send with
// 422 WINDOW_CLOSED, a bulk entry failing the same way, a campaign skipping the recipient. Approved
// templates always go. Checked when WINDOW_CHECK=provider (the default) and the sender's provider
// enforces the window (Meta, Twilio; the simulator with SIM_REQUIRE_TEMPLATE).

import type { Config } from '../../config'
import type { Db } from '../../db/client'
import type { Clock } from '../../lib/clock'
import { ApiError } from '../../http/errors'
import { formatTimestamp } from '../../lib/time'
import type { NewMessage } from '../ledger/service'
import type { Sender } from '../senders/directory'
import { lastWritten, WINDOW_HOURS } from '../inbound/window'

/** Whether sends through `sender` are held to the window here. */
export const checksWindow = (config: Pick<Config, 'windowCheck'>, sender: Pick<Sender, 'provider'>) =>
  config.windowCheck === 'provider' && sender.provider.enforcesWindow === true

/** A message goes as free-form text unless it is an approved template of the sender's provider. */
export const freeForm = (m: Pick<NewMessage, 'providerTemplate'>) => !m.providerTemplate

export function windowClosed(field: string, last: Date | null | undefined, tz: string, provider: string): ApiError {
  const wrote = last ? `last wrote to this sender at ${formatTimestamp(last, tz)}` : 'has never written to this sender'
  return new ApiError(
    'WINDOW_CLOSED',
    `${field}: the customer ${wrote}, so WhatsApp's ${WINDOW_HOURS}-hour window is closed and only an approved template can go: ` +
      `send one with template_id (a template bound to ${provider}); nothing was charged`,
  )
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
  clock: Clock,
): Promise<Set<string>> {
  if (!checked) return new Set()
  const phones = recipients.map((r) => r.phone)
  const last = await lastWritten(tx, clock, senderId, phones)
  return new Set(phones.filter((phone) => !last.get(phone)?.open))
}
