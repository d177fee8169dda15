// What to do when a provider refuses a sender's credentials: the refusals that mean the operator's
// Account SID, Auth Token, access token or phone number id are wrong, each with where to get the
// right one. A sender's check puts it before the provider's own words; a send it refuses for them
// tells the integrator it is the operator's to fix. It imports nothing.

type Provider = 'twilio' | 'meta'
/** `check`: the sender's check (it reads the account or number itself); `send`: a message's hand-off. */
type When = 'check' | 'send'

const TWILIO_WRONG =
  'the Account SID or Auth Token is wrong: copy both again from console.twilio.com → Account info (a subaccount: from its own page) and save them on this sender'
const META_TOKEN =
  'the access token expired or is not valid: make a System User token that does not expire (business.facebook.com → Settings → ' +
  'System users → Generate token, with whatsapp_business_messaging and whatsapp_business_management) and save it on this sender'
const META_PERMISSION =
  'the access token may not use this number: give its system user the WhatsApp account as an asset (business.facebook.com → ' +
  'Settings → System users → Assign assets), make a new token with whatsapp_business_messaging and save it on this sender'
const META_NUMBER =
  'the phone number id is wrong, or the token cannot see it: copy it again from developers.facebook.com → your app → WhatsApp → ' +
  'API Setup (or WhatsApp Manager → Phone numbers) and save it on this sender'

/**
 * What is wrong with the sender's credentials and how to put it right, when the provider's refusal
 * (its HTTP status, its error code) says they are what is wrong; null for any other refusal.
 */
export function credentialHelp(provider: string, when: When, status: number | null, code: number | null): string | null {
  switch (provider as Provider) {
    case 'twilio':
      // 20003 Authenticate (HTTP 401); on the account's own resource a 404 (20404) is an Account SID that is none.
      if (code === 20003 || status === 401) return TWILIO_WRONG
      if (when === 'check' && (code === 20404 || status === 404)) return TWILIO_WRONG
      // 10001 / 20005: the account is not active (suspended or closed).
      if (code === 10001 || code === 20005)
        return 'the Twilio account is not active (suspended or closed): see console.twilio.com → Account → General settings'
      return null
    case 'meta':
      // 190 OAuthException: the token expired, was revoked or is not one (HTTP 401 says the same).
      if (code === 190 || status === 401) return META_TOKEN
      // 10 and 200: permission denied for the number; 3: the app may not use the capability.
      if (code === 10 || code === 200 || code === 3) return META_PERMISSION
      // 100 on the number's own node: no such object, or not one the token can see.
      if (when === 'check' && code === 100) return META_NUMBER
      return null
    default:
      return null
  }
}
