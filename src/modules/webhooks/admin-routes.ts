// The operator's side of webhooks: deliveries of a key, their attempts, and replay.

import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { adminAuth } from '../../http/admin-auth'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { dateRange, page } from '../../lib/validate'
import { IdParams, listOf, PageQuery } from '../../http/models'
import { eventsCommitted } from '../status/notify'
import { Attempt, DeliveriesQuery, Delivery, Replayed, ReplaySinceBody } from './admin-model'
import { getDelivery, listAttempts, listDeliveries, replayDelivery, replayFailedSince } from './admin-service'

const tags = ['Admin']

export const webhookAdminRoutes = (deps: Deps) => {
  const { sql } = deps
  const tz = deps.config.timezone
  return new Elysia({ prefix: '/admin/v1' })
    .use(adminAuth(deps.config))
    .get(
      '/keys/:id/deliveries',
      async ({ params, query }) => ok(await listDeliveries(sql, tz, params.id, query.status, page(query), dateRange(query, tz))),
      {
        params: IdParams,
        query: DeliveriesQuery,
        response: { 200: envelopeOf(listOf(Delivery)), ...errorsOf(400, 401, 404, 422) },
        detail: {
          tags,
          summary: "A key's webhook deliveries (message.status events), newest first",
          description: '`date_from`/`date_to` bound `created_at`, both inclusive (to the whole second), in the service time zone.',
        },
      },
    )
    .get('/deliveries/:id', async ({ params }) => ok(await getDelivery(sql, tz, params.id)), {
      params: IdParams,
      response: { 200: envelopeOf(Delivery), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: 'One webhook delivery' },
    })
    .get('/deliveries/:id/attempts', async ({ params, query }) => ok(await listAttempts(sql, tz, params.id, page(query))), {
      params: IdParams,
      query: PageQuery,
      response: { 200: envelopeOf(listOf(Attempt)), ...errorsOf(400, 401, 404, 422) },
      detail: { tags, summary: "A delivery's attempts, newest first: HTTP status, latency and error of each" },
    })
    .post(
      '/deliveries/:id/replay',
      async ({ params }) => {
        const replayed = await replayDelivery(sql, tz, params.id)
        eventsCommitted(deps)
        return ok(replayed)
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
      async ({ params, body }) => {
        const replayed = await replayFailedSince(sql, tz, params.id, body.since)
        if (replayed.replayed > 0) eventsCommitted(deps)
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
}
