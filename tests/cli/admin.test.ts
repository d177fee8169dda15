// The admin command line against a running service (a child process), as an operator would use it.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startChild, type Child } from '../helpers/child'
import { createPostgresDatabase, usingPostgres } from '../helpers/db'

const dataDir = mkdtempSync(join(tmpdir(), 'cli-'))
let child: Child
let env: Record<string, string>
let dropDb = async () => {}

beforeAll(async () => {
  // No ADMIN_TOKEN: the service writes DATA_DIR/admin-token and the command line reads it there.
  env = { DATA_DIR: dataDir, ADMIN_TOKEN: '', SIM_DELIVERED_MS: '50', SIM_READ_MS: '100' }
  if (usingPostgres()) {
    const db = await createPostgresDatabase()
    env.DATABASE_URL = db.url
    dropDb = db.drop
  }
  child = await startChild(env)
})
afterAll(async () => {
  await child?.stop()
  await dropDb()
  rmSync(dataDir, { recursive: true, force: true })
})

function admin(...args: string[]) {
  const port = new URL(child.url).port
  const run = Bun.spawnSync(['bun', `${import.meta.dir}/../../src/cli/admin.ts`, ...args], {
    env: { ...process.env, ...env, PORT: port, DATABASE_URL: env.DATABASE_URL ?? '' },
  })
  return { code: run.exitCode, out: run.stdout.toString(), err: run.stderr.toString() }
}

test('the generated admin token is 0600 and found by the command line', () => {
  expect(statSync(join(dataDir, 'admin-token')).mode & 0o777).toBe(0o600)
  const list = admin('account', 'list', '--json')
  expect(list.code).toBe(0)
  expect(JSON.parse(list.out)).toMatchObject({ items: [], total: 0 })
})

test('quickstart prints a key once and a curl line that works', async () => {
  const quick = admin('quickstart')
  expect(quick.code).toBe(0)
  const key = /API key \(shown once, keep it now\): (pm_\w+)/.exec(quick.out)![1]!
  const curl = quick.out.split('\n').find((l) => l.startsWith('curl') && l.includes('/messages/send'))!
  expect(curl).toContain(key)
  const sent = Bun.spawnSync(['bash', '-c', curl])
  expect(JSON.parse(sent.stdout.toString())).toMatchObject({ success: true, data: { status: 'sent', to: '+6281234567890' } })
  const ledger = admin('ledger', '1')
  expect(ledger.out).toContain('charge')
  expect(ledger.out).toContain('opening balance')
  // and a dashboard link for a member of the demo account, which opens its set-password page
  const link = /^(http:\/\/\S+\/dashboard\/link\/\w+)$/m.exec(quick.out)![1]!
  expect(quick.out).toContain('as demo-1@example.com')
  const page = await fetch(link)
  expect(page.status).toBe(200)
  expect(await page.text()).toContain('demo-1@example.com')
})

test('operator create prints a one-time link that sets the password; a second operator with that e-mail is refused', async () => {
  const made = admin('operator', 'create', 'root@example.com')
  expect(made.code).toBe(0)
  const link = /^(http:\/\/\S+\/dashboard\/link\/\w+)$/m.exec(made.out)![1]!
  const set = await fetch(link, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    body: new URLSearchParams({ password: 'a long enough password' }).toString(),
    redirect: 'manual',
  })
  expect(set.status).toBe(303)
  expect(set.headers.getSetCookie().some((c) => c.startsWith('__Host-session='))).toBe(true)
  const again = admin('operator', 'create', 'ROOT@example.com')
  expect(again.code).toBe(1)
  expect(again.err).toContain('409')
  expect(admin('member', 'invite', '1', 'second@example.com').out).toMatch(/member second@example.com of account 1 invited/)
})

test('keys, top-ups, prices and errors', () => {
  expect(admin('account', 'create', 'Acme', '--balance', '500').out).toMatch(/account 2 "Acme" wa_balance 500/)
  expect(admin('key', 'create', '2', 'ERP').out).toMatch(/key \d+ "ERP" \(shown once, keep it now\): pm_/)
  expect(admin('key', 'deactivate', '2').out).toMatch(/is now inactive/)
  expect(admin('key', 'activate', '2').out).toMatch(/is now active/)
  expect(admin('topup', '2', '250', '--note', 'invoice 7').out).toContain('wa_balance 750')
  expect(admin('price', 'set', '350').out).toContain('cost_per_message 350 globally')
  expect(admin('price', 'set', '300', '--account', '2').out).toContain('for account 2')
  const missing = admin('topup', '999', '5')
  expect(missing.code).toBe(1)
  expect(missing.err).toContain('404 NOT_FOUND')
  expect(admin('nonsense').code).toBe(1)
})

test('the campaign worked example: template, segment, draft through the API, run, watch stats', async () => {
  const account = JSON.parse(admin('account', 'create', 'Shop', '--balance', '100000', '--json').out)
  const key = JSON.parse(admin('key', 'create', String(account.id), 'crm', '--json').out).key
  for (const [i, tag] of ['vip', 'VIP', 'other'].entries()) {
    await fetch(`${child.url}/api/v1/contacts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `C${i}`, phone: `08123456700${i}`, city: 'Bandung', tags: tag }),
    })
  }
  const template = JSON.parse(admin('template', 'create', String(account.id), 'promo', 'Hi {{name}} in {{city}}', '--json').out)
  expect(admin('segment', 'create', String(account.id), 'vips', 'vip').out).toContain('2 contacts now')
  const segmentId = JSON.parse(admin('segment', 'list', String(account.id), '--json').out).items[0].id
  const draft = await fetch(`${child.url}/api/v1/campaigns`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Promo', template_id: template.id, segment_id: segmentId }),
  }).then((r) => r.json() as Promise<any>)
  const id = String(draft.data.campaign.id)
  expect(admin('campaign', 'run', id).out).toMatch(/sending|sent/)
  let shown = ''
  for (let i = 0; i < 100 && !shown.includes('read 2'); i++) {
    await Bun.sleep(100)
    shown = admin('campaign', 'show', id).out
  }
  expect(shown).toContain('sent')
  expect(shown).toContain('total 2, sent 2, delivered 2, read 2, failed 0')
})
