// Only the holder of a message's hand-off lease hands it over. A bulk that outlives its lease (here:
// the lease is moved into the past mid-bulk, as if the provider had been slow for minutes) loses the
// messages recovery takes over; each message still reaches the provider exactly once, is charged once,
// and nothing the API refunded is ever delivered for free.

import { afterEach, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { until } from '../helpers/wait'
import type { HandoffResult, OutgoingMessage, Provider } from '../../src/providers/provider'

let t: TestApp | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

/** A slow provider that counts every hand-off per message and can refuse each first attempt. */
function slowProvider(options: { answerMs: number; refuseFirst?: boolean }) {
  const attempts = new Map<number, number>()
  const accepted = new Map<number, number>()
  let inFlight = 0
  const provider: Provider = {
    name: 'twilio',
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      const n = (attempts.get(message.id) ?? 0) + 1
      attempts.set(message.id, n)
      inFlight++
      await Bun.sleep(options.answerMs)
      inFlight--
      if (options.refuseFirst && n === 1) return { ok: false, errorCode: 30001, errorMessage: 'queue overflow' }
      accepted.set(message.id, (accepted.get(message.id) ?? 0) + 1)
      return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
    },
  }
  return { provider, attempts, accepted, inFlight: () => inFlight }
}

const bulkOf = (n: number) => ({
  messages: Array.from({ length: n }, (_, i) => ({ to: `0812300${String(i).padStart(5, '0')}`, body: `lease ${i}` })),
})

async function expireLeasesAndRecover(app: TestApp) {
  await app.db.sql`update messages set handoff_until = now() - interval '1 second' where status = 'queued'`
  app.deps.wake('handoff-recovery')
}

test('a bulk that outlives its lease: every message handed over once, charged once', async () => {
  const fake = slowProvider({ answerMs: 150 })
  t = await testApp({ provider: fake.provider, workers: true, env: { HANDOFF_CONCURRENCY: '4', PROVIDER_TIMEOUT_MS: '2000' } })
  const { accountId, key } = await t.account(1000)

  const answer = t.api('POST', '/messages/bulk', key, bulkOf(40))
  await until(
    () => fake.attempts.size,
    (n) => n >= 8,
    10_000,
    'the bulk under way',
  )
  await expireLeasesAndRecover(t)
  const { status, body } = await answer
  expect(status).toBe(200)
  expect(body.data.sent).toBe(40)

  const [counts] = await t.db.sql<{ queued: number; sent: number; charges: number; refunds: number; recovered: number }[]>`
    select count(*) filter (where m.status = 'queued')::int as queued,
           count(*) filter (where m.status = 'sent')::int as sent,
           (select count(*)::int from ledger where account_id = ${accountId} and kind = 'charge') as charges,
           (select count(*)::int from ledger where account_id = ${accountId} and kind = 'refund') as refunds,
           count(*) filter (where m.handoff_recoveries > 0)::int as recovered
    from messages m where m.account_id = ${accountId}`
  expect(counts).toEqual({ queued: 0, sent: 40, charges: 40, refunds: 0, recovered: counts!.recovered })
  expect(counts!.recovered).toBeGreaterThan(0) // recovery did take some over
  expect([...fake.attempts.values()].every((n) => n === 1)).toBe(true)
  expect(fake.attempts.size).toBe(40)
  // The answer reports the SIDs the database recorded, whoever handed the message over.
  const sids = await t.db.sql<{ message_sid: string }[]>`select message_sid from messages where account_id = ${accountId}`
  expect(new Set(body.data.results.map((r: any) => r.message_id))).toEqual(new Set(sids.map((r) => r.message_sid)))
  expect(await money(t, accountId)).toEqual({ balance: 960, ledgerSum: 960 })
}, 60_000)

test('a provider that refuses first attempts and accepts repeats: nothing refunded is delivered', async () => {
  const fake = slowProvider({ answerMs: 100, refuseFirst: true })
  t = await testApp({ provider: fake.provider, workers: true, env: { HANDOFF_CONCURRENCY: '4', PROVIDER_TIMEOUT_MS: '2000' } })
  const { accountId, key } = await t.account(1000)

  const answer = t.api('POST', '/messages/bulk', key, bulkOf(30))
  await until(
    () => fake.attempts.size,
    (n) => n >= 8,
    10_000,
    'the bulk under way',
  )
  await expireLeasesAndRecover(t)
  const { status, body } = await answer
  expect(status).toBe(200)
  expect(body.data.failed).toBe(30)
  // Recovery must not find anything to hand over: every refusal was recorded and refunded.
  await Bun.sleep(300)
  expect(fake.accepted.size).toBe(0)
  expect([...fake.attempts.values()].every((n) => n === 1)).toBe(true)
  const [row] = await t.db.sql<{ refunds: number }[]>`
    select count(*)::int as refunds from ledger where account_id = ${accountId} and kind = 'refund'`
  expect(row!.refunds).toBe(30)
  expect(await money(t, accountId)).toEqual({ balance: 1000, ledgerSum: 1000 })
}, 60_000)

test('a group-commit write that fails (a deadlock) charges each request once', async () => {
  t = await testApp()
  const { accountId, key } = await t.account(100)
  // One injected failure: the first write that records the message "deadlock me" is aborted with a
  // deadlock error, as PostgreSQL would abort it. (A sequence is not transactional: the mark stays.)
  await t.db.sql.unsafe(`
    create sequence fault_seq;
    create function inject_deadlock() returns trigger language plpgsql as $$
    begin
      if new.body = 'deadlock me' and nextval('fault_seq') = 1 then
        raise exception 'injected deadlock' using errcode = '40P01';
      end if;
      return new;
    end $$;
    create trigger inject_deadlock before insert on messages for each row execute function inject_deadlock();`)

  const bodies = ['one', 'two', 'deadlock me', 'four', 'five']
  const answers = await Promise.all(bodies.map((body) => t!.api('POST', '/messages/send', key, { to: '081234567890', body })))
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200])
  const [row] = await t.db.sql<{ charges: number; messages: number; queued: number }[]>`
    select (select count(*)::int from ledger where account_id = ${accountId} and kind = 'charge') as charges,
           (select count(*)::int from messages where account_id = ${accountId}) as messages,
           (select count(*)::int from messages where account_id = ${accountId} and status = 'queued') as queued`
  expect(row).toEqual({ charges: 5, messages: 5, queued: 0 })
  expect(await money(t, accountId)).toEqual({ balance: 95, ledgerSum: 95 })
  const [fired] = await t.db.sql<{ n: number }[]>`select last_value::int as n from fault_seq`
  expect(fired!.n).toBeGreaterThanOrEqual(1) // the fault did happen
})
