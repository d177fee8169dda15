// A fake of Twilio's Messages resource on a loopback Bun.serve, as the provider tests and benchmarks
// need it: it accepts a message with an `SM…` SID (201, as Twilio does) unless the message breaks a
// limit of the sender: beyond `perSecond` it answers HTTP 429 with error 20429 ("Too many requests";
// `rateCode` may make it 63018, "Rate limit exceeded for Channel"), to a recipient within
// `recipientGapMs` of the last message 429 with 63018, each with a Retry-After unless `retryAfter` is
// false. Every request is recorded with its time and answer; each message's acceptances are counted by
// its text. A test may answer in its place (`answer`; returning undefined falls back to the default).

import { Acceptances, FakeLimits, retryAfter, type FakeRequest } from './fake-rates'

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
  /** Forgets requests, acceptances, limits and the test's answer. */
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

  async function respond(request: Request, form: URLSearchParams, record: FakeRequest): Promise<Response> {
    const own = fake.answer ? await fake.answer(request, form) : undefined
    if (own) return own
    const breach = fake.limits.admit(form.get('To') ?? '', performance.now())
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
  fake.url = `http://127.0.0.1:${server.port}`
  return fake
}
