// Twilio's stored senders: an account SID and auth token (a subaccount's, usually), and the number
// the messages come from, or a Messaging Service that picks it. Callbacks name the sender by their
// AccountSid. The check fetches the account resource: harmless, and it proves the credentials.

import { credentialHelp } from '../credential-help'
import { failure, get } from '../http'
import type { SenderSupport } from '../provider'
import { twilioBasic, twilioSecrets, type TwilioSettings } from './settings'

export const twilioSenders: SenderSupport<TwilioSettings> = {
  fields: {
    account_sid: {
      meaning: 'the Twilio account (or subaccount) SID',
      secret: false,
      required: true,
      pattern: { test: /^AC[0-9a-fA-F]{32}$/, message: 'must be an account SID: AC followed by 32 hex characters' },
    },
    auth_token: { meaning: "the account's auth token (signs its status callbacks too)", secret: true, required: true },
    messaging_service_sid: {
      meaning: 'optional: send through this Messaging Service instead of From = whatsapp:<number>',
      secret: false,
      required: false,
      pattern: { test: /^MG[0-9a-fA-F]{32}$/, message: 'must be a Messaging Service SID: MG followed by 32 hex characters' },
    },
  },
  settingsOf: (fields, number, environment) => ({
    accountSid: fields.account_sid ?? '',
    authToken: fields.auth_token ?? '',
    from: fields.messaging_service_sid || `whatsapp:${number}`,
    apiBase: environment.apiBase,
    contentApiBase: environment.contentApiBase,
  }),
  identityOf: (fields) => fields.account_sid ?? '',
  async check(settings, { timeoutMs, clock }) {
    const credentials = twilioBasic(settings)
    const secrets = twilioSecrets(settings)
    const url = `${settings.apiBase}/2010-04-01/Accounts/${encodeURIComponent(settings.accountSid)}.json`
    const answer = await get(url, { headers: { authorization: `Basic ${credentials}`, accept: 'application/json' }, timeoutMs, clock })
    if (!answer.ok)
      return {
        ok: false,
        detail: failure(
          secrets,
          null,
          answer.reason === 'timeout' ? 'Twilio did not answer in time' : `could not reach Twilio${answer.hint}`,
        ).errorMessage,
      }
    const body = answer.answer ?? {}
    if (answer.status !== 200) {
      const text = typeof body.message === 'string' ? body.message : `HTTP ${answer.status}`
      const code = typeof body.code === 'number' ? body.code : null
      const said = `Twilio answered HTTP ${answer.status}${code === null ? '' : ` (code ${code})`}: ${text}`
      const help = credentialHelp('twilio', 'check', answer.status, code)
      return { ok: false, detail: failure(secrets, null, help ? `${help} (${said})` : said).errorMessage }
    }
    const name = typeof body.friendly_name === 'string' ? body.friendly_name : settings.accountSid
    const status = typeof body.status === 'string' ? body.status : 'unknown'
    return { ok: status === 'active', detail: failure(secrets, null, `Twilio account "${name}" is ${status}`).errorMessage }
  },
}
