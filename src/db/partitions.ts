// Partitioned history: messages, ledger, webhook_events, webhook_attempts and inbound_messages are
// partitioned by month of created_at (UTC), so retention drops or detaches whole months instead of
// deleting rows in batches. This file owns their shape: converting a plain table, creating the months
// ahead, listing the partitions, dropping and detaching them.
//
// Converting a table (`convertHistory`), each step checking the state first so a killed run resumes:
//   1. a boundary is chosen and stored (history_partitioning): the first day of the month after next,
//      so the old table takes this month's and next month's rows until it is attached;
//   2. each unique index is built again with created_at added (a unique index of a partitioned table
//      must include its key), CONCURRENTLY on PostgreSQL: writes go on during the build;
//   3. CHECK (created_at < boundary) is added NOT VALID, then validated (a scan that blocks no write);
//   4. one short transaction (lock_timeout, tried again later if a long transaction holds the table):
//      the old table is renamed <table>_legacy, the partitioned parent created like it (its identity
//      continuing the old sequence; the same checks, foreign keys, triggers and indexes), the old table
//      attached as the partition FROM (MINVALUE) TO (boundary): the validated check spares the scan and
//      the indexes built in 2 (and the old plain ones) are attached, not built. Then the months from the
//      boundary on are created.
// An empty table (a fresh install) takes all steps in one transaction at migration time, with the
// boundary at this month's start: a new installation runs partitioned from its first row.
// Statements keep naming the parent: after the swap a prepared statement is planned again on it.

import type { Db, Sql, Tx } from './client'
import type { Clock } from '../lib/clock'

export const HISTORY_TABLES = ['messages', 'ledger', 'webhook_events', 'webhook_attempts', 'inbound_messages'] as const
export type HistoryTable = (typeof HISTORY_TABLES)[number]

/** Months created ahead of the current one (checked at start and by the partitions worker). */
export const MONTHS_AHEAD = 2
const PARTITION_LOCK = 7_240_002
/** Held (session-level) by whoever runs convertHistory: the service's worker or the command line. */
export const CONVERSION_LOCK = 7_240_003
/** How long the swap (and a drop or detach) waits for a lock before giving up until the next run. */
const LOCK_TIMEOUT = '3s'
/** The clock a conversion, a drop or a detach reads the date from and waits on between its tries. */
type PartitionClock = Pick<Clock, 'now' | 'sleep'>
/** A stored boundary closer than this is moved a month on (rows past it would be refused before the swap). */
const BOUNDARY_MARGIN_DAYS = 7

export type Partition = { table: HistoryTable; name: string; from: Date | null; to: Date }
export type TableState = {
  table: HistoryTable
  partitioned: boolean
  step: 'partitioned' | 'plain' | 'indexes' | 'check' | 'swap'
  boundary: Date | null
  partitions: Partition[]
}

const monthStart = (date: Date, add = 0) => new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + add, 1))
const monthName = (table: string, from: Date) => `${table}_p${from.getUTCFullYear()}_${String(from.getUTCMonth() + 1).padStart(2, '0')}`
const ident = (name: string) => `"${name.replace(/"/g, '""')}"`
const literal = (date: Date) => `'${date.toISOString()}'`
const shortName = (name: string, suffix: string) => `${name.slice(0, 63 - suffix.length)}${suffix}`
const checkName = (table: string) => `${table}_before_boundary`

async function isPartitioned(db: Db, table: string): Promise<boolean> {
  const [row] = await db<{ yes: boolean }[]>`
    select exists (select 1 from pg_partitioned_table p join pg_class c on c.oid = p.partrelid
                   where c.relname = ${table} and c.relnamespace = current_schema()::regnamespace) as yes`
  return row!.yes
}

/** The partitions of the history tables (or of one), oldest first; the legacy one has no lower bound. */
export async function listPartitions(db: Db, only?: HistoryTable): Promise<Partition[]> {
  const rows = await db<{ parent: HistoryTable; name: string; from: Date | null; to: Date }[]>`
    select parent.relname as parent, child.relname as name,
           nullif((regexp_match(pg_get_expr(child.relpartbound, child.oid), 'FROM [(]''([^'']+)''[)]'))[1], '')::timestamptz as "from",
           (regexp_match(pg_get_expr(child.relpartbound, child.oid), 'TO [(]''([^'']+)''[)]'))[1]::timestamptz as "to"
    from pg_inherits i
    join pg_class parent on parent.oid = i.inhparent
    join pg_class child on child.oid = i.inhrelid
    where parent.relnamespace = current_schema()::regnamespace and child.relkind = 'r'
      and parent.relname = any(${only ? [only] : [...HISTORY_TABLES]}::text[])
    order by parent.relname, 4`
  return rows.map((r) => ({ table: r.parent, name: r.name, from: r.from, to: r.to }))
}

/**
 * Creates the months missing up to MONTHS_AHEAD after `now`'s, for every partitioned history table.
 * Several instances may run it at once: an advisory lock takes them in turn. Returns how many it made.
 */
export async function ensurePartitions(sql: Sql, now = new Date()): Promise<number> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${PARTITION_LOCK})`
    let made = 0
    for (const table of HISTORY_TABLES) {
      if (!(await isPartitioned(tx, table))) continue
      made += await createMonths(tx, table, now)
    }
    return made
  })
}

async function createMonths(tx: Db, table: HistoryTable, now: Date): Promise<number> {
  const partitions = await listPartitions(tx, table)
  const last = partitions.reduce<Date | null>((max, p) => (max === null || p.to > max ? p.to : max), null)
  const until = monthStart(now, MONTHS_AHEAD + 1)
  let made = 0
  for (let from = last ?? monthStart(now); from < until; from = monthStart(from, 1)) {
    await tx.unsafe(
      `create table ${ident(monthName(table, from))} partition of ${ident(table)} for values from (${literal(from)}) to (${literal(monthStart(from, 1))})`,
    )
    made++
  }
  return made
}

// ---------------------------------------------------------------------------------------------------
// The conversion

type IndexDef = { name: string; unique: boolean; valid: boolean; using: string }

/** The indexes of a plain table: name, whether unique, and what follows `USING` in its definition. */
async function indexesOf(db: Db, table: string): Promise<IndexDef[]> {
  const rows = await db<{ name: string; unique: boolean; valid: boolean; def: string }[]>`
    select c.relname as name, i.indisunique as unique, i.indisvalid as valid, pg_get_indexdef(i.indexrelid) as def
    from pg_index i join pg_class c on c.oid = i.indexrelid
    where i.indrelid = ${table}::regclass
    order by c.relname`
  return rows.map((r) => ({ name: r.name, unique: r.unique, valid: r.valid, using: r.def.slice(r.def.indexOf(' USING ') + 1) }))
}

/** `USING btree (a, b) WHERE ...` with created_at added to the key columns (unless it is one). */
function withPartitionKey(using: string): string {
  const open = using.indexOf('(')
  let depth = 0
  let close = open
  for (; close < using.length; close++) {
    if (using[close] === '(') depth++
    if (using[close] === ')' && --depth === 0) break
  }
  const columns = using.slice(open + 1, close)
  if (columns.split(',').some((c) => c.trim() === 'created_at')) return using
  return `${using.slice(0, close)}, created_at${using.slice(close)}`
}

const PART = '_part'
/** The unique indexes the partitioned parent needs, as built on the plain table before the swap. */
function uniqueIndexesNeeded(indexes: IndexDef[]): { name: string; using: string }[] {
  return indexes
    .filter((ix) => ix.unique && !ix.name.endsWith(PART) && withPartitionKey(ix.using) !== ix.using)
    .map((ix) => ({ name: shortName(ix.name, PART), using: withPartitionKey(ix.using) }))
}

async function storedBoundary(db: Db, table: HistoryTable): Promise<Date | null> {
  const [row] = await db<{ boundary: Date }[]>`select boundary from history_partitioning where table_name = ${table}`
  return row?.boundary ?? null
}

async function checkState(db: Db, table: string): Promise<'none' | 'not valid' | 'valid'> {
  const [row] = await db<{ validated: boolean }[]>`
    select convalidated as validated from pg_constraint where conrelid = ${table}::regclass and conname = ${checkName(table)}`
  return row ? (row.validated ? 'valid' : 'not valid') : 'none'
}

/** Where each history table stands: partitioned (with its partitions) or how far its conversion went. */
export async function partitionState(db: Db): Promise<TableState[]> {
  const all = await listPartitions(db)
  const states: TableState[] = []
  for (const table of HISTORY_TABLES) {
    const boundary = await storedBoundary(db, table)
    if (await isPartitioned(db, table)) {
      states.push({ table, partitioned: true, step: 'partitioned', boundary, partitions: all.filter((p) => p.table === table) })
      continue
    }
    const indexes = await indexesOf(db, table)
    const built = uniqueIndexesNeeded(indexes).every((n) => indexes.some((ix) => ix.name === n.name && ix.valid))
    const check = await checkState(db, table)
    const step = boundary === null ? 'plain' : !built ? 'indexes' : check !== 'valid' ? 'check' : 'swap'
    states.push({ table, partitioned: false, step, boundary, partitions: [] })
  }
  return states
}

export type ConvertOptions = {
  /** false on the embedded database (one session: CONCURRENTLY buys nothing there). */
  concurrently: boolean
  /** The date (which months) and the waits between tries of a lock (the worker's deps.clock). */
  clock: PartitionClock
  /** What each step did, for the log or the command line. */
  onStep?: (table: HistoryTable, step: string) => void
}

/**
 * Converts every history table not partitioned yet, step by step (see the top of this file); each
 * step checks what is done, so a run that was killed resumes. Returns the tables converted now.
 * `sql` must not be a transaction (CONCURRENTLY cannot run in one).
 */
export async function convertHistory(sql: Sql, options: ConvertOptions): Promise<HistoryTable[]> {
  const converted: HistoryTable[] = []
  for (const table of HISTORY_TABLES) {
    if (await isPartitioned(sql, table)) continue
    if (await convertTable(sql, table, options)) converted.push(table)
  }
  return converted
}

async function convertTable(sql: Sql, table: HistoryTable, options: ConvertOptions): Promise<boolean> {
  const now = options.clock.now()
  const say = (step: string) => options.onStep?.(table, step)
  // 1. The boundary, moved on (with its check) if it came too close while the conversion waited.
  let boundary = await storedBoundary(sql, table)
  if (boundary === null || boundary.getTime() - now.getTime() < BOUNDARY_MARGIN_DAYS * 86_400_000) {
    boundary = monthStart(now, 2)
    await sql.unsafe(`alter table ${ident(table)} drop constraint if exists ${ident(checkName(table))}`)
    await sql`
      insert into history_partitioning (table_name, boundary) values (${table}, ${boundary})
      on conflict (table_name) do update set boundary = excluded.boundary`
    say(`boundary ${boundary.toISOString()}`)
  }
  // 2. The unique indexes with created_at. A build killed halfway leaves an invalid index: built again.
  const concurrently = options.concurrently ? 'concurrently ' : ''
  const indexes = await indexesOf(sql, table)
  for (const needed of uniqueIndexesNeeded(indexes)) {
    const found = indexes.find((ix) => ix.name === needed.name)
    if (found?.valid) continue
    if (found) await sql.unsafe(`drop index ${concurrently}if exists ${ident(found.name)}`)
    const started = performance.now()
    await sql.unsafe(`create unique index ${concurrently}${ident(needed.name)} on ${ident(table)} ${needed.using}`)
    say(`index ${needed.name} built in ${Math.round(performance.now() - started)} ms`)
  }
  // 3. The check that lets the attach skip its scan: added without a scan, then validated (a scan
  // under a lock that lets writes go on).
  if ((await checkState(sql, table)) === 'none') {
    await lockTimeout(sql, options.clock, (tx) =>
      tx.unsafe(
        `alter table ${ident(table)} add constraint ${ident(checkName(table))} check (created_at < ${literal(boundary!)}) not valid`,
      ),
    )
  }
  if ((await checkState(sql, table)) === 'not valid') {
    const started = performance.now()
    await sql.unsafe(`alter table ${ident(table)} validate constraint ${ident(checkName(table))}`)
    say(`check validated in ${Math.round(performance.now() - started)} ms`)
  }
  // 4. The swap.
  const started = performance.now()
  const swapped = await lockTimeout(sql, options.clock, async (tx) => {
    await tx`select pg_advisory_xact_lock(${PARTITION_LOCK})`
    if (await isPartitioned(tx, table)) return false
    await tx.unsafe(`lock table ${ident(table)} in access exclusive mode`)
    await swap(tx, table, boundary!, now)
    return true
  })
  if (swapped) say(`swapped in ${Math.round(performance.now() - started)} ms`)
  // The parent's own statistics (the planner's estimates for joins); its months have theirs.
  if (swapped) await sql.unsafe(`analyze ${ident(table)}`)
  return swapped
}

/** `fn` in a transaction that waits at most LOCK_TIMEOUT for each lock; tried a few times (a second apart, on `clock`). */
async function lockTimeout<T>(sql: Sql, clock: Pick<Clock, 'sleep'>, fn: (tx: Db) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await sql.begin(async (tx) => {
        await tx.unsafe(`set local lock_timeout = '${LOCK_TIMEOUT}'`)
        return fn(tx)
      })) as T
    } catch (error) {
      if ((error as { code?: string }).code !== '55P03' || attempt >= 5) throw error
      await clock.sleep(1000)
    }
  }
}

/** Step 4, inside the caller's transaction holding the table's exclusive lock. */
async function swap(tx: Db, table: HistoryTable, boundary: Date, now: Date): Promise<void> {
  const legacy = `${table}_legacy`
  const indexes = (await indexesOf(tx, table)).filter((ix) => ix.valid)
  const parentIndexes = indexes
    .filter((ix) => !ix.name.endsWith(PART))
    .map((ix) => ({ name: ix.name, unique: ix.unique, using: ix.unique ? withPartitionKey(ix.using) : ix.using }))
  const [seq] = await tx<{ name: string | null }[]>`select pg_get_serial_sequence(${table}, 'id') as name`
  await tx.unsafe(`alter table ${ident(table)} rename to ${ident(legacy)}`)
  // The old table's indexes keep working on its rows; their names go to the parent's.
  for (const ix of indexes) {
    if (!ix.name.endsWith(PART)) await tx.unsafe(`alter index ${ident(ix.name)} rename to ${ident(shortName(ix.name, '_legacy'))}`)
  }
  await tx.unsafe(`create table ${ident(table)} (like ${ident(legacy)} including all excluding indexes) partition by range (created_at)`)
  await tx.unsafe(`alter table ${ident(table)} drop constraint ${ident(checkName(table))}`)
  // One sequence continues: the parent's takes the old one's place (and name); a partition may have no identity.
  if (seq?.name) {
    const [next] = await tx<{ name: string }[]>`select pg_get_serial_sequence(${table}, 'id') as name`
    await tx.unsafe(`select setval('${next!.name}', last_value, is_called) from ${seq.name}`)
    await tx.unsafe(`alter table ${ident(legacy)} alter column id drop identity`)
    await tx.unsafe(`alter sequence ${next!.name} rename to ${ident(`${table}_id_seq`)}`)
  }
  // Foreign keys to ordinary tables: on the parent; the attach adopts the old table's own (no check again).
  const keys = await tx<{ name: string; def: string }[]>`
    select conname as name, pg_get_constraintdef(oid) as def from pg_constraint where conrelid = ${legacy}::regclass and contype = 'f'`
  for (const key of keys) await tx.unsafe(`alter table ${ident(table)} add constraint ${ident(key.name)} ${key.def}`)
  // Triggers (ledger's append-only rule): on the parent, which clones them onto every partition.
  const triggers = await tx<{ name: string; def: string }[]>`
    select tgname as name, pg_get_triggerdef(oid) as def from pg_trigger where tgrelid = ${legacy}::regclass and not tgisinternal`
  for (const trigger of triggers) {
    await tx.unsafe(`drop trigger ${ident(trigger.name)} on ${ident(legacy)}`)
    await tx.unsafe(trigger.def.replace(/ ON \S+ /, ` ON ${ident(table)} `))
  }
  // Indexes on the empty parent: the attach finds the matching ones on the old table and adopts them.
  for (const ix of parentIndexes) {
    await tx.unsafe(`create ${ix.unique ? 'unique ' : ''}index ${ident(ix.name)} on ${ident(table)} ${ix.using}`)
  }
  await tx.unsafe(`alter table ${ident(table)} attach partition ${ident(legacy)} for values from (minvalue) to (${literal(boundary)})`)
  await createMonths(tx, table, now)
  await tx`update history_partitioning set converted_at = now() where table_name = ${table}`
}

/**
 * At migration time: converts at once every history table that is still plain and empty (a fresh
 * install), its legacy partition ending at `now`'s month. Tables with rows are left to convertHistory.
 */
export async function partitionEmptyTables(tx: Tx, now = new Date()): Promise<HistoryTable[]> {
  const converted: HistoryTable[] = []
  const empty = async (db: Db, table: string) =>
    (await db.unsafe<{ empty: boolean }[]>(`select not exists (select 1 from ${ident(table)}) as empty`))[0]!.empty
  for (const table of HISTORY_TABLES) {
    // Looked at without a lock first: a table with rows (or one a conversion has begun on) is left to
    // convertHistory, and is never locked here, at every start of a running installation.
    if ((await isPartitioned(tx, table)) || (await storedBoundary(tx, table)) !== null || !(await empty(tx, table))) continue
    const locked = await tx
      .savepoint(async (sp) => {
        await sp.unsafe(`set local lock_timeout = '${LOCK_TIMEOUT}'`)
        await sp.unsafe(`lock table ${ident(table)} in access exclusive mode`)
        return empty(sp, table)
      })
      .catch(() => false)
    if (!locked) continue
    const boundary = monthStart(now)
    await tx`
      insert into history_partitioning (table_name, boundary) values (${table}, ${boundary})
      on conflict (table_name) do update set boundary = excluded.boundary`
    await tx.unsafe(`alter table ${ident(table)} drop constraint if exists ${ident(checkName(table))}`)
    await tx.unsafe(`alter table ${ident(table)} add constraint ${ident(checkName(table))} check (created_at < ${literal(boundary)})`)
    const indexes = await indexesOf(tx, table)
    for (const needed of uniqueIndexesNeeded(indexes)) {
      await tx.unsafe(`drop index if exists ${ident(needed.name)}`)
      await tx.unsafe(`create unique index ${ident(needed.name)} on ${ident(table)} ${needed.using}`)
    }
    await swap(tx, table, boundary, now)
    converted.push(table)
  }
  return converted
}

// ---------------------------------------------------------------------------------------------------
// Retention's side: whole partitions dropped or detached

/**
 * Drops the months of webhook events that ended more than `days` ago and hold no pending event,
 * oldest first, stopping at the first that must stay; then the months of attempts older than every
 * event left (an attempt is written after its event, so none of them belongs to an event kept).
 * Returns the partitions dropped.
 */
export async function dropFinishedWebhookMonths(sql: Sql, days: number, clock: PartitionClock): Promise<string[]> {
  if (!(await isPartitioned(sql, 'webhook_events')) || !(await isPartitioned(sql, 'webhook_attempts'))) return []
  const dropped: string[] = []
  const cutoff = new Date(clock.now().getTime() - days * 86_400_000)
  for (const p of await listPartitions(sql, 'webhook_events')) {
    if (p.to > cutoff) break
    const gone = await lockTimeout(sql, clock, async (tx) => {
      await tx.unsafe(`lock table ${ident(p.name)} in access exclusive mode`)
      const [row] = await tx.unsafe<{ pending: boolean }[]>(
        `select exists (select 1 from ${ident(p.name)} where status = 'pending') as pending`,
      )
      if (row!.pending) return false
      await tx.unsafe(`drop table ${ident(p.name)}`)
      return true
    })
    if (!gone) break
    dropped.push(p.name)
  }
  const events = await listPartitions(sql, 'webhook_events')
  const oldestEvent = events[0]
  for (const p of await listPartitions(sql, 'webhook_attempts')) {
    if (!oldestEvent || oldestEvent.from === null || p.to > oldestEvent.from) break
    await lockTimeout(sql, clock, (tx) => tx.unsafe(`drop table ${ident(p.name)}`))
    dropped.push(p.name)
  }
  return dropped
}

/**
 * Detaches (never drops) the months of messages, ledger and inbound messages that ended more than
 * `months` whole months before the clock's month: each becomes a table of its own, out of every query, for the
 * operator to archive (pg_dump -t) and drop. Returns the partitions detached.
 */
export async function detachOldHistory(sql: Sql, months: number, clock: PartitionClock): Promise<string[]> {
  const cutoff = monthStart(clock.now(), -months)
  const detached: string[] = []
  for (const table of ['messages', 'ledger', 'inbound_messages'] as const) {
    if (!(await isPartitioned(sql, table))) continue
    for (const p of await listPartitions(sql, table)) {
      if (p.to > cutoff) break
      await lockTimeout(sql, clock, (tx) => tx.unsafe(`alter table ${ident(table)} detach partition ${ident(p.name)}`))
      detached.push(p.name)
    }
  }
  return detached
}
