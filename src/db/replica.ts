// Where a read goes when DATABASE_READ_URL names a streaming replica: lists and exports read the
// replica, unless the caller wrote something the replica has not replayed yet.
//
// After a caller's write (any request but GET/HEAD/OPTIONS), the primary's WAL position
// (pg_current_wal_lsn(), taken after the commit) is remembered for that caller in memory. A read
// of that caller asks the replica how far it has replayed (pg_last_wal_replay_lsn()): past the
// caller's last write, the replica answers (and the mark is forgotten: the replica only moves
// forward); otherwise the primary does. So no answer is older than the caller's own last write,
// however far the replica lags, and a caller who has not written lately reads the replica at once.
// The marks live in this process: behind a load balancer, a caller's write on one instance and read
// on another is seen by that other only as the replica's state (README, "A read replica").

import postgres from 'postgres'
import { TYPES, type Sql } from './client'

/** Who reads and writes: an account (its keys and members share it), an operator, or the admin token. */
export type Caller = string

export type ReadRouter = {
  /** The database a read of `caller` goes to: the replica when it has replayed the caller's last write, else the primary. */
  read(caller: Caller | undefined): Promise<Sql>
  /** After `caller`'s write committed: remember the primary's WAL position (a no-op without a replica). */
  wrote(caller: Caller | undefined): Promise<void>
  close(): Promise<void>
}

/** The replica's pool: as the primary's (db/client.ts), under a name of its own. */
export function openReplica(url: string, poolMax: number): Sql {
  return postgres(url, {
    max: poolMax,
    types: TYPES,
    onnotice: () => {},
    connection: { application_name: 'messaging-api-reads' },
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 0.5),
  })
}

/** Without a replica everything reads the primary, at no cost. */
export function primaryOnly(primary: Sql): ReadRouter {
  return { read: async () => primary, wrote: async () => {}, close: async () => {} }
}

export function createReadRouter(primary: Sql, replica: Sql): ReadRouter {
  const lastWrite = new Map<Caller, string>()
  return {
    async read(caller) {
      // An unknown caller (none identified) reads the primary: nothing says what it expects to see.
      if (caller === undefined) return primary
      const lsn = lastWrite.get(caller)
      if (lsn === undefined) return replica
      try {
        // null when the server is not in recovery (not a replica): then the primary answers.
        const [row] = await replica<{ caught_up: boolean | null }[]>`select pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn as caught_up`
        if (!row?.caught_up) return primary
      } catch {
        // A replica that cannot answer is no reason to fail a read the primary can serve.
        return primary
      }
      // Forget the mark unless a newer write replaced it meanwhile.
      if (lastWrite.get(caller) === lsn) lastWrite.delete(caller)
      return replica
    },
    async wrote(caller) {
      if (caller === undefined) return
      let lsn: string
      try {
        const [row] = await primary<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`
        lsn = row!.lsn
      } catch {
        // The write is done and must be answered as such; the caller reads the primary until a later write's position is known.
        lastWrite.set(caller, UNKNOWN)
        return
      }
      // Two writes of one caller may finish in either order: keep the later position.
      const known = lastWrite.get(caller)
      if (known === undefined || known === UNKNOWN || lsnValue(lsn) > lsnValue(known)) lastWrite.set(caller, lsn)
    },
    close: () => replica.end({ timeout: 5 }),
  }
}

/** A position no replica reaches: the caller's last write is not known. */
const UNKNOWN = 'FFFFFFFF/FFFFFFFF'

/** An LSN's text ("16/B374D848") as a number, to compare two. */
function lsnValue(lsn: string): bigint {
  const [high, low] = lsn.split('/')
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`)
}
