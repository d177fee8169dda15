// The default provider (PROVIDER=simulator): accepts every message with a Twilio-shaped SID, except
// national numbers ending in 9999, which it refuses. Accepted messages go `delivered` after
// SIM_DELIVERED_MS and `read` after SIM_READ_MS; numbers ending in 8888 go `failed` (63016) after
// SIM_DELIVERED_MS instead. The reports come with the acceptance and are recorded with it, then applied
// by the simulator-reports worker when due: they survive restarts. It has no callback route.

import { defineProvider, type HandoffResult, type OutgoingMessage, type ScheduledReport, type SettingsReader } from '../provider'
import { randomHex } from '../../lib/keys'

const SIMULATOR_REFUSED_CODE = 21610
const SIMULATOR_FAILED_CODE = 63016
const MAX_DELAY_MS = 86_400_000

type SimulatorSettings = { deliveredMs: number; readMs: number }

function delay(read: SettingsReader, name: string): number {
  const raw = read.text(name)!
  if (!/^\d+$/.test(raw) || Number(raw) > MAX_DELAY_MS) read.fail(name, `expected an integer from 0 to ${MAX_DELAY_MS}, got "${raw}"`)
  return Number(raw)
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
  },
  readSettings: (read): SimulatorSettings => ({ deliveredMs: delay(read, 'SIM_DELIVERED_MS'), readMs: delay(read, 'SIM_READ_MS') }),
  create: (settings) => ({
    name: 'simulator',
    schedulesReports: true,
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      if (message.to.endsWith('9999')) {
        return { ok: false, errorCode: SIMULATOR_REFUSED_CODE, errorMessage: 'simulator refused the message (number ends in 9999)' }
      }
      return { ok: true, sid: `SM${randomHex(16)}`, reports: reportsFor(message.to, settings) }
    },
  }),
  callbacks: [],
})
