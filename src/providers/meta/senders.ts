// Meta's stored senders: a business phone number (its id) with the access token of a system user
// that may send from it, the app secret that signs the app's webhooks, the WhatsApp Business Account
// id, and optionally the app's own verify token for the webhook handshake. Callbacks name the sender
// by metadata.phone_number_id. The check reads the phone number's own node: harmless, and it proves
// the token reaches that number.

import { credentialHelp } from '../credential-help'
import { failure, get } from '../http'
import type { SenderSupport } from '../provider'
import { metaSecrets, type MetaSettings } from './settings'

const DIGITS = { test: /^\d{1,30}$/, message: 'must be digits' }

export const metaSenders: SenderSupport<MetaSettings> = {
  fields: {
    access_token: { meaning: 'a system user access token that may send from the number', secret: true, required: true },
    phone_number_id: { meaning: "the business phone number's id (digits)", secret: false, required: true, pattern: DIGITS },
    app_secret: { meaning: "the Meta app's secret, which signs its webhooks", secret: true, required: true },
    business_account_id: { meaning: 'the WhatsApp Business Account id (digits)', secret: false, required: true, pattern: DIGITS },
    verify_token: {
      meaning: "optional: the app's webhook verify token, when it is not META_VERIFY_TOKEN",
      secret: true,
      required: false,
    },
  },
  settingsOf: (fields, _number, environment) => ({
    accessToken: fields.access_token ?? '',
    phoneNumberId: fields.phone_number_id ?? '',
    appSecret: fields.app_secret ?? '',
    verifyToken: fields.verify_token ?? '',
    businessAccountId: fields.business_account_id ?? '',
    apiBase: environment.apiBase,
  }),
  identityOf: (fields) => fields.phone_number_id ?? '',
  checkReadsQuality: true,
  async check(settings, { timeoutMs, clock }) {
    const secrets = metaSecrets(settings)
    const url = `${settings.apiBase}/${encodeURIComponent(settings.phoneNumberId)}?fields=display_phone_number,verified_name,quality_rating`
    const answer = await get(url, {
      headers: { authorization: `Bearer ${settings.accessToken}`, accept: 'application/json' },
      timeoutMs,
      clock,
    })
    if (!answer.ok)
      return {
        ok: false,
        detail: failure(secrets, null, answer.reason === 'timeout' ? 'Meta did not answer in time' : `could not reach Meta${answer.hint}`)
          .errorMessage,
      }
    const body = answer.answer ?? {}
    if (answer.status !== 200) {
      const error = typeof body.error === 'object' && body.error !== null ? (body.error as Record<string, unknown>) : {}
      const text = typeof error.message === 'string' ? error.message : `HTTP ${answer.status}`
      const code = typeof error.code === 'number' ? error.code : null
      const said = `Meta answered HTTP ${answer.status}${code === null ? '' : ` (code ${code})`}: ${text}`
      const help = credentialHelp('meta', 'check', answer.status, code)
      return { ok: false, detail: failure(secrets, null, help ? `${help} (${said})` : said).errorMessage }
    }
    const parts = [body.display_phone_number, body.verified_name, body.quality_rating && `quality ${body.quality_rating}`]
    return {
      ok: true,
      // The number's quality rating (GREEN, YELLOW, RED, UNKNOWN): the sender's health keeps it (modules/senders/health.ts).
      quality: typeof body.quality_rating === 'string' ? body.quality_rating : null,
      detail: failure(
        secrets,
        null,
        `Meta phone number ${parts.filter((p) => typeof p === 'string' && p).join(', ') || settings.phoneNumberId}`,
      ).errorMessage,
    }
  },
}
