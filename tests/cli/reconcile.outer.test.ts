// Outer ring (real time): the service and the command line run as child processes, Meta's Graph API a
// fake in this process. `reconcile --sender N [--month]` prints a Meta sender's month (the ledger beside
// the fake's pricing analytics of what it delivered), a difference in words, --json the figures; a bad
// month is exit 1 naming it, a missing --sender exit 2.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN_TOKEN } from '../helpers/app'
import { call, startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { fakeGraph } from '../helpers/fake-graph'
import { META_A } from '../helpers/senders'
import { formatTimestamp } from '../../src/lib/time'

const root = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'cli-reconcile-'))
const graph = fakeGraph()
const WABA = META_A.credentials.business_account_id
graph.phone(META_A.credentials.phone_number_id, META_A.credentials.access_token, { display_phone_number: '62 811-0000-0001' })
graph.accountOf.set(META_A.credentials.phone_number_id, WABA)

let child: Child
let env: Record<string, string>
let dropDb = async () => {}
let sender: number

beforeAll(async () => {
  env = { DATA_DIR: dataDir, ADMIN_TOKEN, META_API_BASE: graph.apiBase, WINDOW_CHECK: 'off', TIMEZONE: 'Asia/Jakarta' }
  if (usingPostgres()) {
    const db = await createMigratedPostgresDatabase()
    env.DATABASE_URL = db.url
    dropDb = db.drop
  }
  await premigrate(dataDir)
  child = await startChild(env)
  const created = await call(child.url, 'POST', '/admin/v1/senders', { provider: 'meta', name: 'Warung A', recipient_gap_ms: 0, ...META_A })
  expect(created.status).toBe(201)
  sender = created.body.data.id
  const account = await call(child.url, 'POST', '/admin/v1/accounts', { name: 'Toko', balance: 1000 })
  const accountId = account.body.data.id
  expect((await call(child.url, 'PUT', `/admin/v1/accounts/${accountId}/senders/${sender}`, { default: true })).status).toBe(200)
  const key = (await call(child.url, 'POST', `/admin/v1/accounts/${accountId}/keys`, { label: 'k' })).body.data.key
  const sent = await fetch(`${child.url}/api/v1/messages/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: '081234567890', body: 'Halo' }),
  })
  expect(sent.status).toBe(200)
}, 60_000)
afterAll(async () => {
  await child?.stop()
  graph.stop()
  await dropDb()
  rmSync(dataDir, { recursive: true, force: true })
})

type Run = { code: number | null; out: string; err: string }
async function admin(args: string[]): Promise<Run> {
  const shell = { ...process.env, ...env, HOST: '127.0.0.1', PORT: new URL(child.url).port, DATABASE_URL: env.DATABASE_URL ?? '' }
  const proc = Bun.spawn(['bun', join(root, 'src/cli/admin.ts'), ...args], { cwd: root, env: shell, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}

test('reconcile: agreement, then a message Meta counted that the ledger never had', async () => {
  const month = formatTimestamp(new Date(), 'Asia/Jakarta')!.slice(0, 7)
  const agreed = await admin(['reconcile', '--sender', String(sender)])
  expect({ code: agreed.code, err: agreed.err }).toEqual({ code: 0, err: '' })
  expect(agreed.out).toStartWith(`sender ${sender}, ${month} (Asia/Jakarta): WhatsApp Business Account ${WABA}, number 6281100000001\n`)
  expect(agreed.out).toMatch(/\bservice\s+1\s+1\s+0\s+1\s+1\s+0\s+agrees\n/)
  expect(agreed.out).toEndWith('no differences: the ledger and Meta agree\n')

  graph.delivered.push({ ...graph.delivered[0]!, id: 'wamid.not-ours', category: 'MARKETING', type: 'REGULAR' })
  const differs = await admin(['reconcile', '--sender', String(sender), '--month', month])
  expect(differs.code).toBe(0)
  expect(differs.out).toMatch(/\bmarketing\s+0\s+0\s+0\s+1\s+0\s+0\.0411\s+differs: Meta \+1\n/)
  expect(differs.out).toMatch(
    /1 difference:\n {2}volume \d{4}-\d{2}-\d{2} marketing: Meta counted 1 marketing message more than the ledger charged\n$/,
  )
  const json = JSON.parse((await admin(['reconcile', '--sender', String(sender), '--json'])).out)
  expect(json.differences.map((d: any) => [d.kind, d.category, d.ours, d.meta])).toEqual([['volume', 'marketing', 0, 1]])
  expect(json.totals).toMatchObject({ messages: 1, meta_volume: 2 })
}, 60_000)

test('the errors: a month that is not YYYY-MM is exit 1 naming it; no --sender is exit 2', async () => {
  const bad = await admin(['reconcile', '--sender', String(sender), '--month', '2026-13'])
  expect(bad.code).toBe(1)
  expect(bad.err).toContain('month: expected YYYY-MM')
  const none = await admin(['reconcile'])
  expect(none.code).toBe(2)
  expect(none.err).toContain('--sender')
}, 60_000)
