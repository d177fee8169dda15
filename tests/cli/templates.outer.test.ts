// Outer ring (real time): the service and the command line run as child processes.
// Approved templates from the command line, against a running service (a child process) whose
// simulator requires templates outside the 24-hour window: template bind, show and unbind with their
// errors, simulator inbound, and the README's approved-template example run as written.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { ADMIN_TOKEN } from '../helpers/app'
import { shBlock } from '../helpers/docs'
import { startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'

const root = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'cli-templates-'))
let child: Child
let env: Record<string, string>
let dropDb = async () => {}

beforeAll(async () => {
  env = { DATA_DIR: dataDir, ADMIN_TOKEN, SIM_REQUIRE_TEMPLATE: 'true', SIM_DELIVERED_MS: '50', SIM_READ_MS: '100' }
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
function run(cmd: string[]): Run {
  const shell = { ...process.env, ...env, HOST: '127.0.0.1', PORT: new URL(child.url).port, DATABASE_URL: env.DATABASE_URL ?? '' }
  const done = Bun.spawnSync(cmd, { cwd: root, env: shell })
  return { code: done.exitCode, out: done.stdout.toString(), err: done.stderr.toString() }
}
const admin = (...args: string[]) => run(['bun', join(root, 'src/cli/admin.ts'), ...args])
const ok = (r: Run) => {
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' })
  return r.out
}

test('template bind, show and unbind; the service refusing a binding is exit 1 with its reason', () => {
  const accountId = ok(admin('account', 'create', 'Bindings', '--quiet')).trim()
  const id = ok(admin('template', 'create', accountId, 'Pickup', 'Hi {{name}}, pick up in {{city}}', '--quiet')).trim()
  const sid = 'HX0123456789abcdef0123456789abcdef'

  expect(ok(admin('template', 'bind', id, 'twilio', sid, '--variables', 'city, name'))).toBe(
    `template ${id} bound: twilio: ${sid}, variables city, name\n`,
  )
  const meta = JSON.parse(ok(admin('template', 'bind', id, 'meta', 'pickup', '--language', 'id', '--variables', 'name', '--json')))
  expect(meta).toEqual({ provider: 'meta', ref: 'pickup', language: 'id', variables: ['name'], updated_at: expect.any(String) })
  expect(ok(admin('template', 'show', id))).toBe(
    [
      `template ${id} "Pickup": Hi {{name}}, pick up in {{city}}`,
      '  meta: pickup (id), variables name',
      `  twilio: ${sid}, variables city, name`,
      '',
    ].join('\n'),
  )

  for (const [args, reason] of [
    [['meta', 'pickup', '--variables', 'name'], 'language: required for meta templates (e.g. en_US, id)'],
    [['twilio', 'HX12'], 'ref: must be a Content SID: HX followed by 32 hex characters'],
    [['twilio', sid, '--variables', 'email'], `variables[0]: "email" is not a placeholder of template ${id} (it uses: name, city)`],
    [['sms', 'x'], 'provider: must be one of simulator, twilio, meta (the providers that send approved templates)'],
  ] as const) {
    const refused = admin('template', 'bind', id, ...args)
    expect({ args, code: refused.code, out: refused.out }).toEqual({ args, code: 1, out: '' })
    expect(refused.err).toStartWith(`admin: 422 VALIDATION_ERROR: ${reason} (request id `)
  }

  expect(ok(admin('template', 'unbind', id, 'twilio'))).toBe(`template ${id} is no longer bound for twilio\n`)
  const again = admin('template', 'unbind', id, 'twilio')
  expect(again.code).toBe(1)
  expect(again.err).toStartWith(`admin: 404 NOT_FOUND: template ${id} has no twilio binding`)
  const bare = ok(admin('template', 'create', accountId, 'Bare', 'Hello', '--quiet')).trim()
  expect(ok(admin('template', 'show', bare))).toBe(`template ${bare} "Bare": Hello\n  no approved template bound: sent as free-form text\n`)

  // Usage mistakes never reach the service.
  expect(admin('template', 'bind', id, 'twilio').err).toContain(
    'template bind: missing REF\nusage: bun run admin template bind TEMPLATE_ID PROVIDER REF [--language CODE] [--variables NAMES]',
  )
  expect(admin('template', 'bind', 'x', 'twilio', sid).err).toContain("TEMPLATE_ID: expected an id (a positive integer), got 'x'")
})

test("simulator inbound opens a number's window; a bad number is refused", () => {
  const opened = ok(admin('simulator', 'inbound', '0812-5555-0001'))
  expect(opened).toMatch(
    /^\+6281255550001 wrote to the deployment's number \(inbound message \d+\), but the message belongs to no account .*: no message\.received event went out\. Name the account with --account, or its number with --sender\.\n$/,
  )
  expect(JSON.parse(ok(admin('simulator', 'inbound', '081255550001', '--json')))).toEqual({
    phone: '+6281255550001',
    sender: null,
    account_id: null,
    window_until: expect.any(String),
    inbound_id: expect.any(Number),
  })
  // Naming an account that never messaged the number: still no account's (the shared number's rule), and it says what to do.
  const account = ok(admin('account', 'create', 'Writes in', '--quiet')).trim()
  expect(ok(admin('simulator', 'inbound', '081255550003', '--account', account))).toEndWith(
    `no message.received event went out. Account ${account} sends through the deployment's number, which it shares: ` +
      `send +6281255550003 a message from account ${account} first (its replies then belong to it), or give the account a sender of its own.\n`,
  )
  // With --body: an inbound message too.
  const wrote = JSON.parse(ok(admin('simulator', 'inbound', '081255550002', '--body', 'Halo', '--name', 'Budi', '--json')))
  expect(wrote).toEqual({
    phone: '+6281255550002',
    sender: null,
    account_id: null,
    window_until: expect.any(String),
    inbound_id: expect.any(Number),
  })
  expect(ok(admin('simulator', 'inbound', '081255550002', '--body', 'Lagi'))).toMatch(
    /^\+6281255550002 wrote to the deployment's number \(inbound message \d+\)/,
  )
  const bad = admin('simulator', 'inbound', '12345')
  expect(bad.code).toBe(1)
  expect(bad.err).toStartWith('admin: 422 VALIDATION_ERROR: phone: not a valid Indonesian phone number')
  const help = ok(admin('simulator', 'inbound', '--help'))
  expect(help).toStartWith('usage: bun run admin simulator inbound PHONE')
  expect(help).toContain('SIM_REQUIRE_TEMPLATE=true')
})

test("the README's approved-template example runs as written: the template goes, free-form only after the number writes in", () => {
  const block = shBlock('simulator inbound 081234567890', ['docs/guides/templates.md'])
  expect(block).toBeDefined()
  const script = `set -e\neval "$(bun run admin quickstart | grep '^export')"\n${block!.replaceAll('http://127.0.0.1:3000', child.url)}`
  const ran = run(['bash', '-c', script])
  expect(ran.err).not.toContain('admin:')
  expect(ran.code).toBe(0)
  const answers = ran.out
    .split('\n')
    .filter((line) => line.startsWith('{"success"'))
    .map((line) => JSON.parse(line))
  expect(answers.map((a) => [a.success, a.code ?? a.data.status])).toEqual([
    [true, 'sent'], // the approved template
    [false, 'WINDOW_CLOSED'], // free-form before the number wrote in: refused before charging (WINDOW_CHECK=provider)
    [true, 'sent'], // free-form after it wrote in
  ])
  expect(answers[1].error).toContain('send one with template_id')
  expect(ran.out).toMatch(
    /\+6281234567890 wrote to the deployment's number \(inbound message \d+\), a message of account \d+: free-form messages from the deployment's number to \+6281234567890 are accepted until /,
  )
})
