// Help texts, all derived from the command table: the command list, a group's subcommands, and one
// command's usage, options and example.

import { quote, resolve, subcommandsOf, usageLine, UsageError } from './args'
import { GLOBAL_FLAGS, type Command, type Flag } from './command'
import { forProgram, program } from './program'

const sentence = (text: string) => `${text[0]!.toUpperCase()}${text.slice(1)}${text.endsWith('.') ? '' : '.'}`

/** Words joined into lines of at most `width` characters, continued `indent` spaces in. */
function wrap(text: string, indent: number, width = 100): string {
  return wrapWords(text.split(' '), indent, width)
}

function wrapWords(words: string[], indent: number, width: number): string {
  const lines = ['']
  for (const word of words) {
    const last = lines.length - 1
    if (lines[last] && indent + lines[last]!.length + 1 + word.length > width) lines.push(word)
    else lines[last] = lines[last] ? `${lines[last]} ${word}` : word
  }
  return lines.join(`\n${' '.repeat(indent)}`)
}

/** The widest left column kept beside its text; a longer entry has its text on the lines under it. */
const MAX_LEFT = 44

/** Two columns; the right one wraps, continued under itself. */
function aligned(rows: [string, string][]): string[] {
  const width = Math.max(...rows.map(([left]) => left.length).filter((length) => length <= MAX_LEFT))
  const indent = 2 + width + 2
  return rows.map(([left, right]) =>
    left.length > width
      ? `  ${left}\n${' '.repeat(indent)}${wrap(right, indent, 110)}`
      : `  ${left.padEnd(width)}  ${wrap(right, indent, 110)}`,
  )
}

const flagRows = (flags: Record<string, Flag>): [string, string][] =>
  Object.entries(flags).map(([name, f]) => [
    `--${name}${f.value ? ` ${f.value}` : ''}${f.short ? `, -${f.short}` : ''}`,
    f.repeat ? `${f.help} (repeatable)` : f.help,
  ])

const synopsis = (c: Command) =>
  [
    c.name,
    ...c.args,
    ...Object.entries(c.flags ?? {})
      .filter(([, f]) => f.required)
      .map(([name, f]) => `--${name} ${f.value}`),
  ].join(' ')

export function overview(commands: Command[]): string {
  return [
    `${program.admin}: the operator's command line, a client of the running service's admin API`,
    '',
    `usage: ${program.admin} <command> [arguments] [options]`,
    '',
    'commands:',
    ...aligned([
      ['help [COMMAND]', "this list, or a command's usage, options and example"],
      ...commands.map((c): [string, string] => [synopsis(c), c.summary]),
    ]),
    '',
    'options of every command:',
    ...aligned(flagRows(GLOBAL_FLAGS)),
    '',
    'The service is found at --url, or from HOST and PORT as the service reads them (default',
    'http://127.0.0.1:3000); the admin token is ADMIN_TOKEN, or the file DATA_DIR/admin-token that the service',
    'writes on its first start.',
    `More on a command: ${program.admin} <command> --help (or ${program.admin} help <command>).`,
    '',
  ].join('\n')
}

/**
 * The commands in a few lines, each group with its subcommands (`key create|list|activate|deactivate`),
 * for the service's own --help.
 */
export function commandIndex(commands: Command[], indent = 2, width = 100): string {
  const groups = new Map<string, string[]>()
  for (const c of commands) {
    const [first, sub] = c.name.split(' ') as [string, string?]
    groups.set(first, [...(groups.get(first) ?? []), ...(sub ? [sub] : [])])
  }
  const entries = [...groups].map(([first, subs]) => (subs.length ? `${first} ${subs.join('|')}` : first))
  return `${' '.repeat(indent)}${wrapWords(
    entries.map((entry, i) => (i < entries.length - 1 ? `${entry},` : entry)),
    indent,
    width,
  )}`
}

function groupHelp(commands: Command[], group: string): string {
  const members = subcommandsOf(commands, group).map((sub) => commands.find((c) => c.name === `${group} ${sub}`)!)
  return [
    `usage: ${program.admin} ${group} <${members.map((c) => c.name.slice(group.length + 1)).join('|')}> [arguments] [options]`,
    '',
    ...aligned(members.map((c): [string, string] => [synopsis(c), c.summary])),
    '',
    `More on one: ${program.admin} ${group} <subcommand> --help`,
    '',
  ].join('\n')
}

function commandHelp(command: Command): string {
  const { version: _, ...globals } = GLOBAL_FLAGS
  return [
    `usage: ${usageLine(command)}`,
    '',
    wrap(forProgram(`${sentence(command.summary)}${command.details ? ` ${command.details}` : ''}`), 0),
    '',
    'options:',
    ...aligned(flagRows({ ...command.flags, ...globals })),
    '',
    'example:',
    `  ${forProgram(command.example)}`,
    '',
  ].join('\n')
}

/** The help for `help [words]` or `[words] --help`: the overview, a group's, or a command's. */
export function helpText(commands: Command[], topic: string[]): string {
  if (topic.length === 0) return overview(commands)
  if (topic[0] === 'help') return overview(commands)
  const found = resolve(commands, topic)
  const extra = topic[found.used]
  if (extra !== undefined)
    throw new UsageError(`no help topic ${quote(topic.join(' '))}`, `try: ${program.admin} help ${topic.slice(0, found.used).join(' ')}`)
  return found.command ? commandHelp(found.command) : groupHelp(commands, found.group!)
}
