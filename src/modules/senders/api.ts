// GET /api/v1/senders: the account's senders as an API key sees them (what `from` may name), without credentials.

import { t } from 'elysia'
import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { AccountSender } from './model'
import { listAccountSenders } from './service'

export const sendersApi = (deps: Deps) =>
  apiRoutes().get('/senders', async ({ principal }) => ok(await listAccountSenders(deps.sql, principal.accountId)), {
    response: { 200: envelopeOf(t.Array(AccountSender)), ...errorsOf(401) },
    detail: {
      tags: ['Senders'],
      summary: "The account's senders (extension)",
      description:
        'The numbers the account sends from, its default first: `from` on a send, a bulk entry or a campaign names one by its `id` ' +
        "or its `number`. Empty: the account sends from the deployment's number. Credentials are never shown.",
    },
  })
