// POST /provider/twilio/status: Twilio's status callbacks. Outside /api/v1 and without an API key; the
// X-Twilio-Signature header is the authentication.

import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { ApiError, ok } from '../../http/errors'
import { MAX_BODY_BYTES } from '../../http/shell'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { TWILIO_STATUS_PATH } from '../../providers/twilio'
import { handleTwilioStatus } from './twilio-callback'

const FIELDS = {
  MessageSid: { type: 'string', description: 'The message SID (`message_sid`)', example: 'SM0123456789abcdef0123456789abcdef' },
  MessageStatus: {
    type: 'string',
    description:
      '`sent`, `delivered`, `read` are applied as they are; `failed` and `undelivered` become `failed`; ' +
      '`queued`, `accepted`, `sending` and anything unknown change nothing.',
    example: 'delivered',
  },
  ErrorCode: { type: 'string', description: "Twilio's numeric error code; stored as `error_code` on failure", example: '30008' },
  ErrorMessage: { type: 'string', description: 'Stored as `error_message` on failure (default: the reported status)' },
} as const

export const twilioStatusRoutes = (deps: Deps) =>
  new Elysia().post(
    TWILIO_STATUS_PATH,
    async ({ body, request }) =>
      ok(
        await handleTwilioStatus(deps, {
          rawBody: typeof body === 'string' ? body : '',
          contentType: request.headers.get('content-type'),
          signature: request.headers.get('x-twilio-signature'),
        }),
      ),
    {
      // The signature covers every form field, so the handler needs the body exactly as sent, not
      // Elysia's parsed object (which would also have consumed the stream). The shell's JSON hook runs
      // first and leaves other content types alone; this one then takes the raw text.
      parse: async ({ request }) => {
        const text = await request.text()
        if (text.length > MAX_BODY_BYTES) throw new ApiError('PAYLOAD_TOO_LARGE', `request body exceeds ${MAX_BODY_BYTES} bytes`)
        return text
      },
      response: {
        200: envelopeOf(t.Object({ changed: t.Boolean({ description: 'Whether the report changed the message' }) })),
        ...errorsOf(400, 403, 404),
      },
      detail: {
        tags: ['Provider callbacks'],
        summary: "Twilio's message status callback",
        description:
          'Called by Twilio (the `StatusCallback` of every message sent with `PROVIDER=twilio`), not by API clients. ' +
          'No API key: the `X-Twilio-Signature` header is verified with `TWILIO_AUTH_TOKEN` over `PUBLIC_BASE_URL` + ' +
          '`/provider/twilio/status` and every form field; a missing or wrong signature gets 403 `FORBIDDEN` and changes ' +
          'nothing. A valid report goes through the forward-only state machine: a repeat or a backwards move changes ' +
          'nothing and still gets 200. A report for a SID not stored yet (it can beat the recording of the send) gets 200 ' +
          'with `changed: false` and is kept for up to an hour, then applied in order once the SID is stored. ' +
          'Each accepted change emits one `message.status` event. The endpoint ' +
          'answers whenever `TWILIO_AUTH_TOKEN` is set (so reports keep arriving after switching `PROVIDER` away from ' +
          'Twilio); without it, 404 `NOT_FOUND`.',
        security: [],
        parameters: [
          {
            name: 'X-Twilio-Signature',
            in: 'header',
            required: true,
            schema: { type: 'string' },
            description: 'Base64 HMAC-SHA1 by Twilio',
          },
        ],
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': {
              schema: {
                type: 'object',
                required: ['MessageSid', 'MessageStatus'],
                properties: FIELDS,
                additionalProperties: { type: 'string' },
              },
            },
          },
        },
      },
    },
  )
