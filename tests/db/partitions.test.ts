// Partitioned history (db/partitions.ts): a fresh install runs partitioned by month, the months ahead
// exist, rows land in their month, the rules that must hold across months hold, and retention drops a
// finished month of webhook events (keeping one with a pending event) or detaches old history. (A
// charge and its twin racing it across months: charge-twin.outer.test.ts, two sessions in real time.)

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, money, type TestApp } from '../helpers/app'
import { testDatabase, type TestDatabase } from '../helpers/db'
import { drain, stepWith } from '../helpers/worker-steps'
import { migrate } from '../../src/db/migrate'
import { MIGRATIONS } from '../../src/db/migrations'
import { ensurePartitions, HISTORY_TABLES, listPartitions, MONTHS_AHEAD, partitionState } from '../../src/db/partitions'
import { storeInbound } from '../../src/modules/inbound/service'
import { deleteExpired } from '../../src/workers/retention'
import type { Config } from '../../src/config'
import { TestClock } from '../../src/lib/clock'

const monthStart = (date: Date, add = 0) => new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + add, 1))
const monthName = (table: string, date: Date) => `${table}_p${date.getUTCFullYear()}_${String(date.getUTCMonth() + 1).padStart(2, '0')}`

/** The months before this one: a copy of `clock` set back `months` (calendar months) from its time. */
const monthsAgo = (months: number) => {
  const at = clock.now()
  at.setUTCMonth(at.getUTCMonth() - months)
  return new TestClock(at)
}

const clock = new TestClock()
let t: TestApp
beforeAll(async () => {
  t = await testApp({ clock, runOnClock: true, env: { SIM_DELIVERED_MS: '50', SIM_READ_MS: '100' } })
}, 60_000)
afterAll(() => t.close(), 30_000)

const partitionOf = async (table: string, id: number) =>
  (await t.db.sql.unsafe<{ p: string }[]>(`select tableoid::regclass::text as p from ${table} where id = $1`, [id]))[0]?.p

describe('a fresh install', () => {
  test('every history table is partitioned by month, with this month and the next ones', async () => {
    const partitioned = await t.db.sql<{ name: string; strategy: string }[]>`
      select c.relname as name, p.partstrat as strategy from pg_partitioned_table p join pg_class c on c.oid = p.partrelid
      where c.relname = any(${[...HISTORY_TABLES]}::text[]) order by 1`
    expect([...partitioned]).toEqual([...HISTORY_TABLES].sort().map((name) => ({ name, strategy: 'r' })))
    const now = clock.now()
    for (const table of HISTORY_TABLES) {
      const names = (await listPartitions(t.db.sql, table)).map((p) => p.name)
      // Everything before this month in <table>_legacy (empty on a fresh install), then one per month.
      expect(names).toEqual([
        `${table}_legacy`,
        ...Array.from({ length: MONTHS_AHEAD + 1 }, (_, i) => monthName(table, monthStart(now, i))),
      ])
    }
    expect((await partitionState(t.db.sql)).every((s) => s.step === 'partitioned')).toBe(true)
    // Checked again at every start: nothing missing, nothing made.
    expect(await ensurePartitions(t.db.sql)).toBe(0)
  })

  test('a send and its charge land in this month; the message is found by its id; money adds up', async () => {
    const a = await t.account(1000, { price: 100 })
    const sent = await t.api('POST', '/messages/send', a.key, { to: '081234567890', body: 'partitioned' })
    expect(sent.status).toBe(200)
    const [{ id }] = (await t.db.sql<
      { id: number }[]
    >`select id from messages where message_sid = ${sent.body.data.message_id}`) as unknown as [{ id: number }]
    const month = monthStart(clock.now())
    expect(await partitionOf('messages', id)).toBe(monthName('messages', month))
    const [charge] = await t.db.sql<{ id: number }[]>`select id from ledger where message_id = ${id} and kind = 'charge'`
    expect(await partitionOf('ledger', charge!.id)).toBe(monthName('ledger', month))
    expect((await t.api('GET', `/messages/${sent.body.data.message_id}`, a.key)).status).toBe(200)
    expect(await money(t, a.accountId)).toEqual({ balance: 900, ledgerSum: 900 })
  })
})

describe('rules across months', () => {
  test('a repeat delivery of an inbound message whose first copy is in another month stores nothing', async () => {
    const message = {
      id: `SM${crypto.randomUUID().replace(/-/g, '')}`,
      from: '+6281234500001',
      name: null,
      to: { identity: null, number: null },
      sentAt: null,
      type: 'text' as const,
      text: 'hello',
      content: { text: 'hello' },
      raw: {},
      media: [],
      sender: null,
    }
    // The first copy came three months ago: the repeat would land in this month's partition.
    const [first] = await storeInbound(t.db.sql, 'twilio', [message as never], { timezone: 'UTC', clock: monthsAgo(3) })
    expect(first).toBeNumber()
    expect(await partitionOf('inbound_messages', first!)).toBe('inbound_messages_legacy')
    expect(await storeInbound(t.db.sql, 'twilio', [message as never], { timezone: 'UTC', clock })).toEqual([null])
    const [n] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from inbound_messages where provider_message_id = ${message.id}`
    expect(n!.n).toBe(1)
  })

  test('a campaign run again over contacts whose messages are in an earlier month sends them nothing twice', async () => {
    const a = await t.account(10_000, { price: 10 })
    await t.db.sql`
      insert into contacts (account_id, name, phone, tags)
      select ${a.accountId}, 'C' || g, '+62813777' || lpad(g::text, 5, '0'), array['vip'] from generate_series(1, 5) g`
    const template = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'promo', body: 'Hi {{name}}' })
    const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
    const draft = await t.api('POST', '/campaigns', a.key, {
      name: 'once',
      template_id: template.body.data.id,
      segment_id: segment.body.data.id,
    })
    const id = draft.body.data.campaign.id as number
    expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
    const status = async () => (await t.api('GET', `/campaigns/${id}`, a.key)).body.data.campaign.status as string
    // Sent two months ago (the runner's step on a clock of then): its messages are in an earlier month.
    // (The hand-off was made with the app's clock: its pace slots are sleeps on that one.)
    const then = monthsAgo(2)
    await clock.run(then.run(stepWith({ ...t.deps, clock: then }, 'campaign-runner')))
    expect(await status()).toBe('sent')
    const [earlier] = await t.db.sql<{ n: number }[]>`
      select count(*)::int as n from messages where campaign_id = ${id} and created_at < ${monthStart(clock.now())}`
    expect(earlier!.n).toBe(5)
    // The campaign made to start over from its first contact, now (its finished_at is written again when it ends).
    await t.db.sql`update campaigns set status = 'sending', cursor_contact_id = 0 where id = ${id}`
    await drain(t, clock, 'campaign-runner')
    expect(await status()).toBe('sent')
    const [n] = await t.db.sql<{ n: number; contacts: number }[]>`
      select count(*)::int as n, count(distinct contact_id)::int as contacts from messages where campaign_id = ${id}`
    expect(n).toEqual({ n: 5, contacts: 5 })
    expect(await money(t, a.accountId)).toEqual({ balance: 10_000 - 50, ledgerSum: 10_000 - 50 })
  })
})

describe('retention by whole months', () => {
  let db: TestDatabase
  // Mid-month, whatever today is: on the 1st, last month is not yet a day old and would stay.
  const now = new Date(monthStart(new Date()).getTime() + 14 * 86_400_000)
  const months = (n: number) => monthStart(now, n)
  beforeAll(async () => {
    // An installation partitioned four months ago: those months exist as partitions of their own.
    db = await testDatabase({ migrated: false })
    await migrate(db.sql, MIGRATIONS, { now: months(-4) })
    await ensurePartitions(db.sql, now)
  }, 60_000)
  afterAll(() => db.drop(), 30_000)

  const retention = (config: { retentionWebhookDays: number; retentionHistoryMonths: number }) =>
    deleteExpired({ sql: db.sql, config: { retentionMediaDays: 0, ...config } as Config, clock: new TestClock(now) })

  test('a month of finished webhook events goes with its attempts; a month with a pending event stays until none is', async () => {
    const [account] = await db.sql<{ id: number }[]>`insert into accounts (name, balance) values ('a', 0) returning id`
    const [key] = await db.sql<{ id: number }[]>`
      insert into api_keys (account_id, label, key_hash, prefix) values (${account!.id}, 'k', md5(random()::text), 'k') returning id`
    const event = async (created: Date, status: string) => {
      const [row] = await db.sql<{ id: number }[]>`
        insert into webhook_events (webhook_id, api_key_id, payload, status, created_at, delivered_at)
        values ('msg_' || md5(random()::text), ${key!.id}, '{}', ${status}, ${created}, ${status === 'delivered' ? created : null})
        returning id`
      await db.sql`
        insert into webhook_attempts (event_id, attempt, url, status_code, latency_ms, created_at)
        values (${row!.id}, 1, 'https://h.example/x', 200, 3, ${created})`
      return row!.id
    }
    const day = (d: Date, n: number) => new Date(d.getTime() + n * 86_400_000)
    await event(day(months(-3), 3), 'delivered')
    await event(day(months(-3), 20), 'failed')
    const pending = await event(day(months(-2), 5), 'pending')
    await event(day(months(-2), 6), 'delivered')
    await event(day(months(0), 0), 'delivered')

    const first = await retention({ retentionWebhookDays: 1, retentionHistoryMonths: 0 })
    const names = async (table: 'webhook_events' | 'webhook_attempts') => (await listPartitions(db.sql, table)).map((p) => p.name)
    // The legacy partition, month -4 and month -3 dropped, for both tables; month -2 kept (a pending event).
    expect(first.webhookMonths).toBe(6)
    expect((await names('webhook_events'))[0]).toBe(monthName('webhook_events', months(-2)))
    expect((await names('webhook_attempts'))[0]).toBe(monthName('webhook_attempts', months(-2)))
    const left = await db.sql<{ n: number }[]>`select count(*)::int as n from webhook_events`
    expect(left[0]!.n).toBe(3)
    // Again: nothing more to drop while the event is pending.
    expect((await retention({ retentionWebhookDays: 1, retentionHistoryMonths: 0 })).webhookMonths).toBe(0)
    // Once it is finished (failed: its last attempt given up), its month goes too (and the next, also
    // finished); this month stays.
    await db.sql`update webhook_events set status = 'failed' where id = ${pending}`
    const second = await retention({ retentionWebhookDays: 1, retentionHistoryMonths: 0 })
    expect(second.webhookMonths).toBe(4)
    expect((await names('webhook_events'))[0]).toBe(monthName('webhook_events', months(0)))
    // RETENTION_WEBHOOK_DAYS=0 keeps every month.
    expect((await retention({ retentionWebhookDays: 0, retentionHistoryMonths: 0 })).webhookMonths).toBe(0)
  })

  test('RETENTION_HISTORY_MONTHS detaches (never drops) older months of messages, ledger and inbound messages', async () => {
    const before = (await listPartitions(db.sql, 'messages')).map((p) => p.name)
    expect(before[0]).toBe('messages_legacy')
    const result = await retention({ retentionWebhookDays: 0, retentionHistoryMonths: 2 })
    // legacy, month -4 and -3 of each of the three tables: ended before the month two months ago began.
    expect(result.historyMonths).toBe(9)
    const after = (await listPartitions(db.sql, 'messages')).map((p) => p.name)
    expect(after[0]).toBe(monthName('messages', months(-2)))
    // Detached: tables of their own, for the operator to archive and drop.
    const [kept] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from pg_class where relname = any(${['messages_legacy', monthName('ledger', months(-3))]}::text[])
        and not relispartition`
    expect(kept!.n).toBe(2)
  })
})
