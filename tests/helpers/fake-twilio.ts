// A fake of Twilio's Messages resource on a loopback Bun.serve, as the provider tests and benchmarks
// need it: it accepts a message with an `SM…` SID (201, as Twilio does) unless the message breaks a
// limit of the sender: beyond `perSecond` it answers HTTP 429 with error 20429 ("Too many requests";
// `rateCode` may make it 63018, "Rate limit exceeded for Channel"), to a recipient within
// `recipientGapMs` of the last message 429 with 63018, each with a Retry-After unless `retryAfter` is
// false. Every request is recorded with its time and answer; each message's acceptances are counted by
// its text. A test may answer a message in its place (`answer`; returning undefined falls back to the default).
//
// Accounts: once a test registers one (`account(sid, token)`), the fake checks every request's Basic
// auth as Twilio does (the account SID and its auth token, for that account's own resources; anything
// else is 401 with error 20003), answers the account resource (GET /2010-04-01/Accounts/{sid}.json,
// what a sender's check calls), and, when the account lists its numbers, refuses a From that is not one
// of them (63007). Limits are kept per sender (the From, or the MessagingServiceSid), as Twilio's
// throughput is. With no account registered, any credentials go (the provider tests' own checks).

import { Acceptances, FakeLimits, retryAfter, type FakeRequest } from './fake-rates'

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
  accepted: Acceptances
  /** The SIDs it answered for accepted messages, in order. */
  ids: string[]
  /** The accounts whose credentials it checks, by SID (none: it checks nothing). */
  accounts: Map<string, FakeTwilioAccount>
  /** Registers an account: from now on every request must carry a registered account's credentials. */
  account(sid: string, token: string, options?: { friendlyName?: string; status?: string; numbers?: string[] }): FakeTwilioAccount
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
  /** Forgets requests, acceptances, limits and the test's answer (not the accounts). */
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

export function fakeTwilio(): FakeTwilio {
  let counter = 0
  const fake: FakeTwilio = {
    url: '',
    requests: [],
    limits: new FakeLimits(),
    retryAfter: true,
    rateCode: 20429,
    answer: null,
    accepted: new Acceptances(),
    ids: [],
    accounts: new Map(),
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
      fake.requests = []
      fake.limits.reset()
      fake.retryAfter = true
      fake.rateCode = 20429
      fake.answer = null
      fake.accepted.clear()
      fake.ids = []
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
    const from = form.get('From')
    if (account && account.numbers.length > 0 && from !== null && !account.numbers.includes(from.replace(/^whatsapp:/, ''))) {
      return twilioError(400, 63007, 'Twilio could not find a Channel with the specified From address')
    }
    const breach = fake.limits.admit(form.get('To') ?? '', performance.now(), record.sender ?? '')
    if (breach?.rule === 'rate') {
      const message = fake.rateCode === 20429 ? 'Too Many Requests' : 'Rate limit exceeded for Channel'
      return twilioError(429, fake.rateCode, message, retryAfter(breach.waitMs, fake.retryAfter))
    }
    if (breach?.rule === 'gap')
      return twilioError(429, 63018, 'Rate limit exceeded for Channel', retryAfter(breach.waitMs, fake.retryAfter))
    const sid = `SM${(++counter).toString(16).padStart(32, '0')}`
    fake.ids.push(sid)
    fake.accepted.add(record.text)
    return Response.json({ sid, status: 'queued' }, { status: 201 })
  }

  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const body = await request.clone().text()
      const form = new URLSearchParams(body)
      const record: FakeRequest = {
        at: performance.now(),
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
      const response = await respond(request, form, record)
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
