// Recovers charged messages whose hand-off lease expired: the process handing them over died (or
// hung past every timeout). Each is claimed with a fresh lease (a new holder token, so the old
// holder's renewal fails) and handed over again; a refusal is refunded. The `status = 'queued'` guard
// on every outcome write means each message ends sent or refunded exactly once.
//
// A lease is taken over once it has been expired for a further lease's length: a live holder renews it
// every fifth of a lease, so only a holder that is gone, or cut off from the database for longer than
// that, lets it get so old (an outage this process saw also holds recovery back, below). A lease this
// process holds itself is never taken over here, however old: its holder is alive (the process stalled).
//
// A message recovered MAX_RECOVERIES times and still without an outcome is not handed over again:
// its outcome keeps failing to be recorded (the provider may well have accepted it every time), so
// it is quarantined for an operator (GET /admin/v1/quarantine) instead of being sent forever.

import type { Deps } from '../deps'
import { log } from '../lib/log'
import { isOutage } from '../db/retry'
import { nowOf } from '../db/now'
import { outgoingOf } from '../modules/messages/content'
import { openedMessage } from '../modules/messages/redact'
import type { Worker } from './worker'
import type { RichContent, StoredTemplate } from '../providers/provider'

const BATCH = 500
export const MAX_RECOVERIES = 3
/** Expired leases are looked for this often (a lease is never shorter than a few seconds). */
const HANDOFF_RECOVERY_POLL_MS = 5_000
/**
 * After this process could not reach the database, it takes nothing over for a lease's length
 * (HANDOFF_LEASE_SECONDS): live holders renew their leases every fifth of it once the database is
 * back, and a lease that ran out during the outage is not a sign that its holder died (recovery must
 * only ever take over from a dead holder).
 */
const afterOutageMs = (deps: Pick<Deps, 'config'>) => deps.config.handoffLeaseSeconds * 1000

type Recovered = {
  id: number
  phone: string
  body: string
  media_url: string | null
  provider_template: StoredTemplate | null
  request_token: string | null
  content: RichContent | null
  reply_to: string | null
  quarantined: boolean
  valid_ms: number
  sender_id: number | null
}

async function recoverHandoffs(
  deps: Pick<Deps, 'sql' | 'handoff' | 'senders' | 'config' | 'clock' | 'secrets'>,
): Promise<{ claimed: number; quarantined: number }> {
  const lease = deps.handoff.lease()
  const now = nowOf(deps.sql, deps.clock)
  const rows = await deps.sql<Recovered[]>`
    with due as (
      select id from messages
      where status = 'queued' and handoff_until < ${now} - make_interval(secs => ${deps.config.handoffLeaseSeconds})
        -- Never one this process is handing over now: its holder is alive (its lease ran out in a stall).
        and coalesce(handoff_token <> all(${deps.handoff.heldTokens()}::uuid[]), true)
      order by handoff_until
      limit ${BATCH}
      for update skip locked
    ), quarantined as (
      update messages set handoff_until = null, handoff_token = null, quarantined_at = ${now}
      where id in (select id from due) and handoff_recoveries >= ${MAX_RECOVERIES}
      returning id, phone, body, media_url, provider_template, request_token, content, reply_to, true as quarantined, 0::float8 as valid_ms, sender_id
    ), claimed as (
      update messages set handoff_token = ${lease.token}, handoff_until = ${now} + make_interval(secs => ${lease.seconds}),
        handoff_recoveries = handoff_recoveries + 1
      where id in (select id from due) and handoff_recoveries < ${MAX_RECOVERIES}
      returning id, phone, body, media_url, provider_template, request_token, content, reply_to, false as quarantined,
        extract(epoch from coalesce(valid_until, created_at + make_interval(secs => ${deps.config.messageValiditySeconds})) - ${now})
          * 1000 as valid_ms, sender_id
    )
    select * from claimed union all select * from quarantined`
  const claimed = rows.filter((m) => !m.quarantined)
  for (const m of rows) if (m.quarantined) log.warn('message quarantined: its hand-off outcome could not be recorded', { message_id: m.id })
  if (claimed.length > 0) {
    const claimedAt = deps.clock.now().getTime()
    const paced = await Promise.all(
      claimed.map(async (m) => {
        const sender = await deps.senders.get(m.sender_id)
        // A secret the row keeps sealed (a verification's code) is opened for the provider only.
        return {
          ...outgoingOf(await openedMessage(deps.secrets, m), sender.providerName),
          validUntilMs: claimedAt + m.valid_ms,
          senderId: m.sender_id,
        }
      }),
    )
    await deps.handoff.many(paced, lease)
  }
  return { claimed: claimed.length, quarantined: rows.length - claimed.length }
}

/** When each database (its client) last failed this worker: instances and tests each have their own. */
const lastOutageAt = new WeakMap<object, number>()

/**
 * A statement that takes this long to answer waited for the database: postgres.js holds statements
 * while it reconnects, so an outage can show as a slow answer rather than an error.
 */
const SLOW_PROBE_MS = 1_000

export const handoffRecovery: Worker = {
  name: 'handoff-recovery',
  pollMs: HANDOFF_RECOVERY_POLL_MS,
  async runOnce(deps) {
    try {
      // A probe first: a database that just came back after keeping it waiting is an outage seen too.
      const probing = deps.clock.monotonic()
      await deps.sql`select 1`
      if (deps.clock.monotonic() - probing > SLOW_PROBE_MS) lastOutageAt.set(deps.sql, deps.clock.now().getTime())
      const lastError = Math.max(lastOutageAt.get(deps.sql) ?? 0, deps.handoff.lastDatabaseErrorAt())
      if (deps.clock.now().getTime() - lastError < afterOutageMs(deps)) return 0
      return (await recoverHandoffs(deps)).claimed
    } catch (error) {
      if (isOutage(error)) lastOutageAt.set(deps.sql, deps.clock.now().getTime())
      throw error
    }
  },
}
