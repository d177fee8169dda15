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
// Customers: `customerWrites` posts what a customer writes to the service's webhook, as Meta does (a
// `messages[]` notification with `metadata.phone_number_id`, signed with the app secret in
// X-Hub-Signature-256), and opens the fake's own 24-hour window for that (phone number id, customer).
// With `windows.enforce` on, a free-form message outside it is refused with 131047 (Meta reports it
// as a failed status after accepting; refused at once here, which the service treats the same: refunded).

import { createHmac } from 'node:crypto'
import { Acceptances, FakeLimits, FakeWindows, retryAfter, type FakeCallbackTarget, type FakeRequest } from './fake-rates'

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

export type GraphAnswer = (request: Request, sent: Record<string, any> | null) => Response | undefined | Promise<Response | undefined>

export type FakeGraph = {
  /** http://127.0.0.1:PORT */
  url: string
  /** The META_API_BASE to give the service: `${url}/v21.0`. */
  apiBase: string
  requests: FakeRequest[]
  limits: FakeLimits
  /** Send Retry-After with throttling answers (default true). */
  retryAfter: boolean
  /** The HTTP status of a throttling answer (default 400, as the Graph API answers its errors). */
  throttleStatus: number
  answer: GraphAnswer | null
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
  /** The 24-hour windows it keeps, and whether it enforces them (default off). */
  windows: FakeWindows
  /** Where customerWrites posts (the service's webhook); set by the test. */
  callback: FakeCallbackTarget | null
  /**
   * A customer writes to a phone number id: posts the signed `messages[]` notification to the service
   * (`appSecret`: else the phone's registered one) and opens the fake's window; the service's answer.
   */
  customerWrites(o: { phoneNumberId: string; from: string; text: string; name?: string; appSecret?: string }): Promise<Response>
  /** Forgets requests, acceptances, limits, windows and the test's answer (not the phone numbers). */
  reset(): void
  stop(): void
}

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
  const caption = sent.image?.caption ?? sent.document?.caption
  if (typeof caption === 'string') return caption
  if (sent.template) return JSON.stringify(sent.template)
  return null
}

export function fakeGraph(): FakeGraph {
  let counter = 0
  const fake: FakeGraph = {
    url: '',
    apiBase: '',
    requests: [],
    limits: new FakeLimits(),
    retryAfter: true,
    throttleStatus: 400,
    answer: null,
    messagingLimit: null,
    recipients: new Map(),
    accepted: new Acceptances(),
    ids: [],
    phones: new Map(),
    windows: new FakeWindows(),
    callback: null,
    async customerWrites(o) {
      if (!fake.callback) throw new Error('fake Graph: set callback before customerWrites')
      const secret = o.appSecret ?? fake.phones.get(o.phoneNumberId)?.appSecret
      if (!secret) throw new Error(`fake Graph: no app secret for ${o.phoneNumberId}`)
      const from = o.from.replace(/\D/g, '')
      const body = JSON.stringify({
        object: 'whatsapp_business_account',
        entry: [
          {
            id: '200000000000001',
            changes: [
              {
                field: 'messages',
                value: {
                  messaging_product: 'whatsapp',
                  metadata: {
                    display_phone_number: fake.phones.get(o.phoneNumberId)?.display_phone_number ?? '15550000000',
                    phone_number_id: o.phoneNumberId,
                  },
                  contacts: [{ profile: { name: o.name ?? 'Customer' }, wa_id: from }],
                  messages: [
                    {
                      from,
                      id: `wamid.HBgNIN${(++counter).toString(16).padStart(8, '0')}${crypto.randomUUID().replaceAll('-', '')}`,
                      timestamp: String(Math.floor(Date.now() / 1000)),
                      type: 'text',
                      text: { body: o.text },
                    },
                  ],
                },
              },
            ],
          },
        ],
      })
      fake.windows.wrote(o.phoneNumberId, from)
      return fake.callback.deliver(
        new Request(`${fake.callback.publicBaseUrl}/provider/meta/webhook`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`,
          },
          body,
        }),
      )
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
      fake.limits.reset()
      fake.retryAfter = true
      fake.throttleStatus = 400
      fake.answer = null
      fake.messagingLimit = null
      fake.recipients.clear()
      fake.accepted.clear()
      fake.ids = []
      fake.windows.reset()
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

  async function respond(request: Request, sent: Record<string, any> | null, record: FakeRequest): Promise<Response> {
    const url = new URL(request.url)
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
    if (sent?.type !== 'template' && fake.windows.refuses(record.sender ?? '', String(sent?.to ?? ''))) {
      return graphError(
        400,
        131047,
        '(#131047) Re-engagement message: more than 24 hours have passed since the recipient last replied to the sender number',
      )
    }
    const breach = fake.limits.admit(String(sent?.to ?? ''), performance.now(), record.sender ?? '')
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
    const to = String(sent?.to ?? '')
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
    fake.accepted.add(record.text)
    return Response.json({ messaging_product: 'whatsapp', contacts: [{ input: sent?.to, wa_id: sent?.to }], messages: [{ id }] })
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
        at: performance.now(),
        method: request.method,
        path: new URL(request.url).pathname,
        headers: request.headers,
        body,
        to: typeof sent?.to === 'string' ? sent.to : null,
        text: textOf(sent),
        account: null,
        sender: /^\/v[\d.]+\/([^/]+)\/messages$/.exec(new URL(request.url).pathname)?.[1] ?? null,
        status: 0,
        code: null,
      }
      fake.requests.push(record)
      const response = await respond(request, sent, record)
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
