// The shape of one command of the admin command line. Every command is one entry of this type in a list
// (see commands.ts): the parser, the help texts, the typo suggestions and the checks of arguments
// and flags are all derived from these entries, so adding a command is adding one entry.

import type { Api } from './client'

export type Flag = {
  /** The value's placeholder in usage lines (`--balance N`); absent for a switch (`--quiet`). */
  value?: string
  /** A one-letter alias (`-q`). */
  short?: string
  /** A flag the command cannot do without (shown without brackets in its usage). */
  required?: true
  /** A flag that may be given several times (`--credential a=1 --credential b=2`): `Context.values` has them all. */
  repeat?: true
  help: string
}

/** What a command answers: the API's data (printed as JSON with --json) and its text rendering. */
export type Result = {
  data: unknown
  text: () => string
  /** With --quiet: only these values, one a line (ids, for scripts). Commands without it refuse --quiet. */
  quiet?: () => (string | number)[]
  /** The exit code once it is printed (default 0): 1 for an answer that reports a failure (a refused check). */
  exitCode?: number
}

export type Context = {
  /** The positional arguments, by their names in `args`; absent optional ones are undefined. */
  args: Record<string, string | undefined>
  /** The command's flags that were given: a value (the last, for a repeatable one), or true for a switch. */
  flags: Record<string, string | true | undefined>
  /** Every value given for a repeatable flag, in order (none given: empty). */
  values(name: string): string[]
  /** The admin API of the running service (connects on first use). */
  api: Api
  /** --json was given (for a command that writes its own output). */
  json: boolean
  /** --url as given (for a command that reaches the service without the admin API's token). */
  url: string | undefined
  /** The argument as a positive integer id, or a usage error naming it. */
  id(name: string): number
  /** The argument or flag as an integer, or a usage error naming it. */
  integer(name: string): number
  /** The argument or flag as a non-negative decimal number (`0.5`, `80`), or a usage error naming it. */
  decimal(name: string): number
  /** A usage error (exit 2) about this command, with its usage line as the hint. */
  usage(message: string): Error
}

export type Command = {
  /** One word (`topup`) or a group and a subcommand (`account create`). */
  name: string
  /** Positional arguments in order; `[NAME]` marks an optional one. */
  args: string[]
  /** One line for the command list. */
  summary: string
  /** A few more sentences for `<command> --help`, when the summary is not enough. */
  details?: string
  /**
   * A full command line that works as written (given the shell variables the quickstart exports),
   * written as `bun run admin ...`: help shows it with the program in use (program.ts), as `details`.
   */
  example: string
  /** The command's own flags, by long name. --json, --url and --help are global and always allowed. */
  flags?: Record<string, Flag>
  /**
   * A Result, printed as text, JSON or ids by the caller; or an exit code for a command that writes
   * its own output (a long-running one, e.g. one that streams events).
   */
  run(ctx: Context): Promise<Result | number>
}

/** The flags every command takes. */
export const GLOBAL_FLAGS: Record<string, Flag> = {
  json: { help: "print the answer's JSON data and nothing else" },
  url: { value: 'URL', help: "the service's root (default: from HOST and PORT, as the service reads them)" },
  help: { short: 'h', help: 'this help' },
  version: { help: 'the version' },
}

export const QUIET: Flag = { short: 'q', help: 'print only the id (one a line), for scripts' }
