// The providers' status-callback routes: every callback of every registered provider, mounted at
// /provider/<name>/<path> whatever PROVIDER says. Outside /api/v1 and without an API key: each
// provider's own signature check is the authentication. The route reads the body exactly as sent
// (signatures cover the raw bytes), lets the provider verify and parse it, applies the status
// reports it gets back through the forward-only state machine in one transaction (shared with the
// callbacks that arrive meanwhile: group commit), stores the inbound messages it gets back
// (modules/inbound: once each), and answers 200 `{changed, inbound}` (or the provider's own answer,
// e.g. a subscription handshake). The provider names, for every part of a verified callback, the
// sender(s) its signer owns (refusing a callback that names another's number); a status report for a
// message another sender sent changes nothing and is logged as refused.

import { t } from 'elysia'
import { callbackRoutes } from '../../http/groups'
import type { Deps } from '../../deps'
import { ok } from '../../http/errors'
import { MAX_BODY_BYTES, tooLarge } from '../../http/body'
import { readCapped } from '../../lib/stream'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { eventsCommitted, notifies } from '../webhooks/notify'
import { createReportReceiver } from './receiver'
import { storeConsent, storeInbound } from '../inbound/service'
import type { Callback, CallbackRequest } from '../../providers/provider'
import { anyProvider, PROVIDERS } from '../../providers/registry'
import { log } from '../../lib/log'

const PROVIDER_ROUTES_PREFIX = '/provider/'

const Answer = t.Object({
  changed: t.Boolean({ description: 'Whether the report(s) changed a message' }),
  inbound: t.Optional(
    t.Integer({
      description: 'When the request carried inbound messages: how many were stored now (a repeat delivery is not counted again)',
    }),
  ),
})

/** The body's bytes, refused (413) as soon as they pass MAX_BODY_BYTES. */
async function readRaw(request: Request): Promise<Uint8Array> {
  const bytes = await readCapped(request.body, MAX_BODY_BYTES)
  if (bytes === null) throw tooLarge()
  return bytes
}

/** An error answer as the OpenAPI document lists it, for callbacks that document their own answers. */
function documentedErrors(statuses: number[]) {
  return Object.fromEntries(
    Object.entries(errorsOf(...statuses)).map(([status, schema]) => [
      status,
      { description: schema.description ?? 'Error', content: { 'application/json': { schema } } },
    ]),
  )
}

export function providerCallbacks(deps: Deps) {
  const app = callbackRoutes('provider-callbacks')
  const receive = createReportReceiver(deps.sql, deps.config.timezone, { notify: notifies(deps) })
  for (const plugin of PROVIDERS.map(anyProvider)) {
    for (const callback of plugin.callbacks as Callback<unknown>[]) {
      const path = `${PROVIDER_ROUTES_PREFIX}${plugin.name}/${callback.path}`
      async function handle({ request, body }: { request: Request; body: unknown }) {
        const rawBody = body instanceof Uint8Array ? body : new Uint8Array()
        const received: CallbackRequest = {
          url: new URL(request.url),
          headers: request.headers,
          rawBody,
          body: new TextDecoder().decode(rawBody),
        }
        // Read at request time: the settings are the configuration's, whatever the provider in use.
        const settings = (deps.config.providers as Record<string, unknown>)[plugin.name]
        const answer = await callback.handle(received, {
          settings,
          publicBaseUrl: deps.config.publicBaseUrl,
          senders: (identity) => deps.senders.callbackSenders(plugin.name, identity),
        })
        if (answer instanceof Response) return answer
        const { reports, inbound } = answer
        const stored =
          inbound.length > 0
            ? await storeInbound(deps.sql, plugin.name, inbound, { timezone: deps.config.timezone, words: deps.config })
            : []
        if (answer.consent?.length) {
          await storeConsent(deps.sql, deps.config.timezone, answer.consent)
          eventsCommitted(deps) // its contact.opted_out / contact.opted_in events
        }
        if (stored.some((id) => id !== null)) {
          // A new inbound message may have recorded message.received events, and media to fetch.
          eventsCommitted(deps)
          deps.wake('inbound-media')
        }
        const outcome = await receive(reports)
        // Signed, but naming a message its signer's senders did not send: an attack with one tenant's own
        // credentials, or a misconfigured webhook. The operator should hear of it; nothing changed.
        for (const sid of outcome.refused)
          log.warn('status report refused: a message of another sender', { provider: plugin.name, path, sid })
        if (outcome.events > 0) eventsCommitted(deps, { notified: notifies(deps) })
        // The send may have stored a SID between the check and this commit: the worker looks at once.
        if (outcome.parked > 0) deps.wake('parked-reports')
        const changed = outcome.changed > 0
        const fresh = stored.filter((id) => id !== null).length
        if (callback.reply) return callback.reply({ changed, inbound: fresh })
        return ok(inbound.length > 0 ? { changed, inbound: fresh } : { changed })
      }
      const ownAnswers = 'responses' in callback.detail
      const detail = {
        tags: ['Provider callbacks'],
        security: [],
        ...callback.detail,
        ...(ownAnswers ? { responses: { ...(callback.detail.responses as object), ...documentedErrors(callback.errors) } } : {}),
      }
      const response = ownAnswers ? undefined : { 200: envelopeOf(Answer), ...errorsOf(...callback.errors) }
      if (callback.method === 'GET') app.get(path, handle, { response, detail })
      else {
        app.post(path, handle, {
          // The handler needs the body exactly as sent, not a parsed object (the shell leaves
          // /provider/ bodies alone).
          parse: ({ request }) => readRaw(request),
          response,
          detail,
        })
      }
    }
  }
  return app
}
