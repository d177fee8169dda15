// Status reports made the way a provider makes them: Twilio's status callback, form-encoded as Twilio
// posts it and signed with X-Twilio-Signature by the official `twilio` package (independently of the
// service's own signature code), POSTed to /provider/twilio/status. Tests use these instead of calling
// the state machine, so every status change goes through the route, its receiver and its wake-ups.

import twilio from 'twilio'
import type { TestApp } from './app'

/** The Twilio auth token every test app (and child service that reports) is configured with. */
export const TEST_TWILIO_AUTH_TOKEN = 'test-twilio-auth-token-0123456789'
export const TWILIO_STATUS_PATH = '/provider/twilio/status'

export type ReportedByTwilio = 'sent' | 'delivered' | 'read' | 'failed' | 'undelivered' | 'queued' | 'sending'
export type ReportOptions = { errorCode?: number | null; errorMessage?: string | null }

/** The fields Twilio posts for a WhatsApp message status (ErrorCode and ErrorMessage when given). */
export function twilioStatusFields(sid: string, status: ReportedByTwilio, options: ReportOptions = {}): Record<string, string> {
  const fields: Record<string, string> = {
    ChannelPrefix: 'whatsapp',
    ApiVersion: '2010-04-01',
    MessageStatus: status,
    SmsSid: sid,
    SmsStatus: status,
    To: 'whatsapp:+6281234567890',
    From: 'whatsapp:+14155238886',
    MessageSid: sid,
    AccountSid: `AC${'0'.repeat(32)}`,
  }
  if (options.errorCode != null) fields.ErrorCode = String(options.errorCode)
  if (options.errorMessage != null) fields.ErrorMessage = options.errorMessage
  return fields
}

/** The callback as Twilio sends it to `url`, signed for `publicBaseUrl` (the URL Twilio was given). */
function signedCallback(url: string, publicBaseUrl: string, authToken: string, fields: Record<string, string>): Request {
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilio.getExpectedTwilioSignature(authToken, `${publicBaseUrl}${TWILIO_STATUS_PATH}`, fields),
    },
    body: new URLSearchParams(fields).toString(),
  })
}

/** The route's answer to a report: 200 `{changed}`, anything else throws with what it got. */
async function answerOf(response: Response): Promise<{ changed: boolean }> {
  const text = await response.text()
  if (response.status !== 200) throw new Error(`status callback answered ${response.status}: ${text}`)
  const { data } = JSON.parse(text) as { data: { changed: boolean } }
  if (typeof data?.changed !== 'boolean') throw new Error(`status callback answered without "changed": ${text}`)
  return { changed: data.changed }
}

/** Where a report goes: the test app (`app` may be another app over the same deps), signed for its config. */
export type ReportTarget = Pick<TestApp, 'app' | 'config'>

/** Posts Twilio's signed status callback for `sid` through `app.handle`; the raw response. */
export function postStatusCallback(t: ReportTarget, sid: string, status: ReportedByTwilio, options: ReportOptions = {}) {
  const request = signedCallback(
    `http://localhost${TWILIO_STATUS_PATH}`,
    t.config.publicBaseUrl,
    t.config.providers.twilio.authToken,
    twilioStatusFields(sid, status, options),
  )
  return t.app.handle(request)
}

/** Reports `status` for `sid` as Twilio does; what the route answered (`changed`: the message moved). */
export async function reportStatus(
  t: ReportTarget,
  sid: string,
  status: ReportedByTwilio,
  options: ReportOptions = {},
): Promise<{ changed: boolean }> {
  return answerOf(await postStatusCallback(t, sid, status, options))
}

/**
 * The same report over HTTP to a service running as a child process at `url` (its PUBLIC_BASE_URL
 * by default, as it is when HOST and PORT are the child's own), which must carry `authToken`.
 */
export async function reportStatusOverHttp(
  url: string,
  sid: string,
  status: ReportedByTwilio,
  options: ReportOptions & { authToken?: string; publicBaseUrl?: string } = {},
): Promise<{ changed: boolean }> {
  const request = signedCallback(
    `${url}${TWILIO_STATUS_PATH}`,
    options.publicBaseUrl ?? url,
    options.authToken ?? TEST_TWILIO_AUTH_TOKEN,
    twilioStatusFields(sid, status, options),
  )
  return answerOf(await fetch(request))
}
