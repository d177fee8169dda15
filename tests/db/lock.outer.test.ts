// Outer ring (real time): real `bun src/main.ts` processes race for one DATA_DIR, and one is killed with SIGKILL.
// The embedded database belongs to one process: real `bun src/main.ts` children on one DATA_DIR.
// A second start refuses with one line naming the holder and leaves its data alone; a lock left by a
// kill -9 (or naming a pid that now belongs to another process) does not block the next start; of
// several processes started at once exactly one wins. With DATABASE_URL no lock is taken.

import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN_TOKEN } from '../helpers/app'
import { call, collectOutput, freePort, startChild, type Child } from '../helpers/child'
import { createPostgresDatabase, usingPostgres } from '../helpers/db'

const MAIN = join(import.meta.dir, '..', '..', 'src', 'main.ts')

type Launched = { proc: ReturnType<typeof Bun.spawn>; url: string; output(): string }

/** `bun src/main.ts` on `env` without waiting for anything: it may serve or refuse. */
function launch(env: Record<string, string>): Launched {
  const port = freePort()
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'DATABASE_URL') base[k] = v
  const proc = Bun.spawn(['bun', MAIN], {
    env: { ...base, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'warn', ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  return { proc, url: `http://127.0.0.1:${port}`, output: collectOutput(proc) }
}

const ready = (child: Launched) =>
  fetch(`${child.url}/readyz`, { signal: AbortSignal.timeout(1_000) }).then(
    (r) => r.ok,
    () => false,
  )

/** Waits until every child has either exited or become ready (bounded); answers which did which. */
async function settle(children: Launched[], timeoutMs = 90_000): Promise<{ serving: Launched[]; exited: Launched[] }> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const exited = children.filter((c) => c.proc.exitCode !== null || c.proc.signalCode !== null)
    const serving: Launched[] = []
    for (const child of children) if (!exited.includes(child) && (await ready(child))) serving.push(child)
    if (exited.length + serving.length === children.length) {
      // all exited ones have flushed their output once `exited` resolves
      await Promise.all(exited.map((c) => c.proc.exited))
      await Bun.sleep(50)
      return { serving, exited }
    }
    if (Date.now() > deadline) {
      throw new Error(`children neither served nor exited in time:\n${children.map((c) => c.output()).join('\n---\n')}`)
    }
    await Bun.sleep(100)
  }
}

/** The one line a refused start prints, checked against the pid that holds DATA_DIR. */
function expectRefusal(child: Launched, dataDir: string, holderPid: number): void {
  expect(child.proc.exitCode).toBe(1)
  const lines = child.output().trim().split('\n')
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatch(
    new RegExp(
      `^cannot start: DATA_DIR ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by process ${holderPid} \\(started \\d{4}-\\d\\d-\\d\\dT[^)]+\\): ` +
        'stop that process, or give this one another DATA_DIR, or set DATABASE_URL',
    ),
  )
}

async function stopAll(children: Launched[]): Promise<void> {
  for (const child of children) if (child.proc.exitCode === null) child.proc.kill(9)
  await Promise.all(children.map((c) => c.proc.exited))
}

const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
}, 30_000)

function tempDataDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `${name}-`))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

function track(child: Launched): Launched {
  cleanups.push(() => stopAll([child]))
  return child
}

describe.if(!usingPostgres())('embedded database: one process per DATA_DIR', () => {
  const dataDir = tempDataDir('lock')
  const lockFile = join(dataDir, 'lock')
  let accountIds: number[] = []

  async function startHolder(): Promise<Child> {
    const child = await startChild({ DATA_DIR: dataDir }, { readyMs: 60_000 })
    cleanups.push(async () => {
      if (child.proc.exitCode === null) await child.kill9()
    })
    return child
  }

  async function expectAccounts(child: Child): Promise<void> {
    for (const [i, id] of accountIds.entries()) {
      const account = await call(child.url, 'GET', `/admin/v1/accounts/${id}`)
      expect(account.status).toBe(200)
      expect(account.body.data).toMatchObject({ id, wa_balance: 100 + i })
    }
  }

  test('a second process refuses with one line naming the holder; the first keeps serving and keeps its data', async () => {
    const first = await startHolder()
    const before = await call(first.url, 'POST', '/admin/v1/accounts', { name: 'before', balance: 100 })
    expect(before.status).toBe(201)

    const second = track(launch({ DATA_DIR: dataDir }))
    const exit = await Promise.race([second.proc.exited, Bun.sleep(30_000).then(() => 'still running' as const)])
    expect(exit).toBe(1)
    expectRefusal(second, dataDir, first.proc.pid)

    // The first one still serves and writes; after a clean stop and a restart everything is there.
    const after = await call(first.url, 'POST', '/admin/v1/accounts', { name: 'after', balance: 101 })
    expect(after.status).toBe(201)
    accountIds = [before.body.data.id, after.body.data.id]
    await expectAccounts(first)
    expect(await first.stop()).toBe(0)
    expect(existsSync(lockFile)).toBe(false)

    const restarted = await startHolder()
    await expectAccounts(restarted)
    expect(await restarted.stop()).toBe(0)
  }, 180_000)

  test('kill -9 leaves its lock behind; the next start takes it over and finds the data', async () => {
    const crashed = await startHolder()
    await crashed.kill9()
    expect(JSON.parse(readFileSync(lockFile, 'utf8')).pid).toBe(crashed.proc.pid)

    const next = await startHolder()
    expect(JSON.parse(readFileSync(lockFile, 'utf8')).pid).toBe(next.proc.pid)
    await expectAccounts(next)
    await next.kill9()
  }, 180_000)

  test.if(process.platform === 'linux')(
    'a lock naming a pid that another process has since taken is stale',
    async () => {
      // The lock of the kill -9 above names a dead process; hand its pid to a live, unrelated process.
      const stale = JSON.parse(readFileSync(lockFile, 'utf8'))
      const other = Bun.spawn(['sleep', '120'], { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' })
      cleanups.push(async () => {
        other.kill(9)
        await other.exited
      })
      const stat = readFileSync(`/proc/${other.pid}/stat`, 'utf8')
      const otherStart = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]

      // With that process's own start time the lock is live: refused, naming it.
      writeFileSync(lockFile, JSON.stringify({ ...stale, pid: other.pid, start: otherStart }))
      const refused = track(launch({ DATA_DIR: dataDir }))
      expect(await refused.proc.exited).toBe(1)
      expectRefusal(refused, dataDir, other.pid)

      // With the start time of the process that wrote it, the pid was reused: taken over.
      writeFileSync(lockFile, JSON.stringify({ ...stale, pid: other.pid }))
      const next = await startHolder()
      await expectAccounts(next)
      await next.kill9()
    },
    180_000,
  )

  test('a lock written on another host is never judged from here: refused, naming the file to delete', async () => {
    const stale = JSON.parse(readFileSync(lockFile, 'utf8'))
    writeFileSync(lockFile, JSON.stringify({ ...stale, host: 'elsewhere.example' }))
    const refused = track(launch({ DATA_DIR: dataDir }))
    expect(await refused.proc.exited).toBe(1)
    const lines = refused.output().trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(`is in use by process ${stale.pid} on host elsewhere.example`)
    expect(lines[0]).toEndWith(`if that host no longer runs it, delete ${lockFile}`)
    writeFileSync(lockFile, JSON.stringify(stale))
  }, 60_000)

  test('a start killed while clearing a stale lock leaves a marker: refused, naming both files to delete', async () => {
    const stale = JSON.parse(readFileSync(lockFile, 'utf8'))
    const marker = `${lockFile}.break-${stale.token}`
    writeFileSync(marker, '1\n')
    const old = new Date(Date.now() - 60_000)
    utimesSync(marker, old, old)
    const refused = track(launch({ DATA_DIR: dataDir }))
    expect(await refused.proc.exited).toBe(1)
    expect(refused.output().trim()).toBe(
      `cannot start: DATA_DIR ${dataDir}: a start was interrupted while clearing a stale lock; ` +
        `if no other process uses this DATA_DIR, delete ${lockFile} and ${marker}`,
    )
    rmSync(marker)
  }, 60_000)

  test('three processes started at once over a stale lock: exactly one serves, the others name it', async () => {
    const children = [0, 1, 2].map(() => track(launch({ DATA_DIR: dataDir })))
    const { serving, exited } = await settle(children)
    expect(serving).toHaveLength(1)
    expect(exited).toHaveLength(2)
    for (const loser of exited) expectRefusal(loser, dataDir, serving[0]!.proc.pid)
    await stopAll(children)
  }, 180_000)

  test('three processes started at once on a new DATA_DIR: exactly one serves, with the admin token it generated', async () => {
    const fresh = tempDataDir('lock-fresh')
    // No ADMIN_TOKEN: the one that wins generates it into DATA_DIR; the others must not touch it.
    const children = [0, 1, 2].map(() => track(launch({ DATA_DIR: fresh, ADMIN_TOKEN: '' })))
    const { serving, exited } = await settle(children)
    expect(serving).toHaveLength(1)
    expect(exited).toHaveLength(2)
    for (const loser of exited) expectRefusal(loser, fresh, serving[0]!.proc.pid)
    const token = readFileSync(join(fresh, 'admin-token'), 'utf8').trim()
    const accounts = await fetch(`${serving[0]!.url}/admin/v1/accounts`, { headers: { authorization: `Bearer ${token}` } })
    expect(accounts.status).toBe(200)
    await stopAll(children)
  }, 180_000)
})

describe.if(!usingPostgres())('the lock itself, raced', () => {
  // Processes that only take the lock (no database), released at one instant to widen the race that
  // service starts rarely hit; each round's winner is then killed, so the next round races over a stale lock.
  const LOCK = join(import.meta.dir, '..', '..', 'src', 'db', 'lock.ts')
  const script = `
    const { lockDataDir } = await import(${JSON.stringify(LOCK)})
    const at = Number(process.argv[2])
    await Bun.sleep(Math.max(0, at - Date.now() - 5))
    while (Date.now() < at) {}
    try {
      lockDataDir(process.argv[1])
      console.log('won')
      await Bun.sleep(600_000)
    } catch (error) {
      console.log(error.message)
    }`

  async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
    let text = ''
    const decoder = new TextDecoder()
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true })
      if (text.includes('\n')) break
    }
    return text.split('\n')[0]!
  }

  test('eight processes at the same instant, five rounds: exactly one holds it each time', async () => {
    const dir = tempDataDir('lock-race')
    for (let round = 0; round < 5; round++) {
      const at = Date.now() + 1_500
      const racers = Array.from({ length: 8 }, () => {
        const proc = Bun.spawn(['bun', '-e', script, dir, String(at)], { stdin: 'ignore', stdout: 'pipe', stderr: 'inherit' })
        cleanups.push(async () => {
          proc.kill(9)
          await proc.exited
        })
        return { proc, line: firstLine(proc.stdout as ReadableStream<Uint8Array>) }
      })
      const lines = await Promise.all(racers.map((r) => r.line))
      const winners = racers.filter((_, i) => lines[i] === 'won')
      expect(winners).toHaveLength(1)
      const winner = winners[0]!.proc
      for (const line of lines.filter((l) => l !== 'won')) expect(line).toContain(`is in use by process ${winner.pid} (started`)
      winner.kill(9)
      await Promise.all(racers.map((r) => r.proc.exited))
    }
  }, 120_000)
})

describe.if(usingPostgres())('with DATABASE_URL', () => {
  test('two instances sharing a DATA_DIR both serve: only the embedded database is locked', async () => {
    const dataDir = tempDataDir('lock-pg')
    const database = await createPostgresDatabase()
    cleanups.push(database.drop)
    const children = [0, 1].map(() => track(launch({ DATA_DIR: dataDir, DATABASE_URL: database.url })))
    const { serving } = await settle(children)
    expect(serving).toHaveLength(2)
    expect(existsSync(join(dataDir, 'lock'))).toBe(false)
    await stopAll(children)
  }, 120_000)
})
