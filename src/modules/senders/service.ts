// Senders: the only SQL on `senders` and `account_senders`. A sender's credentials are checked
// against its provider's fields, sealed (lib/secrets.ts, the sender's id as context, so a sealed value
// copied onto another sender does not open) and never read back out of this module but by the
// directory that sends with them. Every change is audited, with the names of the fields it set, never
// their values.

import { transaction, type Db, type Sql } from '../../db/client'
import type { Clock } from '../../lib/clock'
import type { Config } from '../../config'
import { SecretError, type SecretBox } from '../../lib/secrets'
import { ApiError, badValue } from '../../http/errors'
import { requireText } from '../../http/values'
import { formatTimes, formatTimestamp } from '../../lib/time'
import { anyProvider, paceOf, PROVIDERS, type ProviderName } from '../../providers/registry'
import type { SenderCheck, SenderSupport } from '../../providers/provider'
import { audit, type Actor } from '../users/service'
import type { AccountSender, CreateSenderBody, Sender, UpdateSenderBody } from './model'
import { portfolioIdOf, requireTier, senderBudgetUse } from '../budgets/service'
import { healthOf, HIGH_THROUGHPUT_PER_SECOND, recordQuality } from './health'

export type SendersContext = { sql: Sql; secrets: SecretBox; config: Config; clock: Clock }

export type SenderRow = {
  id: number
  provider: ProviderName
  name: string
  number: string
  identity: string
  credentials: string
  rate_per_second: number | null
  recipient_gap_ms: number | null
  disabled_at: Date | null
  messaging_limit: number | null
  portfolio_id: number | null
  late_failures: LateFailures
  messaging_limit_source: 'operator' | 'meta'
  throughput: string | null
  checked_at: Date | null
  check_ok: boolean | null
  check_detail: string | null
  created_at: Date
  updated_at: Date
}

export type LateFailures = 'refund' | 'keep'
/**
 * Whether a new sender's late failures are refunded: not for a provider whose credentials a tenant may
 * bring (it could sign `failed` for its own delivered messages); the simulator's reports are the service's own.
 */
const defaultLateFailures = (provider: string): LateFailures => (provider === 'simulator' ? 'refund' : 'keep')

/** The context a sender's credentials are sealed with: they open for this sender only. */
export const sealContext = (id: number) => `sender:${id}`

const E164 = /^\+[1-9]\d{6,14}$/

function pluginOf(provider: string) {
  const plugin = PROVIDERS.map(anyProvider).find((p) => p.name === provider)
  if (!plugin) throw badValue(`provider: must be one of ${PROVIDERS.map((p) => p.name).join(', ')}`)
  return plugin
}

/** The provider's sender support (its credential fields, identity and check). */
export const supportOf = (provider: string) => pluginOf(provider).senders as SenderSupport<unknown>

function requireNumber(value: string): string {
  const compact = value.replace(/[\s\-.()]/g, '').replace(/^whatsapp:/, '')
  if (!E164.test(compact)) throw badValue('number: must be an E.164 number, + and 7 to 15 digits (e.g. +6281234567890)')
  return compact
}

/** The fields as the provider needs them: none unknown, the required ones there, each as it must look. */
function requireFields(provider: string, given: Record<string, string>): Record<string, string> {
  const fields = supportOf(provider).fields
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(given)) {
    const field = fields[name]
    if (!field) {
      const known = Object.keys(fields)
      throw badValue(
        `credentials.${name}: not a ${provider} credential (${known.length > 0 ? `expected ${known.join(', ')}` : 'it takes none'})`,
      )
    }
    const trimmed = value.trim()
    if (trimmed === '') continue
    if (field.pattern && !field.pattern.test.test(trimmed)) throw badValue(`credentials.${name}: ${field.pattern.message}`)
    out[name] = trimmed
  }
  for (const [name, field] of Object.entries(fields)) {
    if (field.required && !out[name]) throw badValue(`credentials.${name}: is required for a ${provider} sender`)
  }
  return out
}

function pace(config: Config, row: Pick<SenderRow, 'provider' | 'rate_per_second' | 'recipient_gap_ms' | 'throughput'>) {
  const own = paceOf(row.provider, config.providers[row.provider] as never)
  const perSecond = row.throughput === 'high' ? HIGH_THROUGHPUT_PER_SECOND : own.perSecond
  return { perSecond: row.rate_per_second ?? perSecond, recipientGapMs: row.recipient_gap_ms ?? own.recipientGapMs }
}

/** The sender as the admin API shows it: which credential fields are set, never a value. */
async function present(
  ctx: Pick<SendersContext, 'secrets' | 'config' | 'clock'> & { sql: Db },
  row: SenderRow,
  accounts: { account_id: number; default: boolean }[],
): Promise<Sender> {
  const tz = ctx.config.timezone
  const fields = supportOf(row.provider).fields
  // A credential sealed under a key this service no longer has shows as none set (send and check will say why).
  const set = Object.keys(await openFields(ctx.secrets, row).catch(() => ({})))
  const { perSecond, recipientGapMs } = pace(ctx.config, row)
  return {
    id: row.id,
    provider: row.provider,
    name: row.name,
    number: row.number,
    identity: row.identity,
    credentials_set: set.filter((name) => name in fields),
    rate_per_second: perSecond,
    recipient_gap_ms: recipientGapMs,
    disabled: row.disabled_at !== null,
    messaging_limit: row.messaging_limit,
    portfolio: row.portfolio_id === null ? null : await portfolioName(ctx.sql, row.portfolio_id),
    late_failures: row.late_failures,
    budget: formatTimes(await senderBudgetUse(ctx.sql, ctx.clock, row.id, ctx.config.messagingLimit), tz),
    health: (await healthOf(ctx.sql, ctx.clock, tz, row.id)) as Sender['health'],
    last_check: row.checked_at
      ? { at: formatTimestamp(row.checked_at, tz)!, ok: row.check_ok === true, detail: row.check_detail ?? '' }
      : null,
    accounts,
    created_at: formatTimestamp(row.created_at, tz)!,
  }
}

async function portfolioName(db: Db, id: number): Promise<string> {
  const [row] = await db<{ name: string }[]>`select name from portfolios where id = ${id}`
  return row!.name
}

/** A stored sender's credential fields, opened. */
export async function openFields(secrets: SecretBox, row: Pick<SenderRow, 'id' | 'credentials'>): Promise<Record<string, string>> {
  return JSON.parse(await secrets.open(row.credentials, sealContext(row.id))) as Record<string, string>
}

/**
 * Why a sender's credentials did not open (openFields failed), for its hand-off and its check: sealed
 * under a key this service lacks, or not sealed for this sender (altered, or copied from another
 * sender's row, which the sealing context refuses). Names no value.
 */
export function whyNotOpen(error: unknown): string {
  return error instanceof SecretError && error.failure === 'key'
    ? "credentials do not open with this service's SECRETS_KEY (see SECRETS_KEY_PREVIOUS)"
    : 'credentials do not open for it: altered, or sealed for another sender (copied from its row?); set them again'
}

async function accountsOf(db: Db, ids: number[]): Promise<Map<number, { account_id: number; default: boolean }[]>> {
  const rows = await db<{ sender_id: number; account_id: number; is_default: boolean }[]>`
    select sender_id, account_id, is_default from account_senders where sender_id = any(${ids}::bigint[]) order by account_id`
  const out = new Map<number, { account_id: number; default: boolean }[]>()
  for (const r of rows) out.set(r.sender_id, [...(out.get(r.sender_id) ?? []), { account_id: r.account_id, default: r.is_default }])
  return out
}

async function rowOf(db: Db, id: number): Promise<SenderRow> {
  const [row] = await db<SenderRow[]>`select * from senders where id = ${id}`
  if (!row) throw new ApiError('NOT_FOUND', `sender ${id} not found`)
  return row
}

export async function getSender(ctx: SendersContext, id: number): Promise<Sender> {
  const row = await rowOf(ctx.sql, id)
  return present(ctx, row, (await accountsOf(ctx.sql, [id])).get(id) ?? [])
}

/** Every sender, oldest first (a deployment has a handful, not thousands). */
export async function listSenders(ctx: SendersContext): Promise<Sender[]> {
  const rows = await ctx.sql<SenderRow[]>`select * from senders order by id`
  const accounts = await accountsOf(
    ctx.sql,
    rows.map((r) => r.id),
  )
  return Promise.all(rows.map((r) => present(ctx, r, accounts.get(r.id) ?? [])))
}

/** Creates a sender; `ctx.sql` may be the caller's transaction (a dashboard form done once). */
export async function createSender(ctx: Omit<SendersContext, 'sql'> & { sql: Db }, actor: Actor, input: CreateSenderBody): Promise<Sender> {
  pluginOf(input.provider)
  const name = requireText(input.name, 'name', 100)
  const number = requireNumber(input.number)
  const fields = requireFields(input.provider, input.credentials ?? {})
  const identity = supportOf(input.provider).identityOf(fields)
  const tier = requireTier(input.messaging_limit ?? null, 'messaging_limit')
  const row = await transaction(ctx.sql, async (tx) => {
    const portfolioId = await portfolioIdOf(tx, input.portfolio ?? null, 'portfolio')
    const [taken] = await tx`select id from senders where provider = ${input.provider} and number = ${number}`
    if (taken) throw new ApiError('CONFLICT', `a ${input.provider} sender with number ${number} exists already (sender ${taken.id})`)
    // The id is the sealing context, so the row comes first and its credentials right after, in one transaction.
    const [created] = await tx<{ id: number }[]>`
      insert into senders (provider, name, number, identity, credentials, rate_per_second, recipient_gap_ms, messaging_limit, portfolio_id,
                           late_failures)
      values (${input.provider}, ${name}, ${number}, ${identity}, '', ${input.rate_per_second ?? null}, ${input.recipient_gap_ms ?? null},
              ${tier}, ${portfolioId}, ${input.late_failures ?? defaultLateFailures(input.provider)})
      returning id`
    const sealed = await ctx.secrets.seal(JSON.stringify(fields), sealContext(created!.id))
    const [row] = await tx<SenderRow[]>`update senders set credentials = ${sealed} where id = ${created!.id} returning *`
    await audit(tx, {
      ...actor,
      accountId: null,
      action: 'sender created',
      detail: {
        sender_id: created!.id,
        provider: input.provider,
        number,
        credentials_set: Object.keys(fields),
        late_failures: row!.late_failures,
      },
    })
    return row!
  })
  return present(ctx, row, [])
}

export async function updateSender(ctx: SendersContext, actor: Actor, id: number, input: UpdateSenderBody): Promise<Sender> {
  const name = input.name === undefined ? undefined : requireText(input.name, 'name', 100)
  const tier = input.messaging_limit === undefined ? undefined : requireTier(input.messaging_limit, 'messaging_limit')
  await ctx.sql.begin(async (tx) => {
    const [row] = await tx<SenderRow[]>`select * from senders where id = ${id} for update`
    if (!row) throw new ApiError('NOT_FOUND', `sender ${id} not found`)
    // Meta said this sender's limit (its webhooks keep it): a typed one would be overwritten, or worse, wrong until then.
    if (tier !== undefined && row.messaging_limit_source === 'meta')
      throw badValue(
        `messaging_limit: Meta sets sender ${id}'s messaging limit (business_capability_update); it is ${row.messaging_limit ?? 'unlimited'} and cannot be typed`,
      )
    const portfolioId = input.portfolio === undefined ? row.portfolio_id : await portfolioIdOf(tx, input.portfolio, 'portfolio')
    let sealed = row.credentials
    let identity = row.identity
    if (input.credentials !== undefined) {
      // Stored credentials that do not open (sealed under a key no longer held, or not for this sender)
      // are replaced whole: the change must give every required field.
      const merged = { ...(await openFields(ctx.secrets, row).catch(() => ({}))), ...input.credentials }
      const fields = requireFields(row.provider, merged)
      identity = supportOf(row.provider).identityOf(fields)
      sealed = await ctx.secrets.seal(JSON.stringify(fields), sealContext(id))
    }
    await tx`
      update senders set
        name = ${name ?? row.name},
        credentials = ${sealed},
        identity = ${identity},
        rate_per_second = ${input.rate_per_second === undefined ? row.rate_per_second : input.rate_per_second},
        recipient_gap_ms = ${input.recipient_gap_ms === undefined ? row.recipient_gap_ms : input.recipient_gap_ms},
        messaging_limit = ${tier === undefined ? row.messaging_limit : tier},
        portfolio_id = ${portfolioId},
        late_failures = ${input.late_failures ?? row.late_failures},
        updated_at = now()
      where id = ${id}`
    const changed = Object.keys(input).filter((k) => k !== 'credentials')
    await audit(tx, {
      ...actor,
      accountId: null,
      action: 'sender changed',
      detail: { sender_id: id, changed, credentials_set: Object.keys(input.credentials ?? {}) },
    })
  })
  return getSender(ctx, id)
}

/** Disables (new sends through it are refused; what was charged already still goes) or enables a sender. */
export async function setSenderDisabled(ctx: SendersContext, actor: Actor, id: number, disabled: boolean): Promise<Sender> {
  await ctx.sql.begin(async (tx) => {
    const [row] = await tx`
      update senders set disabled_at = ${disabled ? tx`coalesce(disabled_at, now())` : null}, updated_at = now()
      where id = ${id} returning id`
    if (!row) throw new ApiError('NOT_FOUND', `sender ${id} not found`)
    await audit(tx, { ...actor, accountId: null, action: disabled ? 'sender disabled' : 'sender enabled', detail: { sender_id: id } })
  })
  return getSender(ctx, id)
}

/** Records a check's answer (the provider's words, which hold no credential). */
export async function recordCheck(ctx: SendersContext, actor: Actor, id: number, check: SenderCheck): Promise<Sender> {
  await ctx.sql.begin(async (tx) => {
    await tx`update senders set checked_at = now(), check_ok = ${check.ok}, check_detail = ${check.detail} where id = ${id}`
    await audit(tx, { ...actor, accountId: null, action: 'sender checked', detail: { sender_id: id, ok: check.ok } })
  })
  if (check.ok) await recordQuality(ctx.sql, { clock: ctx.clock, timezone: ctx.config.timezone }, id, check.quality, 'check')
  return getSender(ctx, id)
}

export async function senderRow(sql: Sql, id: number): Promise<SenderRow> {
  return rowOf(sql, id)
}

/** The ids of the senders of these providers that are not disabled, oldest first (the templates' periodic sync). */
export async function activeSenderIds(sql: Sql, providers: readonly string[]): Promise<number[]> {
  const rows = await sql<{ id: number }[]>`
    select id from senders where provider = any(${providers as string[]}::text[]) and disabled_at is null order by id`
  return rows.map((r) => Number(r.id))
}

/** Gives a sender to an account; its first sender (or `makeDefault`) becomes its default. */
export async function assignSender(ctx: SendersContext, actor: Actor, accountId: number, senderId: number, makeDefault: boolean) {
  await ctx.sql.begin(async (tx) => {
    const [account] = await tx`select id from accounts where id = ${accountId} for update`
    if (!account) throw new ApiError('NOT_FOUND', `account ${accountId} not found`)
    await rowOf(tx, senderId)
    const [others] = await tx<{ count: number }[]>`
      select count(*)::int as count from account_senders where account_id = ${accountId} and sender_id <> ${senderId}`
    const isDefault = makeDefault || others!.count === 0
    if (isDefault) await tx`update account_senders set is_default = false where account_id = ${accountId} and is_default`
    await tx`
      insert into account_senders (account_id, sender_id, is_default) values (${accountId}, ${senderId}, ${isDefault})
      on conflict (account_id, sender_id) do update set is_default = account_senders.is_default or excluded.is_default`
    await audit(tx, { ...actor, accountId, action: 'sender assigned', detail: { sender_id: senderId, default: isDefault } })
  })
  return listAccountSenders(ctx.sql, accountId)
}

/** Takes a sender from an account; when it was the default, its oldest other sender becomes the default. */
export async function unassignSender(ctx: SendersContext, actor: Actor, accountId: number, senderId: number) {
  await ctx.sql.begin(async (tx) => {
    const [account] = await tx`select id from accounts where id = ${accountId} for update`
    if (!account) throw new ApiError('NOT_FOUND', `account ${accountId} not found`)
    const [gone] = await tx<{ is_default: boolean }[]>`
      delete from account_senders where account_id = ${accountId} and sender_id = ${senderId} returning is_default`
    if (!gone) throw new ApiError('NOT_FOUND', `sender ${senderId} is not assigned to account ${accountId}`)
    if (gone.is_default) {
      await tx`
        update account_senders set is_default = true
        where account_id = ${accountId} and sender_id = (
          select sender_id from account_senders where account_id = ${accountId} order by created_at, sender_id limit 1)`
    }
    await audit(tx, { ...actor, accountId, action: 'sender unassigned', detail: { sender_id: senderId } })
  })
  return listAccountSenders(ctx.sql, accountId)
}

export type SenderName = { id: number; provider: ProviderName; name: string; number: string; disabled: boolean }

/**
 * Senders as pages name them (a message's or a campaign's, a choice in a form), oldest first: never a
 * credential. `ids`: those senders only; undefined: every sender.
 */
export async function senderNames(db: Db, ids?: number[]): Promise<SenderName[]> {
  if (ids?.length === 0) return []
  return db<SenderName[]>`
    select id, provider, name, number, disabled_at is not null as disabled from senders
    where ${ids === undefined ? db`true` : db`id = any(${ids}::bigint[])`}
    order by id`
}

/** An account's senders, as its members see them (no credentials). */
export async function listAccountSenders(db: Db, accountId: number): Promise<AccountSender[]> {
  const [account] = await db`select id from accounts where id = ${accountId}`
  if (!account) throw new ApiError('NOT_FOUND', `account ${accountId} not found`)
  return db<AccountSender[]>`
    select s.id, s.provider, s.name, s.number, a.is_default as default, s.disabled_at is not null as disabled
    from account_senders a join senders s on s.id = a.sender_id
    where a.account_id = ${accountId}
    order by a.is_default desc, s.id`
}

/**
 * Seals every credential sealed under an earlier key again under the current one (SECRETS_KEY), one
 * sender at a time: safe to repeat, and to run while the service sends (a sender changed meanwhile is
 * left as its change wrote it).
 */
export async function rotateCredentials(ctx: SendersContext, actor: Actor): Promise<{ rotated: number; current: number; key_id: string }> {
  const rows = await ctx.sql<Pick<SenderRow, 'id' | 'credentials'>[]>`select id, credentials from senders order by id`
  let rotated = 0
  for (const row of rows) {
    if (!ctx.secrets.needsRotation(row.credentials)) continue
    const resealed = await ctx.secrets.seal(await ctx.secrets.open(row.credentials, sealContext(row.id)), sealContext(row.id))
    // updated_at moves too: an instance that could not open the old seal (it lacked the earlier key)
    // rebuilds the sender from its row once it sees the change, instead of keeping its failing one.
    const [done] = await ctx.sql`
      update senders set credentials = ${resealed}, updated_at = now()
      where id = ${row.id} and credentials = ${row.credentials} returning id`
    if (done) rotated++
  }
  await audit(ctx.sql, { ...actor, accountId: null, action: 'credentials rotated', detail: { rotated, key_id: ctx.secrets.keyId } })
  return { rotated, current: rows.length - rotated, key_id: ctx.secrets.keyId }
}
