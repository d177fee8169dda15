// A campaign's hand-off that fails on the database (its lease cannot be checked: the database is away,
// or refuses the write) leaves its message charged, under its lease, to recovery. The failure is the
// step's own: it never escapes as an unhandled rejection, which would end the whole process (Bun, as
// Node, exits on one; the fault test once saw an instance end so in a database outage). Once the
// lease has run out, recovery hands each message over once, and the campaign ends sent.
//
// The first batch is a full one (500) and a second follows, so the failures come while the step still
// waits to charge the next batch: the moment a failure nobody is listening for yet ends the process.

import { afterAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { inFlight } from '../helpers/in-flight'
import { TestClock } from '../../src/lib/clock'
import type { Provider } from '../../src/providers/provider'

let t: TestApp | undefined
afterAll(() => t?.close())

const count = 502 // a batch of 500, then one of 2

test("a campaign's hand-offs failing on the database are left to recovery: each message sent once, the campaign sent", async () => {
  const accepted = new Map<string, number>()
  const provider: Provider = {
    name: 'twilio',
    async send(message) {
      accepted.set(message.to, (accepted.get(message.to) ?? 0) + 1)
      return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
    },
  }
  const clock = new TestClock()
  const flight = inFlight()
  flight.track(provider)
  t = await testApp({ provider, clock, wrapSql: flight.sql })
  const a = await t.account(10_000, { price: 1 })
  const phones = Array.from({ length: count }, (_, i) => `+62813${String(i).padStart(8, '0')}`)
  await t.db.sql`
    insert into contacts (account_id, name, phone, tags)
    select ${a.accountId}, 'Contact ' || v.phone, v.phone, array['vip'] from unnest(${phones}::text[]) as v(phone)`
  const template = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'promo', body: 'Hi {{name}}!' })
  const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
  const draft = await t.api('POST', '/campaigns', a.key, {
    name: 'promo',
    template_id: template.body.data.id,
    segment_id: segment.body.data.id,
  })
  const id = draft.body.data.campaign.id as number

  // The database refuses every check of a queued message's lease (the claim before its attempt), as a
  // full disk refuses a write: each hand-off fails before reaching the provider.
  await t.db.sql.unsafe(`
    create function refuse_lease_check() returns trigger language plpgsql as $$
    begin
      if old.status = 'queued' and new.status = 'queued' and old.handoff_token = new.handoff_token then
        raise exception 'could not extend file' using errcode = '53100';
      end if;
      return new;
    end $$;
    create trigger refuse_lease_check before update on messages for each row execute function refuse_lease_check();`)
  expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
  // Its holder stops renewing leases (a renewal is such a write too), as one that died would.
  t.deps.handoff.stop()
  await clock.run(t.runWorker('campaign-runner'), undefined, flight.idle)
  expect(accepted.size).toBe(0)
  const [held] = await t.db.sql<{ queued: number }[]>`
    select count(*)::int as queued from messages where campaign_id = ${id} and status = 'queued' and handoff_until is not null`
  expect(held!.queued).toBe(count)

  // The database takes writes again; the leases run out, recovery hands every message over once.
  await t.db.sql.unsafe('drop trigger refuse_lease_check on messages')
  await clock.advance(2 * t.config.handoffLeaseSeconds * 1000 + 1_000)
  // (A step of recovery takes up to 500 messages: two steps.)
  while ((await clock.run(t.runWorker('handoff-recovery'), undefined, flight.idle)) > 0);
  await clock.run(t.runWorker('campaign-runner'), undefined, flight.idle)
  expect([...accepted.values()].filter((n) => n !== 1)).toEqual([])
  expect(accepted.size).toBe(count)
  const done = (await t.api('GET', `/campaigns/${id}`, a.key)).body.data
  expect(done.campaign.status).toBe('sent')
  expect(done.stats).toMatchObject({ total: count, sent: count, failed: 0 })
  expect(await money(t, a.accountId)).toEqual({ balance: 10_000 - count, ledgerSum: 10_000 - count })
}, 120_000)
