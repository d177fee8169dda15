// Senders' credentials at rest. The database holds none in clear: after senders were created, changed,
// checked (one with a wrong token), used to send (one refusal echoing the token it got) and rotated,
// a real pg_dump of the database (with DATABASE_URL), or every row of every table as text (embedded),
// contains no credential value. Rotation: senders sealed under K1; an instance with SECRETS_KEY=K2 and
// SECRETS_KEY_PREVIOUS=K1 seals them again under K2 (POST /admin/v1/secrets/rotate); an instance with
// only K2 then sends through them, and one with only K1 cannot: its hand-off fails saying why, refunded.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync } from 'node:fs'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph, graphError } from '../helpers/fake-graph'
import { usingPostgres } from '../helpers/db'
import { buildDeps } from '../../src/server'
import { createApp } from '../../src/app'
import { encodeKey, generateKey, keyIdOf } from '../../src/lib/secrets'
import { TestClock } from '../../src/lib/clock'
import { FRESH_MS } from '../../src/modules/senders/directory'
import type { Config } from '../../src/config'
import { ADMIN_TOKEN } from '../helpers/app'
import { assign, fourSenders, META_A, META_B, registerFakes, SECRET_VALUES, sendersEnv, TWILIO_A, TWILIO_B } from '../helpers/senders'

const twilio = fakeTwilio()
const graph = fakeGraph()
registerFakes(twilio, graph)

const K1 = generateKey()
const K2 = generateKey()
const WRONG_TOKEN = 'EAAwrongTokenForTheDump5ecret0000'

// Every instance runs on this clock; a send runs with clock.run, so that a pace's wait passes on it.
const clock = new TestClock()
let t: TestApp
let ids: Awaited<ReturnType<typeof fourSenders>>
let account: { accountId: number; key: string }
const send = (body: unknown) => clock.run(t.api('POST', '/messages/send', account.key, body))
beforeAll(async () => {
  t = await testApp({ clock, env: sendersEnv(twilio, graph, { SECRETS_KEY: encodeKey(K1) }) })
  ids = await fourSenders(t, { recipient_gap_ms: 0 })
  account = await t.account(1000)
  for (const id of Object.values(ids)) await assign(t, account.accountId, id)
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})

/** Another instance on the same database, with its own keys (and nothing else changed). */
function instance(keys: Pick<Config, 'secretsKey' | 'secretsKeysPrevious'>) {
  const app = createApp(buildDeps({ ...t.config, ...keys }, t.db, { clock }).deps)
  return async (method: string, path: string, body?: unknown, key = ADMIN_TOKEN) => {
    const response = await clock.run(
      app.handle(
        new Request(`http://localhost${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      ),
    )
    return { status: response.status, body: (await response.json()) as any }
  }
}

/** Every table's rows as JSON text, as the embedded database holds them. */
async function rowsAsText(): Promise<{ text: string; tables: string[] }> {
  const tables = await t.db.sql<{ name: string }[]>`
    select table_name as name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`
  let text = ''
  for (const { name } of tables) {
    const rows = await t.db.sql<{ row: string }[]>`select row_to_json(r)::text as row from ${t.db.sql(name)} r`
    text += `${name}\n${rows.map((r) => r.row).join('\n')}\n`
  }
  return { text, tables: tables.map((r) => r.name) }
}

function pgDumpBinary(): string {
  const onPath = Bun.which('pg_dump')
  if (onPath) return onPath
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)) : []
  const found = versions.map((v) => `/usr/lib/postgresql/${v}/bin/pg_dump`).find((p) => existsSync(p))
  if (!found) throw new Error('pg_dump not found (on PATH or under /usr/lib/postgresql/*/bin)')
  return found
}

function expectNoCredential(text: string, what: string) {
  for (const secret of [...SECRET_VALUES, WRONG_TOKEN]) {
    expect({ what, secret, found: text.includes(secret) }).toEqual({ what, secret, found: false })
  }
}

describe('the database holds no credential in clear', () => {
  test('after creating, changing, checking, sending and a refusal that echoes the token: the dump has none', async () => {
    // Sends through every sender (their tokens went over the wire), a check with a wrong token, and a
    // refusal whose message repeats the token it was given (the service keeps the message, not the token).
    for (const from of Object.values(ids)) {
      const answer = await send({ to: '081234567890', body: 'dump', from: String(from) })
      expect(answer.status).toBe(200)
    }
    expect((await t.admin('PATCH', `/senders/${ids.metaB}`, { credentials: { access_token: WRONG_TOKEN } })).status).toBe(200)
    expect((await t.admin('POST', `/senders/${ids.metaB}/check`)).body.data.last_check.ok).toBe(false)
    graph.answer = (request) => graphError(401, 190, `Invalid OAuth access token - ${request.headers.get('authorization')}`)
    try {
      const refused = await send({ to: '081234567890', body: 'echo', from: String(ids.metaB) })
      expect(refused.status).toBe(502)
      expect(refused.body.error).toContain('Invalid OAuth access token')
      expectNoCredential(JSON.stringify(refused.body), 'the answer')
    } finally {
      graph.answer = null
    }
    expect(
      (await t.admin('PATCH', `/senders/${ids.metaB}`, { credentials: { access_token: META_B.credentials.access_token } })).status,
    ).toBe(200)
    for (const id of Object.values(ids)) expect((await t.admin('POST', `/senders/${id}/check`)).body.data.last_check.ok).toBe(true)

    const { text, tables } = await rowsAsText()
    expect(tables).toContain('senders')
    // What is not secret is there (the dump is the real one), sealed credentials too.
    expect(text).toContain(TWILIO_A.credentials.account_sid)
    expect(text).toContain(META_A.credentials.phone_number_id)
    expect(text).toMatch(/v1\.[0-9a-f]{8}\./)
    expectNoCredential(text, 'rows of every table')

    if (usingPostgres()) {
      const dump = Bun.spawnSync([pgDumpBinary(), '--no-owner', '--dbname', t.db.url!], { stdout: 'pipe', stderr: 'pipe' })
      expect({ exitCode: dump.exitCode, stderr: dump.stderr.toString() }).toEqual({ exitCode: 0, stderr: '' })
      const sqlText = dump.stdout.toString()
      expect(sqlText).toContain('COPY public.senders')
      expect(sqlText).toContain(TWILIO_B.credentials.account_sid)
      expectNoCredential(sqlText, 'pg_dump')
    }
  }, 60_000)
})

describe('rotation', () => {
  test('K1 → K2: rotate with K1 as previous; only-K2 sends through the senders, only-K1 fails clearly and is refunded', async () => {
    const k1k2 = instance({ secretsKey: K2, secretsKeysPrevious: [K1] })
    const onlyK2 = instance({ secretsKey: K2, secretsKeysPrevious: [] })
    const onlyK1 = instance({ secretsKey: K1, secretsKeysPrevious: [] })
    const sealedUnder = async () =>
      (await t.db.sql<{ credentials: string }[]>`select credentials from senders order by id`).map((r) => r.credentials.split('.')[1])
    expect(new Set(await sealedUnder())).toEqual(new Set([keyIdOf(K1)]))

    // Before rotation, an instance with only K2 cannot open them.
    const early = await onlyK2(
      'POST',
      '/api/v1/messages/send',
      { to: '081234567890', body: 'too early', from: String(ids.twilioA) },
      account.key,
    )
    expect(early.status).toBe(502)

    const rotated = await k1k2('POST', '/admin/v1/secrets/rotate')
    expect([rotated.status, rotated.body.data]).toEqual([200, { rotated: 4, current: 0, key_id: keyIdOf(K2) }])
    expect(new Set(await sealedUnder())).toEqual(new Set([keyIdOf(K2)]))
    const again = await k1k2('POST', '/admin/v1/secrets/rotate')
    expect(again.body.data).toEqual({ rotated: 0, current: 4, key_id: keyIdOf(K2) })
    // The only-K2 instance read the senders it could not open before: it reads them again within
    // the directory's freshness (2 s), and the rotation changed them.
    await clock.advance(FRESH_MS)
    const [audit] = await t.db.sql<{ detail: unknown }[]>`
      select detail from audit_log where action = 'credentials rotated' order by id limit 1`
    expect(audit!.detail).toEqual({ rotated: 4, key_id: keyIdOf(K2) })

    // Only K2: every sender sends, with its own credentials.
    twilio.reset()
    graph.reset()
    for (const from of Object.values(ids)) {
      const answer = await onlyK2(
        'POST',
        '/api/v1/messages/send',
        { to: '081234567890', body: `k2 ${from}`, from: String(from) },
        account.key,
      )
      expect({ from, status: answer.status }).toEqual({ from, status: 200 })
    }
    expect(twilio.requests.map((r) => [r.account, r.status])).toEqual([
      [TWILIO_A.credentials.account_sid, 201],
      [TWILIO_B.credentials.account_sid, 201],
    ])
    expect(graph.requests.map((r) => r.status)).toEqual([200, 200])
    expect((await onlyK2('POST', `/admin/v1/senders/${ids.twilioB}/check`)).body.data.last_check.ok).toBe(true)

    // Only K1: the hand-off fails saying why, and is refunded; nothing reaches the provider.
    twilio.reset()
    const before = await money(t, account.accountId)
    const failed = await onlyK1(
      'POST',
      '/api/v1/messages/send',
      { to: '081234567890', body: 'k1 only', from: String(ids.twilioA) },
      account.key,
    )
    expect([failed.status, failed.body.code]).toEqual([502, 'BAD_GATEWAY'])
    expect(failed.body.error).toContain("credentials do not open with this service's SECRETS_KEY")
    expect(twilio.requests).toHaveLength(0)
    expect(await money(t, account.accountId)).toEqual(before)
    const [row] = await t.db.sql<{ status: string; error_message: string; refunded: boolean }[]>`
      select status, error_message, refunded_at is not null as refunded from messages where id = ${failed.body.id}`
    expect(row).toMatchObject({ status: 'failed', refunded: true })
    expect(row!.error_message).toContain('SECRETS_KEY')
    const check = await onlyK1('POST', `/admin/v1/senders/${ids.twilioA}/check`)
    expect(check.body.data.last_check).toMatchObject({ ok: false })
    expect(check.body.data.last_check.detail).toContain('SECRETS_KEY')

    // Still nothing in clear after rotation.
    expectNoCredential((await rowsAsText()).text, 'rows after rotation')
  }, 60_000)
})
