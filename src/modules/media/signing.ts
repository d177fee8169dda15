// The signature of a link to an uploaded file (links.ts serves them): a keyed digest of the file's id and
// the link's expiry under the deployment's secrets key (lib/secrets.ts), so only this service makes them.

import type { Clock } from '../../lib/clock'
import type { SecretBox } from '../../lib/secrets'

/** How long a signed link lasts: long enough for a provider's queue to fetch it, short enough that a copy soon dies. */
export const MEDIA_LINK_SECONDS = 24 * 3600

export const LINK_CONTEXT = 'media-link'

/** Where a signed link to file `id` starts (its query, the expiry and signature, is made at each hand-off). */
export const linkStart = (publicBaseUrl: string, id: string): string => `${publicBaseUrl}/media/${id}`

export async function signedLink(secrets: SecretBox, clock: Clock, publicBaseUrl: string, id: string): Promise<string> {
  const expires = Math.floor(clock.now().getTime() / 1000) + MEDIA_LINK_SECONDS
  const sig = await secrets.digest(`${id}.${expires}`, LINK_CONTEXT)
  return `${linkStart(publicBaseUrl, id)}?expires=${expires}&sig=${encodeURIComponent(sig)}`
}
