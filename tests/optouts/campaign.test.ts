// A campaign skips its opted-out recipients, uncharged, and counts them (stats.opted_out), checked
// when each batch is charged: a recipient who opts out after the run started, before their message
// was charged, is skipped too. The simulator sends; no worker loops run, the campaign runner's step
// is run by hand so the opt-out lands between the start and the charge.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'

let t: TestApp
beforeAll(async () => {
  t = await testApp({ env: { SIM_DELIVERED_MS: '50', SIM_READ_MS: '100' } })
})
afterAll(() => t.close())

test('a campaign skips and counts opted-out recipients, also one opted out while it runs, and charges only the others', async () => {
  const acct = await t.account(1000, { price: 10 })
  const phones = ['081370000001', '081370000002', '081370000003', '081370000004', '081370000005']
  for (const [i, phone] of phones.entries()) {
    expect((await t.api('POST', '/contacts', acct.key, { name: `C${i}`, phone, tags: 'vip' })).status).toBe(201)
  }
  const template = await t.admin('POST', `/accounts/${acct.accountId}/templates`, { name: 'promo', body: 'Hi {{name}}' })
  const segment = await t.admin('POST', `/accounts/${acct.accountId}/segments`, { name: 'vips', tag: 'vip' })
  const draft = await t.api('POST', '/campaigns', acct.key, {
    name: 'Promo',
    template_id: template.body.data.id,
    segment_id: segment.body.data.id,
  })
  const id = draft.body.data.campaign.id
  // Opted out before the run, by a key and by the operator.
  expect((await t.api('POST', '/opt-outs', acct.key, { phone: phones[1] })).status).toBe(201)
  expect((await t.admin('POST', `/accounts/${acct.accountId}/opt-outs`, { phone: phones[3] })).status).toBe(201)
  // Another account's opt-out of phones[0] changes nothing here.
  const other = await t.account(0)
  await t.admin('POST', `/accounts/${other.accountId}/opt-outs`, { phone: phones[0] })

  expect((await t.admin('POST', `/campaigns/${id}/run`)).body.data.campaign.status).toBe('sending')
  // Opted out after the run started, before any batch was charged.
  expect((await t.api('POST', '/opt-outs', acct.key, { phone: phones[4] })).status).toBe(201)
  const before = await money(t, acct.accountId)
  for (let i = 0; i < 5; i++) {
    await t.runWorker('campaign-runner')
    if ((await t.api('GET', `/campaigns/${id}`, acct.key)).body.data.campaign.status === 'sent') break
  }
  const detail = (await t.api('GET', `/campaigns/${id}`, acct.key)).body.data
  expect(detail.campaign.status).toBe('sent')
  expect(detail.stats).toMatchObject({ total: 5, sent: 2, failed: 0, opted_out: 3 })
  const sentTo = await t.db.sql<{ phone: string }[]>`select phone from messages where campaign_id = ${id} order by phone`
  expect(sentTo.map((m) => m.phone)).toEqual(['+6281370000001', '+6281370000003'])
  const after = await money(t, acct.accountId)
  expect(after.balance).toBe(before.balance - 20)
  expect(after.balance).toBe(after.ledgerSum)

  // The campaign page shows the count.
  const page = await t.admin('GET', `/campaigns/${id}`)
  expect(page.body.data.stats.opted_out).toBe(3)
})
