// `admin webhook listen` for a key without a registered URL: while it is listened to, every event of
// the key is recorded for the stream (never delivered): its messages' statuses and the account's
// events, such as a customer's reply, so a developer on a laptop sees replies without registering a URL.
// The stream is read as the command line reads it (server-sent events from the admin API); the test
// clock moves the stream's polls.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { drain } from '../helpers/worker-steps'
import { TestClock } from '../../src/lib/clock'

let t: TestApp
const clock = new TestClock(new Date('2026-12-02T09:00:00Z'))
beforeAll(async () => {
  t = await testApp({ clock, runOnClock: true })
})
afterAll(() => t.close())

/** The key's event stream, read event by event (its `event:` names), until `until` is among them. */
async function listen(keyId: number) {
  const abort = new AbortController()
  const response = await t.app.handle(
    new Request(`http://localhost/admin/v1/keys/${keyId}/webhook/listen`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      signal: abort.signal,
    }),
  )
  expect(response.status).toBe(200)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  const names = () => [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]!)
  return {
    names,
    /** Reads until `count` events have come, moving the clock a poll at a time while none comes. */
    async read(count: number) {
      // One read is pending at a time: a read that lost the race to the clock still holds the next chunk.
      let pending: ReturnType<typeof reader.read> | undefined
      for (let polls = 0; names().length < count; polls++) {
        if (polls > 120) throw new Error(`${count} events did not come in 120 s of the clock: ${names().join(', ')}`)
        pending ??= reader.read()
        // The stream's next poll: once it sleeps again (its last poll's queries done), a second of the clock.
        const chunk = await Promise.race([
          pending,
          clock
            .nextSleep()
            .then(() => clock.advance(1_000))
            .then(() => null),
        ])
        if (chunk === null) continue
        pending = undefined
        if (chunk.done) break
        text += decoder.decode(chunk.value)
      }
      return names()
    },
    stop: () => abort.abort(),
  }
}

test('a key without a URL, listened to: its statuses and the customer reply come to the listener, and nothing is delivered', async () => {
  const a = await t.account(1000, { price: 10 })
  const stream = await listen(a.keyId)
  expect(await stream.read(1)).toEqual(['ready'])

  const phone = '+6281277700001'
  const sent = await t.api('POST', '/messages/send', a.key, { to: phone, body: 'Halo' })
  expect(sent.status).toBe(200)
  // The simulator reports it delivered, then read.
  await clock.advance(200)
  expect(await drain(t, clock, 'simulator-reports')).toBe(2)
  const wrote = await t.admin('POST', '/simulator/inbound', { phone, account_id: a.accountId, body: 'Sudah bayar' })
  expect(wrote.status).toBe(200)

  expect(await stream.read(4)).toEqual(['ready', 'message.status', 'message.status', 'message.received'])
  stream.stop()
  // Recorded for the listener only: no delivery is pending.
  const rows = await t.db.sql<{ status: string }[]>`select distinct status from webhook_events where api_key_id = ${a.keyId}`
  expect(rows.map((r) => r.status)).toEqual(['listen_only'])
})

test('a key nobody listens to, without a URL, gets no event', async () => {
  const a = await t.account(1000, { price: 10 })
  const phone = '+6281277700002'
  expect((await t.api('POST', '/messages/send', a.key, { to: phone, body: 'Halo' })).status).toBe(200)
  expect((await t.admin('POST', '/simulator/inbound', { phone, account_id: a.accountId, body: 'Oke' })).status).toBe(200)
  const [row] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from webhook_events where api_key_id = ${a.keyId}`
  expect(row!.n).toBe(0)
})
