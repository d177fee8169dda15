// An inbound medium from Twilio: GET its MediaUrl (…/Accounts/{AccountSid}/Messages/{MM…}/Media/{ME…})
// with the account's Basic auth (AccountSid:AuthToken; Twilio requires it when the account protects its
// media, and takes it when not). Twilio answers with a redirect to its storage (a signed URL), which is
// followed without the credentials. The credentials go only to the Twilio API (TWILIO_API_BASE's
// origin): a MediaUrl elsewhere is refused.

import { openMediaUrl } from '../http'
import type { MediaOpened, MediaRef } from '../provider'
import { twilioBasic, type TwilioSettings } from './settings'

/** Whether `url` is on the Twilio API (TWILIO_API_BASE's origin, where Twilio's MediaUrls are). */
const onTwilioApi = (url: URL, apiBase: string) => url.origin === new URL(apiBase).origin

export async function openTwilioMedia(settings: TwilioSettings, ref: MediaRef, signal: AbortSignal): Promise<MediaOpened> {
  const { accountSid, authToken, apiBase } = settings
  if (!ref.url) return { ok: false, retry: false, reason: 'Twilio gave no MediaUrl' }
  let url: URL
  try {
    url = new URL(ref.url)
  } catch {
    return { ok: false, retry: false, reason: 'Twilio gave a MediaUrl that is not a URL' }
  }
  if (!onTwilioApi(url, apiBase)) return { ok: false, retry: false, reason: 'the MediaUrl is not on the Twilio API (TWILIO_API_BASE)' }
  if (!accountSid || !authToken) return { ok: false, retry: false, reason: 'no Twilio credentials for the number the message reached' }
  return openMediaUrl('Twilio', url.toString(), { authorization: `Basic ${twilioBasic(settings)}` }, signal)
}
