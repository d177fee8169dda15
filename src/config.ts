// The only reader of the environment. Every variable, its default and its rule live in this file;
// a bad value stops the start with one line that names it.

import { accessSync, constants } from 'node:fs'
import type { SettingsReader } from './providers/provider'
import { MAX_RATE_LIMIT_PER_MINUTE, MAX_VALIDITY_SECONDS, MESSAGING_TIERS } from './lib/validate'
import { decodeKey } from './lib/secrets'
import { PROVIDER_NAMES, PROVIDER_VARIABLES, readProviderSettings, type ProviderName, type ProviderSettings } from './providers/registry'

type Variable = { default?: string; shown?: string; meaning: string }

/**
 * Every environment variable the service reads: `default` is the value used when it is unset (the
 * readers below take it from here), `shown` says how the default comes about when it is not a fixed
 * value. `--help` prints this table, so the help cannot drift from the code.
 */
export const VARIABLES = {
  PORT: { default: '3000', meaning: 'listen port' },
  HOST: { default: '127.0.0.1', meaning: 'listen address' },
  DATABASE_URL: {
    shown: 'unset',
    meaning:
      'PostgreSQL (15+) URL, shared by any number of instances; TLS as its `sslmode` says (`require`; `verify-full` also checks the certificate against the system CAs); unset: the embedded database in DATA_DIR',
  },
  DATABASE_READ_URL: {
    shown: 'unset',
    meaning:
      "a streaming replica of DATABASE_URL's PostgreSQL: lists and exports read it, unless it has not replayed the caller's own " +
      'last write yet (then the primary answers); unset: every read goes to DATABASE_URL. Not with the embedded database',
  },
  DATABASE_DIRECT_URL: {
    shown: 'unset',
    meaning:
      'with DATABASE_URL pointing at a pooler: a direct PostgreSQL URL (bypassing it) for LISTEN and the migrations; unset behind ' +
      'a pooler: workers poll (no LISTEN), migrations go through the pooler',
  },
  DATABASE_POOLER: {
    shown: 'pgbouncer when DATABASE_DIRECT_URL is set, else none',
    meaning:
      'none: DATABASE_URL is PostgreSQL itself; pgbouncer: DATABASE_URL is PgBouncer in transaction mode (no prepared statements, ' +
      'no session state, LISTEN only over DATABASE_DIRECT_URL)',
  },
  DATA_DIR: {
    default: './data',
    meaning: 'embedded database files (one process at a time), the generated admin token and the generated secrets key',
  },
  ADMIN_TOKEN: {
    shown: 'generated',
    meaning: 'bearer token of the admin API (16+ characters); unset: generated once into DATA_DIR/admin-token',
  },
  SECRETS_KEY: {
    shown: 'generated',
    meaning:
      'key sealing the credentials stored in the database: 32 bytes in base64 or base64url (openssl rand -base64 32); unset: ' +
      'generated once into DATA_DIR/secrets-key. Instances sharing a PostgreSQL database must share it',
  },
  SECRETS_KEY_PREVIOUS: {
    shown: 'unset',
    meaning: 'comma-separated earlier keys (same format), still opening what they sealed until it is sealed again under SECRETS_KEY',
  },
  PROVIDER: { default: 'simulator', meaning: `the messaging provider: ${PROVIDER_NAMES.join(', ')}` },
  // Each provider's own variables (providers/<name>/), in registry order.
  ...PROVIDER_VARIABLES,
  PUBLIC_BASE_URL: {
    shown: 'http://HOST:PORT',
    meaning: "this service's public root, for the providers' status callback URLs and their signatures (with PORT=0, the port given)",
  },
  TLS_CERT_FILE: { shown: 'unset', meaning: 'PEM certificate; with TLS_KEY_FILE the server itself serves HTTPS' },
  TLS_KEY_FILE: { shown: 'unset', meaning: 'PEM private key of TLS_CERT_FILE' },
  REQUIRE_HTTPS: { default: 'false', meaning: 'true: plain-HTTP requests get 403 HTTPS_REQUIRED (/healthz, /readyz exempt)' },
  TRUST_PROXY: { default: 'false', meaning: 'true: honour X-Forwarded-Proto / X-Forwarded-For from a TLS-terminating proxy' },
  WEBHOOK_ALLOW_PRIVATE: {
    default: 'false',
    meaning:
      'true: webhook URLs may point at loopback/private addresses, and http://localhost / http://127.0.0.1 are accepted (tests, development only)',
  },
  WEBHOOK_CA_FILE: { shown: 'unset', meaning: 'extra PEM CA bundle trusted for webhook deliveries, besides the system CAs' },
  TIMEZONE: { default: 'UTC', meaning: 'zone of every YYYY-MM-DD HH:MM:SS timestamp written and read' },
  CURRENCY: { default: 'IDR', meaning: 'currency code of amounts' },
  KEY_RATE_LIMIT_PER_MINUTE: {
    default: '600',
    meaning:
      'requests per minute an API key may make, across every instance (an operator can set a key its own); beyond it 429 RATE_LIMITED',
  },
  TEMPLATE_SYNC_MINUTES: {
    default: '5',
    meaning:
      "minutes between two syncs of every sender's WhatsApp templates from its provider (Meta, Twilio), by each instance, passing by a sender synced within them (by any instance, on demand, at its creation or check); 0: only on demand",
  },
  HANDOFF_CONCURRENCY: { default: '32', meaning: 'provider hand-offs in flight at once for bulk and campaigns, per sender and instance' },
  HANDOFF_LEASE_SECONDS: {
    default: '15',
    meaning:
      "how long a message's hand-off lease lasts without renewal (its live holder renews it every fifth of that); recovery takes " +
      'over a lease expired for as long again (never one its own process is still handing over), and waits this long after its own database errors (lower it only for tests)',
  },
  PROVIDER_MAX_PER_SECOND: {
    default: '0',
    meaning:
      "the sender's rate: messages per second handed to the provider, across every instance on the database; 0: the provider's own " +
      '(Meta and Twilio 80, the simulator 1000)',
  },
  PROVIDER_RECIPIENT_GAP_MS: {
    shown: "the provider's",
    meaning: "least time between two hand-offs to one recipient (Meta's pair rate: 6000); 0: none",
  },
  SEND_WAIT_MS: {
    default: '10000',
    meaning:
      'how long POST /messages/send waits: for its slot at the pace (beyond it 429 RATE_LIMITED, nothing charged), then for its outcome ' +
      '(beyond it 202 queued, the outcome by webhook)',
  },
  BULK_WAIT_MS: {
    default: '30000',
    meaning: 'how long POST /messages/bulk waits for its outcomes; entries still waiting are answered queued, their outcome by webhook',
  },
  VERIFY_CODE_LENGTH: { default: '6', meaning: 'digits of a verification code (POST /verifications): 4 to 10' },
  VERIFY_TTL_SECONDS: { default: '600', meaning: 'how long a verification code can be checked (60 to 86400 s)' },
  VERIFY_MAX_ATTEMPTS: { default: '5', meaning: 'wrong codes a verification takes before it ends too_many_attempts (1 to 20)' },
  VERIFY_PER_NUMBER: {
    default: '5',
    meaning: 'verifications an account may start for one number per VERIFY_WINDOW_SECONDS (beyond it 429 RATE_LIMITED, nothing sent)',
  },
  VERIFY_PER_NUMBER_TOTAL: {
    shown: '3 × VERIFY_PER_NUMBER',
    meaning:
      'verifications all accounts together may start for one number per VERIFY_WINDOW_SECONDS (beyond it 429 RATE_LIMITED, nothing sent): ' +
      'a number cannot be flooded through many accounts; at least VERIFY_PER_NUMBER, and best a few times it, so that one account alone cannot use it up for the others (their codes to that number would be refused)',
  },
  VERIFY_PER_ACCOUNT: {
    default: '1000',
    meaning: 'verifications an account may start (all numbers) per VERIFY_WINDOW_SECONDS (beyond it 429 RATE_LIMITED, nothing sent)',
  },
  VERIFY_WINDOW_SECONDS: {
    default: '600',
    meaning: 'the window of VERIFY_PER_NUMBER, VERIFY_PER_NUMBER_TOTAL and VERIFY_PER_ACCOUNT (60 to 86400 s)',
  },
  MESSAGE_VALIDITY_SECONDS: {
    default: '14400',
    meaning: 'how long a throttled message is tried again before it fails and is refunded (validity_seconds of a request overrides it)',
  },
  PROVIDER_TIMEOUT_MS: {
    default: '10000',
    meaning: 'how long one hand-off to the provider may take before it counts as failed (the contract says 10 s; lower it only for tests)',
  },
  WINDOW_CHECK: {
    default: 'provider',
    meaning:
      "provider: a free-form message (no approved template) to a customer outside WhatsApp's 24-hour window with the sender is " +
      "refused before charging (422 WINDOW_CLOSED) when the sender's provider enforces the window (Meta, Twilio; the simulator " +
      'with SIM_REQUIRE_TEMPLATE); off: it is handed over, and the provider refuses it (131047, 63016; refunded)',
  },
  MESSAGING_LIMIT: {
    default: 'unlimited',
    meaning:
      "the default sender's WhatsApp messaging limit: unique recipients of business-initiated messages per rolling 24 hours, " +
      '250, 2000, 10000, 100000 or unlimited (a new number starts at 250; beyond it 429 MESSAGING_LIMIT, nothing charged)',
  },
  DB_POOL_MAX: { default: '10', meaning: 'PostgreSQL connections per instance (the embedded database always uses one)' },
  RETENTION_WEBHOOK_DAYS: {
    default: '30',
    meaning: 'days to keep delivered and finally failed webhook events with their attempts; 0: forever',
  },
  RETENTION_MEDIA_DAYS: {
    default: '30',
    meaning:
      'days a file uploaded through POST /api/v1/media is kept after its upload or its last send (never while a queued message ' +
      'names it); 0: forever',
  },
  RETENTION_HISTORY_MONTHS: {
    default: '0',
    meaning:
      'months of messages, ledger and inbound messages kept attached; older monthly partitions are detached (kept as tables to archive and drop); 0: all kept',
  },
  OPT_OUT_WORDS: {
    default: 'STOP,UNSUBSCRIBE,BERHENTI',
    meaning:
      "comma-separated words: an inbound text that is only one of them (any case, trailing punctuation ignored) opts its sender out of the account's messages",
  },
  OPT_IN_WORDS: {
    default: 'START,MULAI',
    meaning: 'comma-separated words: an inbound text that is only one of them opts its sender back in',
  },
  MEDIA_MAX_BYTES: {
    default: '16777216',
    meaning:
      'largest medium of an inbound message kept (bytes, up to 104857600: WhatsApp documents reach 100 MB); a bigger one is refused ' +
      'while it is read and marked failed',
  },
  METRICS_PORT: {
    shown: 'unset',
    meaning:
      'a second listener on 127.0.0.1:METRICS_PORT serving GET /metrics without credentials (loopback only); unset: none ' +
      '(GET /metrics on PORT takes the admin token either way)',
  },
  LOG_LEVEL: { default: 'info', meaning: 'debug, info, warn or error' },
  LOG_FORMAT: { default: 'text', meaning: 'text: one readable line per event; json: one JSON object per line (for log shippers)' },
} satisfies Record<string, Variable>

type Name = keyof typeof VARIABLES
/** The variables with a fixed default: only these can be read with a fallback. */
type Defaulted = { [K in Name]: (typeof VARIABLES)[K] extends { default: string } ? K : never }[Name]

const fallback = (name: Defaulted): string => VARIABLES[name].default

export type Config = {
  port: number
  host: string
  databaseUrl: string | undefined
  /** DATABASE_READ_URL: a streaming replica for lists and exports (db/replica.ts); undefined: none. */
  databaseReadUrl: string | undefined
  /** DATABASE_DIRECT_URL: PostgreSQL itself when DATABASE_URL is a pooler (LISTEN, migrations). */
  databaseDirectUrl: string | undefined
  /** DATABASE_POOLER: pgbouncer when DATABASE_URL is PgBouncer in transaction mode. */
  databasePooler: 'none' | 'pgbouncer'
  dataDir: string
  adminToken: string | undefined
  /** SECRETS_KEY; unset: the service's key file (server.ts). */
  secretsKey: Uint8Array | undefined
  secretsKeysPrevious: Uint8Array[]
  provider: ProviderName
  /** Every provider's settings, whatever PROVIDER says (a provider's callbacks answer when its secret is set). */
  providers: ProviderSettings
  publicBaseUrl: string
  tls: { certFile: string; keyFile: string } | undefined
  requireHttps: boolean
  trustProxy: boolean
  webhookAllowPrivate: boolean
  webhookCaFile: string | undefined
  timezone: string
  currency: string
  /** Requests per minute of an API key without a rate of its own. */
  keyRateLimitPerMinute: number
  handoffConcurrency: number
  /** A hand-off lease's length; its holder renews it every fifth of it. */
  handoffLeaseSeconds: number
  /** Minutes between two syncs of every sender's WhatsApp templates (0: only on demand). */
  templateSyncMinutes: number
  /** The sender's rate (0: the provider's pace) and recipient gap (null: the provider's). */
  providerRecipientGapMs: number | null
  sendWaitMs: number
  bulkWaitMs: number
  messageValiditySeconds: number
  /** One-time passwords (POST /verifications): code digits, lifetime, wrong codes allowed, starts per number / account per window. */
  verify: {
    codeLength: number
    ttlSeconds: number
    maxAttempts: number
    perNumber: number
    /** Across every account of the deployment, for one number. */
    perNumberTotal: number
    perAccount: number
    windowSeconds: number
  }
  providerMaxPerSecond: number
  providerTimeoutMs: number
  /** `provider`: free-form sends outside the 24-hour window are refused before charging where the provider enforces it. */
  windowCheck: 'provider' | 'off'
  /** The default sender's messaging limit (unique business-initiated recipients per 24 h); null: unlimited. */
  messagingLimit: number | null
  dbPoolMax: number
  /** Days a delivered or failed webhook event and its attempts are kept; 0 keeps them forever. */
  retentionWebhookDays: number
  retentionHistoryMonths: number
  /** RETENTION_MEDIA_DAYS: uploaded files kept this long after their last use (0: forever). */
  retentionMediaDays: number
  /** OPT_OUT_WORDS / OPT_IN_WORDS, upper case. */
  optOutWords: string[]
  optInWords: string[]
  /** The largest inbound medium kept, in bytes. */
  mediaMaxBytes: number
  /** METRICS_PORT: the credential-free metrics listener on 127.0.0.1 (undefined: none). */
  metricsPort: number | undefined
  logLevel: 'debug' | 'info' | 'warn' | 'error'
  logFormat: 'text' | 'json'
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>

function text(env: Env, name: Defaulted): string {
  return optional(env, name) ?? fallback(name)
}

function optional(env: Env, name: Name): string | undefined {
  const value = env[name]
  return value === undefined || value === '' ? undefined : value
}

function integer(env: Env, name: Defaulted, min: number, max: number): number {
  const raw = text(env, name)
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name}: expected an integer from ${min} to ${max}, got "${raw}"`)
  }
  return Number(raw)
}

/** VERIFY_PER_NUMBER_TOTAL: at least VERIFY_PER_NUMBER; unset, three times it. */
function perNumberTotal(env: Env): number {
  const perNumber = integer(env, 'VERIFY_PER_NUMBER', 1, 1_000_000)
  const raw = optional(env, 'VERIFY_PER_NUMBER_TOTAL')
  if (raw === undefined) return Math.min(3 * perNumber, 3_000_000)
  if (!/^\d+$/.test(raw) || Number(raw) < perNumber || Number(raw) > 3_000_000) {
    throw new ConfigError(`VERIFY_PER_NUMBER_TOTAL: expected an integer from VERIFY_PER_NUMBER (${perNumber}) to 3000000, got "${raw}"`)
  }
  return Number(raw)
}

/** PROVIDER_RECIPIENT_GAP_MS: unset is the provider's own gap (null). */
function recipientGap(raw: string | undefined): number | null {
  if (raw === undefined) return null
  if (!/^\d+$/.test(raw) || Number(raw) > 3_600_000) {
    throw new ConfigError(`PROVIDER_RECIPIENT_GAP_MS: expected an integer from 0 to 3600000, got "${raw}"`)
  }
  return Number(raw)
}

/** MESSAGING_LIMIT: one of WhatsApp's tiers, or unlimited (null). */
function tier(raw: string): number | null {
  if (raw === 'unlimited') return null
  if (!MESSAGING_TIERS.map(String).includes(raw)) {
    throw new ConfigError(`MESSAGING_LIMIT: expected 250, 2000, 10000, 100000 or unlimited, got "${raw}"`)
  }
  return Number(raw)
}

/** METRICS_PORT: unset is no metrics listener; 0 takes any free port (tests). */
function metricsPort(raw: string | undefined, port: number): number | undefined {
  if (raw === undefined) return undefined
  if (!/^\d+$/.test(raw) || Number(raw) > 65535) throw new ConfigError(`METRICS_PORT: expected an integer from 0 to 65535, got "${raw}"`)
  if (Number(raw) === port && port !== 0) throw new ConfigError(`METRICS_PORT: must differ from PORT (${port})`)
  return Number(raw)
}

function boolean(env: Env, name: Defaulted): boolean {
  const raw = text(env, name)
  if (raw === 'true' || raw === '1') return true
  if (raw === 'false' || raw === '0') return false
  throw new ConfigError(`${name}: expected true or false, got "${raw}"`)
}

function oneOf<T extends string>(env: Env, name: Defaulted, allowed: readonly T[]): T {
  const raw = text(env, name)
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name}: expected one of ${allowed.join(', ')}, got "${raw}"`)
  }
  return raw as T
}

function url(name: Name, raw: string, protocols: string[]): string {
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

function readable(name: Name, path: string): string {
  try {
    accessSync(path, constants.R_OK)
  } catch {
    throw new ConfigError(`${name}: cannot read the file "${path}"`)
  }
  return path
}

/** A key of SECRETS_KEY or SECRETS_KEY_PREVIOUS. The message never holds the value: it is a secret. */
function secretsKey(name: Name, raw: string, which = ''): Uint8Array {
  const key = decodeKey(raw.trim())
  if (!key) throw new ConfigError(`${name}: ${which}expected 32 bytes in base64 or base64url (e.g. from openssl rand -base64 32)`)
  return key
}

/** OPT_OUT_WORDS and OPT_IN_WORDS: words of letters, digits and spaces, upper-cased; none in both lists. */
function words(env: Env): { optOutWords: string[]; optInWords: string[] } {
  const read = (name: 'OPT_OUT_WORDS' | 'OPT_IN_WORDS') => {
    const list = text(env, name)
      .split(',')
      .map((w) => w.trim().replace(/\s+/g, ' ').toUpperCase())
      .filter((w) => w !== '')
    if (list.length === 0) throw new ConfigError(`${name}: expected at least one word`)
    const bad = list.find((w) => w.length > 40 || !/^[\p{L}\p{N}][\p{L}\p{N} ]*$/u.test(w))
    if (bad !== undefined) throw new ConfigError(`${name}: "${bad}" is not a word (letters, digits and spaces, at most 40 characters)`)
    return [...new Set(list)]
  }
  const optOutWords = read('OPT_OUT_WORDS')
  const optInWords = read('OPT_IN_WORDS')
  const both = optOutWords.find((w) => optInWords.includes(w))
  if (both !== undefined) throw new ConfigError(`OPT_IN_WORDS: "${both}" is also in OPT_OUT_WORDS`)
  return { optOutWords, optInWords }
}

/** How the providers read their own variables (providers/<name>/settings), with the same rules. */
function providerReader(env: Env): SettingsReader {
  const defaultOf = (name: string) => (VARIABLES as Record<string, Variable>)[name]?.default
  return {
    text: (name) => optional(env, name as Name) ?? defaultOf(name),
    url(name, protocols) {
      const raw = optional(env, name as Name) ?? defaultOf(name)
      return raw === undefined ? undefined : url(name as Name, raw, protocols)
    },
    fail(name, message) {
      throw new ConfigError(`${name}: ${message}`)
    },
  }
}

/** DATABASE_DIRECT_URL and DATABASE_POOLER: both only with DATABASE_URL; a direct URL means a pooler unless told none. */
function pooler(env: Env, databaseUrl: string | undefined): Pick<Config, 'databaseDirectUrl' | 'databasePooler'> {
  const direct = optional(env, 'DATABASE_DIRECT_URL')
  const named = optional(env, 'DATABASE_POOLER')
  if (named !== undefined && named !== 'none' && named !== 'pgbouncer') {
    throw new ConfigError(`DATABASE_POOLER: expected none or pgbouncer, got "${named}"`)
  }
  if (databaseUrl === undefined && (direct !== undefined || named === 'pgbouncer')) {
    throw new ConfigError(`${direct !== undefined ? 'DATABASE_DIRECT_URL' : 'DATABASE_POOLER'}: needs DATABASE_URL (the pooler's URL)`)
  }
  if (direct !== undefined) url('DATABASE_DIRECT_URL', direct, ['postgres:', 'postgresql:'])
  return { databaseDirectUrl: direct, databasePooler: named ?? (direct !== undefined ? 'pgbouncer' : 'none') }
}

export function readConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 0, 65535)
  const host = text(env, 'HOST')
  const databaseUrl = optional(env, 'DATABASE_URL')
  if (databaseUrl !== undefined) url('DATABASE_URL', databaseUrl, ['postgres:', 'postgresql:'])
  const databaseReadUrl = optional(env, 'DATABASE_READ_URL')
  if (databaseReadUrl !== undefined) {
    url('DATABASE_READ_URL', databaseReadUrl, ['postgres:', 'postgresql:'])
    if (databaseUrl === undefined) {
      throw new ConfigError('DATABASE_READ_URL: a replica of PostgreSQL needs DATABASE_URL; the embedded database has no replica')
    }
  }
  const { databaseDirectUrl, databasePooler } = pooler(env, databaseUrl)

  const provider = oneOf(env, 'PROVIDER', PROVIDER_NAMES)
  const providers = readProviderSettings(providerReader(env), provider)

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
    optional(env, 'PUBLIC_BASE_URL') ?? `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    ['http:', 'https:'],
  )

  const timezone = text(env, 'TIMEZONE')
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone })
  } catch {
    throw new ConfigError(`TIMEZONE: unknown time zone "${timezone}"`)
  }

  const currency = text(env, 'CURRENCY')
  if (!/^[A-Z]{3}$/.test(currency)) throw new ConfigError(`CURRENCY: expected a three-letter code, got "${currency}"`)

  const adminToken = optional(env, 'ADMIN_TOKEN')
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError('ADMIN_TOKEN: must be at least 16 characters')
  }

  const secretsKeyText = optional(env, 'SECRETS_KEY')
  const previousKeys = (optional(env, 'SECRETS_KEY_PREVIOUS') ?? '').split(',').filter((entry) => entry.trim() !== '')

  return {
    port,
    host,
    databaseUrl,
    databaseReadUrl,
    databaseDirectUrl,
    databasePooler,
    dataDir: text(env, 'DATA_DIR'),
    adminToken,
    secretsKey: secretsKeyText === undefined ? undefined : secretsKey('SECRETS_KEY', secretsKeyText),
    secretsKeysPrevious: previousKeys.map((entry, i) =>
      secretsKey('SECRETS_KEY_PREVIOUS', entry, `key ${i + 1} of ${previousKeys.length}: `),
    ),
    provider,
    providers,
    publicBaseUrl,
    tls,
    requireHttps: boolean(env, 'REQUIRE_HTTPS'),
    trustProxy: boolean(env, 'TRUST_PROXY'),
    webhookAllowPrivate: boolean(env, 'WEBHOOK_ALLOW_PRIVATE'),
    webhookCaFile:
      optional(env, 'WEBHOOK_CA_FILE') === undefined ? undefined : readable('WEBHOOK_CA_FILE', optional(env, 'WEBHOOK_CA_FILE')!),
    timezone,
    currency,
    keyRateLimitPerMinute: integer(env, 'KEY_RATE_LIMIT_PER_MINUTE', 1, MAX_RATE_LIMIT_PER_MINUTE),
    handoffConcurrency: integer(env, 'HANDOFF_CONCURRENCY', 1, 1000),
    handoffLeaseSeconds: integer(env, 'HANDOFF_LEASE_SECONDS', 2, 3600),
    templateSyncMinutes: integer(env, 'TEMPLATE_SYNC_MINUTES', 5, 1440),
    providerMaxPerSecond: integer(env, 'PROVIDER_MAX_PER_SECOND', 0, 100_000),
    providerRecipientGapMs: recipientGap(optional(env, 'PROVIDER_RECIPIENT_GAP_MS')),
    sendWaitMs: integer(env, 'SEND_WAIT_MS', 0, 600_000),
    bulkWaitMs: integer(env, 'BULK_WAIT_MS', 0, 3_600_000),
    messageValiditySeconds: integer(env, 'MESSAGE_VALIDITY_SECONDS', 1, MAX_VALIDITY_SECONDS),
    verify: {
      codeLength: integer(env, 'VERIFY_CODE_LENGTH', 4, 10),
      ttlSeconds: integer(env, 'VERIFY_TTL_SECONDS', 60, 86_400),
      maxAttempts: integer(env, 'VERIFY_MAX_ATTEMPTS', 1, 20),
      perNumber: integer(env, 'VERIFY_PER_NUMBER', 1, 1_000_000),
      perNumberTotal: perNumberTotal(env),
      perAccount: integer(env, 'VERIFY_PER_ACCOUNT', 1, 100_000_000),
      windowSeconds: integer(env, 'VERIFY_WINDOW_SECONDS', 60, 86_400),
    },
    providerTimeoutMs: integer(env, 'PROVIDER_TIMEOUT_MS', 100, 60_000),
    windowCheck: oneOf(env, 'WINDOW_CHECK', ['provider', 'off'] as const),
    messagingLimit: tier(text(env, 'MESSAGING_LIMIT')),
    dbPoolMax: integer(env, 'DB_POOL_MAX', 1, 200),
    retentionWebhookDays: integer(env, 'RETENTION_WEBHOOK_DAYS', 0, 36_500),
    retentionHistoryMonths: integer(env, 'RETENTION_HISTORY_MONTHS', 0, 1200),
    retentionMediaDays: integer(env, 'RETENTION_MEDIA_DAYS', 0, 36_500),
    ...words(env),
    mediaMaxBytes: integer(env, 'MEDIA_MAX_BYTES', 1024, 104_857_600),
    metricsPort: metricsPort(optional(env, 'METRICS_PORT'), port),
    logLevel: oneOf(env, 'LOG_LEVEL', ['debug', 'info', 'warn', 'error'] as const),
    logFormat: oneOf(env, 'LOG_FORMAT', ['text', 'json'] as const),
  }
}
