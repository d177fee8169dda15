// A fake of Meta's Graph API (the WhatsApp Cloud API's messages endpoint) on a loopback Bun.serve, as
// the provider tests and benchmarks need it: it accepts a message with a `wamid.…` id, as Meta does,
// unless the message breaks a limit of the sender: beyond `perSecond` it answers 130429 ("Rate limit
// hit"), to a recipient within `recipientGapMs` of the last message it answers 131056 ("pair rate limit
// hit"), each with a Retry-After unless `retryAfter` is false. Every request is recorded with its time
// and answer; each message's acceptances are counted by its text. A test may answer in its place
// (`answer`; returning undefined falls back to the default).

import { Acceptances, FakeLimits, retryAfter, type FakeRequest } from './fake-rates'

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
  accepted: Acceptances
  /** The ids it answered for accepted messages, in order. */
  ids: string[]
  /** Forgets requests, acceptances, limits and the test's answer. */
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
    accepted: new Acceptances(),
    ids: [],
    reset() {
      fake.requests = []
      fake.limits.reset()
      fake.retryAfter = true
      fake.throttleStatus = 400
      fake.answer = null
      fake.accepted.clear()
      fake.ids = []
    },
    stop: () => server.stop(true),
  }

  async function respond(request: Request, sent: Record<string, any> | null, record: FakeRequest): Promise<Response> {
    const own = fake.answer ? await fake.answer(request, sent) : undefined
    if (own) return own
    const breach = fake.limits.admit(String(sent?.to ?? ''), performance.now())
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
