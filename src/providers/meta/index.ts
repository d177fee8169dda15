// Meta's WhatsApp Cloud API (PROVIDER=meta): the Graph API's messages endpoint for sending, signed
// webhooks at /provider/meta/webhook for statuses (and the subscription handshake).

import { defineProvider } from '../provider'
import { createMeta } from './send'
import { META_VARIABLES, readMetaSettings } from './settings'
import { metaWebhookCallbacks } from './webhook'

export { META_WEBHOOK_PATH, metaSignature } from './webhook'

export const meta = defineProvider({
  name: 'meta',
  variables: META_VARIABLES,
  readSettings: readMetaSettings,
  create: createMeta,
  callbacks: metaWebhookCallbacks,
  // Meta names a template by its name and language; names are lowercase letters, digits and underscores.
  templates: {
    ref: "the approved template's name (lowercase letters, digits and underscores)",
    refError: (ref) => (/^[a-z0-9_]{1,512}$/.test(ref) ? null : 'must be a template name: lowercase letters, digits and underscores'),
    language: 'required',
  },
})
