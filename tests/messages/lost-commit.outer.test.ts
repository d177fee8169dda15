// Outer ring (real time): a TCP proxy between the service and PostgreSQL loses COMMIT answers and makes real outages.
// A write whose COMMIT answer is lost: a TCP proxy between the service and PostgreSQL lets the
// statement commit, then cuts the connection instead of answering. The service cannot know whether it
// committed and runs it again: the request tokens make a second charge find the first one, and the
// `status = 'queued'` guard makes a second refund change nothing. Charged once, refunded once.
// (PostgreSQL only: the embedded database has a single connection, which the proxy cannot share.)

import { afterEach, expect, test } from 'bun:test'
import { readConfig } from '../../src/config'
import { createApp } from '../../src/app'
import { buildDeps } from '../../src/server'
import { CONNECT_WAIT_SECONDS } from '../../src/db/client'
import { ADMIN_TOKEN } from '../helpers/app'
import { testDatabase, usingPostgres } from '../helpers/db'
import { poolThroughProxy, startOutageProxy, startPgProxy, type RefuseWith } from '../helpers/pg-proxy'
import { handoffRecovery } from '../../src/workers/handoff-recovery'
import type { Provider } from '../../src/providers/provider'
import type { Deps } from '../../src/deps'

const cleanups: (() => Promise<void> | void)[] = []
// A connection the proxy cut can keep postgres.js's end() waiting for its 5 s timeout. Each test's
// apps are closed after it, with the time for that: all of them at the end once took over 30 s on CI.
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
}, 30_000)

/** The app on a fresh database behind a proxy that loses the COMMIT answer of the first statement containing `marker`. */
async function appLosingCommitOf(marker: string) {
  const db = await testDatabase()
  cleanups.push(() => db.drop())
  const { proxy, database } = await poolThroughProxy(db.url!, (target) => startPgProxy(target, marker), cleanups)

  const { deps } = buildDeps(readConfig({ ADMIN_TOKEN }), database)
  return { db, proxy, call: callerOf(deps) }
}

/** Calls the app of `deps` as an HTTP client would, with a bearer token and a JSON body. */
function callerOf(deps: Deps) {
  const app = createApp(deps)
  return async (method: string, path: string, token: string, body?: unknown) => {
    const response = await app.handle(
      new Request(`http://localhost${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    )
    return { status: response.status, body: (await response.json()) as any, retryAfter: response.headers.get('retry-after') }
  }
}

/**
 * A fresh database; `open` connects one instance's pool to it through a proxy of its own that plays
 * outages (so that two instances can meet outages of different lengths).
 */
async function databaseWithOutages(refuseWith: RefuseWith = 'reset') {
  const db = await testDatabase()
  cleanups.push(() => db.drop())
  return { db, open: () => poolThroughProxy(db.url!, (target) => startOutageProxy(target, refuseWith), cleanups) }
}

test.skipIf(!usingPostgres())('a lost COMMIT answer of a group-commit charge: each request charged once', async () => {
  // The charge statement of concurrent single sends is the one that locks accounts for a charge.
  const { db, proxy, call } = await appLosingCommitOf('request_item = 1')
  const keys: string[] = []
  const accounts: number[] = []
  for (let i = 0; i < 4; i++) {
    const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: `lost-${i}`, balance: 100 })
    accounts.push(account.body.data.id)
    keys.push((await call('POST', `/admin/v1/accounts/${account.body.data.id}/keys`, ADMIN_TOKEN, { label: 'k' })).body.data.key)
  }

  // Two sends per account at once: the charges go out together in one group-commit write.
  const sends = keys.flatMap((key, i) =>
    [0, 1].map((j) => call('POST', '/api/v1/messages/send', key, { to: `08123456780${i}`, body: `m${j}` })),
  )
  const answers = await Promise.all(sends)
  expect(proxy.cuts()).toBe(1)
  expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200))

  const rows = await db.sql<{ id: number; balance: number; charges: number; messages: number; ledger_sum: number }[]>`
    select a.id, a.balance,
           (select count(*)::int from ledger l where l.account_id = a.id and l.kind = 'charge') as charges,
           (select count(*)::int from messages m where m.account_id = a.id) as messages,
           (select sum(amount)::int from ledger l where l.account_id = a.id) as ledger_sum
    from accounts a order by a.id`
  expect(rows.map((r) => ({ ...r, id: 0 }))).toEqual(Array(4).fill({ id: 0, balance: 98, charges: 2, messages: 2, ledger_sum: 98 }))
})

test.skipIf(!usingPostgres())('a lost COMMIT answer of a refund: refunded once', async () => {
  // The refund of a refused hand-off commits, its answer is lost, and the outcome's write is retried.
  const { db, proxy, call } = await appLosingCommitOf('refunded_at = coalesce(')
  const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'lost-refund', balance: 100 })
  const accountId = account.body.data.id
  const key = (await call('POST', `/admin/v1/accounts/${accountId}/keys`, ADMIN_TOKEN, { label: 'k' })).body.data.key

  const refused = await call('POST', '/api/v1/messages/send', key, { to: '081234569999', body: 'refused' }) // the simulator refuses *9999
  expect(refused.status).toBe(502)
  expect(proxy.cuts()).toBe(1)
  const [row] = await db.sql<{ balance: number; refunds: number; ledger_sum: number; status: string }[]>`
    select a.balance,
           (select count(*)::int from ledger l where l.account_id = a.id and l.kind = 'refund') as refunds,
           (select sum(amount)::int from ledger l where l.account_id = a.id) as ledger_sum,
           (select status from messages m where m.account_id = a.id) as status
    from accounts a where a.id = ${accountId}`
  expect(row).toEqual({ balance: 100, refunds: 1, ledger_sum: 100, status: 'failed' })
})

// Refused with an error, or answered 57P03 as by a database starting up (which the driver alone would
// have failed the statement with at once).
for (const refuseWith of ['reset', 'starting'] as const)
  test.skipIf(!usingPostgres())(
    `a send made during a database outage of seconds waits for it, and is charged once (refused with a ${refuseWith})`,
    async () => {
      const { db, open } = await databaseWithOutages(refuseWith)
      const { database, proxy } = await open()
      const call = callerOf(buildDeps(readConfig({ ADMIN_TOKEN }), database).deps)
      const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'outage', balance: 100 })
      const key = (await call('POST', `/admin/v1/accounts/${account.body.data.id}/keys`, ADMIN_TOKEN, { label: 'k' })).body.data.key

      // Every connection cut and new ones refused for 4 s: the send's statements wait for a connection
      // (CONNECT_WAIT_SECONDS), and it is answered once the database is back.
      const started = Date.now()
      const outage = proxy.outage(4_000)
      await Bun.sleep(100)
      const during = await call('POST', '/api/v1/messages/send', key, { to: '081234567890', body: 'in the outage' })
      await outage
      expect(during.status).toBe(200)
      expect(Date.now() - started).toBeGreaterThanOrEqual(4_000)
      const after = await call('POST', '/api/v1/messages/send', key, { to: '081234567890', body: 'after the outage' })
      expect(after.status).toBe(200)
      const [row] = await db.sql<{ balance: number; charges: number }[]>`
    select balance, (select count(*)::int from ledger where kind = 'charge') as charges from accounts where id = ${account.body.data.id}`
      expect(row).toEqual({ balance: 98, charges: 2 })
    },
    30_000,
  )

// Past the client's wait for a connection the request is answered 503, whether the connections were
// refused with an error or with a clean close (on which postgres.js, unpatched, tried again for ever).
for (const refuseWith of ['reset', 'close'] as const)
  test.skipIf(!usingPostgres())(
    `a send during an outage longer than the wait for a connection: 503 after it, nothing charged (refused with a ${refuseWith})`,
    async () => {
      const { db, open } = await databaseWithOutages(refuseWith)
      const { database, proxy } = await open()
      const call = callerOf(buildDeps(readConfig({ ADMIN_TOKEN }), database).deps)
      const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'long outage', balance: 100 })
      const key = (await call('POST', `/admin/v1/accounts/${account.body.data.id}/keys`, ADMIN_TOKEN, { label: 'k' })).body.data.key

      const outage = proxy.outage(CONNECT_WAIT_SECONDS * 1000 + 8_000)
      await Bun.sleep(100)
      // Meanwhile /readyz says not ready within its own 2 s, not after the wait for a connection.
      const probed = Date.now()
      const ready = await call('GET', '/readyz', '')
      expect([ready.status, ready.body.code]).toEqual([503, 'SERVICE_UNAVAILABLE'])
      expect(Date.now() - probed).toBeLessThan(4_000)
      // A send, and at once more requests than the pool (4) has connections: the statements queued behind
      // the connecting ones count their time in the queue, so none waits one wait after another.
      const started = Date.now()
      const timed = async (answer: ReturnType<typeof call>) => ({ ...(await answer), ms: Date.now() - started })
      const [during, ...balances] = await Promise.all([
        timed(call('POST', '/api/v1/messages/send', key, { to: '081234567890', body: 'in the outage' })),
        ...Array.from({ length: 12 }, () => timed(call('GET', '/api/v1/balance', key))),
      ])
      expect([during!.status, during!.body.code, during!.retryAfter]).toEqual([503, 'SERVICE_UNAVAILABLE', '1'])
      // It waited for a connection, once: not at once, and not again for each retry of the statement.
      expect(during!.ms).toBeGreaterThanOrEqual(CONNECT_WAIT_SECONDS * 1000 - 500)
      expect(during!.ms).toBeLessThan(CONNECT_WAIT_SECONDS * 1000 + 7_000)
      expect(balances.map((b) => [b.status, b.body.code])).toEqual(Array(12).fill([503, 'SERVICE_UNAVAILABLE']))
      expect(Math.max(...balances.map((b) => b.ms))).toBeLessThan(CONNECT_WAIT_SECONDS * 1000 + 7_000)
      expect(proxy.refused()).toBeGreaterThan(2)
      await outage
      const [row] = await db.sql<{ balance: number; charges: number }[]>`
        select balance, (select count(*)::int from ledger where kind = 'charge') as charges from accounts where id = ${account.body.data.id}`
      expect(row).toEqual({ balance: 100, charges: 0 })
      const after = await call('POST', '/api/v1/messages/send', key, { to: '081234567890', body: 'after the outage' })
      expect(after.status).toBe(200)
    },
    60_000,
  )

test.skipIf(!usingPostgres())(
  'an outage between the provider’s acceptance and its record: the answer waits for the record, and names the SID the books hold',
  async () => {
    // Answered before the record, a crash meanwhile would let recovery hand the message over again
    // under another SID: the caller would hold a SID the books never have.
    const { db, open } = await databaseWithOutages()
    const { database, proxy } = await open()
    let outage: Promise<void> | undefined
    const provider: Provider = {
      name: 'twilio',
      async send() {
        outage ??= proxy.outage(4_000) // every connection cut as the provider accepts
        return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
      },
    }
    const { deps } = buildDeps(readConfig({ ADMIN_TOKEN, PROVIDER_RECIPIENT_GAP_MS: '0' }), database, { provider })
    cleanups.push(() => deps.handoff.stop())
    const call = callerOf(deps)
    const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'outage-record', balance: 100 })
    const key = (await call('POST', `/admin/v1/accounts/${account.body.data.id}/keys`, ADMIN_TOKEN, { label: 'k' })).body.data.key

    const started = Date.now()
    const sent = await call('POST', '/api/v1/messages/send', key, { to: '081234567890', body: 'accepted, then the outage' })
    expect(sent.status).toBe(200)
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_000)
    // Read at once, directly (not through the proxy): the SID answered is the one recorded.
    const [row] = await db.sql<{ sid: string | null; status: string }[]>`
      select message_sid as sid, status from messages where account_id = ${account.body.data.id}`
    expect(row).toEqual({ sid: sent.body.data.message_id, status: 'sent' })
    await outage
  },
  30_000,
)

test.skipIf(!usingPostgres())(
  'a statement whose connection breaks midway: 503 SERVICE_UNAVAILABLE, nothing of the database in it',
  async () => {
    // The list's page statement: the proxy lets it run, then cuts the connection before its answer.
    const { call } = await appLosingCommitOf('from page join messages m on m.id = page.id')
    const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'cut', balance: 100 })
    const key = (await call('POST', `/admin/v1/accounts/${account.body.data.id}/keys`, ADMIN_TOKEN, { label: 'k' })).body.data.key
    const listed = await call('GET', '/api/v1/messages', key)
    expect([listed.status, listed.body.code]).toEqual([503, 'SERVICE_UNAVAILABLE'])
    expect(JSON.stringify(listed.body)).not.toMatch(/ECONN|CONNECTION|postgres|select/i)
    expect((await call('GET', '/api/v1/messages', key)).status).toBe(200) // the next one goes through
  },
)

test.skipIf(!usingPostgres())(
  'an error answer that reads the database (the key checked before a validation error) during a cut: 503, not 500',
  async () => {
    // An invalid body is answered only after its key is checked; that check's statement is the one cut.
    const { call } = await appLosingCommitOf('join input on input.key_hash = k.key_hash')
    const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'cut-check', balance: 100 })
    const key = (await call('POST', `/admin/v1/accounts/${account.body.data.id}/keys`, ADMIN_TOKEN, { label: 'k' })).body.data.key
    const invalid = await call('POST', '/api/v1/messages/send', key, { to: 12, body: 'x' })
    expect([invalid.status, invalid.body.code]).toEqual([503, 'SERVICE_UNAVAILABLE'])
    const again = await call('POST', '/api/v1/messages/send', key, { to: 12, body: 'x' })
    expect([again.status, again.body.code]).toEqual([400, 'VALIDATION_ERROR'])
  },
)

test.skipIf(!usingPostgres())(
  'an outage longer than two leases under a live holder: recovery on another instance waits for it, the message is handed over once',
  async () => {
    // Leases of 4 s (renewed every 0.8 s). Both instances lose the database once the provider has the
    // message (not a fixed time after the send: its charge must not be the statement the outage cuts): the
    // other one for 8.2 s, the holder for 9.7 s. The holder's lease runs out at about 4.3 s and has been
    // expired for a lease's length when the other instance is back (8.5 s): only its hold-back after the
    // outage it saw (a lease, to 12.5 s) lets the holder, back at 10 s, renew it and record its outcome.
    const { db, open } = await databaseWithOutages()
    // One provider for both instances, counting attempts per message: it answers after 1 s, by when the
    // outage has begun, so the holder's outcome write waits for the database.
    const attempts = new Map<number, number>()
    const handedOver = Promise.withResolvers<void>()
    const provider: Provider = {
      name: 'twilio',
      async send(message) {
        attempts.set(message.id, (attempts.get(message.id) ?? 0) + 1)
        handedOver.resolve()
        await Bun.sleep(1_000)
        return { ok: true, sid: `SM${crypto.randomUUID().replaceAll('-', '')}` }
      },
    }
    const config = readConfig({ ADMIN_TOKEN, HANDOFF_LEASE_SECONDS: '4', PROVIDER_RECIPIENT_GAP_MS: '0' })
    const instance = async () => {
      const { database, proxy } = await open()
      const { deps } = buildDeps(config, database, { provider })
      cleanups.push(() => deps.handoff.stop())
      return { deps, proxy }
    }
    const holder = await instance()
    const other = await instance()
    const call = callerOf(holder.deps)
    const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name: 'outage-lease', balance: 100 })
    const key = (await call('POST', `/admin/v1/accounts/${account.body.data.id}/keys`, ADMIN_TOKEN, { label: 'k' })).body.data.key

    // The other instance looks for expired leases every 200 ms throughout, as its loop would when woken.
    if (!('runOnce' in handoffRecovery)) throw new Error('handoff-recovery has no single step')
    const step = handoffRecovery.runOnce
    let looking = true
    const recovery = (async () => {
      while (looking) {
        await step(other.deps).catch(() => 0)
        await Bun.sleep(200)
      }
    })()
    try {
      const sending = call('POST', '/api/v1/messages/send', key, { to: '081234567890', body: 'through the outage' })
      await handedOver.promise
      await Promise.all([holder.proxy.outage(9_700), other.proxy.outage(8_200)])
      const sent = await sending
      expect(sent.status).toBe(200)
      await Bun.sleep(4_000) // past the other instance's hold-back: it must find nothing to take over
    } finally {
      looking = false
      await recovery
    }
    const [row] = await db.sql<{ id: number; status: string; recoveries: number }[]>`
      select id, status, handoff_recoveries as recoveries from messages where account_id = ${account.body.data.id}`
    expect(row).toMatchObject({ status: 'sent', recoveries: 0 })
    expect(attempts.get(row!.id)).toBe(1)
  },
  50_000,
)
