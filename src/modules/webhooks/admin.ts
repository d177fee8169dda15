// The operator's side of webhooks: deliveries of a key, their attempts, replay, a test event, and the
// live stream of a key's events (`admin webhook listen`).

import { readSql } from '../../http/reads'
import { t } from 'elysia'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { UNTIMED } from '../../http/routes'
import { badShape, ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { IdParams, listOf, PageQuery } from '../../http/models'
import { Attempt, DeliveriesQuery, Delivery, QueuedTestEvent, Replayed, ReplaySinceBody, SignedEvent, TestEventBody } from './model'
import { accountOfKey, getDelivery, listAttempts, listDeliveries, replayDelivery, replayFailedSince } from './deliveries'
import { LISTEN_SECONDS, listenStream, signedTestEvent, startListening } from './listen'
import { sendTestEvent } from './events'
import { dateRange, page, requireTimestamp } from '../../http/values'
import { formatTimes } from '../../lib/time'
import { audit } from '../users/service'

const tags = ['Admin']

export const webhooksAdmin = (deps: Deps) => {
  const { sql } = deps
  const tz = deps.config.timezone
  return adminRoutes(deps.config)
    .get(
      '/keys/:id/deliveries',
      async ({ params, query, request }) =>
        ok(formatTimes(await listDeliveries(await readSql(deps, request), params.id, query.status, page(query), dateRange(query, tz)), tz)),
      {
        params: IdParams,
        query: DeliveriesQuery,
        response: { 200: envelopeOf(listOf(Delivery)), ...errorsOf(400, 401, 404, 422) },
        detail: {
          tags,
          summary: "A key's webhook deliveries (every event type; `event` says which), newest first",
          description: '`date_from`/`date_to` bound `created_at`, both inclusive (to the whole second), in the service time zone.',
        },
      },
    )
    .get('/deliveries/:id', async ({ params }) => ok(formatTimes(await getDelivery(sql, params.id), tz)), {
      params: IdParams,
      response: { 200: envelopeOf(Delivery), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: 'One webhook delivery' },
    })
    .get('/deliveries/:id/attempts', async ({ params, query }) => ok(formatTimes(await listAttempts(sql, params.id, page(query)), tz)), {
      params: IdParams,
      query: PageQuery,
      response: { 200: envelopeOf(listOf(Attempt)), ...errorsOf(400, 401, 404, 422) },
      detail: { tags, summary: "A delivery's attempts, newest first: HTTP status, latency and error of each" },
    })
    .post(
      '/deliveries/:id/replay',
      async ({ params, actor }) => {
        const replayed = await replayDelivery(sql, deps.clock, params.id)
        await audit(sql, {
          ...actor,
          accountId: await accountOfKey(sql, replayed.api_key_id),
          action: 'webhook delivery replayed',
          detail: { key_id: replayed.api_key_id, delivery_id: replayed.id },
        })
        return ok(formatTimes(replayed, tz))
      },
      {
        params: IdParams,
        response: { 200: envelopeOf(Delivery), ...errorsOf(400, 401, 404, 409) },
        detail: {
          tags,
          summary: 'Send a delivery again now',
          description:
            'Whatever its status, the delivery becomes `pending`, due now, with its attempt count reset (so it gets the full ' +
            'retry schedule again; attempt numbers in the log start again at 1). The `webhook-id` stays the same, so a receiver ' +
            'that de-duplicates on it treats the replay as a repeat. 409 `CONFLICT` while an attempt is in flight.',
        },
      },
    )
    .post(
      '/keys/:id/deliveries/replay',
      async ({ params, body, actor }) => {
        const replayed = await replayFailedSince(sql, deps.clock, params.id, requireTimestamp(body.since, 'since', tz))
        await audit(sql, {
          ...actor,
          accountId: await accountOfKey(sql, params.id),
          action: 'webhook deliveries replayed',
          detail: { key_id: params.id, since: body.since, replayed: replayed.replayed },
        })
        return ok(replayed)
      },
      {
        params: IdParams,
        body: ReplaySinceBody,
        response: { 200: envelopeOf(Replayed), ...errorsOf(400, 401, 404, 422) },
        detail: {
          tags,
          summary: "Replay a key's failed deliveries created since a time",
          description:
            'Every `failed` delivery of the key created at or after `since` becomes `pending` and due now, as with a single replay. ' +
            'Events of one message are still sent in order among themselves.',
        },
      },
    )
    .post(
      '/keys/:id/webhook/test',
      async ({ params, body, set }) => {
        await accountOfKey(sql, params.id)
        if (body?.deliver === false) return ok(await signedTestEvent(sql, tz, params.id, deps.clock))
        const event = await sendTestEvent(sql, tz, params.id, deps.clock)
        set.status = 201
        return ok(event)
      },
      {
        params: IdParams,
        body: t.Optional(TestEventBody),
        response: { 200: envelopeOf(SignedEvent), 201: envelopeOf(QueuedTestEvent), ...errorsOf(400, 401, 404) },
        detail: {
          tags,
          summary: 'Send a test event',
          description:
            'A `message.status` event of no real message, marked `"test": true` in `data` (`message_sid` and `to` are `"test"`), ' +
            'exactly as the dashboard\'s "Send test event". By default (201) it goes through the outbox like any event: ' +
            "delivered to the key's registered URL (signed, retried, listed among its deliveries) and streamed to the key's " +
            'listeners; a key without a URL but with a listener gets it for the listeners only (`url` null). 404 `NOT_FOUND` ' +
            'when the key does not exist or has neither. With `{"deliver": false}` (200) nothing is recorded or sent: the ' +
            'answer is the signed request (headers and exact body) for the caller to send to a URL of its own.',
        },
      },
    )
    .get(
      '/keys/:id/webhook/listen',
      async ({ params, request }) => {
        await accountOfKey(sql, params.id)
        const last = request.headers.get('last-event-id')
        if (last !== null && !/^\d{1,15}$/.test(last.trim())) throw badShape('Last-Event-ID: must be an event id (a decimal integer)')
        const ready = await startListening(sql, deps.clock, params.id)
        const stream = listenStream(deps, params.id, ready, last === null ? null : Number(last.trim()), request.signal)
        return new Response(stream, {
          headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' },
        })
      },
      {
        params: IdParams,
        response: errorsOf(400, 401, 404),
        detail: {
          ...UNTIMED, // quiet between events, open as long as its client
          tags,
          summary: "Stream a key's events as they happen (server-sent events)",
          description: [
            "What `bun run admin webhook listen` reads: the key's events (those its registration chose; without a registration, its",
            '`message.status` events), as server-sent events, for a developer',
            'to forward to a receiver on their machine. Reading the stream changes no delivery: the registered URL keeps its',
            'own deliveries and attempts.',
            '',
            '- First `event: ready`, `data` = `{key_id, url, signing_secret}`: the registered URL (or null) and, when there is',
            "  none, the key's listen secret (`whsec_...`, kept per key) that events are then signed with; null otherwise",
            "  (events are signed with the registered URL's secret).",
            '- Then one message per event, named by its type (`event: message.status`, `event: message.received`, ...), `id` =',
            '  the event id, `data` = `{id, webhook_id, headers, body}`:',
            '  `body` is the exact delivery body and `headers` its `content-type`, `webhook-id`, `webhook-timestamp` and',
            '  `webhook-signature`, signed when streamed. Send both as they are and Standard Webhooks verification passes.',
            '- Comment lines (`: keepalive`) every 15 s.',
            '',
            'Without `Last-Event-ID` the stream starts with the next event; with it (the id of the last event received) it',
            'resumes after that one, so a reconnect misses nothing (an event may come twice: de-duplicate on `webhook-id`).',
            `While a stream is open, and for ${LISTEN_SECONDS} s after the last one closes, the key's events are recorded`,
            'even when it has no registered URL; those are streamed only, never delivered, and not listed as deliveries.',
          ].join('\n'),
          // The stream is no JSON body: documented by hand, with the error answers the route's schema lists.
          responses: {
            200: {
              description: 'An endless `text/event-stream`',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            ...Object.fromEntries(
              Object.entries(errorsOf(400, 401, 404)).map(([status, schema]) => [
                status,
                { description: schema.description ?? 'Error', content: { 'application/json': { schema } } },
              ]),
            ),
          },
        },
      },
    )
}
