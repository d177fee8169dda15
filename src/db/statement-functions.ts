// Statements kept as functions, behind a connection pooler. PgBouncer in transaction mode (1.18, Debian
// 12) cannot carry prepared statements, so every statement used to be parsed and planned each time it
// ran: in the lifecycle benchmark through PgBouncer that was over half of PostgreSQL's CPU (5 ms to plan
// the charge statement, 3 ms a status report's). A function's plans, though, are kept by each server
// session, whichever client calls it. So once a statement has succeeded RECUR_AFTER times in this
// process, it is installed as a PL/pgSQL function `stmt_<hash>` whose body is that very statement
// (`return query <statement>`, sql/0029), and from then on the client sends
// `select * from stmt_<hash>($1, ..., $n) as t(<its columns>)` with the same parameters instead
// (the client's sockets, ./wire.ts, send the call in the statement's Parse). Same transaction, same locks, same rows,
// same errors: only the text sent changes, and the statement's plan is made once per server session.
//
// Only statements that answer rows can be one (RETURN QUERY); the others, and any the server refuses
// (a pseudo-type such as void in their result), stay as they are, as does everything on a direct
// connection (named prepared statements keep their plans already). The hash covers the statement's text
// and its parameter and column types, so a changed statement is a new function; old ones stay unused.
// A statement whose text holds GENERIC_PLAN gets a function that always uses its generic plan
// (`plan_cache_mode = force_generic_plan` on the function): PostgreSQL keeps planning a batch that reads
// arrays (`unnest($1)`) afresh at each run, since its generic plan's estimate (10 rows an array) costs
// more than a custom plan's (the real few); for an UPDATE of a partitioned table that planning costs more
// than the statement (markSent: 2.0 ms a call in the function, 0.5 ms with its generic plan).
// A call that fails for its function's sake (it was dropped, or its result no longer fits: SQLSTATE
// class 42) goes back to the plain statement for this process: sent again at once as the plain statement
// when it ran outside a transaction (nothing of it is left), an error for the caller inside one.

import { createHash } from 'node:crypto'
import type postgres from 'postgres'
import { log } from '../lib/log'

/** Successful runs of a statement before it is installed as a function. */
export const RECUR_AFTER = 10
/** In a statement's text (a comment): its function always runs it with its generic plan (see above). */
export const GENERIC_PLAN = '/* generic plan */'
/** At most this many statements tried by one process (statements built from varying text stay plain). */
const MAX_FUNCTIONS = 300
/** Statements counted at most at once; past it the counts start over (varying text that never recurs). */
const MAX_COUNTED = 5_000

/** A column as the server described it: its name, type, and the table column it was read from (0: none). */
type Column = { name: string; type: number; table: number; number: number }

/** What the client's sockets (./wire.ts) ask and tell. */
export type StatementHooks = {
  /** The text to send instead of the statement's (its function's call), if it has one. */
  call(signature: string): string | undefined
  /** A plain statement succeeded; its text, parameter types and columns as the server described them. */
  done(signature: string, text: string, types: number[], columns: Column[] | null | undefined): void
  /**
   * A call failed: true when for its function's sake (it is gone, or its result no longer fits: SQLSTATE
   * class 42), and the statement is then sent plain again (outside a transaction, at once).
   */
  failed(signature: string, error: { code?: string } | null): boolean
}

export type StatementFunctions = StatementHooks & {
  /** Installs with this client (set once the client exists: it is created with the hooks). */
  use(sql: postgres.Sql<{}>): void
}

export function statementFunctions(recurAfter = RECUR_AFTER): StatementFunctions {
  let sql: postgres.Sql<{}> | undefined
  const calls = new Map<string, string>()
  const runs = new Map<string, number>()
  // Installing now, or refused by the server: not tried again by this process.
  const settled = new Set<string>()

  async function install(signature: string, text: string, types: number[], columns: Column[]): Promise<void> {
    const name = `stmt_${createHash('sha256')
      .update(`${types.join(',')}\n${columns.map((c) => `${c.name}:${c.type}`).join(',')}\n${text}`)
      .digest('hex')
      .slice(0, 32)}`
    try {
      // One transaction: a function is never seen without its plan setting.
      const columnList = await sql!.begin(async (tx) => {
        const [row] = await tx<{ columns: string }[]>`
          select statement_function_install(${name}, ${text}, ${types}::oid[], ${columns.map((c) => c.name)}::text[],
                                            ${columns.map((c) => c.type)}::oid[], ${columns.map((c) => c.table)}::oid[],
                                            ${columns.map((c) => c.number)}::int[]) as columns`
        if (text.includes(GENERIC_PLAN)) {
          const [fn] = await tx<{ signature: string }[]>`select oid::regprocedure::text as signature from pg_proc where proname = ${name}`
          await tx.unsafe(`alter function ${fn!.signature} set plan_cache_mode = force_generic_plan`)
        }
        return row!.columns
      })
      const args = types.map((_, i) => `$${i + 1}`).join(', ')
      calls.set(signature, `select * from ${name}(${args}) as t(${columnList})`)
    } catch (error) {
      // Kept plain: the statement works as it is.
      log.debug('statement kept plain', { function: name, code: (error as { code?: string }).code ?? 'unknown' })
    }
  }

  return {
    use(client) {
      sql = client
    },
    call: (signature) => calls.get(signature),
    done(signature, text, types, columns) {
      if (!sql || settled.size >= MAX_FUNCTIONS || settled.has(signature) || !columns?.length) return
      const n = (runs.get(signature) ?? 0) + 1
      if (n < recurAfter) {
        if (runs.size >= MAX_COUNTED) runs.clear()
        return void runs.set(signature, n)
      }
      runs.delete(signature)
      settled.add(signature)
      // Not the installing statement itself; and a column name twice cannot be in a column definition list.
      if (text.includes('statement_function_install')) return
      if (new Set(columns.map((c) => c.name)).size !== columns.length) return
      void install(
        signature,
        text,
        types.slice(),
        columns.map((c) => ({ name: c.name, type: c.type, table: c.table, number: c.number })),
      )
    },
    failed(signature, error) {
      if (!error?.code?.startsWith('42')) return false
      calls.delete(signature)
      return true
    },
  }
}
