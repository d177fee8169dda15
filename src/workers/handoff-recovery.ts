// Recovers charged messages whose hand-off lease expired: the process handing them over died (or
// hung past every timeout). Each is claimed with a fresh lease and handed over again; a refusal is
// refunded. The `status = 'queued'` guard on every outcome write means each message ends sent or
// refunded exactly once.

import type { Deps } from '../deps'
import { HANDOFF_LEASE_SECONDS } from '../modules/messages/billing'

const BATCH = 500

export async function runOnce(deps: Pick<Deps, 'sql' | 'handoff'>): Promise<{ claimed: number }> {
  const claimed = await deps.sql<{ id: number; phone: string; body: string; media_url: string | null }[]>`
    update messages set handoff_until = now() + make_interval(secs => ${HANDOFF_LEASE_SECONDS})
    where id in (
      select id from messages
      where status = 'queued' and handoff_until < now()
      order by handoff_until
      limit ${BATCH}
      for update skip locked
    )
    returning id, phone, body, media_url`
  if (claimed.length > 0) {
    await deps.handoff.many(claimed.map((m) => ({ id: m.id, to: m.phone, body: m.body, mediaUrl: m.media_url })))
  }
  return { claimed: claimed.length }
}
