// Messages are sent and reported at known times: the app runs on a test clock set to them.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TestClock } from '../../src/lib/clock'
import { testApp, type TestApp } from '../helpers/app'
import { reportStatus } from '../helpers/reports'

const SENT_AT = Date.parse('2026-01-02T03:04:05Z')
const DELIVERED_AT = Date.parse('2026-01-02T03:05:00Z')
let t: TestApp
const clock = new TestClock(SENT_AT)
beforeAll(async () => {
  t = await testApp({ clock, runOnClock: true })
})
afterAll(() => t.close())

describe('GET /messages and GET /messages/{sid}', () => {
  test('lists newest first with offset counting records, totals, filters and the detail view', async () => {
    const { key } = await t.account(100)
    const sids: string[] = []
    for (let i = 0; i < 5; i++) {
      const res = await t.api('POST', '/messages/send', key, { to: `08123456789${i}`, body: `m${i}` })
      sids.push(res.body.data.message_id)
    }
    await t.api('POST', '/messages/send', key, { to: '081234569999', body: 'refused' })
    // Same created_at for all (the clock stood still): order must fall back to id, higher first.
    await clock.advanceTo(DELIVERED_AT)
    expect(await reportStatus(t, sids[1]!, 'delivered')).toEqual({ changed: true })

    const all = await t.api('GET', '/messages', key)
    expect(all.status).toBe(200)
    expect(all.body.data).toMatchObject({ total: 6, limit: 50, offset: 0, has_more: false })
    expect(all.body.data.items[0].status).toBe('failed') // the newest
    expect(all.body.data.items[0].message_sid).toBeNull()
    // Only the refused one was refunded: the sum of `cost` over the others is what the list cost.
    expect(all.body.data.items.map((m: any) => m.refunded)).toEqual([true, false, false, false, false, false])
    const ids = all.body.data.items.map((m: any) => m.id)
    expect(ids).toEqual([...ids].sort((a: number, b: number) => b - a))

    const pageTwo = await t.api('GET', '/messages?limit=2&offset=2', key)
    expect(pageTwo.body.data).toMatchObject({ total: 6, limit: 2, offset: 2, has_more: true })
    expect(pageTwo.body.data.items.map((m: any) => m.id)).toEqual(ids.slice(2, 4))

    const delivered = await t.api('GET', '/messages?status=delivered', key)
    expect(delivered.body.data.total).toBe(1)
    expect(delivered.body.data.items[0]).toMatchObject({
      message_sid: sids[1],
      phone: '+6281234567891',
      status: 'delivered',
      sent_at: '2026-01-02 03:04:05',
      delivered_at: '2026-01-02 03:05:00',
      read_at: null,
    })

    const inRange = await t.api(
      'GET',
      `/messages?date_from=${encodeURIComponent('2026-01-02 03:04:05')}&date_to=${encodeURIComponent('2026-01-02 03:04:05')}`,
      key,
    )
    expect(inRange.body.data.total).toBe(5) // both bounds inclusive
    const outOfRange = await t.api('GET', `/messages?date_from=${encodeURIComponent('2026-01-02 03:04:06')}`, key)
    expect(outOfRange.body.data.total).toBe(0)

    const one = await t.api('GET', `/messages/${sids[1]}`, key)
    expect(one.status).toBe(200)
    expect(one.body.data).toMatchObject({
      message_sid: sids[1],
      phone: '+6281234567891',
      status: 'delivered',
      sent_at: '2026-01-02 03:04:05',
      delivered_at: '2026-01-02 03:05:00',
      refunded: false,
    })
    expect(one.body.data.id).toEqual(expect.any(Number))
  })

  test('timestamps are written and read in TIMEZONE', async () => {
    const jakarta = await (
      await import('../helpers/app')
    ).testApp({
      clock: new TestClock(SENT_AT),
      runOnClock: true,
      env: { TIMEZONE: 'Asia/Jakarta' },
    })
    try {
      const { key } = await jakarta.account(10)
      const sent = await jakarta.api('POST', '/messages/send', key, { to: '081234567890', body: 'x' })
      const one = await jakarta.api('GET', `/messages/${sent.body.data.message_id}`, key)
      expect(one.body.data.sent_at).toBe('2026-01-02 10:04:05')
      const hit = await jakarta.api('GET', `/messages?date_from=${encodeURIComponent('2026-01-02 10:04:05')}`, key)
      expect(hit.body.data.total).toBe(1)
    } finally {
      await jakarta.close()
    }
  })

  test('validation: 400 for non-integers, 422 for values', async () => {
    const { key } = await t.account(0)
    const cases: [string, number][] = [
      ['limit=abc', 400],
      ['offset=1.5', 400],
      ['limit=0', 422],
      ['limit=201', 422],
      ['offset=-1', 422],
      ['status=pending', 422],
      ['status=SENT', 422],
      ['date_from=2026-01-02', 422],
      ['date_to=2026-13-01%2000:00:00', 422],
      ['date_from=2026-02-30%2000:00:00', 422],
    ]
    for (const [query, status] of cases) {
      const res = await t.api('GET', `/messages?${query}`, key)
      expect({ query, status: res.status, code: res.body.code }).toEqual({ query, status, code: 'VALIDATION_ERROR' })
    }
    expect((await t.api('GET', '/messages?limit=200', key)).status).toBe(200)
  })

  test('tenant isolation: another account sees none of it and gets 404 for its SIDs', async () => {
    const a = await t.account(10)
    const b = await t.account(10)
    const sent = await t.api('POST', '/messages/send', a.key, { to: '081234567890', body: 'private' })
    const mine = await t.api('GET', '/messages', b.key)
    expect(mine.body.data.total).toBe(0)
    const theirs = await t.api('GET', `/messages/${sent.body.data.message_id}`, b.key)
    expect([theirs.status, theirs.body.code]).toEqual([404, 'NOT_FOUND'])
    expect((await t.api('GET', '/messages/SM00000000000000000000000000000000', a.key)).status).toBe(404)
  })
})
