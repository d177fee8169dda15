// A sender's credentials are sealed for that sender alone (lib/secrets.ts, `sender:<id>` as the
// sealing context): someone who can write the database but holds no SECRETS_KEY copies sender A's
// sealed credentials onto sender B's row, so that B's traffic would go out as A (A's Meta number and
// token) and A's app secret would verify B's callbacks. The copy does not open as B's: a send through B
// fails before anything reaches Meta, refunded, saying why (and no credential); the check says the
// same; a callback for B's number signed with A's app secret changes nothing. Setting B's credentials
// again through the admin API mends it. The service reading the copy is one started after it (a running
// one keeps a sender it built until its row's updated_at moves).

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import { metaWebhookHeaders } from '../helpers/meta-webhook'
import { assign, fourSenders, META_A, META_B, registerFakes, SECRET_VALUES, sendersEnv } from '../helpers/senders'
import { buildDeps } from '../../src/server'
import { createApp } from '../../src/app'
import { ADMIN_TOKEN } from '../helpers/app'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
let account: { accountId: number; key: string }
const stops: (() => Promise<void>)[] = []
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph) })
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

/** The service started anew on the same database (it reads every sender from its row). */
function restarted() {
  const { deps } = buildDeps(t.config, t.db)
  stops.push(async () => {
    deps.handoff.stop()
    await deps.reads.close()
  })
  const app = createApp(deps)
  return async (method: string, path: string, options: { body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}) => {
    const response = await app.handle(
      new Request(`http://localhost${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...options.headers },
        body: options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
      }),
    )
    const text = await response.text()
    return { status: response.status, text, body: JSON.parse(text) as any }
  }
}

function statusNotification(phoneNumberId: string, wamid: string, status: string) {
  return JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: META_B.credentials.business_account_id,
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '6281100000002', phone_number_id: phoneNumberId },
              statuses: [{ id: wamid, status, timestamp: String(Math.floor(Date.now() / 1000)), recipient_id: '6281234567890' }],
            },
          },
        ],
      },
    ],
  })
}

function expectNoSecret(text: string, what: string) {
  for (const secret of SECRET_VALUES) expect({ what, secret, found: text.includes(secret) }).toEqual({ what, secret, found: false })
}

test("sender A's sealed credentials copied onto sender B's row do not open as B's: no send, no callback goes as A", async () => {
  // B sends one message with its own credentials, before the copy.
  const own = await t.api('POST', '/messages/send', account.key, { to: '081234567890', body: 'from B', from: String(ids.metaB) })
  expect(own.status).toBe(200)
  const wamid = own.body.data.message_id as string

  await t.db.sql`update senders set credentials = (select credentials from senders where id = ${ids.metaA}) where id = ${ids.metaB}`
  const service = restarted()
  const api = (path: string, body: unknown) =>
    service('POST', `/api/v1${path}`, { body, headers: { authorization: `Bearer ${account.key}` } })
  const admin = (method: string, path: string, body?: unknown) =>
    service(method, `/admin/v1${path}`, { body, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })

  // A send through B: nothing reaches Meta (not from A's number, not with A's token), refunded.
  graph.reset()
  const before = await money(t, account.accountId)
  const sent = await api('/messages/send', { to: '081234567891', body: 'as A?', from: String(ids.metaB) })
  expect({ status: sent.status, code: sent.body.code, requests: graph.requests.map((r) => r.path) }).toEqual({
    status: 502,
    code: 'BAD_GATEWAY',
    requests: [],
  })
  expect(sent.body.error).toContain(`sender ${ids.metaB}'s credentials do not open for it: altered, or sealed for another sender`)
  expectNoSecret(sent.text, 'the answer')
  expect(await money(t, account.accountId)).toEqual(before)
  const [stored] = await t.db.sql<{ status: string; error_message: string }[]>`
    select status, error_message from messages where id = ${sent.body.id}`
  expect(stored!.status).toBe('failed')
  expectNoSecret(stored!.error_message, 'the stored error')

  // The admin API shows no credential set on B, and its check says why.
  const shown = await admin('GET', `/senders/${ids.metaB}`)
  expect(shown.body.data.credentials_set).toEqual([])
  const check = await admin('POST', `/senders/${ids.metaB}/check`)
  expect(check.body.data.last_check).toMatchObject({ ok: false })
  expect(check.body.data.last_check.detail).toContain('altered, or sealed for another sender')
  expectNoSecret(check.text, 'the check')

  // A's app secret does not verify a callback for B's number: B's message stays as it was.
  const body = statusNotification(META_B.credentials.phone_number_id, wamid, 'failed')
  const callback = await service('POST', '/provider/meta/webhook', {
    rawBody: body,
    headers: metaWebhookHeaders(body, META_A.credentials.app_secret),
  })
  expect([callback.status, callback.body.code]).toEqual([403, 'FORBIDDEN'])
  const [message] = await t.db.sql<{ status: string }[]>`select status from messages where message_sid = ${wamid}`
  expect(message!.status).toBe('sent')

  // B's credentials set again (all of them): B sends as B.
  const mended = await admin('PATCH', `/senders/${ids.metaB}`, { credentials: META_B.credentials })
  expect(mended.status).toBe(200)
  graph.reset()
  const again = await api('/messages/send', { to: '081234567891', body: 'as B', from: String(ids.metaB) })
  expect(again.status).toBe(200)
  expect(graph.requests.map((r) => [r.path.split('/')[2], r.headers.get('authorization')])).toEqual([
    [META_B.credentials.phone_number_id, `Bearer ${META_B.credentials.access_token}`],
  ])
}, 60_000)
