import type { Config } from '../config'
import type { Provider } from './provider'
import { createSimulator } from './simulator'

export function createProvider(config: Config): Provider {
  switch (config.provider) {
    case 'simulator':
      return createSimulator()
    case 'twilio':
      throw new Error('PROVIDER=twilio is not available yet')
  }
}
