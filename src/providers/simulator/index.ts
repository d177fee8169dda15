// The default provider (PROVIDER=simulator): accepts every message with a Twilio-shaped SID, except
// national numbers ending in 9999, which it refuses (21610), and those ending in 7777, "not a WhatsApp
// user" (131026). Accepted messages go `delivered` after SIM_DELIVERED_MS and `read` after SIM_READ_MS;
// numbers ending in 8888 go `failed` (63016) after SIM_DELIVERED_MS instead; numbers ending in 6666 are
// reported late and out of order (`read` after SIM_LATE_MS, then `delivered`, which the forward-only
// state machine ignores, as it ignores Meta's). The reports come with the acceptance and are recorded
// with it, then applied by the simulator-reports worker when due: they survive restarts. It has no
// callback route.
//
// It sends approved templates too (bound like Twilio's and Meta's; any name will do), and with
// SIM_REQUIRE_TEMPLATE=true it refuses free-form messages to numbers outside their 24-hour window with
// the sender (read from the stored inbound messages, as the service's own check reads it), as WhatsApp does, so business-initiated messages can be tried without WhatsApp. With
// SIM_RATE_PER_SECOND or SIM_RECIPIENT_GAP_MS it throttles as WhatsApp does (rules.ts).
//
// It reviews WhatsApp templates as Meta does (issue 30): one submitted to a simulator sender is stored
// `pending` and approved SIM_TEMPLATE_APPROVAL_MS later, or rejected (INVALID_FORMAT, one of Meta's
// reasons) when its name starts with `reject_` (applied by the simulator-reports worker,
// modules/templates/reviews.ts).

import {
  defineProvider,
  RICH_KINDS,
  type HandoffResult,
  type OutgoingMessage,
  type Pace,
  type ScheduledReport,
  type SettingsReader,
  type TemplateReview,
} from '../provider'
import { randomHex } from '../../lib/keys'
import { admit } from './rules'

// The codes are the real providers', so what a message records means what it would with them:
// 21610 Twilio's "Attempt to send to unsubscribed recipient" (https://www.twilio.com/docs/api/errors/21610);
// 63016 Twilio's "outside the allowed window" (https://www.twilio.com/docs/api/errors/63016);
// 131026 Meta's "Message undeliverable" (not a WhatsApp user, among others;
// https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes).
const SIMULATOR_REFUSED_CODE = 21610
const SIMULATOR_FAILED_CODE = 63016
const OUTSIDE_WINDOW_CODE = 63016
const NOT_ON_WHATSAPP_CODE = 131026
const MAX_DELAY_MS = 86_400_000
/** A template whose name starts with this is rejected, with one of Meta's `rejected_reason` words. */
const REJECT_PREFIX = 'reject_'
const REJECTED_REASON = 'INVALID_FORMAT'
const MAX_RATE_PER_SECOND = 100_000
/**
 * Its pace without SIM_RATE_PER_SECOND or SIM_RECIPIENT_GAP_MS: an upgraded number's (1,000 messages/s)
 * with no pair rate, so tests and benchmarks measure the service, not the pace.
 */
const DEFAULT_PACE: Pace = { perSecond: 1000, recipientGapMs: 0, source: 'the simulator (an upgraded number, no pair rate)' }

type SimulatorSettings = {
  deliveredMs: number
  readMs: number
  lateMs: number
  requireTemplate: boolean
  ratePerSecond: number
  recipientGapMs: number
  templateApprovalMs: number
  /** Whose counters its rules keep (rules.ts): `simulator`, or a stored sender's `simulator:<number>`. */
  sender: string
}

function integer(read: SettingsReader, name: string, max: number): number {
  const raw = read.text(name)!
  if (!/^\d+$/.test(raw) || Number(raw) > max) read.fail(name, `expected an integer from 0 to ${max}, got "${raw}"`)
  return Number(raw)
}

const delay = (read: SettingsReader, name: string) => integer(read, name, MAX_DELAY_MS)

function flag(read: SettingsReader, name: string): boolean {
  const raw = read.text(name)!
  if (raw === 'true' || raw === '1') return true
  if (raw === 'false' || raw === '0') return false
  return read.fail(name, `expected true or false, got "${raw}"`)
}

function reportsFor(to: string, delays: SimulatorSettings): ScheduledReport[] {
  if (to.endsWith('8888')) {
    return [{ status: 'failed', afterMs: delays.deliveredMs, errorCode: SIMULATOR_FAILED_CODE, errorMessage: 'simulated delivery failure' }]
  }
  if (to.endsWith('6666')) {
    // Late, and `read` before `delivered` (it happens with Meta's webhooks): the late `delivered` changes nothing.
    return [
      { status: 'read', afterMs: delays.lateMs },
      { status: 'delivered', afterMs: delays.lateMs + delays.deliveredMs },
    ]
  }
  return [
    { status: 'delivered', afterMs: delays.deliveredMs },
    { status: 'read', afterMs: Math.max(delays.readMs, delays.deliveredMs) },
  ]
}

export const simulator = defineProvider({
  name: 'simulator',
  variables: {
    SIM_DELIVERED_MS: { default: '1000', meaning: 'simulator: delay from send to delivered' },
    SIM_READ_MS: { default: '3000', meaning: 'simulator: delay from send to read' },
    SIM_REQUIRE_TEMPLATE: {
      default: 'false',
      meaning:
        "simulator: true plays WhatsApp's 24-hour window: a free-form message to a number that has not written to the sender " +
        'within 24 hours (`bun run admin simulator inbound PHONE`) is refused, before charging with WINDOW_CHECK=provider ' +
        '(422 WINDOW_CLOSED), else by the simulator (63016, refunded); approved templates always go',
    },
    SIM_RATE_PER_SECOND: {
      default: '0',
      meaning:
        "simulator: messages it takes per second (across instances); beyond it a throttle, Meta's 130429 with Retry-After " +
        '(retried, not refunded); also the pace of the hand-off. 0: no limit',
    },
    SIM_RECIPIENT_GAP_MS: {
      default: '0',
      meaning:
        "simulator: least time between two messages to one number (WhatsApp's pair rate); within it a throttle, 131056 " +
        'with Retry-After; also the pace of the hand-off. 0: no gap',
    },
    SIM_LATE_MS: {
      default: '10000',
      meaning: 'simulator: delay of the late reports of numbers ending in 6666 (`read`, then `delivered`, out of order)',
    },
    SIM_TEMPLATE_APPROVAL_MS: {
      default: '5000',
      meaning:
        "simulator: delay from a WhatsApp template's submission to its review: approved, or rejected (INVALID_FORMAT) " +
        'when its name starts with reject_',
    },
  },
  readSettings: (read): SimulatorSettings => ({
    deliveredMs: delay(read, 'SIM_DELIVERED_MS'),
    readMs: delay(read, 'SIM_READ_MS'),
    lateMs: delay(read, 'SIM_LATE_MS'),
    requireTemplate: flag(read, 'SIM_REQUIRE_TEMPLATE'),
    ratePerSecond: integer(read, 'SIM_RATE_PER_SECOND', MAX_RATE_PER_SECOND),
    recipientGapMs: delay(read, 'SIM_RECIPIENT_GAP_MS'),
    templateApprovalMs: delay(read, 'SIM_TEMPLATE_APPROVAL_MS'),
    sender: 'simulator',
  }),
  create: (settings, { sql, clock, windowOpen }) => ({
    name: 'simulator',
    schedulesReports: true,
    enforcesWindow: settings.requireTemplate,
    // It takes every rich kind (what it was asked to send is recorded on the message).
    rich: new Set(RICH_KINDS),
    // Read receipts (issue 32): nothing to tell; the service records that it marked the message read.
    markRead: async () => ({ ok: true }),
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      if (message.to.endsWith('9999')) {
        return { ok: false, errorCode: SIMULATOR_REFUSED_CODE, errorMessage: 'simulator refused the message (number ends in 9999)' }
      }
      if (message.to.endsWith('7777')) {
        return {
          ok: false,
          errorCode: NOT_ON_WHATSAPP_CODE,
          errorMessage: '(#131026) Message undeliverable: the number is not a WhatsApp user (simulated: it ends in 7777)',
        }
      }
      if (settings.requireTemplate && !message.template) {
        let open: boolean
        try {
          open = await windowOpen(message.to)
        } catch {
          return { ok: false, errorCode: null, errorMessage: 'simulator could not read its customer windows' }
        }
        if (!open) {
          return {
            ok: false,
            errorCode: OUTSIDE_WINDOW_CODE,
            errorMessage:
              'Failed to send freeform message because you are outside the allowed window (the number has not written in ' +
              'within 24 hours); send an approved template',
          }
        }
      }
      const throttled = await admit(sql, clock, settings, message.to)
      if (throttled) return throttled
      return { ok: true, sid: `SM${randomHex(16)}`, reports: reportsFor(message.to, settings) }
    },
  }),
  callbacks: [],
  // A stored simulator sender needs no credentials: it keeps the environment's settings, with its own counters.
  senders: {
    fields: {},
    settingsOf: (_fields, number, environment) => ({ ...environment, sender: `simulator:${number}` }),
    identityOf: () => '',
    check: async () => ({ ok: true, detail: 'the simulator takes every sender' }),
  },
  // Meta's review played: approved after SIM_TEMPLATE_APPROVAL_MS, or rejected then when the name asks for it.
  reviewsTemplates: (settings, definition): TemplateReview =>
    definition.name.startsWith(REJECT_PREFIX)
      ? { status: 'rejected', reason: REJECTED_REASON, afterMs: settings.templateApprovalMs }
      : { status: 'approved', reason: null, afterMs: settings.templateApprovalMs },
  pace: DEFAULT_PACE,
  // Its rules, when set, are its pace: the hand-off keeps to what the simulator takes, as to a real provider's limits.
  paceFor: (settings): Pace =>
    settings.ratePerSecond === 0 && settings.recipientGapMs === 0
      ? DEFAULT_PACE
      : {
          perSecond: settings.ratePerSecond || DEFAULT_PACE.perSecond,
          recipientGapMs: settings.recipientGapMs,
          source: 'the simulator (SIM_RATE_PER_SECOND, SIM_RECIPIENT_GAP_MS)',
        },
  // Any name stands for a template here; what it was asked to send is recorded on the message.
  templates: {
    ref: 'any name for the template (no spaces)',
    refError: (ref) => (/^[\x21-\x7e]{1,512}$/.test(ref) ? null : 'must be 1 to 512 printable characters without spaces'),
    language: 'optional',
  },
})
