// The operator's command line, a thin client of the admin API, run as `bun run admin <command>`
// (admin.ts) or as `messaging-api admin <command>` (the single binary, main.ts): one command line, two
// ways in. Each command is one entry of the table below (see command.ts for its shape): the parser,
// the help texts and the typo suggestions come from the table. Output is text for people (tables,
// counts), the answer's JSON data with --json, or only ids with --quiet where a command offers it.
// Exit codes: 0 done, 1 the service refused or could not be reached, 2 a mistake in the command line.

import { version } from '../../package.json'
import { ConfigError } from '../config'
import { hintFor, parse, UsageError } from './args'
import { CliError, lazyApi } from './client'
import type { Command, Context } from './command'
import {
  accountCommands,
  campaignCommands,
  deliveryCommands,
  moneyCommands,
  quarantineCommands,
  simulatorCommands,
  userCommands,
} from './commands'
import { helpText, overview } from './help'
import { program, type Program } from './program'
import { quickstart } from './quickstart'
import { portfolioCommands, secretsCommands, senderCommands } from './senders'
import { webhookCommands } from './webhook'
import { optOutCommands } from './optouts'
import { conversationCommands } from './conversations'
import { backupCommands } from './backup'
import { partitionCommands } from './partitions'
import { waTemplateCommands } from './wa-templates'
import { reconcileCommands } from './reconcile'
import { readyCommands } from './ready'

/** Every command, in the order `help` lists them. */
export const commands: Command[] = [
  quickstart,
  ...userCommands,
  ...accountCommands,
  ...moneyCommands,
  ...reconcileCommands,
  ...campaignCommands,
  ...waTemplateCommands,
  ...deliveryCommands,
  ...webhookCommands,
  ...quarantineCommands,
  ...senderCommands,
  ...portfolioCommands,
  ...optOutCommands,
  ...conversationCommands,
  ...secretsCommands,
  ...simulatorCommands,
  ...backupCommands,
  ...readyCommands,
  ...partitionCommands,
]

function context(
  command: Command,
  args: Record<string, string | undefined>,
  flags: Record<string, string | true>,
  repeated: Record<string, string[]>,
  globals: { json: boolean; url: string | undefined },
): Context {
  const raw = (name: string) => (name in args ? args[name] : flags[name])
  const label = (name: string) => (name in args ? name : `--${name}`)
  const integer = (name: string, pattern: RegExp, what: string) => {
    const value = raw(name)
    if (typeof value !== 'string' || !pattern.test(value))
      throw new UsageError(
        `${label(name)}: expected ${what}, got ${value === undefined || value === true ? 'nothing' : `'${value}'`}`,
        hintFor({ command }),
      )
    return Number(value)
  }
  return {
    args,
    flags,
    api: lazyApi(globals.url),
    json: globals.json,
    url: globals.url,
    values: (name) => repeated[name] ?? [],
    id: (name) => integer(name, /^[1-9]\d*$/, 'an id (a positive integer)'),
    integer: (name) => integer(name, /^-?\d+$/, 'an integer'),
    decimal: (name) => integer(name, /^\d+(\.\d+)?$/, 'a number (e.g. 80 or 0.5)'),
    usage: (message) => new UsageError(message, hintFor({ command })),
  }
}

async function main(argv: string[]): Promise<number> {
  const parsed = parse(commands, argv)
  if (parsed.kind === 'none') {
    process.stdout.write(overview(commands))
    return 2
  }
  if (parsed.kind === 'help') {
    process.stdout.write(helpText(commands, parsed.topic))
    return 0
  }
  if (parsed.kind === 'version') {
    console.log(version)
    return 0
  }
  const result = await parsed.command.run(context(parsed.command, parsed.args, parsed.flags, parsed.repeated, parsed.globals))
  if (typeof result === 'number') return result
  if (parsed.globals.json) console.log(JSON.stringify(result.data, null, 2))
  else if (parsed.flags.quiet && result.quiet) result.quiet().forEach((value) => console.log(value))
  else console.log(result.text())
  return result.exitCode ?? 0
}

/** Runs the command line on `argv` (the words after `admin`), started as `started`; answers the exit code. */
export async function runAdmin(argv: string[], started: Program): Promise<number> {
  Object.assign(program, started)
  try {
    return await main(argv)
  } catch (error) {
    // One readable message, never a stack trace: the command line's users are operators, not its developers.
    if (error instanceof UsageError) {
      console.error(`admin: ${error.message}\n${error.hint}`)
      return 2
    }
    if (error instanceof ConfigError) {
      console.error(`admin: configuration error: ${error.message}`)
      return 2
    }
    console.error(
      `admin: ${error instanceof CliError ? error.message : `unexpected error: ${error instanceof Error ? error.message : String(error)}`}`,
    )
    return 1
  }
}
