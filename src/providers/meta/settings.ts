// Meta's WhatsApp Cloud API settings: the access token and sender number id for sending, the app
// secret that signs webhooks, the verify token of the subscription handshake, the WhatsApp Business
// Account the number belongs to (its templates and their webhooks), and the Graph API root.

import type { ProviderVariable, SettingsReader } from '../provider'

export type MetaSettings = {
  accessToken: string
  phoneNumberId: string
  appSecret: string
  verifyToken: string
  /** The WhatsApp Business Account id (digits), '' when not given: its template webhooks name it (entry.id). */
  businessAccountId: string
  apiBase: string
}

export const META_VARIABLES = {
  META_ACCESS_TOKEN: { shown: 'unset', meaning: 'WhatsApp Cloud API access token (system user); required with PROVIDER=meta' },
  META_PHONE_NUMBER_ID: { shown: 'unset', meaning: 'the sender: its WhatsApp phone number id (digits); required with PROVIDER=meta' },
  META_APP_SECRET: {
    shown: 'unset',
    meaning: "the Meta app's secret, which signs status webhooks (X-Hub-Signature-256); required with PROVIDER=meta",
  },
  META_VERIFY_TOKEN: {
    shown: 'unset',
    meaning: 'the verify token you give Meta for the webhook subscription handshake; required with PROVIDER=meta',
  },
  META_BUSINESS_ACCOUNT_ID: {
    shown: 'unset',
    meaning:
      "the default number's WhatsApp Business Account id (digits): its templates sync and submit there, and its templates' webhooks apply to the deployment's templates",
  },
  // Graph API v27.0 (released 2026-11-04). Meta keeps a version about two years; moving on is this
  // one variable (README, "Graph API versions").
  META_API_BASE: { default: 'https://graph.facebook.com/v27.0', meaning: 'Graph API root, with its version' },
} satisfies Record<string, ProviderVariable>

/** Every secret of the settings: what no text the service keeps of Meta's may hold (providerText). */
export const metaSecrets = (settings: MetaSettings): string[] => [settings.accessToken, settings.appSecret, settings.verifyToken]

export function readMetaSettings(read: SettingsReader, selected: boolean): MetaSettings {
  const settings = {
    accessToken: read.text('META_ACCESS_TOKEN') ?? '',
    phoneNumberId: read.text('META_PHONE_NUMBER_ID') ?? '',
    appSecret: read.text('META_APP_SECRET') ?? '',
    verifyToken: read.text('META_VERIFY_TOKEN') ?? '',
    businessAccountId: read.text('META_BUSINESS_ACCOUNT_ID') ?? '',
    apiBase: read.url('META_API_BASE', ['http:', 'https:'])!,
  }
  if (selected) {
    if (!settings.accessToken) read.fail('META_ACCESS_TOKEN', 'required when PROVIDER=meta')
    if (!settings.phoneNumberId) read.fail('META_PHONE_NUMBER_ID', 'required when PROVIDER=meta')
    if (!settings.appSecret) read.fail('META_APP_SECRET', 'required when PROVIDER=meta')
    if (!settings.verifyToken) read.fail('META_VERIFY_TOKEN', 'required when PROVIDER=meta')
  }
  if (settings.phoneNumberId && !/^\d{1,30}$/.test(settings.phoneNumberId)) {
    read.fail('META_PHONE_NUMBER_ID', `expected the phone number id (digits), got "${settings.phoneNumberId}"`)
  }
  if (settings.businessAccountId && !/^\d{1,30}$/.test(settings.businessAccountId)) {
    read.fail('META_BUSINESS_ACCOUNT_ID', `expected the WhatsApp Business Account id (digits), got "${settings.businessAccountId}"`)
  }
  return settings
}
