// Rotation (POST /admin/v1/secrets/rotate) reads every sender's sealed credentials, then seals each
// again under the current key one sender at a time, without a transaction: it runs while the service
// works. A sender whose credentials change meanwhile (PATCH through any instance) must keep its change:
// the rotation writes a sender only if its credentials are still what it read (compare-and-set), and
// leaves one changed meanwhile as the change wrote it (sealed under the current key already).
// The interleaving is made, not hoped for: the rotating instance's first seal waits until the change
// is answered (its secret box is the real one, held at that step), in both database modes.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ADMIN_TOKEN, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { assign, fourSenders, registerFakes, sendersEnv, TWILIO_A } from '../helpers/senders'
import { buildDeps } from '../../src/server'
import { createApp } from '../../src/app'
import { encodeKey, generateKey, keyIdOf } from '../../src/lib/secrets'
import type { Deps } from '../../src/deps'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

const K1 = generateKey()
const K2 = generateKey()
const NEW_TOKEN = 'twilio-token-A-rotated-5ecret-00000'

let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
let account: { accountId: number; key: string }
const stops: (() => Promise<void>)[] = []
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph, { SECRETS_KEY: encodeKey(K1) }) })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  account = await t.account(1000)
  for (const id of Object.values(ids)) await assign(t, account.accountId, id)
}, 60_000)
afterAll(async () => {
  for (const stop of stops) await stop()
  await t.close()
  twilio.stop()
  graph.stop()
})

/** An instance on the same database with SECRETS_KEY=K2 and K1 as previous; `hold` may change its deps first. */
function instance(hold?: (deps: Deps) => void) {
  const { deps } = buildDeps({ ...t.config, secretsKey: K2, secretsKeysPrevious: [K1] }, t.db)
  hold?.(deps)
  stops.push(async () => {
    deps.handoff.stop()
    await deps.reads.close()
  })
  const app = createApp(deps)
  return async (method: string, path: string, body?: unknown, key = ADMIN_TOKEN) => {
    const response = await app.handle(
      new Request(`http://localhost${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    )
    return { status: response.status, body: (await response.json()) as any }
  }
}

test("a sender's credentials changed while a rotation runs keep the change: the rotation does not write back what it read", async () => {
  // The rotating instance: its first seal (sender A's, the lowest id) says so (`sealing`), then waits until `resume`.
  const resume = Promise.withResolvers<void>()
  const sealing = Promise.withResolvers<void>()
  let sealed = false
  const rotating = instance((deps) => {
    const box = deps.secrets
    deps.secrets = {
      ...box,
      async seal(plain, context) {
        if (!sealed) {
          sealed = true
          sealing.resolve()
          await resume.promise
        }
        return box.seal(plain, context)
      },
    }
  })
  const other = instance()

  const rotation = rotating('POST', '/admin/v1/secrets/rotate')
  // The rotation sealing sender A's credentials (a rotation that ends first fails the test at once).
  await Promise.race([
    sealing.promise,
    rotation.then((r) => Promise.reject(new Error(`the rotation ended (${r.status}) before sealing sender A's credentials`))),
  ])
  // Meanwhile, A's auth token is changed (Twilio now takes only the new one) through another instance.
  twilio.account(TWILIO_A.credentials.account_sid, NEW_TOKEN, { friendlyName: 'Toko A', numbers: [TWILIO_A.number] })
  const changed = await other('PATCH', `/admin/v1/senders/${ids.twilioA}`, { credentials: { auth_token: NEW_TOKEN } })
  expect(changed.status).toBe(200)
  resume.resolve()
  const rotated = await rotation
  expect(rotated.status).toBe(200)

  // A sends with its new token (Twilio refuses the old one now), and its check passes.
  twilio.reset()
  const sent = await other('POST', '/api/v1/messages/send', { to: '081234567890', body: 'after', from: String(ids.twilioA) }, account.key)
  expect({ status: sent.status, error: sent.body.error, twilio: twilio.requests.map((r) => r.status) }).toEqual({
    status: 200,
    error: undefined,
    twilio: [201],
  })
  expect((await other('POST', `/admin/v1/senders/${ids.twilioA}/check`)).body.data.last_check.ok).toBe(true)
  // The rotation counted A as current: the change had sealed it under K2 already.
  expect(rotated.body.data).toEqual({ rotated: 3, current: 1, key_id: keyIdOf(K2) })
  const sealedUnder = await t.db.sql<{ key: string }[]>`select split_part(credentials, '.', 2) as key from senders order by id`
  expect(new Set(sealedUnder.map((r) => r.key))).toEqual(new Set([keyIdOf(K2)]))
}, 60_000)
