// Meta's webhooks at /provider/meta/webhook: the subscription handshake (GET) and the status
// notifications (POST). A notification is signed by Meta in X-Hub-Signature-256 (`sha256=` + the hex
// HMAC-SHA256 of the raw body, keyed with the app secret); it is verified, in constant time, with each
// candidate app secret before the body is even parsed, so a request without a valid signature learns
// nothing and changes nothing. One notification can carry many entries, each with many changes, each
// with many statuses: every status of every `messages` change becomes a report, and the route applies
// them all in one transaction; every inbound message (`messages[]`, inbound.ts) is handed to
// modules/inbound, which stores it once. Each change is applied only for the number it names, and only
// when that number belongs to a sender whose app secret verified the body. A template change
// (`message_template_status_update`, `template_category_update`, `message_template_quality_update`)
// is about the WhatsApp Business Account its entry names (`entry.id`): it goes to the senders of that
// account among those whose secret verified the body (and to the default number when its
// META_BUSINESS_ACCOUNT_ID is that account and META_APP_SECRET verified), and to none otherwise, so it
// changes nothing. Changes of other fields are acknowledged and ignored.

import { ApiError, badShape } from '../../http/errors'
import { CALLBACK_JSON_BOUNDS } from '../../http/body'
import { jsonBoundExceeded } from '../../lib/bounds'
import { errorCodeOf, isObject, providerText } from '../http'
import type {
  Callback,
  CallbackAnswer,
  CallbackContext,
  CallbackRequest,
  CallbackSender,
  SenderRef,
  StatusReport,
  Pricing,
  TemplateNotice,
  HealthNotice,
} from '../provider'
import { consentOf, identityChangesOf, inboundOf } from './inbound'
import { userIdOf } from '../../lib/user-id'
import { metaSecrets, type MetaSettings } from './settings'

export const META_WEBHOOK_PATH = '/provider/meta/webhook'

/** The X-Hub-Signature-256 value Meta sends for `body`. */
export function metaSignature(appSecret: string, body: Uint8Array | string): string {
  return `sha256=${hmac(appSecret, body).toString('hex')}`
}

// Bun's built-in hasher, not node:crypto: the configuration lists the providers, and --help stays light.
const hmac = (key: string, data: Uint8Array | string) => Buffer.from(new Bun.CryptoHasher('sha256', key).update(data).digest())

/** Whether `header` is the signature of `body`. Constant-time: the digests compared have a fixed length. */
export function verifyMetaSignature(appSecret: string, body: Uint8Array | string, header: string | null): boolean {
  if (!appSecret || !header) return false
  const match = /^sha256=([0-9a-f]{64})$/i.exec(header.trim())
  if (!match) return false
  return crypto.timingSafeEqual(Buffer.from(match[1]!, 'hex'), hmac(appSecret, body))
}

/** Constant-time equality of two texts (the verify token). */
function sameText(a: string, b: string): boolean {
  return crypto.timingSafeEqual(hmac('compare', a), hmac('compare', b))
}

/** Our report for one of Meta's statuses, or null when it is not one of ours (`deleted`, `warning`, malformed). */
function reportOf(status: unknown, secrets: readonly string[]): StatusReport | null {
  if (!isObject(status) || typeof status.id !== 'string' || !status.id.trim()) return null
  const sid = status.id.trim()
  // A message sent to a user id (issue 32) is reported with `recipient_user_id`, and `recipient_id` when Meta gives the phone too.
  const userId = userIdOf(status.recipient_user_id)
  const recipient = userId
    ? { recipient: { userId, phone: typeof status.recipient_id === 'string' && status.recipient_id ? status.recipient_id : null } }
    : {}
  switch (status.status) {
    case 'sent':
    case 'delivered':
    case 'read':
      return { sid, status: status.status, pricing: pricingOf(status.pricing), ...recipient }
    case 'failed': {
      // "errors": [{"code": 131047, "title": "Re-engagement message", "message": "Re-engagement message", ...}]
      const error = Array.isArray(status.errors) && isObject(status.errors[0]) ? status.errors[0] : {}
      return {
        sid,
        status: 'failed',
        errorCode: typeof error.code === 'number' ? errorCodeOf(error.code) : null,
        errorMessage: providerText(error.title, secrets) ?? providerText(error.message, secrets) ?? 'failed',
        ...recipient,
      }
    }
    default:
      return null
  }
}

/**
 * Meta's `pricing` of a status, as given ({pricing_model, category, type, billable}); null when absent or
 * not an object. Words are kept short and plain (at most 64 characters each): the ledger maps them.
 */
function pricingOf(pricing: unknown): Pricing | null {
  if (!isObject(pricing)) return null
  const word = (v: unknown) => (typeof v === 'string' && /^[a-z_]{1,64}$/.test(v) ? v : null)
  const out = {
    category: word(pricing.category),
    type: word(pricing.type),
    billable: typeof pricing.billable === 'boolean' ? pricing.billable : null,
  }
  return out.category === null && out.type === null && out.billable === null ? null : out
}

/** The status reports of one `messages` change's value, in the order Meta wrote them. */
function reportsOf(value: Record<string, unknown>, secrets: readonly string[]): StatusReport[] {
  const reports: StatusReport[] = []
  for (const status of Array.isArray(value.statuses) ? value.statuses : []) {
    const report = reportOf(status, secrets)
    if (report) reports.push(report)
  }
  return reports
}

const isJson = (contentType: string | null) => contentType?.split(';')[0]!.trim().toLowerCase() === 'application/json'

/** What a verified app secret speaks for: the stored senders of that app, and the default number when it is META_APP_SECRET. */
type Signer = { senders: CallbackSender<MetaSettings>[]; defaultNumber: boolean }

/**
 * Who signed the raw body: every candidate app secret (META_APP_SECRET and each stored Meta sender's,
 * each tried once) is checked over the bytes exactly as received, before anything is parsed. Senders of
 * one app share its secret, so the signer is every sender whose secret verified; which of them a part
 * of the notification is about comes from the number it names (ownerOf). 403 when none verifies.
 */
async function signerOf(request: CallbackRequest, context: CallbackContext<MetaSettings>): Promise<Signer> {
  const signature = request.headers.get('x-hub-signature-256')
  const stored = await context.senders(null)
  const verdicts = new Map<string, boolean>()
  const verifies = (secret: string) => {
    if (secret === '') return false
    if (!verdicts.has(secret)) verdicts.set(secret, verifyMetaSignature(secret, request.rawBody, signature))
    return verdicts.get(secret)!
  }
  const signer = { senders: stored.filter((s) => verifies(s.settings.appSecret)), defaultNumber: verifies(context.settings.appSecret) }
  if (signer.senders.length === 0 && !signer.defaultNumber) {
    throw new ApiError('FORBIDDEN', signature ? 'X-Hub-Signature-256 does not match' : 'X-Hub-Signature-256 header is missing')
  }
  return signer
}

/**
 * The sender a change is about, among those its signer owns: the stored sender whose phone number id
 * the change's metadata names, or the default number for META_PHONE_NUMBER_ID; undefined when the change
 * names no number, or one the signer does not own (it never falls to the default number).
 */
function ownerOf(signer: Signer, value: Record<string, unknown>, environment: MetaSettings): SenderRef | undefined {
  const phoneId = isObject(value.metadata) ? value.metadata.phone_number_id : undefined
  if (typeof phoneId !== 'string' || phoneId === '') return undefined
  const stored = signer.senders.find((s) => s.settings.phoneNumberId === phoneId)
  if (stored) return stored.id
  return signer.defaultNumber && environment.phoneNumberId === phoneId ? null : undefined
}

/** The fields whose changes are about one number (metadata.phone_number_id) and carry what the service applies. */
const NUMBER_FIELDS = new Set(['messages', 'user_preferences'])

/** The fields whose changes are about a template of the WhatsApp Business Account the entry names. */
const TEMPLATE_FIELDS = new Set(['message_template_status_update', 'template_category_update', 'message_template_quality_update'])

/**
 * The senders a template change is about: those of the signer whose WhatsApp Business Account is the
 * entry's id (several numbers of one account each keep their own copy of its templates), and the
 * default number when META_BUSINESS_ACCOUNT_ID names that account and META_APP_SECRET verified.
 * Empty when the account is none of the signer's: the change then changes nothing.
 */
function accountOwners(signer: Signer, waba: unknown, environment: MetaSettings): SenderRef[] {
  const id = typeof waba === 'number' ? String(waba) : waba
  if (typeof id !== 'string' || id === '') return []
  const owners: SenderRef[] = signer.senders.filter((s) => s.settings.businessAccountId === id).map((s) => s.id)
  if (signer.defaultNumber && environment.businessAccountId === id) owners.push(null)
  return owners
}

/** The fields whose changes are about a sender's health (issue 32 §4): the account's, or one of its numbers'. */
const HEALTH_FIELDS = new Set(['business_capability_update', 'account_update', 'phone_number_quality_update'])

/** Every webhook field this service applies: the ones to subscribe the app to (the sender's page lists them). */
export const META_WEBHOOK_FIELDS: readonly string[] = [...NUMBER_FIELDS, ...TEMPLATE_FIELDS, ...HEALTH_FIELDS]

/**
 * The senders a health change is about: those of the signer (only senders whose app secret verified the
 * body) in the WhatsApp Business Account the entry names, and, when the change names a number
 * (`display_phone_number`), only that number's. Never the default number: its health is not kept (give
 * it a stored sender). Empty when none: the change then changes nothing.
 */
function healthOwners(signer: Signer, waba: unknown, displayNumber: unknown): SenderRef[] {
  const id = idText(waba)
  if (id === null) return []
  const digits = typeof displayNumber === 'string' ? displayNumber.replace(/\D/g, '') : ''
  return signer.senders
    .filter((s) => s.settings.businessAccountId === id && (digits === '' || s.number.replace(/\D/g, '') === digits))
    .map((s) => s.id)
}

/** Meta's messaging-limit words (the legacy `current_limit` tiers) as recipients per 24 hours; null: unlimited. */
const TIER_WORDS: Record<string, number | null> = {
  TIER_50: 50,
  TIER_250: 250,
  TIER_1K: 1000,
  TIER_2K: 2000,
  TIER_10K: 10000,
  TIER_100K: 100000,
  TIER_UNLIMITED: null,
}

/** A messaging limit as Meta writes it (an integer, -1 unlimited; or a TIER_ word): a number, null (unlimited), or undefined (not said). */
function limitOf(value: unknown): number | null | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value === -1 ? null : value > 0 ? value : undefined
  if (typeof value !== 'string') return undefined
  const w = value.trim().toUpperCase()
  if (w in TIER_WORDS) return TIER_WORDS[w]
  return /^-?\d{1,9}$/.test(w) ? limitOf(Number(w)) : undefined
}

/** What one health change says, with the number it is about (null: the whole account); null when it says nothing understood. */
function healthNoticeOf(field: string, value: Record<string, unknown>, at: Date | null): { notice: HealthNotice; number: unknown } | null {
  if (field === 'business_capability_update') {
    // max_daily_conversations_per_business: the portfolio's limit; max_daily_conversation_per_phone: its retiring name.
    const business = limitOf(value.max_daily_conversations_per_business)
    const limit = business !== undefined ? business : limitOf(value.max_daily_conversation_per_phone)
    return limit === undefined ? null : { notice: { at, messagingLimit: limit }, number: null }
  }
  if (field === 'account_update') {
    if (word(value.event) !== 'ACCOUNT_RESTRICTION') return null
    // Without restriction_info (or with an empty one) the restrictions are lifted.
    const restrictions = (Array.isArray(value.restriction_info) ? value.restriction_info : [])
      .filter(isObject)
      .map((r) => ({ type: word(r.restriction_type), expiresAt: unixTime(r.expiration) }))
      .filter((r): r is { type: string; expiresAt: Date | null } => r.type !== null)
    return { notice: { at, restrictions }, number: null }
  }
  const event = word(value.event)
  const notice: HealthNotice = { at }
  if (event === 'FLAGGED') notice.flagged = true
  if (event === 'UNFLAGGED') notice.flagged = false
  if (event === 'THROUGHPUT_UPGRADE') notice.throughput = 'high'
  // The portfolio's limit; else the legacy current_limit, unless it speaks of throughput (THROUGHPUT_UPGRADE: TIER_UNLIMITED).
  const business = limitOf(value.max_daily_conversations_per_business)
  const limit = business !== undefined ? business : event === 'THROUGHPUT_UPGRADE' ? undefined : limitOf(value.current_limit)
  if (limit !== undefined) notice.messagingLimit = limit
  const quality = word(value.quality_rating)
  if (quality) notice.quality = quality.toLowerCase()
  return Object.keys(notice).length > 1 ? { notice, number: value.display_phone_number } : null
}

/** An id Meta writes as a number or a string, as text; null when absent. */
const idText = (value: unknown): string | null =>
  typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : typeof value === 'string' && value.trim() ? value.trim() : null

/** A word Meta writes (an event, a category, a score), upper case; null when absent or not a word. */
const word = (value: unknown): string | null =>
  typeof value === 'string' && /^[A-Za-z_]{1,40}$/.test(value.trim()) ? value.trim().toUpperCase() : null

/** Unix seconds as a date; null when absent or not a time. */
const unixTime = (value: unknown): Date | null =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? new Date(Math.round(value) * 1000) : null

/**
 * Why Meta changed a status, as one line: its `reason` (unless NONE), the pause's or lock's
 * `other_info` (title and description) and a rejection's `rejection_info`; null when it gives none.
 */
function reasonOf(value: Record<string, unknown>, secrets: readonly string[]): string | null {
  const parts: (string | null)[] = []
  const reason = providerText(value.reason, secrets)
  if (reason && reason.toUpperCase() !== 'NONE') parts.push(reason)
  if (isObject(value.other_info))
    parts.push(providerText(value.other_info.title, secrets), providerText(value.other_info.description, secrets))
  if (isObject(value.rejection_info))
    parts.push(providerText(value.rejection_info.reason, secrets), providerText(value.rejection_info.recommendation, secrets))
  const text = parts.filter((p): p is string => p !== null).join(': ')
  return providerText(text, secrets)
}

/** What one template change says, or null when it says nothing the service understands (no event, no score). */
function templateNoticeOf(
  field: string,
  value: Record<string, unknown>,
  at: Date | null,
  secrets: readonly string[],
): TemplateNotice | null {
  const which = {
    ref: idText(value.message_template_id),
    name: typeof value.message_template_name === 'string' ? value.message_template_name.slice(0, 512) : null,
    language: typeof value.message_template_language === 'string' ? value.message_template_language.slice(0, 20) : null,
    at,
  }
  if (which.ref === null && (which.name === null || which.language === null)) return null
  if (field === 'message_template_status_update') {
    const event = word(value.event)
    return event ? { ...which, kind: 'status', event, reason: reasonOf(value, secrets) } : null
  }
  if (field === 'template_category_update') {
    const notice = {
      ...which,
      kind: 'category' as const,
      previous: word(value.previous_category),
      next: word(value.new_category),
      correct: word(value.correct_category),
      due: unixTime(value.category_update_timestamp),
    }
    return notice.next !== null || notice.correct !== null ? notice : null
  }
  const score = word(value.new_quality_score)
  return score ? { ...which, kind: 'quality', score } : null
}

async function receive(request: CallbackRequest, context: CallbackContext<MetaSettings>): Promise<CallbackAnswer> {
  // Without an app secret (the environment's or a stored sender's) nothing can be verified, so the
  // endpoint does not exist. With one, it answers whatever PROVIDER says: reports for messages sent
  // before a switch keep arriving.
  if (!context.settings.appSecret && (await context.senders(null)).length === 0) {
    throw new ApiError('NOT_FOUND', `no route for POST ${META_WEBHOOK_PATH}`)
  }
  const signer = await signerOf(request, context)
  if (!isJson(request.headers.get('content-type'))) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json')
  }
  const exceeded = jsonBoundExceeded(request.body, CALLBACK_JSON_BOUNDS)
  if (exceeded) throw badShape(`body: ${exceeded}`)
  let notification: unknown
  try {
    notification = JSON.parse(request.body)
  } catch {
    throw badShape('body is not valid JSON')
  }
  if (!isObject(notification)) throw badShape('body must be a JSON object')
  // Every part must be about a number its signer owns: a change for another app's number, or naming
  // none, refuses the whole notification (one signature never lends a change to another sender or to
  // the default number; nothing of it is applied, so a misconfigured number loses nothing: Meta retries).
  const answer: Required<CallbackAnswer> = { reports: [], inbound: [], consent: [], templates: [], identities: [], health: [] }
  // No secret of the senders that signed stays in a text that is kept (an error's title, say).
  const secrets = [
    ...signer.senders.flatMap((s) => metaSecrets(s.settings)),
    ...(signer.defaultNumber ? metaSecrets(context.settings) : []),
  ]
  for (const entry of Array.isArray(notification.entry) ? notification.entry : []) {
    if (!isObject(entry) || !Array.isArray(entry.changes)) continue
    for (const change of entry.changes) {
      if (isObject(change) && TEMPLATE_FIELDS.has(change.field as string) && isObject(change.value)) {
        // Signed, but about an account none of the signer's senders is in: it changes nothing (the
        // route counts it; Meta is answered 200, as a retry would change nothing either).
        const notice = templateNoticeOf(change.field as string, change.value, unixTime(entry.time), secrets)
        if (notice) answer.templates.push({ ...notice, senders: accountOwners(signer, entry.id, context.settings) })
        continue
      }
      if (isObject(change) && HEALTH_FIELDS.has(change.field as string) && isObject(change.value)) {
        // Like a template change: signed, but about an account (or number) of no sender that signed it, it changes nothing.
        const found = healthNoticeOf(change.field as string, change.value, unixTime(entry.time))
        if (found) answer.health.push({ ...found.notice, senders: healthOwners(signer, entry.id, found.number) })
        continue
      }
      if (!isObject(change) || !NUMBER_FIELDS.has(change.field as string) || !isObject(change.value)) continue
      const value = change.value
      const owner = ownerOf(signer, value, context.settings)
      if (owner === undefined) {
        const named = isObject(value.metadata) && typeof value.metadata.phone_number_id === 'string' ? value.metadata.phone_number_id : null
        throw new ApiError(
          'FORBIDDEN',
          named
            ? `a ${change.field} change names phone_number_id ${named.slice(0, 40)}, which is not a number of the app that signed it`
            : `a ${change.field} change names no metadata.phone_number_id`,
        )
      }
      if (change.field === 'user_preferences') {
        answer.consent.push(...consentOf(value).map((signal) => ({ ...signal, sender: owner })))
        continue
      }
      answer.reports.push(...reportsOf(value, secrets).map((report) => ({ ...report, senders: [owner] })))
      answer.inbound.push(...inboundOf(value).map((message) => ({ ...message, sender: owner })))
      answer.identities.push(...identityChangesOf(value).map((change) => ({ ...change, sender: owner })))
    }
  }
  return answer
}

/** The subscription handshake: the challenge, as text, when the verify token matches; 403 otherwise. */
async function handshake(request: CallbackRequest, context: CallbackContext<MetaSettings>): Promise<Response> {
  // META_VERIFY_TOKEN, or a stored sender's own (its app's webhook may have its own verify token).
  const tokens = [context.settings.verifyToken, ...(await context.senders(null)).map((s) => s.settings.verifyToken)].filter((t) => t !== '')
  if (tokens.length === 0) throw new ApiError('NOT_FOUND', `no route for GET ${META_WEBHOOK_PATH}`)
  const query = request.url.searchParams
  const token = query.get('hub.verify_token')
  const challenge = query.get('hub.challenge')
  if (query.get('hub.mode') !== 'subscribe' || token === null || challenge === null || !tokens.some((t) => sameText(token, t))) {
    throw new ApiError(
      'FORBIDDEN',
      "hub.mode must be subscribe and hub.verify_token must match META_VERIFY_TOKEN or a Meta sender's verify_token",
    )
  }
  return new Response(challenge, {
    status: 200,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' },
  })
}

const describe = (lines: string[]) => lines.join(' ')

export const metaWebhookCallbacks: Callback<MetaSettings>[] = [
  {
    method: 'GET',
    path: 'webhook',
    handle: (request, context) => handshake(request, context),
    errors: [403, 404],
    detail: {
      summary: "Meta's webhook subscription handshake",
      description: describe([
        'Called by Meta when the webhook URL is set in the app dashboard, not by API clients.',
        'Answers `hub.challenge` as plain text when `hub.mode` is `subscribe` and `hub.verify_token` equals `META_VERIFY_TOKEN`',
        "or the `verify_token` of a stored Meta sender (each Meta app's webhook may have its own); anything else gets 403 `FORBIDDEN`.",
        'Without `META_VERIFY_TOKEN` and without a Meta sender that has a `verify_token`, 404 `NOT_FOUND`.',
      ]),
      parameters: [
        { name: 'hub.mode', in: 'query', required: true, schema: { type: 'string', enum: ['subscribe'] } },
        {
          name: 'hub.verify_token',
          in: 'query',
          required: true,
          schema: { type: 'string' },
          description: "Must equal META_VERIFY_TOKEN or a Meta sender's verify_token",
        },
        { name: 'hub.challenge', in: 'query', required: true, schema: { type: 'string' }, description: 'Echoed back' },
      ],
      responses: { 200: { description: 'The challenge, echoed', content: { 'text/plain': { schema: { type: 'string' } } } } },
    },
  },
  {
    method: 'POST',
    path: 'webhook',
    handle: (request, context) => receive(request, context),
    errors: [400, 403, 404, 415],
    detail: {
      summary: "Meta's webhook notifications (message statuses, inbound messages, template changes)",
      description: describe([
        'Called by Meta (the WhatsApp Cloud API, `PROVIDER=meta`), not by API clients. No API key: `X-Hub-Signature-256`',
        '(`sha256=` + the hex HMAC-SHA256 of the raw body with the app secret of the sender each `metadata.phone_number_id`',
        "names: a stored sender's, else `META_APP_SECRET`) is verified first; a missing or wrong",
        'signature gets 403 `FORBIDDEN` and changes nothing. Every `statuses[]` item of every `entry[].changes[]` whose',
        '`field` is `messages` is applied in one transaction through the forward-only state machine: `sent`, `delivered`,',
        '`read` as they are, `failed` with `errors[0].code` as `error_code` and its title as `error_message`; a repeat or a',
        'backwards move (a `delivered` after a `read`) changes nothing. Statuses for ids not stored yet are kept for up',
        'to an hour (the notification can beat the recording of the send), then dropped. Every `messages[]` item (an inbound',
        'message: text, image, document, audio, video, sticker, location, contacts, interactive button/list reply, button,',
        'reaction) is stored once by its `id` (a repeat changes nothing), with the name of `contacts[].profile.name`; see',
        "`GET /api/v1/inbound`; one that is only a STOP/START word opts the customer out of (back into) the account's messages.",
        'A `user_preferences` change (`category: marketing_messages`, `value: stop|resume`: the user stopped or resumed',
        'marketing messages in WhatsApp) opts the `wa_id` out of the account the inbound rule names, or back in when the opt-out',
        'was such a signal (source `provider`); see `GET /api/v1/opt-outs`.',
        'A template change (`message_template_status_update`: `event` APPROVED, REJECTED, PAUSED, DISABLED, REINSTATED (approved',
        'again), FLAGGED (recorded, the status kept), IN_APPEAL, PENDING_DELETION, DELETED, LIMIT_EXCEEDED, ARCHIVED, LOCKED, PENDING,',
        'with `reason`, `other_info`, `rejection_info`; `template_category_update`: only the completed form with `previous_category`',
        'changes the category, the impending form with `correct_category` is kept in the history; `message_template_quality_update`:',
        '`new_quality_score`) changes the template (by `message_template_id`, else name and language) of each sender whose',
        '`business_account_id` is the entry’s `id` among those whose secret verified the body (the default number’s when',
        '`META_BUSINESS_ACCOUNT_ID` is that id and `META_APP_SECRET` verified); an account of no sender that signed it changes nothing.',
        'Each change is recorded once however often delivered and only if not older (`entry.time`) than the latest Meta gave for the',
        'field, and emits one `template.status_changed` event. Other fields are ignored. Each accepted status change emits one',
        '`message.status` event. The answer is 200 with `changed: true` when any message changed, `inbound` (when it carried',
        'inbound messages): how many were new, and `templates` (when it carried template changes): how many changes were recorded.',
        'The endpoint answers whenever `META_APP_SECRET` is set or a Meta sender is',
        'stored; without either, 404 `NOT_FOUND`.',
      ]),
      parameters: [
        {
          name: 'X-Hub-Signature-256',
          in: 'header',
          required: true,
          schema: { type: 'string' },
          description: '`sha256=` + hex HMAC-SHA256 by Meta',
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                object: { type: 'string', example: 'whatsapp_business_account' },
                entry: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      id: { type: 'string', description: 'The WhatsApp Business Account id (what a template change is about)' },
                      time: { type: 'integer', description: "Unix seconds: Meta's time of the notification" },
                      changes: {
                        type: 'array',
                        items: {
                          type: 'object',
                          properties: {
                            field: {
                              type: 'string',
                              example: 'messages',
                              description:
                                '`messages`, `user_preferences`, `message_template_status_update`, `template_category_update`, ' +
                                '`message_template_quality_update`; others are ignored',
                            },
                            value: {
                              type: 'object',
                              properties: {
                                event: { type: 'string', example: 'PAUSED', description: 'A template status change: Meta’s status word' },
                                message_template_id: { type: 'integer', example: 1689556908129832 },
                                message_template_name: { type: 'string', example: 'order_shipped' },
                                message_template_language: { type: 'string', example: 'id' },
                                reason: { type: ['string', 'null'], example: 'NONE' },
                                previous_category: {
                                  type: 'string',
                                  example: 'UTILITY',
                                  description: 'Only in a completed category change',
                                },
                                new_category: { type: 'string', example: 'MARKETING' },
                                correct_category: {
                                  type: 'string',
                                  description: 'Only in an impending category change (nothing changes yet)',
                                },
                                new_quality_score: { type: 'string', enum: ['GREEN', 'YELLOW', 'RED', 'UNKNOWN'] },
                                statuses: {
                                  type: 'array',
                                  items: {
                                    type: 'object',
                                    properties: {
                                      id: { type: 'string', example: 'wamid.HBgNNjI4MTIzNDU2Nzg5MBUCABEYEjA=' },
                                      status: { type: 'string', enum: ['sent', 'delivered', 'read', 'failed'] },
                                      errors: {
                                        type: 'array',
                                        items: {
                                          type: 'object',
                                          properties: { code: { type: 'integer' }, title: { type: 'string' }, message: { type: 'string' } },
                                        },
                                      },
                                    },
                                  },
                                },
                              },
                            },
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
]
