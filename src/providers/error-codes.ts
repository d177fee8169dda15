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

/** What to do about each code of ERROR_CODES (the dashboard's error codes page; a test keeps one for every code). */
export const ERROR_CODE_ADVICE: Readonly<Record<number, string>> = {
  131026: 'Check the number with the customer; do not retry it as it is. It may take WhatsApp only after they update or accept the terms.',
  131047: "Send an approved template; free-form replies can go again once the customer writes (the inbox's window).",
  132001: "Check the template's name and language in its binding against the approved template of the sender's WhatsApp Business Account.",
  132000: "Make the binding's variables match the approved template's parameters, then send again.",
  131008: 'Give every parameter the approved template needs (its header medium, button values, each named parameter).',
  132015: 'Use another approved template until Meta reinstates this one, and look at why its quality fell.',
  132016: 'Submit a new template; this one can never send again.',
  131049: 'Nothing to fix in the message: send fewer marketing messages to this customer, or try again later.',
  131048: "Slow down: wait for the sender's messaging limit to reset, and look at whether customers block or report its messages.",
  131031: "The operator must resolve the business account's lock in Meta's Business Manager; nothing sends until then.",
  368: "The operator must review the policy violation in Meta's Business Manager; sends resume when the block ends.",
  131042: "The operator must fix the payment method of the WhatsApp Business Account in Meta's Business Manager.",
  130429: "Nothing to do: the service retries at the sender's pace. Recorded only when the message's validity ran out: send it again.",
  131056: 'Space the messages to this customer; recorded only when the validity ran out: send it again later.',
  80007: 'Nothing to do: the service retries. Recorded only when the validity ran out: send it again, or ask Meta for a higher limit.',
  63016: "Send an approved template; free-form replies can go again once the customer writes (the inbox's window).",
  63024: 'Check the number with the customer; it may take WhatsApp only after they update or accept the terms.',
  63003: 'Check the number: it is not an active WhatsApp address.',
  21610: 'The customer opted out or blocked the sender: do not send again unless they write START or agree again.',
  21211: 'Correct the phone number (an Indonesian mobile number: 08…, 628… or +628…).',
  21655: "Check the binding's Content SID against the sender's Twilio account (Content Template Builder).",
  63028: "Make the binding's variables fill every variable of the Content template, then send again.",
  21656: 'Give every template variable a value (none empty), then send again.',
  30008: "Try again later; if it repeats for one number, check the number with the customer and Twilio's logs.",
  20429: 'Nothing to do: the service retries. Recorded only when the validity ran out: send it again.',
  63018: "Slow down: the sender's rate or messaging limit was passed; recorded only when the validity ran out.",
}
