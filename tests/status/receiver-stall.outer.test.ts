// Outer ring (real time): a TCP proxy between the service and PostgreSQL holds a statement back.
// A group commit of status callbacks whose statement never comes back (its connection went quiet: the
// proxy neither forwards it nor closes anything) is answered 503 after RECEIVE_DEADLINE_MS, so that the
// provider sends it again, and the callbacks that came meanwhile and after are received: without the
// deadline every later callback of the process waited behind it for ever (the fault test's stalls of
// issue 29). The stuck session is ended, so it holds no lock and no connection.
// (PostgreSQL only: the embedded database has a single connection, which the proxy cannot share.)

import { afterEach, expect, test } from 'bun:test'
import twilio from 'twilio'
import { readConfig } from '../../src/config'
import { createApp } from '../../src/app'
import { buildDeps } from '../../src/server'
import { RECEIVE_DEADLINE_MS } from '../../src/modules/status/receiver'
import { ADMIN_TOKEN } from '../helpers/app'
import { testDatabase, usingPostgres } from '../helpers/db'
import { poolThroughProxy, startPgProxy } from '../helpers/pg-proxy'

const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef'
const AUTH_TOKEN = 'tok_5ecret_auth_token_0123456789ab'
const PATH = '/provider/twilio/status'

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
}, 30_000)

test.skipIf(!usingPostgres())(
  'a status callback whose statement never comes back is answered 503 in time, and later ones are received',
  async () => {
    const db = await testDatabase()
    cleanups.push(() => db.drop())
    let release = () => {}
    const hold = new Promise<void>((resolve) => (release = resolve))
    cleanups.push(() => release())
    // The receiver's first statement (it takes the SIDs' locks): the first one sent is held back.
    const { proxy, database } = await poolThroughProxy(
      db.url!,
      (target) => startPgProxy(target, 'pg_advisory_xact_lock(', { hold }),
      cleanups,
    )
    const env = {
      ADMIN_TOKEN,
      PROVIDER: 'twilio',
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      TWILIO_FROM: 'whatsapp:+14155238886',
      PUBLIC_BASE_URL: 'https://api.example.com',
    }
    const { deps } = buildDeps(readConfig(env), database)
    const app = createApp(deps)
    const post = async (sid: string) => {
      const params = { MessageSid: sid, MessageStatus: 'delivered', AccountSid: ACCOUNT_SID }
      const started = performance.now()
      const response = await app.handle(
        new Request(`http://localhost${PATH}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-twilio-signature': twilio.getExpectedTwilioSignature(AUTH_TOKEN, `https://api.example.com${PATH}`, params),
          },
          body: new URLSearchParams(params).toString(),
        }),
      )
      return { status: response.status, body: (await response.json()) as any, ms: performance.now() - started }
    }

    const held = post('SM00000000000000000000000000000001')
    while (!proxy.held()) await Bun.sleep(20)
    // Arrives while the first one's statement is held: it waits for that group commit to end.
    const behind = post('SM00000000000000000000000000000002')

    const first = await held
    expect(first.status).toBe(503)
    expect(first.body.code).toBe('SERVICE_UNAVAILABLE')
    expect(first.ms).toBeGreaterThanOrEqual(RECEIVE_DEADLINE_MS - 100)
    expect(first.ms).toBeLessThan(RECEIVE_DEADLINE_MS + 3_000)
    const second = await behind
    expect(second.status).toBe(200)
    expect(second.body.data.changed).toBe(false) // its SID is not stored yet: parked
    expect((await post('SM00000000000000000000000000000003')).status).toBe(200)

    // The held statement's session was ended: nothing of it is left idle in its transaction.
    const left = async () =>
      (
        await db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and application_name = 'messaging-api' and state like 'idle in transaction%'`
      )[0]!.n
    const until = Date.now() + 5_000
    while ((await left()) > 0 && Date.now() < until) await Bun.sleep(50)
    expect(await left()).toBe(0)
    // The first report is parked once it is sent again, as the provider does after a 503.
    expect((await post('SM00000000000000000000000000000001')).status).toBe(200)
    const parked = await db.sql<{ message_sid: string }[]>`select message_sid from parked_reports order by message_sid`
    expect(parked.map((p) => p.message_sid)).toEqual([
      'SM00000000000000000000000000000001',
      'SM00000000000000000000000000000002',
      'SM00000000000000000000000000000003',
    ])
  },
  60_000,
)
