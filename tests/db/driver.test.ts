// postgres.js 3.4.9 throws a TypeError out of a setImmediate when a write runs on a connection whose
// socket has closed (porsager/postgres#1066, #1208): nothing can catch it, so a database outage could
// kill the service (the fault test's outages did). patches/postgres@3.4.9.patch settles such a write
// with CONNECTION_CLOSED instead; this proves the patch is applied. PostgreSQL only: it ends the
// connection's server process, which the embedded database does not have.

import { afterAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createPostgresDatabase, usingPostgres } from '../helpers/db'

const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

test.skipIf(!usingPostgres())(
  'a statement on a connection whose server went away is answered CONNECTION_CLOSED; the process lives',
  async () => {
    const db = await createPostgresDatabase()
    cleanups.push(db.drop)
    const sql = postgres(db.url, { max: 2, onnotice: () => {} })
    const other = postgres(db.url, { max: 1, onnotice: () => {} })
    cleanups.push(async () => void (await Promise.all([sql.end({ timeout: 1 }), other.end({ timeout: 1 })])))
    // A connection held for one caller, as a transaction holds it between its statements.
    const held = await sql.reserve()
    const [row] = await held<{ pid: number }[]>`select pg_backend_pid() as pid`
    await other`select pg_terminate_backend(${row!.pid})`
    const codeOf = (run: Promise<unknown>) =>
      run.then(
        () => 'answered',
        (error: { code?: string }) => error.code,
      )
    expect(await codeOf(held`select 1`)).toBeOneOf(['CONNECTION_CLOSED', 'ECONNRESET'])
    // The next write finds no socket: unpatched, a TypeError nobody can catch ends the test process here.
    expect(await codeOf(held`select 2`)).toBe('CONNECTION_CLOSED')
    // The pool itself goes on.
    expect([...(await sql`select 3 as n`)]).toEqual([{ n: 3 }])
  },
)
