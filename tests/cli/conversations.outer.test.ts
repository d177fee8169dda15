// Outer ring (real time): the service and the command line run as child processes.
// Conversations on the deployment's number (shared by every account without senders of its own) from
// the command line, against a running service (a child process): who holds a customer's conversation,
// and an operator moving it (with the messages already received) to another account.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN_TOKEN } from '../helpers/app'
import { call, startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'

const root = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'cli-conversations-'))
let child: Child
let env: Record<string, string>
let dropDb = async () => {}

beforeAll(async () => {
  env = { DATA_DIR: dataDir, ADMIN_TOKEN }
  if (usingPostgres()) {
    const db = await createMigratedPostgresDatabase()
    env.DATABASE_URL = db.url
    dropDb = db.drop
  }
  await premigrate(dataDir)
  child = await startChild(env)
})
afterAll(async () => {
  await child?.stop()
  await dropDb()
  rmSync(dataDir, { recursive: true, force: true })
})

type Run = { code: number | null; out: string; err: string }
async function admin(...args: string[]): Promise<Run> {
  const proc = Bun.spawn(['bun', join(root, 'src/cli/admin.ts'), ...args], {
    cwd: root,
    env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: new URL(child.url).port, DATABASE_URL: env.DATABASE_URL ?? '' },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}

/** A new account with a balance and a key: its id and key. */
async function shop(name: string) {
  const id = (await call(child.url, 'POST', '/admin/v1/accounts', { name, balance: 1000 })).body.data.id as number
  const key = (await call(child.url, 'POST', `/admin/v1/accounts/${id}/keys`, { label: 'cli' })).body.data.key as string
  return { id, key }
}

test("conversation holders and conversation move: the first account to write holds the customer's replies until an operator moves them", async () => {
  const d = await shop('Toko D')
  const t = await shop('Toko T')
  const phone = '081234567801'
  for (const { key } of [d, t]) {
    const sent = await call(child.url, 'POST', '/api/v1/messages/send', { to: phone, body: 'Pesanan dikirim' }, key)
    expect(sent.status).toBe(200)
  }
  expect((await admin('simulator', 'inbound', phone, '--body', 'kapan sampai?')).code).toBe(0)

  const held = await admin('conversation', 'holders', '--phone', phone)
  expect([held.code, held.err]).toEqual([0, ''])
  expect(held.out).toMatch(new RegExp(`\\+6281234567801 +default +${d.id} +first_message`))

  const moved = await admin('conversation', 'move', phone, '--account', String(t.id), '--messages')
  expect([moved.code, moved.err]).toEqual([0, ''])
  expect(moved.out).toBe(`+6281234567801's conversation now belongs to account ${t.id}, with 1 received message(s)\n`)
  const json = JSON.parse((await admin('conversation', 'holders', '--account', String(t.id), '--json')).out)
  expect(json.items).toMatchObject([{ sender_id: null, phone: '+6281234567801', account_id: t.id, source: 'operator' }])
  const inbound = await call(child.url, 'GET', `/api/v1/inbound?phone=${phone}`, undefined, t.key)
  expect(inbound.body.data.items.map((m: { text: string }) => m.text)).toEqual(['kapan sampai?'])

  const usage = await admin('conversation', 'move', phone)
  expect(usage.code).toBe(2)
  const refused = await admin('conversation', 'move', 'not-a-phone', '--account', String(t.id))
  expect([refused.code, refused.err]).toEqual([1, expect.stringContaining('phone: not a valid phone number')])
})
