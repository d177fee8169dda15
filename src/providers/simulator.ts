// The default provider: accepts every message with a Twilio-shaped SID, except national numbers
// ending in 9999, which it refuses (the contract's rule for exercising the failure path).

import type { HandoffResult, OutgoingMessage, Provider } from './provider'
import { randomHex } from '../lib/keys'

export const SIMULATOR_REFUSED_CODE = 21610

export function createSimulator(): Provider {
  return {
    name: 'simulator',
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      if (message.to.endsWith('9999')) {
        return { ok: false, errorCode: SIMULATOR_REFUSED_CODE, errorMessage: 'simulator refused the message (number ends in 9999)' }
      }
      return { ok: true, sid: `SM${randomHex(16)}` }
    },
  }
}
