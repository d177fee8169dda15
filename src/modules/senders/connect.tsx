// A sender's "Connect in the provider's console": what to paste where, built from PUBLIC_BASE_URL
// (the provider calls these addresses and, for Twilio, signs the exact URL). Twilio: the inbound URL
// ("A message comes in") and the status callback; Meta: the callback URL, the verify token and the
// webhook fields this service applies. The verify token is shown to operators (only they see sender
// pages): they type it into Meta's console, and it only answers the subscription handshake; what
// proves a webhook is the app secret's signature, and the app secret is never shown.

import { h, Fragment } from '../../dashboard/jsx'
import { CopyButton } from '../../dashboard/layout'
import { META_WEBHOOK_FIELDS, META_WEBHOOK_PATH } from '../../providers/meta'
import { TWILIO_INBOUND_PATH, TWILIO_STATUS_PATH } from '../../providers/twilio'

/** A value to paste, with its copy button (assets/copy.js). */
const Paste = (props: { id: string; value: string; what: string }) => (
  <div class="paste">
    <code id={props.id}>{props.value}</code> <CopyButton target={props.id} what={props.what} />
  </div>
)

/** Whether the providers can call `base`: Meta takes https only, and neither reaches a loopback or private address. */
function unreachable(base: string): string | null {
  const url = new URL(base)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (/^(localhost|127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|::1$|0\.0\.0\.0$)/.test(host))
    return `PUBLIC_BASE_URL is ${base}, which the provider cannot reach: set it to this service's public https address and restart it, then paste these.`
  if (url.protocol !== 'https:')
    return `PUBLIC_BASE_URL is ${base}: Meta calls https addresses only; Twilio's requests would travel unencrypted.`
  return null
}

export function ConnectSection(props: { provider: string; publicBaseUrl: string; verifyToken: { value: string; from: string } | null }) {
  const base = props.publicBaseUrl.replace(/\/+$/, '')
  if (props.provider !== 'twilio' && props.provider !== 'meta') return null
  const warning = unreachable(base)
  return (
    <section aria-labelledby="connect">
      <h2 id="connect">Connect in the provider's console</h2>
      <div class="card stack connect">
        {warning ? (
          <p class="notice error" role="note">
            {warning}
          </p>
        ) : null}
        {props.provider === 'twilio' ? (
          <>
            <p>
              In <strong>console.twilio.com → Messaging → Senders → WhatsApp senders</strong>, open this number and set:
            </p>
            <h3>Webhook URL for incoming messages (HTTP POST)</h3>
            <Paste id="connect-inbound" value={`${base}${TWILIO_INBOUND_PATH}`} what="inbound URL" />
            <p class="hint">Customers' messages and replies arrive here, signed with this sender's Auth Token.</p>
            <h3>Status callback URL</h3>
            <Paste id="connect-status" value={`${base}${TWILIO_STATUS_PATH}`} what="status callback URL" />
            <p class="hint">
              Every message sent from here names it already; set it on the sender too, so that statuses of messages sent another way arrive.
            </p>
          </>
        ) : (
          <>
            <p>
              In <strong>developers.facebook.com → your app → WhatsApp → Configuration → Webhook → Edit</strong>:
            </p>
            <h3>Callback URL</h3>
            <Paste id="connect-callback" value={`${base}${META_WEBHOOK_PATH}`} what="callback URL" />
            <h3>Verify token</h3>
            {props.verifyToken ? (
              <details>
                <summary>Show the verify token ({props.verifyToken.from})</summary>
                <Paste id="connect-verify-token" value={props.verifyToken.value} what="verify token" />
              </details>
            ) : (
              <p class="notice error" role="note">
                None: give this sender a verify_token (Change, below) or set META_VERIFY_TOKEN; until then Meta's check of the callback URL
                is refused.
              </p>
            )}
            <p class="hint">The webhooks are proven by their signature under the app secret stored on this sender, which is never shown.</p>
            <h3>Webhook fields to subscribe</h3>
            <p>Subscribe each of these (Webhook fields → Manage); others are ignored:</p>
            <ul class="plain" id="connect-fields">
              {META_WEBHOOK_FIELDS.map((name) => (
                <li>
                  <code>{name}</code>
                </li>
              ))}
            </ul>
          </>
        )}
      </div>
    </section>
  )
}
