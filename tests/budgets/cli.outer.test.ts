// Outer ring (real time): the service and the command line run as child processes.
// The messaging limit from the command line, against a running service (a child process): a portfolio
// created with its tier, a sender created with its own tier then put in the portfolio, both shown with
// their use; a tier that is not one of WhatsApp's is refused before any call.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN_TOKEN } from '../helpers/app'
import { startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'

const root = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'cli-limit-'))
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
}, 60_000)
afterAll(async () => {
  await child?.stop()
  await dropDb()
  rmSync(dataDir, { recursive: true, force: true })
})

async function admin(...args: string[]) {
  const proc = Bun.spawn(['bun', join(root, 'src/cli/admin.ts'), ...args], {
    cwd: root,
    env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: new URL(child.url).port, DATABASE_URL: env.DATABASE_URL ?? '' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}

test('portfolios create/list/update, senders create/update --messaging-limit --portfolio, shown with their use', async () => {
  const made = await admin('portfolios', 'create', '--name', 'Toko Maju group', '--messaging-limit', '2000')
  expect({ code: made.code, err: made.err }).toEqual({ code: 0, err: '' })
  expect(made.out).toContain('portfolio 1 "Toko Maju group": 0/2,000 recipients in the last 24 h; senders: none yet')

  const sender = await admin(
    'senders',
    'create',
    '--provider',
    'simulator',
    '--name',
    'Toko',
    '--number',
    '+6281100005001',
    '--messaging-limit',
    '250',
    '--quiet',
  )
  expect(sender.code).toBe(0)
  const id = sender.out.trim()
  const shown = await admin('senders', 'show', id)
  expect(shown.out).toContain('messaging limit: 0/250 recipients in the last 24 h (its own tier)')

  const moved = await admin('senders', 'update', id, '--portfolio', 'Toko Maju group')
  expect(moved.code).toBe(0)
  expect(moved.out).toContain('messaging limit: 0/2,000 recipients in the last 24 h (portfolio "Toko Maju group"\'s, shared)')
  expect((await admin('senders', 'list')).out).toMatch(/LIMIT[\s\S]*0\/2000/)

  const raised = await admin('portfolios', 'update', '1', '--messaging-limit', 'unlimited')
  expect(raised.out).toContain(`portfolio 1 "Toko Maju group": unlimited; senders: ${id}`)
  expect(JSON.parse((await admin('portfolios', 'list', '--json')).out)[0].messaging_limit).toBeNull()

  const wrong = await admin('senders', 'update', id, '--messaging-limit', '300')
  expect(wrong.code).toBe(2)
  expect(wrong.err).toContain('--messaging-limit: expected 250, 2000, 10000, 100000 or unlimited')
  const nowhere = await admin('senders', 'update', id, '--portfolio', 'Nope')
  expect(nowhere.code).not.toBe(0)
  expect(nowhere.err).toContain('no portfolio is named "Nope"')
}, 60_000)
