// The providers' status-callback routes: every callback of every registered provider, mounted at
// /provider/<name>/<path> whatever PROVIDER says. Outside /api/v1 and without an API key: each
// provider's own signature check is the authentication. The route reads the body exactly as sent
// (signatures cover the raw bytes), lets the provider verify and parse it, applies the status
// reports it gets back through the forward-only state machine in one transaction (shared with the
// callbacks that arrive meanwhile: group commit), stores the inbound messages it gets back
// (modules/inbound: once each), and answers 200 `{changed, inbound}` (or the provider's own answer,
// e.g. a subscription handshake). The provider names, for every part of a verified callback, the
// sender(s) its signer owns (refusing a callback that names another's number); a status report for a
// message another sender sent changes nothing and is logged as refused. Template notices (Meta's
// template webhooks) change the templates of the senders they name (modules/templates/notices.ts);
// one naming none of its signer's senders changes nothing and is logged as refused.

import { t } from 'elysia'
import { callbackRoutes } from '../../http/groups'
import type { Deps } from '../../deps'
import { ok } from '../../http/errors'
import { CALLBACK_JSON_BOUNDS, MAX_CALLBACK_BODY_BYTES, MAX_CALLBACK_FORM_FIELDS, tooLarge } from '../../http/body'
import { readCapped } from '../../lib/stream'
import { envelopeOf, ErrorEnvelope, errorsOf } from '../../http/openapi'
import { createReportReceiver } from '../status/receiver'
import { storeConsent, storeIdentityChanges, storeInbound, storeStatusLinks } from './service'
import { applyTemplateNotices } from '../templates/notices'
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
  templates: t.Optional(
    t.Integer({
      description:
        "When the request carried template changes (Meta's template webhooks): how many changes of status, category or quality " +
        'were recorded now (a repeat, a stale or an unowned change is not counted)',
    }),
  ),
  health: t.Optional(
    t.Integer({
      description:
        "When the request carried sender health changes (Meta's business_capability_update, account_update, " +
        'phone_number_quality_update): how many changes of a sender were recorded now (a repeat, a stale or an unowned change is not counted)',
    }),
  ),
})

/**
 * The body's bytes, refused (413) as soon as they pass MAX_CALLBACK_BODY_BYTES: nothing has
 * authenticated the sender yet. (A larger declared length was refused by the shell, unread.)
 */
async function readRaw(request: Request): Promise<Uint8Array> {
  const bytes = await readCapped(request.body, MAX_CALLBACK_BODY_BYTES)
  if (bytes === null) throw tooLarge(MAX_CALLBACK_BODY_BYTES)
  return bytes
}

// What the OpenAPI documents say of a callback's 413, and its description of the body's limits.
const TooLarge = t.Object(ErrorEnvelope.properties, {
  description: `The body is over ${MAX_CALLBACK_BODY_BYTES} bytes (4 MiB, the cap of provider callbacks): refused before it is read whole`,
  examples: [
    {
      success: false,
      error: `request body exceeds ${MAX_CALLBACK_BODY_BYTES} bytes`,
      code: 'PAYLOAD_TOO_LARGE',
      request_id: '0b6f2d1e-8c1a-4c55-9a53-3f1f7e0a9c21',
    },
  ],
})
function bodyRules(detail: Record<string, unknown>): string {
  const form = 'application/x-www-form-urlencoded' in ((detail.requestBody as { content?: object } | undefined)?.content ?? {})
  const bound = form
    ? `a form with more than ${MAX_CALLBACK_FORM_FIELDS} fields`
    : `a JSON body nested deeper than ${CALLBACK_JSON_BOUNDS.depth} levels or with more than ${CALLBACK_JSON_BOUNDS.values} values`
  return (
    `A body over ${MAX_CALLBACK_BODY_BYTES} bytes (4 MiB) is refused 413 \`PAYLOAD_TOO_LARGE\` before it is read whole (a larger ` +
    `Content-Length before a byte is read); ${bound} is 400 \`VALIDATION_ERROR\` naming the bound.`
  )
}

/** A callback's error answers: its own statuses, and a POST's 413. */
function errorsOfCallback(callback: Callback<unknown>): Record<number, typeof ErrorEnvelope> {
  const errors = errorsOf(...callback.errors)
  if (callback.method === 'POST') errors[413] = TooLarge
  return errors
}

/** Error answers as the OpenAPI document lists them, for callbacks that document their own answers. */
function documentedErrors(errors: Record<number, typeof ErrorEnvelope>) {
  return Object.fromEntries(
    Object.entries(errors).map(([status, schema]) => [
      status,
      { description: schema.description ?? 'Error', content: { 'application/json': { schema } } },
    ]),
  )
}

export function providerCallbacks(deps: Deps) {
  const app = callbackRoutes('provider-callbacks')
  const receive = createReportReceiver(deps.sql, deps.config.timezone, { clock: deps.clock })
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
        // A changed number or user id first: the messages of the same notification are stored under the new key.
        if (answer.identities?.length) await storeIdentityChanges(deps.sql, deps.clock, answer.identities)
        const stored =
          inbound.length > 0
            ? await storeInbound(deps.sql, plugin.name, inbound, { timezone: deps.config.timezone, words: deps.config, clock: deps.clock })
            : []
        if (answer.consent?.length) await storeConsent(deps.sql, deps.clock, deps.config.timezone, answer.consent)
        const templates = answer.templates?.length
          ? await applyTemplateNotices(
              deps.sql,
              { clock: deps.clock, timezone: deps.config.timezone, provider: plugin.name },
              answer.templates,
            )
          : null
        // Signed, but about an account none of its signer's senders is in: nothing changed.
        if (templates?.refused)
          log.warn('template change refused: an account of no sender that signed it', {
            provider: plugin.name,
            path,
            refused: templates.refused,
          })
        // A sender's health (Meta's capability, account and quality webhooks): only the signer's own senders.
        const health = answer.health?.length ? await deps.senders.applyHealth(answer.health) : null
        if (health?.refused)
          log.warn('sender health change refused: an account or number of no sender that signed it', {
            provider: plugin.name,
            path,
            refused: health.refused,
          })
        // A new inbound message may have media to fetch. (Its message.received events, like every
        // event, announce themselves at commit: modules/webhooks/notify.ts.)
        if (stored.some((id) => id !== null)) deps.wake('inbound-media')
        // A status naming both of its recipient's ids links them before it applies: its event carries the user id.
        await storeStatusLinks(deps.sql, deps.clock, reports)
        const outcome = await receive(reports)
        // Signed, but naming a message its signer's senders did not send: an attack with one tenant's own
        // credentials, or a misconfigured webhook. The operator should hear of it; nothing changed.
        for (const sid of outcome.refused)
          log.warn('status report refused: a message of another sender', { provider: plugin.name, path, sid })
        // The send may have stored a SID between the check and this commit: the worker looks at once.
        if (outcome.parked > 0) deps.wake('parked-reports')
        const changed = outcome.changed > 0
        const fresh = stored.filter((id) => id !== null).length
        if (callback.reply) return callback.reply({ changed, inbound: fresh })
        return ok({
          changed,
          ...(inbound.length > 0 ? { inbound: fresh } : {}),
          ...(templates ? { templates: templates.changed } : {}),
          ...(health ? { health: health.changed } : {}),
        })
      }
      const ownAnswers = 'responses' in callback.detail
      const errors = errorsOfCallback(callback)
      const detail = {
        tags: ['Provider callbacks'],
        security: [],
        ...callback.detail,
        ...(callback.method === 'POST' ? { description: `${callback.detail.description ?? ''} ${bodyRules(callback.detail)}`.trim() } : {}),
        ...(ownAnswers ? { responses: { ...(callback.detail.responses as object), ...documentedErrors(errors) } } : {}),
      }
      const response = ownAnswers ? undefined : { 200: envelopeOf(Answer), ...errors }
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
