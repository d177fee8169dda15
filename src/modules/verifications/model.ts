// The verification API's shapes (issue 30 §4): a start, a check, and a verification as answered.

import { t } from 'elysia'
import { JsonId } from '../../http/models'

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
