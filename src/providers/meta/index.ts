// Meta's WhatsApp Cloud API (PROVIDER=meta): the Graph API's messages endpoint for sending, signed
// webhooks at /provider/meta/webhook for statuses (and the subscription handshake).

import { defineProvider } from '../provider'
import { createMeta } from './send'
import { META_VARIABLES, readMetaSettings } from './settings'
import { metaWebhookCallbacks } from './webhook'
import { metaSenders } from './senders'
import { metaTemplates } from './templates'
import { metaPricingAnalytics } from './analytics'

export { META_WEBHOOK_FIELDS, META_WEBHOOK_PATH, metaSignature } from './webhook'

export const meta = defineProvider({
  name: 'meta',
  variables: META_VARIABLES,
  readSettings: readMetaSettings,
  create: createMeta,
  callbacks: metaWebhookCallbacks,
  senders: metaSenders,
  waTemplates: metaTemplates,
  pricingAnalytics: metaPricingAnalytics,
  // Meta's documented defaults: 80 messages/s per business phone number (1,000 after an upgrade) and
  // about one message every 6 s to one user (the pair rate; error 131056 beyond it).
  pace: {
    perSecond: 80,
    recipientGapMs: 6000,
    source: "Meta's throughput (80 messages/s per business number, 1,000 after an upgrade) and pair rate (131056)",
  },
  // Meta names a template by its name and language; names are lowercase letters, digits and underscores.
  templates: {
    ref: "the approved template's name (lowercase letters, digits and underscores)",
    refError: (ref) => (/^[a-z0-9_]{1,512}$/.test(ref) ? null : 'must be a template name: lowercase letters, digits and underscores'),
    language: 'required',
  },
})
