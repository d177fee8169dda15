// What the routes and workers are built from. Tests build the same thing against their own database.

import type { Config } from './config'
import type { BackupHeader } from './db/backup'
import type { Database, Sql } from './db/client'
import type { ReadRouter } from './db/replica'
import type { Provider } from './providers/provider'
import type { Handoff } from './modules/messages/handoff'
import type { Charged, Refused, SingleCharge } from './modules/ledger/service'
import type { SecretBox } from './lib/secrets'
import type { SenderDirectory } from './modules/senders/directory'
import type { Clock } from './lib/clock'

export type Deps = {
  config: Config
  /**
   * Where every decision that depends on time asks the time and waits for it to pass (lib/clock.ts);
   * SQL takes its now from it through db/now.ts. The system's clock in production, a test clock in tests.
   */
  clock: Clock
  sql: Sql
  /**
   * Where a list or export reads (DATABASE_READ_URL): `reads.read(callerOf(request))` is the replica when it
   * has replayed that caller's last write, else `sql`; without a replica always `sql`. Reads that must see
   * a write (a send's answer, GET /balance, one message by id) use `sql`.
   */
  reads: ReadRouter
  /** The deployment's default sender's provider (PROVIDER); stored senders' are in `senders`. */
  provider: Provider
  /** The senders messages go through: the default one and the stored ones, each with its pace. */
  senders: SenderDirectory
  handoff: Handoff
  /** Seals and opens the credentials stored in the database (SECRETS_KEY or DATA_DIR/secrets-key). */
  secrets: SecretBox
  /** Charges one message (group commit across concurrent single sends). */
  chargeOne: (request: SingleCharge) => Promise<Charged | Refused>
  /** A client on a connection that keeps its session (Database.direct): undefined behind a pooler without DATABASE_DIRECT_URL and on the embedded database. */
  directSql?: Sql
  /** Subscribes to a NOTIFY channel on the process's one LISTEN (Database.listen); undefined where none can be made: workers poll. */
  listen?: Database['listen']
  /** Wakes the in-process worker loops after a commit that gave them work. */
  wake: (worker: WorkerName) => void
  /** The embedded database in a DATA_DIR only: a consistent backup file of it, taken while serving (db/backup.ts). */
  backup?: () => Promise<{ bytes: Uint8Array; header: BackupHeader }>
}

// Every background worker's name (workers/ has one file each): the names `wake` takes.
const WORKER_NAMES = [
  'handoff-recovery',
  'simulator-reports',
  'webhook-delivery',
  'campaign-runner',
  'campaign-scheduler',
  'parked-reports',
  'retention',
  'inbound-media',
  'partitions',
  'template-sync',
] as const

/** A worker's name: `deps.wake('campain-runner')` is a type error, not a silent no-op. */
export type WorkerName = (typeof WORKER_NAMES)[number]
