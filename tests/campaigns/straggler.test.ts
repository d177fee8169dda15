// A campaign's next batch is charged while the last one is still being handed over: one message held
// back by throttling (retried after its Retry-After) holds up neither the rest of its batch nor the
// next one, and the campaign is `sent` only once that message has its outcome too. The throttled
// message itself waits its Retry-After, also when the pace keeps no per-recipient gap.

import { afterAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { until } from '../helpers/wait'
import type { HandoffResult, OutgoingMessage, Provider } from '../../src/providers/provider'

let t: TestApp | undefined
afterAll(() => t?.close())

const STRAGGLER = '+6281300000000'

test('a throttled message holds up no batch: the next batch goes out before it; the campaign ends sent, each message once', async () => {
  const attempts = new Map<string, number>()
  // Accepts at once, except the first contact's first attempt: throttled for that recipient for 3 s.
  const provider: Provider = {
    name: 'twilio',
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      const n = (attempts.get(message.to) ?? 0) + 1
      attempts.set(message.to, n)
      if (message.to === STRAGGLER && n === 1)
        return { ok: false, errorCode: 131056, errorMessage: 'pair rate', throttle: { scope: 'recipient', retryAfterMs: 3_000 } }
      return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
    },
  }
  t = await testApp({ provider, workers: true })
  const a = await t.account(100_000, { price: 1 })
  const count = 700 // a batch of 500, then one of 200
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

  const app = t
  const done = await until(
    async () => (await app.api('GET', `/campaigns/${id}`, a.key)).body.data,
    (d) => d.campaign.status === 'sent',
    20_000,
    'the campaign to be sent',
  )
  expect(done.stats).toMatchObject({ total: count, sent: count, failed: 0 })
  expect(attempts.get(STRAGGLER)).toBe(2)
  expect([...attempts.values()].filter((n) => n !== 1)).toEqual([2])
  // The second batch (contacts 500 to 699) went out while the straggler waited for its Retry-After.
  const [row] = await t.db.sql<{ before: number }[]>`
    select count(*)::int as before from messages m
    where m.campaign_id = ${id} and m.phone >= '+6281300000500'
      and m.sent_at < (select sent_at from messages where campaign_id = ${id} and phone = ${STRAGGLER})`
  expect(row!.before).toBe(200)
  // And it waited its Retry-After (the pace keeps no recipients here: no recipient gap is set).
  const [waited] = await t.db.sql<{ ms: number }[]>`
    select (extract(epoch from (select sent_at from messages where campaign_id = ${id} and phone = ${STRAGGLER}) - min(sent_at)) * 1000)::float8 as ms
    from messages where campaign_id = ${id}`
  expect(waited!.ms).toBeGreaterThanOrEqual(2_900)
}, 40_000)
