// One-time passwords (issue 30 §4): POST /api/v1/verifications makes a code and sends it through an
// approved authentication template of the account, as a message like any other (messages/service.ts
// sendOne: the same refusals, the same charge, the same hand-off; the template's code button gets the
// same code there, fill.ts). Only a keyed digest of the code is kept (HMAC-SHA-256 under the secrets key). POST /verifications/{id}/check
// compares in constant time and answers `approved`, `pending` (a wrong code, attempts left), `expired`
// or `too_many_attempts`; the first approval records a `verification.approved` event in its
// transaction. An account may start only so many verifications per number and in all per window
// (VERIFY_PER_NUMBER, VERIFY_PER_ACCOUNT, VERIFY_WINDOW_SECONDS): beyond them 429 with Retry-After,
// nothing sent or charged. Time is the deps clock's (nowOf): tests move it, nothing sleeps.

import { randomBytes } from 'node:crypto'
import type { Deps } from '../../deps'
import type { Db, Fragment } from '../../db/client'
import { nowOf } from '../../db/now'
import { ApiError, badValue } from '../../http/errors'
import { requirePhone } from '../../http/values'
import { usableTemplate, usableTemplates, type WaTemplate } from '../templates/catalog'
import { requireApproved } from '../templates/fill'
import { parametersOf } from '../templates/parameters'
import { sendOne, type Sending } from '../messages/service'
import type { SendBody } from '../messages/model'
import { accountEvent } from '../webhooks/events'

export type VerificationStatus = 'pending' | 'approved' | 'expired' | 'too_many_attempts'

type Row = {
  id: number
  account_id: number
  phone: string
  template_id: number
  message_sid: string | null
  code_salt: string
  code_hash: string
  status: VerificationStatus | 'failed'
  attempts: number
  max_attempts: number
  created_at: Date
  expires_at: Date
  approved_at: Date | null
  expired: boolean
}

export type Verification = {
  id: number
  to: string
  status: VerificationStatus
  template_id: number
  message_sid: string | null
  expires_at: Date
  attempts_left: number
}

// The first keys of the two-key advisory locks taken while an account's verifications, then a number's,
// are counted.
const START_LOCK = 30_041
const NUMBER_LOCK = 30_055

/** `length` decimal digits, each uniform (a 32-bit draw above the last multiple of 10 is drawn again). */
export function newCode(length: number): string {
  let code = ''
  const draw = new Uint32Array(1)
  while (code.length < length) {
    crypto.getRandomValues(draw)
    if (draw[0]! >= 4_294_967_290) continue
    code += String(draw[0]! % 10)
  }
  return code
}

// A code is kept only as a keyed digest (the secrets key's, lib/secrets.ts) with its own salt in the
// context: a copy of the database alone cannot try the million codes of six digits against it.
const contextOf = (salt: string) => `verification:${salt}`

/** Whether `code` is the one whose digest the row keeps, compared in constant time. */
function matches(secrets: Deps['secrets'], row: Pick<Row, 'code_salt' | 'code_hash'>, code: string): Promise<boolean> {
  return secrets.matchesDigest(code, contextOf(row.code_salt), row.code_hash)
}

/** The one body parameter of an authentication template (its code), or why it cannot carry one. */
function codeKeyOf(t: WaTemplate): string {
  const body = parametersOf(t).body
  return body.length === 1 ? body[0]!.key : ''
}

const describe = (t: WaTemplate) => `template ${t.id} (${t.name}, ${t.language})`

/**
 * The template a verification goes with: `templateId` (an approved authentication template of the
 * account with one body parameter, its code), or the account's first such template. 422 naming the fix.
 */
export async function verificationTemplate(sql: Db, accountId: number, templateId: number | undefined): Promise<WaTemplate> {
  if (templateId !== undefined) {
    const t = await usableTemplate(sql, accountId, templateId)
    if (!t) throw badValue(`template_id: ${templateId} is not a WhatsApp template this account may use (GET /templates lists them)`)
    if (t.category !== 'authentication')
      throw badValue(`template_id: ${describe(t)} is a ${t.category} template; a verification goes with an authentication template`)
    requireApproved(t)
    if (codeKeyOf(t) === '')
      throw badValue(`template_id: ${describe(t)} does not take exactly one body parameter (the code), so it cannot carry a code`)
    return t
  }
  const approved = await usableTemplates(
    sql as Parameters<typeof usableTemplates>[0],
    accountId,
    { status: 'approved' },
    {
      limit: 200,
      offset: 0,
    },
  )
  const fit = approved.items.filter((t) => t.category === 'authentication' && codeKeyOf(t) !== '').sort((a, b) => a.id - b.id)[0]
  if (!fit) {
    throw badValue(
      'template_id: the account has no approved authentication template to send a code with; create one with category ' +
        'AUTHENTICATION and a body taking the code (POST /admin/v1/senders/{id}/templates), wait for its approval, or name one ' +
        'with template_id; nothing was sent or charged',
    )
  }
  return fit
}

/**
 * Reserves a verification for `phone` under the limits (429 RATE_LIMITED with Retry-After beyond them):
 * the account's for the number and for all its numbers, and every account's together for the number.
 * Counted and inserted under the account's advisory lock, then the number's (always in that order, so
 * two starts never wait on each other crosswise), so concurrent starts cannot pass a limit together. A
 * failed send's row (status failed) does not count.
 */
async function reserve(deps: Deps, principal: Sending, phone: string, template: WaTemplate, code: string) {
  const { perNumber, perNumberTotal, perAccount, windowSeconds, ttlSeconds, maxAttempts } = deps.config.verify
  const salt = randomBytes(16).toString('hex')
  const digest = await deps.secrets.digest(code, contextOf(salt))
  return deps.sql.begin(async (tx) => {
    // Keyed by a hash of the id (any bigint), as the status receiver keys its SIDs' locks.
    await tx`select pg_advisory_xact_lock(${START_LOCK}, hashtext(${String(principal.accountId)}))`
    await tx`select pg_advisory_xact_lock(${NUMBER_LOCK}, hashtext(${phone}))`
    const now = nowOf(tx, deps.clock)
    const since = tx`${now} - make_interval(secs => ${windowSeconds})`
    // The wait until the oldest counted start leaves the window.
    const wait = (oldest: Fragment) => tx`extract(epoch from (${oldest} + make_interval(secs => ${windowSeconds}) - ${now}))::float8`
    const [mine] = await tx<{ number: number; account: number; number_wait: number | null; account_wait: number | null }[]>`
      with recent as (
        select phone, created_at from verifications
        where account_id = ${principal.accountId} and status <> 'failed' and created_at > ${since}
      )
      select
        count(*) filter (where phone = ${phone})::int as number,
        count(*)::int as account,
        ${wait(tx`min(created_at) filter (where phone = ${phone})`)} as number_wait,
        ${wait(tx`min(created_at)`)} as account_wait
      from recent`
    const [all] = await tx<{ number: number; number_wait: number | null }[]>`
      select count(*)::int as number, ${wait(tx`min(created_at)`)} as number_wait
      from verifications where phone = ${phone} and status <> 'failed' and created_at > ${since}`
    const limited = (what: string, wait: number | null) => {
      const seconds = Math.max(1, Math.ceil(wait ?? windowSeconds))
      return new ApiError(
        'RATE_LIMITED',
        `${what} in the last ${windowSeconds} s, its limit; nothing was sent or charged, retry in ${seconds} s`,
        429,
        {},
        { 'retry-after': String(seconds) },
      )
    }
    if (mine!.number >= perNumber) throw limited(`this account has started ${perNumber} verifications for ${phone}`, mine!.number_wait)
    if (mine!.account >= perAccount) throw limited(`this account has started ${perAccount} verifications`, mine!.account_wait)
    // Says no more than that the number had its codes: never which accounts, nor how many each.
    if (all!.number >= perNumberTotal) throw limited(`${phone} has been sent ${perNumberTotal} verification codes`, all!.number_wait)
    const [row] = await tx<{ id: number; expires_at: Date }[]>`
      insert into verifications (account_id, api_key_id, phone, template_id, code_salt, code_hash, max_attempts, created_at, expires_at)
      values (${principal.accountId}, ${principal.keyId}, ${phone}, ${template.id}, ${salt}, ${digest},
              ${maxAttempts}, ${now}, ${now} + make_interval(secs => ${ttlSeconds}))
      returning id, expires_at`
    return { id: Number(row!.id), expiresAt: row!.expires_at }
  })
}

/** POST /verifications: a new code, sent; the verification `pending`. */
export async function startVerification(
  deps: Deps,
  principal: Sending,
  input: { to: string; template_id?: number },
  requestToken: string,
): Promise<Verification> {
  const phone = requirePhone(input.to, 'to')
  const template = await verificationTemplate(deps.sql, principal.accountId, input.template_id)
  const code = newCode(deps.config.verify.codeLength)
  const { id, expiresAt } = await reserve(deps, principal, phone, template, code)
  const send: SendBody = { to: phone, template_id: template.id, variables: { [codeKeyOf(template)]: code } }
  let sent: Awaited<ReturnType<typeof sendOne>>
  try {
    sent = await sendOne(deps, principal, send, requestToken, code)
  } catch (error) {
    // Not sent (refused before the charge, or by the provider and refunded): the verification does not count.
    await deps.sql`update verifications set status = 'failed' where id = ${id}`
    throw error
  }
  const messageSid = 'message_id' in sent ? sent.message_id : null
  const messageId = 'id' in sent ? sent.id : null
  await deps.sql`update verifications set message_sid = ${messageSid}, message_id = ${messageId} where id = ${id}`
  return {
    id,
    to: phone,
    status: 'pending',
    template_id: template.id,
    message_sid: messageSid,
    expires_at: expiresAt,
    attempts_left: deps.config.verify.maxAttempts,
  }
}

const view = (row: Row, status: VerificationStatus): Verification => ({
  id: Number(row.id),
  to: row.phone,
  status,
  template_id: Number(row.template_id),
  message_sid: row.message_sid,
  expires_at: row.expires_at,
  attempts_left: Math.max(0, row.max_attempts - row.attempts),
})

async function rowOf(sql: Db, deps: Deps, accountId: number, id: number, lock: boolean): Promise<Row> {
  const [row] = await sql<Row[]>`
    select id, account_id, phone, template_id, message_sid, code_salt, code_hash, status, attempts, max_attempts,
           created_at, expires_at, approved_at, expires_at <= ${nowOf(sql, deps.clock)} as expired
    from verifications where id = ${id} and account_id = ${accountId} and status <> 'failed'
    ${lock ? sql`for update` : sql``}`
  if (!row) throw new ApiError('NOT_FOUND', `verification ${id} not found`)
  return row
}

/** GET /verifications/{id}: its status now (a pending one past its expiry shows `expired`). */
export async function getVerification(deps: Deps, accountId: number, id: number): Promise<Verification> {
  const row = await rowOf(deps.sql, deps, accountId, id, false)
  const status = row.status === 'pending' && row.expired ? 'expired' : (row.status as VerificationStatus)
  return view(row, status)
}

/**
 * POST /verifications/{id}/check: the code compared with the kept hash. A pending verification past its
 * expiry is `expired`; a wrong code uses an attempt (`pending`, or `too_many_attempts` at the last);
 * the right one `approved` (its event recorded once, with the approval). An ended verification
 * answers its status; `valid` says whether this code was the right one.
 */
export async function checkVerification(
  deps: Deps,
  accountId: number,
  id: number,
  code: string,
): Promise<Verification & { valid: boolean }> {
  return deps.sql.begin(async (tx) => {
    const row = await rowOf(tx, deps, accountId, id, true)
    if (row.status !== 'pending') {
      return {
        ...view(row, row.status as VerificationStatus),
        valid: row.status === 'approved' && (await matches(deps.secrets, row, code)),
      }
    }
    if (row.expired) {
      await tx`update verifications set status = 'expired' where id = ${row.id}`
      return { ...view(row, 'expired'), valid: false }
    }
    if (await matches(deps.secrets, row, code)) {
      await tx`update verifications set status = 'approved', approved_at = ${nowOf(tx, deps.clock)} where id = ${row.id}`
      await accountEvent(
        tx,
        deps.config.timezone,
        accountId,
        'verification.approved',
        { verification_id: Number(row.id), to: row.phone, template_id: Number(row.template_id), message_sid: row.message_sid },
        deps.clock,
      )
      return { ...view(row, 'approved'), valid: true }
    }
    const attempts = row.attempts + 1
    const status: VerificationStatus = attempts >= row.max_attempts ? 'too_many_attempts' : 'pending'
    await tx`update verifications set attempts = ${attempts}, status = ${status} where id = ${row.id}`
    return { ...view({ ...row, attempts }, status), valid: false }
  })
}
