// Stored senders for tests: two Twilio accounts and two Meta phone numbers, each with its own
// credentials, registered in the fakes (which then refuse any other credentials), created through the
// admin API and given to accounts. Every credential value is listed (`SECRET_VALUES`) so that a test
// can look for it where it must never be (answers, audit rows, the database's dump).

import { expect } from 'bun:test'
import type { TestApp } from './app'
import type { FakeTwilio } from './fake-twilio'
import type { FakeGraph } from './fake-graph'

export const TWILIO_A = {
  number: '+14155550101',
  credentials: { account_sid: `AC${'a1'.repeat(16)}`, auth_token: 'twilio-token-A-5ecret-0123456789ab' },
}
export const TWILIO_B = {
  number: '+14155550102',
  credentials: { account_sid: `AC${'b2'.repeat(16)}`, auth_token: 'twilio-token-B-5ecret-ba9876543210' },
}
export const META_A = {
  number: '+6281100000001',
  credentials: {
    access_token: 'EAAmetaTokenA5ecretAAAAAAAAAAAAAAA',
    phone_number_id: '100000000000001',
    app_secret: 'meta-app-5ecret-A-0123456789',
    business_account_id: '200000000000001',
    verify_token: 'verify-5ecret-A',
  },
}
export const META_B = {
  number: '+6281100000002',
  credentials: {
    access_token: 'EAAmetaTokenB5ecretBBBBBBBBBBBBBBB',
    phone_number_id: '100000000000002',
    app_secret: 'meta-app-5ecret-B-9876543210',
    business_account_id: '200000000000002',
    verify_token: 'verify-5ecret-B',
  },
}

/** The deployment's default sender (the environment's PROVIDER=twilio), registered in the fake too. */
export const ENV_TWILIO = {
  sid: `AC${'e3'.repeat(16)}`,
  token: 'env-twilio-token-5ecret-0123456789',
  from: 'whatsapp:+14155238886',
}
export const ENV_META = { phoneNumberId: '100000000000009', appSecret: 'env-meta-app-5ecret', verifyToken: 'env-verify-5ecret' }

/** Every credential value that is a secret: none may show in an answer, an audit row or a dump. */
export const SECRET_VALUES = [
  TWILIO_A.credentials.auth_token,
  TWILIO_B.credentials.auth_token,
  META_A.credentials.access_token,
  META_A.credentials.app_secret,
  META_A.credentials.verify_token,
  META_B.credentials.access_token,
  META_B.credentials.app_secret,
  META_B.credentials.verify_token,
]

/** The environment of an app whose default sender is Twilio through `twilio`, with Meta's API at `graph`. */
export function sendersEnv(twilio: FakeTwilio, graph: FakeGraph, env: Record<string, string> = {}): Record<string, string> {
  return {
    PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: ENV_TWILIO.sid,
    TWILIO_AUTH_TOKEN: ENV_TWILIO.token,
    TWILIO_FROM: ENV_TWILIO.from,
    TWILIO_API_BASE: twilio.url,
    TWILIO_CONTENT_API_BASE: twilio.url,
    META_API_BASE: graph.apiBase,
    META_PHONE_NUMBER_ID: ENV_META.phoneNumberId,
    META_APP_SECRET: ENV_META.appSecret,
    META_VERIFY_TOKEN: ENV_META.verifyToken,
    PUBLIC_BASE_URL: 'https://api.example.com',
    PROVIDER_TIMEOUT_MS: '5000',
    ...env,
  }
}

/** Registers the four senders' credentials (and the environment's) in the fakes. */
export function registerFakes(twilio: FakeTwilio, graph: FakeGraph): void {
  twilio.account(ENV_TWILIO.sid, ENV_TWILIO.token, { friendlyName: 'Deployment', numbers: [ENV_TWILIO.from.slice('whatsapp:'.length)] })
  twilio.account(TWILIO_A.credentials.account_sid, TWILIO_A.credentials.auth_token, {
    friendlyName: 'Toko A',
    numbers: [TWILIO_A.number],
  })
  twilio.account(TWILIO_B.credentials.account_sid, TWILIO_B.credentials.auth_token, {
    friendlyName: 'Toko B',
    numbers: [TWILIO_B.number],
  })
  graph.phone(META_A.credentials.phone_number_id, META_A.credentials.access_token, {
    display_phone_number: '62 811-0000-0001',
    verified_name: 'Warung A',
    quality_rating: 'GREEN',
    appSecret: META_A.credentials.app_secret,
  })
  graph.phone(META_B.credentials.phone_number_id, META_B.credentials.access_token, {
    display_phone_number: '62 811-0000-0002',
    verified_name: 'Warung B',
    quality_rating: 'YELLOW',
    appSecret: META_B.credentials.app_secret,
  })
}

export type SenderSpec = { number: string; credentials: Record<string, string> }

/** Creates a sender through the admin API; its id. */
export async function createSender(
  t: Pick<TestApp, 'admin'>,
  provider: string,
  spec: SenderSpec,
  extra: Record<string, unknown> = {},
): Promise<number> {
  const created = await t.admin('POST', '/senders', { provider, name: `${provider} ${spec.number}`, ...spec, ...extra })
  expect({ status: created.status, body: created.body }).toMatchObject({ status: 201 })
  return Number(created.body.data.id)
}

/** Gives `senderId` to the account through the admin API. */
export async function assign(t: Pick<TestApp, 'admin'>, accountId: number, senderId: number, makeDefault = false) {
  const answer = await t.admin('PUT', `/accounts/${accountId}/senders/${senderId}`, makeDefault ? { default: true } : undefined)
  expect(answer.status).toBe(200)
  return answer.body.data as { id: number; default: boolean; disabled: boolean; number: string; provider: string; name: string }[]
}

/** The four senders created: their ids. */
export async function fourSenders(t: Pick<TestApp, 'admin'>, extra: Record<string, unknown> = {}) {
  return {
    twilioA: await createSender(t, 'twilio', TWILIO_A, extra),
    twilioB: await createSender(t, 'twilio', TWILIO_B, extra),
    metaA: await createSender(t, 'meta', META_A, extra),
    metaB: await createSender(t, 'meta', META_B, extra),
  }
}

/** Basic auth as Twilio takes it. */
export const basic = (sid: string, token: string) => `Basic ${Buffer.from(`${sid}:${token}`).toString('base64')}`
