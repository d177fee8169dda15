import type { Config } from '../config'
import type { Provider } from './provider'
import { createSimulator } from './simulator'
import { createTwilio } from './twilio'

export function createProvider(config: Config): Provider {
  switch (config.provider) {
    case 'simulator':
      return createSimulator({ deliveredMs: config.simDeliveredMs, readMs: config.simReadMs })
    case 'twilio':
      return createTwilio(config, { timeoutMs: config.providerTimeoutMs })
  }
}
