// Outer ring (real time): a real PostgreSQL streaming replica, with replay paused to make lag.
// DATABASE_READ_URL against a real streaming replica: a PostgreSQL cluster of the test's own (the
// machine's server need not allow replication, and the test edits no system file), a replica of it
// made with pg_basebackup, and replay paused to make lag on demand. A caller's lists never show a
// state older than its own last write (they read the primary while the replica lags behind it);
// others' lists, and the caller's once the replica has caught up, read the replica. PostgreSQL mode only.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync, chownSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import { readConfig } from '../../src/config'
import { createApp } from '../../src/app'
import { buildDeps } from '../../src/server'
import { openDatabase, type Database } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import type { Deps } from '../../src/deps'
import { freePort } from '../helpers/child'
import { usingPostgres } from '../helpers/db'
import { ADMIN_TOKEN, type TestApp } from '../helpers/app'
import { dashboardUser } from '../helpers/web'

const version = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort().pop() : undefined
const bin = (name: string) => `/usr/lib/postgresql/${version}/bin/${name}`
const runnable = usingPostgres() && version !== undefined && existsSync(bin('pg_basebackup'))
if (!usingPostgres()) console.log('replica test skipped: DATABASE_URL is unset (PostgreSQL mode only)')
else if (!runnable) console.log('replica test skipped: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin')

// PostgreSQL refuses to run as root: the clusters belong to the postgres user then.
const asRoot = process.getuid?.() === 0
const as = (command: string[]) => (asRoot ? ['runuser', '-u', 'postgres', '--', ...command] : command)

function run(command: string[]) {
  const done = Bun.spawnSync(as(command), { stdout: 'pipe', stderr: 'pipe' })
  if (done.exitCode !== 0) throw new Error(`${command.join(' ')}: ${done.stderr.toString()}${done.stdout.toString()}`)
}

let dir = ''
let primary: Database | undefined
let replicaAdmin: postgres.Sql | undefined
let deps: Deps | undefined
let app: ReturnType<typeof createApp>
const started: string[] = []

async function call(method: string, path: string, key: string, body?: unknown) {
  const response = await app.handle(
    new Request(`http://localhost${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  )
  return { status: response.status, body: (await response.json()) as any }
}
const admin = (method: string, path: string, body?: unknown) => call(method, `/admin/v1${path}`, ADMIN_TOKEN, body)

async function account(balance: number) {
  const created = await admin('POST', '/accounts', { name: `acct-${Math.random().toString(36).slice(2, 8)}`, balance })
  expect(created.status).toBe(201)
  const id = created.body.data.id as number
  expect((await admin('PUT', '/price', { cost_per_message: 100, account_id: id })).status).toBe(200)
  const key = await admin('POST', `/accounts/${id}/keys`, { label: 'replica' })
  return { id, key: key.body.data.key as string }
}

/** Until the replica has replayed everything the primary has written so far. */
async function caughtUp() {
  const [{ lsn }] = (await primary!.sql`select pg_current_wal_lsn()::text as lsn`) as unknown as [{ lsn: string }]
  for (let i = 0; i < 200; i++) {
    const [row] = await replicaAdmin!<{ ok: boolean }[]>`select pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn as ok`
    if (row!.ok) return
    await Bun.sleep(50)
  }
  throw new Error('the replica did not catch up within 10 s')
}

beforeAll(async () => {
  if (!runnable) return
  dir = mkdtempSync('/tmp/replica-test-')
  if (asRoot) chownSync(dir, Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString()), 0)
  const [primaryPort, replicaPort] = [freePort(), freePort()]
  const options = (port: number) => `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`
  // initdb's trust setup lets replication connections in from 127.0.0.1; wal_level is replica by default.
  run([bin('initdb'), '-D', join(dir, 'primary'), '-A', 'trust', '-U', 'postgres', '--no-sync'])
  run([bin('pg_ctl'), '-D', join(dir, 'primary'), '-o', options(primaryPort), '-l', join(dir, 'primary.log'), '-w', 'start'])
  started.push(join(dir, 'primary'))
  const server = postgres(`postgres://postgres@127.0.0.1:${primaryPort}/postgres`, { max: 1, onnotice: () => {} })
  await server`create database app`
  await server.end()
  const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/app`
  const replicaUrl = `postgres://postgres@127.0.0.1:${replicaPort}/app`
  primary = await openDatabase({ databaseUrl: primaryUrl, poolMax: 5 })
  await migrate(primary.sql)
  // The replica starts from a base backup of the migrated database and streams what follows.
  run([
    bin('pg_basebackup'),
    '-h',
    '127.0.0.1',
    '-p',
    String(primaryPort),
    '-U',
    'postgres',
    '-D',
    join(dir, 'replica'),
    '-R',
    '-X',
    'stream',
    '-c',
    'fast',
  ])
  run([bin('pg_ctl'), '-D', join(dir, 'replica'), '-o', options(replicaPort), '-l', join(dir, 'replica.log'), '-w', 'start'])
  started.push(join(dir, 'replica'))
  replicaAdmin = postgres(replicaUrl, { max: 1, onnotice: () => {} })
  const config = readConfig({
    DATABASE_URL: primaryUrl,
    DATABASE_READ_URL: replicaUrl,
    ADMIN_TOKEN,
    WINDOW_CHECK: 'off',
    PROVIDER_RECIPIENT_GAP_MS: '0',
    SIM_DELIVERED_MS: '60000',
  })
  deps = buildDeps(config, primary).deps
  app = createApp(deps)
}, 60_000)

afterAll(async () => {
  await deps?.reads.close()
  await replicaAdmin?.end({ timeout: 5 })
  await primary?.close()
  for (const cluster of started.reverse()) Bun.spawnSync(as([bin('pg_ctl'), '-D', cluster, '-m', 'immediate', 'stop']))
  if (dir) rmSync(dir, { recursive: true, force: true })
}, 30_000)

const sids = (list: { body: any }) => (list.body.data.items as { message_sid: string }[]).map((m) => m.message_sid)

test.skipIf(!runnable)(
  "while the replica lags, a caller's lists read the primary after its own write, others' the replica; after it catches up, the replica",
  async () => {
    const alice = await account(10_000)
    const bob = await account(10_000)
    const bobSent = await call('POST', '/api/v1/messages/send', bob.key, { to: '081234500002', body: 'before the lag' })
    expect(bobSent.status).toBe(200)
    await caughtUp()
    // Bob's first list: the replica has his send, so it answers (and forgets his mark).
    expect(sids(await call('GET', '/api/v1/messages', bob.key))).toEqual([bobSent.body.data.message_id])

    await replicaAdmin!`select pg_wal_replay_pause()`
    const sent = await call('POST', '/api/v1/messages/send', alice.key, { to: '081234500001', body: 'during the lag' })
    expect(sent.status).toBe(200)
    const sid = sent.body.data.message_id as string
    // The replica has not replayed Alice's send (it is not there)...
    const [onReplica] = await replicaAdmin!<{ n: number }[]>`select count(*)::int as n from messages where account_id = ${alice.id}`
    expect(onReplica!.n).toBe(0)
    // ...yet her list, her balance and her message show it: they read the primary.
    expect(sids(await call('GET', '/api/v1/messages', alice.key))).toEqual([sid])
    expect((await call('GET', '/api/v1/balance', alice.key)).body.data.wa_balance).toBe(9_900)
    expect((await call('GET', `/api/v1/messages/${sid}`, alice.key)).status).toBe(200)
    // The admin's last write (the accounts) is replayed: its ledger listing of Alice comes from the
    // replica, without her charge. Not stale for the admin: the charge is not the admin's write.
    const ledger = await admin('GET', `/accounts/${alice.id}/ledger`)
    expect(ledger.body.data.items.map((r: { kind: string }) => r.kind)).toEqual(['topup'])

    await replicaAdmin!`select pg_wal_replay_resume()`
    await caughtUp()
    expect(sids(await call('GET', '/api/v1/messages', alice.key))).toEqual([sid])
    expect((await admin('GET', `/accounts/${alice.id}/ledger`)).body.data.items.map((r: { kind: string }) => r.kind)).toEqual([
      'charge',
      'topup',
    ])

    // Caught up, Alice reads the replica again: an inbound message the admin writes in while replay is
    // paused (not her write) is on the primary only, and her inbound list does not show it until replay resumes.
    await replicaAdmin!`select pg_wal_replay_pause()`
    const wroteIn = await admin('POST', '/simulator/inbound', { phone: '081234500001', body: 'Terima kasih' })
    expect(wroteIn.status).toBe(200)
    const [onPrimary] = await primary!.sql<{ n: number }[]>`select count(*)::int as n from inbound_messages where account_id = ${alice.id}`
    expect(onPrimary!.n).toBe(1)
    expect((await call('GET', '/api/v1/inbound', alice.key)).body.data.items).toEqual([])
    await replicaAdmin!`select pg_wal_replay_resume()`
    await caughtUp()
    expect((await call('GET', '/api/v1/inbound', alice.key)).body.data.items.map((i: { id: number }) => i.id)).toEqual([
      wroteIn.body.data.inbound_id,
    ])
  },
  60_000,
)

test.skipIf(!runnable)(
  'the dashboard page after a form shows the change while the replica lags; a member who has not written reads the replica',
  async () => {
    const shim = { app, admin } as unknown as TestApp
    const shop = await account(10_000)
    const other = await account(10_000)
    const m = await dashboardUser(shim, `m${shop.id}@example.com`, 'a long password 1', shop.id)
    const o = await dashboardUser(shim, `m${other.id}@example.com`, 'a long password 2', other.id)
    // The other account wrote to a customer, so what the customer writes in is the other account's.
    expect((await call('POST', '/api/v1/messages/send', other.key, { to: '081211110009', body: 'Halo' })).status).toBe(200)
    await caughtUp()
    expect((await o.client.get('/dashboard/contacts')).status).toBe(200)

    await replicaAdmin!`select pg_wal_replay_pause()`
    try {
      let page = await m.client.get('/dashboard/contacts')
      page = await m.client.post('/dashboard/contacts', { _csrf: page.csrf!, name: 'Sari Lagging', phone: '0812-1111-0002' })
      expect([page.status, page.location]).toEqual([303, '/dashboard/contacts'])
      const [onReplica] = await replicaAdmin!<{ n: number }[]>`select count(*)::int as n from contacts where account_id = ${shop.id}`
      expect(onReplica!.n).toBe(0)
      // The page after the form reads the primary; so does the page after the account's API key's write.
      expect((await m.client.get('/dashboard/contacts')).text).toContain('Sari Lagging')
      expect((await call('POST', '/api/v1/contacts', shop.key, { name: 'Via Key', phone: '081211110003' })).status).toBe(201)
      expect((await m.client.get('/dashboard/contacts')).text).toContain('Via Key')
      // The customer writes in (the admin's write, not the other account's): a contact on the primary
      // only, not on the page of the other account's member, who has not written since: the replica's.
      expect((await admin('POST', '/simulator/inbound', { phone: '081211110009', body: 'Hai', name: 'Named Inbound' })).status).toBe(200)
      const [named] = await primary!.sql<
        { n: number }[]
      >`select count(*)::int as n from contacts where account_id = ${other.id} and name = 'Named Inbound'`
      expect(named!.n).toBe(1)
      expect((await o.client.get('/dashboard/contacts')).text).not.toContain('Named Inbound')
    } finally {
      await replicaAdmin!`select pg_wal_replay_resume()`
    }
    await caughtUp()
    expect((await o.client.get('/dashboard/contacts')).text).toContain('Named Inbound')
  },
  60_000,
)

test('with the embedded database, DATABASE_READ_URL is refused at start with one line that names it', () => {
  const env: Record<string, string | undefined> = { ...process.env, DATABASE_URL: undefined }
  env.DATABASE_READ_URL = 'postgres://postgres@127.0.0.1:5432/replica'
  env.DATA_DIR = join(mkdtempSync('/tmp/replica-embedded-'), 'data')
  const done = Bun.spawnSync(['bun', join(import.meta.dir, '../../src/main.ts')], { env, stdout: 'pipe', stderr: 'pipe' })
  expect(done.exitCode).toBe(2)
  expect(done.stderr.toString().trim()).toBe(
    'configuration error: DATABASE_READ_URL: a replica of PostgreSQL needs DATABASE_URL; the embedded database has no replica',
  )
  // Refused before anything was opened or written.
  expect(existsSync(env.DATA_DIR)).toBe(false)
  rmSync(join(env.DATA_DIR, '..'), { recursive: true, force: true })
})
