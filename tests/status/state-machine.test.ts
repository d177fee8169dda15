// The forward-only state machine on real message rows, reported to as a provider does (Twilio's signed
// status callback through POST /provider/twilio/status): every (current, reported) pair, timestamps,
// the finality of failed, and concurrent reports for one message. On a test clock: the changes take
// its time, and time passes between two reports when the test moves it.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/app'
import { applyStatuses } from '../../src/modules/status/machine'
import { testApp, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'
import { postStatusCallback, reportStatus, type ReportTarget } from '../helpers/reports'
import { type ReportedStatus } from '../../src/providers/provider'
import { TestClock } from '../../src/lib/clock'

type State = 'sent' | 'delivered' | 'read' | 'failed'
const STATES: State[] = ['sent', 'delivered', 'read', 'failed']

let t: TestApp
/** Apps over the same database, each with its own receiver (as instances of the service have). */
let instances: ReportTarget[]
let accountId: number
let keyId: number
const clock = new TestClock()
beforeAll(async () => {
  t = await testApp({ clock })
  instances = [t, ...Array.from({ length: 3 }, () => ({ app: createApp(t.deps), config: t.config }))]
  const created = await t.account(0)
  accountId = created.accountId
  keyId = created.keyId
  await t.db
    .sql`insert into webhook_endpoints (api_key_id, url, signing_secret) values (${keyId}, 'https://hooks.example.com/x', 'whsec_dGVzdA==')`
}, 60_000)
afterAll(() => t.close())

const randomSid = () => `SM${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('hex')}`
/** A report of `status` for `sid` through the callback route (of `via`); its answer, `{changed}`. */
const report = (
  sid: string,
  status: ReportedStatus,
  errorCode: number | null = null,
  errorMessage: string | null = null,
  via: ReportTarget = t,
) => reportStatus(via, sid, status, { errorCode, errorMessage })

const eventCount = async (sid: string) =>
  (
    await t.db.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_events e join messages m on m.id = e.message_id where m.message_sid = ${sid}`
  )[0]!.n

/** One report at a time: whether it changed the message, and how many events it wrote for it. */
async function apply(sid: string, status: ReportedStatus, errorCode: number | null = null, errorMessage: string | null = null) {
  const before = await eventCount(sid)
  const { changed } = await report(sid, status, errorCode, errorMessage)
  return { changed, events: (await eventCount(sid)) - before }
}

type Row = {
  id: number
  status: string
  sent_at: Date | null
  delivered_at: Date | null
  read_at: Date | null
  failed_at: Date | null
  error_code: number | null
  error_message: string | null
}

const ago = (ms: number) => new Date(clock.now().getTime() - ms)

/** A message row already in `state`, with the timestamps and error fields that state implies. */
async function message(state: State, options: { webhook?: boolean } = {}): Promise<{ sid: string; id: number }> {
  const sid = randomSid()
  let key = keyId
  if (options.webhook === false) key = (await t.account(0)).keyId
  const [row] = await t.db.sql<{ id: number }[]>`
    insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at, delivered_at, read_at, failed_at, error_code, error_message)
    values (
      ${accountId}, ${key}, ${sid}, '+6281234567890', 'halo', ${state}, 0,
      ${ago(180_000)},
      ${state === 'delivered' || state === 'read' ? ago(120_000) : null},
      ${state === 'read' ? ago(60_000) : null},
      ${state === 'failed' ? ago(60_000) : null},
      ${state === 'failed' ? 63016 : null},
      ${state === 'failed' ? 'original failure' : null}
    )
    returning id`
  return { sid, id: Number(row!.id) }
}

async function row(sid: string): Promise<Row> {
  const [r] = await t.db.sql<Row[]>`
    select id, status, sent_at, delivered_at, read_at, failed_at, error_code, error_message from messages where message_sid = ${sid}`
  return r!
}

async function events(id: number) {
  const rows = await t.db.sql<
    { payload: string; api_key_id: number }[]
  >`select payload, api_key_id from webhook_events where message_id = ${id} order by id`
  return rows.map((r) => ({ keyId: Number(r.api_key_id), ...JSON.parse(r.payload) }))
}

/** The expected outcome of a report of `reported` on a message in `current`. */
function expected(current: State, reported: State): State | null {
  const forward: Record<State, State[]> = { sent: ['delivered', 'read', 'failed'], delivered: ['read', 'failed'], read: [], failed: [] }
  return forward[current].includes(reported) ? reported : null
}

describe('every (current, reported) pair', () => {
  for (const current of STATES) {
    for (const reported of STATES) {
      const next = expected(current, reported)
      test(`${current} + ${reported} → ${next ? `${next}, one event` : 'no change, no event'}`, async () => {
        const m = await message(current)
        const before = await row(m.sid)
        const outcome = await apply(m.sid, reported, reported === 'failed' ? 30008 : null, reported === 'failed' ? 'undelivered' : null)
        const after = await row(m.sid)
        const all = await events(m.id)
        if (!next) {
          expect(outcome).toEqual({ changed: false, events: 0 })
          expect(after).toEqual(before)
          expect(all).toEqual([])
          return
        }
        expect(outcome).toEqual({ changed: true, events: 1 })
        expect(after.status).toBe(next)
        expect(after.sent_at).toEqual(before.sent_at)
        expect(all).toHaveLength(1)
        expect(all[0]).toMatchObject({
          keyId,
          event: 'message.status',
          data: {
            message_sid: m.sid,
            to: '+6281234567890',
            status: next,
            previous_status: current,
            error_code: next === 'failed' ? 30008 : null,
            error_message: next === 'failed' ? 'undelivered' : null,
          },
        })
        expect(all[0].timestamp).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
        if (next === 'failed') {
          expect(after).toMatchObject({ error_code: 30008, error_message: 'undelivered', read_at: null })
          expect(after.failed_at).toBeInstanceOf(Date)
          // Failing does not rewrite history: delivered_at stays what it was (null from sent).
          expect(after.delivered_at).toEqual(before.delivered_at)
        } else {
          expect(after).toMatchObject({ error_code: null, error_message: null, failed_at: null })
          expect(after.delivered_at).toBeInstanceOf(Date)
          if (current === 'delivered') expect(after.delivered_at).toEqual(before.delivered_at)
          if (next === 'read') expect(after.read_at).toBeInstanceOf(Date)
          else expect(after.read_at).toBeNull()
        }
      })
    }
  }
})

describe('timestamps', () => {
  test('sent → read sets delivered_at and read_at (the skipped state is filled in), one event', async () => {
    const m = await message('sent')
    expect(await apply(m.sid, 'read')).toEqual({ changed: true, events: 1 })
    const r = await row(m.sid)
    expect(r.status).toBe('read')
    expect(r.delivered_at).toBeInstanceOf(Date)
    expect(r.read_at).toBeInstanceOf(Date)
    expect(r.delivered_at!.getTime()).toBeLessThanOrEqual(r.read_at!.getTime())
    expect((await events(m.id)).map((e) => [e.data.previous_status, e.data.status])).toEqual([['sent', 'read']])
  })

  test('delivered_at and read_at are set once; repeats change neither', async () => {
    const m = await message('sent')
    await apply(m.sid, 'delivered')
    const delivered = await row(m.sid)
    expect(delivered.delivered_at).toBeInstanceOf(Date)
    expect(delivered.read_at).toBeNull()
    await clock.advance(15)
    expect(await apply(m.sid, 'delivered')).toEqual({ changed: false, events: 0 })
    expect(await row(m.sid)).toEqual(delivered)

    await apply(m.sid, 'read')
    const read = await row(m.sid)
    expect(read.delivered_at).toEqual(delivered.delivered_at)
    expect(read.read_at!.getTime()).toBeGreaterThan(delivered.delivered_at!.getTime())
    await clock.advance(15)
    for (const status of ['read', 'delivered', 'sent'] as const) {
      expect(await apply(m.sid, status)).toEqual({ changed: false, events: 0 })
    }
    expect(await row(m.sid)).toEqual(read)
    expect(await events(m.id)).toHaveLength(2)
  })

  test('a fresh message has only sent_at; error fields stay null on success paths', async () => {
    const m = await message('sent')
    expect(await row(m.sid)).toMatchObject({ delivered_at: null, read_at: null, failed_at: null, error_code: null, error_message: null })
    await apply(m.sid, 'delivered', 123, 'ignored on success')
    expect(await row(m.sid)).toMatchObject({ status: 'delivered', error_code: null, error_message: null })
  })
})

describe('failed is final', () => {
  test('no report moves a failed message, and its error fields and failed_at are kept', async () => {
    const m = await message('sent')
    expect(await apply(m.sid, 'failed', 30008, 'undelivered')).toEqual({ changed: true, events: 1 })
    const failed = await row(m.sid)
    await clock.advance(15)
    for (const status of ['sent', 'delivered', 'read', 'failed'] as const) {
      expect(await apply(m.sid, status, 30003, 'another failure')).toEqual({ changed: false, events: 0 })
    }
    expect(await row(m.sid)).toEqual(failed)
    expect(failed).toMatchObject({ status: 'failed', error_code: 30008, error_message: 'undelivered' })
    expect(await events(m.id)).toHaveLength(1)
  })

  // The statement itself (applyStatuses, as the receiver runs it): no provider reports a failure without
  // a text (Twilio's and Meta's default to the status), so only here can the report carry none.
  test('a failure without a code or text stores nulls', async () => {
    const m = await message('delivered')
    const outcome = await applyStatuses(
      t.db.sql,
      t.config.timezone,
      [{ sid: m.sid, status: 'failed', errorCode: null, errorMessage: null }],
      {
        clock,
      },
    )
    expect({ changed: outcome.changed > 0, events: outcome.events }).toEqual({ changed: true, events: 1 })
    expect(await row(m.sid)).toMatchObject({ status: 'failed', error_code: null, error_message: null })
  })
})

describe('outside the happy path', () => {
  test('an unknown SID changes nothing and emits nothing', async () => {
    const [{ count: before }] = await t.db.sql<[{ count: number }]>`select count(*)::int as count from webhook_events`
    expect(await apply(randomSid(), 'delivered')).toEqual({ changed: false, events: 0 })
    const [{ count: after }] = await t.db.sql<[{ count: number }]>`select count(*)::int as count from webhook_events`
    expect(after).toBe(before)
  })

  test('a key without a webhook: the change is applied, no event written', async () => {
    const m = await message('sent', { webhook: false })
    expect(await apply(m.sid, 'delivered')).toEqual({ changed: true, events: 0 })
    expect((await row(m.sid)).status).toBe('delivered')
    expect(await events(m.id)).toEqual([])
  })

  test('a change whose transaction rolls back leaves neither the change nor its event', async () => {
    const m = await message('sent')
    // A check on this message's event, deferred to the commit of the callback's transaction: it fails
    // the commit only if it finds the message delivered there too. So the 500 proves that the change and
    // its event were written in that one transaction, and the rows read afterwards that neither stayed.
    await t.db.sql.unsafe(`
      create function fail_commit() returns trigger language plpgsql as $$
      begin
        if (select status from messages where id = new.message_id) = 'delivered' then
          raise exception 'the change and its event, rolled back at commit';
        end if;
        return null;
      end $$`)
    await t.db.sql.unsafe(`
      create constraint trigger fail_commit after insert on webhook_events deferrable initially deferred
      for each row when (new.message_id = ${Number(m.id)}) execute function fail_commit()`)
    try {
      const res = await postStatusCallback(t, m.sid, 'delivered')
      expect(res.status).toBe(500)
      expect(((await res.json()) as { code: string }).code).toBe('INTERNAL_ERROR')
    } finally {
      await t.db.sql`drop trigger fail_commit on webhook_events`
      await t.db.sql`drop function fail_commit()`
    }
    expect(await row(m.sid)).toMatchObject({ status: 'sent', delivered_at: null })
    expect(await events(m.id)).toEqual([])
  })
})

// Spread over the instances, whose receivers commit at the same time (PostgreSQL): one receiver alone
// would put them in one transaction after another.
const via = (i: number) => instances[i % instances.length]!

describe(`concurrent reports for one message (${usingPostgres() ? 'PostgreSQL' : 'PGlite, serialised'})`, () => {
  test('20 concurrent delivered reports: exactly one change and one event', async () => {
    const m = await message('sent')
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => report(m.sid, 'delivered', null, null, via(i))))
    expect(outcomes.filter((o) => o.changed)).toHaveLength(1)
    expect((await row(m.sid)).status).toBe('delivered')
    expect((await events(m.id)).map((e) => [e.data.previous_status, e.data.status])).toEqual([['sent', 'delivered']])
  })

  test('20 concurrent mixed reports (delivered, read, failed): one forward path, one event per change', async () => {
    // Repeated a few times so that different interleavings get a chance to happen.
    for (let round = 0; round < 5; round++) {
      const m = await message('sent')
      const reports: ReportedStatus[] = Array.from({ length: 20 }, (_, i) => (['delivered', 'read', 'failed', 'sent'] as const)[i % 4]!)
      const outcomes = await Promise.all(
        reports.map((s, i) => report(m.sid, s, s === 'failed' ? 30008 : null, s === 'failed' ? 'undelivered' : null, via(i))),
      )
      const changes = outcomes.filter((o) => o.changed).length
      const path = (await events(m.id)).map((e) => [e.data.previous_status, e.data.status] as [State, State])
      expect(path).toHaveLength(changes)
      expect(changes).toBeGreaterThanOrEqual(1)
      expect(changes).toBeLessThanOrEqual(2)
      // The events chain from sent, each one a legal forward move, and end at the row's state.
      let state: State = 'sent'
      for (const [previous, next] of path) {
        expect(previous).toBe(state)
        expect(expected(previous, next)).toBe(next)
        state = next
      }
      const final = await row(m.sid)
      expect(final.status).toBe(state)
      expect(['read', 'failed']).toContain(final.status)
    }
  })

  test('concurrent reports on many messages at once: one change each', async () => {
    const messages = await Promise.all(Array.from({ length: 10 }, () => message('sent')))
    const outcomes = await Promise.all(
      messages.flatMap((m, j) => Array.from({ length: 5 }, (_, i) => report(m.sid, 'read', null, null, via(j * 5 + i)))),
    )
    expect(outcomes.filter((o) => o.changed)).toHaveLength(10)
    for (const m of messages) {
      expect((await row(m.sid)).status).toBe('read')
      expect(await events(m.id)).toHaveLength(1)
    }
  })
})
