// Secrets stay secret on every path a provider's words take: the fakes of Twilio and Meta quote the
// credentials they were called with in every refusal (`echoCredentials`: the Authorization value, the
// token alone, Twilio's SID:token pair), and the service keeps and shows their words without them,
// through its one redaction (providerText in src/providers/http.ts). Paths: Meta's media lookup
// (inbound_media.error, media_error in GET /api/v1/inbound, the 410 of the medium), a send refused by
// each provider (the 502 answer, messages.error_message, GET /messages), a status callback whose
// error text quotes a token (error_message and the message.status event), and a sender's check
// (last_check.detail and senders.check_detail). At the end, no row of any table holds a credential.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import twilioSdk from 'twilio'
import { testApp, type TestApp } from '../helpers/app'
import { fakeTwilio, twilioError } from '../helpers/fake-twilio'
import { fakeGraph, graphError } from '../helpers/fake-graph'
import { metaMessagesBody, metaWebhookHeaders } from '../helpers/meta-webhook'
import {
  assign,
  createSender,
  fourSenders,
  META_A,
  META_B,
  registerFakes,
  SECRET_VALUES,
  sendersEnv,
  TWILIO_A,
  TWILIO_B,
} from '../helpers/senders'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

const WRONG_TWILIO = 'wrong-twilio-token-5ecret-echoed-0'
const WRONG_META = 'EAAwrongMetaToken5ecretEchoed000000'
/** Every credential value: none may be kept or shown anywhere. */
const SECRETS = [
  ...SECRET_VALUES,
  WRONG_TWILIO,
  WRONG_META,
  Buffer.from(`${TWILIO_A.credentials.account_sid}:${TWILIO_A.credentials.auth_token}`).toString('base64'),
]

let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
let acc: { accountId: number; key: string }
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph, { WEBHOOK_ALLOW_PRIVATE: 'true' }) })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  acc = await t.account(1000)
  await assign(t, acc.accountId, ids.metaA, true)
  await assign(t, acc.accountId, ids.twilioA)
  // A registered webhook: every status change of the account's messages is a stored message.status event.
  expect((await t.api('POST', '/webhook', acc.key, { url: 'http://127.0.0.1:9/hook' })).status).toBe(200)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

/** Fails naming where a credential showed. */
function expectNoSecret(text: string, where: string) {
  for (const secret of SECRETS) expect({ where, leaked: text.includes(secret) }).toEqual({ where, leaked: false })
}

describe("Meta's media lookup", () => {
  test('refused quoting the access token: media_error and inbound_media.error keep Meta’s words, not the token', async () => {
    graph.echoCredentials = true
    try {
      // The medium is B's: the lookup with A's token (the number the message reached) is refused with 190.
      graph.medium({ id: 'media-echo-1', token: META_B.credentials.access_token, bytes: new Uint8Array([0xff, 0xd8]), type: 'image/jpeg' })
      const body = metaMessagesBody(META_A.credentials.phone_number_id, '6281399000001', [
        { id: 'wamid.HBgNredaction1', type: 'image', image: { id: 'media-echo-1', mime_type: 'image/jpeg' } },
      ])
      const received = await t.request('POST', '/provider/meta/webhook', {
        rawBody: body,
        headers: metaWebhookHeaders(body, META_A.credentials.app_secret),
      })
      expect(received.body).toMatchObject({ success: true, data: { inbound: 1 } })
      while ((await t.runWorker('inbound-media')) > 0) {}
    } finally {
      graph.echoCredentials = false
    }
    const [row] = await t.db.sql<{ id: number; error: string }[]>`
      select i.id::int as id, m.error from inbound_media m join inbound_messages i on i.id = m.inbound_message_id
      where m.provider_media_id = 'media-echo-1'`
    // Meta's words are kept, the token it quoted is not (the fake did quote it: the redaction marks the place).
    expect(row!.error).toStartWith('Meta refused the media lookup (HTTP 401, code 190): Invalid OAuth access token')
    expect(row!.error).toContain('(access token [redacted]; Authorization: Bearer [redacted])')
    expectNoSecret(row!.error, 'inbound_media.error')

    const one = await t.api('GET', `/inbound/${row!.id}`, acc.key)
    const list = await t.api('GET', '/inbound?phone=%2B6281399000001', acc.key)
    expect(one.body.data.content).toMatchObject({ media_status: 'failed', media_error: row!.error })
    expect(list.body.data.items[0].content.media_error).toBe(row!.error)
    const medium = await t.api('GET', `/inbound/${row!.id}/media`, acc.key)
    expect([medium.status, medium.body.code]).toEqual([410, 'MEDIA_FAILED'])
    for (const [where, answer] of [
      ['GET /inbound/{id}', one],
      ['GET /inbound', list],
      ['GET /inbound/{id}/media', medium],
    ] as const) {
      expectNoSecret(JSON.stringify(answer.body), where)
    }
  })
})

describe('a send refused quoting the credentials', () => {
  test('Meta and Twilio: the 502 answer, messages.error_message and GET /messages hold the provider’s words, not the token', async () => {
    graph.echoCredentials = true
    twilio.echoCredentials = true
    graph.answer = () => graphError(400, 131026, '(#131026) Message undeliverable')
    twilio.answer = () => twilioError(400, 21211, "The 'To' number is not a valid phone number.")
    try {
      for (const [from, words, quoted] of [
        [ids.metaA, '(#131026) Message undeliverable', '(access token [redacted]; Authorization: Bearer [redacted])'],
        [
          ids.twilioA,
          "The 'To' number is not a valid phone number.",
          `(Authorization: Basic [redacted], that is ${TWILIO_A.credentials.account_sid}:[redacted]; token [redacted])`,
        ],
      ] as const) {
        const answer = await t.api('POST', '/messages/send', acc.key, { to: '081234567890', body: 'echo', from: String(from) })
        expect([answer.status, answer.body.code]).toEqual([502, 'BAD_GATEWAY'])
        expect(answer.body.error).toContain(`${words} ${quoted}`)
        const [row] = await t.db.sql<{ error_message: string }[]>`select error_message from messages where id = ${answer.body.id}`
        expect(row!.error_message).toBe(`${words} ${quoted}`)
        const shown = await t.api('GET', '/messages?status=failed', acc.key)
        expect(shown.body.data.items.map((m: { error_message: string }) => m.error_message)).toContain(row!.error_message)
        for (const [where, text] of [
          ['the 502 answer', JSON.stringify(answer.body)],
          ['messages.error_message', row!.error_message],
          ['GET /messages', JSON.stringify(shown.body)],
        ] as const) {
          expectNoSecret(text, `${where} (sender ${from})`)
        }
      }
    } finally {
      graph.reset()
      twilio.reset()
    }
  })
})

/** A Meta access token of another app: no sender holds it, so only its shape can take it out. */
const UNHELD_TOKEN = 'EAAJunheldOtherAppToken0123456789abcdefABCDEF'

describe('a status callback quoting a token', () => {
  test('the failed message’s error_message and its message.status event hold none (Twilio signed by the token it quotes, Meta)', async () => {
    const sent = async (from: number) => {
      const answer = await t.api('POST', '/messages/send', acc.key, { to: '081234567891', body: 'then failed', from: String(from) })
      expect(answer.status).toBe(200)
      return answer.body.data.message_id as string
    }
    const twilioSid = await sent(ids.twilioA)
    const { auth_token: token, account_sid: accountSid } = TWILIO_A.credentials
    const fields = {
      MessageSid: twilioSid,
      MessageStatus: 'undelivered',
      AccountSid: accountSid,
      ErrorCode: '30008',
      ErrorMessage: `Unknown error for ${accountSid}:${token} (token ${token})`,
    }
    const twilioAnswer = await t.request('POST', '/provider/twilio/status', {
      rawBody: new URLSearchParams(fields).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(token, 'https://api.example.com/provider/twilio/status', fields),
      },
    })
    expect(twilioAnswer.status).toBe(200)

    const wamid = await sent(ids.metaA)
    const notification = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: META_A.credentials.business_account_id,
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: '6281100000001', phone_number_id: META_A.credentials.phone_number_id },
                statuses: [
                  {
                    id: wamid,
                    status: 'failed',
                    timestamp: String(Math.floor(Date.now() / 1000)),
                    recipient_id: '6281234567891',
                    // The sender's own token (held: taken out as it is) and one of another app's that
                    // the service does not hold (taken out by its shape).
                    errors: [
                      {
                        code: 131000,
                        title: `Something went wrong: GET /media?access_token=${META_A.credentials.access_token} (also tried access_token=${UNHELD_TOKEN})`,
                      },
                    ],
                  },
                ],
              },
            },
          ],
        },
      ],
    })
    const metaAnswer = await t.request('POST', '/provider/meta/webhook', {
      rawBody: notification,
      headers: metaWebhookHeaders(notification, META_A.credentials.app_secret),
    })
    expect(metaAnswer.status).toBe(200)

    const rows = await t.db.sql<{ sid: string; status: string; error_message: string; payload: string }[]>`
      select m.message_sid as sid, m.status, m.error_message, e.payload
      from messages m join webhook_events e on e.message_id = m.id
      where m.message_sid in (${twilioSid}, ${wamid}) and m.status = 'failed' and e.payload like '%"failed"%'
      order by m.id`
    expect(rows.map((r) => [r.sid, r.error_message])).toEqual([
      [twilioSid, `Unknown error for ${accountSid}:[redacted] (token [redacted])`],
      [wamid, 'Something went wrong: GET /media?access_token=[redacted] (also tried access_token=[redacted])'],
    ])
    for (const row of rows) {
      expect(JSON.parse(row.payload)).toMatchObject({
        event: 'message.status',
        data: { status: 'failed', error_message: row.error_message },
      })
      expectNoSecret(row.payload, `the message.status event of ${row.sid}`)
    }
  })
})

describe("a sender's check", () => {
  test('refused quoting the wrong token it was given: last_check.detail and senders.check_detail hold none', async () => {
    const tw = await createSender(t, 'twilio', {
      number: '+14155550177',
      credentials: { ...TWILIO_B.credentials, auth_token: WRONG_TWILIO },
    })
    const me = await createSender(t, 'meta', { number: '+6281100000077', credentials: { ...META_A.credentials, access_token: WRONG_META } })
    twilio.echoCredentials = true
    graph.echoCredentials = true
    try {
      const checked = [await t.admin('POST', `/senders/${tw}/check`), await t.admin('POST', `/senders/${me}/check`)]
      expect(checked.map((c) => c.body.data.last_check.detail)).toEqual([
        expect.stringContaining(
          `(Twilio answered HTTP 401 (code 20003): Authenticate (Authorization: Basic [redacted], that is ${TWILIO_B.credentials.account_sid}:[redacted]; token [redacted]))`,
        ),
        expect.stringContaining(
          '(Meta answered HTTP 401 (code 190): Invalid OAuth access token - Cannot parse access token (access token [redacted]; Authorization: Bearer [redacted]))',
        ),
      ])
      for (const answer of checked) expectNoSecret(JSON.stringify(answer.body), 'POST /senders/{id}/check')
      const [stored] = await t.db.sql<{ detail: string }[]>`select string_agg(check_detail, ' ') as detail from senders`
      expectNoSecret(stored!.detail, 'senders.check_detail')
    } finally {
      twilio.echoCredentials = false
      graph.echoCredentials = false
    }
  })
})

test('after all of it, no row of any table holds a credential in clear', async () => {
  const tables = await t.db.sql<{ name: string }[]>`
    select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`
  for (const { name } of tables) {
    const rows = await t.db.sql<{ row: string }[]>`select row_to_json(r)::text as row from ${t.db.sql(name)} r`
    expectNoSecret(rows.map((r) => r.row).join('\n'), `table ${name}`)
  }
})
