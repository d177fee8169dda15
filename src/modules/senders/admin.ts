// Senders in the admin API: create (credentials sealed, never shown again), change, check with the
// provider, disable and enable, assign to accounts, and seal every credential again under a new
// SECRETS_KEY. Every change is audited without a credential's value.

import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { IdParams } from '../../http/models'
import { t } from 'elysia'
import {
  AccountSender,
  AccountSenderParams,
  AssignSenderBody,
  CreateSenderBody,
  ReadySender,
  RotateResult,
  Sender,
  SenderParams,
  UpdateSenderBody,
  type ReadySync,
} from './model'
import {
  assignSender,
  createSender,
  getSender,
  listAccountSenders,
  listSenders,
  recordCheck,
  rotateCredentials,
  senderRow,
  setSenderDisabled,
  unassignSender,
  updateSender,
  type SendersContext,
} from './service'
import { checkSender } from './check'

const tags = ['Admin: senders']
/** The admin token acts for nobody in particular: its audit rows name it. */

/**
 * What follows a sender's creation or check: the sync of its WhatsApp templates (app.ts gives it: the
 * templates noun reads senders, so senders cannot import it). Never throws.
 */
export type SenderReady = (senderId: number, trigger: 'created' | 'checked') => Promise<ReadySync>

export const sendersAdmin = (deps: Deps, ready: SenderReady = async () => null) => {
  const ctx: SendersContext = deps
  // A change here is seen by this process's sends at once (other instances' within seconds).
  const changed = <T>(value: T): T => {
    deps.senders.forget()
    return value
  }
  return adminRoutes(deps.config)
    .post(
      '/senders',
      async ({ body, set, actor }) => {
        const sender = changed(await createSender(ctx, actor, body))
        set.status = 201
        return ok({ ...sender, templates_sync: await ready(sender.id, 'created') })
      },
      {
        body: CreateSenderBody,
        response: { 201: envelopeOf(ReadySender), ...errorsOf(400, 401, 409, 422) },
        detail: {
          tags,
          summary: 'Create a sender: a provider, its credentials and a number',
          description:
            "The credentials are checked against the provider's fields (unknown or missing ones are 422), encrypted with " +
            'SECRETS_KEY (AES-256-GCM) and never shown again: answers list which fields are set. Nothing is sent to the provider ' +
            "(POST /senders/{id}/check does one harmless call), except that a Meta or Twilio sender's WhatsApp templates are synced " +
            'right after (`templates_sync`: its counts, or why it failed; a failed sync never fails the create). 409 when the ' +
            'provider already has a sender with that number.',
        },
      },
    )
    .get('/senders', async () => ok(await listSenders(ctx)), {
      response: { 200: envelopeOf(t.Array(Sender)), ...errorsOf(401) },
      detail: { tags, summary: 'Every sender, oldest first, with its accounts and last check' },
    })
    .get('/senders/:id', async ({ params }) => ok(await getSender(ctx, params.id)), {
      params: SenderParams,
      response: { 200: envelopeOf(Sender), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: 'One sender' },
    })
    .patch('/senders/:id', async ({ params, body, actor }) => ok(changed(await updateSender(ctx, actor, params.id, body))), {
      params: SenderParams,
      body: UpdateSenderBody,
      response: { 200: envelopeOf(Sender), ...errorsOf(400, 401, 404, 422) },
      detail: {
        tags,
        summary: "Change a sender's name, pace or credentials",
        description:
          'Credential fields given replace those stored (the others stay); the provider and number never change. Stored ' +
          'credentials that do not open (sealed under a key the service no longer has, or not for this sender) are replaced ' +
          'whole: give every required field.',
      },
    })
    .post(
      '/senders/:id/check',
      async ({ params, actor }) => {
        const check = await checkSender(deps, await senderRow(deps.sql, params.id))
        const sender = await recordCheck(ctx, actor, params.id, check)
        // Credentials the provider refused cannot list templates either: nothing to sync.
        return ok({ ...sender, templates_sync: check.ok ? await ready(sender.id, 'checked') : null })
      },
      {
        params: SenderParams,
        response: { 200: envelopeOf(ReadySender), ...errorsOf(400, 401, 404) },
        detail: {
          tags,
          summary: 'Check the credentials with one harmless call to the provider',
          description:
            "Twilio: the account resource (GET /2010-04-01/Accounts/{sid}.json); Meta: the phone number's node " +
            '(display number, verified name, quality rating); the simulator takes any. The answer is kept as `last_check` ' +
            '(`ok` and what the provider said, never a credential). A refusal is 200 with `last_check.ok` false. When the check ' +
            "passes, a Meta or Twilio sender's WhatsApp templates are synced (`templates_sync`; a failed sync never fails the check).",
        },
      },
    )
    .post('/senders/:id/disable', async ({ params, actor }) => ok(changed(await setSenderDisabled(ctx, actor, params.id, true))), {
      params: SenderParams,
      response: { 200: envelopeOf(Sender), ...errorsOf(400, 401, 404) },
      detail: {
        tags,
        summary: 'Disable a sender',
        description:
          'New sends through it are refused before anything is charged (422 `SENDER_DISABLED`), and its running campaigns pause; ' +
          'messages charged already still go, and its callbacks are still verified.',
      },
    })
    .post('/senders/:id/enable', async ({ params, actor }) => ok(changed(await setSenderDisabled(ctx, actor, params.id, false))), {
      params: SenderParams,
      response: { 200: envelopeOf(Sender), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: 'Enable a disabled sender' },
    })
    .get('/accounts/:id/senders', async ({ params }) => ok(await listAccountSenders(deps.sql, params.id)), {
      params: IdParams,
      response: { 200: envelopeOf(t.Array(AccountSender)), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: "An account's senders, its default first" },
    })
    .put(
      '/accounts/:id/senders/:sender_id',
      async ({ params, body, actor }) => ok(changed(await assignSender(ctx, actor, params.id, params.sender_id, body?.default === true))),
      {
        params: AccountSenderParams,
        body: t.Optional(AssignSenderBody),
        response: { 200: envelopeOf(t.Array(AccountSender)), ...errorsOf(400, 401, 404) },
        detail: {
          tags,
          summary: 'Give a sender to an account (or make it its default)',
          description:
            'An account may have several senders; its first is its default (`default: true` makes another one the default). ' +
            "An account without senders sends from the deployment's number (the environment's PROVIDER settings). Answers the account's senders.",
        },
      },
    )
    .delete(
      '/accounts/:id/senders/:sender_id',
      async ({ params, actor }) => ok(changed(await unassignSender(ctx, actor, params.id, params.sender_id))),
      {
        params: AccountSenderParams,
        response: { 200: envelopeOf(t.Array(AccountSender)), ...errorsOf(400, 401, 404) },
        detail: {
          tags,
          summary: 'Take a sender from an account',
          description: "When it was the default, the account's oldest other sender becomes its default. Answers the account's senders.",
        },
      },
    )
    .post('/secrets/rotate', async ({ actor }) => ok(changed(await rotateCredentials(ctx, actor))), {
      response: { 200: envelopeOf(RotateResult), ...errorsOf(401) },
      detail: {
        tags,
        summary: 'Encrypt every stored credential again under the current SECRETS_KEY',
        description:
          'After setting a new SECRETS_KEY with the old one in SECRETS_KEY_PREVIOUS (and restarting), this seals every credential ' +
          'sealed under an earlier key again under the new one; then SECRETS_KEY_PREVIOUS can go. Safe to repeat.',
      },
    })
}
