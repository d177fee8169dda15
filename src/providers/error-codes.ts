// What a message's `error_code` means: the providers' codes a message most often ends with, each with
// its meaning in a few words and where it is documented. The API reference shows this table in the
// description of `error_code` (the message, the webhook event); the README has the same table (a test
// keeps them together). It imports nothing.

/** Whether the code ends a message (`final`) or is a throttle: retried, recorded only if the message's validity runs out. */
export type ErrorCodeKind = 'final' | 'throttle'

export type ErrorCodeMeaning = { code: number; provider: 'Meta' | 'Twilio'; kind: ErrorCodeKind; meaning: string }

/** Meta's Cloud API error codes: https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes */
export const META_ERRORS_SOURCE = 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes'
/** Twilio's error codes, one page each: https://www.twilio.com/docs/api/errors/<code> */
export const TWILIO_ERRORS_SOURCE = 'https://www.twilio.com/docs/api/errors'

export const ERROR_CODES: readonly ErrorCodeMeaning[] = [
  {
    code: 131026,
    provider: 'Meta',
    kind: 'final',
    meaning: 'message undeliverable: the number is not a WhatsApp user or cannot receive it (old app, terms not accepted)',
  },
  {
    code: 131047,
    provider: 'Meta',
    kind: 'final',
    meaning: "outside the 24-hour window: more than 24 hours since the customer's last message; only an approved template can go",
  },
  {
    code: 132001,
    provider: 'Meta',
    kind: 'final',
    meaning: "template does not exist: no approved template of that name in that language in the sender's WhatsApp Business Account",
  },
  {
    code: 132000,
    provider: 'Meta',
    kind: 'final',
    meaning: 'number of parameters does not match: a template component was sent with more or fewer parameters than it has',
  },
  {
    code: 131008,
    provider: 'Meta',
    kind: 'final',
    meaning: "required parameter is missing: a template's header medium, button value or named parameter was not sent",
  },
  {
    code: 132015,
    provider: 'Meta',
    kind: 'final',
    meaning: 'template is paused: its quality fell; it cannot send until Meta reinstates it',
  },
  {
    code: 132016,
    provider: 'Meta',
    kind: 'final',
    meaning: 'template is disabled: paused too often for low quality, it can never send again',
  },
  {
    code: 131049,
    provider: 'Meta',
    kind: 'final',
    meaning: 'not delivered "to maintain healthy ecosystem engagement": Meta\'s per-user limit on marketing messages',
  },
  {
    code: 131048,
    provider: 'Meta',
    kind: 'final',
    meaning:
      'spam rate limit hit: restrictions on how many messages the number may send: its messaging limit (unique recipients per 24 hours) ' +
      'was passed, or earlier messages were blocked or flagged as spam',
  },
  {
    code: 131031,
    provider: 'Meta',
    kind: 'final',
    meaning: 'the business account has been locked (a policy violation, or its data could not be verified)',
  },
  { code: 368, provider: 'Meta', kind: 'final', meaning: 'temporarily blocked for policy violations' },
  {
    code: 131042,
    provider: 'Meta',
    kind: 'final',
    meaning: 'business eligibility payment issue: a problem with the payment method of the account',
  },
  {
    code: 130429,
    provider: 'Meta',
    kind: 'throttle',
    meaning: "rate limit hit: the business number's throughput (80 messages/s by default)",
  },
  {
    code: 131056,
    provider: 'Meta',
    kind: 'throttle',
    meaning: 'pair rate limit hit: too many messages to the same recipient in a short time',
  },
  { code: 80007, provider: 'Meta', kind: 'throttle', meaning: "the WhatsApp Business Account's rate limit" },
  {
    code: 63016,
    provider: 'Twilio',
    kind: 'final',
    meaning: 'outside the 24-hour window: a free-form message; send an approved template (Content SID)',
  },
  {
    code: 63024,
    provider: 'Twilio',
    kind: 'final',
    meaning: 'invalid message recipient: not a WhatsApp user, terms not accepted, or an old app',
  },
  { code: 63003, provider: 'Twilio', kind: 'final', meaning: 'the channel could not find the To address: inactive or invalid' },
  {
    code: 21610,
    provider: 'Twilio',
    kind: 'final',
    meaning: 'attempt to send to an unsubscribed recipient (it opted out, or blocked the sender)',
  },
  { code: 21211, provider: 'Twilio', kind: 'final', meaning: "invalid 'To' phone number" },
  {
    code: 21655,
    provider: 'Twilio',
    kind: 'final',
    meaning: "the ContentSid is invalid: no Content template of that SID in the sender's Twilio account (deleted, or another account's)",
  },
  {
    code: 63028,
    provider: 'Twilio',
    kind: 'final',
    meaning: 'number of parameters does not match: ContentVariables does not fill every variable of the Content template',
  },
  {
    code: 21656,
    provider: 'Twilio',
    kind: 'final',
    meaning: 'the ContentVariables parameter is invalid: not JSON, or a variable empty or null',
  },
  { code: 30008, provider: 'Twilio', kind: 'final', meaning: 'unknown error: delivery failed without a reason given' },
  { code: 20429, provider: 'Twilio', kind: 'throttle', meaning: "too many requests: the account's concurrency on Twilio's REST API" },
  {
    code: 63018,
    provider: 'Twilio',
    kind: 'throttle',
    meaning: "rate limit exceeded for the channel: the WhatsApp sender's rate, or its messaging limit (unique recipients per 24 hours)",
  },
]

/** What the simulator answers, and when: its codes are the real providers', with the same meaning. */
export const SIMULATOR_CODES: readonly { code: number; when: string }[] = [
  { code: 21610, when: 'a national number ending in 9999 (refused at hand-off)' },
  { code: 131026, when: 'a national number ending in 7777 (refused at hand-off)' },
  {
    code: 63016,
    when: 'a number ending in 8888 (reported failed after SIM_DELIVERED_MS); a free-form message outside the window with SIM_REQUIRE_TEMPLATE',
  },
  { code: 130429, when: 'beyond SIM_RATE_PER_SECOND (a throttle)' },
  { code: 131056, when: 'within SIM_RECIPIENT_GAP_MS of the last message to the number (a throttle)' },
]

/** The description of an `error_code` field in the API reference: `lead`, then the table of codes. */
export function errorCodeDescription(lead: string): string {
  const rows = ERROR_CODES.map(
    (c) =>
      `| ${c.code} | ${c.provider} | ${c.kind === 'throttle' ? 'throttling: retried; recorded only if the validity runs out' : 'final'} | ${c.meaning} |`,
  )
  const simulator = SIMULATOR_CODES.map((c) => `${c.code} ${c.when}`).join('; ')
  return [
    lead,
    '',
    '| code | provider | kind | meaning |',
    '|---|---|---|---|',
    ...rows,
    '',
    `Sources: Meta's error codes (${META_ERRORS_SOURCE}), Twilio's error pages (${TWILIO_ERRORS_SOURCE}/{code}). ` +
      `Other codes are passed on as the provider gave them; null when there was none (no answer, a timeout, an unreadable answer). ` +
      `The simulator: ${simulator}.`,
  ].join('\n')
}
