// Recovery never takes over a message its own process is handing over: that holder is alive, whatever
// its lease says. A lease can run out under a live holder when the process itself stalls (its heartbeat
// and its recovery alike: a long statement of the embedded database, which runs inside the process),
// and recovery must not then send the message a second time.
//
// Played here on the test clock: the provider holds the first attempt open, the database refuses the
// lease's renewals (as a stalled heartbeat leaves it unrenewed), and time passes the lease and a
// further lease's length, when recovery takes over a dead holder's message.

import { afterAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { TestClock } from '../../src/lib/clock'
import { inFlight } from '../helpers/in-flight'
import type { Provider } from '../../src/providers/provider'

let t: TestApp | undefined
afterAll(() => t?.close())

test('recovery leaves alone a message its own process is handing over, though its lease ran out: it is sent once', async () => {
  const attempts: number[] = []
  const reached = Promise.withResolvers<void>()
  const release = Promise.withResolvers<void>()
  const provider: Provider = {
    name: 'twilio',
    async send(message) {
      attempts.push(message.id)
      if (attempts.length === 1) {
        reached.resolve()
        await release.promise
      }
      return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
    },
  }
  const clock = new TestClock()
  // Time stands still while a statement runs (recovery's probe would otherwise see time pass and hold back).
  const flight = inFlight()
  t = await testApp({ provider, clock, wrapSql: flight.sql, env: { PROVIDER_TIMEOUT_MS: '60000' } })
  const { accountId, key } = await t.account(100)
  await t.db.sql.unsafe(`
    create function refuse_renewal() returns trigger language plpgsql as $$
    begin
      -- The first holder's renewals only: a holder that took the message over renews (and claims) as usual.
      if old.status = 'queued' and new.status = 'queued' and old.handoff_token = new.handoff_token and new.handoff_recoveries = 0 then
        raise exception 'could not extend file' using errcode = '53100';
      end if;
      return new;
    end $$;
    create trigger refuse_renewal before update on messages for each row execute function refuse_renewal();`)

  const sending = t.api('POST', '/messages/send', key, { to: '081234567890', body: 'held open' })
  await reached.promise
  // The lease and a further lease's length pass, no renewal taken: a dead holder's message would be taken over now.
  await clock.advance(2 * t.config.handoffLeaseSeconds * 1000 + 1_000)
  // The renewals the heartbeat tried on the way end first: one still running holds the row's lock, and
  // recovery skips locked rows, so it would find nothing whatever its guard says.
  await flight.idle()
  const [row] = await t.db.sql<{ expired: boolean }[]>`
    select handoff_until < ${clock.now()}::timestamptz - make_interval(secs => ${t.config.handoffLeaseSeconds}) as expired
    from messages where body = 'held open'`
  expect(row!.expired).toBe(true)
  expect(await clock.run(t.runWorker('handoff-recovery'), undefined, flight.idle)).toBe(0)
  expect(attempts).toHaveLength(1)

  // The provider answers: the message is sent once, charged once.
  release.resolve()
  const answer = await sending
  expect(answer.status).toBe(200)
  expect(attempts).toHaveLength(1)
  await t.db.sql.unsafe('drop trigger refuse_renewal on messages')
  await clock.advance(2 * t.config.handoffLeaseSeconds * 1000 + 1_000)
  expect(await clock.run(t.runWorker('handoff-recovery'), undefined, flight.idle)).toBe(0)
  expect(attempts).toHaveLength(1)
  expect(await money(t, accountId)).toEqual({ balance: 99, ledgerSum: 99 })
}, 60_000)
