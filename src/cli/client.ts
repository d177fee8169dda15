// The admin API as the command line sees it: where the service is (--url, or the same HOST, PORT
// and TLS settings the service reads), the admin token (ADMIN_TOKEN, or the file the service writes
// into DATA_DIR), and one call that answers the envelope's data or fails with a readable line.

import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { readConfig } from '../config'
import { ADMIN_CLIENT_HEADER } from '../lib/admin-client'
import { program } from './program'

/** A failure to report (exit 1): the service's error answer (with its status and code), or no service at all. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly code?: string,
  ) {
    super(message)
  }
}

export type Api = {
  /** The service's root, e.g. http://127.0.0.1:3000. */
  readonly base: string
  /** Where `base` came from, for messages. */
  readonly origin: string
  /** The admin token, for a command that makes its own requests (a stream of events, say). */
  readonly token: string
  call<T = any>(method: string, path: string, body?: unknown): Promise<T>
}

/** Reads the configuration and the token only when a command first needs the service. */
export function lazyApi(url: string | undefined): Api {
  let api: Api | undefined
  const get = () => (api ??= connect(url))
  return {
    get base() {
      return get().base
    },
    get origin() {
      return get().origin
    },
    get token() {
      return get().token
    },
    call: (method, path, body) => get().call(method, path, body),
  }
}

/** Where the service is: --url, or the HOST, PORT and TLS settings the service reads; and where that came from. */
export function serviceRoot(url: string | undefined, config = readConfig()): { base: string; origin: string } {
  if (url !== undefined) {
    if (!/^https?:\/\/[^/]/.test(url)) throw new CliError(`--url ${url}: expected the service's root, like http://127.0.0.1:3000`)
    return { base: url.replace(/\/+$/, ''), origin: 'from --url' }
  }
  // A service listening on every interface is reached on loopback.
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  const set = ['HOST', 'PORT'].filter((name) => process.env[name])
  return {
    base: `${config.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${config.port}`,
    origin: set.length ? `from ${set.map((name) => `${name}=${process.env[name]}`).join(' ')}` : 'the default: HOST and PORT are unset',
  }
}

function connect(url: string | undefined): Api {
  const config = readConfig()
  const { base, origin } = serviceRoot(url, config)
  const tokenFile = join(config.dataDir, 'admin-token')
  const token = config.adminToken ?? (existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : undefined)
  if (!token) {
    throw new CliError(
      `no admin token: set ADMIN_TOKEN to the service's, or run this where the service keeps its data (it writes ${tokenFile} on its first start)`,
    )
  }

  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', [ADMIN_CLIENT_HEADER]: 'cli' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    } catch (error) {
      throw unreachable(base, origin, error)
    }
    const type = response.headers.get('content-type') ?? ''
    const payload = (await response.json().catch(() => null)) as {
      success?: boolean
      data?: unknown
      error?: string
      code?: string
      request_id?: string
    } | null
    if (payload === null || typeof payload.success !== 'boolean') {
      throw new CliError(
        `${base} answered HTTP ${response.status}${type ? ` (${type.split(';')[0]})` : ''}, not the admin API: is it this service's root? (--url)`,
      )
    }
    if (!payload.success) {
      const requestId = payload.request_id ?? response.headers.get('x-request-id')
      const tokenSource = config.adminToken ? 'ADMIN_TOKEN' : `the token in ${tokenFile}`
      const hint = response.status === 401 ? `\n${tokenSource} is not the admin token of the service at ${base}` : ''
      throw new CliError(
        `${response.status} ${payload.code}: ${payload.error}${requestId ? ` (request id ${requestId})` : ''}${hint}`,
        response.status,
        payload.code,
      )
    }
    return payload.data as T
  }
  return { base, origin, token, call }
}

/** The answer to a failed connection: the URL tried, where it came from, how to start or point elsewhere. */
export function unreachable(base: string, origin: string, error: unknown): CliError {
  const code = (error as { code?: string }).code
  const reason =
    code === 'ECONNREFUSED' || code === 'ConnectionRefused'
      ? 'connection refused'
      : code === 'ENOTFOUND'
        ? 'host not found'
        : (code ?? (error instanceof Error ? error.message : String(error)))
  return new CliError(
    [
      `cannot reach the service at ${base} (${origin}): ${reason}`,
      `is it running? start it with: ${program.start}`,
      'running elsewhere? point the command line at it with --url http://HOST:PORT, or with the PORT and HOST it was started with',
    ].join('\n'),
  )
}
