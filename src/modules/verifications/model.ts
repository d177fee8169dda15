// The verification API's shapes (issue 30 §4): a start, a check, and a verification as answered.

import { t } from 'elysia'
import { JsonId } from '../../http/models'
import { ErrorEnvelope } from '../../http/openapi'

export const StartVerificationBody = t.Object(
  {
    to: t.String({ description: 'The number to verify, as a send takes it', examples: ['+6281234567890'] }),
    template_id: t.Optional(
      JsonId({
        description:
          "An approved authentication template of the account whose body takes the code (GET /templates); left out: the account's " +
          'first approved authentication template',
      }),
    ),
  },
  { additionalProperties: false },
)
export type StartVerificationBody = typeof StartVerificationBody.static

export const CheckVerificationBody = t.Object(
  { code: t.String({ maxLength: 64, description: 'The code the customer typed', examples: ['482913'] }) },
  { additionalProperties: false },
)

const fields = {
  id: t.Integer({ description: 'The verification (POST /verifications/{id}/check)' }),
  to: t.String({ examples: ['+6281234567890'] }),
  status: t.Union([t.Literal('pending'), t.Literal('approved'), t.Literal('expired'), t.Literal('too_many_attempts')], {
    description:
      '`pending`: waiting for the right code; `approved`: checked right; `expired`: not checked right before `expires_at`; ' +
      '`too_many_attempts`: VERIFY_MAX_ATTEMPTS wrong codes. Only `pending` changes',
  }),
  template_id: t.Integer({ description: 'The authentication template the code went with' }),
  message_sid: t.Union([t.String(), t.Null()], {
    description: "The code's message (GET /messages/{message_sid}); null when the send was answered queued",
  }),
  expires_at: t.String({ description: 'Until when the code can be checked (service time zone)', examples: ['2026-12-02 05:50:00'] }),
  attempts_left: t.Integer({ description: 'Wrong codes it still takes before it ends `too_many_attempts`' }),
}

export const VerificationView = t.Object(fields)
export const CheckedVerification = t.Object({
  ...fields,
  valid: t.Boolean({ description: 'Whether this code was the right one' }),
})

/** The 429 of a start: its own limits, the sender's pace and messaging limit, the key's rate. */
export const VerificationLimited = t.Object(ErrorEnvelope.properties, {
  description:
    '`RATE_LIMITED`: the account started VERIFY_PER_NUMBER verifications for this number, or VERIFY_PER_ACCOUNT in all, or all ' +
    'accounts together VERIFY_PER_NUMBER_TOTAL for this number, in the last VERIFY_WINDOW_SECONDS (`Retry-After`: until the ' +
    "oldest counted leaves the window); or the sender's pace could not take " +
    "the message within SEND_WAIT_MS; or the API key is over its rate. `MESSAGING_LIMIT`: the sender's messaging limit (unique " +
    'recipients of business-initiated messages per rolling 24 hours) is used up, `Retry-After` until the oldest frees. Nothing was ' +
    'sent or charged, and the verification does not count',
  examples: [
    {
      success: false,
      code: 'RATE_LIMITED',
      error:
        'this account has for +6281234567890 started 5 verifications in the last 600 s, its limit; nothing was sent or charged, retry in 412 s',
      request_id: '0b6f2d1e-8c1a-4c55-9a53-3f1f7e0a9c21',
    },
  ],
})

/** The 409 of a start: its message was still being handed over when the answer was due. */
export const VerificationPending = t.Object(ErrorEnvelope.properties, {
  description:
    "`CONFLICT`: the code's message was charged and is still being handed to the provider elsewhere (a hand-off taken over " +
    'after a crash); its outcome is not known yet. Start a new verification later if the code does not arrive',
})
