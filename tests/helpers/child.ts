// The service as a real child process (`bun src/main.ts`), for restart, crash and multi-instance tests.

import { ADMIN_TOKEN } from './app'
import { createMigratedPostgresDatabase, migratedDataDir, usingPostgres } from './db'

export type Child = {
  url: string
  proc: ReturnType<typeof Bun.spawn>
  output(): string
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number>
  /** SIGKILL: no cleanup at all. */
  kill9(): Promise<void>
}

/**
 * A loopback port free now, for a process started next to listen on. Taken at random below the
 * kernel's ephemeral range (32768-60999 on Linux), never from it: a port the kernel handed out and took
 * back is soon given to someone's outgoing connection (the other CI run opens thousands), and the
 * child then could not listen on it (a CI run failed so: "Failed to start server. Is port 34937 in use?").
 */
export function freePort(): number {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    try {
      Bun.serve({ port, hostname: '127.0.0.1', fetch: () => new Response() }).stop(true)
      return port
    } catch {
      // taken: another one
    }
  }
}

/**
 * Reads a piped child's stdout and stderr as they come, into one text in arrival order; the function
 * returned answers what has arrived so far.
 */
export function collectOutput(proc: { stdout: ReadableStream<Uint8Array>; stderr: ReadableStream<Uint8Array> }): () => string {
  let out = ''
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) out += decoder.decode(chunk)
  }
  void drain(proc.stdout)
  void drain(proc.stderr)
  return () => out
}

export async function startChild(
  env: Record<string, string>,
  options: { cmd?: string[]; cwd?: string; readyMs?: number } = {},
): Promise<Child> {
  const port = freePort()
  const baseEnv: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'DATABASE_URL') baseEnv[k] = v
  const proc = Bun.spawn(options.cmd ?? ['bun', `${import.meta.dir}/../../src/main.ts`], {
    cwd: options.cwd,
    env: { ...baseEnv, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'warn', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const output = collectOutput(proc)
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + (options.readyMs ?? 30_000)
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`service exited with ${proc.exitCode}: ${output()}`)
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    )
    if (ok) break
    if (Date.now() > deadline) {
      proc.kill(9)
      throw new Error(`service not ready in time: ${output()}`)
    }
    await Bun.sleep(50)
  }
  return {
    url,
    proc,
    output,
    async stop() {
      proc.kill('SIGTERM')
      return await proc.exited
    },
    async kill9() {
      proc.kill(9)
      await proc.exited
    },
  }
}

/** JSON call against a running child: admin routes with the admin token, /api routes with `key`. */
export async function call(base: string, method: string, path: string, body?: unknown, key?: string) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key ?? ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json().catch(() => null)) as any }
}

/**
 * The environment of a crash-test child: its own DATA_DIR (or, with DATABASE_URL, a fresh PostgreSQL
 * database), Twilio pointed at a local fake, a small hand-off pool. Cleanups go to `cleanups`.
 */
export async function crashTestEnv(
  name: string,
  fakeTwilioPort: number,
  cleanups: (() => Promise<void> | void)[],
): Promise<Record<string, string>> {
  // Migrated already: the crash tests are about what a crash leaves, not about a first start.
  const dataDir = await migratedDataDir(name, (fn) => cleanups.push(fn))
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: `AC${'0'.repeat(32)}`,
    TWILIO_AUTH_TOKEN: 'token',
    TWILIO_FROM: 'whatsapp:+14155238886',
    TWILIO_API_BASE: `http://127.0.0.1:${fakeTwilioPort}`,
    HANDOFF_CONCURRENCY: '4',
    // Free-form messages to numbers that never wrote in: the crash tests are not about the window.
    WINDOW_CHECK: 'off',
  }
  if (usingPostgres()) {
    const db = await createMigratedPostgresDatabase()
    env.DATABASE_URL = db.url
    cleanups.push(db.drop)
  }
  return env
}
