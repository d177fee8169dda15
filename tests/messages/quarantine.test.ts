// A message whose hand-off outcome the database keeps refusing to record: the write is retried, then
// recovery hands the message over again each time its lease expires, MAX_RECOVERIES times, and then
// quarantines it instead of sending it forever. An operator sees it and settles it.

import { afterAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { MAX_RECOVERIES } from '../../src/workers/handoff-recovery'
import type { Provider } from '../../src/providers/provider'
import { TestClock } from '../../src/lib/clock'
import { inFlight } from '../helpers/in-flight'

let t: TestApp
afterAll(() => t?.close())

test('an outcome that cannot be recorded: retried, recovered a few times, then quarantined', async () => {
  const attempts: number[] = []
  const provider: Provider = {
    name: 'twilio',
    async send(message) {
      attempts.push(message.id)
      return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
    },
  }
  const clock = new TestClock()
  const flight = inFlight()
  t = await testApp({ provider, clock, wrapSql: flight.sql, env: { PROVIDER_TIMEOUT_MS: '500' } })
  const { accountId, key } = await t.account(100)
  await t.db.sql.unsafe(`
    create function refuse_poison() returns trigger language plpgsql as $$
    begin
      if new.body = 'poison' and new.status = 'sent' then raise exception 'could not extend file' using errcode = '53100'; end if;
      return new;
    end $$;
    create trigger refuse_poison before update on messages for each row execute function refuse_poison();`)

  // The provider accepted it: the client is told so (after 12 s), though the outcome could not be recorded.
  const answer = await clock.run(t.api('POST', '/messages/send', key, { to: '081234567890', body: 'poison' }))
  expect(answer.status).toBe(200)
  expect(attempts).toHaveLength(1)

  // Its holders stop renewing their leases (as holders that died do), and time passes: each expired
  // lease is taken over by recovery (a step of it once the lease has been expired for a further lease's
  // length), until the message is quarantined.
  t.deps.handoff.stop()
  // The send's own record is still retrying (it sleeps at most a second between tries): its next try,
  // now that its holder stopped, gives up and leaves the message to recovery. That try ends before time
  // moves on, as it would on any machine: a failure recorded later would hold recovery back (an outage).
  await clock.advance(1_000)
  await flight.idle()
  const app = t
  const expiredLease = () => clock.advance(2 * app.config.handoffLeaseSeconds * 1000 + 1_000)
  const quarantined = async () =>
    (await app.db.sql<{ quarantined: boolean }[]>`select quarantined_at is not null as quarantined from messages where body = 'poison'`)[0]!
      .quarantined
  for (let step = 0; step <= MAX_RECOVERIES && !(await quarantined()); step++) {
    await expiredLease()
    await clock.run(t.runWorker('handoff-recovery'))
  }
  expect(await quarantined()).toBe(true)
  expect(attempts).toHaveLength(1 + MAX_RECOVERIES)
  await expiredLease()
  await clock.run(t.runWorker('handoff-recovery'))
  expect(attempts).toHaveLength(1 + MAX_RECOVERIES) // and never again

  const listed = await t.admin('GET', '/quarantine')
  expect(listed.status).toBe(200)
  expect(listed.body.data.items).toHaveLength(1)
  expect(listed.body.data.items[0]).toMatchObject({
    account_id: accountId,
    phone: '+6281234567890',
    cost: 1,
    handoff_recoveries: MAX_RECOVERIES,
  })
  const id = listed.body.data.items[0].id

  expect((await t.request('GET', '/admin/v1/quarantine', { key: 'wrong' })).status).toBe(401)
  expect((await t.admin('POST', `/quarantine/${id}/settle`, { outcome: 'maybe' })).status).toBe(422)
  expect((await t.admin('POST', `/quarantine/${id}/settle`, { outcome: 'refund' })).status).toBe(200)
  expect((await t.admin('POST', `/quarantine/${id}/settle`, { outcome: 'refund' })).status).toBe(404) // settled once
  expect((await t.admin('GET', '/quarantine')).body.data.total).toBe(0)
  expect(await money(t, accountId)).toEqual({ balance: 100, ledgerSum: 100 })
}, 120_000)
