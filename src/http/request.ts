// What the server hands to the app: a request whose path the router reads right, and whose body of
// unknown length cannot grow past the limit whoever reads it.

import { MAX_BODY_BYTES, tooLarge } from './body'

// Elysia finds the path by slicing request.url from the first "/" after its 11th character: it assumes
// "http://" and a host of at least four characters. With `Host: api` (http://api/api/v1/balance) the
// router would see /v1/balance, and with no usable Host at all Bun gives a bare path. Such a request
// gets a URL with this placeholder host (the Host header itself is left as it came).
const PLACEHOLDER_HOST = 'host.invalid'

/** Index of the "/" that starts the path of an absolute or bare URL. */
function pathStart(url: string): number {
  if (url.startsWith('/')) return 0
  const authority = url.indexOf('//')
  const slash = url.indexOf('/', authority + 2)
  return slash === -1 ? url.length : slash
}

export function prepareRequest(request: Request, secure: boolean): Request {
  const url = request.url
  const start = pathStart(url)
  const shifted = url.indexOf('/', 11) !== start
  const unbounded = request.body !== null && request.headers.get('content-length') === null
  if (!shifted && !unbounded) return request
  const scheme = start === 0 ? (secure ? 'https:' : 'http:') : url.slice(0, url.indexOf(':') + 1)
  const path = start < url.length ? url.slice(start) : '/'
  const takesBody = request.method !== 'GET' && request.method !== 'HEAD'
  return new Request(shifted ? `${scheme}//${PLACEHOLDER_HOST}${path}` : url, {
    method: request.method,
    headers: request.headers,
    body: takesBody && request.body ? request.body.pipeThrough(byteLimit(MAX_BODY_BYTES)) : null,
    signal: request.signal,
    duplex: 'half', // required with a streamed body
  })
}

/** Passes bytes through until more than `limit` have gone by, then fails the stream with a 413. */
function byteLimit(limit: number): TransformStream<Uint8Array, Uint8Array> {
  let total = 0
  return new TransformStream({
    transform(chunk, controller) {
      total += chunk.byteLength
      if (total > limit) controller.error(tooLarge())
      else controller.enqueue(chunk)
    },
  })
}

// The address of each request's client, as the server's socket saw it (app.handle cannot ask the server).
const clientAddresses = new WeakMap<Request, string>()

/** Records the socket's address of a request the server hands to the app. */
export function rememberClientAddress(request: Request, address: string | undefined): void {
  if (address) clientAddresses.set(request, address)
}

/**
 * The client's address: the first X-Forwarded-For entry when the service trusts its proxy
 * (TRUST_PROXY), else the socket's; null when neither is known (a request made by a test's app.handle).
 */
export function clientAddressOf(request: Request, trustProxy: boolean): string | null {
  const forwarded = trustProxy ? request.headers.get('x-forwarded-for')?.split(',')[0]?.trim() : undefined
  return forwarded || clientAddresses.get(request) || null
}
