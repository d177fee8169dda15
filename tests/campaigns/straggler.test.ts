// A campaign's next batch is charged while the last one is still being handed over: one message held
// back by throttling (retried after its Retry-After) holds up neither the rest of its batch nor the
// next one, and the campaign is `sent` only once that message has its outcome too. The throttled
// message itself waits its Retry-After, also when the pace keeps no per-recipient gap.
//
// The fake throttles that message until every other message of the campaign has been handed over, so
// the check does not race the machine's speed: were the next batch held up behind it, it would never be
// accepted and the campaign would never end. The runner's step runs on a test clock that moves only
// while nothing is in flight (a statement, a request to the fake): each Retry-After is a sleep on it.

import { afterAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { inFlight } from '../helpers/in-flight'
import { TestClock } from '../../src/lib/clock'
import type { HandoffResult, OutgoingMessage, Provider } from '../../src/providers/provider'

let t: TestApp | undefined
afterAll(() => t?.close())

const STRAGGLER = '+6281300000000'
const count = 700 // a batch of 500, then one of 200

test('a throttled message holds up no batch: the next batch goes out before it; the campaign ends sent, each message once', async () => {
  const attempts = new Map<string, number>()
  const clock = new TestClock()
  const stragglerTries: number[] = [] // when each of its attempts came (ms, on the clock)
  let othersAccepted = 0
  // Accepts at once, except the first contact: throttled for that recipient (Retry-After 3 s) until
  // every other contact has been accepted.
  const provider: Provider = {
    name: 'twilio',
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      attempts.set(message.to, (attempts.get(message.to) ?? 0) + 1)
      if (message.to === STRAGGLER) {
        stragglerTries.push(clock.monotonic())
        if (othersAccepted < count - 1)
          return { ok: false, errorCode: 131056, errorMessage: 'pair rate', throttle: { scope: 'recipient', retryAfterMs: 3_000 } }
      } else othersAccepted++
      return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
    },
  }
  const flight = inFlight()
  flight.track(provider)
  t = await testApp({ provider, clock, wrapSql: flight.sql })
  const a = await t.account(100_000, { price: 1 })
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
  expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)

  // The runner's step sends the campaign to its end: every batch, and the straggler's retries.
  await clock.run(t.runWorker('campaign-runner'), undefined, flight.idle)
  const [campaign] = await t.db.sql<{ status: string }[]>`select status from campaigns where id = ${id}`
  expect(campaign!.status).toBe('sent')
  const done = (await t.api('GET', `/campaigns/${id}`, a.key)).body.data
  expect(done.stats).toMatchObject({ total: count, sent: count, failed: 0 })
  // Every other contact was handed over once, the second batch (contacts 500 to 699) among them, while
  // the straggler waited; it was tried again until they all were, then accepted once.
  expect(othersAccepted).toBe(count - 1)
  expect([...attempts.entries()].filter(([phone, n]) => phone !== STRAGGLER && n !== 1)).toEqual([])
  expect(stragglerTries.length).toBeGreaterThanOrEqual(2)
  const [row] = await t.db.sql<{ n: number }[]>`
    select count(*)::int as n from messages where campaign_id = ${id} and status = 'sent' and phone = ${STRAGGLER}`
  expect(row!.n).toBe(1)
  // And each try waited its Retry-After (the pace keeps no recipients here: no recipient gap is set).
  const gaps = stragglerTries.slice(1).map((at, i) => at - stragglerTries[i]!)
  expect(Math.min(...gaps)).toBeGreaterThanOrEqual(2_900)
}, 90_000)
