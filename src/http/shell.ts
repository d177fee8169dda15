// What every request passes through, whatever its route: a request id, the HTTPS rule, the body
// rules (authentication before the body is read, JSON only, the size limit, unknown fields, NUL
// characters), 405 for a path that names a route of other methods, and the single mapping of every
// error (ours and Elysia's) to the spec's envelope.

import { Elysia } from 'elysia'
import type { Config } from '../config'
import type { Clock } from '../lib/clock'
import type { Sql } from '../db/client'
import { isOutage } from '../db/retry'
import { ApiError, apiErrorResponse, badShape, badValue, errorResponse } from './errors'
import { authenticateRequest, rateLimitHeaders, rateLimitHeadersOf } from './auth'
import { authenticateAdmin } from './admin-auth'
import { ReplayedAnswer } from './idempotency'
import { bodyLimitOf, hasBody, MAX_BODY_BYTES, readJson, requireJsonContentType } from './body'
import type { RouteKind, RouteTable } from './routes'
import { describeValidation, nulField, unknownField, wrongContainer, type ValidationFailure } from './validation'
import { log, errorKind, errorSite } from '../lib/log'
import { identify, loggedPath } from './access-log'

export { MAX_BODY_BYTES } from './body'

const requestIds = new WeakMap<Request, string>()
const paths = new WeakMap<Request, string>()
// The body exactly as parsed: Elysia's validation works on a cleaned copy (unknown fields dropped, a
// non-object body replaced by {}), and the messages must speak of what the client sent.
const parsedBodies = new WeakMap<Request, unknown>()

export const requestIdOf = (request: Request) => requestIds.get(request) ?? 'unknown'

export function isSecure(request: Request, config: Config): boolean {
  if (config.trustProxy) {
    const forwarded = request.headers.get('x-forwarded-proto')
    if (forwarded) return forwarded.split(',')[0]!.trim().toLowerCase() === 'https'
  }
  return request.url.startsWith('https:')
}

/** The API's kinds of route: credentials of ours, JSON bodies, the envelope. */
const isApi = (kind: RouteKind | undefined): kind is 'api' | 'admin' => kind === 'api' || kind === 'admin'

/**
 * The credentials a kind of route needs: the API's key (and its request rate: the answer will say
 * where the key stands), the admin token, or none (pages check their session themselves).
 */
async function authenticateKind(
  sql: Sql,
  clock: Clock,
  config: Config,
  request: Request,
  kind: RouteKind | undefined,
  set?: { headers: Record<string, unknown> },
): Promise<void> {
  if (kind === 'api') {
    const principal = await authenticateRequest(sql, clock, request, config.keyRateLimitPerMinute)
    if (set) Object.assign(set.headers, rateLimitHeaders(principal.rate))
  } else if (kind === 'admin') {
    authenticateAdmin(config, request.headers.get('authorization'))
    identify(request, { auth: 'admin' })
  }
}

/** Pages outside the API (the dashboard) answer their errors as pages, not as the API's envelope. */
export type ErrorPages = { prefix: string; render(status: number, message: string, request: Request): Response | Promise<Response> }

export function httpShell(deps: { config: Config; sql: Sql; clock: Clock; routes: RouteTable; errorPages?: ErrorPages }) {
  const { config, sql, clock, routes } = deps
  return (
    new Elysia({ name: 'http-shell' })
      .onRequest(({ request, set }) => {
        const id =
          request.headers
            .get('x-request-id')
            ?.slice(0, 64)
            .replace(/[^\w.-]/g, '') || crypto.randomUUID()
        requestIds.set(request, id)
        set.headers['x-request-id'] = id
        const path = new URL(request.url).pathname
        paths.set(request, path)
        if (config.requireHttps && routes.kindOfPath(path) !== 'health' && !isSecure(request, config)) {
          return errorResponse('HTTPS_REQUIRED', 'this service accepts HTTPS requests only', 403, id)
        }
        // A declared length over the route's limit (a provider callback's is far lower) is refused
        // before a byte of the body is read.
        const length = Number(request.headers.get('content-length') ?? 0)
        const limit = routes.rawBodyLimitOfPath(path) ?? bodyLimitOf(routes.kindOfPath(path))
        if (length > limit) return errorResponse('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`, 413, id)
        const allowed = routes.staticMethods(path)
        if (allowed && !allowed.has(request.method)) return methodNotAllowed(request, path, [...allowed], id, routes.kindOfPath(path))
      })
      // Runs for every route that can take a body, before Elysia reads it.
      .onParse({ as: 'global' }, async ({ request, route, set }) => {
        const declared = routes.byRoute(request.method, route)
        const kind = declared?.kind
        if (!isApi(kind)) {
          // Provider callbacks read their bodies themselves: their signatures cover the raw bytes.
          if (kind === 'callback') return
          // Elsewhere outside the API a route parses its own content types.
          if (!request.headers.get('content-type')?.toLowerCase().startsWith('application/json')) return
        } else {
          // A bad key is 401 whatever the body, and an unauthenticated (or rate-limited) body is never read.
          await authenticateKind(sql, clock, config, request, kind, set)
          // An upload reads its own body (its `parse`), whatever its type, once authenticated.
          if (declared?.rawBodyLimit != null) return
          if (!hasBody(request)) return null
          requireJsonContentType(request.headers.get('content-type'))
        }
        const value = await readJson(request)
        parsedBodies.set(request, value)
        return value
      })
      // After parsing, before the routes' own hooks and validation; routes without a body were not
      // authenticated yet (the key lookup is shared with the route's derive).
      .onTransform({ as: 'global' }, async ({ request, route, params, query, set }) => {
        const kind = routes.byRoute(request.method, route)?.kind
        await authenticateKind(sql, clock, config, request, kind, set)
        // Elysia keeps a parameter that does not decode (%FF) as its raw text; it is refused instead.
        const undecodable = undecodableParameter(request.url)
        if (undecodable !== null) throw badShape(`${undecodable}: not valid percent-encoded UTF-8`)
        const inQuery = nulField(query)
        if (inQuery) throw badValue(`${inQuery}: must not contain NUL characters (\\u0000)`)
        const inPath = nulField(params)
        if (inPath) throw badValue(`${inPath}: must not contain NUL characters (\\u0000)`)
        const body = parsedBodies.get(request)
        if (body === undefined || body === null) return
        if (isApi(kind)) {
          const schema = routes.bodySchema(request.method, route)
          // A route without a body model takes no body: at most {} (or nothing).
          if (!schema && (typeof body !== 'object' || Array.isArray(body))) throw badShape('body must be a JSON object')
          const unknown = unknownField(schema, body)
          if (unknown) throw badShape(`${unknown}: unknown field`)
          const wrong = wrongContainer(schema, body)
          if (wrong) throw badShape(wrong)
        }
        const inBody = nulField(body)
        if (inBody) throw badValue(`${inBody}: text must not contain NUL characters (\\u0000)`)
      })
      .onError({ as: 'global' }, async (context) => {
        const answer = await errorAnswer(context).catch((inner: unknown) =>
          // Answering may itself read the database (a key's check before a validation error, a page's
          // session), which can be away too: then that failure is the answer.
          errorAnswer({ ...context, code: 'UNKNOWN', error: inner }),
        )
        // An answer to a key's request says where the key stands, whatever went wrong after its lookup.
        if (answer instanceof Response)
          for (const [name, value] of Object.entries(rateLimitHeadersOf(context.request))) answer.headers.set(name, value)
        return answer
      })
  )

  /** The answer to an error (ours and Elysia's): the API's envelope, or a dashboard page. */
  async function errorAnswer({ code, error, request, path }: { code: string | number; error: unknown; request: Request; path: string }) {
    const requestId = requestIdOf(request)
    const pages = deps.errorPages
    if (pages && (path === pages.prefix || path.startsWith(`${pages.prefix}/`))) {
      if (code === 'NOT_FOUND') return pages.render(404, 'This page does not exist.', request)
      if (code === 'PARSE') return pages.render(400, 'The form could not be read.', request)
      if (!(error instanceof ApiError)) {
        log.error('unhandled error', {
          request_id: requestId,
          method: request.method,
          path: loggedPath(path),
          error: error instanceof Error ? errorKind(error) : String(code),
          at: errorSite(error),
        })
        return pages.render(500, `Something went wrong on our side (request id ${requestId}).`, request)
      }
      return pages.render(error.status, error.message, request)
    }
    if (error instanceof ReplayedAnswer) {
      return new Response(error.status < 400 ? error.body : withRequestId(error.body, requestId), {
        status: error.status,
        headers: { 'content-type': 'application/json; charset=utf-8', 'idempotent-replayed': 'true', 'x-request-id': requestId },
      })
    }
    // Elysia wraps what a parse hook throws in a ParseError; ours rides along as its cause.
    const own = error instanceof ApiError ? error : (error as { cause?: unknown })?.cause
    if (own instanceof ApiError) return apiErrorResponse(own, requestId)
    if (code === 'PARSE' || code === 'VALIDATION') {
      // Authentication comes before validation: a bad key gets 401 whatever the body.
      const authError = await authFailure(sql, clock, config, request, routes.kindOfPath(paths.get(request) ?? path))
      if (authError) return apiErrorResponse(authError, requestId)
      if (code === 'PARSE') return errorResponse('VALIDATION_ERROR', 'body is not valid JSON', 400, requestId)
      const { status, message } = describeValidation(error as ValidationFailure, parsedBodies.get(request))
      return errorResponse('VALIDATION_ERROR', message, status, requestId)
    }
    if (code === 'NOT_FOUND') {
      const allowed = routes.methodsFor(path).filter((m) => m !== request.method)
      if (allowed.length > 0) return methodNotAllowed(request, path, allowed, requestId, routes.kindOfPath(path))
      return errorResponse('NOT_FOUND', `no route for ${request.method} ${path}`, 404, requestId)
    }
    if (code === 'INVALID_COOKIE_SIGNATURE' || code === 'INVALID_FILE_TYPE') {
      return errorResponse('VALIDATION_ERROR', 'request is not valid', 400, requestId)
    }
    const status = (error as { status?: number }).status
    if (status === 413) return errorResponse('PAYLOAD_TOO_LARGE', `request body exceeds ${MAX_BODY_BYTES} bytes`, 413, requestId)
    if (isOutage(error)) {
      // Not a fault of ours to report, and not the client's: the database is away for a moment.
      log.warn('database unreachable', { request_id: requestId, method: request.method, path: loggedPath(path), error: errorKind(error) })
      return errorResponse(
        'SERVICE_UNAVAILABLE',
        'the database could not be reached; retry shortly (with the same Idempotency-Key, a send or bulk is never charged twice)',
        503,
        requestId,
        { 'retry-after': '1' },
      )
    }
    log.error('unhandled error', {
      request_id: requestId,
      method: request.method,
      path: loggedPath(path),
      error: error instanceof Error ? errorKind(error) : String(code),
      at: errorSite(error),
      detail: config.logLevel === 'debug' && error instanceof Error ? error.message : undefined,
    })
    return errorResponse('INTERNAL_ERROR', `internal error (request id ${requestId})`, 500, requestId)
  }
}

/** The name of the first query parameter whose name or value is not valid percent-encoded UTF-8, or null. */
function undecodableParameter(url: string): string | null {
  const start = url.indexOf('?')
  if (start === -1 || !url.includes('%', start)) return null
  for (const pair of url.slice(start + 1).split('&')) {
    const equals = pair.indexOf('=')
    const name = equals === -1 ? pair : pair.slice(0, equals)
    const value = equals === -1 ? '' : pair.slice(equals + 1)
    try {
      decodeURIComponent(name)
    } catch {
      return 'query'
    }
    try {
      decodeURIComponent(value)
    } catch {
      return decodeURIComponent(name).slice(0, 100) || 'query'
    }
  }
  return null
}

// No CORS: the API is called from servers, with keys that must never reach a browser. A preflight
// gets this 405 without Access-Control-* headers, so the browser stops, and the message says why.
const NO_CORS =
  ': this API does not answer CORS preflights; it is called server to server (an API key must never be in a browser), so call it from your own backend'

function methodNotAllowed(request: Request, path: string, allowed: string[], requestId: string, kind: RouteKind | undefined): Response {
  const message = `${request.method} is not allowed on ${path}${request.method === 'OPTIONS' && isApi(kind) ? NO_CORS : ''}`
  return errorResponse('METHOD_NOT_ALLOWED', message, 405, requestId, { allow: allowed.join(', ') })
}

/** A stored error answer replayed (Idempotency-Key) names the request that got it now. */
function withRequestId(body: string, requestId: string): string {
  try {
    return JSON.stringify({ ...JSON.parse(body), request_id: requestId })
  } catch {
    return body
  }
}

async function authFailure(
  sql: Sql,
  clock: Clock,
  config: Config,
  request: Request,
  kind: RouteKind | undefined,
): Promise<ApiError | null> {
  try {
    await authenticateKind(sql, clock, config, request, kind)
    return null
  } catch (error) {
    if (error instanceof ApiError) return error
    throw error
  }
}
