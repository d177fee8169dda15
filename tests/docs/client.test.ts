// The integrator's document is usable by code generators: openapi-typescript generates types from
// /docs/json as served by the running service, TypeScript checks them with a small caller written
// against openapi-fetch, and the caller sends a message and reads the balance through them.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readConfig } from '../../src/config'
import { startService, type Running } from '../../src/server'
import { ADMIN_TOKEN } from '../helpers/app'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'

const ROOT = join(import.meta.dir, '..', '..')

// Written as an integrator would, against the generated `paths` only (schema.ts, checked in full: only
// the libraries' own declarations are skipped). The @ts-expect-error lines
// prove the types are real: with loose (any) types they would be unused, and tsc fails on that.
const CALLER = `import createClient from 'openapi-fetch'
import type { components, paths } from './schema'

export type MessageStatusEvent = components['schemas']['MessageStatusEvent']

export async function run(baseUrl: string, key: string) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${key}\` } })

  const sent = await client.POST('/api/v1/messages/send', { body: { to: '081234567890', body: 'from a generated client' } })
  if (!sent.data) throw new Error(\`send failed: \${sent.error?.code}\`)
  // 200 sent with its SID, or 202 queued (throttled) with its id: the status tells them apart.
  if (sent.data.data.status !== 'sent') throw new Error(\`queued as \${sent.data.data.id}\`)
  const messageId: string = sent.data.data.message_id
  const cost: number = sent.data.data.cost

  const balance = await client.GET('/api/v1/balance')
  if (!balance.data) throw new Error(\`balance failed: \${balance.error?.code}\`)
  const waBalance: number = balance.data.data.wa_balance

  const message = await client.GET('/api/v1/messages/{message_sid}', { params: { path: { message_sid: messageId } } })
  const status: 'queued' | 'sent' | 'delivered' | 'read' | 'failed' | undefined = message.data?.data.status

  const refused = await client.POST('/api/v1/messages/send', { body: { to: '12345', body: 'not a phone' } })
  const code: string | undefined = refused.error?.code
  type Code = NonNullable<typeof refused.error>['code']
  // @ts-expect-error: \`code\` is one of the documented codes, not any string
  void ((wrong: Code = 'NOT_A_CODE') => wrong)

  // @ts-expect-error: \`to\` is a string
  void (() => client.POST('/api/v1/messages/send', { body: { to: 81234567890, body: 'x' } }))
  // @ts-expect-error: the integrator's document has no admin API
  void (() => client.GET('/admin/v1/accounts'))
  // @ts-expect-error: wa_balance is a number
  void ((b: typeof balance.data) => b.data.wa_balance.toUpperCase())

  return { messageId, cost, waBalance, status, refused: { status: refused.response.status, code } }
}
`

const TSCONFIG = {
  compilerOptions: {
    target: 'ESNext',
    module: 'ESNext',
    moduleResolution: 'bundler',
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    lib: ['ESNext', 'DOM'],
    types: [],
  },
  files: ['schema.ts', 'caller.ts'],
}

async function run(cmd: string[], cwd: string) {
  const proc = Bun.spawn(cmd, { cwd, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 50_000)
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(timer)
  return { code, output: `${out}${err}` }
}

describe('a client generated from /docs/json', () => {
  let service: Running
  const cleanups: (() => unknown)[] = []
  let dir = ''

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'docs-client-data-'))
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
    await premigrate(dataDir)
    const env: Record<string, string> = {
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      ADMIN_TOKEN,
      LOG_LEVEL: 'error',
      SIM_DELIVERED_MS: '600000',
      SIM_READ_MS: '600000',
    }
    if (usingPostgres()) {
      const db = await createMigratedPostgresDatabase()
      env.DATABASE_URL = db.url
      cleanups.push(db.drop)
    }
    service = await startService(readConfig(env))
    dir = mkdtempSync(join(tmpdir(), 'docs-client-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    // The simulator reports nothing while the test runs: the message stays `sent`.
    // The caller resolves openapi-fetch (and tsc its types) from the project's dependencies.
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  }, 60_000)

  afterAll(async () => {
    await service?.stop()
    for (const cleanup of cleanups.reverse()) await cleanup()
  }, 30_000)

  async function admin(method: string, path: string, body: unknown) {
    const response = await fetch(`${service.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return (await response.json()) as any
  }

  test('typechecks with a caller, then sends and reads the balance through it', async () => {
    const generated = await run(
      [process.execPath, join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'), `${service.url}/docs/json`, '-o', 'schema.ts'],
      dir,
    )
    expect(generated).toMatchObject({ code: 0 })
    writeFileSync(join(dir, 'caller.ts'), CALLER)
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG))
    const checked = await run([process.execPath, join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], dir)
    expect(checked).toEqual({ code: 0, output: '' })

    const account = await admin('POST', '/accounts', { name: 'generated client', balance: 1000 })
    const key = await admin('POST', `/accounts/${account.data.id}/keys`, { label: 'generated' })
    const caller = await import(join(dir, 'caller.ts'))
    const result = await caller.run(service.url, key.data.key as string)
    expect(result).toEqual({
      messageId: expect.stringMatching(/^SM[0-9a-f]{32}$/),
      cost: expect.any(Number),
      waBalance: 1000 - result.cost,
      status: 'sent',
      refused: { status: 422, code: 'VALIDATION_ERROR' },
    })
    expect(result.cost).toBeGreaterThan(0)
  }, 60_000)
})
