// A fake of Twilio's account resource on a loopback Bun.serve, as a sender's check calls it:
// GET /2010-04-01/Accounts/{sid}.json with basic auth. It answers 200 with the account (status
// active) when the auth token is one of `tokens` for that SID, else 401 with Twilio's error 20003.
// Every request's SID and whether it was authorised are recorded. GET /v1/ContentAndApprovals (the
// Content API, as a sender's template sync lists it; give its url as TWILIO_CONTENT_API_BASE too)
// answers no templates to the same credentials (not recorded).

export type FakeTwilioAccount = {
  /** http://127.0.0.1:PORT: the TWILIO_API_BASE to give the service. */
  url: string
  /** The auth tokens it takes, by account SID. */
  tokens: Map<string, string>
  requests: { sid: string; authorised: boolean }[]
  stop(): void
}

export function fakeTwilioAccount(friendlyName = 'Toko Maju'): FakeTwilioAccount {
  const tokens = new Map<string, string>()
  const requests: FakeTwilioAccount['requests'] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const url = new URL(request.url)
      if (request.method === 'GET' && url.pathname === '/v1/ContentAndApprovals') {
        // The account's Content templates, as a sender's template sync lists them: none.
        const basic = (request.headers.get('authorization') ?? '').replace(/^Basic /, '')
        const [sid, token] = Buffer.from(basic, 'base64').toString('utf8').split(':')
        if (token === undefined || tokens.get(sid!) !== token)
          return Response.json({ code: 20003, message: 'Authenticate', status: 401 }, { status: 401 })
        return Response.json({ contents: [], meta: { next_page_url: null } })
      }
      const path = /^\/2010-04-01\/Accounts\/(AC[0-9a-fA-F]{32})\.json$/.exec(url.pathname)
      if (request.method !== 'GET' || !path) return Response.json({ code: 20404, message: 'not found', status: 404 }, { status: 404 })
      const basic = (request.headers.get('authorization') ?? '').replace(/^Basic /, '')
      const [sid, token] = Buffer.from(basic, 'base64').toString('utf8').split(':')
      const authorised = sid === path[1] && token !== undefined && tokens.get(sid!) === token
      requests.push({ sid: path[1]!, authorised })
      if (!authorised) return Response.json({ code: 20003, message: 'Authenticate', status: 401 }, { status: 401 })
      return Response.json({ sid, friendly_name: friendlyName, status: 'active' })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, tokens, requests, stop: () => server.stop(true) }
}
