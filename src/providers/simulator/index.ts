// The default provider (PROVIDER=simulator): accepts every message with a Twilio-shaped SID, except
// national numbers ending in 9999, which it refuses. Accepted messages go `delivered` after
// SIM_DELIVERED_MS and `read` after SIM_READ_MS; numbers ending in 8888 go `failed` (63016) after
// SIM_DELIVERED_MS instead. The reports come with the acceptance and are recorded with it, then applied
// by the simulator-reports worker when due: they survive restarts. It has no callback route.
//
// It sends approved templates too (bound like Twilio's and Meta's; any name will do), and with
// SIM_REQUIRE_TEMPLATE=true it refuses free-form messages to numbers outside their 24-hour window
// (windows.ts), as WhatsApp does, so business-initiated messages can be tried without WhatsApp.

import { defineProvider, type HandoffResult, type OutgoingMessage, type ScheduledReport, type SettingsReader } from '../provider'
import { randomHex } from '../../lib/keys'
import { windowOpen } from './windows'

const SIMULATOR_REFUSED_CODE = 21610
const SIMULATOR_FAILED_CODE = 63016
const OUTSIDE_WINDOW_CODE = 63016
const MAX_DELAY_MS = 86_400_000

type SimulatorSettings = { deliveredMs: number; readMs: number; requireTemplate: boolean }

function delay(read: SettingsReader, name: string): number {
  const raw = read.text(name)!
  if (!/^\d+$/.test(raw) || Number(raw) > MAX_DELAY_MS) read.fail(name, `expected an integer from 0 to ${MAX_DELAY_MS}, got "${raw}"`)
  return Number(raw)
}

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
        'simulator: true refuses free-form messages (63016, refunded) to numbers that have not written in within 24 hours ' +
        '(`bun run admin simulator inbound PHONE`); approved templates always go',
    },
  },
  readSettings: (read): SimulatorSettings => ({
    deliveredMs: delay(read, 'SIM_DELIVERED_MS'),
    readMs: delay(read, 'SIM_READ_MS'),
    requireTemplate: flag(read, 'SIM_REQUIRE_TEMPLATE'),
  }),
  create: (settings, { sql }) => ({
    name: 'simulator',
    schedulesReports: true,
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      if (message.to.endsWith('9999')) {
        return { ok: false, errorCode: SIMULATOR_REFUSED_CODE, errorMessage: 'simulator refused the message (number ends in 9999)' }
      }
      if (settings.requireTemplate && !message.template) {
        let open: boolean
        try {
          open = await windowOpen(sql, message.to)
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
      return { ok: true, sid: `SM${randomHex(16)}`, reports: reportsFor(message.to, settings) }
    },
  }),
  callbacks: [],
  // As an upgraded number, with no pair rate: tests and benchmarks measure the service, not the pace.
  pace: { perSecond: 1000, recipientGapMs: 0, source: 'the simulator (an upgraded number, no pair rate)' },
  // Any name stands for a template here; what it was asked to send is recorded on the message.
  templates: {
    ref: 'any name for the template (no spaces)',
    refError: (ref) => (/^[\x21-\x7e]{1,512}$/.test(ref) ? null : 'must be 1 to 512 printable characters without spaces'),
    language: 'optional',
  },
})
