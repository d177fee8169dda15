// Outer ring (real time): the service is a child process, killed with SIGKILL mid-campaign and restarted.
// Kill the service (a child process, SIGKILL) in the middle of a campaign, restart it: the campaign
// finishes with exactly one message per contact, none lost, none duplicated, every charge accounted for.

import { afterAll, expect, test } from 'bun:test'
import { call, crashTestEnv, startChild, type Child } from '../helpers/child'
import { until } from '../helpers/wait'
import { openDatabase } from '../../src/db/client'

const CONTACTS = 300
const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

test('kill -9 mid-campaign, restart: every contact gets exactly one message', async () => {
  // A provider that takes 20 ms per message, so the campaign is still running when it is killed.
  const received: string[] = []
  const fake = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      received.push(new URLSearchParams(await request.text()).get('To') ?? '')
      await Bun.sleep(20)
      return Response.json({ sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }, { status: 201 })
    },
  })
  cleanups.push(() => void fake.stop(true))
  const env = await crashTestEnv('campaign-crash', fake.port!, cleanups)
  const dataDir = env.DATA_DIR!

  let child: Child = await startChild(env)
  cleanups.push(async () => void (await child.stop()))
  const accountId = (await call(child.url, 'POST', '/admin/v1/accounts', { name: 'crash', balance: 100_000 })).body.data.id
  const key = (await call(child.url, 'POST', `/admin/v1/accounts/${accountId}/keys`, { label: 'k' })).body.data.key
  await call(child.url, 'PUT', '/admin/v1/price', { cost_per_message: 7, account_id: accountId })
  for (let i = 0; i < CONTACTS; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, CONTACTS - i) }, (_, j) =>
        call(
          child.url,
          'POST',
          '/api/v1/contacts',
          { name: `C${i + j}`, phone: `0813${String(i + j).padStart(8, '0')}`, tags: 'all' },
          key,
        ),
      ),
    )
  }
  const template = (await call(child.url, 'POST', `/admin/v1/accounts/${accountId}/templates`, { name: 't', body: 'Hi {{name}}' })).body
    .data
  const segment = (await call(child.url, 'POST', `/admin/v1/accounts/${accountId}/segments`, { name: 's', tag: 'all' })).body.data
  const campaign = (
    await call(child.url, 'POST', '/api/v1/campaigns', { name: 'c', template_id: template.id, segment_id: segment.id }, key)
  ).body.data.campaign
  await call(child.url, 'POST', `/admin/v1/campaigns/${campaign.id}/run`)

  await until(
    () => received.length,
    (n) => n >= 60,
    20_000,
    'the campaign to be under way',
  )
  await child.kill9()
  const handedBeforeCrash = received.length
  expect(handedBeforeCrash).toBeLessThan(CONTACTS)

  // The dead process's leases (campaign 60 s, hand-off 60 s) would expire on their own; move them
  // into the past instead of waiting.
  const db = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir })
  await db.sql`update campaigns set lease_until = now() - interval '1 second' where lease_until is not null`
  await db.sql`update messages set handoff_until = now() - interval '1 hour' where status = 'queued'`
  await db.close()

  child = await startChild(env)
  const done = await until(
    async () => (await call(child.url, 'GET', `/admin/v1/campaigns/${campaign.id}`)).body.data,
    (d) => d.campaign.status === 'sent' && d.stats.sent === CONTACTS,
    60_000,
    'the campaign to finish',
  )
  expect(done.stats).toMatchObject({ total: CONTACTS, sent: CONTACTS, failed: 0 })

  const messages = (await call(child.url, 'GET', '/api/v1/messages?limit=200', undefined, key)).body.data
  expect(messages.total).toBe(CONTACTS)
  // one message per contact: the listed phones (two pages) are all different
  const second = (await call(child.url, 'GET', '/api/v1/messages?limit=200&offset=200', undefined, key)).body.data
  const phones = new Set([...messages.items, ...second.items].map((m: any) => m.phone))
  expect(phones.size).toBe(CONTACTS)

  const account = (await call(child.url, 'GET', `/admin/v1/accounts/${accountId}`)).body.data
  expect(account.wa_balance).toBe(100_000 - CONTACTS * 7)
  const ledger = (await call(child.url, 'GET', `/admin/v1/accounts/${accountId}/ledger?limit=1`)).body.data
  expect(ledger.total).toBe(1 + CONTACTS) // the opening top-up and one charge per contact, no refunds
}, 120_000)
