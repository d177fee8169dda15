// `partitions`: where the history tables' partitioning stands, and `--convert` to run the conversion
// of an existing installation in the foreground (db/partitions.ts; the service's partitions worker
// does the same in the background). Runs here against the database, like restore: with PostgreSQL
// while the service serves (the conversion takes its advisory lock, so it and the service's worker
// never convert at once); with the embedded database only while the service is stopped (it holds
// DATA_DIR). The service's modules load only when it runs.

import { readConfig } from '../config'
import { systemClock } from '../lib/clock'
import { CliError } from './client'
import type { Command } from './command'

const day = (date: Date | null) => (date ? date.toISOString().slice(0, 10) : '-')

const partitions: Command = {
  name: 'partitions',
  args: [],
  summary: 'show how the history tables are partitioned by month; --convert converts an older installation now',
  details:
    'messages, ledger, webhook_events, webhook_attempts and inbound_messages are partitioned by month. An installation ' +
    'from before partitioning is converted by the running service in the background, in steps that resume if stopped; ' +
    '--convert runs the same steps here in the foreground and prints each. Connects to DATABASE_URL itself (with the ' +
    'embedded database, stop the service first).',
  example: 'bun run admin partitions --convert',
  flags: { convert: { help: 'convert the tables still plain now, step by step' } },
  async run(ctx) {
    const config = readConfig()
    const { openDatabase } = await import('../db/client')
    const { convertHistory, partitionState, ensurePartitions, CONVERSION_LOCK } = await import('../db/partitions')
    let database: Awaited<ReturnType<typeof openDatabase>>
    try {
      database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: 2 })
    } catch (error) {
      throw new CliError(`cannot open the database: ${(error as Error).message}`)
    }
    const steps: string[] = []
    try {
      const [migrated] = await database.sql<{ ok: boolean }[]>`select to_regclass('history_partitioning') is not null as ok`
      if (!migrated!.ok) throw new CliError('the database is not migrated to this version: start the service once first')
      if (ctx.flags.convert === true) {
        const convert = async () => {
          await convertHistory(database.sql, {
            concurrently: database.mode === 'postgres',
            clock: systemClock(),
            onStep: (table, step) => {
              steps.push(`${table}: ${step}`)
              if (!ctx.json) console.log(`${table}: ${step}`)
            },
          })
          await ensurePartitions(database.sql)
        }
        // Embedded: this process holds DATA_DIR, nobody else can convert (and its one connection cannot be set aside).
        if (database.mode === 'embedded') await convert()
        else {
          const lock = await database.sql.reserve()
          try {
            const [row] = await lock<{ ok: boolean }[]>`select pg_try_advisory_lock(${CONVERSION_LOCK}) as ok`
            if (!row!.ok) throw new CliError('a conversion is running already (the service is doing it): see `partitions` again later')
            try {
              await convert()
            } finally {
              await lock`select pg_advisory_unlock(${CONVERSION_LOCK})`
            }
          } finally {
            lock.release()
          }
        }
      }
      const state = await partitionState(database.sql)
      return {
        data: { steps, tables: state },
        text: () =>
          state
            .map((s) =>
              s.partitioned
                ? `${s.table}: partitioned, ${s.partitions.length} partitions (${s.partitions.map((p) => `${p.name} to ${day(p.to)}`).join(', ')})`
                : `${s.table}: not partitioned yet (next step: ${s.step}${s.boundary ? `, boundary ${day(s.boundary)}` : ''})`,
            )
            .join('\n'),
      }
    } finally {
      await database.close()
    }
  },
}

export const partitionCommands: Command[] = [partitions]
