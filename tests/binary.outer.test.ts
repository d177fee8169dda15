// Outer ring (real time): the compiled binary and `bun src/main.ts` run as child processes, stopped by signals and restarted.
// The service as a process. The single binary: compiled once, copied alone into an empty directory
// and run there; it must carry its migrations, PGlite's assets, the dashboard and the API reference
// inside, serve a real send, stop cleanly on SIGTERM and find its data again on the next start. And `bun src/main.ts`: SIGTERM in
// the middle of traffic drains the requests it accepted, exits 0, and loses nothing. Both answer
// --help and --version (and `admin help`) without reading the configuration or creating anything.
// The binary is the whole product: `messaging-api admin ...` is the admin command line, so a team
// with only the binary sets up, operates and debugs webhooks with it.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { Webhook } from 'standardwebhooks'
import { createPostgresDatabase, premigrate, usingPostgres } from './helpers/db'
import { shBlock } from './helpers/docs'
import { copyBinary } from './helpers/binary'
import { freePort } from './helpers/child'
import { startReceiver } from './helpers/receiver'
import { until } from './helpers/wait'
import { VARIABLES } from '../src/config'
import { commands } from '../src/cli/run'
import { version } from '../package.json'

const ROOT = join(import.meta.dir, '..')
const ADMIN_TOKEN = 'binary-test-admin-token-0123456789'
const BINARY = 'messaging-api'

type Child = { proc: Subprocess; output: () => string; port: number }

function spawnChild(cmd: string[], cwd: string, env: Record<string, string>, port: number): Child {
  const proc = Bun.spawn(cmd, { cwd, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  let text = ''
  // Drain both pipes so a chatty child never blocks on a full pipe.
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true })
  }
  void pump(proc.stdout as ReadableStream<Uint8Array>)
  void pump(proc.stderr as ReadableStream<Uint8Array>)
  return { proc, output: () => text, port }
}

async function waitReady(child: Child, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      throw new Error(`exited before ready (code ${child.proc.exitCode}, signal ${child.proc.signalCode}):\n${child.output()}`)
    }
    try {
      const response = await fetch(`http://127.0.0.1:${child.port}/readyz`, { signal: AbortSignal.timeout(1_000) })
      if (response.status === 200) return
    } catch {
      // not listening yet
    }
    await Bun.sleep(100)
  }
  throw new Error(`not ready within ${timeoutMs} ms:\n${child.output()}`)
}

/** SIGTERM, then the exit code; SIGKILL and fail if it does not exit within `timeoutMs`. */
async function terminate(child: Child, timeoutMs = 15_000): Promise<number | null> {
  child.proc.kill('SIGTERM')
  const timer = Bun.sleep(timeoutMs).then(() => 'timeout' as const)
  const result = await Promise.race([child.proc.exited, timer])
  if (result === 'timeout') {
    child.proc.kill('SIGKILL')
    throw new Error(`did not exit within ${timeoutMs} ms of SIGTERM:\n${child.output()}`)
  }
  return child.proc.signalCode ? null : result
}

async function call(port: number, method: string, path: string, token: string, body?: unknown) {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  })
  return { status: response.status, body: (await response.json()) as any }
}

/** Runs a command to its end in `dir` with only `env` (and PATH): its exit code and output. */
async function runIn(dir: string, cmd: string[], env: Record<string, string>) {
  const proc = Bun.spawn(cmd, {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000)
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

/**
 * Runs `cmd` with `args` in an empty directory, with a DATA_DIR inside it and a configuration that
 * could not start (a bad PORT): answering must read neither and leave the directory empty.
 */
async function answerOf(cmd: string[], args: string[], dir: string) {
  const answer = await runIn(dir, [...cmd, ...args], { PORT: 'not-a-port', DATA_DIR: join(dir, 'data') })
  expect(readdirSync(dir)).toEqual([])
  return answer
}

/** `cmd` answers its arguments; `admin` is how its command line names itself (`messaging-api admin`). */
async function expectAnswers(cmd: string[], dir: string, admin: string): Promise<void> {
  const help = await answerOf(cmd, ['--help'], dir)
  expect(help).toMatchObject({ code: 0, stderr: '' })
  expect(help.stdout).toContain(`messaging-api ${version}`)
  expect(help.stdout).toContain('usage: messaging-api [--help | --version]')
  // What a started service serves, the dashboard first among the pages a person opens.
  expect(help.stdout).toMatch(/^ {2}\/dashboard +the web dashboard/m)
  expect(help.stdout).toMatch(/^ {2}\/docs +the API reference/m)
  // The two modes, and every variable with its default, from the table the configuration reads.
  expect(help.stdout).toMatch(/embedded +DATABASE_URL unset: PGlite/)
  expect(help.stdout).toMatch(/PostgreSQL +DATABASE_URL=postgres:/)
  for (const [name, variable] of Object.entries(VARIABLES)) {
    const shown = 'default' in variable ? variable.default : variable.shown
    expect(help.stdout).toMatch(new RegExp(`^  ${name} +${shown.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} +\\S`, 'm'))
  }

  expect(await answerOf(cmd, ['--version'], dir)).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })

  const unknown = await answerOf(cmd, ['--port', '80'], dir)
  expect(unknown).toMatchObject({ code: 2, stdout: '' })
  expect(unknown.stderr).toBe('messaging-api: unknown argument "--port" (see --help)\n')

  // --help names the admin command line and lists its commands, every one of the table.
  expect(help.stdout).toContain('       messaging-api admin <command> [arguments] [options]')
  expect(help.stdout).toContain('messaging-api admin help lists them')
  const listed = help.stdout.slice(help.stdout.indexOf('Its commands'), help.stdout.indexOf('Database, one of two modes'))
  for (const command of commands) {
    const [group, sub] = command.name.split(' ')
    expect({ command: command.name, listed }).toEqual({
      command: command.name,
      listed: expect.stringMatching(sub ? new RegExp(`\\b${group} (\\w+\\|)*${sub}\\b`) : new RegExp(`\\b${group}\\b`)),
    })
  }

  // The admin command line's own help, version and mistakes, named as it was started; nothing touched.
  const adminHelp = await answerOf(cmd, ['admin', '--help'], dir)
  expect(adminHelp).toMatchObject({ code: 0, stderr: '' })
  expect(adminHelp.stdout).toStartWith(
    `${admin}: the operator's command line, a client of the running service's admin API\n\nusage: ${admin} <command>`,
  )
  expect(adminHelp.stdout).toContain('\n  quickstart ')
  expect(adminHelp.stdout).toContain('\n  user link EMAIL|ID ')
  expect(await answerOf(cmd, ['admin', 'help'], dir)).toEqual(adminHelp)
  expect(await answerOf(cmd, ['admin'], dir)).toEqual({ ...adminHelp, code: 2 })
  const quickstart = await answerOf(cmd, ['admin', 'quickstart', '--help'], dir)
  expect(quickstart).toMatchObject({ code: 0, stderr: '' })
  expect(quickstart.stdout).toStartWith(`usage: ${admin} quickstart `)
  expect(quickstart.stdout).toContain(`\nexample:\n  ${admin} quickstart\n`)
  expect(await answerOf(cmd, ['admin', '--version'], dir)).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
  expect(await answerOf(cmd, ['admin', 'frobnicate'], dir)).toEqual({
    code: 2,
    stdout: '',
    stderr: `admin: unknown command 'frobnicate'\nrun \`${admin} help\` for the commands\n`,
  })
}

describe('compiled binary', () => {
  const temps: string[] = []
  const children: Child[] = []
  let runDir = ''
  let databaseUrl: string | undefined
  let dropDatabase = async () => {}
  let created: { accountId: number; key: string; sid: string; balanceAfter: number } | undefined

  const temp = (prefix: string) => {
    const dir = mkdtempSync(join(tmpdir(), prefix))
    temps.push(dir)
    return dir
  }

  function startBinary(): Child {
    const port = freePort()
    // Only what an operator would set: no DATA_DIR (the binary makes ./data), nothing from this run.
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port), ADMIN_TOKEN }
    if (databaseUrl) env.DATABASE_URL = databaseUrl
    const child = spawnChild([join(runDir, BINARY)], runDir, env, port)
    children.push(child)
    return child
  }

  beforeAll(async () => {
    runDir = temp('messaging-run-')
    await copyBinary(join(runDir, BINARY))
    if (usingPostgres()) {
      const database = await createPostgresDatabase()
      databaseUrl = database.url
      dropDatabase = database.drop
    }
  }, 120_000)

  afterAll(async () => {
    for (const child of children) if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL')
    await Promise.all(children.map((c) => c.proc.exited))
    await dropDatabase()
    for (const dir of temps) rmSync(dir, { recursive: true, force: true })
  }, 30_000)

  test('starts alone in an empty directory, sends a message, exits 0 on SIGTERM', async () => {
    expect(readdirSync(runDir)).toEqual([BINARY])
    const child = startBinary()
    await waitReady(child)

    const account = await call(child.port, 'POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'binary', balance: 1000 })
    expect(account.status).toBe(201)
    const accountId = account.body.data.id as number
    const key = await call(child.port, 'POST', `/admin/v1/accounts/${accountId}/keys`, ADMIN_TOKEN, { label: 'binary' })
    expect(key.status).toBe(201)

    const sent = await call(child.port, 'POST', '/api/v1/messages/send', key.body.data.key, { to: '081234567890', body: 'hi' })
    expect(sent.status).toBe(200)
    expect(sent.body.success).toBe(true)
    expect(sent.body.data).toMatchObject({ to: '+6281234567890', status: 'sent' })
    created = { accountId, key: key.body.data.key, sid: sent.body.data.message_id, balanceAfter: sent.body.data.balance_after }

    // The dashboard is embedded too: its sign-in page and stylesheet, from an empty directory.
    const signIn = await fetch(`http://127.0.0.1:${child.port}/dashboard/sign-in`)
    expect(signIn.status).toBe(200)
    expect(await signIn.text()).toContain('<h1>Sign in</h1>')
    const css = await fetch(`http://127.0.0.1:${child.port}/dashboard/assets/style.css`)
    expect(css.status).toBe(200)
    expect(await css.text()).toContain('font-family')
    // And the API reference: its page, its assets (pinned Swagger UI) and both documents.
    for (const path of ['/docs', '/docs/admin']) {
      const page = await fetch(`http://127.0.0.1:${child.port}${path}`)
      expect({ path, status: page.status }).toEqual({ path, status: 200 })
      const html = await page.text()
      for (const asset of html.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)) {
        const response = await fetch(`http://127.0.0.1:${child.port}${asset[1]}`)
        expect({ asset: asset[1], status: response.status, bytes: (await response.arrayBuffer()).byteLength > 0 }).toEqual({
          asset: asset[1],
          status: 200,
          bytes: true,
        })
      }
    }
    // Served from inside the binary (a path into node_modules would also work on this machine, but
    // not on another): the served bundle is byte for byte the pinned one, and the binary holds it.
    const pinned = Buffer.from(await Bun.file(join(ROOT, 'node_modules/swagger-ui-dist/swagger-ui-bundle.js')).arrayBuffer())
    const served = Buffer.from(await (await fetch(`http://127.0.0.1:${child.port}/docs/assets/swagger-ui-bundle.js`)).arrayBuffer())
    expect(served.equals(pinned)).toBe(true)
    expect(readFileSync(join(runDir, BINARY)).indexOf(pinned)).toBeGreaterThan(0)
    const document = (await (await fetch(`http://127.0.0.1:${child.port}/docs/json`)).json()) as any
    expect(document.paths['/api/v1/messages/send']).toBeDefined()

    expect(await terminate(child)).toBe(0)
    expect(child.output()).toContain('listening on http://127.0.0.1:')
    // The banner names the dashboard and the API reference.
    expect(child.output()).toContain(`  dashboard http://127.0.0.1:${child.port}/dashboard\n`)
    expect(child.output()).toContain(
      `  docs      http://127.0.0.1:${child.port}/docs (admin API: http://127.0.0.1:${child.port}/docs/admin)\n`,
    )
    if (!databaseUrl) {
      // The embedded database lives in ./data of the working directory, and nothing else appeared.
      expect(existsSync(join(runDir, 'data', 'pgdata'))).toBe(true)
      // A clean stop releases the lock on DATA_DIR.
      expect(existsSync(join(runDir, 'data', 'lock'))).toBe(false)
      expect(readdirSync(runDir).sort()).toEqual(['data', BINARY])
    } else {
      // With PostgreSQL, ./data holds only the key that seals credentials (no SECRETS_KEY was given).
      expect(readdirSync(runDir).sort()).toEqual(['data', BINARY])
      expect(readdirSync(join(runDir, 'data'))).toEqual(['secrets-key'])
      expect(statSync(join(runDir, 'data', 'secrets-key')).mode & 0o777).toBe(0o600)
    }
  }, 120_000)

  test('a second start in the same directory finds the account and the message', async () => {
    expect(created).toBeDefined()
    const child = startBinary()
    await waitReady(child)

    const account = await call(child.port, 'GET', `/admin/v1/accounts/${created!.accountId}`, ADMIN_TOKEN)
    expect(account.status).toBe(200)
    expect(account.body.data).toMatchObject({ id: created!.accountId, name: 'binary', wa_balance: created!.balanceAfter })
    const message = await call(child.port, 'GET', `/api/v1/messages/${created!.sid}`, created!.key)
    expect(message.status).toBe(200)
    expect(message.body.data.message_sid).toBe(created!.sid)

    expect(await terminate(child)).toBe(0)
    // Migrations were applied once, on the first start only.
    expect(child.output()).not.toContain('migrations applied')
  }, 120_000)

  test('--help, --version and an unknown argument are answered without starting or touching anything', async () => {
    await expectAnswers([join(runDir, BINARY)], temp('messaging-answers-'), `${BINARY} admin`)
  }, 60_000)

  test('its admin command line is the one of `bun run admin`, named for the binary', async () => {
    const dir = temp('messaging-answers-')
    const compiled = await answerOf([join(runDir, BINARY), 'admin'], ['help'], dir)
    const source = await answerOf([process.execPath, join(ROOT, 'src', 'cli', 'admin.ts')], ['help'], dir)
    expect(source.stdout).toStartWith('bun run admin: ')
    expect(compiled).toEqual({ ...source, stdout: source.stdout.replaceAll('bun run admin', `${BINARY} admin`) })
    for (const name of ['key create', 'user link', 'webhook listen']) {
      const own = await answerOf([join(runDir, BINARY), 'admin'], [...name.split(' '), '--help'], dir)
      const fromSource = await answerOf([process.execPath, join(ROOT, 'src', 'cli', 'admin.ts')], [...name.split(' '), '--help'], dir)
      expect(own).toEqual({ ...fromSource, stdout: fromSource.stdout.replaceAll('bun run admin', `${BINARY} admin`) })
    }
  }, 60_000)

  test("operated with the binary alone, as the README's single-binary section shows: quickstart, operator create, a lost link made again, webhook listen", async () => {
    // A directory of its own, with only the binary, on PATH as the README installs it; no ADMIN_TOKEN:
    // the service writes ./data/admin-token, and the command line, run in the same directory with the
    // same PORT, finds the service and the token there.
    const dir = temp('messaging-operate-')
    copyFileSync(join(runDir, BINARY), join(dir, BINARY))
    chmodSync(join(dir, BINARY), 0o755)
    const port = freePort()
    const path = `${dir}:${process.env.PATH ?? '/usr/bin:/bin'}`
    const env: Record<string, string> = { PATH: path, PORT: String(port), SIM_DELIVERED_MS: '100', SIM_READ_MS: '200' }
    if (databaseUrl) env.DATABASE_URL = databaseUrl
    // Not a test of the first start (the first test is): its ./data holds a migrated database already,
    // so it spends no initdb and no migrations (tens of seconds on a busy machine); the admin token is
    // still the service's own, written at its start.
    await premigrate(join(dir, 'data'))
    const service = spawnChild([BINARY], dir, env, port)
    children.push(service)
    await waitReady(service)
    // On a failure, the service's own lines say what it saw.
    try {
      expect(statSync(join(dir, 'data', 'admin-token')).mode & 0o777).toBe(0o600)
      const shell = (script: string) => runIn(dir, ['bash', '-c', script], { PATH: path, PORT: String(port) })
      const base = `http://127.0.0.1:${port}`
      const linkIn = (text: string) => [...text.matchAll(/^(http:\/\/\S+\/dashboard\/link\/\w+)$/gm)].map((m) => m[1]!)

      // The first quickstart prints the demo member's link...
      const quickstart = await shell(`${BINARY} admin quickstart`)
      expect(quickstart).toMatchObject({ code: 0, stderr: '' })
      expect(quickstart.stdout).toContain(`curl -s ${base}/api/v1/balance -H "Authorization: Bearer $KEY"`)
      const [firstLink] = linkIn(quickstart.stdout)
      expect((await fetch(firstLink!)).status).toBe(200)

      // ...which the README's commands, as written, lose (eval keeps the export line) and make again.
      const block = shBlock(`${BINARY} admin quickstart`, ['docs/operating/single-binary.md'])!
      const lines = block.trimEnd().split('\n')
      const listenLine = lines.find((line) => line.includes('webhook listen'))!
      const ran = await shell(`set -e\n${lines.filter((line) => line !== listenLine).join('\n')}\necho "vars $KEY $ACCOUNT_ID $KEY_ID"`)
      expect(ran).toMatchObject({ code: 0, stderr: '' })
      const [key, accountId, keyId] = /^vars (\S+) (\d+) (\d+)$/m.exec(ran.stdout)!.slice(1) as [string, string, string]
      expect(await call(port, 'GET', '/api/v1/balance', key)).toMatchObject({ status: 200, body: { data: { wa_balance: 100_000 } } })
      const memberEmail = `demo-${accountId}@example.com`
      expect(ran.stdout).toContain('operator ops@example.com created\n')
      expect(ran.stdout).toContain(`new invitation link for member ${memberEmail}; earlier links of theirs no longer work\n`)
      expect(ran.stdout).toContain(`${BINARY} admin: the operator's command line`)
      const [operatorLink, newLink] = linkIn(ran.stdout)
      expect((await fetch(operatorLink!)).status).toBe(200)
      const page = await fetch(newLink!)
      expect(page.status).toBe(200)
      expect(await page.text()).toContain(memberEmail)
      expect((await fetch(firstLink!)).status).toBe(404)
      const listed = await shell(`${BINARY} admin user list`)
      expect(listed.stdout).toMatch(new RegExp(`^ *\\d+ +${memberEmail.replaceAll('.', '\\.')} +member +${accountId} +invited `, 'm'))

      // The README's listen line forwards a message's events, signed, to a receiver here; Ctrl-C ends it.
      const receiver = startReceiver(null)
      const listen = spawnChild(
        ['bash', '-c', `KEY_ID=${keyId}; exec ${listenLine.replace('http://localhost:8080/hook', receiver.url('127.0.0.1'))}`],
        dir,
        { PATH: path, PORT: String(port) },
        port,
      )
      children.push(listen)
      try {
        const ready = await until(
          () => listen.output(),
          // Ready once its secret line is out too: the lines can arrive in separate chunks.
          (out) => out.includes('Forwarding each event to') && /^ {2}whsec_\S+$/m.test(out),
          30_000,
          'listen to be ready',
        )
        const secret = /^ {2}(whsec_\S+)$/m.exec(ready)![1]!
        const sent = await call(port, 'POST', '/api/v1/messages/send', key, { to: '081234567890', body: 'from the binary' })
        expect(sent.status).toBe(200)
        const [event] = await receiver.waitFor(1)
        expect(event).toBeDefined()
        const payload = new Webhook(secret).verify(event!.body, event!.headers) as { data: { message_sid: string } }
        expect(payload.data.message_sid).toBe(sent.body.data.message_id)
        await until(
          () => listen.output(),
          (out) => out.includes(`${sent.body.data.message_id}  [${event!.headers['webhook-id']}]  → 200`),
          10_000,
          "listen's line of the forwarded event",
        )
        listen.proc.kill('SIGINT')
        expect(await listen.proc.exited).toBe(0)
      } finally {
        receiver.stop()
      }

      // Without the service: the URL tried, and how to start it, by the binary's name.
      expect(await terminate(service)).toBe(0)
      const unreachable = await shell(`${BINARY} admin account list`)
      expect(unreachable.code).toBe(1)
      expect(unreachable.stderr).toStartWith(`admin: cannot reach the service at ${base} (from PORT=${port}): connection refused\n`)
      expect(unreachable.stderr).toContain(`start it with: ${BINARY}\n`)
    } catch (error) {
      console.error(`the service printed:\n${service.output()}`)
      throw error
    }
  }, 120_000)
  test.skipIf(usingPostgres())(
    'backs up its embedded database while serving and restores it into a fresh DATA_DIR, the binary alone',
    async () => {
      expect(created).toBeDefined()
      const dir = temp('messaging-backup-')
      const child = startBinary() // in runDir, on the ./data the first test filled
      await waitReady(child)
      const file = join(dir, 'data.backup')
      const backup = await runIn(runDir, [join(runDir, BINARY), 'admin', 'backup', file], { PORT: String(child.port), ADMIN_TOKEN })
      expect(backup).toMatchObject({ code: 0, stderr: '' })
      expect(backup.stdout).toStartWith(`backup written to ${file}: `)
      expect(await terminate(child)).toBe(0)
      // The secrets key first (restore verifies the file with it), then restore: it runs PGlite inside the
      // binary, opening the copy once before putting it in place.
      mkdirSync(join(dir, 'data'))
      copyFileSync(join(runDir, 'data', 'secrets-key'), join(dir, 'data', 'secrets-key'))
      const restored = await runIn(dir, [join(runDir, BINARY), 'admin', 'restore', 'data.backup'], {})
      expect(restored).toMatchObject({ code: 0, stderr: '' })
      expect(restored.stdout).toContain(`start the service: ${BINARY}\n`)
      const port = freePort()
      const fresh = spawnChild(
        [join(runDir, BINARY)],
        dir,
        { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port), ADMIN_TOKEN },
        port,
      )
      children.push(fresh)
      await waitReady(fresh)
      const account = await call(port, 'GET', `/admin/v1/accounts/${created!.accountId}`, ADMIN_TOKEN)
      expect(account.body.data).toMatchObject({ id: created!.accountId, wa_balance: created!.balanceAfter })
      expect((await call(port, 'GET', `/api/v1/messages/${created!.sid}`, created!.key)).status).toBe(200)
      expect(await terminate(fresh)).toBe(0)
    },
    120_000,
  )
})

describe('bun src/main.ts: graceful shutdown', () => {
  const children: Child[] = []
  let dataDir = ''
  let databaseUrl: string | undefined
  let dropDatabase = async () => {}

  function startSource(): Child {
    const port = freePort()
    // No ADMIN_TOKEN: the service generates one into DATA_DIR and must find the same one again.
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port), DATA_DIR: dataDir }
    if (databaseUrl) env.DATABASE_URL = databaseUrl
    const child = spawnChild([process.execPath, 'src/main.ts'], ROOT, env, port)
    children.push(child)
    return child
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'messaging-shutdown-'))
    if (usingPostgres()) {
      const database = await createPostgresDatabase()
      databaseUrl = database.url
      dropDatabase = database.drop
    }
  }, 30_000)

  afterAll(async () => {
    for (const child of children) if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL')
    await Promise.all(children.map((c) => c.proc.exited))
    await dropDatabase()
    rmSync(dataDir, { recursive: true, force: true })
  }, 30_000)

  test('SIGTERM during sends: answered requests are kept, exit 0; the restart finds token, balance and ledger', async () => {
    const first = startSource()
    await waitReady(first)
    const tokenFile = join(dataDir, 'admin-token')
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600)
    const token = readFileSync(tokenFile, 'utf8').trim()

    const account = await call(first.port, 'POST', '/admin/v1/accounts', token, { name: 'shutdown', balance: 1000 })
    expect(account.status).toBe(201)
    const accountId = account.body.data.id as number
    const key = (await call(first.port, 'POST', `/admin/v1/accounts/${accountId}/keys`, token, { label: 'shutdown' })).body.data
      .key as string

    // A burst of sends, and SIGTERM as soon as the first one is answered: the rest are in flight or
    // refused. Every send is either answered 200 or never reached the service; none is lost half-way.
    const sends = Array.from({ length: 20 }, (_, i) =>
      call(first.port, 'POST', '/api/v1/messages/send', key, { to: '081234567890', body: `burst ${i}` }).then(
        (r) => ({ status: r.status, cost: r.body.data?.cost as number | undefined }),
        () => ({ status: 0, cost: undefined }),
      ),
    )
    await Promise.race(sends)
    const exit = terminate(first)
    const outcomes = await Promise.all(sends)
    expect(await exit).toBe(0)
    const answered = outcomes.filter((o) => o.status === 200)
    expect(outcomes.filter((o) => o.status !== 200 && o.status !== 0)).toEqual([])
    expect(answered.length).toBeGreaterThanOrEqual(1)
    const spent = answered.reduce((sum, o) => sum + o.cost!, 0)

    const second = startSource()
    await waitReady(second)
    expect(readFileSync(tokenFile, 'utf8').trim()).toBe(token)
    const after = await call(second.port, 'GET', `/admin/v1/accounts/${accountId}`, token)
    expect(after.status).toBe(200)
    expect(after.body.data.wa_balance).toBe(1000 - spent)
    const ledger = await call(second.port, 'GET', `/admin/v1/accounts/${accountId}/ledger`, token)
    expect(ledger.body.data.total).toBe(1 + answered.length)
    expect(await terminate(second)).toBe(0)
  }, 120_000)
})

describe('bun src/main.ts: arguments', () => {
  test('--help, --version and an unknown argument are answered without starting or touching anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'messaging-answers-'))
    try {
      await expectAnswers([process.execPath, join(ROOT, 'src', 'main.ts')], dir, 'bun src/main.ts admin')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
