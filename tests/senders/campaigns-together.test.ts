// One account's campaign on its number never slows another account's number: two campaigns on two
// senders run at the same time, each at its own sender's pace. A slow sender's campaign (2 messages a
// second) holds its messages waiting for their slots; a fast sender's campaign started after it must
// still go at once, not after it (one campaign at a time, or one hand-off pool shared by every sender,
// each made it wait). The runner's step runs on a test clock that moves only while nothing is in
// flight (a statement, a hand-off): each pace slot is a sleep on it.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { inFlight } from '../helpers/in-flight'
import { TestClock } from '../../src/lib/clock'

const clock = new TestClock()
const flight = inFlight()
let t: TestApp

beforeAll(async () => {
  // A small pool: the slow campaign's waiting messages fill it at once.
  t = await testApp({ clock, wrapSql: flight.sql, env: { HANDOFF_CONCURRENCY: '4' } })
})
afterAll(() => t.close())

async function senderAccount(number: string, ratePerSecond: number, contacts: number) {
  const made = await t.admin('POST', '/senders', { provider: 'simulator', name: `Shop ${number}`, number, rate_per_second: ratePerSecond })
  expect(made.status).toBe(201)
  const account = await t.account(1_000_000, { price: 10 })
  expect((await t.admin('PUT', `/accounts/${account.accountId}/senders/${made.body.data.id}`, {})).status).toBe(200)
  for (let i = 0; i < contacts; i++) {
    const phone = `0812${number.slice(-3)}${String(i).padStart(5, '0')}`
    expect((await t.api('POST', '/contacts', account.key, { name: `C${i}`, phone, tags: 'vip' })).status).toBe(201)
  }
  const template = await t.admin('POST', `/accounts/${account.accountId}/templates`, { name: 'promo', body: 'Halo {{name}}' })
  const segment = await t.admin('POST', `/accounts/${account.accountId}/segments`, { name: 'vips', tag: 'vip' })
  const draft = await t.api('POST', '/campaigns', account.key, {
    name: 'promo',
    template_id: template.body.data.id,
    segment_id: segment.body.data.id,
  })
  expect(draft.status).toBe(201)
  return { campaignId: draft.body.data.campaign.id as number, senderId: made.body.data.id as number }
}

const statusOf = async (id: number) => (await t.admin('GET', `/campaigns/${id}`)).body.data.campaign.status as string
const finishedAt = async (id: number) =>
  (await t.db.sql<{ at: Date }[]>`select finished_at as at from campaigns where id = ${id}`)[0]!.at.getTime()
const sentOf = async (senderId: number) =>
  (await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where sender_id = ${senderId} and status <> 'queued'`)[0]!.n

test("a fast sender's campaign started after a slow sender's goes at its own pace, not after it", async () => {
  const slow = await senderAccount('+6281100000101', 2, 24) // 12 s at its pace
  const fast = await senderAccount('+6281100000202', 50, 60) // about 1.2 s at its pace

  expect((await t.admin('POST', `/campaigns/${slow.campaignId}/run`)).status).toBe(200)
  // The runner's step: the slow campaign starts, its first message goes at once, the next ones wait
  // for their slots (the clock stands still until the test moves it). Once one of them sleeps, what
  // is still in flight is the first message's hand-off.
  const step = t.runWorker('campaign-runner')
  await clock.nextSleep()
  await flight.idle()
  expect(await sentOf(slow.senderId)).toBeGreaterThanOrEqual(1)
  const started = clock.now().getTime()
  expect((await t.admin('POST', `/campaigns/${fast.campaignId}/run`)).status).toBe(200)
  // 8 s pass: the step claims the fast campaign at its next poll, and both go at their senders' paces.
  await clock.run(clock.sleep(8_000), undefined, flight.idle)
  expect(await statusOf(fast.campaignId)).toBe('sent')
  const fastSeconds = ((await finishedAt(fast.campaignId)) - started) / 1000

  // The fast one ended while the slow one still sends: it never waited for it.
  expect(await statusOf(slow.campaignId)).toBe('sending')
  expect(await sentOf(slow.senderId)).toBeLessThan(24)
  expect(fastSeconds).toBeLessThan(8)
  expect(await sentOf(fast.senderId)).toBe(60)

  await clock.run(step, undefined, flight.idle)
  expect(await statusOf(slow.campaignId)).toBe('sent')
  expect(await sentOf(slow.senderId)).toBe(24)
}, 60_000)
