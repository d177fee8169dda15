import { t } from 'elysia'
import { readSql } from '../../http/reads'
import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { UNTIMED } from '../../http/routes'
import { badValue, ok } from '../../http/errors'
import { MAX_BULK_MESSAGES } from '../../lib/validate'
import { withIdempotency } from '../../http/idempotency'
import { envelopeOf, errorsOf, jsonBody, SendLimited } from '../../http/openapi'
import {
  BULK_EXAMPLES,
  BulkBody,
  BulkResult,
  DocumentedBulkBody,
  DocumentedQuoteBody,
  DocumentedSendBody,
  IdempotencyHeaders,
  ListQuery,
  QuoteBody,
  QuoteResult,
  Message,
  SEND_EXAMPLES,
  SendBody,
  SendQueued,
  SendRefused,
  SendResult,
} from './model'
import { listOf } from '../../http/models'
import { sendOne } from './service'
import { sendBulk } from './bulk'
import { getMessage, listMessages } from './queries'
import { quoteEntries } from './admission'
import { requireContentShape } from './content'

const tags = ['Messages']
const templateNote =
  ' **Extension, approved templates**: instead of `body`, `template_id` (a template of the account) and `variables` ' +
  '(a string for every placeholder the template uses, and no other). Exactly one of `body` and `template_id` is required: both, ' +
  'neither, `variables` without `template_id`, `media_url` with it, or a value of the wrong JSON type is 400 naming the field; ' +
  "a template that is not the account's, a missing or unknown variable, or a rendered text that is empty or over 4096 characters is 422. " +
  'When the template is bound to an approved template of the provider in use (Twilio Content SID, Meta template), the provider is ' +
  'sent that template with the values in the bound order, which WhatsApp requires to start a conversation; otherwise the rendered ' +
  'text goes as free-form text. Charged like any message; the message records the rendered text as `body`, with `template_id` and ' +
  '`provider_template`. A WhatsApp template (`GET /templates`) is checked before anything is charged: 422 `TEMPLATE_NOT_APPROVED` ' +
  "when it is not approved (its status and Meta's reason named) or belongs to another sender than `from`'s; 422 `VALIDATION_ERROR` " +
  "naming the parameter (`variables.2`, `header`, `buttons[0].value`) missing, unknown, empty or past WhatsApp's limits; 400 for " +
  '`header` or `buttons` without `template_id`. A refusal by the provider all the same (Meta 132000, 132001, 132015, 131008…) is ' +
  '502 `BAD_GATEWAY`, refunded. In a bulk each entry fails on its own with those codes (`results[].code`).'
const richNote =
  ' **Extension, rich messages**: `type` (image, video, audio, document, sticker, location or interactive) with the object ' +
  'named after it, as the WhatsApp Cloud API names them (see the request schema and its examples): media with `link` and ' +
  '`caption` (`filename` on documents), a location, reply buttons (`interactive.type` button, 1 to 3) or a list ' +
  '(`interactive.type` list, up to 10 rows); with `template_id`, `header` gives the approved template its header media. ' +
  'A wrong shape is 400 naming the field; a value past a limit is 422 naming it: https media links, captions up to 1024, ' +
  'button titles up to 20 and ids up to 256 (unique), list button text up to 20, row titles up to 24, descriptions up to 72, ' +
  'section titles up to 24, interactive body up to 1024, latitude and longitude in range. A type the sender provider cannot ' +
  "send (Twilio: an account template's header media, document file names and captions; its button ids up to 200, list rows " +
  "with a description) is 422 `VALIDATION_ERROR` naming it. A Twilio sender's WhatsApp template keeps its media URL in the " +
  'Content template: one with a variable (`https://cdn.example.com/invoices/{{1}}`) takes a `header.link` that starts with ' +
  "the URL's static prefix (the rest fills the variable), or a `header.media_id` when it was approved with this service's own " +
  'media URL (`{PUBLIC_BASE_URL}/media/{{1}}`); another link, or any header for a template whose media is fixed, is 422 naming ' +
  '`header.link` (or `header`) and the prefix. Nothing is charged for any of these. A rich message costs one message; ' +
  '`GET /messages` shows its `type`, `content` and a text rendering as `body`. Replies to buttons and lists come back as ' +
  'inbound messages with the chosen id.'
const idempotencyNote =
  ' Send an `Idempotency-Key` header to make retries safe: a repeat within 24 h replays the first answer and charges nothing; ' +
  'a replayed answer carries the header `idempotent-replayed: true`; ' +
  'the same key with another body is 422 `IDEMPOTENCY_KEY_REUSED`; a repeat while the first is running is 409 `CONFLICT`. ' +
  'If the first request died mid-way (a crash), a repeat gets its final answer once its messages have been handed over or refunded; ' +
  'so does a repeat of a request that answered 409 because some of its messages were still being handed over elsewhere (a 409 is never stored as the answer).'

/** A send answered `queued` is a 202, replays included. */
const queuedIs202 = (answer: { status: string }) => (answer.status === 'queued' ? 202 : 200)

export const messagesApi = (deps: Deps) =>
  apiRoutes()
    .post(
      '/messages/send',
      async ({ body, principal, headers, set }) => {
        const answer = await withIdempotency(
          deps.sql,
          deps.clock,
          principal.accountId,
          headers['idempotency-key'] ?? null,
          'send',
          body,
          (token) => sendOne(deps, principal, body, token),
          queuedIs202,
        )
        if (answer.data.status === 'queued') {
          set.status = 202
          return answer as { success: true; data: SendQueued }
        }
        return answer as { success: true; data: SendResult }
      },
      {
        body: SendBody,
        headers: IdempotencyHeaders,
        response: {
          200: envelopeOf(SendResult),
          202: envelopeOf(SendQueued),
          ...errorsOf(400, 401, 402, 409, 422),
          429: SendLimited,
          502: SendRefused,
        },
        detail: {
          ...UNTIMED, // it answers once the provider has: a slow provider may take longer than the idle timeout
          requestBody: jsonBody(DocumentedSendBody, SEND_EXAMPLES),
          tags,
          summary: 'Send one message',
          description:
            "Takes the message's slot at the sender's pace (when the pace cannot take it within SEND_WAIT_MS, 10 s: 429 " +
            '`RATE_LIMITED` with `Retry-After`, nothing charged), charges the current price, hands the message to the provider and ' +
            'answers `sent` with its SID. A message the provider throttles stays charged and is tried again after its ' +
            '`Retry-After`; still throttled SEND_WAIT_MS after the first throttle, the answer is 202 `queued` with its `id`, and ' +
            'its outcome comes as a `message.status` event with `previous_status: "queued"` (sent, or failed and refunded when ' +
            '`validity_seconds` ran out). ' +
            '**Extension, the messaging limit**: a business-initiated message (its recipient has not written to the sender in the ' +
            "last 24 hours) past the sender's messaging limit (unique recipients per rolling 24 hours: its tier, or its portfolio's) " +
            'is 429 `MESSAGING_LIMIT` before the pace and the charge, with `Retry-After` until the oldest recipient counted frees; ' +
            'a recipient counted already in the last 24 hours uses no more of it. ' +
            '402 `INSUFFICIENT_BALANCE` when the balance cannot pay, 402 `SPEND_CAP_REACHED` when the charge would take what the ' +
            "API key was charged today past its daily spend cap (set by an operator; the service time zone's day; refunds give no " +
            'room back): nothing is charged. ' +
            "If the provider refuses or fails, the charge is refunded and the answer is 502 `BAD_GATEWAY` with the message's `id` " +
            '(it stays listed in `GET /messages` under that `id`, `failed`, `refunded: true`, with `message_sid` null). ' +
            'A recipient who opts out while the charged message still waits for its hand-off (its slot at the pace, a retry after ' +
            'a throttle) stops it: never handed over, refunded, answered 422 `RECIPIENT_OPTED_OUT` with its `id` (or, once answered ' +
            '`queued`, a `failed` event whose `error_message` begins with `RECIPIENT_OPTED_OUT`).' +
            templateNote +
            richNote +
            idempotencyNote,
        },
      },
    )
    .post(
      '/messages/bulk',
      ({ body, principal, headers }) =>
        withIdempotency(deps.sql, deps.clock, principal.accountId, headers['idempotency-key'] ?? null, 'bulk', body, (token) =>
          sendBulk(deps, principal, body, token),
        ),
      {
        body: BulkBody,
        headers: IdempotencyHeaders,
        response: { 200: envelopeOf(BulkResult), ...errorsOf(400, 401, 402, 409, 422) },
        detail: {
          ...UNTIMED, // it answers once every entry has an outcome: minutes behind a slow provider
          requestBody: jsonBody(DocumentedBulkBody, BULK_EXAMPLES),
          tags,
          summary: 'Send up to 1000 messages',
          description:
            'A shape error anywhere (400) or an empty list or more than 1000 entries (422) rejects the whole request. ' +
            'An entry whose `to` or `body` is not acceptable fails on its own (`code: VALIDATION_ERROR`) and is not charged. ' +
            'Entries may use `template_id` and `variables` instead of `body`, as in `POST /messages/send`: their shape errors ' +
            "reject the request (400), their value errors fail the entry (422 rules, `code: VALIDATION_ERROR`); the request's " +
            'templates are read at once. Entries may be rich messages (`type` and its object), as in `POST /messages/send`: ' +
            "a shape error rejects the request (400); a limit, or a type the entry's sender cannot send, fails that entry " +
            'uncharged (`code: VALIDATION_ERROR`), the others go. ' +
            "Entries that are business-initiated (the recipient has not written to the sender in the last 24 hours) past their sender's " +
            'messaging limit fail on their own, uncharged (`code: MESSAGING_LIMIT`, in request order: those that fit go). ' +
            'All valid entries are charged together (402 for the whole request if the balance cannot pay them all, ' +
            'or `SPEND_CAP_REACHED` if they would take what the API key was charged today past its daily spend cap), ' +
            'then handed to the provider; every refused entry is refunded (`code: BAD_GATEWAY`), and so is an entry whose recipient ' +
            'opts out before it is handed over (`code: RECIPIENT_OPTED_OUT`, with its `id`: never handed over). ' +
            '`results` keeps the request order; the answer waits for every outcome, up to BULK_WAIT_MS (30 s): entries still ' +
            'waiting then (the provider throttles them, or the pace is busy) are answered `queued` with their `id`, counted in ' +
            '`queued`, and their outcome comes as a `message.status` event with `previous_status: "queued"`.' +
            idempotencyNote,
        },
      },
    )
    .post(
      '/messages/quote',
      async ({ body, principal }) => {
        const single = !('messages' in body)
        const entries = single ? [body] : body.messages
        if (entries.length === 0) throw badValue('messages: must contain at least 1 message')
        if (entries.length > MAX_BULK_MESSAGES)
          throw badValue(`messages: must contain at most ${MAX_BULK_MESSAGES} messages (got ${entries.length})`)
        entries.forEach((entry, index) => requireContentShape(entry, single ? '' : `messages[${index}].`))
        return ok(await quoteEntries(deps, principal.accountId, principal.keyId, entries, (index) => (single ? '' : `messages[${index}].`)))
      },
      {
        body: QuoteBody,
        response: { 200: envelopeOf(QuoteResult), ...errorsOf(400, 401, 422) },
        detail: {
          requestBody: jsonBody(DocumentedQuoteBody, { ...BULK_EXAMPLES, ...SEND_EXAMPLES }),
          tags,
          summary: 'Quote a send or a bulk: what would go, and what it would cost',
          description:
            '**Extension.** Takes the body of `POST /messages/bulk` (`{messages: [...]}`) or of `POST /messages/send`, and answers for ' +
            'each entry, in order, whether it would be sent now (`would_send`), the `code` it would fail with when not ' +
            '(`VALIDATION_ERROR`, `SENDER_DISABLED`, `TEMPLATE_NOT_APPROVED`, `RECIPIENT_OPTED_OUT`, `WINDOW_CLOSED`, `PRICE_ABOVE_MAX`, ' +
            '`MESSAGING_LIMIT`, `SPEND_CAP_REACHED`), its `category` and `price`; then `total_cost`, the cost by category and whether ' +
            'the balance covers it. The rules are the ones the send and the bulk apply, in the same order (README, "Quote and ' +
            'admission"). Nothing is charged, nothing handed over, no pace slot and no messaging-limit use is taken: a bulk made ' +
            'right after with the same body does what the quote said, entry by entry, unless something changed in between ' +
            "(an opt-out, a customer's message, a price). Shape errors are 400 and a list of more than 1000 entries 422, as for the bulk.",
        },
      },
    )
    .get(
      '/messages',
      async ({ query, principal, request }) => ok(await listMessages({ ...deps, sql: await readSql(deps, request) }, principal, query)),
      {
        query: ListQuery,
        response: {
          200: envelopeOf(listOf(Message)),
          ...errorsOf(400, 401, 422),
        },
        detail: {
          tags,
          summary: 'List messages',
          description:
            'Newest first (ties by id, higher first). `offset` counts records; `has_more` says whether records follow this page. ' +
            '`date_from`/`date_to` bound `sent_at`, both inclusive, in the service time zone. Messages still being handed to the provider ' +
            'are not listed. `cost` is what was charged; `refunded: true` means it was given back, so the sum of `cost` over the ' +
            'messages that are not refunded is what they cost.',
        },
      },
    )
    .get('/messages/:message_sid', async ({ params, principal }) => ok(await getMessage(deps, principal, params.message_sid)), {
      params: t.Object({ message_sid: t.String({ description: 'Provider message SID' }) }),
      response: { 200: envelopeOf(Message), ...errorsOf(401, 404) },
      detail: {
        tags,
        summary: "One message's current status",
        description:
          'By the `message_id` of a send or bulk result (the provider SID). `delivered_at` and `read_at` are null until the message gets there; ' +
          "a failed message carries the provider's `error_code` and `error_message`. `type` and `content` (extensions) say what " +
          'it carried: `text`, `template`, or a rich type with its object as sent (`body` is then a text rendering). ' +
          "An unknown SID, or another account's, is 404 " +
          '`NOT_FOUND`. A message the provider refused has no SID: it is listed in `GET /messages` by its `id`.',
      },
    })
