// Outer ring (real time): the service and the command line run as child processes, as an operator runs them.
// The admin command line against a running service (a child process), as an operator would use it:
// its help and typo answers, the unreachable-service message, quickstart, text and JSON output, and
// the README's quick-start and command-line examples run as written.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { version } from '../../package.json'
import { freePort, startChild, type Child } from '../helpers/child'
import { shBlock } from '../helpers/docs'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { until } from '../helpers/wait'

const root = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'cli-'))
let child: Child
let env: Record<string, string>
let dropDb = async () => {}

beforeAll(async () => {
  // No ADMIN_TOKEN: the service writes DATA_DIR/admin-token and the command line reads it there.
  env = { DATA_DIR: dataDir, ADMIN_TOKEN: '', SIM_DELIVERED_MS: '50', SIM_READ_MS: '100' }
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

/** The environment an operator's shell would have: the service's own HOST, PORT and DATA_DIR. */
const shellEnv = (extra: Record<string, string> = {}) => ({
  ...process.env,
  ...env,
  HOST: '127.0.0.1',
  PORT: new URL(child.url).port,
  DATABASE_URL: env.DATABASE_URL ?? '',
  ...extra,
})

function run(cmd: string[], extra: Record<string, string> = {}): Run {
  const done = Bun.spawnSync(cmd, { cwd: root, env: shellEnv(extra) })
  return { code: done.exitCode, out: done.stdout.toString(), err: done.stderr.toString() }
}
const admin = (...args: string[]) => run(['bun', join(root, 'src/cli/admin.ts'), ...args])
const adminWith = (extra: Record<string, string>, ...args: string[]) => run(['bun', join(root, 'src/cli/admin.ts'), ...args], extra)
/** A shell script run from the project's directory, as the README's examples are. */
const bash = (script: string) => run(['bash', '-c', script])
const json = (r: Run) => {
  expect(r.err.replace(/^\$ .*\n/gm, '')).toBe('')
  expect(r.code).toBe(0)
  return JSON.parse(r.out)
}

/** The docs' ```sh block containing `marker` (README.md or docs/), pointed at this test's service. */
function readmeBlock(marker: string): string {
  const block = shBlock(marker)
  expect(block).toBeDefined()
  return block!.replaceAll('http://127.0.0.1:3000', child.url).trimEnd()
}

/** Shell commands of a script, continuation lines joined, comments dropped. */
const commandsOf = (script: string) =>
  script
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('#'))

const exportLine = (out: string) => out.split('\n').find((line) => line.startsWith('export KEY='))!
const exported = (line: string) => Object.fromEntries([...line.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]))

test('the generated admin token is 0600 and found by the command line', () => {
  expect(statSync(join(dataDir, 'admin-token')).mode & 0o777).toBe(0o600)
  expect(json(admin('account', 'list', '--json'))).toMatchObject({ items: [], total: 0 })
  expect(admin('account', 'list').out).toBe('no accounts\n')
})

test('help, -h and --help print the commands; without a command the same, with exit 2', () => {
  const help = admin('help')
  expect(help.code).toBe(0)
  expect(help.out).toStartWith("bun run admin: the operator's command line")
  expect(help.out).toContain('\n  topup ACCOUNT_ID AMOUNT ')
  expect(help.out).toContain('\n  --url URL ')
  expect(admin('-h')).toEqual(help)
  expect(admin('--help')).toEqual(help)
  expect(admin()).toEqual({ ...help, code: 2 })
})

test('every command has its own help: usage, a description, and an example whose command and flags exist', () => {
  const help = admin('help').out
  const list = help.slice(help.indexOf('commands:\n'), help.indexOf('\n\n', help.indexOf('commands:\n')))
  const names = [...list.matchAll(/^ {2}([a-z][a-z-]*(?: [a-z]+)?)(?= |$)/gm)].map((m) => m[1]!).filter((name) => name !== 'help')
  expect(names).toContain('quickstart')
  expect(names).toContain('account create')
  expect(names).toContain('replay-failed')
  for (const name of names) {
    const own = admin(...name.split(' '), '--help')
    expect(own.code).toBe(0)
    expect(own.out).toStartWith(`usage: bun run admin ${name}`)
    expect(own.out.split('\n\n')[1]).toMatch(/^[A-Z][^]+\.$/) // the description, in sentences
    const example = /^example:\n {2}(.+)$/m.exec(own.out)![1]!
    expect(example).toStartWith(`bun run admin ${name} `.trimEnd())
    // The example as written, with --help added: parsed (an unknown flag would be exit 2), nothing sent.
    const checked = bash(`ACCOUNT_ID=1 KEY_ID=1 CAMPAIGN_ID=1; ${example} --help`)
    expect({ name, code: checked.code, out: checked.out }).toEqual({ name, code: 0, out: own.out })
  }
  for (const name of ['quickstart', 'key create', 'replay-failed'])
    expect(admin('help', ...name.split(' '))).toEqual(admin(...name.split(' '), '-h'))
  // a group: its subcommands
  const group = admin('key', '--help')
  expect(group.code).toBe(0)
  for (const sub of ['create', 'list', 'activate', 'deactivate']) expect(group.out).toContain(`\n  key ${sub} `)
  expect(admin('help', 'key')).toEqual(group)
}, 240_000) // two processes a command, about 60 commands: over a minute with both CI runs on a slow 2-core machine

test('a mistyped command, subcommand or flag: exit 2, naming it and the closest one, and nothing is done', () => {
  const cases: [string[], string][] = [
    [['topup2', '1', '5'], "unknown command 'topup2'; did you mean 'topup'?"],
    [['qiuckstart'], "unknown command 'qiuckstart'; did you mean 'quickstart'?"],
    [['acount', 'list'], "unknown command 'acount'; did you mean 'account'?"],
    [['account', 'lst'], "unknown subcommand 'lst' of 'account'; did you mean 'account list'?"],
    [['account', 'create', 'Typo Ltd', '--balence', '5'], "unknown flag '--balence' for 'account create'; did you mean '--balance'?"],
    [['account', 'list', '--jsno'], "unknown flag '--jsno' for 'account list'; did you mean '--json'?"],
    [['ledger', '1', '--limt=5'], "unknown flag '--limt' for 'ledger'; did you mean '--limit'?"],
    [['help', 'tpoup'], "unknown command 'tpoup'; did you mean 'topup'?"],
    [['topup2', '--help'], "unknown command 'topup2'; did you mean 'topup'?"],
  ]
  for (const [args, message] of cases) {
    const typo = admin(...args)
    expect({ args, code: typo.code, out: typo.out }).toEqual({ args, code: 2, out: '' })
    expect(typo.err).toStartWith(`admin: ${message}\n`)
  }
  // nothing close: no guess, a pointer to the list
  const far = admin('frobnicate')
  expect(far.code).toBe(2)
  expect(far.err).toBe("admin: unknown command 'frobnicate'\nrun `bun run admin help` for the commands\n")
  // arguments: missing, extra, not a number; each with the command's usage
  expect(admin('topup', '1').err).toContain('topup: missing AMOUNT\nusage: bun run admin topup ACCOUNT_ID AMOUNT [--note TEXT]')
  expect(admin('account', 'create', 'A', 'B').err).toContain("account create: unexpected argument 'B'")
  expect(admin('topup', 'one', '5').err).toContain("ACCOUNT_ID: expected an id (a positive integer), got 'one'")
  expect(admin('replay-failed', '1').err).toContain('replay-failed: missing --since TIME')
  expect(admin('key').err).toContain("'key' needs a subcommand: create, list, activate, deactivate")
  expect(json(admin('account', 'list', '--json')).total).toBe(0)
})

test('the command line loads nothing of the service: the models give it types only', async () => {
  const built = await Bun.build({ entrypoints: [join(root, 'src/cli/admin.ts')], target: 'bun', metafile: true })
  const inputs = built.metafile!.inputs as Record<string, { imports: { path: string; kind: string }[] }>
  // What a start loads: the static imports from the entry.
  const loaded = new Set<string>()
  const visit = (path: string) => {
    if (loaded.has(path) || !inputs[path]) return
    loaded.add(path)
    for (const imported of inputs[path]!.imports) if (imported.kind !== 'dynamic-import') visit(imported.path)
  }
  visit('src/cli/admin.ts')
  expect(loaded).toContain('src/cli/commands.ts')
  expect([...loaded].filter((path) => path.startsWith('src/modules/') || path.includes('node_modules/'))).toEqual([])
  // Loaded on demand by one command only: restore opens the embedded database itself (PGlite), the service being
  // stopped; partitions opens the database itself too.
  const onDemand = Object.entries(inputs)
    .filter(([path]) => path.startsWith('src/cli/'))
    .flatMap(([path, input]) => input.imports.filter((i) => i.kind === 'dynamic-import').map((i) => `${path} -> ${i.path}`))
  expect([...new Set(onDemand)].sort()).toEqual([
    'src/cli/backup.ts -> src/db/backup.ts',
    'src/cli/partitions.ts -> src/db/client.ts',
    'src/cli/partitions.ts -> src/db/partitions.ts',
  ])
})

test('ready: exit 0 when /readyz answers 200, 1 when it answers otherwise or nothing answers; no admin token needed', async () => {
  // No token anywhere: neither ADMIN_TOKEN nor a DATA_DIR holding one.
  const noToken = { ADMIN_TOKEN: '', DATA_DIR: join(dataDir, 'nowhere') }
  const port = new URL(child.url).port
  expect(adminWith(noToken, 'ready')).toEqual({ code: 0, out: `ready: http://127.0.0.1:${port}/readyz answered 200\n`, err: '' })
  const json = JSON.parse(adminWith(noToken, 'ready', '--json').out)
  expect(json).toEqual({
    url: `http://127.0.0.1:${port}/readyz`,
    status: 200,
    ready: true,
    answer: { success: true, data: { status: 'ready' } },
  })

  const closed = adminWith({ ...noToken, PORT: String(freePort()) }, 'ready')
  expect(closed.code).toBe(1)
  expect(closed.err).toContain('connection refused')

  // A service that answers, not ready (its database down): its answer is printed, exit 1.
  const notReady = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: () => Response.json({ success: false, error: 'database unreachable', code: 'NOT_READY' }, { status: 503 }),
  })
  try {
    // Not spawnSync: the server answers from this process's event loop.
    const answered = Bun.spawn(['bun', join(root, 'src/cli/admin.ts'), 'ready', '--url', `http://127.0.0.1:${notReady.port}`], {
      env: shellEnv(noToken),
      stdout: 'pipe',
    })
    expect({ code: await answered.exited, out: await new Response(answered.stdout).text() }).toEqual({
      code: 1,
      out: `not ready: http://127.0.0.1:${notReady.port}/readyz answered HTTP 503: NOT_READY database unreachable\n`,
    })
  } finally {
    notReady.stop(true)
  }
})

test('--version prints the package version', () => {
  expect(admin('--version')).toEqual({ code: 0, out: `${version}\n`, err: '' })
})

test('an unreachable service: the URL tried and how to point elsewhere, exit 1, no stack trace', () => {
  const port = freePort() // closed again: nothing listens there
  const viaPort = adminWith({ PORT: String(port) }, 'account', 'list')
  const viaUrl = admin('account', 'list', '--url', `http://127.0.0.1:${port}/`)
  for (const [failed, origin] of [
    [viaPort, `from HOST=127.0.0.1 PORT=${port}`],
    [viaUrl, 'from --url'],
  ] as const) {
    expect(failed.code).toBe(1)
    expect(failed.out).toBe('')
    expect(failed.err).toStartWith(`admin: cannot reach the service at http://127.0.0.1:${port} (${origin}): connection refused\n`)
    expect(failed.err).toContain('start it with: bun run start')
    expect(failed.err).toContain('--url http://HOST:PORT, or with the PORT and HOST it was started with')
    expect(failed.err).not.toMatch(/^\s+at /m)
  }
  // and a service that answers, but not with this token
  const wrong = adminWith({ ADMIN_TOKEN: 'not-the-token-of-this-service' }, 'account', 'list')
  expect(wrong.code).toBe(1)
  expect(wrong.err).toContain('401 AUTH_INVALID_KEY')
  expect(wrong.err).toContain(`ADMIN_TOKEN is not the admin token of the service at ${child.url}`)
})

test('quickstart: the export line and the calls of the README and docs/start/quick-start.md work; run again, the same account with a new working key', async () => {
  const first = admin('quickstart')
  expect(first.code).toBe(0)
  const vars = exported(exportLine(first.out))
  expect(Object.keys(vars)).toEqual(['KEY', 'ACCOUNT_ID', 'KEY_ID'])
  expect(first.out).toContain(`account ${vars.ACCOUNT_ID} "Demo account" created: balance 100,000`)

  // The calls it prints are the README's and the quick start's (docs/start/quick-start.md), with this
  // service's URL; run as printed after the export line.
  const readme = readmeBlock('/api/v1/balance -H')
  expect(shBlock('/api/v1/balance -H', ['docs/start/quick-start.md'])).toBe(shBlock('/api/v1/balance -H', ['README.md']))
  expect(first.out).toContain(`\n${readme}\n`)
  const [balance, send, list] = commandsOf(readme).map((call) => JSON.parse(bash(`${exportLine(first.out)}\n${call}`).out))
  expect(balance).toMatchObject({ success: true, data: { wa_balance: 100_000 } })
  expect(send).toMatchObject({ success: true, data: { status: 'sent', to: '+6281234567890' } })
  expect(list.data.items.map((m: { message_sid: string }) => m.message_sid)).toContain(send.data.message_id)

  // a dashboard link for a member of the demo account, which opens its set-password page
  const link = /^(http:\/\/\S+\/dashboard\/link\/\w+)$/m.exec(first.out)![1]!
  expect(first.out).toContain(`as demo-${vars.ACCOUNT_ID}@example.com`)
  const page = await fetch(link)
  expect(page.status).toBe(200)
  expect(await page.text()).toContain(`demo-${vars.ACCOUNT_ID}@example.com`)

  // Again: the same account (found by its name), untouched balance, a new key; both keys work.
  const before = json(admin('account', 'show', vars.ACCOUNT_ID!, '--json'))
  const second = admin('quickstart')
  expect(second.code).toBe(0)
  const again = exported(exportLine(second.out))
  expect(again.ACCOUNT_ID).toBe(vars.ACCOUNT_ID)
  expect(again.KEY).not.toBe(vars.KEY)
  expect(second.out).toContain(`account ${vars.ACCOUNT_ID} "Demo account" found by its name: balance 99,999`)
  expect(second.out).toContain('--topup N adds to it')
  expect(second.out).toContain(`sign in at ${child.url}/dashboard as demo-${vars.ACCOUNT_ID}@example.com (invited by an earlier quickstart`)
  expect(second.out).toContain(`if its link is lost, make a new one: bun run admin user link demo-${vars.ACCOUNT_ID}@example.com)`)
  expect(json(admin('account', 'show', vars.ACCOUNT_ID!, '--json'))).toEqual(before)
  const demos = json(admin('account', 'list', '--json')).items.filter((a: { name: string }) => a.name === 'Demo account')
  expect(demos).toHaveLength(1)
  for (const key of [vars.KEY, again.KEY]) {
    const answer = await fetch(`${child.url}/api/v1/balance`, { headers: { authorization: `Bearer ${key}` } })
    expect(answer.status).toBe(200)
  }

  // --topup adds to the balance, only when asked
  const topped = admin('quickstart', '--topup', '500')
  expect(topped.out).toContain('found by its name, topped up by 500: balance 100,499')

  // The README's other form: the shell takes the export line itself.
  const evaluated = bash(`${readmeBlock('eval "$(bun run admin quickstart | grep \'^export\')"')}\necho "$ACCOUNT_ID $KEY"`)
  expect(evaluated.code).toBe(0)
  const [accountId, key] = evaluated.out.trim().split(' ')
  expect(accountId).toBe(vars.ACCOUNT_ID)
  expect(key).toMatch(/^pm_\w+$/)

  // The quick start's bulk of two and the messages already read, as written.
  const bulkBlock = readmeBlock("'Idempotency-Key: order-1001'")
  const [bulk, read] = commandsOf(bulkBlock).map((call) => JSON.parse(bash(`${exportLine(first.out)}\n${call}`).out))
  expect(bulk).toMatchObject({ success: true })
  expect(bulk.data.results.map((r: { to: string; status: string }) => [r.to, r.status])).toEqual([
    ['+6281234567890', 'sent'],
    ['+6281234567891', 'sent'],
  ])
  expect(read).toMatchObject({ success: true })
})

test("the README's command-line examples run as written, with the quickstart's variables", () => {
  const ran = bash(
    `set -e\neval "$(bun run admin quickstart | grep '^export')"\n${readmeBlock('bun run admin account create "Acme Retail"')}`,
  )
  expect(ran.err).not.toContain('admin:')
  expect(ran.code).toBe(0)
  expect(ran.out).toMatch(/^account \d+ "Acme Retail" created: balance 500,000/m)
  expect(ran.out).toMatch(/^key \d+ "ERP production" of account \d+ \(shown once, keep it now\): pm_\w+$/m)
  expect(ran.out).toMatch(/is now inactive\n(.|\n)*is now active\n/)
  expect(ran.out).toMatch(/^account \d+ topped up by 250,000: balance [\d,]+$/m)
  expect(ran.out).toContain('price 350 a message, for every account without its own price\n')
  expect(ran.out).toMatch(/^price 300 a message for account \d+ \(its own price\)$/m)
  expect(ran.out).toContain('\n  "items": [\n')
})

test("the inbound guide's simulator example runs as written: the customer's answer belongs to the account that wrote first", () => {
  const ran = bash(`set -e\neval "$(bun run admin quickstart | grep '^export')"\n${readmeBlock('simulator inbound 081234567891')}`)
  expect(ran.err).not.toContain('admin:')
  expect(ran.code).toBe(0)
  // curl prints no newline after an answer, so the next command's line follows it on the same line.
  const [sent, inbound] = ran.out
    .split(/\n|(?<=\})(?=\+62)/)
    .filter((line) => line.startsWith('{"success"'))
    .map((line) => JSON.parse(line))
  expect(sent.data.status).toBe('sent')
  expect(ran.out).toMatch(/\+6281234567891 wrote to the deployment's number \(inbound message \d+\), a message of account \d+/)
  expect(inbound.data.items[0]).toMatchObject({ phone: '+6281234567891', name: 'Budi', text: 'Sudah bayar', type: 'text' })
  expect(inbound.data.items[0].account_id).toBeNumber()
})

test("the README's campaign example runs as written: template, segment, a draft through the API, run, stats", async () => {
  const ran = bash(
    `set -e\neval "$(bun run admin quickstart | grep '^export')"\n${readmeBlock('campaign run "$CAMPAIGN_ID"')}\necho\necho "campaign=$CAMPAIGN_ID"`,
  )
  expect(ran.err).not.toContain('admin:')
  expect(ran.code).toBe(0)
  const id = /^campaign=(\d+)$/m.exec(ran.out)![1]!
  expect(ran.out).toMatch(new RegExp(`^campaign ${id} "November promo": (sending|sent)$`, 'm'))
  const shown = await until(
    () => admin('campaign', 'show', id).out,
    (out) => out.includes('read 3'),
  )
  expect(shown).toMatch(new RegExp(`^campaign ${id} "November promo": sent\n  total 3, sent 3, delivered 3, read 3, failed 0\n`))
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
  expect(again.err).toMatch(/^admin: 409 CONFLICT: .+ \(request id [\w-]+\)\n$/)
  const accountId = admin('account', 'create', 'Members', '--quiet').out.trim()
  const invited = admin('member', 'invite', accountId, 'second@example.com').out
  expect(invited).toContain(`member second@example.com of account ${accountId} invited`)

  // A lost link: the operator (password set) gets a reset link, by e-mail in any case; the member
  // (still invited) a new invitation, by id; each works, and the member's first link no longer does.
  const reset = admin('user', 'link', 'Root@Example.com')
  expect(reset).toMatchObject({ code: 0, err: '' })
  expect(reset.out).toStartWith('new password-reset link for operator root@example.com; earlier links of theirs no longer work\n')
  expect((await fetch(/^(http:\/\/\S+\/dashboard\/link\/\w+)$/m.exec(reset.out)![1]!)).status).toBe(200)
  const users = json(admin('user', 'list', '--json')).items as { id: number; email: string }[]
  const member = users.find((u) => u.email === 'second@example.com')!
  const invitation = json(admin('user', 'link', String(member.id), '--json'))
  expect(invitation).toMatchObject({ id: member.id, email: 'second@example.com', role: 'member', kind: 'invite' })
  expect((await fetch(invitation.link)).status).toBe(200)
  expect((await fetch(/^(http:\/\/\S+\/dashboard\/link\/\w+)$/m.exec(invited)![1]!)).status).toBe(404)
  expect(admin('user', 'list').out).toMatch(
    new RegExp(`^ *${member.id} +second@example\\.com +member +${accountId} +invited +\\d{4}-`, 'm'),
  )
  const unknown = admin('user', 'link', 'nobody@example.com')
  expect(unknown).toEqual({ code: 1, out: '', err: 'admin: no user with the e-mail nobody@example.com (see: bun run admin user list)\n' })
})

test('price set --late-failures: refund or keep late failures charged, shown by price set and price show', () => {
  const id = admin('account', 'create', 'Late Failures', '--quiet').out.trim()
  expect(admin('price', 'show', '--account', id).out).toMatch(
    /^price [\d,]+ a message for account \d+ \(the global price\)\nlate failures \(failed after the provider accepted them\): refunded\nby category: /,
  )
  const kept = admin('price', 'set', '250', '--account', id, '--late-failures', 'charge')
  expect(kept).toEqual({
    code: 0,
    out:
      `price 250 a message for account ${id} (its own price)\nlate failures (failed after the provider accepted them): kept charged\n` +
      'by category: marketing 250 (cost per message), utility 250 (cost per message), authentication 250 (cost per message), ' +
      'service 250 (cost per message)\n' +
      "Meta's pricing reports: settle each message to the category Meta reports\n",
    err: '',
  })
  expect(json(admin('price', 'show', '--account', id, '--json'))).toMatchObject({
    cost_per_message: 250,
    account_id: Number(id),
    account_override: true,
    refund_late_failures: false,
  })
  // Without the flag the choice stays; with it, it changes.
  expect(json(admin('price', 'set', '260', '--account', id, '--json')).refund_late_failures).toBe(false)
  expect(admin('price', 'set', '260', '--account', id, '--late-failures', 'refund').out).toContain('): refunded\n')
  // Categories' own prices (none removes one) and the settlement choice.
  const categories = json(
    admin('price', 'set', '260', '--account', id, '--marketing', '700', '--utility', '300', '--settle', 'keep', '--json'),
  )
  expect(categories).toMatchObject({ prices: { marketing: 700, utility: 300, authentication: 260, service: 260 }, settle: 'keep' })
  expect(json(admin('price', 'set', '260', '--account', id, '--marketing', 'none', '--json')).prices.marketing).toBe(260)
  const wrong = admin('price', 'set', '260', '--account', id, '--late-failures', 'maybe')
  expect(wrong).toEqual({
    code: 2,
    out: '',
    err: "admin: --late-failures: expected refund or charge, got 'maybe'\nsee: bun run admin price set --help\n",
  })
  expect(json(admin('price', 'show', '--account', id, '--json'))).toMatchObject({ cost_per_message: 260, refund_late_failures: true })
})

test('text output: aligned tables with headers, counts in the right number, amounts grouped; --json only the JSON; --quiet only ids', async () => {
  const created = admin('account', 'create', 'Table Test', '--balance', '1234567', '--quiet')
  expect(created.out).toMatch(/^\d+\n$/)
  const id = created.out.trim()
  expect(admin('account', 'show', id).out).toContain('balance 1,234,567, price ')

  // account list: a header, one row per account, columns aligned, the count under it
  const page = json(admin('account', 'list', '--json'))
  const direct = await fetch(`${child.url}/admin/v1/accounts`, {
    headers: { authorization: `Bearer ${readFileSync(join(dataDir, 'admin-token'), 'utf8').trim()}` },
  }).then((r) => r.json() as Promise<{ data: unknown }>)
  expect(page).toEqual(direct.data) // the answer's data, nothing added
  const lines = admin('account', 'list').out.split('\n')
  const header = lines[0]!
  expect(header).toMatch(/^ *ID +NAME +BALANCE +PRICE +CREATED$/)
  const rows = lines.slice(1, lines.indexOf(''))
  expect(rows).toHaveLength(page.items.length)
  const nameAt = header.indexOf('NAME')
  const balanceEnd = header.indexOf('BALANCE') + 'BALANCE'.length - 1
  page.items.forEach((account: { id: number; name: string }, i: number) => {
    const row = rows[i]!
    expect(row.slice(0, nameAt).trim()).toBe(String(account.id)) // ids right-aligned under ID
    expect(row.slice(nameAt)).toStartWith(account.name) // names left-aligned under NAME
    expect(row[balanceEnd]).toMatch(/\d/) // balances right-aligned under BALANCE
    expect(row[balanceEnd + 1]).toBe(' ')
  })
  expect(rows.find((r) => r.includes('Table Test'))).toContain('1,234,567')
  expect(lines.at(-2)).toBe(`${page.total} accounts, newest first`)
  expect(admin('account', 'list', '--limit', '1').out).toEndWith(`\n1-1 of ${page.total} accounts, newest first; --offset 1 for the next\n`)

  // singular and plural
  expect(admin('key', 'list', id).out).toBe('no keys\n')
  const key = json(admin('key', 'create', id, 'first', '--json'))
  expect(Object.keys(key)).toContain('key')
  expect(admin('key', 'list', id).out).toEndWith('\n\n1 key\n')
  expect(admin('key', 'create', id, 'second', '--quiet').out).toMatch(/^pm_\w+\n$/)
  const keys = admin('key', 'list', id).out
  expect(keys).toEndWith('\n\n2 keys\n')
  expect(keys.split('\n')[0]).toMatch(/^ *ID +KEY +LABEL +STATUS +LAST USED +CREATED$/)
  const keyIds = json(admin('key', 'list', id, '--json')).items.map((k: { id: number }) => k.id)
  expect(admin('key', 'list', id, '--quiet').out).toBe(`${keyIds.join('\n')}\n`)
  expect(admin('ledger', id).out).toEndWith('\n\n1 ledger row, newest first\n')
  expect(admin('topup', id, '1000').out).toBe(`account ${id} topped up by 1,000: balance 1,235,567\n`)
  const ledger = admin('ledger', id).out.split('\n')
  expect(ledger[0]).toMatch(/^ *ID +TIME +KIND +AMOUNT +BALANCE +MESSAGE +NOTE$/)
  expect(ledger[1]).toMatch(/^ *\d+ {2}\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}topup +\+1,000 {2}1,235,567 +- {2}-$/)
  expect(ledger.at(-2)).toBe('2 ledger rows, newest first')
  expect(admin('segment', 'create', id, 'nobody', 'none').out).toMatch(/^segment \d+ "nobody" created: tag "none", 0 contacts now\n$/)
  expect(admin('deliveries', String(key.id)).out).toBe('no deliveries\n')

  // an error with --json: nothing on stdout, the message on stderr
  const missing = admin('topup', '999999', '5', '--json')
  expect(missing).toMatchObject({ code: 1, out: '' })
  expect(missing.err).toStartWith('admin: 404 NOT_FOUND: account 999999 not found')
})

test("key limits: a key's rate and cap shown, set, and back to the defaults; a value the service refuses is exit 1", () => {
  const id = json(admin('account', 'create', 'Limits', '--json')).id
  const key = json(admin('key', 'create', String(id), 'erp', '--json'))
  const shown = (rate: string, cap: string) =>
    `key ${key.id} "erp" of account ${id}\n  requests a minute: ${rate}\n  daily spend cap: ${cap}; charged today: 0\n`
  expect(admin('key', 'limits', String(key.id))).toEqual({ code: 0, out: shown("the service's default", 'none'), err: '' })
  expect(admin('key', 'limits', String(key.id), '--rate', '1200', '--cap', '500000').out).toBe(shown('1,200 (its own)', '500,000'))
  expect(json(admin('key', 'limits', String(key.id), '--json'))).toMatchObject({ rate_limit_per_minute: 1200, daily_spend_cap: 500000 })
  expect(admin('key', 'limits', String(key.id), '--cap', 'none').out).toBe(shown('1,200 (its own)', 'none'))
  expect(admin('key', 'limits', String(key.id), '--rate', 'default').out).toBe(shown("the service's default", 'none'))
  const refused = admin('key', 'limits', String(key.id), '--rate', '0')
  expect(refused.code).toBe(1)
  expect(refused.err).toStartWith('admin: 422 VALIDATION_ERROR: rate_limit_per_minute: must be from 1 to 1,000,000,000 requests a minute')
  expect(admin('key', 'limits', String(key.id), '--cap', 'lots').code).toBe(2)
})

test('account create --low-balance, account update --low-balance N|none, shown by account show', () => {
  const created = json(admin('account', 'create', 'Low Ltd', '--balance', '100', '--low-balance', '40', '--json'))
  expect(created).toMatchObject({ name: 'Low Ltd', wa_balance: 100, low_balance_threshold: 40 })
  const shown = admin('account', 'show', String(created.id))
  expect(shown.code).toBe(0)
  expect(shown.out).toMatch(/low-balance alert \(balance\.low\) below 40/)
  const updated = admin('account', 'update', String(created.id), '--low-balance', '25')
  expect(updated.code).toBe(0)
  expect(updated.out).toMatch(/below 25/)
  expect(json(admin('account', 'update', String(created.id), '--low-balance', 'none', '--json')).low_balance_threshold).toBeNull()
  expect(admin('account', 'show', String(created.id)).out).toContain('low-balance alert: none')
  const bad = admin('account', 'update', String(created.id), '--low-balance', '0')
  expect(bad.code).not.toBe(0)
  expect(bad.err).toContain('low_balance_threshold')
  expect(admin('account', 'update', String(created.id)).err).toContain('--low-balance')
})
