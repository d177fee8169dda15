// The retention worker's steps as its loop runs them (again at once while one finds work), on a test
// clock: what is older than its setting goes, in bounded batches; what is newer, pending or money stays.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ConfigError, readConfig } from '../../src/config'
import { BATCH, deleteExpired } from '../../src/workers/retention'
import { IDEMPOTENCY_KEY_TTL_HOURS } from '../../src/http/idempotency'
import { TestClock } from '../../src/lib/clock'
import { nowOf } from '../../src/db/now'
import { testApp, type TestApp } from '../helpers/app'
import { drain } from '../helpers/worker-steps'

const clock = new TestClock()
let t: TestApp
beforeAll(async () => {
  t = await testApp({ clock, env: { RETENTION_WEBHOOK_DAYS: '7' } })
  // The loop's first step at the service's start: whatever month of webhook events the date makes due goes now.
  await drain(t, clock, 'retention')
}, 60_000)
afterAll(() => t.close(), 30_000)

const count = async (table: 'idempotency_keys' | 'parked_reports') =>
  (await t.db.sql<{ n: number }[]>`select count(*)::int as n from ${t.db.sql(table)}`)[0]!.n

test('the settings: RETENTION_WEBHOOK_DAYS defaults to 30 days, RETENTION_HISTORY_MONTHS to 0 (keep), 0 keeps forever, anything else is refused', () => {
  expect(readConfig({}).retentionHistoryMonths).toBe(0)
  expect(readConfig({ RETENTION_HISTORY_MONTHS: '24' }).retentionHistoryMonths).toBe(24)
  expect(() => readConfig({ RETENTION_HISTORY_MONTHS: '-1' })).toThrow(ConfigError)
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
    const now = nowOf(t.db.sql, clock)
    await t.db.sql`
      insert into idempotency_keys (account_id, key, endpoint, fingerprint, state, created_at)
      select ${accountId}, 'old-' || g, 'send', 'f', case when g % 2 = 0 then 'done' else 'running' end,
             ${now} - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS}) - make_interval(secs => g)
      from generate_series(1, ${expired}) g`
    await t.db.sql`
      insert into idempotency_keys (account_id, key, endpoint, fingerprint, state, created_at)
      values (${accountId}, 'fresh-running', 'send', 'f', 'running', ${now} - interval '23 hours'),
             (${accountId}, 'fresh-done', 'bulk', 'f', 'done', ${now})`

    // One step deletes one bounded batch...
    expect(await deleteExpired(t.deps)).toEqual({
      idempotencyKeys: BATCH,
      parkedReports: 0,
      recipientPaces: 0,
      media: 0,
      webhookMonths: 0,
      historyMonths: 0,
      deleted: BATCH,
    })
    // ...and the loop steps again until nothing is left.
    await drain(t, clock, 'retention')
    expect(await count('idempotency_keys')).toBe(2)
    const left = await t.db.sql<{ key: string }[]>`select key from idempotency_keys where account_id = ${accountId} order by key`
    expect(left.map((r) => r.key)).toEqual(['fresh-done', 'fresh-running'])
  })
})

// Webhook events and attempts go by whole months, as do (when asked) messages, ledger and inbound
// messages: tests/db/partitions.test.ts.

describe("recipients' pace rows", () => {
  test('a row whose gap passed over a minute ago goes; a recipient still within its gap, or just out of it, keeps its row', async () => {
    const past = BATCH + 200
    // One batch by hand first, then the loop's steps.
    const now = nowOf(t.db.sql, clock)
    await t.db.sql`
      insert into recipient_paces (sender, phone, next_at)
      select 'retention-test', '+62811' || lpad(g::text, 8, '0'), ${now} - interval '2 minutes' - make_interval(secs => g)
      from generate_series(1, ${past}) g`
    await t.db.sql`
      insert into recipient_paces (sender, phone, next_at)
      values ('retention-test', '+6289900000001', ${now} + interval '5 seconds'), ('retention-test', '+6289900000002', ${now} - interval '10 seconds')`
    const first = await deleteExpired(t.deps)
    expect(first.recipientPaces).toBe(BATCH)
    await drain(t, clock, 'retention')
    const left = async () =>
      (await t.db.sql<{ phone: string }[]>`select phone from recipient_paces where sender = 'retention-test' order by phone`).map(
        (r) => r.phone,
      )
    expect(await left()).toEqual(['+6289900000001', '+6289900000002'])
  })
})
