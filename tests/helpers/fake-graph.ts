// A fake of Meta's Graph API (the WhatsApp Cloud API's messages endpoint) on a loopback Bun.serve, as
// the provider tests and benchmarks need it: it accepts a message with a `wamid.…` id, as Meta does,
// unless the message breaks a limit of the sender: beyond `perSecond` it answers 130429 ("Rate limit
// hit"), to a recipient within `recipientGapMs` of the last message it answers 131056 ("pair rate limit
// hit"), each with a Retry-After unless `retryAfter` is false; past `messagingLimit` unique recipients
// of a phone number (its tier; none by default) it refuses a new recipient with 131048, the code Meta's
// messaging-limit documentation names ("restrictions on how many messages can be sent from this phone
// number"). The fake knows no 24-hour windows: every recipient counts. Every request is recorded with its time
// and answer; each message's acceptances are counted by its text. A test may answer a message in its
// place (`answer`; returning undefined falls back to the default).
//
// Phone numbers: once a test registers one (`phone(id, token)`), the fake checks every request's bearer
// token as Meta does (the token of the phone number id in its path; any other is 401 with code 190, an
// id it does not know 400 with code 100) and answers the number's node (GET /{id}?fields=…, what a
// sender's check reads). Limits are kept per phone number id, as Meta's throughput is. With no number
// registered, any token goes (the provider tests' own checks).
//
// Templates: once a phone number's WhatsApp Business Account (`accountOf`) has templates (`templates`,
// `template()`), a template message from it is checked as Meta does (templateRefusal): 132001 (no
// approved template of that name in that language), 132015 (paused), 132016 (disabled), 132000 (a
// component's parameter count differs), 131008 (a required parameter missing: a media header's, a
// button's, a named one), in Meta's error shape (the title in `message`, the specifics in
// `error_data.details`).
//
// Templates: `GET /{waba-id}/message_templates` lists a WhatsApp Business Account's templates in
// pages (`limit`, default 25 as Meta's; `after`, the cursor of the page before; `paging.next` while a
// page follows; `fields` picks the fields, id always), and `POST` to it creates one (the definition's
// name, language, category, parameter_format and components kept as given; status `createdStatus`,
// PENDING by default): a name and language the account has already is refused (code 100), and past
// `creationLimit` creations within an hour of the fake's time (Meta documents 100 an hour per business
// account) it refuses with code 4 (Graph's "Application request limit reached"; Meta does not document
// the exact answer of this limit, this is the fake's). With phone numbers registered, the token must be
// that of a phone number of the account (`accountOf`), else 401 (190).
//
// Edits and deletions, with Meta's refusals: `POST /{template-id}` with `components` (and `category`)
// edits a template of the account whose phone number's token it carries: only an APPROVED, REJECTED or
// PAUSED one (else code 100), never an approved one's category (100), an approved one at most once in
// 24 hours and ten times in 30 days of the fake's time (100, "edit limit"); the edited template is
// PENDING (Meta reviews it again), answered `{success: true}`. `DELETE /{waba-id}/message_templates`
// with `name` (and `hsm_id`: that template only, else every language of the name) deletes them (100
// when none matches); a deleted name cannot be created again for 30 days (100 with error_subcode
// 2388023, "New English (US) content can't be added while the existing English (US) content is being
// deleted", as Meta answers it). The other refusals' exact words are the fake's (Meta documents the
// rules, not every answer). `holdTemplateLists` holds a listing's answer until the test releases it
// (a sync racing a webhook).
//
// Customers: `customerWrites` posts what a customer writes to the service's webhook, as Meta does (a
// `messages[]` notification with `metadata.phone_number_id`, signed with the app secret in
// X-Hub-Signature-256), and opens the fake's own 24-hour window for that (phone number id, customer).
// With `windows.enforce` on, a free-form message outside it is refused with 131047 (Meta reports it
// as a failed status after accepting; refused at once here, which the service treats the same: refunded).
//
// Manners (issue 32): `customerWrites` may quote a message (`context`, Meta's `context.id`/`context.from`)
// or react to one (`reaction`). `POST /{phone-number-id}/messages` with `status: "read"` marks a message
// read (`typing_indicator: {type: "text"}` optional; recorded in `reads`, answered `{success: true}`), and a
// message may carry `context.message_id` or be `type: "reaction"` (`reaction.message_id`, `emoji`; empty
// removes). A message id the fake never issued nor received is refused as Meta refuses a parameter's value
// (131009, "Parameter value is not valid"; the details are the fake's words).

//
// Media uploads (issue 32): `POST /{phone-number-id}/media`, multipart with `messaging_product=whatsapp`,
// `file` and `type`, with that number's token, is kept in `uploads` and answered `{id}` as Meta does (a
// missing part is code 100). A media message may then name it by `id` instead of `link`: only the number
// it was uploaded to may send it, and only for 30 days of the fake's clock (Meta keeps an upload 30 days);
// another number's, an expired or an unknown id is refused with 131053 ("Media upload error"; the
// details are the fake's words).
//
// Pricing analytics: every message the fake accepts is kept as delivered (`delivered`: its wamid, phone
// number id, business account, time by the clock it was given, else real time, and how Meta prices it:
// a template's category with pricing type REGULAR, anything else SERVICE / FREE_CUSTOMER_SERVICE), and
// `GET /{waba-id}?fields=pricing_analytics.start(S).end(E).granularity(G).phone_numbers([…]).dimensions([…])`
// answers Meta's shape computed from them: `{pricing_analytics: {data: [{data_points: [{start, end,
// pricing_category, pricing_type, volume, cost}]}], paging}}`, buckets of HALF_HOUR or DAILY (UTC),
// `analyticsPage` points a page (`.after(cursor)`; `paging.next` while a page follows), cost at
// `rates` (USD per message). A test makes Meta disagree by changing `delivered` (a message the service
// never had; a category priced differently).

import type { Clock } from '../../src/lib/clock'
import { Acceptances, FakeLimits, FakeWindows, fakeTime, retryAfter, type FakeCallbackTarget, type FakeRequest } from './fake-rates'
import {
  metaMessagesBody,
  metaPricing,
  metaStatusesBody,
  metaSystemBody,
  metaTemplateBody,
  metaWebhookHeaders,
  type MetaPricing,
} from './meta-webhook'

/** A business-scoped user id as Meta writes one (issue 32): two uppercase letters, a dot, up to 128 letters and digits (a parent id: one more part). */
const FAKE_USER_ID = /^[A-Z]{2}\.(?:[A-Z]{2,8}\.)?[A-Za-z0-9]{1,128}$/

/** A business phone number the fake knows: its id, the token that may use it, and its node's fields. */
export type FakePhoneNumber = {
  id: string
  token: string
  display_phone_number: string
  verified_name: string
  quality_rating: string
  /** The app secret its webhooks are signed with (customerWrites). */
  appSecret?: string
}

/**
 * A medium a customer sent, as Meta keeps it: its node (GET /{media-id}, with the token of the number
 * it reached, else 190) and its download URL (the same bearer token required, else 401).
 */
export type FakeMedium = {
  id: string
  token: string
  bytes: Uint8Array
  /** The node's mime_type. */
  type: string
  /** The download's Content-Type (default: `type`). */
  contentType?: string
  /** The node's file_size (default: the bytes' length). */
  fileSize?: number
  /** Downloads answered HTTP 500 before one succeeds. */
  failTimes?: number
  /** The download streams its body without a Content-Length (chunked). */
  chunked?: boolean
}

/**
 * A template in a WhatsApp Business Account of the fake, as Meta's `message_templates` edge shows it
 * (status and category in Meta's upper case). Sends from a phone number of that account are checked
 * against its templates once the account has any (graphShapeError does the rest).
 */
export type FakeTemplate = {
  id: string
  name: string
  language: string
  category: 'MARKETING' | 'UTILITY' | 'AUTHENTICATION'
  status: string
  parameter_format?: 'POSITIONAL' | 'NAMED'
  components: Record<string, any>[]
  quality_score?: { score: 'GREEN' | 'YELLOW' | 'RED' | 'UNKNOWN' }
  rejected_reason?: string
}

/** A file uploaded to the fake: the phone number id it was uploaded to, its part, and when (wall clock, ms). */
export type FakeUpload = { phoneNumberId: string; type: string; bytes: Uint8Array; filename: string; at: number }

/** How long Meta keeps an uploaded medium: 30 days. */
export const META_UPLOAD_DAYS = 30

/** A message the fake delivered, as its pricing analytics count it. */
export type FakeDelivery = {
  id: string
  phoneNumberId: string
  /** The business account of its phone number ('' when none is set). */
  waba: string
  /** Its phone number's digits (display_phone_number), as phone_numbers filters by them. */
  phone: string
  /** When it was delivered (epoch ms). */
  at: number
  /** Meta's pricing category (MARKETING, UTILITY, AUTHENTICATION, SERVICE, or any other word of Meta's). */
  category: string
  /** Meta's pricing type (REGULAR, FREE_CUSTOMER_SERVICE, FREE_ENTRY_POINT). */
  type: string
}

export type GraphAnswer = (request: Request, sent: Record<string, any> | null) => Response | undefined | Promise<Response | undefined>

export type FakeGraph = {
  /** http://127.0.0.1:PORT */
  url: string
  /** The META_API_BASE to give the service: `${url}/v21.0`. */
  apiBase: string
  requests: FakeRequest[]
  /** The fake's time for its limits and records (ms): fakeTime of the clock it was given; reset restores it. */
  now: () => number
  limits: FakeLimits
  /** Send Retry-After with throttling answers (default true). */
  retryAfter: boolean
  /** The HTTP status of a throttling answer (default 400, as the Graph API answers its errors). */
  throttleStatus: number
  answer: GraphAnswer | null
  /**
   * Every error answer's message quotes the access token the request carried, as Meta's "Malformed
   * access token EAA…" does, and its Authorization value. Default false.
   */
  echoCredentials: boolean
  /** A phone number's messaging limit: unique recipients it may reach (null: unlimited, the default). */
  messagingLimit: number | null
  /** The unique recipients each phone number id reached, as its messaging limit counts them. */
  recipients: Map<string, Set<string>>
  accepted: Acceptances
  /** The ids it answered for accepted messages, in order. */
  ids: string[]
  /** The phone numbers whose tokens it checks, by id (none: it checks nothing). */
  phones: Map<string, FakePhoneNumber>
  /** Registers a phone number id and its token: from now on every request must carry the token of the id it names. */
  phone(
    id: string,
    token: string,
    fields?: Partial<Pick<FakePhoneNumber, 'display_phone_number' | 'verified_name' | 'quality_rating' | 'appSecret'>>,
  ): FakePhoneNumber
  /** The WhatsApp Business Account of each phone number id (a sender's business_account_id), for its templates. */
  accountOf: Map<string, string>
  /** Each WhatsApp Business Account's templates, in creation order. */
  templates: Map<string, FakeTemplate[]>
  /** Adds a template to a WhatsApp Business Account (an id made up when none is given). */
  template(waba: string, t: Omit<FakeTemplate, 'id'> & { id?: string }): FakeTemplate
  /**
   * Meta changes a template of its own accord and says so: the template `id` of `waba` takes the change
   * in the fake's store (its list shows it from now on) and the signed notification is posted to the
   * service's webhook (`appSecret`: else that of a registered phone number of the account), Meta's
   * `time` the fake's now unless given. `status`: Meta's event (APPROVED, PAUSED, FLAGGED, REINSTATED...;
   * FLAGGED leaves the stored status, REINSTATED stores APPROVED); `category`: a completed change
   * (`previous_category`), `impendingCategory`: Meta's notice that it will change (the store keeps the
   * category); `quality`: the new score. The service's answer.
   */
  changeTemplate(o: {
    waba: string
    id: string
    status?: string
    reason?: string
    category?: FakeTemplate['category']
    impendingCategory?: FakeTemplate['category']
    quality?: 'GREEN' | 'YELLOW' | 'RED' | 'UNKNOWN'
    appSecret?: string
    time?: number
  }): Promise<Response>
  /**
   * Meta says something of a WhatsApp Business Account's health (issue 32 §4) and posts it signed, as the
   * Cloud API shapes it (entry.id: the account; `time` the fake's now unless given; `appSecret`: else that
   * of a registered phone number of the account):
   * - `capability`: business_capability_update with max_daily_conversations_per_business (-1: unlimited);
   * - `restrictions`: account_update ACCOUNT_RESTRICTION with restriction_info (empty: lifted);
   * - `quality`: phone_number_quality_update of `phoneNumberId`'s number: `event` (FLAGGED, UNFLAGGED,
   *   UPGRADE, DOWNGRADE, THROUGHPUT_UPGRADE), `current_limit` (a legacy tier word), and
   *   max_daily_conversations_per_business when given. FLAGGED / UNFLAGGED also set the node's quality_rating
   *   (RED / GREEN), as a check or a sync reads it.
   * The service's answer.
   */
  sayHealth(o: {
    waba: string
    capability?: number
    restrictions?: { restriction_type: string; expiration?: number }[]
    quality?: {
      phoneNumberId: string
      event: string
      current_limit?: string
      old_limit?: string
      max_daily_conversations_per_business?: string
    }
    appSecret?: string
    time?: number
  }): Promise<Response>
  /** The status a created template starts with (default PENDING). */
  createdStatus: string
  /**
   * Holds the answers to template listings (GET /{waba-id}/message_templates) from now on: each page is
   * read from the store when asked, as Meta reads it then, and answered only once the test calls
   * `release` (which ends the hold). `reached` resolves when a page has been read and waits: a test may
   * then change the store or post Meta's webhook before the service gets the older page.
   */
  holdTemplateLists(): { reached: Promise<void>; release: () => void }
  /** Templates a business account may create per hour of the fake's time (default 100, as Meta's). */
  creationLimit: number
  /** When each business account created its templates (the fake's time, ms), for creationLimit. */
  creations: Map<string, number[]>
  /** When each template was edited while approved (the fake's time, ms), for Meta's edit limits. */
  edits: Map<string, number[]>
  /** The names each business account deleted, with when (they cannot be created again for 30 days). */
  deletedNames: Map<string, Map<string, number>>
  /** The 24-hour windows it keeps, and whether it enforces them (default off). */
  windows: FakeWindows
  /** Where customerWrites posts (the service's webhook); set by the test. */
  callback: FakeCallbackTarget | null
  /**
   * A customer writes to a phone number id: posts the signed `messages[]` notification to the service
   * (`appSecret`: else the phone's registered one) and opens the fake's window; the service's answer.
   */
  customerWrites(o: {
    phoneNumberId: string
    /** The customer's phone (digits); '' for a customer known only by a user id (a username hides the phone). */
    from: string
    /** The customer's business-scoped user id (`ID.1349…`): sent as `from_user_id` and `contacts[].user_id` (issue 32). */
    userId?: string
    text: string
    name?: string
    appSecret?: string
    /** The message it quotes (a swiped reply): Meta's `context.id`. */
    context?: string
    /** A reaction instead of text: to `message_id`, `emoji` (empty: removed). */
    reaction?: { message_id: string; emoji: string }
  }): Promise<Response>
  /**
   * Meta says a customer's ids changed (issue 32): a `system` message (no `contacts[]`), `user_changed_number`
   * (`from` the old phone, `system.wa_id` the new) or `user_changed_user_id` (`system.previous_user_id` →
   * `system.user_id`), signed as customerWrites signs.
   */
  customerChanged(o: {
    phoneNumberId: string
    type: 'user_changed_number' | 'user_changed_user_id'
    from?: string
    waId?: string
    previousUserId?: string
    userId?: string
  }): Promise<Response>
  /** The message ids customers wrote (customerWrites), as Meta knows them. */
  customerIds: string[]
  /** Every read receipt it took: the phone number id, the message and whether a typing indicator was asked. */
  reads: { phoneNumberId: string; messageId: string; typing: boolean }[]
  /** How it priced each message it accepted, by id: a template's category (regular), else service (free_customer_service). */
  pricing: Map<string, MetaPricing>
  /**
   * Meta reports a message's status: posts the signed `statuses[]` notification to the service, with
   * `pricing` as Meta gives it on sent, delivered and read (the fake's own for that message unless
   * given; null: none), none on failed. The service's answer.
   */
  reportStatus(o: {
    phoneNumberId: string
    id: string
    status: 'sent' | 'delivered' | 'read' | 'failed'
    pricing?: MetaPricing | null
    appSecret?: string
    /** Its `recipient_id` (a phone's digits; null: none given) and `recipient_user_id` (issue 32), when a test names them. */
    recipient?: string | null
    recipientUserId?: string
  }): Promise<Response>
  /** The files uploaded to it (POST /{phone-number-id}/media), by the id it answered. */
  uploads: Map<string, FakeUpload>
  /** The media it serves, by id. */
  media: Map<string, FakeMedium>
  /** Registers a medium (GET /{id} and its download URL). */
  medium(medium: FakeMedium): FakeMedium
  /** Requests for a medium's node and for its download, counted. */
  mediaRequests(id: string): { node: number; download: number }
  /** Every message it delivered, as its pricing analytics count them (a test may add or change some). */
  delivered: FakeDelivery[]
  /** Meta's price per message of each category, in its billing currency (USD); free types cost 0. */
  rates: Record<string, number>
  /** Data points per page of pricing analytics (default 50). */
  analyticsPage: number
  /** Forgets requests, acceptances, limits, windows, deliveries and the test's answer (not the phone numbers). */
  reset(): void
  stop(): void
}

/** Meta's rates per delivered message in the fake's analytics (USD; Indonesia's, as the issue quotes them). */
export const META_RATES: Record<string, number> = { MARKETING: 0.0411, UTILITY: 0.02, AUTHENTICATION: 0.0228, SERVICE: 0 }

/** A Graph API error answer, as Meta writes them. */
export function graphError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json(
    {
      error: {
        message,
        type: 'OAuthException',
        code,
        error_data: { messaging_product: 'whatsapp', details: message },
        fbtrace_id: 'Az8or',
      },
    },
    { status, headers },
  )
}

/** The text a message is counted by: a text's body, a media caption, or a template with its parameters. */
function textOf(sent: Record<string, any> | null): string | null {
  if (!sent) return null
  if (typeof sent.text?.body === 'string') return sent.text.body
  const caption = sent.image?.caption ?? sent.video?.caption ?? sent.document?.caption
  if (typeof caption === 'string') return caption
  if (sent.template) return JSON.stringify(sent.template)
  if (typeof sent.interactive?.body?.text === 'string') return sent.interactive.body.text
  if (sent.type && sent[sent.type]) return JSON.stringify(sent[sent.type])
  return null
}

const isText = (v: unknown, max: number) => typeof v === 'string' && v.length > 0 && v.length <= max
/** (#100): a parameter missing or of the wrong kind, as Meta answers it. */
const missing = (name: string) => graphError(400, 100, `(#100) The parameter ${name} is required.`)
/** (#131009): a parameter's value breaks a limit, as Meta answers it. */
const invalid = (details: string) =>
  Response.json(
    {
      error: {
        message: '(#131009) Parameter value is not valid',
        type: 'OAuthException',
        code: 131009,
        error_data: { messaging_product: 'whatsapp', details },
        fbtrace_id: 'Az8or',
      },
    },
    { status: 400 },
  )

/** A template refusal as Meta writes it: the title in `message`, the specifics in `error_data.details`. */
const templateError = (code: number, title: string, details: string) =>
  Response.json(
    {
      error: {
        message: `(#${code}) ${title}`,
        type: 'OAuthException',
        code,
        error_data: { messaging_product: 'whatsapp', details },
        fbtrace_id: 'Az8or',
      },
    },
    { status: 400 },
  )

/** The distinct `{{1}}` / `{{name}}` parameters of a template text, in order. */
const placeholders = (text: unknown): string[] =>
  typeof text === 'string' ? [...new Set([...text.matchAll(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g)].map((m) => m[1]!))] : []

/**
 * What Meta refuses of a template message against the WhatsApp Business Account's templates, or null:
 * 132001 (no template of that name in that language, or one not approved), 132015 (paused), 132016
 * (disabled), 132000 (a component's parameter count differs from the template's), 131008 (a required
 * parameter missing: a media header's, a button's, a named parameter).
 */
export function templateRefusal(templates: FakeTemplate[], sent: Record<string, any>): Response | null {
  const name = String(sent.template?.name ?? '')
  const code = String(sent.template?.language?.code ?? '')
  const t = templates.find((x) => x.name === name && x.language === code)
  const status = (t?.status ?? '').toUpperCase()
  if (!t || !['APPROVED', 'PAUSED', 'DISABLED'].includes(status)) {
    return templateError(132001, 'Template name does not exist in the translation', `template name (${name}) does not exist in ${code}`)
  }
  if (status === 'PAUSED') return templateError(132015, 'Template is Paused', `Template ${name} is paused due to low quality`)
  if (status === 'DISABLED') return templateError(132016, 'Template is disabled', `Template ${name} is disabled due to low quality`)
  const given: Record<string, any>[] = Array.isArray(sent.template.components) ? sent.template.components : []
  const own = (type: string) => t.components.find((c) => String(c.type).toUpperCase() === type)
  const sentOf = (type: string) => given.filter((c) => String(c.type).toLowerCase() === type)
  const named = (t.parameter_format ?? 'POSITIONAL').toUpperCase() === 'NAMED'
  // The header: a text with a parameter takes one text parameter; a media header its medium.
  const header = own('HEADER')
  const headerFormat = String(header?.format ?? 'TEXT').toUpperCase()
  const headerGiven = sentOf('header')[0]?.parameters ?? []
  if (header && headerFormat !== 'TEXT' && headerFormat !== 'LOCATION') {
    if (headerGiven.length === 0) {
      return templateError(131008, 'Required parameter is missing', `header: parameter of type ${headerFormat.toLowerCase()} is missing`)
    }
  } else {
    const expected = placeholders(header?.text).length
    if (headerGiven.length !== expected) {
      return templateError(
        132000,
        'Number of parameters does not match the expected number of params',
        `header: number of localizable_params (${headerGiven.length}) does not match the expected number of params (${expected})`,
      )
    }
  }
  const keys = placeholders(own('BODY')?.text)
  const bodyGiven: Record<string, any>[] = sentOf('body')[0]?.parameters ?? []
  if (bodyGiven.length !== keys.length) {
    return templateError(
      132000,
      'Number of parameters does not match the expected number of params',
      `body: number of localizable_params (${bodyGiven.length}) does not match the expected number of params (${keys.length})`,
    )
  }
  if (named) {
    const missingName = keys.find((k) => !bodyGiven.some((p) => p.parameter_name === k))
    if (missingName !== undefined) {
      return templateError(131008, 'Required parameter is missing', `body: parameter ${missingName} is missing`)
    }
  }
  const buttons: Record<string, any>[] = own('BUTTONS')?.buttons ?? []
  for (const [index, b] of buttons.entries()) {
    const type = String(b.type).toUpperCase()
    const takes = (type === 'URL' && placeholders(b.url).length > 0) || type === 'COPY_CODE' || type === 'OTP'
    if (!takes) continue
    const button = given.find((c) => String(c.type).toLowerCase() === 'button' && String(c.index) === String(index))
    if (!button || !Array.isArray(button.parameters) || button.parameters.length === 0) {
      const kind = type === 'URL' ? 'Url' : type === 'OTP' ? 'Url' : 'CopyCode'
      return templateError(
        131008,
        'Required parameter is missing',
        `buttons: Button at index ${index} of type ${kind} requires a parameter`,
      )
    }
  }
  return null
}

/**
 * What the Cloud API refuses of a message's shape (the documented limits of each type), or null: the
 * fake takes only what Meta would.
 */
export function graphShapeError(sent: Record<string, any>): Response | null {
  const type = sent.type ?? 'text'
  const own = sent[type]
  if (type !== 'text' && type !== 'template' && (own === null || typeof own !== 'object')) return missing(type)
  switch (type) {
    case 'text':
      return isText(sent.text?.body, 4096) ? null : missing('text.body')
    case 'image':
    case 'video':
    case 'audio':
    case 'document':
    case 'sticker': {
      if (typeof own.link !== 'string' && typeof own.id !== 'string') return missing(`${type}.link`)
      if ((type === 'audio' || type === 'sticker') && own.caption !== undefined) return invalid(`${type} does not take a caption`)
      if (own.caption !== undefined && !isText(own.caption, 1024)) return invalid(`${type}.caption must be 1 to 1024 characters`)
      if (own.filename !== undefined && type !== 'document') return invalid(`Param filename is only for documents`)
      return null
    }
    case 'location': {
      if (typeof own.latitude !== 'number' || typeof own.longitude !== 'number') return missing('location.latitude')
      if (Math.abs(own.latitude) > 90 || Math.abs(own.longitude) > 180) return invalid('location coordinates out of range')
      return null
    }
    case 'interactive': {
      if (!isText(own.body?.text, 1024)) return invalid('interactive.body.text must be 1 to 1024 characters')
      if (own.type === 'button') {
        const buttons = own.action?.buttons
        if (!Array.isArray(buttons)) return missing("interactive['action']['buttons']")
        if (buttons.length < 1 || buttons.length > 3) return invalid('Buttons count must be between 1 and 3')
        for (const b of buttons) {
          if (b?.type !== 'reply' || !isText(b.reply?.id, 256) || !isText(b.reply?.title, 20)) return invalid('Button title length invalid')
        }
        return null
      }
      if (own.type === 'list') {
        const sections = own.action?.sections
        if (!Array.isArray(sections)) return missing("interactive['action']['sections']")
        if (!isText(own.action.button, 20)) return invalid('Button text must be 1 to 20 characters')
        if (sections.length < 1 || sections.length > 10) return invalid('Sections count must be between 1 and 10')
        const rows = sections.flatMap((s: any) => (Array.isArray(s?.rows) ? s.rows : []))
        if (rows.length < 1 || rows.length > 10) return invalid('Total row count exceed max allowed count: 10')
        if (sections.length > 1 && sections.some((s: any) => !isText(s.title, 24))) return invalid('Section title is required')
        for (const r of rows) {
          if (!isText(r?.id, 200) || !isText(r.title, 24)) return invalid('Row title length invalid')
          if (r.description !== undefined && !isText(r.description, 72)) return invalid('Row description length invalid')
        }
        return null
      }
      return missing("interactive['type']")
    }
    case 'template': {
      if (!isText(sent.template?.name, 512)) return missing('template.name')
      for (const c of sent.template.components ?? []) {
        if (c.type !== 'header') continue
        const p = c.parameters?.[0]
        if (
          p?.type === 'text'
            ? !isText(p.text, 60)
            : !p ||
              !['image', 'video', 'document'].includes(p.type) ||
              (typeof p[p.type]?.link !== 'string' && typeof p[p.type]?.id !== 'string')
        ) {
          // A medium by its link, or by the id of an upload (`POST /{phone-number-id}/media`), as a media message's.
          return invalid('header parameter must be a text of 1 to 60 characters, or an image, video or document with a link or an id')
        }
      }
      return null
    }
    case 'reaction': {
      if (typeof own.message_id !== 'string') return missing('reaction.message_id')
      if (typeof own.emoji !== 'string') return missing('reaction.emoji')
      return null
    }
    default:
      return graphError(
        400,
        100,
        `(#100) Param type must be one of {TEXT, IMAGE, VIDEO, AUDIO, DOCUMENT, STICKER, LOCATION, INTERACTIVE, TEMPLATE, REACTION}`,
      )
  }
}

/** `clock`: the test clock the fake keeps its limits by (the app's); without one, real time. */
export function fakeGraph(options: { clock?: Pick<Clock, 'monotonic'> & Partial<Pick<Clock, 'now'>> } = {}): FakeGraph {
  const time = fakeTime(options.clock)
  const wallClock = () => (options.clock?.now ? options.clock.now().getTime() : Date.now())
  let counter = 0
  /** A hold on template listings (holdTemplateLists), or null. */
  let listHold: { reached: () => void; gate: Promise<void> } | null = null
  const fake: FakeGraph = {
    url: '',
    apiBase: '',
    requests: [],
    now: time,
    limits: new FakeLimits(),
    retryAfter: true,
    throttleStatus: 400,
    answer: null,
    echoCredentials: false,
    messagingLimit: null,
    recipients: new Map(),
    accepted: new Acceptances(),
    ids: [],
    customerIds: [],
    reads: [],
    uploads: new Map(),
    phones: new Map(),
    accountOf: new Map(),
    templates: new Map(),
    template(waba, t) {
      const template = { ...t, id: t.id ?? String(1_000_000_000_000 + ++counter) }
      fake.templates.set(waba, [...(fake.templates.get(waba) ?? []), template])
      return template
    },
    async changeTemplate(o) {
      if (!fake.callback) throw new Error('fake Graph: set callback before changeTemplate')
      const template = fake.templates.get(o.waba)?.find((t) => t.id === o.id)
      if (!template) throw new Error(`fake Graph: no template ${o.id} in ${o.waba}`)
      const phone = [...fake.accountOf].find(([, waba]) => waba === o.waba)?.[0]
      const secret = o.appSecret ?? (phone ? fake.phones.get(phone)?.appSecret : undefined)
      if (!secret) throw new Error(`fake Graph: no app secret for ${o.waba}`)
      let field: string
      let value: Record<string, unknown>
      if (o.status !== undefined) {
        field = 'message_template_status_update'
        value = { event: o.status, reason: o.reason ?? 'NONE', message_template_category: template.category }
        if (o.status !== 'FLAGGED') template.status = o.status === 'REINSTATED' ? 'APPROVED' : o.status
        if (o.status === 'REJECTED') template.rejected_reason = o.reason ?? 'NONE'
      } else if (o.category !== undefined) {
        field = 'template_category_update'
        value = { previous_category: template.category, new_category: o.category }
        template.category = o.category
      } else if (o.impendingCategory !== undefined) {
        field = 'template_category_update'
        value = { correct_category: o.impendingCategory, new_category: template.category, category_update_timestamp: o.time ?? 0 }
      } else if (o.quality !== undefined) {
        field = 'message_template_quality_update'
        value = { previous_quality_score: template.quality_score?.score ?? 'UNKNOWN', new_quality_score: o.quality }
        template.quality_score = { score: o.quality }
      } else throw new Error('fake Graph: changeTemplate needs a status, a category or a quality')
      const body = metaTemplateBody(o.waba, field, template, value, o.time ?? Math.floor(fake.now() / 1000))
      return fake.callback.deliver(
        new Request(`${fake.callback.publicBaseUrl}/provider/meta/webhook`, {
          method: 'POST',
          headers: metaWebhookHeaders(body, secret),
          body,
        }),
      )
    },
    async sayHealth(o) {
      if (!fake.callback) throw new Error('fake Graph: set callback before sayHealth')
      const phone = [...fake.accountOf].find(([, waba]) => waba === o.waba)?.[0]
      const secret = o.appSecret ?? (phone ? fake.phones.get(phone)?.appSecret : undefined)
      if (!secret) throw new Error(`fake Graph: no app secret for ${o.waba}`)
      let field: string
      let value: Record<string, unknown>
      if (o.capability !== undefined) {
        field = 'business_capability_update'
        value = { max_daily_conversations_per_business: o.capability, max_phone_numbers_per_business: 2, max_phone_numbers_per_waba: 2 }
      } else if (o.restrictions !== undefined) {
        field = 'account_update'
        value = { phone_number: phone ? fake.phones.get(phone)?.display_phone_number : undefined, event: 'ACCOUNT_RESTRICTION' }
        if (o.restrictions.length > 0) value.restriction_info = o.restrictions
      } else if (o.quality !== undefined) {
        field = 'phone_number_quality_update'
        const node = fake.phones.get(o.quality.phoneNumberId)
        if (!node) throw new Error(`fake Graph: no phone number ${o.quality.phoneNumberId}`)
        if (o.quality.event === 'FLAGGED') node.quality_rating = 'RED'
        if (o.quality.event === 'UNFLAGGED') node.quality_rating = 'GREEN'
        const { phoneNumberId: _, ...said } = o.quality
        value = { display_phone_number: node.display_phone_number, ...said }
      } else throw new Error('fake Graph: sayHealth needs capability, restrictions or quality')
      const body = JSON.stringify({
        object: 'whatsapp_business_account',
        entry: [{ id: o.waba, time: o.time ?? Math.floor(fake.now() / 1000), changes: [{ value, field }] }],
      })
      return fake.callback.deliver(
        new Request(`${fake.callback.publicBaseUrl}/provider/meta/webhook`, {
          method: 'POST',
          headers: metaWebhookHeaders(body, secret),
          body,
        }),
      )
    },
    createdStatus: 'PENDING',
    holdTemplateLists() {
      const reached = Promise.withResolvers<void>()
      const gate = Promise.withResolvers<void>()
      listHold = { reached: reached.resolve, gate: gate.promise }
      return {
        reached: reached.promise,
        release: () => {
          listHold = null
          gate.resolve()
        },
      }
    },
    creationLimit: 100,
    creations: new Map(),
    edits: new Map(),
    deletedNames: new Map(),
    windows: new FakeWindows(),
    callback: null,
    async customerWrites(o) {
      if (!fake.callback) throw new Error('fake Graph: set callback before customerWrites')
      const secret = o.appSecret ?? fake.phones.get(o.phoneNumberId)?.appSecret
      if (!secret) throw new Error(`fake Graph: no app secret for ${o.phoneNumberId}`)
      const from = o.from.replace(/\D/g, '')
      const customerId = `wamid.HBgNIN${(++counter).toString(16).padStart(8, '0')}${crypto.randomUUID().replaceAll('-', '')}`
      fake.customerIds.push(customerId)
      const body = metaMessagesBody(
        o.phoneNumberId,
        from,
        [
          {
            id: customerId,
            // Written now by the clock the fake was given (else real time).
            timestamp: String(Math.floor(wallClock() / 1000)),
            ...(o.reaction ? { type: 'reaction', reaction: o.reaction } : { type: 'text', text: { body: o.text } }),
            ...(o.context ? { context: { from: o.phoneNumberId, id: o.context } } : {}),
          },
        ],
        {
          name: o.name ?? 'Customer',
          displayPhoneNumber: fake.phones.get(o.phoneNumberId)?.display_phone_number ?? '15550000000',
          userId: o.userId,
        },
      )
      // The window opens for each id Meta knows the customer by.
      if (from) fake.windows.wrote(o.phoneNumberId, from)
      if (o.userId) fake.windows.wrote(o.phoneNumberId, o.userId)
      return fake.callback.deliver(
        new Request(`${fake.callback.publicBaseUrl}/provider/meta/webhook`, {
          method: 'POST',
          headers: metaWebhookHeaders(body, secret),
          body,
        }),
      )
    },
    async customerChanged(o) {
      if (!fake.callback) throw new Error('fake Graph: set callback before customerChanged')
      const secret = fake.phones.get(o.phoneNumberId)?.appSecret
      if (!secret) throw new Error(`fake Graph: no app secret for ${o.phoneNumberId}`)
      const body = metaSystemBody(o.phoneNumberId, {
        ...(o.from ? { from: o.from } : {}),
        id: `wamid.HBgNSYS${(++counter).toString(16).padStart(8, '0')}`,
        type: 'system',
        system: {
          type: o.type,
          body: o.type === 'user_changed_number' ? `User changed from ${o.from} to ${o.waId}` : 'User changed their user id',
          ...(o.waId ? { wa_id: o.waId } : {}),
          ...(o.userId ? { user_id: o.userId } : {}),
          ...(o.previousUserId ? { previous_user_id: o.previousUserId } : {}),
        },
      })
      return fake.callback.deliver(
        new Request(`${fake.callback.publicBaseUrl}/provider/meta/webhook`, {
          method: 'POST',
          headers: metaWebhookHeaders(body, secret),
          body,
        }),
      )
    },
    delivered: [],
    rates: { ...META_RATES },
    analyticsPage: 50,
    pricing: new Map(),
    async reportStatus(o) {
      if (!fake.callback) throw new Error('fake Graph: set callback before reportStatus')
      const secret = o.appSecret ?? fake.phones.get(o.phoneNumberId)?.appSecret
      if (!secret) throw new Error(`fake Graph: no app secret for ${o.phoneNumberId}`)
      const pricing = o.status === 'failed' ? null : o.pricing === undefined ? (fake.pricing.get(o.id) ?? null) : o.pricing
      const body = metaStatusesBody(o.phoneNumberId, [
        { id: o.id, status: o.status, pricing, recipient: o.recipient, recipientUserId: o.recipientUserId },
      ])
      return fake.callback.deliver(
        new Request(`${fake.callback.publicBaseUrl}/provider/meta/webhook`, {
          method: 'POST',
          headers: metaWebhookHeaders(body, secret),
          body,
        }),
      )
    },
    media: new Map(),
    medium(medium) {
      fake.media.set(medium.id, medium)
      return medium
    },
    mediaRequests(id) {
      const node = fake.requests.filter((r) => r.method === 'GET' && /^\/v[\d.]+\/([^/]+)$/.exec(r.path)?.[1] === id).length
      const download = fake.requests.filter((r) => r.path === '/whatsapp_business/attachments/' && r.query === `mid=${id}`).length
      return { node, download }
    },
    phone(id, token, fields = {}) {
      const phone = {
        id,
        token,
        appSecret: fields.appSecret,
        display_phone_number: fields.display_phone_number ?? `1555${id.slice(-7)}`,
        verified_name: fields.verified_name ?? `Fake ${id.slice(-4)}`,
        quality_rating: fields.quality_rating ?? 'GREEN',
      }
      fake.phones.set(id, phone)
      return phone
    },
    reset() {
      fake.requests = []
      fake.now = time
      fake.limits.reset()
      fake.retryAfter = true
      fake.throttleStatus = 400
      fake.answer = null
      fake.echoCredentials = false
      fake.messagingLimit = null
      fake.recipients.clear()
      fake.accepted.clear()
      fake.ids = []
      fake.uploads.clear()
      fake.pricing.clear()
      fake.customerIds = []
      fake.reads = []
      fake.windows.reset()
      fake.createdStatus = 'PENDING'
      listHold = null
      fake.creationLimit = 100
      fake.creations.clear()
      fake.edits.clear()
      fake.deletedNames.clear()
      fake.delivered = []
      fake.rates = { ...META_RATES }
      fake.analyticsPage = 50
    },
    stop: () => server.stop(true),
  }

  /**
   * The phone number the request's bearer token may use, for the id in its path: Meta answers 401 with
   * code 190 to another token, 400 with code 100 to an id it does not know. Null with no number
   * registered (nothing is checked).
   */
  function authenticate(request: Request, phoneId: string): FakePhoneNumber | Response | null {
    if (fake.phones.size === 0) return null
    const phone = fake.phones.get(phoneId)
    const token = (request.headers.get('authorization') ?? '').replace(/^Bearer /, '')
    if (!phone && [...fake.phones.values()].some((p) => p.token === token)) {
      return graphError(400, 100, `Unsupported request. Object with ID '${phoneId}' does not exist`)
    }
    if (!phone || token !== phone.token) return graphError(401, 190, 'Invalid OAuth access token - Cannot parse access token')
    return phone
  }

  /** A medium's node or its download, as Meta answers them; null for any other request. */
  function mediaAnswer(request: Request, url: URL): Response | null {
    const token = (request.headers.get('authorization') ?? '').replace(/^Bearer /, '')
    if (url.pathname === '/whatsapp_business/attachments/') {
      const medium = fake.media.get(url.searchParams.get('mid') ?? '')
      if (!medium) return new Response('Not Found', { status: 404 })
      if (token !== medium.token) return graphError(401, 190, 'Invalid OAuth access token - Cannot parse access token')
      if ((medium.failTimes ?? 0) > 0) {
        medium.failTimes!--
        return new Response('Internal Server Error', { status: 500 })
      }
      const headers = { 'content-type': medium.contentType ?? medium.type }
      if (!medium.chunked) return new Response(medium.bytes, { headers })
      const bytes = medium.bytes
      const stream = new ReadableStream<Uint8Array>({
        async pull(controller) {
          for (let at = 0; at < bytes.length; at += 16 * 1024) controller.enqueue(bytes.slice(at, at + 16 * 1024))
          controller.close()
        },
      })
      return new Response(stream, { headers })
    }
    const node = /^\/v[\d.]+\/([^/]+)$/.exec(url.pathname)
    const medium = node && request.method === 'GET' ? fake.media.get(decodeURIComponent(node[1]!)) : undefined
    if (!medium) return null
    if (token !== medium.token) return graphError(401, 190, 'Invalid OAuth access token - Cannot parse access token')
    return Response.json({
      messaging_product: 'whatsapp',
      url: `${fake.url}/whatsapp_business/attachments/?mid=${encodeURIComponent(medium.id)}`,
      mime_type: medium.type,
      sha256: new Bun.CryptoHasher('sha256').update(medium.bytes).digest('hex'),
      file_size: medium.fileSize ?? medium.bytes.byteLength,
      id: medium.id,
    })
  }

  /** Refuses a token that is not one of the business account's phone numbers' (none registered: any goes). */
  function wabaRefusal(request: Request, waba: string, object: string): Response | null {
    if (fake.phones.size === 0) return null
    const token = (request.headers.get('authorization') ?? '').replace(/^Bearer /, '')
    const phones = [...fake.phones.values()].filter((p) => fake.accountOf.get(p.id) === waba)
    if (phones.some((p) => p.token === token)) return null
    return [...fake.phones.values()].some((p) => p.token === token)
      ? graphError(400, 100, `Unsupported request. Object with ID '${object}' does not exist`)
      : graphError(401, 190, 'Invalid OAuth access token - Cannot parse access token')
  }

  /** A refusal of a template change (code 100), its specifics in error_user_msg as Meta's template errors carry them. */
  const changeRefusal = (details: string) =>
    Response.json(
      {
        error: {
          message: 'Invalid parameter',
          type: 'OAuthException',
          code: 100,
          error_user_msg: details,
          error_data: { messaging_product: 'whatsapp', details },
          fbtrace_id: 'Az8or',
        },
      },
      { status: 400 },
    )

  /** POST /{template-id}: an edit, as Meta takes it; null when the id is no template of the fake. */
  function editAnswer(request: Request, url: URL, sent: Record<string, any> | null): Response | null {
    const node = /^\/v[\d.]+\/([^/]+)$/.exec(url.pathname)
    if (!node || request.method !== 'POST') return null
    const id = decodeURIComponent(node[1]!)
    const found = [...fake.templates].find(([, list]) => list.some((t) => t.id === id))
    if (!found) return null
    const [waba, list] = found
    const refused = wabaRefusal(request, waba, id)
    if (refused) return refused
    const template = list.find((t) => t.id === id)!
    if (!['APPROVED', 'REJECTED', 'PAUSED'].includes(template.status)) {
      return changeRefusal(
        `Message templates can only be edited when their status is approved, rejected or paused (it is ${template.status})`,
      )
    }
    if (!sent || !Array.isArray(sent.components)) return missing('components')
    const category = sent.category === undefined ? template.category : String(sent.category).toUpperCase()
    if (category !== template.category && template.status === 'APPROVED') {
      return changeRefusal("The category of an approved message template can't be changed")
    }
    if (template.status === 'APPROVED') {
      const now = fake.now()
      const past = fake.edits.get(id) ?? []
      const day = past.filter((at) => now - at < 86_400_000).length
      const month = past.filter((at) => now - at < 30 * 86_400_000).length
      if (day >= 1 || month >= 10) {
        return changeRefusal('Edit limit reached: an approved message template can be edited once in 24 hours and 10 times in 30 days')
      }
      fake.edits.set(id, [...past, now])
    }
    template.components = sent.components
    template.category = category as FakeTemplate['category']
    template.status = 'PENDING'
    delete template.rejected_reason
    return Response.json({ success: true })
  }

  /**
   * GET /{waba-id}?fields=pricing_analytics.…: Meta's pricing analytics of the business account, computed
   * from what the fake delivered; null for any other request.
   */
  function analyticsAnswer(request: Request, url: URL): Response | null {
    const node = /^\/v[\d.]+\/([^/]+)$/.exec(url.pathname)
    const fields = url.searchParams.get('fields') ?? ''
    if (!node || request.method !== 'GET' || !fields.startsWith('pricing_analytics')) return null
    const waba = decodeURIComponent(node[1]!)
    if (![...fake.accountOf.values()].includes(waba)) {
      return graphError(400, 100, `Unsupported get request. Object with ID '${waba}' does not exist`)
    }
    const refused = wabaRefusal(request, waba, waba)
    if (refused) return refused
    const params = new Map([...fields.matchAll(/\.(\w+)\(([^)]*)\)/g)].map((m) => [m[1]!, m[2]!]))
    const start = Number(params.get('start'))
    const end = Number(params.get('end'))
    const granularity = params.get('granularity') ?? ''
    if (!Number.isInteger(start) || !Number.isInteger(end) || !params.has('start') || !params.has('end')) return missing('start')
    if (!['HALF_HOUR', 'DAILY', 'MONTHLY'].includes(granularity)) return missing('granularity')
    const bucket = granularity === 'HALF_HOUR' ? 1800 : 86_400
    const phones = params.has('phone_numbers') ? (JSON.parse(params.get('phone_numbers')!) as string[]) : []
    const counted = new Map<string, { start: number; category: string; type: string; volume: number }>()
    for (const d of fake.delivered) {
      const at = Math.floor(d.at / 1000)
      if (d.waba !== waba || at < start || at >= end) continue
      if (phones.length > 0 && !phones.includes(d.phone)) continue
      const from = at - (at % bucket)
      const key = `${from} ${d.category} ${d.type}`
      const c = counted.get(key) ?? { start: from, category: d.category, type: d.type, volume: 0 }
      c.volume++
      counted.set(key, c)
    }
    const points = [...counted.values()]
      .sort((a, b) => a.start - b.start || a.category.localeCompare(b.category) || a.type.localeCompare(b.type))
      .map((c) => ({
        start: c.start,
        end: c.start + bucket,
        pricing_category: c.category,
        pricing_type: c.type,
        volume: c.volume,
        cost: c.type === 'REGULAR' ? Math.round(c.volume * (fake.rates[c.category] ?? 0) * 1e6) / 1e6 : 0,
      }))
    if (points.length === 0) return Response.json({ id: waba })
    const after = params.get('after')
    const first = after ? Number(atob(after)) + 1 : 0
    const page = points.slice(first, first + fake.analyticsPage)
    const paging: Record<string, unknown> = {
      cursors: { before: btoa(String(first)), after: btoa(String(first + page.length - 1)) },
    }
    if (first + page.length < points.length) paging.next = `${fake.apiBase}/${waba}?fields=${encodeURIComponent(fields)}`
    return Response.json({ pricing_analytics: { data: [{ data_points: page }], paging }, id: waba })
  }

  /** The business account's templates edge (list, create, delete), as Meta answers it; null for any other request. */
  function templatesAnswer(request: Request, url: URL, sent: Record<string, any> | null): Response | null {
    const path = /^\/v[\d.]+\/([^/]+)\/message_templates$/.exec(url.pathname)
    if (!path) return null
    const waba = decodeURIComponent(path[1]!)
    const refused = wabaRefusal(request, waba, waba)
    if (refused) return refused
    const all = fake.templates.get(waba) ?? []
    if (request.method === 'DELETE') {
      const name = url.searchParams.get('name')
      const hsm = url.searchParams.get('hsm_id')
      if (!name) return missing('name')
      const gone = all.filter((t) => t.name === name && (hsm === null || t.id === hsm))
      if (gone.length === 0) return changeRefusal(`Message template ${name}${hsm ? ` (${hsm})` : ''} was not found`)
      fake.templates.set(
        waba,
        all.filter((t) => !gone.includes(t)),
      )
      const names = fake.deletedNames.get(waba) ?? new Map<string, number>()
      names.set(name, fake.now())
      fake.deletedNames.set(waba, names)
      return Response.json({ success: true })
    }
    if (request.method === 'GET') {
      const limit = Math.max(1, Math.min(Number(url.searchParams.get('limit') ?? 25) || 25, 1000))
      const after = url.searchParams.get('after')
      const start = after ? Number(atob(after)) + 1 : 0
      const page = all.slice(start, start + limit)
      const asked = (url.searchParams.get('fields') ?? 'name,language,status,category,id').split(',')
      const data = page.map((t) => Object.fromEntries(Object.entries(t).filter(([k]) => k === 'id' || asked.includes(k))))
      const paging: Record<string, unknown> =
        page.length > 0 ? { cursors: { before: btoa(String(start)), after: btoa(String(start + page.length - 1)) } } : {}
      if (start + page.length < all.length) {
        paging.next = `${fake.apiBase}/${waba}/message_templates?limit=${limit}&after=${btoa(String(start + page.length - 1))}`
      }
      return Response.json({ data, paging })
    }
    if (request.method !== 'POST') return graphError(400, 100, 'Unsupported request')
    if (!sent || typeof sent.name !== 'string' || !/^[a-z0-9_]{1,512}$/.test(sent.name)) return missing('name')
    if (typeof sent.language !== 'string' || !sent.language) return missing('language')
    if (!['MARKETING', 'UTILITY', 'AUTHENTICATION'].includes(String(sent.category).toUpperCase())) return missing('category')
    if (!Array.isArray(sent.components)) return missing('components')
    if (all.some((t) => t.name === sent.name && t.language === sent.language)) {
      return graphError(400, 100, 'Invalid parameter: Content in this language already exists')
    }
    const deletedAt = fake.deletedNames.get(waba)?.get(sent.name)
    if (deletedAt !== undefined && fake.now() - deletedAt < 30 * 86_400_000) {
      // Meta's answer (error_subcode 2388023), naming the language as WhatsApp Manager does.
      const language = ({ en_US: 'English (US)', id: 'Indonesian' } as Record<string, string>)[sent.language] ?? sent.language
      return Response.json(
        {
          error: {
            message: 'Invalid parameter',
            type: 'OAuthException',
            code: 100,
            error_subcode: 2388023,
            is_transient: false,
            error_user_title: 'Message template language is being deleted',
            error_user_msg:
              `New ${language} content can't be added while the existing ${language} content is being deleted. ` +
              'Try again in 4 weeks or create a new message template.',
            fbtrace_id: 'AbCdEfGhIjK',
          },
        },
        { status: 400 },
      )
    }
    const now = fake.now()
    const recent = (fake.creations.get(waba) ?? []).filter((at) => now - at < 3_600_000)
    if (recent.length >= fake.creationLimit) {
      return graphError(400, 4, '(#4) Application request limit reached: message template creation limit (per hour) reached')
    }
    fake.creations.set(waba, [...recent, now])
    const created = fake.template(waba, {
      name: sent.name,
      language: sent.language,
      category: String(sent.category).toUpperCase() as FakeTemplate['category'],
      status: fake.createdStatus,
      parameter_format: sent.parameter_format === 'NAMED' ? 'NAMED' : 'POSITIONAL',
      components: sent.components,
    })
    return Response.json({ id: created.id, status: created.status, category: created.category })
  }

  /** POST /{phone-number-id}/media: a multipart upload, kept and answered `{id}`; null for any other request. */
  async function uploadAnswer(request: Request, url: URL): Promise<Response | null> {
    const path = /^\/v[\d.]+\/([^/]+)\/media$/.exec(url.pathname)
    if (!path || request.method !== 'POST') return null
    const phoneNumberId = decodeURIComponent(path[1]!)
    const phone = authenticate(request, phoneNumberId)
    if (phone instanceof Response) return phone
    let form: Awaited<ReturnType<Request['formData']>>
    try {
      form = await request.formData()
    } catch {
      return missing('file')
    }
    if (form.get('messaging_product') !== 'whatsapp') return missing('messaging_product')
    const file = form.get('file')
    if (!(file instanceof Blob)) return missing('file')
    const type = form.get('type')
    if (typeof type !== 'string' || type === '') return missing('type')
    const id = String(2_000_000_000_000_000 + ++counter)
    fake.uploads.set(id, {
      phoneNumberId,
      type,
      bytes: new Uint8Array(await file.arrayBuffer()),
      filename: file instanceof File ? file.name : '',
      at: wallClock(),
    })
    return Response.json({ id })
  }

  /** A media message naming an upload by id that this number may not send (another's, expired, unknown), as Meta refuses it; else null. */
  function uploadRefusal(sent: Record<string, any> | null, phoneNumberId: string): Response | null {
    const id = sent?.[sent?.type ?? '']?.id
    if (typeof id !== 'string') return null
    const upload = fake.uploads.get(id)
    const fresh = upload && wallClock() - upload.at < META_UPLOAD_DAYS * 86_400_000
    if (upload && upload.phoneNumberId === phoneNumberId && fresh) return null
    return templateError(131053, 'Media upload error', `media id ${id}: not an upload of this phone number within 30 days`)
  }

  async function respond(request: Request, sent: Record<string, any> | null, record: FakeRequest): Promise<Response> {
    const url = new URL(request.url)
    const media = mediaAnswer(request, url)
    if (media) return media
    const upload = await uploadAnswer(request, url)
    if (upload) return upload
    const analytics = analyticsAnswer(request, url)
    if (analytics) return analytics
    const templates = templatesAnswer(request, url, sent)
    if (templates && request.method === 'GET' && listHold) {
      const hold = listHold
      hold.reached()
      await hold.gate
    }
    if (templates) return templates
    const edit = editAnswer(request, url, sent)
    if (edit) return edit
    const node = /^\/v[\d.]+\/([^/]+)$/.exec(url.pathname)
    const messages = /^\/v[\d.]+\/([^/]+)\/messages$/.exec(url.pathname)
    const phoneId = decodeURIComponent((node ?? messages)?.[1] ?? '')
    const phone = authenticate(request, phoneId)
    if (phone instanceof Response) return phone
    record.account = phone?.id ?? null
    if (node && request.method === 'GET') {
      // The phone number's node, with the fields asked for (and its id), as a sender's check reads it.
      const all: Record<string, string> = {
        display_phone_number: phone?.display_phone_number ?? '15550000000',
        verified_name: phone?.verified_name ?? 'Fake',
        quality_rating: phone?.quality_rating ?? 'GREEN',
      }
      const asked = (url.searchParams.get('fields') ?? '').split(',').filter((f) => f in all)
      return Response.json({ ...Object.fromEntries(asked.map((f) => [f, all[f]])), id: phoneId })
    }
    const own = fake.answer ? await fake.answer(request, sent) : undefined
    if (own) return own
    // Manners (issue 32): a read receipt, a quoted message, a reaction name a message Meta knows.
    const known = (id: unknown) => typeof id === 'string' && (fake.ids.includes(id) || fake.customerIds.includes(id))
    const unknownMessage = (field: string) => invalid(`${field}: no message with this id in this phone number's conversations`)
    if (sent?.status === 'read') {
      if (sent.messaging_product !== 'whatsapp') return missing('messaging_product')
      if (typeof sent.message_id !== 'string') return missing('message_id')
      if (sent.typing_indicator !== undefined && sent.typing_indicator?.type !== 'text')
        return invalid('typing_indicator.type must be text')
      if (!known(sent.message_id)) return unknownMessage('message_id')
      fake.reads.push({ phoneNumberId: phoneId, messageId: sent.message_id, typing: sent.typing_indicator !== undefined })
      return Response.json({ success: true })
    }
    if (sent?.context !== undefined && !known(sent.context?.message_id)) return unknownMessage('context.message_id')
    if (sent?.type === 'reaction' && typeof sent.reaction?.message_id === 'string' && !known(sent.reaction.message_id)) {
      return unknownMessage('reaction.message_id')
    }
    // The customer: `to` (a phone's digits) or, for a user known by a business-scoped user id, `recipient`
    // (issue 32), never both.
    if (sent?.to !== undefined && sent?.recipient !== undefined) return invalid('to, recipient: give one of them, not both')
    if (sent?.recipient !== undefined && !(typeof sent.recipient === 'string' && FAKE_USER_ID.test(sent.recipient))) {
      return invalid('recipient: not a business-scoped user id (two letters, a dot, up to 128 letters and digits)')
    }
    if (sent && sent.to === undefined && sent.recipient === undefined) return missing('to')
    const shape = sent ? graphShapeError(sent) : null
    if (shape) return shape
    const badUpload = uploadRefusal(sent, phoneId)
    if (badUpload) return badUpload
    // A template message from a phone number whose WhatsApp Business Account has templates: checked against them.
    const ownTemplates = fake.templates.get(fake.accountOf.get(record.sender ?? '') ?? '') ?? []
    if (sent?.type === 'template' && ownTemplates.length > 0) {
      const refused = templateRefusal(ownTemplates, sent)
      if (refused) return refused
    }
    const customer = String(sent?.to ?? sent?.recipient ?? '')
    if (sent?.type !== 'template' && fake.windows.refuses(record.sender ?? '', customer)) {
      return graphError(
        400,
        131047,
        '(#131047) Re-engagement message: more than 24 hours have passed since the recipient last replied to the sender number',
      )
    }
    const breach = fake.limits.admit(customer, fake.now(), record.sender ?? '')
    if (breach?.rule === 'rate') {
      return graphError(fake.throttleStatus, 130429, '(#130429) Rate limit hit', retryAfter(breach.waitMs, fake.retryAfter))
    }
    if (breach?.rule === 'gap') {
      return graphError(
        fake.throttleStatus,
        131056,
        '(#131056) (Business Account, Consumer Account) pair rate limit hit',
        retryAfter(breach.waitMs, fake.retryAfter),
      )
    }
    const reached = fake.recipients.get(record.sender ?? '') ?? new Set<string>()
    const to = customer
    if (fake.messagingLimit !== null && !reached.has(to) && reached.size >= fake.messagingLimit) {
      return graphError(
        400,
        131048,
        '(#131048) Spam rate limit hit: Message failed to send because there are restrictions on how many messages can be sent from this phone number.',
      )
    }
    fake.recipients.set(record.sender ?? '', reached.add(to))
    const id = `wamid.HBgNNjI4MTIzNDU2Nzg5MBUCABEYEj${(++counter).toString(16).padStart(8, '0')}A=`
    fake.ids.push(id)
    // Priced as Meta prices it: a template by its category, anything else a free service message (in the window).
    const category = sent?.type === 'template' ? ownTemplates.find((t) => t.name === sent?.template?.name)?.category : undefined
    fake.pricing.set(id, category ? metaPricing(category.toLowerCase()) : metaPricing('service', 'free_customer_service'))
    fake.accepted.add(record.text)
    const waba = fake.accountOf.get(record.sender ?? '') ?? ''
    const template = sent?.type === 'template' ? ownTemplates.find((t) => t.name === sent.template?.name) : undefined
    fake.delivered.push({
      id,
      phoneNumberId: record.sender ?? '',
      waba,
      phone: (fake.phones.get(record.sender ?? '')?.display_phone_number ?? '').replace(/\D/g, ''),
      at: wallClock(),
      category: sent?.type === 'template' ? (template?.category ?? 'UTILITY') : 'SERVICE',
      type: sent?.type === 'template' ? 'REGULAR' : 'FREE_CUSTOMER_SERVICE',
    })
    const contact =
      sent?.recipient !== undefined ? { input: sent.recipient, user_id: sent.recipient } : { input: sent?.to, wa_id: sent?.to }
    return Response.json({ messaging_product: 'whatsapp', contacts: [contact], messages: [{ id }] })
  }

  const withoutLength = (headers: Headers) => {
    const copy = new Headers(headers)
    copy.delete('content-length')
    return copy
  }

  /** The answer, its error message quoting the request's token when echoCredentials is on. */
  async function echoed(request: Request, response: Response): Promise<Response> {
    if (!fake.echoCredentials || response.status < 400) return response
    const answer = (await response
      .clone()
      .json()
      .catch(() => null)) as { error?: Record<string, unknown> } | null
    if (!answer?.error || typeof answer.error.message !== 'string') return response
    const header = request.headers.get('authorization') ?? ''
    const message = `${answer.error.message} (access token ${header.replace(/^Bearer /, '')}; Authorization: ${header})`
    return Response.json(
      { ...answer, error: { ...answer.error, message } },
      { status: response.status, headers: withoutLength(response.headers) },
    )
  }

  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const body = await request.clone().text()
      let sent: Record<string, any> | null = null
      try {
        sent = JSON.parse(body)
      } catch {
        // not JSON: recorded as it came
      }
      const record: FakeRequest = {
        at: fake.now(),
        method: request.method,
        path: new URL(request.url).pathname,
        query: new URL(request.url).search.slice(1),
        headers: request.headers,
        body,
        to: typeof sent?.to === 'string' ? sent.to : typeof sent?.recipient === 'string' ? sent.recipient : null,
        text: textOf(sent),
        account: null,
        sender: /^\/v[\d.]+\/([^/]+)\/messages$/.exec(new URL(request.url).pathname)?.[1] ?? null,
        status: 0,
        code: null,
      }
      fake.requests.push(record)
      const response = await echoed(request, await respond(request, sent, record))
      record.status = response.status
      if (response.status >= 400)
        record.code =
          (
            (await response
              .clone()
              .json()
              .catch(() => null)) as any
          )?.error?.code ?? null
      return response
    },
  })
  fake.url = `http://127.0.0.1:${server.port}`
  fake.apiBase = `${fake.url}/v21.0`
  return fake
}
