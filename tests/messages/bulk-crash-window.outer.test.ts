// Outer ring (real time): the service is a child process, killed with SIGKILL after charging and restarted.
// A bulk's first run dies after charging (kill -9); before it is repeated with its Idempotency-Key, a
// customer it refused for the 24-hour window writes in. The repeat goes on with the entries the first
// run charged (their outcomes), and the entry refused then stays refused and uncharged, though its
// window is open now: nothing is charged twice, nothing is left out of the books, no 500.

import { afterAll, expect, test } from 'bun:test'
import { call, crashTestEnv, startChild, type Child } from '../helpers/child'
import { twilioSignature } from '../../src/providers/twilio/signature'

const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

test("a repeat after a crash keeps the first run's entries when a window opened in between", async () => {
  // A fake Twilio that holds every message until released, then accepts it.
  let released = false
  const held: (() => void)[] = []
  const received: string[] = []
  const fake = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      received.push(new URLSearchParams(await request.text()).get('To') ?? '')
      if (!released) await new Promise<void>((resolve) => held.push(resolve))
      return Response.json({ sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }, { status: 201 })
    },
  })
  cleanups.push(() => {
    released = true
    held.forEach((r) => r())
    fake.stop(true)
  })
  const env = await crashTestEnv('bulk-crash-window', fake.port!, cleanups)
  env.WINDOW_CHECK = 'provider'

  let child: Child = await startChild(env)
  const accountId = (await call(child.url, 'POST', '/admin/v1/accounts', { name: 'crash', balance: 1000 })).body.data.id
  const key = (await call(child.url, 'POST', `/admin/v1/accounts/${accountId}/keys`, { label: 'k' })).body.data.key
  await call(child.url, 'PUT', '/admin/v1/price', { cost_per_message: 10, account_id: accountId })

  const phone = (i: number) => `+6281234500${String(i).padStart(3, '0')}`
  let sids = 0
  /** The customer `i` writes to the deployment's number (Twilio's incoming-message webhook, signed). */
  const writes = async (base: string, i: number) => {
    const url = `${base}/provider/twilio/inbound`
    const fields = {
      MessageSid: `SM${String(++sids).padStart(32, '0')}`,
      AccountSid: `AC${'0'.repeat(32)}`,
      From: `whatsapp:${phone(i)}`,
      To: 'whatsapp:+14155238886',
      Body: 'halo',
      NumMedia: '0',
    }
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature('token', url, fields) },
      body: new URLSearchParams(fields).toString(),
    })
    expect(res.status).toBe(200)
  }
  for (const i of [0, 1, 2, 3]) await writes(child.url, i) // customers 4 and 5 have not written

  const messages = [0, 1, 2, 3, 4, 5].map((i) => ({ to: phone(i), body: `m${i}` }))
  const bulk = (base: string) =>
    fetch(`${base}/api/v1/messages/bulk`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'crash-window-1' },
      body: JSON.stringify({ messages }),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
  void bulk(child.url).catch(() => {})
  const deadline = Date.now() + 10_000
  while (received.length < 4 && Date.now() < deadline) await Bun.sleep(20)
  expect(received.length).toBe(4) // the four inside their windows charged and in flight
  await child.kill9()

  released = true
  held.splice(0).forEach((r) => r())
  child = await startChild(env)
  cleanups.push(async () => void (await child.stop()))
  await writes(child.url, 4) // customer 4's window opens before the repeat

  let repeat = await bulk(child.url)
  const until = Date.now() + 50_000
  while (repeat.status === 409 && Date.now() < until) {
    await Bun.sleep(200)
    repeat = await bulk(child.url)
  }
  expect(repeat.status).toBe(200)
  expect(repeat.body.data).toMatchObject({ total: 6, sent: 4, failed: 2, total_cost: 40, balance_after: 960 })
  expect(repeat.body.data.results.map((r: { status: string; code?: string }) => r.code ?? r.status)).toEqual([
    'sent',
    'sent',
    'sent',
    'sent',
    'CONFLICT',
    'CONFLICT',
  ])
  const ledger = (await call(child.url, 'GET', `/admin/v1/accounts/${accountId}/ledger?limit=50`)).body.data.items
  expect(ledger.filter((r: { kind: string }) => r.kind === 'charge')).toHaveLength(4)
  expect((await call(child.url, 'GET', `/admin/v1/accounts/${accountId}`)).body.data.wa_balance).toBe(960)
}, 120_000)
