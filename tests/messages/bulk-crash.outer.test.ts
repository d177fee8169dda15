// Outer ring (real time): the service is a child process, killed with SIGKILL between charge and hand-off and restarted.
// A real crash between charge and hand-off: the service (a child process) charges a bulk of 50,
// hands a few to a provider that never answers, and is killed with SIGKILL. After a restart every
// charged entry ends handed over or refunded, exactly once, and a repeat of the request with its
// Idempotency-Key gets the final answer without being charged again. Rich entries (an image, a
// location, reply buttons) handed over by the restarted process send what the request asked for: their
// content comes from the database, not from the dead process's memory.

import { afterAll, expect, test } from 'bun:test'
import { call, crashTestEnv, startChild, type Child } from '../helpers/child'
import { openDatabase } from '../../src/db/client'
import { TWILIO_STATUS_PATH } from '../../src/providers/twilio'
import { twilioSignature } from '../../src/providers/twilio/signature'

const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

test('kill -9 between charge and hand-off: after restart each entry is handed over or refunded exactly once', async () => {
  // A fake Twilio that holds every request until released, then accepts all but numbers ending in 9999.
  let released = false
  const held: (() => void)[] = []
  const received: string[] = []
  const forms = new Map<string, Record<string, string>>()
  const contents: Record<string, unknown>[] = []
  const fake = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const text = await request.text()
      if (new URL(request.url).pathname === '/v1/Content') {
        // Twilio's Content API: a reply-button template.
        contents.push(JSON.parse(text))
        return Response.json({ sid: `HX${'1'.repeat(32)}` }, { status: 201 })
      }
      const form = new URLSearchParams(text)
      const to = form.get('To') ?? ''
      received.push(to)
      forms.set(to, Object.fromEntries(form))
      if (!released) await new Promise<void>((resolve) => held.push(resolve))
      if (to.endsWith('9999')) return Response.json({ code: 21211, message: 'refused', status: 400 }, { status: 400 })
      return Response.json({ sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }, { status: 201 })
    },
  })
  cleanups.push(() => {
    released = true
    held.forEach((r) => r())
    fake.stop(true)
  })

  const env = await crashTestEnv('bulk-crash', fake.port!, cleanups)
  env.TWILIO_CONTENT_API_BASE = `http://127.0.0.1:${fake.port}`
  const dataDir = env.DATA_DIR!

  let child: Child = await startChild(env)
  const account = await call(child.url, 'POST', '/admin/v1/accounts', { name: 'crash', balance: 1000 })
  const accountId = account.body.data.id
  const key = (await call(child.url, 'POST', `/admin/v1/accounts/${accountId}/keys`, { label: 'k' })).body.data.key
  await call(child.url, 'PUT', '/admin/v1/price', { cost_per_message: 10, account_id: accountId })

  const rich: Record<number, Record<string, unknown>> = {
    10: { type: 'image', image: { link: 'https://cdn.example.com/p/10.jpg', caption: 'Order 10' } },
    20: { type: 'location', location: { latitude: -6.2, longitude: 106.8, name: 'Toko 20' } },
    30: {
      type: 'interactive',
      interactive: {
        type: 'button',
        body: { text: 'Confirm 30?' },
        action: { buttons: [{ type: 'reply', reply: { id: 'yes-30', title: 'Yes' } }] },
      },
    },
  }
  const messages = Array.from({ length: 50 }, (_, i) => ({
    to: i % 10 === 3 ? `0812345${String(i).padStart(2, '0')}9999` : `0812345${String(i).padStart(5, '0')}`,
    ...(rich[i] ?? { body: `m${i}` }),
  }))
  const bulk = (base: string) =>
    fetch(`${base}/api/v1/messages/bulk`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'crash-bulk-1' },
      body: JSON.stringify({ messages }),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
  void bulk(child.url).catch(() => {})
  const deadline = Date.now() + 10_000
  while (received.length < 4 && Date.now() < deadline) await Bun.sleep(20)
  expect(received.length).toBe(4) // charged, 4 in flight, 46 waiting in the pool
  await child.kill9()

  // The dead process's leases are short (a live holder renews them): they run out by themselves
  // within seconds of the kill, and the restarted service takes them over.
  const db = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir })
  const [state] = await db.sql<{ queued: number; balance: number }[]>`
    select (select count(*)::int from messages where status = 'queued') as queued,
           (select balance from accounts where id = ${accountId}) as balance`
  expect(state).toEqual({ queued: 50, balance: 1000 - 50 * 10 }) // all 50 charged, none handed over yet
  await db.close()
  const killedAt = Date.now()

  released = true
  held.splice(0).forEach((r) => r())
  child = await startChild(env)
  cleanups.push(async () => void (await child.stop()))

  let listed: any
  const until = Date.now() + 50_000
  do {
    await Bun.sleep(100)
    listed = (await call(child.url, 'GET', '/api/v1/messages?limit=200', undefined, key)).body.data
  } while (listed.total < 50 && Date.now() < until)
  expect(listed.total).toBe(50)
  expect(Date.now() - killedAt).toBeLessThan(45_000) // two leases (15 s each) and a recovery poll (5 s), not minutes
  const byStatus = (s: string) => listed.items.filter((m: any) => m.status === s)
  expect(byStatus('sent')).toHaveLength(45)
  expect(byStatus('failed')).toHaveLength(5)
  expect(byStatus('failed').every((m: any) => m.phone.endsWith('9999') && m.message_sid === null)).toBe(true)
  // The rich entries, handed over only by the restarted process, went as asked.
  const to = (i: number) => `whatsapp:+62812345${String(i).padStart(5, '0')}`
  expect(forms.get(to(10))).toMatchObject({ Body: 'Order 10', MediaUrl: 'https://cdn.example.com/p/10.jpg' })
  expect(forms.get(to(20))).toMatchObject({ Body: 'Toko 20', PersistentAction: 'geo:-6.2,106.8|Toko 20' })
  expect(forms.get(to(30))).toMatchObject({
    ContentSid: `HX${'1'.repeat(32)}`,
    ContentVariables: JSON.stringify({ '1': 'Confirm 30?', '2': 'Yes', '3': 'yes-30' }),
  })
  expect(contents).toHaveLength(1)
  expect(listed.items.find((m: any) => m.phone === to(10).slice(9))).toMatchObject({ type: 'image', body: 'Order 10' })

  let ledger = (await call(child.url, 'GET', `/admin/v1/accounts/${accountId}/ledger?limit=200`)).body.data.items
  const charges = ledger.filter((r: any) => r.kind === 'charge')
  const refunds = ledger.filter((r: any) => r.kind === 'refund')
  expect(charges).toHaveLength(50)
  expect(refunds).toHaveLength(5)
  // each refund is for a distinct failed message; no sent message was refunded
  const failedIds = new Set(byStatus('failed').map((m: any) => m.id))
  expect(new Set(refunds.map((r: any) => r.message_id))).toEqual(failedIds)
  // One sent message is reported undelivered before the repeat: a late failure, refunded (the price
  // refunds late failures by default). The repeat's answer still says it was sent (it was handed
  // over): the answer is the request's, the refund is the message's.
  const undelivered = byStatus('sent')[0]
  const report = { MessageSid: undelivered.message_sid, MessageStatus: 'undelivered', ErrorCode: '30008' }
  const callbackUrl = `${child.url}${TWILIO_STATUS_PATH}`
  const reported = await fetch(callbackUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature('token', callbackUrl, report) },
    body: new URLSearchParams(report).toString(),
  })
  expect(reported.status).toBe(200)

  // The repeat of the crashed request: its final answer (409 only while recovery is still at work).
  let repeat = await bulk(child.url)
  const repeatUntil = Date.now() + 20_000
  while (repeat.status === 409 && Date.now() < repeatUntil) {
    await Bun.sleep(200)
    repeat = await bulk(child.url)
  }
  expect(repeat.status).toBe(200)
  expect(repeat.body.data).toMatchObject({ total: 50, sent: 45, failed: 5, total_cost: 450, balance_after: 550 })
  const sidOf = new Map(listed.items.map((m: any) => [m.phone, m.message_sid]))
  for (const r of repeat.body.data.results) {
    if (r.status === 'sent') expect(r.message_id).toBe(sidOf.get(r.to))
    else expect(r.to.endsWith('9999')).toBe(true)
  }
  expect(await bulk(child.url)).toEqual(repeat) // and from now on, replayed as it is
  ledger = (await call(child.url, 'GET', `/admin/v1/accounts/${accountId}/ledger?limit=200`)).body.data.items
  expect(ledger.filter((r: any) => r.kind === 'charge')).toHaveLength(50) // the repeats charged nothing

  expect(ledger.filter((r: any) => r.kind === 'refund')).toHaveLength(6) // the 5 refused and the late failure
  expect(ledger.some((r: any) => r.kind === 'refund' && r.message_id === undelivered.id)).toBe(true)

  const balance = (await call(child.url, 'GET', `/admin/v1/accounts/${accountId}`)).body.data.wa_balance
  const ledgerSum = ledger.reduce((sum: number, r: any) => sum + r.amount, 0)
  expect(balance).toBe(1000 - 44 * 10)
  expect(ledgerSum).toBe(balance)
}, 120_000)
