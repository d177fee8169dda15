// The app wired to a real test database, driven through app.handle like an HTTP client would.

import { readConfig, type Config } from '../../src/config'
import { createApp } from '../../src/app'
import { buildDeps } from '../../src/server'
import { startWorkers, WORKERS } from '../../src/workers'
import type { Deps } from '../../src/deps'
import type { Loop } from '../../src/workers/loop'
import type { Provider } from '../../src/providers/provider'
import { TestClock, type Clock } from '../../src/lib/clock'
import type { Sql } from '../../src/db/client'
import { testDatabase, type TestDatabase } from './db'
import { type WorkerName } from '../../src/deps'
import { TEST_TWILIO_AUTH_TOKEN } from './reports'
import { setPasswordHashCostForTests } from '../../src/modules/users/service'

// argon2id at 1 MiB and 1 pass instead of Bun's 64 MiB and 2: the dashboard's tests sign users in
// hundreds of times, and each sign-in (known e-mail or not) verifies a hash. Same algorithm, same checks.
setPasswordHashCostForTests({ memoryCost: 1024, timeCost: 1 })

export const ADMIN_TOKEN = 'test-admin-token-0123456789'

export type TestApp = {
  db: TestDatabase
  deps: Deps
  config: Config
  /** The loops deps.wake reaches (startWorkers fills it; tests may add the one they start). */
  loops: Map<WorkerName, Loop>
  /** One step of a worker, exactly as its loop runs it (for tests that start no loops). */
  runWorker(name: WorkerName): Promise<number>
  /**
   * A step of the worker in another instance of the service on the same database: its own hand-offs
   * (leases it holds), caches and pools, as a second process would have (made at its first use).
   */
  runWorkerElsewhere(name: WorkerName): Promise<number>
  app: ReturnType<typeof createApp>
  request(
    method: string,
    path: string,
    options?: { body?: unknown; rawBody?: string; key?: string | null; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>
  api(
    method: string,
    path: string,
    key: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Headers }>
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }>
  /** A new account with `balance` and one active key. */
  account(balance?: number, options?: { price?: number }): Promise<{ accountId: number; key: string; keyId: number }>
  close(): Promise<void>
}

export async function testApp(
  options: {
    env?: Record<string, string>
    provider?: Provider
    workers?: boolean
    databaseSettings?: Record<string, string>
    /** The clock the app runs on (a TestClock moves only when the test moves it); default: the system's. */
    clock?: Clock
    /** Wraps the database client the app runs on (tests/helpers/in-flight.ts counts its statements). */
    wrapSql?: (sql: Sql) => Sql
    /**
     * With a TestClock: each request and worker step runs under `clock.run`, so the code sleeps as long
     * as it wants (a pace slot, a recipient's gap, a retry's wait) and the clock moves to each sleep.
     */
    runOnClock?: boolean
  } = {},
): Promise<TestApp> {
  const db = await testDatabase({ settings: options.databaseSettings })
  // A Twilio auth token by default, so that every test app answers signed status callbacks
  // (tests/helpers/reports.ts), whatever its provider; a test's own env may replace it. No gap
  // between two messages to one recipient (Meta's is 6 s): the pace's own tests set one. No window
  // check: most tests send free-form to numbers that never wrote in (tests/inbound/window.test.ts sets it).
  const config = readConfig({
    WINDOW_CHECK: 'off',
    ADMIN_TOKEN,
    SIM_DELIVERED_MS: '50',
    SIM_READ_MS: '100',
    TWILIO_AUTH_TOKEN: TEST_TWILIO_AUTH_TOKEN,
    PROVIDER_RECIPIENT_GAP_MS: '0',
    ...options.env,
  })
  const appDb = options.wrapSql ? { ...db, sql: options.wrapSql(db.sql) } : db
  const built = buildDeps(config, appDb, { provider: options.provider, clock: options.clock })
  const deps = built.deps
  if (options.workers) startWorkers(deps, built.loops)
  const app = createApp(deps)
  const testClock = options.runOnClock && options.clock instanceof TestClock ? options.clock : undefined
  const onClock = <T>(work: Promise<T>): Promise<T> => (testClock ? testClock.run(work) : work)

  async function request(
    method: string,
    path: string,
    o: { body?: unknown; rawBody?: string; key?: string | null; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...o.headers }
    if (o.key) headers.authorization = `Bearer ${o.key}`
    let body: string | undefined = o.rawBody
    if (o.body !== undefined) body = JSON.stringify(o.body)
    if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json'
    const response = await onClock(app.handle(new Request(`http://localhost${path}`, { method, headers, body })))
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // not JSON: leave the text for the assertion to show
    }
    return { status: response.status, body: parsed as any, headers: response.headers }
  }

  let elsewhere: ReturnType<typeof buildDeps> | undefined
  const step = (name: WorkerName, on: typeof deps) => {
    const worker = WORKERS.find((w) => w.name === name)
    if (!worker || !('runOnce' in worker)) throw new Error(`${name} has no single step`)
    return onClock(worker.runOnce(on))
  }

  const t: TestApp = {
    db,
    deps,
    config,
    loops: built.loops,
    runWorker: (name) => step(name, deps),
    runWorkerElsewhere(name) {
      elsewhere ??= buildDeps(config, appDb, { provider: options.provider, clock: options.clock })
      return step(name, elsewhere.deps)
    },
    app,
    request,
    api: (method, path, key, body, headers) => request(method, `/api/v1${path}`, { key, body, headers }),
    admin: (method, path, body) => request(method, `/admin/v1${path}`, { key: ADMIN_TOKEN, body }),
    async account(balance = 0, o = {}) {
      const created = await t.admin('POST', '/accounts', { name: `acct-${Math.random().toString(36).slice(2, 8)}`, balance })
      if (created.status !== 201) throw new Error(`account create failed: ${JSON.stringify(created.body)}`)
      const accountId = created.body.data.id
      if (o.price !== undefined) await t.admin('PUT', '/price', { cost_per_message: o.price, account_id: accountId })
      const key = await t.admin('POST', `/accounts/${accountId}/keys`, { label: 'test' })
      return { accountId, key: key.body.data.key, keyId: key.body.data.id }
    },
    async close() {
      await Promise.all([...built.loops.values()].map((l) => l.stop()))
      deps.handoff.stop()
      await deps.reads.close()
      elsewhere?.deps.handoff.stop()
      await elsewhere?.deps.reads.close()
      await db.drop()
    },
  }
  return t
}

/** balance and sum(ledger) of one account, read straight from the database. */
export async function money(t: TestApp, accountId: number): Promise<{ balance: number; ledgerSum: number }> {
  const [row] = await t.db.sql<{ balance: number; ledger_sum: number }[]>`
    select a.balance, coalesce((select sum(amount) from ledger where account_id = a.id), 0)::bigint as ledger_sum
    from accounts a where a.id = ${accountId}`
  return { balance: row!.balance, ledgerSum: row!.ledger_sum }
}
