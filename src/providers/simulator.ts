// The default provider: accepts every message with a Twilio-shaped SID, except national numbers
// ending in 9999, which it refuses. Accepted messages go `delivered` after SIM_DELIVERED_MS and `read`
// after SIM_READ_MS; numbers ending in 8888 go `failed` (63016) after SIM_DELIVERED_MS instead.
// The reports are rows written with the hand-off, applied by the simulator worker: they survive restarts.

import type { HandoffResult, OutgoingMessage, Provider, ScheduledReport } from './provider'
import { randomHex } from '../lib/keys'

const SIMULATOR_REFUSED_CODE = 21610

const SIMULATOR_FAILED_CODE = 63016

export function createSimulator(delays: { deliveredMs: number; readMs: number }): Provider {
  return {
    name: 'simulator',
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      if (message.to.endsWith('9999')) {
        return { ok: false, errorCode: SIMULATOR_REFUSED_CODE, errorMessage: 'simulator refused the message (number ends in 9999)' }
      }
      return { ok: true, sid: `SM${randomHex(16)}` }
    },
    scheduledReports(to: string): ScheduledReport[] {
      if (to.endsWith('8888')) {
        return [
          { status: 'failed', afterMs: delays.deliveredMs, errorCode: SIMULATOR_FAILED_CODE, errorMessage: 'simulated delivery failure' },
        ]
      }
      return [
        { status: 'delivered', afterMs: delays.deliveredMs },
        { status: 'read', afterMs: Math.max(delays.readMs, delays.deliveredMs) },
      ]
    },
  }
}
