// Outer ring (real time): the service and the command line run as child processes, restarted with a new key.
// Senders from the command line, against a running service (a child process) whose Twilio is a local
// fake that knows one subaccount per SID and takes only its own auth token: senders create (a secret
// read from standard input), list, show, check, update, assign, unassign, disable and enable, a send
// from a sender and one refused while it is disabled; `secrets rotate` across restarts with a new
// SECRETS_KEY; the README's senders examples run as written; and no command ever prints a credential.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodeKey, encodeKey, generateKey, keyIdOf } from '../../src/lib/secrets'
import { ADMIN_TOKEN } from '../helpers/app'
import { shBlock } from '../helpers/docs'
import { call, startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { fakeTwilio } from '../helpers/fake-twilio'

const root = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'cli-senders-'))
const twilio = fakeTwilio()

const OLD_KEY = encodeKey(generateKey())
const NEW_KEY = encodeKey(generateKey())

const SID = `AC${'5e'.repeat(16)}`
const TOKEN = `tok-${crypto.randomUUID()}`
const WRONG_TOKEN = `wrong-${crypto.randomUUID()}`
const README_SID = `AC${'7d'.repeat(16)}`
const README_TOKEN = `readme-${crypto.randomUUID()}`
const basic = (sid: string, token: string) => `Basic ${Buffer.from(`${sid}:${token}`).toString('base64')}`

// The fake's subaccounts: each answers its own credentials only (as Twilio does: 401, code 20003),
// for its account resource and its messages alike.
for (const [sid, token] of [
  [SID, TOKEN],
  [README_SID, README_TOKEN],
] as const) {
  twilio.account(sid, token, { friendlyName: `Shop ${sid.slice(-4)}` })
}

let child: Child
let env: Record<string, string>
let dropDb = async () => {}
/** Everything every command printed, on either stream: no credential may be in it. */
const printed: string[] = []

beforeAll(async () => {
  env = {
    DATA_DIR: dataDir,
    ADMIN_TOKEN,
    SECRETS_KEY: OLD_KEY,
    TWILIO_API_BASE: twilio.url,
    SIM_DELIVERED_MS: '50',
    SIM_READ_MS: '100',
    // Free-form sends through Twilio senders to numbers that never wrote in: not about the 24-hour window.
    WINDOW_CHECK: 'off',
  }
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
  twilio.stop()
  await dropDb()
  rmSync(dataDir, { recursive: true, force: true })
})

/** The service again on the same database, with other keys. */
async function restart(keys: Record<string, string>) {
  await child.stop()
  env = { ...env, SECRETS_KEY: '', SECRETS_KEY_PREVIOUS: '', ...keys }
  child = await startChild(env)
}

type Run = { code: number | null; out: string; err: string }
/** A command run without blocking: the fake Twilio answers from this process while it runs. */
async function run(cmd: string[], stdin?: string, extra: Record<string, string> = {}): Promise<Run> {
  const shell = { ...process.env, ...env, HOST: '127.0.0.1', PORT: new URL(child.url).port, DATABASE_URL: env.DATABASE_URL ?? '', ...extra }
  const proc = Bun.spawn(cmd, {
    cwd: root,
    env: shell,
    stdin: stdin === undefined ? 'ignore' : new Blob([stdin]),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  printed.push(out, err)
  return { code, out, err }
}
const admin = (...args: string[]) => run(['bun', join(root, 'src/cli/admin.ts'), ...args])
const adminWithStdin = (stdin: string, ...args: string[]) => run(['bun', join(root, 'src/cli/admin.ts'), ...args], stdin)
const ok = (r: Run) => {
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' })
  return r.out
}
const api = (method: string, path: string, key: string, body?: unknown) => call(child.url, method, path, body, key)

/** The docs' ```sh block containing `marker` (README.md or docs/), pointed at this test's service. */
function readmeBlock(marker: string): string {
  const block = shBlock(marker)
  expect(block).toBeDefined()
  return block!.replaceAll('http://127.0.0.1:3000', child.url)
}
const answersOf = (out: string) =>
  out
    .split('\n')
    .filter((line) => line.startsWith('{"success"'))
    .map((line) => JSON.parse(line))

let twilioId: string
let simId: string

test('senders create (the auth token from standard input), list, show and check; update replaces a credential', async () => {
  expect(ok(await admin('senders', 'list'))).toBe(
    "no senders: every account sends from the deployment's number (the environment's PROVIDER)\n",
  )

  const created = await adminWithStdin(
    `${TOKEN}\n`,
    ...['senders', 'create', '--provider', 'twilio', '--name', 'Toko Maju', '--number', '+62 812-5550-0001'],
    ...['--credential', `account_sid=${SID}`, '--credential', 'auth_token=-'],
  )
  const [first, ...hints] = ok(created).trimEnd().split('\n')
  twilioId = /^sender (\d+) /.exec(first!)![1]!
  expect(first).toBe(
    `sender ${twilioId} "Toko Maju" created: twilio +6281255500001; credentials set: account_sid, auth_token (sealed, never shown again)`,
  )
  expect(hints).toEqual([
    `check it with its provider: bun run admin senders check ${twilioId}`,
    `give it to an account: bun run admin senders assign ACCOUNT_ID ${twilioId}`,
  ])
  simId = ok(
    await admin(
      'senders',
      'create',
      '--provider',
      'simulator',
      '--name',
      'Sim Shop',
      '--number',
      '+6281255500002',
      '--rate',
      '0.5',
      '--quiet',
    ),
  ).trim()
  expect(simId).toMatch(/^\d+$/)

  // list: a header, a row each, oldest first
  const lines = ok(await admin('senders', 'list')).split('\n')
  expect(lines[0]).toMatch(/^ *ID +PROVIDER +NUMBER +NAME +ACCOUNTS +RATE +GAP +LIMIT +STATUS +LAST CHECK$/)
  expect(lines[1]).toMatch(new RegExp(`^ *${twilioId} +twilio +\\+6281255500001 +Toko Maju +- +80/s +6,000 ms +unlimited +active +never$`))
  expect(lines[2]).toMatch(new RegExp(`^ *${simId} +simulator +\\+6281255500002 +Sim Shop +- +0\\.5/s +none +unlimited +active +never$`))
  expect(lines.slice(3)).toEqual(['', '2 senders, oldest first', ''])
  expect(ok(await admin('senders', 'list', '--quiet'))).toBe(`${twilioId}\n${simId}\n`)

  // show: which credentials are set, never their values
  const shown = ok(await admin('senders', 'show', twilioId)).split('\n')
  expect(shown.slice(0, 8)).toEqual([
    `sender ${twilioId} "Toko Maju": twilio +6281255500001, active`,
    `  identity: ${SID} (what its callbacks name it by)`,
    '  credentials set: account_sid, auth_token (their values are never shown)',
    '  pace: 80 messages a second, 6,000 ms between two messages to one recipient',
    '  late failures: kept charged (reported through its credentials after the provider accepted a message)',
    '  messaging limit: unlimited (its own tier)',
    `  accounts: none yet (bun run admin senders assign ACCOUNT_ID ${twilioId})`,
    '  last check: never',
  ])
  const json = JSON.parse(ok(await admin('senders', 'show', twilioId, '--json')))
  expect(json).toMatchObject({ id: Number(twilioId), provider: 'twilio', credentials_set: ['account_sid', 'auth_token'], last_check: null })

  // check: the provider's answer; a refusal is printed too, with exit 1
  expect(ok(await admin('senders', 'check', twilioId))).toBe(
    `sender ${twilioId} "Toko Maju" (twilio +6281255500001) checked: ok: Twilio account "Shop 5e5e" is active\n`,
  )
  const asked = twilio.requests.filter((r) => r.path === `/2010-04-01/Accounts/${SID}.json`)
  expect(asked.map((r) => [r.method, r.headers.get('authorization')])).toEqual([['GET', basic(SID, TOKEN)]])
  ok(await adminWithStdin(`${WRONG_TOKEN}\r\n`, 'senders', 'update', twilioId, '--credential', 'auth_token=-'))
  const refused = await admin('senders', 'check', twilioId)
  expect(refused).toEqual({
    code: 1,
    out:
      `sender ${twilioId} "Toko Maju" (twilio +6281255500001) checked: refused: the Account SID or Auth Token is wrong: copy both again ` +
      'from console.twilio.com → Account info (a subaccount: from its own page) and save them on this sender ' +
      '(Twilio answered HTTP 401 (code 20003): Authenticate)\n',
    err: '',
  })
  expect(twilio.requests.at(-1)!.headers.get('authorization')).toBe(basic(SID, WRONG_TOKEN)) // \r\n read as the line's end
  const updated = ok(
    await adminWithStdin(`${TOKEN}\n`, 'senders', 'update', twilioId, '--credential', 'auth_token=-', '--name', 'Toko Maju Jakarta'),
  )
  expect(updated).toStartWith(`sender ${twilioId} "Toko Maju Jakarta": twilio +6281255500001, active\n`)
  expect(updated).toContain('\n  last check: ')
  expect(updated).toContain(', refused: the Account SID or Auth Token is wrong: ')
  expect(updated).toContain('(Twilio answered HTTP 401 (code 20003): Authenticate)\n')
  expect(ok(await admin('senders', 'check', twilioId))).toEndWith('checked: ok: Twilio account "Shop 5e5e" is active\n')
  expect(ok(await admin('senders', 'update', simId, '--rate', 'default', '--gap', '250'))).toContain(
    '\n  pace: 1,000 messages a second, 250 ms between two messages to one recipient\n',
  )
  expect(ok(await admin('senders', 'check', simId))).toEndWith('checked: ok: the simulator takes every sender\n')
})

test('mistakes: usage errors stop before the service (exit 2), refusals are the service’s (exit 1)', async () => {
  const usage: [string[], string | undefined, string][] = [
    [['senders', 'create', '--provider', 'twilio', '--name', 'X'], undefined, 'senders create: missing --number +E164'],
    [
      ['senders', 'create', '--provider', 'twilio', '--name', 'X', '--number', '+6281255500009', '--credential', WRONG_TOKEN],
      undefined,
      '--credential: expected NAME=VALUE (or NAME=- to read the value from standard input), got no NAME=',
    ],
    [
      ['senders', 'update', twilioId, '--credential', 'auth_token=-', '--credential', 'auth_token=x'],
      undefined,
      '--credential: auth_token is given twice',
    ],
    [
      [
        'senders',
        'create',
        '--provider',
        'meta',
        '--name',
        'X',
        '--number',
        '+6281255500009',
        '--credential',
        'access_token=-',
        '--credential',
        'app_secret=-',
      ],
      'only-one-line\n',
      '--credential app_secret=-: standard input ended before its value (one line for each credential given as -)',
    ],
    [['senders', 'update', twilioId, '--rate', 'fast'], undefined, "--rate: expected a number (e.g. 80 or 0.5), got 'fast'"],
    [
      ['senders', 'update', twilioId],
      undefined,
      'senders update: nothing to change (give --name, --rate, --gap, --messaging-limit, --portfolio, --late-failures or --credential)',
    ],
    [['senders', 'show', 'x'], undefined, "SENDER_ID: expected an id (a positive integer), got 'x'"],
    [['sender', 'list'], undefined, "unknown command 'sender'; did you mean 'senders'?"],
  ]
  for (const [args, stdin, message] of usage) {
    const mistake = await adminWithStdin(stdin ?? '', ...args)
    expect({ args, code: mistake.code, out: mistake.out }).toEqual({ args, code: 2, out: '' })
    expect(mistake.err).toStartWith(`admin: ${message}\n`)
  }
  expect(JSON.parse(ok(await admin('senders', 'list', '--json'))).map((s: { id: number }) => s.id)).toEqual([
    Number(twilioId),
    Number(simId),
  ])

  const refusals: [string[], string][] = [
    [
      ['senders', 'create', '--provider', 'twilio', '--name', 'X', '--number', '+6281255500009', '--credential', `account_sid=${SID}`],
      '422 VALIDATION_ERROR: credentials.auth_token: is required for a twilio sender',
    ],
    [
      ['senders', 'create', '--provider', 'simulator', '--name', 'X', '--number', '+6281255500002'],
      `409 CONFLICT: a simulator sender with number +6281255500002 exists already (sender ${simId})`,
    ],
    [['senders', 'show', '999999'], '404 NOT_FOUND: sender 999999 not found'],
    [['senders', 'assign', '999999', simId], '404 NOT_FOUND: account 999999 not found'],
  ]
  for (const [args, message] of refusals) {
    const refused = await admin(...args)
    expect({ args, code: refused.code, out: refused.out }).toEqual({ args, code: 1, out: '' })
    expect(refused.err).toStartWith(`admin: ${message} (request id `)
  }
})

test('assign and unassign; a send from a sender goes through its provider with its credentials; disabled, it is refused, nothing charged', async () => {
  const accountId = ok(await admin('account', 'create', 'Senders Shop', '--balance', '10000', '--quiet')).trim()
  const key = ok(await admin('key', 'create', accountId, 'erp', '--quiet')).trim()
  expect(ok(await admin('senders', 'list', '--account', accountId))).toBe(
    `account ${accountId} has no senders: it sends from the deployment's number (the environment's PROVIDER)\n`,
  )

  const assigned = ok(await admin('senders', 'assign', accountId, twilioId)).split('\n')
  expect(assigned[0]).toBe(`sender ${twilioId} sends for account ${accountId} (its default)`)
  expect(assigned[2]).toMatch(/^ *ID +PROVIDER +NUMBER +NAME +DEFAULT +STATUS$/)
  expect(assigned[3]).toMatch(new RegExp(`^ *${twilioId} +twilio +\\+6281255500001 +Toko Maju Jakarta +yes +active$`))
  expect(assigned.at(-2)).toBe(`1 sender of account ${accountId}, its default first`)
  expect(ok(await admin('senders', 'assign', accountId, simId)).split('\n')[0]).toBe(`sender ${simId} sends for account ${accountId}`)
  const both = ok(await admin('senders', 'assign', accountId, simId, '--default')).split('\n')
  expect(both[0]).toBe(`sender ${simId} sends for account ${accountId} (its default)`)
  expect(both[3]).toMatch(new RegExp(`^ *${simId} +simulator .* +yes +active$`))
  expect(both[4]).toMatch(new RegExp(`^ *${twilioId} +twilio .*Jakarta +active$`))
  expect(ok(await admin('senders', 'list', '--account', accountId, '--quiet'))).toBe(`${simId}\n${twilioId}\n`)
  expect(ok(await admin('senders', 'show', twilioId))).toContain(`\n  accounts: ${accountId}\n`)
  expect(ok(await admin('senders', 'list'))).toMatch(new RegExp(`^ *${simId} +simulator +\\+6281255500002 +Sim Shop +${accountId} `, 'm'))

  // from: the Twilio sender, through the fake with the subaccount's own credentials
  const sent = await api('POST', '/api/v1/messages/send', key, { to: '081255551234', body: 'from Jakarta', from: '+6281255500001' })
  expect(sent).toMatchObject({ status: 200, body: { success: true, data: { status: 'sent' } } })
  const handed = twilio.requests.filter((r) => r.path === `/2010-04-01/Accounts/${SID}/Messages.json`).at(-1)!
  expect(handed.headers.get('authorization')).toBe(basic(SID, TOKEN))
  expect(new URLSearchParams(handed.body).get('From')).toBe('whatsapp:+6281255500001')
  const listed = await api('GET', `/api/v1/messages?sender_id=${twilioId}`, key)
  expect(listed.body.data.items.map((m: { sender_id: number; body: string }) => [m.sender_id, m.body])).toEqual([
    [Number(twilioId), 'from Jakarta'],
  ])

  // disabled: refused before anything is charged, by `from` and as the default
  const disabled = ok(await admin('senders', 'disable', simId))
  expect(disabled).toBe(
    `sender ${simId} "Sim Shop" (simulator +6281255500002) is now disabled: new sends from it are refused (422 SENDER_DISABLED, nothing charged)\n`,
  )
  const before = (await api('GET', '/api/v1/balance', key)).body.data.wa_balance
  for (const body of [
    { to: '081255551234', body: 'by default' },
    { to: '081255551234', body: 'named', from: simId },
  ]) {
    const refused = await api('POST', '/api/v1/messages/send', key, body)
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 422, code: 'SENDER_DISABLED' })
  }
  expect((await api('GET', '/api/v1/balance', key)).body.data.wa_balance).toBe(before)
  expect(ok(await admin('senders', 'list', '--account', accountId))).toMatch(new RegExp(`^ *${simId} +simulator .* +yes +disabled$`, 'm'))
  expect(ok(await admin('senders', 'enable', simId))).toBe(`sender ${simId} "Sim Shop" (simulator +6281255500002) is now active\n`)
  expect(await api('POST', '/api/v1/messages/send', key, { to: '081255551234', body: 'enabled again' })).toMatchObject({ status: 200 })

  // unassign: the default goes, the other one becomes the default; the last goes, the deployment's number again
  const unassigned = ok(await admin('senders', 'unassign', accountId, simId)).split('\n')
  expect(unassigned[0]).toBe(`sender ${simId} no longer sends for account ${accountId}`)
  expect(unassigned[3]).toMatch(new RegExp(`^ *${twilioId} +twilio .* +yes +active$`))
  expect(ok(await admin('senders', 'unassign', accountId, twilioId))).toBe(
    `sender ${twilioId} no longer sends for account ${accountId}\n\naccount ${accountId} has no senders: it sends from the deployment's number (the environment's PROVIDER)\n`,
  )
  const again = await admin('senders', 'unassign', accountId, twilioId)
  expect(again.code).toBe(1)
  expect(again.err).toStartWith(`admin: 404 NOT_FOUND: sender ${twilioId} is not assigned to account ${accountId}`)
})

test("the README's senders examples run as written: a simulator sender, then a Twilio one with its token from standard input", async () => {
  const quickstart = `set -e\neval "$(bun run admin quickstart | grep '^export')"\n`
  const simulator = await run(['bash', '-c', `${quickstart}${readmeBlock('senders create --provider simulator --name "Toko Maju"')}`])
  expect(simulator.err).not.toContain('admin:')
  expect(simulator.code).toBe(0)
  expect(simulator.out).toMatch(/^sender \d+ "Toko Maju" \(simulator \+6281234567890\) checked: ok: the simulator takes every sender$/m)
  expect(simulator.out).toMatch(/^sender \d+ sends for account \d+ \(its default\)$/m)
  const [senders, sent, listed, refused] = answersOf(simulator.out)
  expect(senders.data).toEqual([
    { id: expect.any(Number), provider: 'simulator', name: 'Toko Maju', number: '+6281234567890', default: true, disabled: false },
  ])
  expect(sent).toMatchObject({ success: true, data: { status: 'sent', to: '+6281234567890' } })
  expect(listed.data.items.map((m: { sender_id: number }) => m.sender_id)).toEqual([senders.data[0].id])
  expect(refused).toMatchObject({ success: false, code: 'SENDER_DISABLED' })
  expect(refused.error).toContain('nothing was charged')
  expect(simulator.out).toMatch(/is now active\n$/)

  const withTwilio = await run(['bash', '-c', `${quickstart}${readmeBlock('--credential auth_token=- --quiet')}`], undefined, {
    TWILIO_SUBACCOUNT_SID: README_SID,
    TWILIO_SUBACCOUNT_TOKEN: README_TOKEN,
  })
  expect(withTwilio.err).not.toContain('admin:')
  expect(withTwilio.code).toBe(0)
  expect(withTwilio.out).toMatch(
    /^sender \d+ "Toko Maju Jakarta" \(twilio \+6281234567891\) checked: ok: Twilio account "Shop 7d7d" is active$/m,
  )
  expect(withTwilio.out).toMatch(/^sender \d+ sends for account \d+ \(its default\)$/m)
  expect(withTwilio.out).toContain('  credentials set: account_sid, auth_token (their values are never shown)\n')
})

test('secrets rotate: under a new SECRETS_KEY with the old one as SECRETS_KEY_PREVIOUS, it seals every credential again; then the new key alone opens them', async () => {
  const newKeyId = keyIdOf(decodeKey(NEW_KEY)!)
  const senders = (JSON.parse(ok(await admin('senders', 'list', '--json'))) as { id: number }[]).length
  expect(senders).toBe(4)

  // The new key alone, before rotating: the credentials sealed under the old one do not open.
  await restart({ SECRETS_KEY: NEW_KEY })
  const unopened = await admin('senders', 'check', twilioId)
  expect(unopened.code).toBe(1)
  expect(unopened.out).toEndWith(
    "checked: refused: its credentials do not open with this service's SECRETS_KEY (see SECRETS_KEY_PREVIOUS)\n",
  )
  expect(ok(await admin('senders', 'show', twilioId))).toContain('\n  credentials set: none\n')

  // Both: the old key still opens them; rotate seals them under the new one, and again finds nothing to do.
  await restart({ SECRETS_KEY: NEW_KEY, SECRETS_KEY_PREVIOUS: OLD_KEY })
  expect(ok(await admin('senders', 'check', twilioId))).toEndWith('checked: ok: Twilio account "Shop 5e5e" is active\n')
  expect(ok(await admin('secrets', 'rotate'))).toBe(
    [
      `the credentials of ${senders} senders sealed again under key ${newKeyId} (SECRETS_KEY); 0 already were`,
      'SECRETS_KEY_PREVIOUS can now be dropped from every instance',
      '',
    ].join('\n'),
  )
  expect(ok(await admin('secrets', 'rotate'))).toBe(
    `every stored credential is sealed under key ${newKeyId} (SECRETS_KEY) already: ${senders} senders, nothing to do\n`,
  )
  expect(JSON.parse(ok(await admin('secrets', 'rotate', '--json')))).toEqual({ rotated: 0, current: senders, key_id: newKeyId })

  // The new key alone again: everything opens; the sender checks and sends with its own credentials.
  await restart({ SECRETS_KEY: NEW_KEY })
  expect(ok(await admin('senders', 'check', twilioId))).toEndWith('checked: ok: Twilio account "Shop 5e5e" is active\n')
  expect(ok(await admin('senders', 'show', twilioId))).toContain(
    '\n  credentials set: account_sid, auth_token (their values are never shown)\n',
  )
  const accountId = ok(await admin('account', 'create', 'After Rotation', '--balance', '1000', '--quiet')).trim()
  const key = ok(await admin('key', 'create', accountId, 'erp', '--quiet')).trim()
  ok(await admin('senders', 'assign', accountId, twilioId))
  const sent = await api('POST', '/api/v1/messages/send', key, { to: '081255554321', body: 'after rotation' })
  expect(sent).toMatchObject({ status: 200, body: { success: true, data: { status: 'sent' } } })
  const handed = twilio.requests.filter((r) => r.path === `/2010-04-01/Accounts/${SID}/Messages.json`).at(-1)!
  expect(new URLSearchParams(handed.body).get('Body')).toBe('after rotation')
  expect(handed.headers.get('authorization')).toBe(basic(SID, TOKEN))
})

test('no command printed a credential or a key, on either stream', async () => {
  const all = printed.join('\n')
  expect(all.length).toBeGreaterThan(1000)
  for (const secret of [
    TOKEN,
    WRONG_TOKEN,
    README_TOKEN,
    OLD_KEY,
    NEW_KEY,
    basic(SID, TOKEN).slice(6),
    basic(README_SID, README_TOKEN).slice(6),
  ])
    expect({ secret, printed: all.includes(secret) }).toEqual({ secret, printed: false })
})
