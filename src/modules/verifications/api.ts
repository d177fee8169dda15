// The verification API (issue 30 §4, an extension): POST /api/v1/verifications sends a one-time code
// through an approved authentication template, POST /verifications/{id}/check checks it, GET
// /verifications/{id} shows it. Another account's verification is 404, as a missing one.

import { t } from 'elysia'
import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { Id } from '../../http/models'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { formatTimestamp } from '../../lib/time'
import { SendRefused } from '../messages/model'
import { checkVerification, getVerification, startVerification, type Verification } from './service'
import {
  CheckedVerification,
  CheckVerificationBody,
  StartVerificationBody,
  VerificationLimited,
  VerificationPending,
  VerificationView,
} from './model'

const tags = ['Verifications']

const shown = <T extends Verification>(v: T, timeZone: string) => ({ ...v, expires_at: formatTimestamp(v.expires_at, timeZone)! })

const params = t.Object({ id: Id('verification', 'The verification id') })

export const verificationsApi = (deps: Deps) =>
  apiRoutes()
    .post(
      '/verifications',
      async ({ body, principal, set }) => {
        const started = await startVerification(deps, principal, body, Bun.randomUUIDv7('hex', deps.clock.now()))
        set.status = 201
        return ok(shown(started, deps.config.timezone))
      },
      {
        body: StartVerificationBody,
        response: {
          201: envelopeOf(VerificationView),
          ...errorsOf(400, 401, 402, 422),
          409: VerificationPending,
          429: VerificationLimited,
          502: SendRefused,
        },
        detail: {
          tags,
          summary: 'Send a one-time code (extension)',
          description:
            'Makes a code of VERIFY_CODE_LENGTH digits (6), valid for VERIFY_TTL_SECONDS (600), and sends it to `to` through an ' +
            'approved authentication template: `template_id`, or the account’s first approved authentication template whose ' +
            'body takes one parameter (none: 422 naming the fix). The code fills the body and the template’s code button. It is ' +
            'a message like any other: charged at the current price, refused before the charge as a send is: 402 ' +
            '`INSUFFICIENT_BALANCE` or `SPEND_CAP_REACHED`; 422 `VALIDATION_ERROR` (`to`, `template_id` and the fix), ' +
            "`TEMPLATE_NOT_APPROVED` (the template is not approved: its status named), `SENDER_DISABLED` (the template's sender is " +
            "disabled) or `RECIPIENT_OPTED_OUT`; 429 `MESSAGING_LIMIT` or `RATE_LIMITED` (the sender's pace); and 502 " +
            '`BAD_GATEWAY`, refunded, when the provider refuses it. The service keeps only a keyed digest of the code (HMAC under ' +
            'its secrets key), and the message shows it masked (••••••). At most ' +
            'VERIFY_PER_NUMBER (5) verifications per number and VERIFY_PER_ACCOUNT (1000) in all per VERIFY_WINDOW_SECONDS (600) ' +
            'per account, and VERIFY_PER_NUMBER_TOTAL (15) per number from all accounts together: beyond them 429 `RATE_LIMITED` ' +
            'with `Retry-After`, nothing sent or charged (a verification whose send failed does not count).',
        },
      },
    )
    .post(
      '/verifications/:id/check',
      async ({ params, body, principal }) =>
        ok(shown(await checkVerification(deps, principal.accountId, params.id, body.code), deps.config.timezone)),
      {
        params,
        body: CheckVerificationBody,
        response: { 200: envelopeOf(CheckedVerification), ...errorsOf(400, 401, 404, 422) },
        detail: {
          tags,
          summary: 'Check a one-time code (extension)',
          description:
            'Compares `code` with the kept hash, in constant time. A pending verification answers `approved` (`valid: true`; a ' +
            '`verification.approved` event for the registrations that chose it), `pending` with one attempt fewer for a wrong code, ' +
            '`too_many_attempts` at the VERIFY_MAX_ATTEMPTS-th (5) wrong code, `expired` once `expires_at` has passed (whatever ' +
            'the code). An ended verification answers its status and changes no more; `valid` says whether this code was the ' +
            "right one. Another account's verification is 404 `NOT_FOUND`.",
        },
      },
    )
    .get(
      '/verifications/:id',
      async ({ params, principal }) => ok(shown(await getVerification(deps, principal.accountId, params.id), deps.config.timezone)),
      {
        params,
        response: { 200: envelopeOf(VerificationView), ...errorsOf(400, 401, 404) },
        detail: {
          tags,
          summary: 'One verification (extension)',
          description: "Its status now (a pending one past `expires_at` shows `expired`). Another account's is 404 `NOT_FOUND`.",
        },
      },
    )
