// What every request passes through, whatever its route: a request id, the HTTPS rule, the body
// size limit, and the single mapping of every error (ours and Elysia's) to the spec's envelope.

import { Elysia, ParseError } from 'elysia'
import type { Config } from '../config'
import type { Sql } from '../db/client'
import { ApiError, badValue, errorResponse } from './errors'
import { authenticate } from './auth'
import { authenticateAdmin } from './admin-auth'
import { ReplayedAnswer } from './idempotency'
import { log } from '../lib/log'

export const MAX_BODY_BYTES = 8 * 1024 * 1024
const HEALTH_PATHS = new Set(['/healthz', '/readyz'])
const requestIds = new WeakMap<Request, string>()
// The body exactly as parsed: Elysia's validation error replaces a non-object body with {}, and the
// message should still say "body must be a JSON object".
const parsedBodies = new WeakMap<Request, unknown>()

export const requestIdOf = (request: Request) => requestIds.get(request) ?? 'unknown'

export function isSecure(request: Request, config: Config): boolean {
  if (config.trustProxy) {
    const forwarded = request.headers.get('x-forwarded-proto')
    if (forwarded) return forwarded.split(',')[0]!.trim().toLowerCase() === 'https'
  }
  return request.url.startsWith('https:')
}

type ValidationIssue = { path?: string; message?: string; schema?: { type?: string; anyOf?: unknown } }

/** "messages[3].to" from "/messages/3/to". */
function fieldName(pointer: string): string {
  return pointer
    .split('/')
    .filter(Boolean)
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('')
}

function valueAt(root: unknown, pointer: string): unknown {
  let value: unknown = root
  for (const part of pointer.split('/').filter(Boolean)) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<string, unknown>)[part]
  }
  return value
}

/** PostgreSQL text cannot hold U+0000: such a value is refused up front rather than failing in SQL. */
function containsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000')
  if (Array.isArray(value)) return value.some(containsNul)
  if (value !== null && typeof value === 'object') return Object.entries(value).some(([k, v]) => k.includes('\u0000') || containsNul(v))
  return false
}

const isPlainObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v)

function describeValidation(error: { type?: string; value?: unknown; all?: ValidationIssue[] }, rawBody: unknown): string {
  if (error.type === 'body' && rawBody !== undefined) error = { ...error, value: rawBody, all: error.all }
  const where = error.type === 'query' ? 'query' : error.type === 'params' ? 'path' : 'body'
  const issue = error.all?.[0]
  if (!issue?.path) return where === 'body' ? 'body must be a JSON object' : `${where} is not valid`
  if (where === 'body' && !isPlainObject(error.value)) return 'body must be a JSON object'
  // The first container on the path that is not what the schema needs is the one to name.
  const parts = issue.path.split('/').filter(Boolean)
  for (let i = 1; i < parts.length; i++) {
    const pointer = `/${parts.slice(0, i).join('/')}`
    const container = valueAt(error.value, pointer)
    const wantsArray = /^\d+$/.test(parts[i]!)
    if (wantsArray ? !Array.isArray(container) : !isPlainObject(container)) {
      return container === undefined
        ? `${fieldName(pointer)}: is required`
        : `${fieldName(pointer)}: must be ${wantsArray ? 'an array' : 'an object'}`
    }
  }
  const name = fieldName(issue.path)
  const value = valueAt(error.value, issue.path)
  if (value === undefined) return `${name}: is required`
  const type = issue.schema?.type ?? (issue.schema?.anyOf ? 'integer' : undefined)
  if (type === 'integer' || type === 'number') return `${name}: must be an integer`
  if (type) return `${name}: must be ${type === 'array' || type === 'object' ? 'an' : 'a'} ${type}`
  return `${name}: ${issue.message ?? 'is not valid'}`
}

/** Methods that some route answers for `path`, to tell 405 from 404. */
export type MethodsFor = (path: string) => string[]

export function methodsFromRoutes(routes: () => { method: string; path: string }[]): MethodsFor {
  let table: { method: string; pattern: RegExp }[] | undefined
  return (path) => {
    table ??= routes().map((r) => ({
      method: r.method.toUpperCase(),
      pattern: new RegExp(
        `^${r.path
          .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
          .replace(/:[^/]+/g, '[^/]+')
          .replace(/\*/g, '.*')}/?$`,
      ),
    }))
    return [...new Set(table.filter((r) => r.pattern.test(path)).map((r) => r.method))]
  }
}

export function httpShell(deps: { config: Config; sql: Sql; methodsFor: MethodsFor }) {
  const { config, sql } = deps
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
        if (config.requireHttps && !HEALTH_PATHS.has(path) && !isSecure(request, config)) {
          return errorResponse('HTTPS_REQUIRED', 'this service accepts HTTPS requests only', 403, { 'x-request-id': id })
        }
        const length = Number(request.headers.get('content-length') ?? 0)
        if (length > MAX_BODY_BYTES) {
          return errorResponse('PAYLOAD_TOO_LARGE', `request body exceeds ${MAX_BODY_BYTES} bytes`, 413, { 'x-request-id': id })
        }
      })
      .onParse({ as: 'global' }, async ({ request, contentType }) => {
        if (!contentType?.toLowerCase().startsWith('application/json')) return
        const text = await request.text()
        // Bodies without Content-Length (chunked) are measured here.
        if (text.length > MAX_BODY_BYTES) throw new ApiError('PAYLOAD_TOO_LARGE', `request body exceeds ${MAX_BODY_BYTES} bytes`)
        let value: unknown
        try {
          value = JSON.parse(text)
        } catch {
          throw new ParseError()
        }
        parsedBodies.set(request, value)
        return value
      })
      // After authentication (a derive) and shape validation, before any handler.
      .onBeforeHandle({ as: 'global' }, ({ request }) => {
        if (containsNul(parsedBodies.get(request))) throw badValue('body: text must not contain NUL characters (\\u0000)')
      })
      .onError({ as: 'global' }, async ({ code, error, request, path }) => {
        const headers = { 'x-request-id': requestIdOf(request) }
        if (error instanceof ReplayedAnswer) {
          return new Response(error.body, {
            status: error.status,
            headers: { 'content-type': 'application/json; charset=utf-8', 'idempotent-replayed': 'true', ...headers },
          })
        }
        // Elysia wraps what a parse hook throws in a ParseError; ours rides along as its cause.
        const own = error instanceof ApiError ? error : (error as { cause?: unknown })?.cause
        if (own instanceof ApiError) return errorResponse(own.code, own.message, own.status, headers)
        if (code === 'PARSE' || code === 'VALIDATION') {
          // Authentication comes before validation: a bad key gets 401 whatever the body.
          const authError = await authFailure(sql, config, request, path)
          if (authError) return errorResponse(authError.code, authError.message, authError.status, headers)
          const message = code === 'PARSE' ? 'body is not valid JSON' : describeValidation(error as never, parsedBodies.get(request))
          return errorResponse('VALIDATION_ERROR', message, 400, headers)
        }
        if (code === 'NOT_FOUND') {
          const allowed = deps.methodsFor(path).filter((m) => m !== request.method)
          if (allowed.length > 0) {
            return errorResponse('METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}`, 405, {
              ...headers,
              allow: allowed.join(', '),
            })
          }
          return errorResponse('NOT_FOUND', `no route for ${request.method} ${path}`, 404, headers)
        }
        if (code === 'INVALID_COOKIE_SIGNATURE' || code === 'INVALID_FILE_TYPE') {
          return errorResponse('VALIDATION_ERROR', 'request is not valid', 400, headers)
        }
        const status = (error as { status?: number }).status
        if (status === 413) return errorResponse('PAYLOAD_TOO_LARGE', `request body exceeds ${MAX_BODY_BYTES} bytes`, 413, headers)
        log.error('unhandled error', {
          request_id: headers['x-request-id'],
          method: request.method,
          path,
          error: error instanceof Error ? error.name : String(code),
          detail: config.logLevel === 'debug' && error instanceof Error ? error.message : undefined,
        })
        return errorResponse('INTERNAL_ERROR', `internal error (request id ${headers['x-request-id']})`, 500, headers)
      })
  )
}

async function authFailure(sql: Sql, config: Config, request: Request, path: string): Promise<ApiError | null> {
  try {
    if (path.startsWith('/api/v1/')) await authenticate(sql, request.headers.get('authorization'))
    else if (path.startsWith('/admin/v1/')) authenticateAdmin(config, request.headers.get('authorization'))
    return null
  } catch (error) {
    if (error instanceof ApiError) return error
    throw error
  }
}
