// Date filters mean whole seconds: timestamps are stored finer than they are shown, so
// `date_to=10:00:00` includes a row at 10:00:00.7, on every list that takes dates. Rows are placed
// inside one second by a test clock set to each instant before it is written (webhook deliveries,
// which need a message event, inserted at them); the lists are read through the API.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'

// The same instants in two zones: UTC, and Jakarta (UTC+7, where 10:00:00 is 03:00:00 UTC).
for (const [zone, local, utc] of [
  ['UTC', '2026-05-04 10:00', '2026-05-04 10:00'],
  ['Asia/Jakarta', '2026-05-04 10:00', '2026-05-04 03:00'],
] as const) {
  describe(`TIMEZONE=${zone}`, () => {
    let t: TestApp
    let accountId: number
    let key: string
    let keyId: number
    // Three rows of each list: at :00.2 and :00.7 of one second, and at the start of the next.
    const offsets = ['00.2', '00.7', '01.0']
    const at = (i: number) => `${utc}:${offsets[i]}+00`

    beforeAll(async () => {
      // The account (its opening top-up) and each message (its charge) at the instants above.
      const clock = new TestClock(new Date(at(0)))
      t = await testApp({ clock, runOnClock: true, env: { TIMEZONE: zone } })
      ;({ accountId, key, keyId } = await t.account(100))
      const sids: string[] = []
      for (let i = 0; i < 3; i++) {
        await clock.advanceTo(new Date(at(i)))
        const sent = await t.api('POST', '/messages/send', key, { to: `0812345678${i}0`, body: `m${i}` })
        expect(sent.status).toBe(200)
        sids.push(sent.body.data.message_id)
      }
      for (let i = 0; i < 3; i++) {
        const [message] = await t.db.sql<{ id: number }[]>`select id from messages where message_sid = ${sids[i]!}`
        await t.db.sql`
          insert into webhook_events (webhook_id, api_key_id, message_id, payload, status, created_at)
          values (${`msg_test_${zone}_${i}`}, ${keyId}, ${message!.id}, ${JSON.stringify({
            event: 'message.status',
            timestamp: `${local}:00`,
            data: {
              message_sid: sids[i],
              to: '+62812345678',
              status: 'delivered',
              previous_status: 'sent',
              error_code: null,
              error_message: null,
            },
          })}, 'failed', ${at(i)}::timestamptz)`
      }
      // The ledger: the opening top-up and the three charges, on the same three instants (the top-up
      // with the first charge).
      const rows = await t.db.sql<{ at: Date }[]>`select created_at as at from ledger where account_id = ${accountId} order by id`
      expect(rows.map((r) => r.at.toISOString())).toEqual([0, 0, 1, 2].map((i) => new Date(at(i)).toISOString()))
    }, 60_000)
    afterAll(() => t.close())

    const bounds = (query: string) =>
      `date_from=${encodeURIComponent(query.split('|')[0]!)}&date_to=${encodeURIComponent(query.split('|')[1]!)}`

    test('messages: date_to is inclusive to the end of its second, date_from from its start', async () => {
      const list = async (query: string) =>
        (await t.api('GET', `/messages?${bounds(query)}`, key)).body.data.items.map((m: { body: string }) => m.body).sort()
      expect(await list(`${local}:00|${local}:00`)).toEqual(['m0', 'm1'])
      expect(await list(`${local}:00|${local}:01`)).toEqual(['m0', 'm1', 'm2'])
      expect(await list(`${local}:01|${local}:01`)).toEqual(['m2'])
      expect(await list(`2026-01-01 00:00:00|${local}:00`)).toEqual(['m0', 'm1'])
      expect(await list(`${local}:01|2027-01-01 00:00:00`)).toEqual(['m2'])
      // The list shows each to the second: the filter agrees with what is shown.
      const shown = (await t.api('GET', '/messages', key)).body.data.items.map((m: { sent_at: string }) => m.sent_at).sort()
      expect(shown).toEqual([`${local}:00`, `${local}:00`, `${local}:01`])
    })

    test('admin ledger: the same rule on created_at, and the total counts the same rows', async () => {
      const list = async (query: string) => (await t.admin('GET', `/accounts/${accountId}/ledger?${bounds(query)}`)).body.data
      const second = await list(`${local}:00|${local}:00`)
      expect(second.items.map((r: { kind: string }) => r.kind).sort()).toEqual(['charge', 'charge', 'topup'])
      expect(second.total).toBe(3)
      expect(second.items.every((r: { created_at: string }) => r.created_at === `${local}:00`)).toBe(true)
      expect((await list(`${local}:01|${local}:01`)).total).toBe(1)
      expect((await list(`${local}:00|${local}:01`)).total).toBe(4)
    })

    test('admin webhook deliveries: the same rule on created_at', async () => {
      const list = async (query: string) => (await t.admin('GET', `/keys/${keyId}/deliveries?${bounds(query)}`)).body.data
      const second = await list(`${local}:00|${local}:00`)
      expect(second.items.map((d: { webhook_id: string }) => d.webhook_id).sort()).toEqual([`msg_test_${zone}_0`, `msg_test_${zone}_1`])
      expect(second.total).toBe(2)
      expect((await list(`${local}:01|${local}:01`)).total).toBe(1)
      const failedOnly = await t.admin('GET', `/keys/${keyId}/deliveries?status=failed&${bounds(`${local}:00|${local}:00`)}`)
      expect(failedOnly.body.data.total).toBe(2)
    })

    test('a malformed bound is a 422 naming it, on every list', async () => {
      for (const path of [`/api/v1/messages`, `/admin/v1/accounts/${accountId}/ledger`, `/admin/v1/keys/${keyId}/deliveries`]) {
        for (const field of ['date_from', 'date_to']) {
          const res = await t.request('GET', `${path}?${field}=2026-05-04T10:00:00`, { key: path.startsWith('/api') ? key : ADMIN_TOKEN })
          expect({ path, field, status: res.status, error: res.body.error }).toEqual({
            path,
            field,
            status: 422,
            error: `${field}: must be a timestamp YYYY-MM-DD HH:MM:SS`,
          })
        }
      }
    })
  })
}
