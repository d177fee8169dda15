// The simulator's reports of one message are applied in their order even when two instances claim
// them: while another session has claimed the message's delivered report (deleted, not committed, as
// an instance in the middle of applying it), this instance's worker leaves the read alone. Applied
// first, the read would make the delivered a step backwards and its event would never be written.
// PostgreSQL: it needs a second session with an open transaction.

import { afterEach, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'
import { TestClock } from '../../src/lib/clock'

let t: TestApp | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

test.skipIf(!usingPostgres())(
  'a read waits while its delivered is claimed by another instance; then both apply in order (simulator report order)',
  async () => {
    const clock = new TestClock()
    t = await testApp({ env: { SIM_DELIVERED_MS: '1', SIM_READ_MS: '2' }, clock })
    const app = t
    const { key, keyId } = await app.account(10)
    await app.db
      .sql`insert into webhook_endpoints (api_key_id, url, signing_secret) values (${keyId}, 'https://hooks.example.com/x', 'whsec_dGVzdA==')`
    const sent = await app.api('POST', '/messages/send', key, { to: '081234567890', body: 'hi' })
    expect(sent.status).toBe(200)
    const sid = sent.body.data.message_id as string
    const reports = async () =>
      (await app.db.sql<{ status: string }[]>`select status from simulator_reports where message_sid = ${sid} order by due_at, id`).map(
        (r) => r.status,
      )
    expect(await reports()).toEqual(['delivered', 'read'])
    // Both due: the hand-off timed them by the database's now(), so the clock is brought up to the
    // present (it never waits) and moved past the read's 2 ms.
    await clock.advanceTo(Date.now())
    await clock.advance(2)

    // Another instance claims the delivered report and has not applied it yet.
    const other = await app.db.sql.reserve()
    try {
      await other`begin`
      const claimed = await other`delete from simulator_reports where message_sid = ${sid} and status = 'delivered' returning id`
      expect(claimed.length).toBe(1)
      expect(await app.runWorker('simulator-reports')).toBe(0)
      expect((await app.api('GET', `/messages/${sid}`, key)).body.data.status).toBe('sent')
      // That instance stops before applying it: its claim goes back.
      await other`rollback`
    } finally {
      other.release()
    }

    expect(await app.runWorker('simulator-reports')).toBe(2)
    expect((await app.api('GET', `/messages/${sid}`, key)).body.data.status).toBe('read')
    const events = await app.db.sql<{ payload: string }[]>`select payload from webhook_events where api_key_id = ${keyId} order by id`
    expect(events.map((e) => [JSON.parse(e.payload).data.previous_status, JSON.parse(e.payload).data.status])).toEqual([
      ['sent', 'delivered'],
      ['delivered', 'read'],
    ])
  },
  30_000,
)
