// What a messaging provider is. Everything provider-specific lives in its folder (providers/<name>/)
// behind these types: its settings, how it sends, its status callbacks (verify + parse into status
// reports) and how its error codes become `error_code`/`error_message`. The registry (registry.ts)
// lists the providers; nothing outside providers/ names one.
//
// This file imports nothing at run time (types only): the configuration reads the providers'
// settings through it, and `--help` must stay light. Its contracts sit below everything that uses them:
// the status reports a provider makes are applied by modules/status.

import type { Sql } from '../db/client'
import type { Clock } from '../lib/clock'

/** A status the provider reports for a message it accepted (the state machine applies it, forward only). */
export type ReportedStatus = 'delivered' | 'read' | 'failed' | 'sent'

/** One report of a message's status, by its SID; `errorCode`/`errorMessage` with `failed`. */
export type StatusReport = {
  sid: string
  status: ReportedStatus
  errorCode?: number | null
  errorMessage?: string | null
  /** How the provider priced the message, when it says (Meta's `pricing` on sent, delivered and read). */
  pricing?: Pricing | null
  /**
   * The recipient as the report names it, when it names a business-scoped user id (Meta's `recipient_user_id`,
   * with `recipient_id` when it gives the phone too): both together link the customer (modules/inbound).
   */
  recipient?: CustomerIds
}

/**
 * A provider's word on how it priced a message, in its own terms (the ledger maps them onto the four
 * categories): Meta's `pricing.category` (`marketing`, `utility`, `authentication`,
 * `authentication_international`, `marketing_lite`, `service`, `referral_conversion`…), its `type`
 * (`regular`, `free_customer_service`, `free_entry_point`) and the retiring `billable`.
 */
export type Pricing = { category: string | null; type: string | null; billable: boolean | null }

/** A provider's approved template (bound to an account template): sent instead of a free-form body. */
export type ProviderTemplate = {
  /** Twilio: the Content SID (`HX…`); Meta: the approved template's name. */
  ref: string
  /** Meta: the template's language code (`en_US`, `id`); null for Twilio. */
  language: string | null
  /** The variables' values in the provider template's order: Twilio `{{1}}`, `{{2}}`…, Meta's body parameters. */
  variables: string[]
  /**
   * A WhatsApp template (issue 30) for Meta: its `template.components` exactly as sent (header, body
   * and button parameters, `parameter_name` for named ones); `variables` are then its body's values.
   */
  components?: Record<string, unknown>[]
  /** A WhatsApp template for Twilio: its ContentVariables, by key (`"1"`, `"2"`… or the names). */
  contentVariables?: Record<string, string>
  /**
   * A Twilio template whose header media URL has a variable, sent with a file uploaded here (`media_id`,
   * issue 32): the variable and the URL's static prefix. Each hand-off fills it with the rest of the
   * file's signed link, made then (it expires), which must start with the prefix.
   */
  mediaVariable?: { key: string; prefix: string }
  /** A WhatsApp template's id (wa_templates) and category, as it was when the message was charged. */
  templateId?: number
  category?: string
}

/**
 * What a message asked its provider to send instead of free-form text, as recorded
 * (messages.provider_template) with the provider's name, so a hand-off recovered under another
 * provider sends the rendered text instead. A contract below its users: templates render it, the
 * ledger records it with the charge, messages send it.
 */
export type StoredTemplate = { provider: string } & ProviderTemplate & {
    /**
     * A secret the message carries (a verification's one-time code, messages/redact.ts), sealed under the
     * secrets key until the provider has it: everywhere else the row keeps (body, variables, components)
     * it is masked, and only the hand-off (a recovered one too) opens it. Never shown, never sent.
     */
    sealedSecret?: string
  }

/**
 * How a provider's approved templates are named, for binding account templates to them (admin API,
 * command line, dashboard). A provider without these rules sends free-form text only.
 */
export type TemplateRules = {
  /** What a binding's `ref` is, for help texts: "the Content SID (HX + 32 hex characters)". */
  ref: string
  /** Why `ref` cannot name one of its templates, or null when it can. */
  refError(ref: string): string | null
  /** Whether a binding carries a language code: Meta's templates do, Twilio's Content SIDs do not. */
  language: 'required' | 'optional' | 'none'
}

/** The media kinds a message can carry, named as the Cloud API names them. */
export type MediaKind = 'image' | 'video' | 'audio' | 'document' | 'sticker'

/** One reply button of an interactive message: its id (comes back with the reply) and its label. */
export type ReplyButton = { id: string; title: string }
/** One row of an interactive list. */
export type ListRow = { id: string; title: string; description?: string }

/**
 * Where a medium of a message is: a public https `link` WhatsApp fetches, or a file uploaded to this
 * service (`media_id`, POST /api/v1/media: issue 32), which each provider sends its own way (MediaStore).
 */
export type MediaSource = { link: string; media_id?: undefined } | { media_id: string; link?: undefined }

/** A file uploaded to this service, as a provider gets it to upload it itself. */
export type StoredFile = { bytes: Uint8Array; type: string; filename: string | null }

/**
 * The files uploaded to this service (modules/media), as providers send them (`media_id`): a provider
 * that takes uploads (Meta) uploads the file once and keeps its own id of it for its lifetime; one that
 * fetches links (Twilio) gets a signed link to this service that expires. Each use counts as the file's use.
 */
export type MediaStore = {
  /** The file; null when it is gone (its retention passed). */
  file(id: string): Promise<StoredFile | null>
  /** A signed link to the file on this service (GET /media/{id}?expires=&sig=), valid for a while. */
  link(id: string): Promise<string>
  /** The provider's own id of the file for `scope` (Meta: the phone number id it was uploaded to), while it is valid. */
  kept(id: string, scope: string): Promise<string | null>
  /** Keeps the provider's id of the file for `scope`, valid for `lifetimeMs` from now. */
  keep(id: string, scope: string, providerId: string, lifetimeMs: number): Promise<void>
}

/**
 * A rich message (an extension of the spec's `body`/`media_url`), as the API takes it and
 * messages.content stores it: `type` and one object named after it, as the Cloud API names them.
 * A template's header media is `{type: 'template', header}` beside its provider template.
 */
export type RichContent =
  | ({ type: 'image' | 'video'; caption?: string } & MediaSource)
  | ({ type: 'audio' | 'sticker' } & MediaSource)
  | ({ type: 'document'; caption?: string; filename?: string } & MediaSource)
  | { type: 'location'; latitude: number; longitude: number; name?: string; address?: string }
  | { type: 'button'; body: string; buttons: ReplyButton[] }
  | { type: 'list'; body: string; button: string; sections: { title?: string; rows: ListRow[] }[] }
  | { type: 'template'; header: { type: 'image' | 'video' | 'document'; filename?: string } & MediaSource }
  /** A reaction (issue 32) to a message of the conversation, by the provider's id of it; an empty emoji removes it. */
  | { type: 'reaction'; message_id: string; emoji: string }

/** What a provider can be asked to send beyond text and templates (`template_header`: a template's header media). */
export type RichKind = Exclude<RichContent['type'], 'template'> | 'template_header'

/** Every rich kind, in the order the documents list them. */
export const RICH_KINDS: readonly RichKind[] = [
  'image',
  'video',
  'audio',
  'document',
  'sticker',
  'location',
  'button',
  'list',
  'template_header',
  'reaction',
]

/**
 * One message to hand over: a free-form body (with optional media), rich content, or an approved
 * template (with header media in `content`). `body` is what the message records either way (for a
 * template its rendered text, for rich content a text rendering), shown in lists.
 */
export type OutgoingMessage = {
  id: number
  to: string
  body: string
  content?: RichContent | null
  /** The provider's id of the message this one answers, quoting it (issue 32: Meta's `context.message_id`). */
  replyTo?: string | null
} & ({ mediaUrl: string | null; template?: undefined } | { template: ProviderTemplate; mediaUrl?: null })

/** A status report the provider will make itself later (the simulator's), recorded with the hand-off. */
export type ScheduledReport = {
  status: 'delivered' | 'read' | 'failed'
  afterMs: number
  errorCode?: number
  errorMessage?: string
}

/**
 * A provider's answer that a rate was exceeded (HTTP 429; Meta 130429, 131056, 80007; Twilio 20429,
 * 63018): not a failure of the message, which stays charged and is tried again later.
 * `scope`: whose rate it was: the sender's number (130429, 20429, 63018, a bare 429), one recipient
 * (131056: too many messages to one person), or the whole business account (80007).
 * `retryAfterMs`: the provider's Retry-After, when it gave one.
 */
export type Throttle = { scope: 'sender' | 'recipient' | 'account'; retryAfterMs: number | null }

/**
 * `ok`: accepted, with the provider's message id (our `message_sid`) and any reports the provider
 * schedules itself. Otherwise the provider's error code (an int, or null) and text, which become the
 * message's `error_code`/`error_message`; with `throttle` it is not a failure but "not now" (see
 * Throttle). `pending`: not this caller's outcome to give: another process holds the message's hand-off.
 */
export type HandoffResult =
  | { ok: true; sid: string; reports?: ScheduledReport[] }
  | { ok: false; errorCode: number | null; errorMessage: string; pending?: boolean; throttle?: Throttle }

/**
 * How fast a provider takes messages from one sender, by default: messages per second, and the least
 * time between two messages to one recipient; `source` says where the numbers come from (for --help
 * and the README).
 */
export type Pace = { perSecond: number; recipientGapMs: number; source: string }

/** Where an inbound medium is, as the provider's webhook named it: Meta's media id, Twilio's MediaUrl. */
export type MediaRef = { id: string | null; url: string | null }

/**
 * A provider's answer for an inbound medium: the response whose body is its bytes (not read yet), with
 * what the provider declared of it (Meta's media node: type, size, sha256 in hex); or why not, and
 * whether trying again later may help (a network error, a timeout, a 5xx, 408 or 429; not another 4xx).
 */
export type MediaOpened =
  | { ok: true; response: Response; declaredType: string | null; declaredSize: number | null; sha256: string | null }
  | { ok: false; retry: boolean; reason: string }

/**
 * The answer of marking a customer's message read (issue 32): done, or the provider's refusal (its code
 * and text, no secret in it), or that it cannot do what was asked (`unsupported`: the reason, a 422).
 */
export type ReadAnswer =
  { ok: true } | { ok: false; unsupported?: false; code: number | null; detail: string } | { ok: false; unsupported: true; detail: string }

/** The sender of the configured provider. `send` never throws: every failure is `{ ok: false }`. */
export interface Provider {
  readonly name: string
  send(message: OutgoingMessage): Promise<HandoffResult>
  /** It makes its own status reports (HandoffResult.reports), applied when due by the simulator-reports worker. */
  readonly schedulesReports?: boolean
  /**
   * It refuses free-form messages (not an approved template) to a customer who has not written to the
   * sender within 24 hours (WhatsApp's customer-service window): the service refuses them first, uncharged
   * (modules/messages/window.ts, WINDOW_CHECK).
   */
  readonly enforcesWindow?: boolean
  /**
   * It reaches a customer by a WhatsApp business-scoped user id (`ID.1349…`, issue 32) as well as by a
   * phone: a send's `to` may be one. Without it a user id is refused 422 before charging.
   */
  readonly userIds?: boolean
  /** The rich kinds it sends (none: text, media_url and templates only); others are refused with 422 before charging. */
  readonly rich?: ReadonlySet<RichKind>
  /** Why it cannot send this content although it sends its kind (a limit of its own, naming the field), or null. */
  richProblem?(content: RichContent): string | null
  /**
   * Opens an inbound message's medium with this sender's credentials (modules/inbound/media.ts reads,
   * checks and keeps it). Absent: the provider has no media to fetch (the simulator). Never throws.
   */
  openMedia?(ref: MediaRef, signal: AbortSignal): Promise<MediaOpened>
  /**
   * Marks a customer's message (`messageId`: the provider's id of it, from `phone`) read, with a typing
   * indicator when `typing`. Absent: the provider has no read receipts. Never throws.
   */
  markRead?(read: { messageId: string; phone: string; typing: boolean }): Promise<ReadAnswer>
  /** Why it cannot quote the message a send answers (`reply_to`), or absent when it can. */
  readonly quoteProblem?: string
}

/** An environment variable of a provider, as `--help` and the README show it. */
export type ProviderVariable = { default?: string; shown?: string; meaning: string }

/** How a provider reads its variables (config.ts builds it: it stays the only reader of the environment). */
export type SettingsReader<Name extends string = string> = {
  /** The value, else the variable's default, else undefined. */
  text(name: Name): string | undefined
  /** An absolute URL (trailing slashes dropped), else the default, else undefined. */
  url(name: Name, protocols: string[]): string | undefined
  /** Stops the start with `NAME: message`. */
  fail(name: Name, message: string): never
}

/**
 * What creating a sender takes besides its settings: `timeoutMs` is PROVIDER_TIMEOUT_MS, on `clock`; `sql` for a
 * provider that keeps state (the simulator); `windowOpen(phone)`: whether the customer wrote to this
 * sender within 24 hours (from the stored inbound messages), for a provider that plays WhatsApp's window.
 */
export type ProviderContext = {
  publicBaseUrl: string
  timeoutMs: number
  clock: Clock
  sql: Sql
  windowOpen(phone: string): Promise<boolean>
  /** The files uploaded to this service, for messages that name one by `media_id` (absent: such a message fails, refunded). */
  media?: MediaStore
}

/** A request to a provider callback route, with its body exactly as received. */
export type CallbackRequest = {
  url: URL
  headers: Headers
  /** The raw bytes (signatures are computed over them); empty for a request without a body. */
  rawBody: Uint8Array
  /** The same, decoded as UTF-8. */
  body: string
}

/**
 * Which sender a callback's part is about: a stored sender's id, or null for the deployment's default
 * number (the environment's settings).
 */
export type SenderRef = number | null

/** A stored sender as its provider's callbacks see it: its id, its number, and its settings (whose secrets verify what it signs). */
export type CallbackSender<S> = { id: number; number: string; settings: S }

/**
 * What a callback's handler gets besides the request: the environment's settings (the deployment's
 * default sender) and `senders`, the stored senders of the provider its callbacks name by `identity`
 * (Twilio's AccountSid, Meta's phone_number_id; null: every stored sender of the provider).
 */
export type CallbackContext<S> = { settings: S; publicBaseUrl: string; senders(identity: string | null): Promise<CallbackSender<S>[]> }
/** A credential field of a stored sender, as the admin API, the command line and the dashboard take it. */
export type SenderField = {
  meaning: string
  /** Sealed and never shown again (tokens, secrets); a field that is not secret is shown (an account SID). */
  secret: boolean
  required: boolean
  /** What a value must look like, with the message when it does not. */
  pattern?: { test: RegExp; message: string }
}

/** The answer of a sender's check: whether the provider took its credentials, and what it said (no secret in it). */
export type SenderCheck = {
  ok: boolean
  detail: string
  /** The number's quality rating as the provider gave it (Meta's `quality_rating`: GREEN, YELLOW, RED, UNKNOWN), when it gives one. */
  quality?: string | null
}

/**
 * What a provider needs to serve stored senders (each account its own numbers and credentials). The
 * environment's settings stay the deployment's default sender; a stored sender takes its API root
 * from them too.
 */
export type SenderSupport<S> = {
  /** The credential fields an operator gives, by name. */
  fields: Record<string, SenderField>
  /** The settings a stored sender sends with: its fields, its number, and the environment's settings. */
  settingsOf(fields: Record<string, string>, number: string, environment: S): S
  /** What the provider's callbacks name the sender by (it finds the secret that verifies them). */
  identityOf(fields: Record<string, string>): string
  /** Its check reads the number's quality rating (SenderCheck.quality): a template sync reads it too. */
  readonly checkReadsQuality?: boolean
  /** One harmless call to the provider that proves the credentials. Never throws. */
  check(settings: S, context: { timeoutMs: number; clock: Clock }): Promise<SenderCheck>
}

/**
 * A WhatsApp template as the provider lists it (Meta's `message_templates` edge), its words as the
 * provider writes them (Meta's upper case): the caller maps them onto the service's.
 */
export type ListedTemplate = {
  /** The provider's own id (Meta's template id). */
  ref: string
  name: string
  language: string
  category: string
  status: string
  parameterFormat: string | null
  components: Record<string, unknown>[]
  /** Meta's quality_score.score, or null when none is given. */
  quality: string | null
  /** Meta's rejected_reason (null when none, or NONE). */
  reason: string | null
}

/** Every template of a sender, or why not (no secret in it). */
export type TemplateListing = { ok: true; templates: ListedTemplate[] } | { ok: false; detail: string }

/** A submitted template: the provider's id, status and category; or its refusal, with its code (no secret in it). */
export type TemplateSubmission =
  | { ok: true; ref: string; status: string; category: string | null }
  | {
      ok: false
      code: number | null
      detail: string
      throttled: boolean
      /** The provider keeps the name and language taken (Meta: deleted less than 30 days ago, subcode 2388023). */
      nameTaken?: boolean
    }

/** A provider's answer to an edit or a deletion of a template: done, or its refusal with its code (no secret in it). */
export type TemplateChangeAnswer = { ok: true } | { ok: false; code: number | null; detail: string; throttled: boolean }

/**
 * A provider's own review of a template submitted to it when it keeps templates here only (the
 * simulator plays Meta's): the status it will get, with Meta's reason for a rejection, and when.
 */
export type TemplateReview = { status: 'approved' | 'rejected'; reason: string | null; afterMs: number }

/** A provider's WhatsApp templates, with a sender's settings. Nothing here throws. */
export type WaTemplateSupport<S> = {
  /** Why these settings cannot reach their templates (no WhatsApp Business Account id), or null. */
  unreachable(settings: S): string | null
  /** Every template (every page). */
  list(settings: S, context: { timeoutMs: number; clock: Clock }): Promise<TemplateListing>
  /** Submits a template definition (the Cloud API's JSON, as given) for approval. */
  submit(settings: S, definition: Record<string, unknown>, context: { timeoutMs: number; clock: Clock }): Promise<TemplateSubmission>
  /**
   * What this provider cannot take of a valid Cloud API definition (Twilio: named parameters, a text
   * header), naming the part; null when it takes it. Asked before submitting: a 422, nothing sent.
   */
  definitionProblem?(definition: Record<string, unknown>): string | null
  /**
   * Edits a template at the provider (`ref`: its id there) with a new definition (the Cloud API's
   * `components`, and `category` when it changes); absent where the provider edits none (Twilio: a
   * Content template never changes, a new one is made instead).
   */
  edit?(
    settings: S,
    ref: string,
    change: Record<string, unknown>,
    context: { timeoutMs: number; clock: Clock },
  ): Promise<TemplateChangeAnswer>
  /** Deletes one template (its name, language and provider id) at the provider. */
  remove(
    settings: S,
    template: { ref: string; name: string; language: string },
    context: { timeoutMs: number; clock: Clock },
  ): Promise<TemplateChangeAnswer>
}

/**
 * One figure of the provider's own pricing analytics (Meta's `pricing_analytics` data points): how many
 * messages it counted and what it charged for them in one time bucket, one pricing category and type.
 * `cost` is in the provider's billing currency (not the service's CURRENCY): shown as the provider's.
 */
export type PricingPoint = {
  /** The bucket's start and end (epoch seconds). */
  start: number
  end: number
  /** The provider's category, as it writes it (MARKETING, UTILITY, AUTHENTICATION_INTERNATIONAL…). */
  category: string
  /** The provider's pricing type (REGULAR, FREE_CUSTOMER_SERVICE, FREE_ENTRY_POINT), '' when not given. */
  type: string
  volume: number
  cost: number
}

/** The provider's pricing analytics of a period, or why not (no secret in it). */
export type PricingAnalytics = { ok: true; points: PricingPoint[] } | { ok: false; detail: string }

/** A provider's own account of what it charged a sender (issue 31's reconciliation). Nothing here throws. */
export type PricingAnalyticsSupport<S> = {
  /** Why these settings cannot reach the analytics (no WhatsApp Business Account id), or null. */
  unreachable(settings: S): string | null
  /**
   * Every data point from `start` to `end` (epoch seconds), in half-hour buckets (so that days can be
   * cut in any time zone), every page; `phone`: the sender's number (digits) to keep to, or null for
   * the whole business account.
   */
  read(
    settings: S,
    period: { start: number; end: number; phone: string | null },
    context: { timeoutMs: number; clock: Clock },
  ): Promise<PricingAnalytics>
}

/** The kinds of inbound message the service tells apart; anything else is `unsupported` (its raw item is kept). */
export type InboundType =
  | 'text'
  | 'image'
  | 'document'
  | 'audio'
  | 'video'
  | 'sticker'
  | 'location'
  | 'contacts'
  | 'interactive'
  | 'button'
  | 'reaction'
  | 'unsupported'

/**
 * A message a customer wrote to one of our numbers, as a provider's callback parsed it (modules/inbound
 * stores it: once per provider message id, linked to the sender reached, an account and a contact).
 */
export type InboundMessage = {
  /** The provider's message id (Meta's wamid, Twilio's SM/MM SID): a repeat delivery is recognised by it. */
  id: string
  /** The customer's number as the provider gives it (`6281…`, `+6281…`); '' when it names the customer by user id only. */
  from: string
  /** The customer's WhatsApp business-scoped user id (Meta's `from_user_id` / `contacts[].user_id`), else null. */
  userId?: string | null
  /** The customer's name as the provider gives it (Meta's profile name, Twilio's ProfileName), else null. */
  name: string | null
  /** The number reached: what finds its stored sender (Meta: `identity` = phone_number_id; Twilio: `number`, E.164). */
  to: { identity: string | null; number: string | null }
  /** When the customer sent it, by the provider's clock; null when it does not say. */
  sentAt: Date | null
  type: InboundType
  /** What a list shows of it: the text, a caption, a button's or list row's title, a reaction's emoji. */
  text: string | null
  /** The normalised content of its type (see modules/inbound's README section). */
  content: Record<string, unknown>
  /** The provider's own item, kept as it came. */
  raw: unknown
  /** The provider's own opt-out signal on this message (Twilio's OptOutType STOP/START), which modules/optouts honours. */
  consent?: { optedOut: boolean; detail: string } | null
  /** The provider's id of the message it quotes (Meta's context.id, Twilio's OriginalRepliedMessageSid), else null. */
  replyTo?: string | null
}

/**
 * A provider's consent signal that comes without a message (Meta's `user_preferences`: a user stopped or
 * resumed marketing messages in WhatsApp's settings). modules/optouts honours it for the account the
 * inbound rule names; a resume lifts only an opt-out a provider's signal made.
 */
export type ConsentSignal = {
  /** The customer's number as the provider gives it ('' when it names the customer by user id only). */
  from: string
  /** The customer's business-scoped user id, when the provider gives one. */
  userId?: string | null
  /** The number reached, as for an inbound message. */
  to: { identity: string | null; number: string | null }
  optedOut: boolean
  /** What the provider said, for the record: `user_preferences=stop`. */
  detail: string
  /** When the provider says it happened: a repeat delivery older than the phone's latest change is ignored. */
  at: Date | null
}

/**
 * A status report of a callback, with the senders whose messages it may change: those the callback's
 * verified signature speaks for (a report naming another sender's message changes nothing).
 */
export type SignedReport = StatusReport & { senders: SenderRef[] }
/** An inbound message of a callback, with the sender it reached, which the verified signature speaks for. */
export type SignedInbound = InboundMessage & { sender: SenderRef }
/** A consent signal of a callback, with the sender it concerns, which the verified signature speaks for. */
export type SignedConsent = ConsentSignal & { sender: SenderRef }

/** A customer as a provider names one: a phone, a business-scoped user id, or both. */
export type CustomerIds = { phone: string | null; userId: string | null }

/**
 * A provider's word that a customer's ids changed (Meta's `user_changed_number` and `user_changed_user_id`
 * system messages): what the customer was known by, and is now. modules/inbound follows it.
 */
export type IdentityChange = {
  /** The number reached, as for an inbound message. */
  to: { identity: string | null; number: string | null }
  previous: CustomerIds
  current: CustomerIds
}
/** An identity change of a callback, with the sender it reached, which the verified signature speaks for. */
export type SignedIdentityChange = IdentityChange & { sender: SenderRef }

/**
 * A provider's word about one of its senders' WhatsApp templates (Meta's template webhooks), in the
 * provider's own terms (modules/templates maps them): which template (the provider's id, and its name
 * and language), when the provider says it happened, and what it says:
 * - `status`: Meta's `event` (APPROVED, REJECTED, PAUSED, FLAGGED, REINSTATED, ...) and its reason;
 * - `category`: a completed change (`previous` set, `next` the category now) or an impending one
 *   (`correct` set: the category it will get; `next` is still the current one, nothing changes yet);
 * - `quality`: the new quality score (GREEN, YELLOW, RED, UNKNOWN).
 */
export type TemplateNotice = {
  ref: string | null
  name: string | null
  language: string | null
  /** The provider's time of the notification (Meta's entry `time`); null when it gives none. */
  at: Date | null
} & (
  | { kind: 'status'; event: string; reason: string | null }
  | { kind: 'category'; previous: string | null; next: string | null; correct: string | null; due: Date | null }
  | { kind: 'quality'; score: string }
)

/**
 * A template notice of a callback, with the senders it may change: those of the callback's signer
 * whose WhatsApp Business Account the notification names (null: the deployment's default sender).
 */
export type SignedTemplateNotice = TemplateNotice & { senders: SenderRef[] }

/**
 * A provider's word about a sender's health (issue 32 §4: Meta's `business_capability_update`,
 * `account_update` and `phone_number_quality_update`), already in the service's terms; each field absent
 * when the notice does not say it:
 * - `messagingLimit`: the portfolio's messaging limit (unique recipients per 24 hours; null: unlimited);
 * - `restrictions`: the account's restrictions now (an empty list: lifted), each Meta's restriction type
 *   and when it ends (null: not said);
 * - `flagged`: the number's quality is flagged (FLAGGED) or no longer (UNFLAGGED);
 * - `quality`: its quality rating (green, yellow, red, unknown); `throughput`: standard or high.
 */
export type HealthNotice = {
  at: Date | null
  messagingLimit?: number | null
  restrictions?: { type: string; expiresAt: Date | null }[]
  flagged?: boolean
  quality?: string
  throughput?: 'standard' | 'high'
}

/** A health notice with the senders it may change: those of its signer in the account (and number) the notice names. */
export type SignedHealthNotice = HealthNotice & { senders: SenderRef[] }

/**
 * A verified callback's content, each part with the sender(s) its signer owns (a part naming a number
 * the signer does not own refuses the callback: 403). A status report's message is found by its SID
 * only when the route applies it: one of another sender changes nothing then. A template notice
 * changes only the templates of the senders it names (none: it changes nothing).
 */
export type CallbackAnswer = {
  reports: SignedReport[]
  inbound: SignedInbound[]
  consent?: SignedConsent[]
  templates?: SignedTemplateNotice[]
  identities?: SignedIdentityChange[]
  health?: SignedHealthNotice[]
}

/**
 * A status-callback route of a provider, mounted at `/provider/<name>/<path>` whatever PROVIDER says
 * (reports for messages sent before a switch keep arriving). The handler verifies and parses; it
 * throws an ApiError to refuse (403 bad signature, 404 when its settings cannot verify anything,
 * 400/415 for a body it cannot read). It answers either a Response of its own (a subscription
 * handshake) or a CallbackAnswer: status reports, which the route applies through the forward-only
 * state machine in one transaction and answers 200 `{changed}`, and inbound messages stored by
 * modules/inbound (`inbound`: how many were new). Every part of the answer names the sender(s) it is
 * about, which must be senders the verified signature speaks for.
 */
export type Callback<S> = {
  method: 'GET' | 'POST'
  path: string
  handle(request: CallbackRequest, context: CallbackContext<S>): CallbackAnswer | Response | Promise<CallbackAnswer | Response>
  /**
   * Its answer once the route applied the reports and stored the inbound messages, when the provider
   * expects its own (Twilio's incoming-message webhook takes TWiML); else the route's `{changed, inbound}`.
   */
  reply?(outcome: { changed: boolean; inbound: number }): Response
  /** Error statuses it answers, for the OpenAPI document (the route adds 200). */
  errors: number[]
  /** The OpenAPI operation: summary, description, parameters, requestBody, and responses for a Response of its own. */
  detail: Record<string, unknown>
}

export type ProviderPlugin<N extends string, S, V extends Record<string, ProviderVariable>> = {
  name: N
  /** Its environment variables, listed by `--help` after PROVIDER. */
  variables: V
  /**
   * Its settings. Read at every start whatever PROVIDER says (its callbacks may still be verified);
   * `selected`: PROVIDER names it, so whatever sending needs must be set (fail naming the variable).
   */
  readSettings(read: SettingsReader<keyof V & string>, selected: boolean): S
  /** The sender, when PROVIDER names it. */
  create(settings: S, context: ProviderContext): Provider
  callbacks: Callback<S>[]
  /** Its approved templates' naming, when it sends templates. */
  templates?: TemplateRules
  /** Its stored senders' credentials, identity and check. */
  senders: SenderSupport<S>
  /** Its WhatsApp templates (issue 30): listing a sender's, submitting a new one; none: templates are kept here only. */
  waTemplates?: WaTemplateSupport<S>
  /** Its own pricing analytics (Meta's `pricing_analytics`), for the reconciliation report; none: not reconciled. */
  pricingAnalytics?: PricingAnalyticsSupport<S>
  /** Without waTemplates: its review of a template submitted to a sender of its (the simulator's approval or rejection). */
  reviewsTemplates?(settings: S, definition: { name: string }): TemplateReview
  /** Its default pace (a sender's rate and the gap per recipient), which the hand-off keeps to. */
  pace: Pace
  /** The pace its settings give, when they can change it (the simulator's SIM_RATE_PER_SECOND); read it with registry.ts's paceOf. */
  paceFor?(settings: S): Pace
}

/** Declares a provider (keeps its name's and variables' literal types for the registry and `--help`). */
export const defineProvider = <const N extends string, S, const V extends Record<string, ProviderVariable>>(
  plugin: ProviderPlugin<N, S, V>,
) => plugin
