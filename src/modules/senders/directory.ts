// The senders a process sends through, by id: each with its provider (built from its opened
// credentials) and its pace. The deployment's default sender (id null) is the environment's PROVIDER
// with its settings; stored senders are read from the database and kept for a few seconds, rebuilt when
// their row changed. Which sender a send goes through is decided here too (`forSend`): the one its
// `from` names among the account's, else the account's default, else the deployment's.

import type { Sql } from '../../db/client'
import type { Config } from '../../config'
import type { SecretBox } from '../../lib/secrets'
import type { Clock } from '../../lib/clock'
import { ApiError } from '../../http/errors'
import {
  RICH_KINDS,
  type CallbackSender,
  type MediaStore,
  type Pace,
  type Provider,
  type SignedHealthNotice,
} from '../../providers/provider'
import { anyProvider, createProvider, paceOf, PROVIDERS, type ProviderName } from '../../providers/registry'
import { createPacer, type Pacer } from './pace'
import { windowIsOpen } from '../inbound/window'
import { openFields, supportOf, whyNotOpen, type SenderRow } from './service'
import { applyHealthNotices, HIGH_THROUGHPUT_PER_SECOND, type HealthOutcome } from './health'

export type Sender = {
  /** null: the deployment's default sender (the environment's PROVIDER). */
  id: number | null
  providerName: ProviderName
  provider: Provider
  pacer: Pacer
}

export type SenderDirectory = {
  readonly defaultSender: Sender
  /** The sender of a message already charged (any state: what was charged still goes). */
  get(id: number | null): Promise<Sender>
  /**
   * The sender of a new send for `accountId`: the one `from` names (its id or its number) among the
   * account's, else the account's default, else the deployment's when the account has none. 422 for a
   * sender that is not the account's, SENDER_DISABLED for a disabled one: before anything is charged.
   */
  forSend(accountId: number, from: string | number | undefined, field?: string): Promise<Sender>
  /** The stored senders of `provider` that its callbacks name by `identity` (null: all), with their settings. */
  callbackSenders(provider: string, identity: string | null): Promise<CallbackSender<unknown>[]>
  /**
   * Applies a verified callback's health notices (Meta's capability, account and quality webhooks) to
   * the senders each names (health.ts), and forgets what this process read of them. Here, so that the
   * callback route (modules/inbound) reaches them through deps without importing this noun.
   */
  applyHealth(notices: SignedHealthNotice[]): Promise<HealthOutcome>
  /** Forgets what this process read (a sender or an assignment changed here). */
  forget(): void
}

/** How long a process trusts what it read of a sender or of an account's senders (another instance's change shows within it). */
export const FRESH_MS = 2_000
/** How many identities' callback settings a process keeps at most. */
const MAX_CALLBACK_ENTRIES = 1_000

type AccountSenderRow = { id: number; number: string; is_default: boolean; disabled: boolean }

export function createSenderDirectory(
  sql: Sql,
  secrets: SecretBox,
  config: Config,
  defaultSender: { provider: Provider; pace: Pace },
  clock: Clock,
  /** The files uploaded to this service (modules/media), for messages sent by `media_id`. */
  media?: MediaStore,
): SenderDirectory {
  const fallback: Sender = {
    id: null,
    // Its provider's own name (a test's in-process provider may stand for another).
    providerName: defaultSender.provider.name as ProviderName,
    provider: defaultSender.provider,
    pacer: createPacer(sql, config.provider, defaultSender.pace, clock),
  }
  const stored = new Map<number, { sender: Sender; updatedAt: number; readAt: number }>()
  // The promise is kept, so the entries of one bulk request share one read.
  const accounts = new Map<number, { rows: Promise<AccountSenderRow[]>; readAt: number }>()
  // The senders (and settings) that verify callbacks naming an identity, by provider and identity.
  const callbacks = new Map<string, { senders: Promise<CallbackSender<unknown>[]>; readAt: number }>()

  async function build(row: SenderRow): Promise<Sender> {
    const environment = (config.providers as Record<string, unknown>)[row.provider]
    let why = ''
    const fields = await openFields(secrets, row).catch((error: unknown) => ((why = whyNotOpen(error)), null))
    const settings = supportOf(row.provider).settingsOf(fields ?? {}, row.number, environment)
    const own = paceOf(row.provider, settings as never)
    // Meta raised the number's throughput (THROUGHPUT_UPGRADE): its default pace follows, unless its own is set.
    const perSecond = row.throughput === 'high' ? HIGH_THROUGHPUT_PER_SECOND : own.perSecond
    const pace: Pace = {
      perSecond: row.rate_per_second ?? perSecond,
      recipientGapMs: row.recipient_gap_ms ?? own.recipientGapMs,
      source: row.rate_per_second !== null || row.recipient_gap_ms !== null ? 'the sender' : own.source,
    }
    // Credentials that do not open (sealed under a key this process lacks, or not for this sender) fail
    // each hand-off, refunded, saying why.
    const provider: Provider = fields
      ? createProvider(row.provider, settings as never, {
          publicBaseUrl: config.publicBaseUrl,
          timeoutMs: config.providerTimeoutMs,
          clock,
          sql,
          windowOpen: (phone) => windowIsOpen(sql, clock, row.id, phone),
          media,
        })
      : {
          name: row.provider,
          // It claims every kind: the hand-off fails (refunded, saying why) rather than refusing the kind.
          rich: new Set(RICH_KINDS),
          send: async () => ({
            ok: false,
            errorCode: null,
            errorMessage: `sender ${row.id}'s ${why}`,
          }),
        }
    // Each stored sender has its own pace, kept by its id: two numbers each get their full rate.
    return { id: row.id, providerName: row.provider, provider, pacer: createPacer(sql, `sender:${row.id}`, pace, clock) }
  }

  async function get(id: number | null): Promise<Sender> {
    if (id === null) return fallback
    const cached = stored.get(id)
    if (cached && clock.monotonic() - cached.readAt < FRESH_MS) return cached.sender
    const [row] = await sql<SenderRow[]>`select * from senders where id = ${id}`
    if (!row) throw new Error(`sender ${id} is gone`)
    const updatedAt = row.updated_at.getTime()
    // Unchanged: the same sender (its pacer keeps this process's spacing), read again.
    const sender = cached && cached.updatedAt === updatedAt ? cached.sender : await build(row)
    stored.set(id, { sender, updatedAt, readAt: clock.monotonic() })
    return sender
  }

  function sendersOf(accountId: number): Promise<AccountSenderRow[]> {
    const cached = accounts.get(accountId)
    if (cached && clock.monotonic() - cached.readAt < FRESH_MS) return cached.rows
    const rows = sql<AccountSenderRow[]>`
      select s.id, s.number, a.is_default, s.disabled_at is not null as disabled
      from account_senders a join senders s on s.id = a.sender_id where a.account_id = ${accountId}`.then((r) => [...r])
    accounts.set(accountId, { rows, readAt: clock.monotonic() })
    rows.catch(() => accounts.delete(accountId))
    return rows
  }

  return {
    defaultSender: fallback,
    get,
    async forSend(accountId, from, field = 'from') {
      const rows = await sendersOf(accountId)
      let chosen: AccountSenderRow | undefined
      if (from === undefined) {
        if (rows.length === 0) return fallback
        chosen = rows.find((r) => r.is_default) ?? rows[0]
      } else {
        const named = String(from).trim()
        chosen = rows.find((r) => String(r.id) === named || r.number === named)
        if (!chosen) {
          throw new ApiError(
            'VALIDATION_ERROR',
            rows.length === 0
              ? `${field}: this account has no senders of its own; omit ${field} to send from the deployment's number`
              : `${field}: ${JSON.stringify(named).slice(0, 60)} is not one of this account's senders (GET /api/v1/senders lists them)`,
            422,
          )
        }
      }
      if (chosen!.disabled) {
        throw new ApiError('SENDER_DISABLED', `${field}: sender ${chosen!.id} (${chosen!.number}) is disabled; nothing was charged`, 422)
      }
      return get(chosen!.id)
    },
    callbackSenders(provider, identity) {
      // Kept a few seconds like the rest: a callback (there is one per status report) then costs no
      // query and no decryption, and callbacks that arrive together share one read and reach the
      // report receiver together (its group commit). The key comes from an unverified request, so the
      // map is bounded: past its bound it starts over.
      const key = JSON.stringify([provider, identity])
      const cached = callbacks.get(key)
      if (cached && clock.monotonic() - cached.readAt < FRESH_MS) return cached.senders
      const senders = (async () => {
        const rows =
          identity === null
            ? await sql<SenderRow[]>`select * from senders where provider = ${provider} order by id`
            : await sql<SenderRow[]>`select * from senders where provider = ${provider} and identity = ${identity} order by id`
        const environment = (config.providers as Record<string, unknown>)[provider]
        const out: CallbackSender<unknown>[] = []
        for (const row of rows) {
          // A credential that does not open (sealed under a key this process lacks) verifies nothing.
          const fields = await openFields(secrets, row).catch(() => null)
          if (fields)
            out.push({ id: Number(row.id), number: row.number, settings: supportOf(provider).settingsOf(fields, row.number, environment) })
        }
        return out
      })()
      if (callbacks.size >= MAX_CALLBACK_ENTRIES) callbacks.clear()
      callbacks.set(key, { senders, readAt: clock.monotonic() })
      senders.catch(() => callbacks.delete(key))
      return senders
    },
    async applyHealth(notices) {
      const outcome = await applyHealthNotices(sql, { clock, timezone: config.timezone }, notices)
      if (outcome.changed > 0) stored.clear()
      return outcome
    },
    forget() {
      stored.clear()
      accounts.clear()
      callbacks.clear()
    },
  }
}

/** The provider names a stored sender may have (for validation and the dashboard). */
export const SENDER_PROVIDERS = PROVIDERS.map(anyProvider).map((p) => p.name)
