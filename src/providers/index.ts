import type { Config } from '../config'
import type { Provider } from './provider'
import { createSimulator } from './simulator'
import { createTwilio } from './twilio'

export function createProvider(config: Config): Provider {
  switch (config.provider) {
    case 'simulator':
      return createSimulator()
    case 'twilio':
      return createTwilio(config)
  }
}
