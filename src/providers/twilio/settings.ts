// Twilio's settings: credentials, sender and API root.

import type { ProviderVariable, SettingsReader } from '../provider'

export type TwilioSettings = { accountSid: string; authToken: string; from: string; apiBase: string; contentApiBase: string }

export const TWILIO_VARIABLES = {
  TWILIO_ACCOUNT_SID: { shown: 'unset', meaning: 'Twilio account SID; required with PROVIDER=twilio' },
  TWILIO_AUTH_TOKEN: {
    shown: 'unset',
    meaning: 'Twilio auth token; required with PROVIDER=twilio (and verifies status callbacks whenever set)',
  },
  TWILIO_FROM: { shown: 'unset', meaning: 'sender, whatsapp:+<number>; required with PROVIDER=twilio' },
  TWILIO_API_BASE: { default: 'https://api.twilio.com', meaning: 'Twilio API root' },
  TWILIO_CONTENT_API_BASE: {
    default: 'https://content.twilio.com',
    meaning: 'Twilio Content API root (reply buttons and lists are sent as Content templates the service creates there)',
  },
} satisfies Record<string, ProviderVariable>

/** The Basic credentials of the account: base64 of AccountSid:AuthToken. */
export const twilioBasic = (settings: Pick<TwilioSettings, 'accountSid' | 'authToken'>): string =>
  Buffer.from(`${settings.accountSid}:${settings.authToken}`, 'utf8').toString('base64')

/** Every secret of the settings, as sent: what no text the service keeps of Twilio's may hold (providerText). */
export const twilioSecrets = (settings: Pick<TwilioSettings, 'accountSid' | 'authToken'>): string[] => [
  settings.authToken,
  twilioBasic(settings),
]

export function readTwilioSettings(read: SettingsReader, selected: boolean): TwilioSettings {
  const settings = {
    accountSid: read.text('TWILIO_ACCOUNT_SID') ?? '',
    authToken: read.text('TWILIO_AUTH_TOKEN') ?? '',
    from: read.text('TWILIO_FROM') ?? '',
    apiBase: read.url('TWILIO_API_BASE', ['http:', 'https:'])!,
    contentApiBase: read.url('TWILIO_CONTENT_API_BASE', ['http:', 'https:'])!,
  }
  if (selected) {
    if (!settings.accountSid) read.fail('TWILIO_ACCOUNT_SID', 'required when PROVIDER=twilio')
    if (!settings.authToken) read.fail('TWILIO_AUTH_TOKEN', 'required when PROVIDER=twilio')
    if (!settings.from) read.fail('TWILIO_FROM', 'required when PROVIDER=twilio')
    if (!settings.from.startsWith('whatsapp:+')) read.fail('TWILIO_FROM', `expected "whatsapp:+<number>", got "${settings.from}"`)
  }
  return settings
}
