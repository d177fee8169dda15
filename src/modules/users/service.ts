// Dashboard users: operators (every account) and members (one account). No public sign-up: an
// operator is made from the command line, members are invited; both set their password through a
// single-use link (stored hashed, valid 72 h), as are password resets. Passwords are argon2id hashes
// (Bun.password); sign-in failures are throttled per e-mail and per address.

import { transaction, type Db, type Sql } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import { ApiError, badValue } from '../../http/errors'
import { randomBase62, sha256Hex } from '../../lib/keys'
import { Semaphore } from '../../lib/limit'
import { pageOf, type Page } from '../../lib/validate'

import type { Role, User } from '../../dashboard/session'

export type { Role, User } from '../../dashboard/session'

export const MIN_PASSWORD_LENGTH = 12
const MAX_PASSWORD_LENGTH = 200
const LINK_HOURS = 72
/** Failed sign-ins for one e-mail before it is locked, and for how long. */
export const EMAIL_FAILURES = 5
export const LOCK_MINUTES = 15
/** Failed sign-ins from one address in a window before it is refused too (many e-mails tried). */
export const ADDRESS_FAILURES = 50

// argon2id takes tens of MB per hash: a flood of sign-ins waits here instead of exhausting memory.
const hashing = new Semaphore(2)
// Bun's argon2id parameters (64 MiB, 2 passes) unless a test process lowered them; a hash carries its
// own parameters, so verifying follows whichever made it.
let hashCost: PasswordHashCost = {}
const argon2id = (password: string) => Bun.password.hash(password, { algorithm: 'argon2id', ...hashCost })
const hashPassword = (password: string) => hashing.run(() => argon2id(password))
// Checked against when the e-mail is unknown, so both cases take one verification's time.
let dummyHash: Promise<string> | undefined

export type PasswordHashCost = { memoryCost?: number; timeCost?: number }
/**
 * For tests only (tests/helpers/app.ts): argon2id with cheaper parameters, the same algorithm and the
 * same checks. The dashboard's tests sign in hundreds of times, each a 64 MiB hash at Bun's defaults;
 * the service never calls this.
 */
export function setPasswordHashCostForTests(cost: PasswordHashCost): void {
  hashCost = cost
  dummyHash = undefined
}

export const MAX_EMAIL_CHARS = 254
const EMAIL = /^[^\s@<>"']+@[^\s@<>"']+\.[^\s@<>"']+$/

export function requireEmail(value: string): string {
  const email = value.trim().toLowerCase()
  if (email.length > MAX_EMAIL_CHARS || !EMAIL.test(email)) throw badValue('email: must be an e-mail address')
  return email
}

export function requirePassword(value: string): string {
  if (value.length < MIN_PASSWORD_LENGTH) throw badValue(`password: must be at least ${MIN_PASSWORD_LENGTH} characters`)
  if (value.length > MAX_PASSWORD_LENGTH) throw badValue(`password: must be at most ${MAX_PASSWORD_LENGTH} characters`)
  return value
}

const USER_COLUMNS = (sql: Db) => sql`id, email, role, account_id, active`

/** A new user with a link to set the password. An e-mail already in use is 409. */
export async function createUser(
  sql: Db,
  clock: Clock,
  input: { email: string; role: Role; accountId: number | null; createdBy: number | null },
): Promise<{ user: User; token: string }> {
  const email = requireEmail(input.email)
  return transaction(sql, async (tx) => {
    if (input.accountId !== null) {
      const [account] = await tx`select id from accounts where id = ${input.accountId}`
      if (!account) throw new ApiError('NOT_FOUND', `account ${input.accountId} not found`)
    }
    const [user] = await tx<User[]>`
      insert into users (email, role, account_id) values (${email}, ${input.role}, ${input.accountId})
      on conflict do nothing
      returning ${USER_COLUMNS(tx)}`
    if (!user) throw new ApiError('CONFLICT', `a user with the e-mail ${email} exists`)
    const token = await createLink(tx, clock, user.id, 'invite', input.createdBy)
    return { user, token }
  })
}

/** A single-use link for `userId`; earlier unused links of the user stop working. Returns the token. */
export async function createLink(
  db: Db,
  clock: Clock,
  userId: number,
  kind: 'invite' | 'reset',
  createdBy: number | null,
): Promise<string> {
  const token = randomBase62(43) // ~256 bits
  const now = nowOf(db, clock)
  await db`update user_links set used_at = ${now} where user_id = ${userId} and used_at is null`
  await db`
    insert into user_links (token_hash, user_id, kind, created_by, created_at, expires_at)
    values (${sha256Hex(token)}, ${userId}, ${kind}, ${createdBy}, ${now}, ${now} + make_interval(hours => ${LINK_HOURS}))`
  return token
}

/**
 * A new single-use link for a user who lost theirs: an invitation while they have never set a
 * password, a password reset once they have. Earlier unused links of the user stop working (createLink).
 * A deactivated user gets none: a link would let them back in.
 */
export async function reissueLink(
  sql: Db,
  clock: Clock,
  userId: number,
  createdBy: number | null,
): Promise<{ user: User; kind: 'invite' | 'reset'; token: string }> {
  return transaction(sql, async (tx) => {
    // Locked, so that of two links made at once the later one is the only one that works.
    const [row] = await tx<(User & { password_set: boolean })[]>`
      select ${USER_COLUMNS(tx)}, password_hash is not null as password_set from users where id = ${userId} for update`
    if (!row) throw new ApiError('NOT_FOUND', `user ${userId} not found`)
    const { password_set, ...user } = row
    if (!user.active) throw new ApiError('CONFLICT', `user ${userId} is deactivated: reactivate them in the dashboard first`)
    const kind = password_set ? 'reset' : 'invite'
    return { user, kind, token: await createLink(tx, clock, userId, kind, createdBy) }
  })
}

/** The users for the admin API, oldest first; only the one with `email` (any case) when it is given. */
export async function findUsers(sql: Sql, filter: { email?: string }, p: Page) {
  const where = filter.email === undefined ? sql`true` : sql`lower(email) = ${filter.email.trim().toLowerCase()}`
  const rows = await sql<(User & { password_set: boolean; created_at: Date })[]>`
    select ${USER_COLUMNS(sql)}, password_hash is not null as password_set, created_at
    from users where ${where} order by id limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from users where ${where}`
  return pageOf(rows, count!.n, p)
}

/** The user a valid, unused, unexpired link belongs to; null otherwise. */
export async function userOfLink(sql: Sql, clock: Clock, token: string): Promise<(User & { kind: string }) | null> {
  const [row] = await sql<(User & { kind: string })[]>`
    select u.id, u.email, u.role, u.account_id, u.active, l.kind
    from user_links l join users u on u.id = l.user_id
    where l.token_hash = ${sha256Hex(token)} and l.used_at is null and l.expires_at > ${nowOf(sql, clock)} and u.active`
  return row ?? null
}

/**
 * Sets the password through a link, once: the link is used up, and every session of the user ends
 * (a reset must lock out whoever knew the old password). Null if the link is not valid.
 */
export async function setPasswordWithLink(sql: Sql, clock: Clock, token: string, password: string): Promise<User | null> {
  requirePassword(password)
  const hash = await hashPassword(password)
  return sql.begin(async (tx) => {
    const now = nowOf(tx, clock)
    const [link] = await tx<{ user_id: number }[]>`
      update user_links set used_at = ${now}
      where token_hash = ${sha256Hex(token)} and used_at is null and expires_at > ${now}
      returning user_id`
    if (!link) return null
    const [user] = await tx<User[]>`
      update users set password_hash = ${hash} where id = ${link.user_id} and active returning ${USER_COLUMNS(tx)}`
    if (!user) return null
    await tx`delete from sessions where user_id = ${user.id}`
    return user
  })
}

export type SignIn = { ok: true; user: User } | { ok: false; locked: boolean }

/**
 * Checks an e-mail and password. Locked e-mails and addresses are refused without looking at the
 * password; unknown e-mails cost one verification like known ones, so timing tells nothing.
 */
export async function signIn(sql: Sql, clock: Clock, emailInput: string, password: string, address: string): Promise<SignIn> {
  const email = emailInput.trim().toLowerCase().slice(0, 254)
  const subjects = [`email:${email}`, `address:${address}`]
  const [locked] = await sql`select 1 from sign_in_failures where subject = any(${subjects}) and locked_until > ${nowOf(sql, clock)}`
  const [user] = await sql<(User & { password_hash: string | null })[]>`
    select id, email, role, account_id, active, password_hash from users where lower(email) = ${email}`
  dummyHash ??= argon2id(randomBase62(20))
  const hash = user?.active && user.password_hash ? user.password_hash : await dummyHash
  const valid = await hashing.run(() => Bun.password.verify(password.slice(0, MAX_PASSWORD_LENGTH), hash))
  if (locked) return { ok: false, locked: true }
  if (valid && user?.active && user.password_hash) {
    await sql`delete from sign_in_failures where subject = ${subjects[0]!}`
    const { password_hash: _, ...rest } = user
    return { ok: true, user: rest }
  }
  const nowLocked = await recordFailure(sql, clock, subjects[0]!, EMAIL_FAILURES)
  const addressLocked = await recordFailure(sql, clock, subjects[1]!, ADDRESS_FAILURES)
  return { ok: false, locked: nowLocked || addressLocked }
}

/** Counts a failure in the subject's window; locks it when the count reaches `limit`. */
async function recordFailure(sql: Sql, clock: Clock, subject: string, limit: number): Promise<boolean> {
  const now = nowOf(sql, clock)
  const [row] = await sql<{ locked: boolean }[]>`
    insert into sign_in_failures as f (subject, failures, window_start) values (${subject}, 1, ${now})
    on conflict (subject) do update set
      failures = case when f.window_start < ${now} - make_interval(mins => ${LOCK_MINUTES}) then 1 else f.failures + 1 end,
      window_start = case when f.window_start < ${now} - make_interval(mins => ${LOCK_MINUTES}) then ${now} else f.window_start end
    returning failures >= ${limit} as locked`
  if (row!.locked) {
    await sql`
      update sign_in_failures set locked_until = ${now} + make_interval(mins => ${LOCK_MINUTES}), failures = 0, window_start = ${now}
      where subject = ${subject}`
  }
  return row!.locked
}

export async function listUsers(sql: Sql, accountId: number | null) {
  return accountId === null
    ? sql<User[]>`select ${USER_COLUMNS(sql)} from users order by id`
    : sql<User[]>`select ${USER_COLUMNS(sql)} from users where account_id = ${accountId} order by id`
}

/** Every user with the name of their account (null for operators), for the operator's list. */
export async function listUsersWithAccounts(sql: Sql) {
  return sql<(User & { account_name: string | null })[]>`
    select u.id, u.email, u.role, u.account_id, u.active, a.name as account_name
    from users u left join accounts a on a.id = u.account_id
    order by u.id`
}

/**
 * Who made a change, for the audit log: a dashboard user, or the admin token (user null; `actor` says
 * whether through the command line), and from where.
 */
export type Actor = { user: User | null; address: string | null; actor?: string }

/**
 * One entry of the audit log: who did what to which account, from where. The detail goes as text
 * cast to jsonb: a parameter typed jsonb would be JSON-encoded a second time (a jsonb string).
 */
export async function audit(
  db: Db,
  entry: {
    user: User | null
    address: string | null
    accountId: number | null
    action: string
    detail?: Record<string, unknown>
    /** Who, when neither a user nor the admin token: an API key ("API key 12"). */
    actor?: string
  },
): Promise<void> {
  await db`
    insert into audit_log (user_id, actor, address, account_id, action, detail)
    values (${entry.user?.id ?? null}, ${entry.user?.email ?? entry.actor ?? 'admin token'}, ${entry.address}, ${entry.accountId},
            ${entry.action}, ${JSON.stringify(entry.detail ?? {})}::text::jsonb)`
}

export async function getUser(sql: Sql, id: number): Promise<User> {
  const [user] = await sql<User[]>`select ${USER_COLUMNS(sql)} from users where id = ${id}`
  if (!user) throw new ApiError('NOT_FOUND', `user ${id} not found`)
  return user
}

/** Deactivates (every session ends at once, unused links stop working) or reactivates a user. */
export async function setUserActive(sql: Sql, clock: Clock, id: number, active: boolean): Promise<User> {
  return sql.begin(async (tx) => {
    const [user] = await tx<User[]>`update users set active = ${active} where id = ${id} returning ${USER_COLUMNS(tx)}`
    if (!user) throw new ApiError('NOT_FOUND', `user ${id} not found`)
    if (!active) {
      await tx`delete from sessions where user_id = ${id}`
      await tx`update user_links set used_at = ${nowOf(tx, clock)} where user_id = ${id} and used_at is null`
    }
    return user
  })
}

export type AuditRow = {
  id: number
  at: Date
  actor: string
  address: string | null
  account_id: number | null
  action: string
  /** The detail as JSON text. */
  detail: string
}

/** The audit log, newest first; only one account's entries when `accountId` is given. */
export async function listAudit(sql: Sql, accountId: number | null, p: { limit: number; offset: number }) {
  const where = accountId === null ? sql`true` : sql`account_id = ${accountId}`
  const items = await sql<AuditRow[]>`
    select id, at, actor, address, account_id, action,
           case when jsonb_typeof(detail) = 'string' then detail #>> '{}' else detail::text end as detail -- older rows: a jsonb string
    from audit_log
    where ${where} order by id desc limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from audit_log where ${where}`
  return pageOf(items, count!.n, p)
}
