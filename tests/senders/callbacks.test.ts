// Provider callbacks for stored senders: a Twilio status callback is verified with the auth token of
// the sender its AccountSid names (never another sender's, nor the environment's for a stored sender's
// account), a Meta webhook with the app secret of the sender its phone_number_id names; the
// environment's own credentials keep verifying the deployment's default sender; Meta's handshake takes
// a sender's verify_token. Messages are sent for real through the fakes; callbacks are signed here with
// the official `twilio` package and node:crypto, independently of the service's signature code.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import twilioSdk from 'twilio'
import { testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph } from '../helpers/fake-graph'
import {
  assign,
  ENV_META,
  ENV_TWILIO,
  fourSenders,
  META_A,
  META_B,
  registerFakes,
  sendersEnv,
  TWILIO_A,
  TWILIO_B,
} from '../helpers/senders'
import { metaWebhookHeaders } from '../helpers/meta-webhook'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

const TWILIO_CALLBACK_URL = 'https://api.example.com/provider/twilio/status'

let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
let key: string
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph) })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  const account = await t.account(1000)
  key = account.key
  for (const id of Object.values(ids)) await assign(t, account.accountId, id)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

/** Sends one message from `from` (undefined: the deployment's sender for an account without senders); its SID. */
async function sendFrom(from: number | undefined): Promise<string> {
  const sender = from === undefined ? (await t.account(10)).key : key
  const answer = await t.api('POST', '/messages/send', sender, {
    to: '081234567890',
    body: 'callback me',
    ...(from === undefined ? {} : { from: String(from) }),
  })
  expect(answer.status).toBe(200)
  return answer.body.data.message_id
}

async function statusOf(sid: string): Promise<string> {
  const [row] = await t.db.sql<{ status: string }[]>`select status from messages where message_sid = ${sid}`
  return row!.status
}

function twilioCallback(sid: string, status: string, accountSid: string, token: string) {
  const fields = {
    MessageSid: sid,
    SmsSid: sid,
    MessageStatus: status,
    SmsStatus: status,
    AccountSid: accountSid,
    To: 'whatsapp:+6281234567890',
    From: 'whatsapp:+14155550101',
    ApiVersion: '2010-04-01',
  }
  return t.request('POST', '/provider/twilio/status', {
    rawBody: new URLSearchParams(fields).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(token, TWILIO_CALLBACK_URL, fields),
    },
  })
}

function metaNotification(phoneIds: string[], sid: string, status: string) {
  return JSON.stringify({
    object: 'whatsapp_business_account',
    entry: phoneIds.map((phoneId, i) => ({
      id: `20000000000000${i}`,
      changes: [
        {
          field: 'messages',
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: '15550000000', phone_number_id: phoneId },
            statuses: [{ id: sid, status, timestamp: '1750857384', recipient_id: '6281234567890' }],
          },
        },
      ],
    })),
  })
}

function metaWebhook(body: string, secret: string) {
  return t.request('POST', '/provider/meta/webhook', {
    rawBody: body,
    headers: metaWebhookHeaders(body, secret),
  })
}

describe('Twilio status callbacks', () => {
  test("signed with sender A's token, naming A's AccountSid: applied", async () => {
    const sid = await sendFrom(ids.twilioA)
    const answer = await twilioCallback(sid, 'delivered', TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token)
    expect([answer.status, answer.body.data]).toEqual([200, { changed: true }])
    expect(await statusOf(sid)).toBe('delivered')
    // B's own callbacks verify with B's token.
    const other = await sendFrom(ids.twilioB)
    const b = await twilioCallback(other, 'read', TWILIO_B.credentials.account_sid, TWILIO_B.credentials.auth_token)
    expect([b.status, b.body.data]).toEqual([200, { changed: true }])
    expect(await statusOf(other)).toBe('read')
  })

  test("signed with sender B's token (or the environment's) naming A's AccountSid: 403, nothing changes", async () => {
    const sid = await sendFrom(ids.twilioA)
    for (const token of [TWILIO_B.credentials.auth_token, ENV_TWILIO.token]) {
      const answer = await twilioCallback(sid, 'failed', TWILIO_A.credentials.account_sid, token)
      expect([answer.status, answer.body.code]).toEqual([403, 'FORBIDDEN'])
    }
    expect(await statusOf(sid)).toBe('sent')
    const [{ n }] = (await t.db.sql`select count(*)::int as n from webhook_events e join messages m on m.id = e.message_id
      where m.message_sid = ${sid}`) as any
    expect(n).toBe(0)
    // Still A's own signature applies.
    expect((await twilioCallback(sid, 'delivered', TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token)).status).toBe(200)
    expect(await statusOf(sid)).toBe('delivered')
  })

  test("the deployment's default sender keeps working with TWILIO_AUTH_TOKEN; a stored sender's token does not verify it", async () => {
    const sid = await sendFrom(undefined)
    const stranger = await twilioCallback(sid, 'delivered', ENV_TWILIO.sid, TWILIO_A.credentials.auth_token)
    expect(stranger.status).toBe(403)
    const answer = await twilioCallback(sid, 'delivered', ENV_TWILIO.sid, ENV_TWILIO.token)
    expect([answer.status, answer.body.data]).toEqual([200, { changed: true }])
    expect(await statusOf(sid)).toBe('delivered')
  })

  test("a sender's new auth token verifies its callbacks at once, the old one no more (what was read is forgotten)", async () => {
    const sid = await sendFrom(ids.twilioA)
    const fresh = 'twilio-token-A-new-5ecret-00000000'
    // Read once with the old token, so that the next callback would find it kept.
    const before = await twilioCallback(sid, 'sent', TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token)
    expect(before.status).toBe(200)
    expect((await t.admin('PATCH', `/senders/${ids.twilioA}`, { credentials: { auth_token: fresh } })).status).toBe(200)
    try {
      const old = await twilioCallback(sid, 'delivered', TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token)
      expect(old.status).toBe(403)
      const now = await twilioCallback(sid, 'delivered', TWILIO_A.credentials.account_sid, fresh)
      expect([now.status, now.body.data]).toEqual([200, { changed: true }])
    } finally {
      await t.admin('PATCH', `/senders/${ids.twilioA}`, { credentials: { auth_token: TWILIO_A.credentials.auth_token } })
    }
  })

  test("a disabled sender's callbacks are still verified and applied (what was sent still reports)", async () => {
    const sid = await sendFrom(ids.twilioB)
    await t.admin('POST', `/senders/${ids.twilioB}/disable`)
    try {
      const answer = await twilioCallback(sid, 'delivered', TWILIO_B.credentials.account_sid, TWILIO_B.credentials.auth_token)
      expect([answer.status, answer.body.data]).toEqual([200, { changed: true }])
    } finally {
      await t.admin('POST', `/senders/${ids.twilioB}/enable`)
    }
  })
})

describe('Meta webhooks', () => {
  test('signed with the app secret of the sender of its phone_number_id: applied', async () => {
    const sid = await sendFrom(ids.metaA)
    const answer = await metaWebhook(
      metaNotification([META_A.credentials.phone_number_id], sid, 'delivered'),
      META_A.credentials.app_secret,
    )
    expect([answer.status, answer.body.data]).toEqual([200, { changed: true }])
    expect(await statusOf(sid)).toBe('delivered')
  })

  test("signed with the other sender's app secret, or the environment's: 403, nothing changes", async () => {
    const sid = await sendFrom(ids.metaA)
    const body = metaNotification([META_A.credentials.phone_number_id], sid, 'read')
    for (const secret of [META_B.credentials.app_secret, ENV_META.appSecret]) {
      const answer = await metaWebhook(body, secret)
      expect([answer.status, answer.body.code]).toEqual([403, 'FORBIDDEN'])
    }
    // A notification naming two numbers must be signed by the app of each: A's secret does not cover B's number.
    const both = metaNotification([META_A.credentials.phone_number_id, META_B.credentials.phone_number_id], sid, 'read')
    expect((await metaWebhook(both, META_A.credentials.app_secret)).status).toBe(403)
    expect(await statusOf(sid)).toBe('sent')
    expect((await metaWebhook(body, META_A.credentials.app_secret)).status).toBe(200)
    expect(await statusOf(sid)).toBe('read')
  })

  test("the environment's number keeps verifying with META_APP_SECRET; a stored sender's secret does not verify it", async () => {
    const sid = await sendFrom(ids.metaB)
    // A status for the deployment's own number (no stored sender has it): META_APP_SECRET verifies it.
    const envBody = metaNotification([ENV_META.phoneNumberId], 'wamid.envnumber0001', 'delivered')
    expect((await metaWebhook(envBody, META_B.credentials.app_secret)).status).toBe(403)
    const answer = await metaWebhook(envBody, ENV_META.appSecret)
    expect([answer.status, answer.body.data]).toEqual([200, { changed: false }])
    // And B's own with B's.
    const own = await metaWebhook(metaNotification([META_B.credentials.phone_number_id], sid, 'delivered'), META_B.credentials.app_secret)
    expect([own.status, own.body.data]).toEqual([200, { changed: true }])
  })

  test("the subscription handshake takes a sender's verify_token, and META_VERIFY_TOKEN; another token is 403", async () => {
    const handshake = (token: string) =>
      t.request('GET', `/provider/meta/webhook?hub.mode=subscribe&hub.verify_token=${encodeURIComponent(token)}&hub.challenge=1158201444`)
    for (const token of [META_A.credentials.verify_token, META_B.credentials.verify_token, ENV_META.verifyToken]) {
      const answer = await handshake(token)
      expect([answer.status, answer.body]).toEqual([200, 1158201444])
    }
    const wrong = await handshake('not-a-verify-token')
    expect(wrong.status).toBe(403)
  })
})
