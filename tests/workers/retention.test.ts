// The retention worker as the service runs it (started by startWorkers, woken, looping while it finds
// work): what is older than its setting goes, in bounded batches; what is newer, pending or money stays.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ConfigError, readConfig } from '../../src/config'
import { BATCH, deleteExpired } from '../../src/workers/retention'
import { IDEMPOTENCY_KEY_TTL_HOURS } from '../../src/http/idempotency'
import { testApp, type TestApp } from '../helpers/app'
import { until } from '../helpers/wait'

let t: TestApp
beforeAll(async () => {
  t = await testApp({ workers: true, env: { RETENTION_WEBHOOK_DAYS: '7' } })
}, 60_000)
afterAll(() => t.close(), 30_000)

const count = async (table: 'idempotency_keys' | 'webhook_events' | 'webhook_attempts' | 'parked_reports') =>
  (await t.db.sql<{ n: number }[]>`select count(*)::int as n from ${t.db.sql(table)}`)[0]!.n

test('the settings: RETENTION_WEBHOOK_DAYS defaults to 30 days, 0 keeps events forever, anything else is refused', () => {
  expect(readConfig({}).retentionWebhookDays).toBe(30)
  expect(readConfig({ RETENTION_WEBHOOK_DAYS: '0' }).retentionWebhookDays).toBe(0)
  expect(readConfig({ RETENTION_WEBHOOK_DAYS: '90' }).retentionWebhookDays).toBe(90)
  for (const bad of ['-1', '1.5', 'week', '99999']) {
    expect(() => readConfig({ RETENTION_WEBHOOK_DAYS: bad })).toThrow(ConfigError)
  }
  expect(IDEMPOTENCY_KEY_TTL_HOURS).toBe(24)
})

describe('idempotency keys', () => {
  test('expired keys are deleted in batches until none is left; keys within 24 h stay, running or done', async () => {
    const { accountId } = await t.account(0)
    const expired = BATCH * 2 + 500
    await t.db.sql`
      insert into idempotency_keys (account_id, key, endpoint, fingerprint, state, created_at)
      select ${accountId}, 'old-' || g, 'send', 'f', case when g % 2 = 0 then 'done' else 'running' end,
             now() - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS}) - make_interval(secs => g)
      from generate_series(1, ${expired}) g`
    await t.db.sql`
      insert into idempotency_keys (account_id, key, endpoint, fingerprint, state, created_at)
      values (${accountId}, 'fresh-running', 'send', 'f', 'running', now() - interval '23 hours'),
             (${accountId}, 'fresh-done', 'bulk', 'f', 'done', now())`

    // One step deletes one bounded batch...
    expect(await deleteExpired(t.deps)).toEqual({
      idempotencyKeys: BATCH,
      webhookEvents: 0,
      parkedReports: 0,
      recipientPaces: 0,
      deleted: BATCH,
    })
    // ...and the running loop, once woken, steps again until nothing is left.
    t.deps.wake('retention')
    await until(
      () => count('idempotency_keys'),
      (n) => n === 2,
      20_000,
      'the expired keys to be deleted',
    )
    const left = await t.db.sql<{ key: string }[]>`select key from idempotency_keys where account_id = ${accountId} order by key`
    expect(left.map((r) => r.key)).toEqual(['fresh-done', 'fresh-running'])
  })
})

describe('webhook events and attempts', () => {
  test('finished events older than the setting go with their attempts; newer and pending ones stay; money is untouched', async () => {
    // Money: three real sends by a key without a webhook, their messages made a year old.
    const payer = await t.account(1000, { price: 100 })
    for (let i = 0; i < 3; i++)
      expect((await t.api('POST', '/messages/send', payer.key, { to: '081234567890', body: 'x' })).status).toBe(200)
    await t.db.sql`update messages set created_at = now() - interval '1 year' where account_id = ${payer.accountId}`

    const { keyId } = await t.account(0)
    const [message] = await t.db.sql<{ id: number }[]>`
      insert into messages (account_id, api_key_id, message_sid, phone, body, status, cost, sent_at)
      select account_id, id, 'SM' || md5(random()::text), '+6281234567890', 'x', 'delivered', 0, now() from api_keys where id = ${keyId}
      returning id`
    // name → [status, delivered_at age, next_attempt_at age, leased]
    const cases: Record<string, [string, string | null, string, boolean]> = {
      'delivered 8 days ago': ['delivered', '8 days', '9 days', false],
      'delivered 6 days ago': ['delivered', '6 days', '40 days', false],
      'failed, last attempt 8 days ago': ['failed', null, '8 days', false],
      'failed, last attempt 6 days ago': ['failed', null, '6 days', false],
      // Retrying (due in the future) and in flight (a live lease), however old: never deleted.
      'pending, retry due tomorrow': ['pending', null, '-1 day', false],
      'pending, in flight': ['pending', null, '8 days', true],
    }
    const ids = new Map<string, number>()
    for (const [name, [status, deliveredAgo, dueAgo, leased]] of Object.entries(cases)) {
      const [event] = await t.db.sql<{ id: number }[]>`
        insert into webhook_events (webhook_id, api_key_id, message_id, payload, status, attempts, next_attempt_at,
                                    delivered_at, created_at, lease_token, lease_until)
        values ('msg_' || md5(random()::text), ${keyId}, ${message!.id}, '{}', ${status}, 2,
                now() - ${dueAgo}::interval, now() - ${deliveredAgo}::interval, now() - interval '40 days',
                ${leased ? crypto.randomUUID() : null}, ${leased ? t.db.sql`now() + interval '1 hour'` : null})
        returning id`
      await t.db.sql`
        insert into webhook_attempts (event_id, attempt, url, status_code, latency_ms, created_at)
        values (${event!.id}, 1, 'https://h.example/x', 500, 3, now() - interval '40 days'),
               (${event!.id}, 2, 'https://h.example/x', 200, 3, now() - ${dueAgo}::interval)`
      ids.set(name, event!.id)
    }

    const money = () => t.db.sql`
      select (select count(*)::int from messages) as messages, (select count(*)::int from ledger) as ledger,
             (select sum(amount)::bigint from ledger) as ledger_sum, (select sum(balance)::bigint from accounts) as balances`
    const moneyBefore = await money()

    t.deps.wake('retention')
    const gone = [ids.get('delivered 8 days ago')!, ids.get('failed, last attempt 8 days ago')!]
    await until(
      async () => (await t.db.sql<{ n: number }[]>`select count(*)::int as n from webhook_events where id in ${t.db.sql(gone)}`)[0]!.n,
      (n) => n === 0,
      20_000,
      'the old finished events to be deleted',
    )
    const left = await t.db.sql<{ id: number; attempts: number }[]>`
      select e.id, (select count(*)::int from webhook_attempts a where a.event_id = e.id) as attempts
      from webhook_events e where e.api_key_id = ${keyId} order by e.id`
    const names = new Map([...ids].map(([name, id]) => [id, name]))
    expect(left.map((r) => [names.get(r.id), r.attempts])).toEqual([
      ['delivered 6 days ago', 2],
      ['failed, last attempt 6 days ago', 2],
      ['pending, retry due tomorrow', 2],
      ['pending, in flight', 2],
    ])
    const orphans = await t.db.sql`select 1 from webhook_attempts where event_id in ${t.db.sql(gone)}`
    expect(orphans).toHaveLength(0)

    expect([...(await money())]).toEqual([...moneyBefore])
    expect(moneyBefore[0]!.ledger).toBeGreaterThanOrEqual(4) // a top-up and three charges at least
  })

  test('RETENTION_WEBHOOK_DAYS=0 keeps every event', async () => {
    const { keyId } = await t.account(0)
    await t.db.sql`
      insert into webhook_events (webhook_id, api_key_id, message_id, payload, status, delivered_at)
      select 'msg_' || md5(random()::text), ${keyId}, id, '{}', 'delivered', now() - interval '10 years'
      from messages limit 1`
    const before = await count('webhook_events')
    const kept = await deleteExpired({ sql: t.db.sql, config: { ...t.config, retentionWebhookDays: 0 } })
    expect(kept.webhookEvents).toBe(0)
    expect(await count('webhook_events')).toBe(before)
    // With the setting (7 days here) the same event goes.
    expect((await deleteExpired(t.deps)).webhookEvents).toBe(1)
    expect(await count('webhook_events')).toBe(before - 1)
  })
})

describe("recipients' pace rows", () => {
  test('a row whose gap passed over a minute ago goes; a recipient still within its gap, or just out of it, keeps its row', async () => {
    const past = BATCH + 200
    await t.db.sql`
      insert into recipient_paces (sender, phone, next_at)
      select 'retention-test', '+62811' || lpad(g::text, 8, '0'), now() - interval '2 minutes' - make_interval(secs => g)
      from generate_series(1, ${past}) g`
    await t.db.sql`
      insert into recipient_paces (sender, phone, next_at)
      values ('retention-test', '+6289900000001', now() + interval '5 seconds'), ('retention-test', '+6289900000002', now() - interval '10 seconds')`
    const first = await deleteExpired(t.deps)
    expect(first.recipientPaces).toBe(BATCH)
    t.deps.wake('retention')
    const left = async () =>
      (await t.db.sql<{ phone: string }[]>`select phone from recipient_paces where sender = 'retention-test' order by phone`).map(
        (r) => r.phone,
      )
    await until(left, (phones) => phones.length === 2, 20_000, 'the past rows to be deleted')
    expect(await left()).toEqual(['+6289900000001', '+6289900000002'])
  })
})
