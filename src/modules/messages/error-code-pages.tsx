// What a message's error code means and what to do about it, for everyone signed in: the providers'
// codes of providers/error-codes.ts with their advice, each row its own anchor (#code-<n>) that the
// message log, a message's page and the overview link to; and what a failure without a code was.

import { h, Fragment, type Html } from '../../dashboard/jsx'
import { Layout } from '../../dashboard/layout'
import { type Dashboard, respond, pageRoutes } from '../../dashboard/context'
import { ERROR_CODES, ERROR_CODE_ADVICE, META_ERRORS_SOURCE, TWILIO_ERRORS_SOURCE } from '../../providers/error-codes'

export const ERROR_CODES_PAGE = '/dashboard/error-codes'

const KNOWN = new Set(ERROR_CODES.map((c) => c.code))

/** A message's error as the lists show it: its code linked to its meaning (when the page lists it), then the provider's words. */
export function ErrorText(props: { code: number | null; message: string | null }): Html {
  const words = props.message ?? ''
  if (props.code === null) return <>{words}</>
  const href = KNOWN.has(props.code) ? `${ERROR_CODES_PAGE}#code-${props.code}` : `${ERROR_CODES_PAGE}#other-codes`
  return (
    <>
      <a href={href} aria-label={`Error ${props.code}: what it means`}>
        {String(props.code)}
      </a>
      {words ? ` ${words}` : ''}
    </>
  )
}

export function errorCodePages(d: Dashboard) {
  return pageRoutes().get('/error-codes', async ({ request }) => {
    const session = await d.view(request)
    if (session instanceof Response) return session
    return respond(
      <Layout title="Error codes" session={session}>
        <p>
          A failed message keeps the provider's error code and words. These are the codes messages most often end with: what each means, and
          what to do. A throttle is retried by the service and recorded only when the message's validity ran out.
        </p>
        <table id="error-codes" class="list">
          <caption>Error codes, what they mean and what to do</caption>
          <thead>
            <tr>
              <th scope="col">Code</th>
              <th scope="col">Provider</th>
              <th scope="col">Meaning</th>
              <th scope="col">What to do</th>
            </tr>
          </thead>
          <tbody>
            {ERROR_CODES.map((c) => (
              <tr id={`code-${c.code}`}>
                <td data-label="Code">
                  <a href={c.provider === 'Meta' ? META_ERRORS_SOURCE : `${TWILIO_ERRORS_SOURCE}/${c.code}`}>{String(c.code)}</a>
                </td>
                <td data-label="Provider">{c.kind === 'throttle' ? `${c.provider} (throttle)` : c.provider}</td>
                <td data-label="Meaning">{c.meaning}</td>
                <td data-label="What to do">{ERROR_CODE_ADVICE[c.code] ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <h2 id="other-codes">Other codes, and failures without one</h2>
        <p>
          Any other code is passed on as the provider gave it: look it up in <a href={META_ERRORS_SOURCE}>Meta's error codes</a> or{' '}
          <a href={TWILIO_ERRORS_SOURCE}>Twilio's error pages</a>. A failure without a code is the service's own: the provider did not
          answer in time, could not be reached, or the customer opted out before the hand-off (its words begin with{' '}
          <code>RECIPIENT_OPTED_OUT</code>); such a message is refunded.
        </p>
      </Layout>,
    )
  })
}
