// Outer ring (real time): the service and the command line run as child processes.
// Opt-outs from the command line, against a running service (a child process): add, list, remove,
// import (a file and standard input, with a bad line reported and exit code 1) and export, whose CSV
// imports again into another account.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN_TOKEN } from '../helpers/app'
import { call, startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'

const root = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'cli-optouts-'))
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
async function admin(args: string[], stdin?: string): Promise<Run> {
  const proc = Bun.spawn(['bun', join(root, 'src/cli/admin.ts'), ...args], {
    cwd: root,
    env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: new URL(child.url).port, DATABASE_URL: env.DATABASE_URL ?? '' },
    stdin: stdin === undefined ? 'ignore' : new Blob([stdin]),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}

test('opt-outs add, list, remove, import and export from the command line', async () => {
  const account = (await call(child.url, 'POST', '/admin/v1/accounts', { name: 'Toko CLI' })).body.data.id
  const other = (await call(child.url, 'POST', '/admin/v1/accounts', { name: 'Toko Lain' })).body.data.id
  const a = String(account)

  const added = await admin(['opt-outs', 'add', '0812-3456-7001', '--account', a])
  expect([added.code, added.err]).toEqual([0, ''])
  expect(added.out).toContain('+6281234567001 is now opted out of account')
  expect((await admin(['opt-outs', 'add', '+6281234567001', '--account', a])).out).toContain('was opted out already')

  const file = join(dataDir, 'in.csv')
  writeFileSync(file, 'phone\n081234567002\nnot-a-phone\n081234567001\n')
  const imported = await admin(['opt-outs', 'import', '--account', a, '--file', file])
  expect(imported.code).toBe(1)
  expect(imported.out).toContain('1 accepted, 1 duplicates, 1 invalid')
  expect(imported.out).toContain('line 3: phone: not a valid phone number')
  const piped = await admin(['opt-outs', 'import', '--account', a, '--file', '-'], '+6281234567003\n')
  expect([piped.code, piped.out.trim()]).toEqual([0, '1 accepted, 0 duplicates, 0 invalid'])

  const list = await admin(['opt-outs', 'list', '--account', a])
  expect(list.code).toBe(0)
  expect(list.out).toMatch(/PHONE\s+OPTED OUT\s+SOURCE/)
  expect(list.out).toContain('3 opted-out phones, newest first')
  const quiet = await admin(['opt-outs', 'list', '--account', a, '--quiet'])
  expect(quiet.out.trim().split('\n')).toEqual(['+6281234567003', '+6281234567002', '+6281234567001'])

  const exported = await admin(['opt-outs', 'export', '--account', a])
  expect(exported.code).toBe(0)
  expect(exported.out.split('\r\n')[0]).toBe('phone,opted_out_at,source,detail,by')
  const back = join(dataDir, 'out.csv')
  writeFileSync(back, exported.out)
  const again = await admin(['opt-outs', 'import', '--account', String(other), '--file', back, '--json'])
  expect(JSON.parse(again.out)).toEqual({ accepted: 3, duplicates: 0, invalid: [] })

  const removed = await admin(['opt-outs', 'remove', '081234567001', '--account', a])
  expect([removed.code, removed.out.trim()]).toEqual([0, `+6281234567001 is opted back in to account ${account}`])
  const gone = await admin(['opt-outs', 'remove', '081234567001', '--account', a])
  expect(gone.code).toBe(1)
  expect(gone.err).toContain('404 NOT_FOUND')
  expect((await admin(['opt-outs', 'list', '--account', a, '--quiet'])).out.trim().split('\n')).toHaveLength(2)
})
