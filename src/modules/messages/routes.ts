import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { apiKeyAuth } from '../../http/auth'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { SendBody, SendResult } from './model'
import { sendOne } from './service'

export const messageRoutes = (deps: Deps) =>
  new Elysia()
    .use(apiKeyAuth(deps.sql))
    .post('/messages/send', async ({ body, principal }) => ok(await sendOne(deps, principal, body)), {
      body: SendBody,
      response: { 200: envelopeOf(SendResult), ...errorsOf(400, 401, 402, 422, 502) },
      detail: {
        tags: ['Messages'],
        summary: 'Send one message',
        description:
          'Charges the current price, hands the message to the provider and answers `sent` with its SID. ' +
          'If the provider refuses or fails, the charge is refunded and the answer is 502 `BAD_GATEWAY`.',
      },
    })
