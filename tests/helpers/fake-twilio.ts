// A fake of Twilio's Messages resource on a loopback Bun.serve, as the provider tests and benchmarks
// need it: it accepts a message with an `SM…` SID (201, as Twilio does) unless the message breaks a
// limit of the sender: beyond `perSecond` it answers HTTP 429 with error 20429 ("Too many requests";
// `rateCode` may make it 63018, "Rate limit exceeded for Channel"), to a recipient within
// `recipientGapMs` of the last message 429 with 63018, each with a Retry-After unless `retryAfter` is
// false. Past `messagingLimit` unique recipients of a sender (its WhatsApp tier; none by default) it
// refuses a new recipient with 429 and 63018, the code whose documentation names WhatsApp's messaging
// limit ("Wait until 24 hours have passed since starting a business-initiated conversation"); every
// recipient counts (the fake knows no 24-hour windows). Every request is recorded with its time and answer; each message's acceptances are counted by
// its text. A test may answer a message in its place (`answer`; returning undefined falls back to the default).
//
// Accounts: once a test registers one (`account(sid, token)`), the fake checks every request's Basic
// auth as Twilio does (the account SID and its auth token, for that account's own resources; anything
// else is 401 with error 20003), answers the account resource (GET /2010-04-01/Accounts/{sid}.json,
// what a sender's check calls), and, when the account lists its numbers, refuses a From that is not one
// of them (63007). Limits are kept per sender (the From, or the MessagingServiceSid), as Twilio's
// throughput is. With no account registered, any credentials go (the provider tests' own checks).
//
// Customers: `customerWrites` posts what a customer writes to the service's incoming-message webhook,
// as Twilio does (its form fields, signed with the account's auth token in X-Twilio-Signature over the
// webhook's public URL), and opens the fake's own 24-hour window for that (sender number, customer).
// With `windows.enforce` on, a free-form Body outside it is refused with 63016 (Twilio reports it as a
// failed status after accepting; refused at once here, which the service treats the same: refunded).
//
// Media by URL (issue 32): a message's MediaUrl on the service itself (`callback.publicBaseUrl`, a signed
// link to an uploaded file) is fetched as Twilio fetches it, without credentials, and recorded in
// `fetched`; an answer other than 200 with a Content-Type is refused with 63019 ("Media failed to
// download"; Twilio reports it as a failed status after accepting, refused at once here, which the
// service treats the same: refunded). Other MediaUrls are not fetched (the fake has no internet).
//
// Content templates (issue 30): POST /v1/Content creates one under the account the credentials prove
// (twilio/text, media, call-to-action, quick-reply, card, list-picker, whatsapp/authentication, with
// the documented limits); `content(account, definition, approval?)` adds one as a test needs it.
// DELETE /v1/Content/{sid} deletes one (204; Twilio edits none: a changed template is a new one).
// POST /v1/Content/{sid}/ApprovalRequests/whatsapp asks WhatsApp's approval ({name, category}: answered
// `received`; `approve(sid, status, reason?)` moves it on); GET /v1/ContentAndApprovals lists the
// account's templates with their approval, `contentPageSize` a page at most (Twilio's PageSize and
// PageToken, `meta.next_page_url`). Once an account has a template with an approval request, its sends
// are checked against them as Twilio does: an unknown ContentSid is 21655, an approved template's
// variable missing from ContentVariables 63028, an empty one 21656. A Content template whose media URL has a
// variable (`"media": ["https://cdn.example.com/invoices/{{1}}"]`, the static prefix and a variable suffix
// Twilio documents) needs it in every send's ContentVariables, approved or not: missing or empty is 400
// with 21656 ("The ContentVariables Parameter is invalid"), a filled URL that is not http(s) 21620. The
// filled URL is what Twilio fetches: on the service it is fetched as a MediaUrl is (above).
//
// Messages: every message it accepted is kept in `messages` with what it resolved (`media`: its MediaUrls,
// or its Content template's media URL with the variables filled), so a test asserts what Twilio received.

import twilioSdk from 'twilio'
import type { Clock } from '../../src/lib/clock'
import { Acceptances, FakeLimits, FakeWindows, fakeTime, retryAfter, type FakeCallbackTarget, type FakeRequest } from './fake-rates'

/** An account (or subaccount) the fake knows: its SID, auth token and, optionally, the numbers it may send from. */
export type FakeTwilioAccount = {
  sid: string
  token: string
  friendlyName: string
  /** Its status in the account resource: active, suspended or closed. */
  status: string
  /** E.164 numbers its From may be (whatsapp:+…); empty: any. */
  numbers: string[]
}

/** A medium a customer sent through Twilio: under its account's Messages, redirecting to the fake's storage. */
export type FakeTwilioMedium = { account: string; message: string; sid: string; bytes: Uint8Array; type: string }

/** A Content template's WhatsApp approval, as ContentAndApprovals shows it (status in Twilio's lower case). */
export type FakeApproval = {
  name: string
  category: string
  status: string
  rejection_reason: string
  content_type: string
  allow_category_change: boolean
}

/** A message the fake accepted, as Twilio would have it: its Content template, variables and media resolved. */
export type FakeTwilioMessage = {
  sid: string
  to: string | null
  from: string | null
  body: string | null
  contentSid: string | null
  contentVariables: Record<string, string> | null
  /** The media it carries: its MediaUrls, or its Content template's media URL with its variable filled. */
  media: string[]
}

export type TwilioAnswer = (request: Request, form: URLSearchParams) => Response | undefined | Promise<Response | undefined>

export type FakeTwilio = {
  /** http://127.0.0.1:PORT: the TWILIO_API_BASE to give the service. */
  url: string
  requests: FakeRequest[]
  limits: FakeLimits
  /** Send Retry-After with throttling answers (default true). */
  retryAfter: boolean
  /** The code of a rate answer: 20429 (default) or 63018. */
  rateCode: number
  answer: TwilioAnswer | null
  /**
   * Every error answer's message quotes the credentials the request carried (its Authorization value,
   * that value decoded, and the auth token alone), as a misbehaving API or a proxy in front of it may.
   * Default false.
   */
  echoCredentials: boolean
  /** A sender's messaging limit: unique recipients it may reach (null: unlimited, the default). */
  messagingLimit: number | null
  /** The unique recipients each sender (From or MessagingServiceSid) reached, as its messaging limit counts them. */
  recipients: Map<string, Set<string>>
  accepted: Acceptances
  /** The SIDs it answered for accepted messages, in order. */
  ids: string[]
  /** The messages it accepted, in order, as Twilio resolved them. */
  messages: FakeTwilioMessage[]
  /** The accounts whose credentials it checks, by SID (none: it checks nothing). */
  accounts: Map<string, FakeTwilioAccount>
  /** Content templates created through its Content API (POST /v1/Content), by SID, as they were posted. */
  contents: Map<string, Record<string, any>>
  /** The account each Content template belongs to (null: made with no account registered). */
  contentAccounts: Map<string, string | null>
  /** Each Content template's WhatsApp approval, once asked for. */
  approvals: Map<string, FakeApproval>
  /** Adds a Content template to an account (an approval: as if requested); its SID. */
  content(account: string | null, definition: Record<string, any>, approval?: Partial<FakeApproval> & { name: string }): string
  /** Moves a template's WhatsApp approval on (approved, rejected, paused, disabled…). */
  approve(sid: string, status: string, reason?: string): void
  /** Templates a ContentAndApprovals page holds at most (default 50, Twilio's default PageSize caps it too). */
  contentPageSize: number
  /** Registers an account: from now on every request must carry a registered account's credentials. */
  account(sid: string, token: string, options?: { friendlyName?: string; status?: string; numbers?: string[] }): FakeTwilioAccount
  /** The 24-hour windows it keeps, and whether it enforces them (default off). */
  windows: FakeWindows
  /** Where customerWrites posts (the service's incoming-message webhook); set by the test. */
  callback: FakeCallbackTarget | null
  /**
   * A customer writes to the WhatsApp number `to` of `accountSid` (whose auth token signs, else `authToken`):
   * posts the signed form to the service and opens the fake's window; the service's answer.
   */
  customerWrites(o: { accountSid: string; to: string; from: string; text: string; name?: string; authToken?: string }): Promise<Response>
  /** The MediaUrls on the service it fetched for messages: the URL, the answer's status, Content-Type and bytes. */
  fetched: { url: string; status: number; type: string | null; bytes: Uint8Array }[]
  /** The media it serves, by their MediaUrl's path. */
  media: Map<string, FakeTwilioMedium>
  /**
   * Registers a medium; its MediaUrl. GET on it needs the account's Basic auth (401 otherwise) and
   * answers 307 to `/storage/{ME…}?Expires=…&Signature=…` on the fake's storage host (another port: another
   * origin), served without credentials.
   */
  medium(medium: FakeTwilioMedium): string
  /** Requests for a medium's MediaUrl and for its storage URL, counted. */
  mediaRequests(sid: string): { api: number; storage: number }
  /** Forgets requests, acceptances, limits, windows and the test's answer (not the accounts). */
  /** The message SIDs customers wrote (customerWrites). */
  customerSids: string[]
  /**
   * Typing indicators it took (issue 32: Twilio's Messaging v2 `POST /v2/Indicators/Typing.json`, public beta,
   * which marks the message read too): the account and the message. An unknown messageId is 404 (20404, the fake's words).
   */
  typings: { account: string | null; messageId: string }[]
  reset(): void
  stop(): void
}

/** A Twilio REST error answer, as Twilio writes them. */
export function twilioError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status }, { status, headers })
}

/** The text a message is counted by: its Body, or its Content template with the variables. */
const textOf = (form: URLSearchParams): string | null =>
  form.get('Body') ?? (form.has('ContentSid') ? `${form.get('ContentSid')} ${form.get('ContentVariables') ?? ''}` : null)

const fits = (v: unknown, max: number) => typeof v === 'string' && v.length > 0 && v.length <= max

/** The first type of a definition whose WhatsApp approval it would ask for (the most complex it has). */
const APPROVABLE = [
  'whatsapp/authentication',
  'twilio/card',
  'twilio/call-to-action',
  'twilio/quick-reply',
  'twilio/media',
  'twilio/text',
] as const
const KNOWN_TYPES = new Set<string>([...APPROVABLE, 'twilio/list-picker'])

/** Why the Content API refuses a definition (the documented limits of each content type), or null. */
function contentProblem(d: Record<string, any>): string | null {
  if (!fits(d.friendly_name, 1024) || !fits(d.language, 10)) return 'friendly_name and language are required'
  const types = d.types ?? {}
  const names = Object.keys(types)
  if (names.length === 0) return 'types: a content type is required'
  const unknown = names.find((n) => !KNOWN_TYPES.has(n))
  if (unknown) return `types: ${unknown} is not a content type`
  const quick = types['twilio/quick-reply']
  const list = types['twilio/list-picker']
  if (quick) {
    if (!fits(quick.body, 1024) || !Array.isArray(quick.actions)) return 'twilio/quick-reply: body and actions are required'
    if (quick.actions.length < 1 || quick.actions.length > 10) return 'twilio/quick-reply: 1 to 10 actions'
    if (quick.actions.some((a: any) => !fits(a?.title, 20) || !fits(a?.id, 200)))
      return 'twilio/quick-reply: action title (20) and id (200)'
  }
  if (list) {
    if (!fits(list.body, 1024) || !fits(list.button, 20) || !Array.isArray(list.items)) return 'twilio/list-picker: body, button and items'
    if (list.items.length < 1 || list.items.length > 10) return 'twilio/list-picker: 1 to 10 items'
    if (list.items.some((i: any) => !fits(i?.item, 24) || !fits(i?.id, 200) || !fits(i?.description, 72))) {
      return 'twilio/list-picker: item (24), id (200) and description (72) are required'
    }
  }
  const text = types['twilio/text']
  if (text && !fits(text.body, 1600)) return 'twilio/text: body (1600) is required'
  const media = types['twilio/media']
  if (media && (!Array.isArray(media.media) || media.media.length !== 1 || !fits(media.media[0], 2000)))
    return 'twilio/media: media (one URL) is required'
  const cta = types['twilio/call-to-action']
  if (cta) {
    if (!fits(cta.body, 1024) || !Array.isArray(cta.actions)) return 'twilio/call-to-action: body and actions are required'
    if (cta.actions.length < 1 || cta.actions.length > 3) return 'twilio/call-to-action: 1 to 3 actions'
    if (cta.actions.some((a: any) => !['URL', 'PHONE_NUMBER', 'COPY_CODE', 'VOICE_CALL'].includes(a?.type)))
      return 'twilio/call-to-action: action type URL, PHONE_NUMBER, COPY_CODE or VOICE_CALL'
    if (cta.actions.some((a: any) => a.type !== 'COPY_CODE' && !fits(a?.title, 25))) return 'twilio/call-to-action: action title (25)'
  }
  const card = types['twilio/card']
  if (card) {
    if (!fits(card.title, 1024)) return 'twilio/card: title (1024) is required'
    if (card.subtitle !== undefined && !fits(card.subtitle, 60)) return 'twilio/card: subtitle (60)'
    if (card.actions !== undefined && (!Array.isArray(card.actions) || card.actions.length > 10)) return 'twilio/card: at most 10 actions'
  }
  const auth = types['whatsapp/authentication']
  if (auth && (!Array.isArray(auth.actions) || auth.actions.length !== 1)) return 'whatsapp/authentication: one action is required'
  // Every placeholder needs a sample value.
  const placeholders = JSON.stringify(types).match(/\{\{(\d+)\}\}/g) ?? []
  if (placeholders.some((p) => !(p.slice(2, -2) in (d.variables ?? {}))))
    return 'variables: a sample value is required for every placeholder'
  return null
}

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g

/** A Content template's media URL (its approved type's, else the first type's with media), as defined. */
function mediaOfContent(definition: Record<string, any>, approvedType: string | null): string | null {
  const types = definition.types ?? {}
  const names = [...(approvedType ? [approvedType] : []), ...Object.keys(types)]
  for (const name of names) {
    const media = types[name]?.media
    if (Array.isArray(media) && typeof media[0] === 'string') return media[0]
  }
  return null
}

/** The type WhatsApp would approve of a definition, or null (a list picker alone is not a template). */
const approvableType = (d: Record<string, any>): string | null => APPROVABLE.find((t) => d.types?.[t]) ?? null

/**
 * What the Messages resource refuses of a WhatsApp message's fields: a Content template it created
 * whose placeholders ContentVariables does not fill within their limits (21656), a PersistentAction
 * that is not a geo: URI (21658? Twilio answers 400), a MediaUrl that is not http(s) (21620).
 */
function messageProblem(
  form: URLSearchParams,
  contents: Map<string, Record<string, any>>,
  strict: { known: (sid: string) => boolean; approved: (sid: string) => boolean } | null,
  approvedType: (sid: string) => string | null,
): Response | null {
  const media = form.getAll('MediaUrl')
  if (media.some((u) => !/^https?:\/\//.test(u))) return twilioError(400, 21620, 'Invalid media URL(s)')
  const action = form.get('PersistentAction')
  if (action !== null && !/^geo:-?\d+(\.\d+)?,-?\d+(\.\d+)?(\|.*)?$/.test(action)) {
    return twilioError(400, 21658, 'Invalid PersistentAction')
  }
  const sid = form.get('ContentSid')
  if (sid && strict && !strict.known(sid)) return twilioError(400, 21655, 'The ContentSid is Invalid')
  const definition = sid ? contents.get(sid) : undefined
  if (!definition) return null
  let variables: Record<string, string>
  try {
    variables = JSON.parse(form.get('ContentVariables') ?? '{}')
  } catch {
    return twilioError(400, 21656, 'The ContentVariables Parameter is invalid')
  }
  // A variable media URL: its variable filled at every send (Twilio takes the URL's suffix from it).
  const templateMedia = mediaOfContent(definition, approvedType(sid!))
  if (templateMedia !== null) {
    const keys = [...templateMedia.matchAll(PLACEHOLDER)].map((m) => m[1]!)
    if (keys.some((k) => typeof variables[k] !== 'string' || variables[k]!.trim() === '')) {
      return twilioError(400, 21656, 'The ContentVariables Parameter is invalid')
    }
    if (!/^https?:\/\/[^/\s]+\/\S*$/.test(templateMedia.replace(PLACEHOLDER, (_, k: string) => variables[k] ?? ''))) {
      return twilioError(400, 21620, 'Invalid media URL(s)')
    }
  }
  if (strict?.approved(sid!)) {
    // An approved WhatsApp template: every placeholder filled, none empty.
    const keys = [...new Set((JSON.stringify(definition.types).match(/\{\{(\d+)\}\}/g) ?? []).map((p) => p.slice(2, -2)))]
    if (keys.some((k) => !(k in variables))) {
      return twilioError(400, 63028, 'Number of parameters provided does not match the expected number of parameters')
    }
    if (keys.some((k) => typeof variables[k] !== 'string' || variables[k]!.trim() === '')) {
      return twilioError(400, 21656, 'The ContentVariables Parameter is invalid')
    }
  }
  // The template with its variables filled in must still keep within its type's limits.
  const filled = JSON.parse(
    JSON.stringify(definition.types).replace(/\{\{(\d+)\}\}/g, (_, n) => JSON.stringify(variables[n] ?? '').slice(1, -1)),
  )
  if (contentProblem({ ...definition, variables: {}, types: filled })) {
    return twilioError(400, 21656, 'The ContentVariables Parameter is invalid')
  }
  return null
}

/** `clock`: the test clock the fake keeps its limits by (the app's); without one, real time. */
export function fakeTwilio(options: { clock?: Pick<Clock, 'monotonic'> } = {}): FakeTwilio {
  const now = fakeTime(options.clock)
  let counter = 0
  // Each Content template's place in creation order, which ContentAndApprovals lists by.
  const created = new Map<string, number>()
  let made = 0
  const fake: FakeTwilio = {
    url: '',
    requests: [],
    customerSids: [],
    fetched: [],
    typings: [],
    limits: new FakeLimits(),
    retryAfter: true,
    rateCode: 20429,
    answer: null,
    echoCredentials: false,
    messagingLimit: null,
    recipients: new Map(),
    accepted: new Acceptances(),
    ids: [],
    messages: [],
    accounts: new Map(),
    windows: new FakeWindows(),
    callback: null,
    async customerWrites(o) {
      if (!fake.callback) throw new Error('fake Twilio: set callback before customerWrites')
      const token = o.authToken ?? fake.accounts.get(o.accountSid)?.token
      if (!token) throw new Error(`fake Twilio: no auth token for ${o.accountSid}`)
      const sid = `SM${crypto.randomUUID().replaceAll('-', '')}`
      fake.customerSids.push(sid)
      const fields: Record<string, string> = {
        SmsMessageSid: sid,
        NumMedia: '0',
        ProfileName: o.name ?? 'Customer',
        MessageType: 'text',
        SmsSid: sid,
        WaId: o.from.replace(/\D/g, ''),
        SmsStatus: 'received',
        Body: o.text,
        To: `whatsapp:${o.to}`,
        NumSegments: '1',
        ReferralNumMedia: '0',
        MessageSid: sid,
        AccountSid: o.accountSid,
        From: `whatsapp:${o.from}`,
        ApiVersion: '2010-04-01',
      }
      const url = `${fake.callback.publicBaseUrl}/provider/twilio/inbound`
      fake.windows.wrote(o.to, o.from)
      return fake.callback.deliver(
        new Request(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(token, url, fields),
          },
          body: new URLSearchParams(fields).toString(),
        }),
      )
    },
    contents: new Map(),
    contentAccounts: new Map(),
    approvals: new Map(),
    contentPageSize: 50,
    content(account, definition, approval) {
      const sid = `HX${(++counter).toString(16).padStart(32, '0')}`
      fake.contents.set(sid, definition)
      fake.contentAccounts.set(sid, account)
      created.set(sid, ++made)
      if (approval) {
        fake.approvals.set(sid, {
          category: 'UTILITY',
          status: 'received',
          rejection_reason: '',
          content_type: approvableType(definition) ?? '',
          allow_category_change: true,
          ...approval,
        })
      }
      return sid
    },
    approve(sid, status, reason = '') {
      const approval = fake.approvals.get(sid)
      if (!approval) throw new Error(`fake Twilio: no approval request for ${sid}`)
      approval.status = status
      approval.rejection_reason = reason
    },
    media: new Map(),
    medium(medium) {
      const path = `/2010-04-01/Accounts/${medium.account}/Messages/${medium.message}/Media/${medium.sid}`
      fake.media.set(path, medium)
      return `${fake.url}${path}`
    },
    mediaRequests(sid) {
      const api = fake.requests.filter((r) => r.path.endsWith(`/Media/${sid}`)).length
      const storage = fake.requests.filter((r) => r.path === `/storage/${sid}`).length
      return { api, storage }
    },
    account(sid, token, options = {}) {
      const account = {
        sid,
        token,
        friendlyName: options.friendlyName ?? `Fake ${sid.slice(-6)}`,
        status: options.status ?? 'active',
        numbers: options.numbers ?? [],
      }
      fake.accounts.set(sid, account)
      return account
    },
    reset() {
      fake.customerSids = []
      fake.fetched = []
      fake.typings = []
      fake.requests = []
      fake.limits.reset()
      fake.retryAfter = true
      fake.rateCode = 20429
      fake.answer = null
      fake.echoCredentials = false
      fake.messagingLimit = null
      fake.recipients.clear()
      fake.accepted.clear()
      fake.ids = []
      fake.messages = []
      fake.windows.reset()
    },
    stop: () => server.stop(true),
  }

  /**
   * The account the request's Basic auth proves, for the account named in its path: Twilio answers
   * 401 20003 ("Authenticate") to anything else. Null with no account registered (nothing is checked).
   */
  function authenticate(request: Request, pathSid: string | null): FakeTwilioAccount | Response | null {
    if (fake.accounts.size === 0) return null
    const refused = twilioError(401, 20003, 'Authenticate', { 'www-authenticate': 'Basic realm="Twilio API"' })
    const header = request.headers.get('authorization') ?? ''
    if (!header.startsWith('Basic ')) return refused
    const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    const account = colon > 0 ? fake.accounts.get(decoded.slice(0, colon)) : undefined
    if (!account || decoded.slice(colon + 1) !== account.token || (pathSid !== null && pathSid !== account.sid)) return refused
    return account
  }

  /** A medium's MediaUrl (authenticated, redirecting) or its storage URL (signed, no credentials); null otherwise. */
  function mediaAnswer(request: Request, url: URL): Response | null {
    const storage = /^\/storage\/(ME[0-9a-f]{32})$/.exec(url.pathname)
    if (storage) {
      const medium = [...fake.media.values()].find((m) => m.sid === storage[1])
      if (!medium || url.searchParams.get('Signature') !== `sig-${medium.sid}`) return new Response('AccessDenied', { status: 403 })
      return new Response(medium.bytes, { headers: { 'content-type': medium.type } })
    }
    const medium = fake.media.get(url.pathname)
    if (!medium || request.method !== 'GET') return null
    const account = authenticate(request, medium.account)
    if (account instanceof Response) return account
    // Twilio's storage is another host (a signed S3 URL): here the fake's second port, another origin.
    const location = `${storageUrl}/storage/${medium.sid}?Expires=1&Signature=sig-${medium.sid}`
    return new Response(null, { status: 307, headers: { location } })
  }

  async function respond(request: Request, form: URLSearchParams, record: FakeRequest): Promise<Response> {
    const media = mediaAnswer(request, new URL(request.url))
    if (media) return media
    const path = new URL(request.url).pathname
    if (path === '/v2/Indicators/Typing.json' && request.method === 'POST') {
      const account = authenticate(request, null)
      if (account instanceof Response) return account
      record.account = account?.sid ?? null
      const own = fake.answer ? await fake.answer(request, form) : undefined
      if (own) return own
      const messageId = form.get('messageId') ?? ''
      if (form.get('channel') !== 'whatsapp') return twilioError(400, 20001, 'channel: must be whatsapp')
      if (!fake.customerSids.includes(messageId)) return twilioError(404, 20404, `The message ${messageId} was not found`)
      fake.typings.push({ account: account?.sid ?? null, messageId })
      return Response.json({ success: true })
    }
    if (path === '/v1/Content' && request.method === 'POST') {
      // The Content API (content.twilio.com): the account is the one the credentials prove.
      const account = authenticate(request, null)
      if (account instanceof Response) return account
      record.account = account?.sid ?? null
      const own = fake.answer ? await fake.answer(request, form) : undefined
      if (own) return own
      let definition: Record<string, any>
      try {
        definition = JSON.parse(record.body)
      } catch {
        return twilioError(400, 20001, 'Invalid JSON')
      }
      const problem = contentProblem(definition)
      if (problem) return twilioError(400, 20001, problem)
      const sid = fake.content(account?.sid ?? null, definition)
      return Response.json({ sid, account_sid: account?.sid ?? null, ...definition }, { status: 201 })
    }
    const contentPath = /^\/v1\/Content\/([^/]+)$/.exec(path)
    if (contentPath && request.method === 'DELETE') {
      // DELETE /v1/Content/{sid}: the template and its approval are gone (204); another account's or an unknown one is 404.
      const account = authenticate(request, null)
      if (account instanceof Response) return account
      record.account = account?.sid ?? null
      const own = fake.answer ? await fake.answer(request, form) : undefined
      if (own) return own
      const sid = decodeURIComponent(contentPath[1]!)
      if (!fake.contents.has(sid) || (account && fake.contentAccounts.get(sid) !== account.sid)) {
        return twilioError(404, 20404, `The requested resource /v1/Content/${sid} was not found`)
      }
      fake.contents.delete(sid)
      fake.contentAccounts.delete(sid)
      fake.approvals.delete(sid)
      return new Response(null, { status: 204 })
    }
    const approvalPath = /^\/v1\/Content\/([^/]+)\/ApprovalRequests\/whatsapp$/.exec(path)
    if (approvalPath && request.method === 'POST') {
      const account = authenticate(request, null)
      if (account instanceof Response) return account
      record.account = account?.sid ?? null
      const own = fake.answer ? await fake.answer(request, form) : undefined
      if (own) return own
      return approvalAnswer(decodeURIComponent(approvalPath[1]!), account?.sid ?? null, record.body)
    }
    if (path === '/v1/ContentAndApprovals' && request.method === 'GET') {
      const account = authenticate(request, null)
      if (account instanceof Response) return account
      record.account = account?.sid ?? null
      const own = fake.answer ? await fake.answer(request, form) : undefined
      if (own) return own
      return listAnswer(new URL(request.url), account?.sid ?? null)
    }
    const accountPath = /^\/2010-04-01\/Accounts\/([^/]+)\.json$/.exec(path)
    const messagesPath = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(path)
    const pathSid = decodeURIComponent((accountPath ?? messagesPath)?.[1] ?? '') || null
    const account = authenticate(request, pathSid)
    if (account instanceof Response) return account
    record.account = account?.sid ?? null
    if (accountPath && request.method === 'GET') {
      // The account resource, as a sender's check reads it.
      return Response.json({
        sid: pathSid,
        friendly_name: account?.friendlyName ?? `Fake ${pathSid!.slice(-6)}`,
        status: account?.status ?? 'active',
        type: 'Full',
      })
    }
    if (!messagesPath || request.method !== 'POST') {
      return twilioError(404, 20404, `The requested resource ${path} was not found`)
    }
    const own = fake.answer ? await fake.answer(request, form) : undefined
    if (own) return own
    const approvedType = (sid: string) => fake.approvals.get(sid)?.content_type || null
    const shape = messageProblem(form, fake.contents, strictOf(account?.sid ?? null), approvedType)
    if (shape) return shape
    // What the message carries: its MediaUrls, or its Content template's media URL with the variables filled.
    const contentSid = form.get('ContentSid')
    const contentVariables = contentSid ? (JSON.parse(form.get('ContentVariables') ?? '{}') as Record<string, string>) : null
    const definition = contentSid ? fake.contents.get(contentSid) : undefined
    const templateMedia = definition ? mediaOfContent(definition, approvedType(contentSid!)) : null
    const resolved = templateMedia
      ? [templateMedia.replace(PLACEHOLDER, (_, k: string) => contentVariables?.[k] ?? '')]
      : form.getAll('MediaUrl')
    for (const mediaUrl of resolved) {
      if (!fake.callback || !mediaUrl.startsWith(`${fake.callback.publicBaseUrl}/`)) continue
      const got = await fake.callback.deliver(new Request(mediaUrl))
      const bytes = new Uint8Array(await got.arrayBuffer())
      const type = got.headers.get('content-type')
      fake.fetched.push({ url: mediaUrl, status: got.status, type, bytes })
      if (got.status !== 200 || !type) return twilioError(400, 63019, 'Media failed to download')
    }
    const from = form.get('From')
    if (account && account.numbers.length > 0 && from !== null && !account.numbers.includes(from.replace(/^whatsapp:/, ''))) {
      return twilioError(400, 63007, 'Twilio could not find a Channel with the specified From address')
    }
    if (!form.has('ContentSid') && fake.windows.refuses(from ?? '', form.get('To') ?? '')) {
      return twilioError(
        400,
        63016,
        'Failed to send freeform message because you are outside the allowed window. If you are using WhatsApp, please use a Message Template.',
      )
    }
    const breach = fake.limits.admit(form.get('To') ?? '', now(), record.sender ?? '')
    if (breach?.rule === 'rate') {
      const message = fake.rateCode === 20429 ? 'Too Many Requests' : 'Rate limit exceeded for Channel'
      return twilioError(429, fake.rateCode, message, retryAfter(breach.waitMs, fake.retryAfter))
    }
    if (breach?.rule === 'gap')
      return twilioError(429, 63018, 'Rate limit exceeded for Channel', retryAfter(breach.waitMs, fake.retryAfter))
    const reached = fake.recipients.get(record.sender ?? '') ?? new Set<string>()
    const to = form.get('To') ?? ''
    if (fake.messagingLimit !== null && !reached.has(to) && reached.size >= fake.messagingLimit) {
      return twilioError(429, 63018, 'Rate limit exceeded for Channel')
    }
    fake.recipients.set(record.sender ?? '', reached.add(to))
    const sid = `SM${(++counter).toString(16).padStart(32, '0')}`
    fake.ids.push(sid)
    fake.messages.push({ sid, to: form.get('To'), from, body: form.get('Body'), contentSid, contentVariables, media: resolved })
    fake.accepted.add(record.text)
    return Response.json({ sid, status: 'queued' }, { status: 201 })
  }

  /** The account's Content templates (all of them with no account registered), in creation order. */
  const contentsOf = (account: string | null) =>
    [...fake.contents.keys()]
      .filter((sid) => account === null || fake.contentAccounts.get(sid) === account)
      .sort((a, b) => created.get(a)! - created.get(b)!)

  /** How the account's sends are checked against its templates: once it has asked for an approval. */
  function strictOf(account: string | null) {
    const own = contentsOf(account)
    if (!own.some((sid) => fake.approvals.has(sid))) return null
    return {
      known: (sid: string) => own.includes(sid),
      approved: (sid: string) => fake.approvals.get(sid)?.status === 'approved',
    }
  }

  /** POST /v1/Content/{sid}/ApprovalRequests/whatsapp: {name, category}; answered `received`. */
  function approvalAnswer(sid: string, account: string | null, body: string): Response {
    const definition = fake.contents.get(sid)
    if (!definition || (account !== null && fake.contentAccounts.get(sid) !== account)) {
      return twilioError(404, 20404, `The requested resource /v1/Content/${sid}/ApprovalRequests/whatsapp was not found`)
    }
    let asked: Record<string, any>
    try {
      asked = JSON.parse(body)
    } catch {
      return twilioError(400, 20001, 'Invalid JSON')
    }
    if (typeof asked?.name !== 'string' || !/^[a-z0-9_]{1,512}$/.test(asked.name)) {
      return twilioError(400, 20001, 'name: lowercase letters, digits and underscores only')
    }
    if (!['UTILITY', 'MARKETING', 'AUTHENTICATION'].includes(asked.category)) {
      return twilioError(400, 20001, 'category: UTILITY, MARKETING or AUTHENTICATION')
    }
    const type = approvableType(definition)
    if (!type) return twilioError(400, 20001, 'This content type cannot be submitted for WhatsApp approval')
    if (fake.approvals.has(sid)) return twilioError(409, 20409, 'An approval request for this content already exists')
    const taken = contentsOf(account).some(
      (other) => fake.approvals.get(other)?.name === asked.name && fake.contents.get(other)?.language === definition.language,
    )
    if (taken) return twilioError(409, 20409, `A WhatsApp template named ${asked.name} exists already in this language`)
    const approval: FakeApproval = {
      name: asked.name,
      category: asked.category,
      status: 'received',
      rejection_reason: '',
      content_type: type,
      allow_category_change: asked.allow_category_change ?? true,
    }
    fake.approvals.set(sid, approval)
    return Response.json(approval, { status: 201 })
  }

  /** GET /v1/ContentAndApprovals: the account's templates, PageSize a page, PageToken the place after the last one shown. */
  function listAnswer(url: URL, account: string | null): Response {
    const asked = Number(url.searchParams.get('PageSize') ?? 50)
    const size = Math.max(1, Math.min(asked, 1000, fake.contentPageSize))
    const page = Number(url.searchParams.get('Page') ?? 0)
    const token = url.searchParams.get('PageToken')
    const all = contentsOf(account)
    const start = token ? all.findIndex((sid) => sid === token.replace(/^PT/, '')) + 1 : 0
    const shown = all.slice(start, start + size)
    const root = `${fake.url}/v1/ContentAndApprovals`
    const more = start + size < all.length
    const next = more ? `${root}?PageSize=${size}&Page=${page + 1}&PageToken=PT${shown.at(-1)}` : null
    return Response.json({
      contents: shown.map((sid) => {
        const d = fake.contents.get(sid)!
        return {
          sid,
          account_sid: fake.contentAccounts.get(sid),
          friendly_name: d.friendly_name,
          language: d.language,
          variables: d.variables ?? {},
          types: d.types,
          approval_requests: fake.approvals.get(sid) ?? {
            name: '',
            category: '',
            status: 'unsubmitted',
            rejection_reason: '',
            content_type: '',
            allow_category_change: true,
          },
          date_created: '2026-12-01T00:00:00Z',
          date_updated: '2026-12-01T00:00:00Z',
        }
      }),
      meta: {
        page,
        page_size: size,
        first_page_url: `${root}?PageSize=${size}&Page=0`,
        previous_page_url: null,
        url: `${root}?${url.searchParams}`,
        next_page_url: next,
        key: 'contents',
      },
    })
  }

  const withoutLength = (headers: Headers) => {
    const copy = new Headers(headers)
    copy.delete('content-length')
    return copy
  }

  /** The answer, its error message quoting the request's credentials when echoCredentials is on. */
  async function echoed(request: Request, response: Response): Promise<Response> {
    if (!fake.echoCredentials || response.status < 400) return response
    const answer = (await response
      .clone()
      .json()
      .catch(() => null)) as Record<string, unknown> | null
    if (!answer || typeof answer.message !== 'string') return response
    const header = request.headers.get('authorization') ?? ''
    const pair = Buffer.from(header.replace(/^Basic /, ''), 'base64').toString('utf8')
    const token = pair.slice(pair.indexOf(':') + 1)
    const message = `${answer.message} (Authorization: ${header}, that is ${pair}; token ${token})`
    return Response.json({ ...answer, message }, { status: response.status, headers: withoutLength(response.headers) })
  }

  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const body = await request.clone().text()
      const form = new URLSearchParams(body)
      const record: FakeRequest = {
        at: now(),
        method: request.method,
        path: new URL(request.url).pathname,
        headers: request.headers,
        body,
        to: form.get('To'),
        text: textOf(form),
        account: null,
        sender: form.get('From') ?? form.get('MessagingServiceSid'),
        status: 0,
        code: null,
      }
      fake.requests.push(record)
      const response = await echoed(request, await respond(request, form, record))
      record.status = response.status
      if (response.status >= 400)
        record.code =
          (
            (await response
              .clone()
              .json()
              .catch(() => null)) as any
          )?.code ?? null
      return response
    },
  })
  // The storage host: the same handler on another port (requests recorded alike).
  const storage = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => server.fetch(request) })
  const storageUrl = `http://127.0.0.1:${storage.port}`
  fake.url = `http://127.0.0.1:${server.port}`
  fake.stop = () => {
    server.stop(true)
    storage.stop(true)
  }
  return fake
}
