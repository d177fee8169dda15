// The only reader of the environment. Every variable, its default and its rule live in this file;
// a bad value stops the start with one line that names it.

import { accessSync, constants } from 'node:fs'

export type Config = {
  port: number
  host: string
  databaseUrl: string | undefined
  dataDir: string
  adminToken: string | undefined
  provider: 'simulator' | 'twilio'
  twilio: { accountSid: string; authToken: string; from: string; apiBase: string }
  publicBaseUrl: string
  tls: { certFile: string; keyFile: string } | undefined
  requireHttps: boolean
  trustProxy: boolean
  webhookAllowPrivate: boolean
  webhookCaFile: string | undefined
  timezone: string
  currency: string
  simDeliveredMs: number
  simReadMs: number
  handoffConcurrency: number
  providerMaxPerSecond: number
  dbPoolMax: number
  logLevel: 'debug' | 'info' | 'warn' | 'error'
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>

function text(env: Env, name: string, fallback: string): string {
  const value = env[name]
  return value === undefined || value === '' ? fallback : value
}

function optional(env: Env, name: string): string | undefined {
  const value = env[name]
  return value === undefined || value === '' ? undefined : value
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = optional(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name}: expected an integer from ${min} to ${max}, got "${raw}"`)
  }
  return Number(raw)
}

function boolean(env: Env, name: string): boolean {
  const raw = optional(env, name)
  if (raw === undefined) return false
  if (raw === 'true' || raw === '1') return true
  if (raw === 'false' || raw === '0') return false
  throw new ConfigError(`${name}: expected true or false, got "${raw}"`)
}

function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const raw = text(env, name, fallback)
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name}: expected one of ${allowed.join(', ')}, got "${raw}"`)
  }
  return raw as T
}

function url(name: string, raw: string, protocols: string[]): string {
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(`${name}: not a valid URL: "${raw}"`)
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name}: expected a ${protocols.join(' or ')} URL, got "${raw}"`)
  }
  return raw.replace(/\/+$/, '')
}

function readable(name: string, path: string): string {
  try {
    accessSync(path, constants.R_OK)
  } catch {
    throw new ConfigError(`${name}: cannot read the file "${path}"`)
  }
  return path
}

export function readConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535)
  const host = text(env, 'HOST', '127.0.0.1')
  const databaseUrl = optional(env, 'DATABASE_URL')
  if (databaseUrl !== undefined) url('DATABASE_URL', databaseUrl, ['postgres:', 'postgresql:'])

  const provider = oneOf(env, 'PROVIDER', 'simulator', ['simulator', 'twilio'] as const)
  const twilio = {
    accountSid: text(env, 'TWILIO_ACCOUNT_SID', ''),
    authToken: text(env, 'TWILIO_AUTH_TOKEN', ''),
    from: text(env, 'TWILIO_FROM', ''),
    apiBase: url('TWILIO_API_BASE', text(env, 'TWILIO_API_BASE', 'https://api.twilio.com'), ['http:', 'https:']),
  }
  if (provider === 'twilio') {
    for (const [name, value] of [
      ['TWILIO_ACCOUNT_SID', twilio.accountSid],
      ['TWILIO_AUTH_TOKEN', twilio.authToken],
      ['TWILIO_FROM', twilio.from],
    ]) {
      if (!value) throw new ConfigError(`${name}: required when PROVIDER=twilio`)
    }
    if (!twilio.from.startsWith('whatsapp:+')) {
      throw new ConfigError(`TWILIO_FROM: expected "whatsapp:+<number>", got "${twilio.from}"`)
    }
  }

  const certFile = optional(env, 'TLS_CERT_FILE')
  const keyFile = optional(env, 'TLS_KEY_FILE')
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new ConfigError(`${certFile ? 'TLS_KEY_FILE' : 'TLS_CERT_FILE'}: TLS_CERT_FILE and TLS_KEY_FILE must be set together`)
  }
  const tls =
    certFile && keyFile ? { certFile: readable('TLS_CERT_FILE', certFile), keyFile: readable('TLS_KEY_FILE', keyFile) } : undefined

  const scheme = tls ? 'https' : 'http'
  const publicBaseUrl = url(
    'PUBLIC_BASE_URL',
    text(env, 'PUBLIC_BASE_URL', `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`),
    ['http:', 'https:'],
  )

  const timezone = text(env, 'TIMEZONE', 'UTC')
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone })
  } catch {
    throw new ConfigError(`TIMEZONE: unknown time zone "${timezone}"`)
  }

  const currency = text(env, 'CURRENCY', 'IDR')
  if (!/^[A-Z]{3}$/.test(currency)) throw new ConfigError(`CURRENCY: expected a three-letter code, got "${currency}"`)

  const adminToken = optional(env, 'ADMIN_TOKEN')
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError('ADMIN_TOKEN: must be at least 16 characters')
  }

  return {
    port,
    host,
    databaseUrl,
    dataDir: text(env, 'DATA_DIR', './data'),
    adminToken,
    provider,
    twilio,
    publicBaseUrl,
    tls,
    requireHttps: boolean(env, 'REQUIRE_HTTPS'),
    trustProxy: boolean(env, 'TRUST_PROXY'),
    webhookAllowPrivate: boolean(env, 'WEBHOOK_ALLOW_PRIVATE'),
    webhookCaFile:
      optional(env, 'WEBHOOK_CA_FILE') === undefined ? undefined : readable('WEBHOOK_CA_FILE', optional(env, 'WEBHOOK_CA_FILE')!),
    timezone,
    currency,
    simDeliveredMs: integer(env, 'SIM_DELIVERED_MS', 1000, 0, 86_400_000),
    simReadMs: integer(env, 'SIM_READ_MS', 3000, 0, 86_400_000),
    handoffConcurrency: integer(env, 'HANDOFF_CONCURRENCY', 32, 1, 1000),
    providerMaxPerSecond: integer(env, 'PROVIDER_MAX_PER_SECOND', 0, 0, 100_000),
    dbPoolMax: integer(env, 'DB_POOL_MAX', 10, 1, 200),
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', ['debug', 'info', 'warn', 'error'] as const),
  }
}
