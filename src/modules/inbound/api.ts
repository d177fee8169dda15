// The integrator's inbound routes (extensions): GET /inbound, GET /inbound/{id}, GET /conversations/{phone}.

import { readSql } from '../../http/reads'
import { t } from 'elysia'
import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { ApiError, ok } from '../../http/errors'
import { DECIMAL, IdParams, listFields, listOf } from '../../http/models'
import { envelopeOf, ErrorEnvelope, errorsOf } from '../../http/openapi'
import {
  AccountInboundMessageView,
  ConversationItem,
  ConversationParams,
  ConversationQuery,
  ConversationWindow,
  InboundListQuery,
  MarkedRead,
  MarkReadBody,
} from './model'
import { markInboundRead, repliesOf, withManners, withOutboundReactions } from './manners'
import { conversation, getInbound, listInbound } from './service'
import { serveMedium, withMedia } from './media-view'
import { dateRange } from '../../http/values'
import { formatTimes } from '../../lib/time'

const tags = ['Inbound']
const accountRule =
  'An inbound message belongs to the account that last sent a message to that phone through the number it reached; else, ' +
  "for a stored sender, to the account that has it as its default, else the first account given it; else (the deployment's " +
  'number, and nobody wrote to that phone) to no account (operators see it in `GET /admin/v1/inbound`).'

const MEDIA_RULE =
  'Media (image, document, audio, video, sticker) are fetched from the provider once and kept: `content.media_url` is this ' +
  "service's own stable link, `{PUBLIC_BASE_URL}/api/v1/inbound/{id}/media` (Twilio's several media: `content.media[n].media_url`, " +
  '`/media/{n}`), with `media_status` (`pending` while it is fetched, `kept`, `failed`), `media_size` and `media_sha256` (once kept), ' +
  "`media_error` (why it failed) and `mime_type` (once kept, the type checked); `media_id` stays the provider's id. Once a medium " +
  "is kept, the provider's URL no longer appears, in `raw` neither."

const MANNERS_RULE =
  "`reply_to` (extension) names the message it quotes (the provider's id, and our `id` and `direction` when the account has " +
  "that message); `reactions` each side's current reaction to it; `read_at` when the account marked it read " +
  '(`POST /inbound/{id}/read`). An inbound reaction is an item of its own (`type: reaction`, `content.message_id`) and shows in ' +
  'the `reactions` of the message it reacts to.'

const MEDIA_ROUTE =
  "The medium's bytes as received from the customer, byte for byte, with its `Content-Type`, `Content-Length`, `ETag` (its " +
  'sha256; `If-None-Match` gets 304), `Cache-Control: private, max-age=31536000, immutable` (it never changes), ' +
  "`X-Content-Type-Options: nosniff` and `Content-Disposition` (`attachment` with the customer's file name, sanitised, for a " +
  'document; `inline` otherwise). While it is being fetched: 409 `MEDIA_PENDING` with `Retry-After`; when it could not be kept ' +
  '(over `MEDIA_MAX_BYTES`, a type not allowed, first bytes not of its type, the provider refused or kept failing): 410 ' +
  "`MEDIA_FAILED` with the reason. Another account's message, or a medium it does not have, is 404 `NOT_FOUND`."

// A medium's number as an id is read: decimal digits (else 400); one no message can have (past 9) is 404.
const MediaParams = t.Object({
  id: IdParams.properties.id,
  n: t
    .Transform(t.String({ pattern: DECIMAL, description: 'The medium: 0 to 9', examples: ['1'] }))
    .Decode((text) => {
      if (!/^\d$/.test(text)) throw new ApiError('NOT_FOUND', `no medium ${text.slice(0, 30)}: an inbound message has media 0 to 9`)
      return Number(text)
    })
    .Encode((value) => String(value)),
})

/** A medium's error answers: the usual ones, and its own 409 (being fetched). */
const mediaErrors = () => ({
  ...errorsOf(400, 401, 404, 410),
  409: t.Object(ErrorEnvelope.properties, {
    description: 'MEDIA_PENDING: the medium is being fetched from the provider; `Retry-After` says when to ask again',
    examples: [
      {
        success: false,
        error: 'medium 0 of inbound message 12 is being fetched from the provider; try again shortly',
        code: 'MEDIA_PENDING',
        request_id: '0b6f2d1e-8c1a-4c55-9a53-3f1f7e0a9c21',
      },
    ],
  }),
})

/** The documented answers of a medium: its bytes, or the envelope's errors. */
const mediaResponses = (): Record<string, any> => ({
  200: {
    description: 'The bytes, with the headers above',
    headers: {
      'Content-Disposition': { schema: { type: 'string' }, description: 'attachment (documents) or inline, with a sanitised file name' },
      ETag: { schema: { type: 'string' }, description: "The medium's sha256 in quotes" },
    },
    content: {
      'application/octet-stream': { schema: { type: 'string', description: "The bytes; the real Content-Type is the medium's" } },
    },
  },
  304: { description: '`If-None-Match` named its ETag' },
  ...Object.fromEntries(
    Object.entries(mediaErrors()).map(([status, schema]) => [
      status,
      { description: schema.description ?? 'Error', content: { 'application/json': { schema } } },
    ]),
  ),
})

export const inboundApi = (deps: Deps) => {
  const medium = (accountId: number, id: number, n: number, request: Request) =>
    serveMedium(deps.sql, accountId, id, n, request.headers.get('if-none-match'))
  return apiRoutes()
    .get(
      '/inbound',
      async ({ query, principal, request }) => {
        const sql = await readSql(deps, request)
        const tz = deps.config.timezone
        const list = formatTimes(await listInbound(sql, principal.accountId, query, dateRange(query, tz)), tz)
        const items = await withMedia(sql, deps.config.publicBaseUrl, list.items)
        return ok({ ...list, items: await withManners(sql, principal.accountId, tz, items) })
      },
      {
        query: InboundListQuery,
        response: { 200: envelopeOf(listOf(AccountInboundMessageView)), ...errorsOf(400, 401, 422) },
        detail: {
          tags,
          summary: 'List inbound messages (extension)',
          description:
            "What customers wrote to the account's numbers (Meta's webhook, Twilio's incoming message webhook, the simulator), each " +
            'stored once. Newest first by `received_at` (ties by id, higher first). `offset` counts records; `has_more` says whether ' +
            "records follow this page. `phone` keeps one customer's; `date_from`/`date_to` bound `received_at`, both inclusive, in " +
            'the service time zone (422 for a malformed one). ' +
            MEDIA_RULE +
            ' ' +
            MANNERS_RULE +
            ' ' +
            accountRule,
        },
      },
    )
    .get(
      '/inbound/:id',
      async ({ params, principal }) => {
        const message = formatTimes(await getInbound(deps.sql, principal.accountId, params.id), deps.config.timezone)
        const [withIt] = await withMedia(deps.sql, deps.config.publicBaseUrl, [message])
        return ok((await withManners(deps.sql, principal.accountId, deps.config.timezone, [withIt!]))[0]!)
      },
      {
        params: IdParams,
        response: { 200: envelopeOf(AccountInboundMessageView), ...errorsOf(400, 401, 404) },
        detail: {
          tags,
          summary: 'One inbound message (extension)',
          description: `By its \`id\`. ${MANNERS_RULE} Another account's, or an unknown id, is 404 \`NOT_FOUND\`.`,
        },
      },
    )
    .post(
      '/inbound/:id/read',
      async ({ params, body, principal }) => ok(await markInboundRead(deps, principal.accountId, params.id, body?.typing === true)),
      {
        params: IdParams,
        body: t.Optional(MarkReadBody),
        response: { 200: envelopeOf(MarkedRead), ...errorsOf(400, 401, 404, 415, 422, 502) },
        detail: {
          tags,
          summary: "Mark a customer's message read, with a typing indicator (extension)",
          description:
            "Marks the account's inbound message read at the provider of the number it reached (the customer sees blue ticks on it " +
            'and on the ones before it), and with `{"typing": true}` shows the customer a typing indicator until the reply or 25 ' +
            "seconds: Meta's `status: read` with `typing_indicator`; Twilio's typing indicator (public beta), which marks read too " +
            'and is its only way (through a Twilio sender `typing` must be true, else 422); the simulator records it. Never charged: ' +
            "the balance and the ledger do not move. The body is optional. Another account's message, or an unknown id, is 404 " +
            "`NOT_FOUND`; the provider's refusal (an unknown or too old message) is 502 `BAD_GATEWAY` with its words. `read_at` " +
            'then shows in GET /inbound.',
        },
      },
    )
    .get(
      '/conversations/:phone',
      async ({ params, query, principal }) => {
        const talk = formatTimes(await conversation(deps.sql, deps.clock, principal.accountId, params.phone, query), deps.config.timezone)
        const inbound = await withMedia(
          deps.sql,
          deps.config.publicBaseUrl,
          talk.items.filter((i) => i.direction === 'inbound'),
        )
        const byId = new Map(inbound.map((i) => [i.id, i]))
        const tz = deps.config.timezone
        const items = await withOutboundReactions(
          deps.sql,
          principal.accountId,
          tz,
          talk.items.map((i) => (i.direction === 'inbound' ? byId.get(i.id)! : i)),
        )
        const replies = await repliesOf(deps.sql, principal.accountId, [...new Set(items.flatMap((i) => (i.reply_to ? [i.reply_to] : [])))])
        return ok({ ...talk, items: items.map((i) => ({ ...i, reply_to: i.reply_to ? replies.get(i.reply_to)! : null })) })
      },
      {
        params: ConversationParams,
        query: ConversationQuery,
        response: {
          200: envelopeOf(
            t.Object({
              phone: t.String({
                description:
                  "The customer's key: the phone in + form, or the WhatsApp user id of a customer known only by one (a user id linked " +
                  "to a phone through one of the account's numbers answers with the phone)",
              }),
              user_id: t.Union([t.String(), t.Null()], {
                description: "Extension: the customer's WhatsApp business-scoped user id, when a provider named one; null otherwise",
              }),
              window: ConversationWindow,
              items: t.Array(ConversationItem),
              ...listFields,
            }),
          ),
          ...errorsOf(400, 401, 422),
        },
        detail: {
          tags,
          summary: "A contact's conversation, both ways (extension)",
          description:
            "The account's messages to the phone (as in `GET /messages`) and the phone's inbound messages to the account, oldest " +
            'first (`at`; ties: outbound first, then by id), paginated with `limit`/`offset` and `has_more`. `window` says whether ' +
            "WhatsApp's 24-hour customer-service window with a sender is open (free-form messages allowed) and until when: 24 " +
            "hours after the phone's latest message to that sender. The window is per sender: `from` (an id or number of the " +
            "account's senders; 422 for another) chooses it, by default the account's default sender, else the deployment's " +
            "number. A phone that is not a number is 422. An inbound medium's `media_url` (and `content`) are as in `GET /inbound`.",
        },
      },
    )
    .get('/inbound/:id/media', async ({ params, principal, request }) => medium(principal.accountId, params.id, 0, request), {
      params: IdParams,
      response: { ...mediaErrors() },
      detail: { tags, summary: "An inbound message's medium (extension)", description: MEDIA_ROUTE, responses: mediaResponses() },
    })
    .get('/inbound/:id/media/:n', async ({ params, principal, request }) => medium(principal.accountId, params.id, params.n, request), {
      params: MediaParams,
      response: { ...mediaErrors() },
      detail: {
        tags,
        summary: 'One of the media of an inbound message (extension)',
        description: `Medium \`n\` (0 to 9: Twilio's \`MediaUrl0\`..\`MediaUrl9\`; \`/media/0\` is \`/media\`). ${MEDIA_ROUTE}`,
        responses: mediaResponses(),
      },
    })
}
