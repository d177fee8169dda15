// Outer ring (real time): the point is the real server's idle timeout, in a child process, against a slow provider.
// A send answers once its hand-off has an outcome, however long the provider takes: the server's idle
// timeout (Bun's default is 10 s) must not cut the connection of a send that waits on a slow provider.

import { afterAll, expect, test } from 'bun:test'
import { call, crashTestEnv, startChild } from '../helpers/child'

const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

test('a send behind a provider that answers after 11 s gets its answer', async () => {
  const fake = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch() {
      await Bun.sleep(11_000)
      return Response.json({ sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }, { status: 201 })
    },
  })
  cleanups.push(() => void fake.stop(true))
  const env = await crashTestEnv('long-send', fake.port!, cleanups)
  const child = await startChild({ ...env, PROVIDER_TIMEOUT_MS: '20000' })
  cleanups.push(async () => void (await child.stop()))
  const account = await call(child.url, 'POST', '/admin/v1/accounts', { name: 'slow', balance: 10 })
  const key = (await call(child.url, 'POST', `/admin/v1/accounts/${account.body.data.id}/keys`, { label: 'k' })).body.data.key

  const sent = await call(child.url, 'POST', '/api/v1/messages/send', { to: '081234567890', body: 'slow' }, key)
  expect(sent.status).toBe(200)
  expect(sent.body.data.status).toBe('sent')
}, 60_000)
