// The command line's grammar: `[global flags] <command words> [arguments] [flags]`. A command is one
// word or a group and a subcommand; a flag is `--name value`, `--name=value`, a switch `--name`, or a
// one-letter alias (`-q`); `--` ends the flags. node:util's parseArgs splits the arguments; this file
// reads them against the command table. Every word and flag is checked against the command
// table, and a typo is answered with the closest name.

import { parseArgs } from 'node:util'
import { GLOBAL_FLAGS, type Command, type Flag } from './command'
import { program } from './program'

/** A mistake in the command line itself: exit 2, with a pointer to the right help. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly hint = `run \`${program.admin} help\` for the commands`,
  ) {
    super(message)
  }
}

export type Globals = { json: boolean; url: string | undefined }

export type Parsed =
  | { kind: 'help'; topic: string[] }
  | { kind: 'version' }
  | { kind: 'none' }
  | {
      kind: 'run'
      command: Command
      args: Record<string, string | undefined>
      flags: Record<string, string | true>
      /** Every value of each repeatable flag given, in order. */
      repeated: Record<string, string[]>
      globals: Globals
    }

export const quote = (word: string) => `'${word}'`

/** Edit distance with adjacent transpositions (`tpoup` is one edit from `topup`). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[a.length]![b.length]!
}

/** The candidate closest to `word`, if it is close enough to be what was meant. */
export function closest(word: string, candidates: string[]): string | undefined {
  const lower = word.toLowerCase()
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of candidates) {
    const d = distance(lower, candidate.toLowerCase())
    if (d < bestDistance) [best, bestDistance] = [candidate, d]
  }
  if (best === undefined) return undefined
  // About one edit in three characters; or a word that is the start of a longer name (`quick`).
  if (bestDistance <= Math.max(1, Math.floor(Math.max(lower.length, best.length) / 3))) return best
  return candidates.find((c) => lower.length >= 3 && c.toLowerCase().startsWith(lower))
}

const didYouMean = (suggestion: string | undefined) => (suggestion === undefined ? '' : `; did you mean ${quote(suggestion)}?`)

/** The top-level names: standalone commands and groups, in table order. */
export function topLevelNames(commands: Command[]): string[] {
  return [...new Set(['help', ...commands.map((c) => c.name.split(' ')[0]!)])]
}

export const subcommandsOf = (commands: Command[], group: string) =>
  commands.filter((c) => c.name.startsWith(`${group} `)).map((c) => c.name.slice(group.length + 1))

/**
 * The command (or group) named by the first words: a command and how many words its name took, a
 * group waiting for its subcommand, or a usage error naming the unknown word with a suggestion.
 */
export function resolve(commands: Command[], words: string[]): { command?: Command; group?: string; used: number } {
  const [first, second] = words
  if (first === undefined) return { used: 0 }
  const single = commands.find((c) => c.name === first)
  if (single) return { command: single, used: 1 }
  const subs = subcommandsOf(commands, first)
  if (subs.length === 0) throw new UsageError(`unknown command ${quote(first)}${didYouMean(closest(first, topLevelNames(commands)))}`)
  if (second === undefined) return { group: first, used: 1 }
  const command = commands.find((c) => c.name === `${first} ${second}`)
  if (command) return { command, used: 2 }
  const near = closest(second, subs)
  throw new UsageError(
    `unknown subcommand ${quote(second)} of ${quote(first)}${didYouMean(near && `${first} ${near}`)}`,
    `${quote(first)} has: ${subs.join(', ')} (${program.admin} ${first} --help)`,
  )
}

/**
 * The command line split by node:util's parseArgs (strict off: which flags a command has, and which take
 * a value, is known only once its words are read), as one item per argument: a word, a flag with its
 * inline value (`--name=value`), or `--`. A negative number (`-5`) is a word, not a group of short flags.
 */
function tokensOf(argv: string[]) {
  const items: (
    { kind: 'word'; value: string } | { kind: 'flag'; raw: string; name: string; short: boolean; inline?: string } | { kind: 'end' }
  )[] = []
  const { tokens } = parseArgs({ args: argv, strict: false, allowPositionals: true, tokens: true })
  let last = -1
  for (const token of tokens) {
    if (token.index === last) continue // a group of short flags (-qx) is one argument
    last = token.index
    const raw = argv[token.index]!
    if (token.kind === 'option-terminator') items.push({ kind: 'end' })
    else if (token.kind === 'positional' || /^-\d/.test(raw)) items.push({ kind: 'word', value: raw })
    else {
      const short = !raw.startsWith('--')
      const [, name, inline] = /^--?([^=]*)(?:=(.*))?$/s.exec(raw)!
      items.push({ kind: 'flag', raw, name: name!, short, inline })
    }
  }
  return items
}

export function parse(commands: Command[], argv: string[]): Parsed {
  const globals: Globals = { json: false, url: undefined }
  let help = false
  let version = false
  const words: string[] = []
  const flags: Record<string, string | true> = {}
  const repeated: Record<string, string[]> = {}
  let found: ReturnType<typeof resolve> = { used: 0 }
  let flagsEnded = false

  const items = tokensOf(argv)
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!
    if (!flagsEnded && item.kind === 'end') {
      flagsEnded = true
      continue
    }
    if (flagsEnded || item.kind !== 'flag') {
      words.push(item.kind === 'word' ? item.value : item.kind === 'flag' ? item.raw : '--')
      // Resolved as soon as the words name a command, so that its own flags can follow.
      if (!found.command && words[0] !== 'help') found = resolve(commands, words)
      continue
    }
    const own = found.command?.flags ?? {}
    const byShort = (table: Record<string, Flag>) => Object.keys(table).find((n) => table[n]!.short === item.name)
    const name = item.short ? (byShort(own) ?? byShort(GLOBAL_FLAGS)) : item.name
    const spec = name === undefined ? undefined : (own[name] ?? GLOBAL_FLAGS[name])
    if (name === undefined || spec === undefined) throw unknownFlag(commands, found, item.raw)
    let value: string | true = true
    if (spec.value !== undefined) {
      // The value is the next argument, whatever it looks like (`--note -x`), unless given inline.
      const next = item.inline ?? (i + 1 < items.length ? rawOf(items[++i]!) : undefined)
      if (next === undefined) throw new UsageError(`flag --${name} needs a value (--${name} ${spec.value})`, hintFor(found))
      value = next
    } else if (item.inline !== undefined) throw new UsageError(`flag --${name} takes no value`, hintFor(found))
    if (name === 'json') globals.json = true
    else if (name === 'url') globals.url = value as string
    else if (name === 'help') help = true
    else if (name === 'version') version = true
    else {
      flags[name] = value
      if (spec.repeat && typeof value === 'string') (repeated[name] ??= []).push(value)
    }
  }

  if (words[0] === 'help') return { kind: 'help', topic: words.slice(1) }
  if (help) return { kind: 'help', topic: words.slice(0, found.used) }
  if (version) return { kind: 'version' }
  if (words.length === 0) return { kind: 'none' }
  if (!found.command) {
    const subs = subcommandsOf(commands, found.group!)
    throw new UsageError(`${quote(found.group!)} needs a subcommand: ${subs.join(', ')}`, `see: ${program.admin} ${found.group} --help`)
  }
  const command = found.command
  const args = positional(command, words.slice(found.used))
  for (const [name, flag] of Object.entries(command.flags ?? {})) {
    if (flag.required && flags[name] === undefined)
      throw new UsageError(`${command.name}: missing --${name} ${flag.value}`, hintFor({ command }))
  }
  return { kind: 'run', command, args, flags, repeated, globals }
}

/** An item as it was typed. */
const rawOf = (item: ReturnType<typeof tokensOf>[number]) => (item.kind === 'word' ? item.value : item.kind === 'flag' ? item.raw : '--')

function positional(command: Command, given: string[]): Record<string, string | undefined> {
  const args: Record<string, string | undefined> = {}
  command.args.forEach((spec, i) => {
    const optional = spec.startsWith('[')
    const name = spec.replace(/^\[|\]$/g, '')
    if (given[i] === undefined && !optional) throw new UsageError(`${command.name}: missing ${name}`, hintFor({ command }))
    args[name] = given[i]
  })
  const extra = given[command.args.length]
  if (extra !== undefined) throw new UsageError(`${command.name}: unexpected argument ${quote(extra)}`, hintFor({ command }))
  return args
}

export const usageLine = (command: Command) => {
  const flags = Object.entries(command.flags ?? {}).map(([name, f]) => {
    const flag = `--${name}${f.value ? ` ${f.value}` : ''}${f.repeat ? ' ...' : ''}`
    return f.required ? flag : `[${flag}]`
  })
  return [program.admin, command.name, ...command.args, ...flags].join(' ')
}

export function hintFor(found: { command?: Command; group?: string }): string {
  if (found.command) return `usage: ${usageLine(found.command)} (more: ${program.admin} ${found.command.name} --help)`
  return `run \`${program.admin} help\` for the commands`
}

function unknownFlag(commands: Command[], found: { command?: Command; group?: string }, token: string): UsageError {
  const own = Object.keys(found.command?.flags ?? {})
  const names = [...own, ...Object.keys(GLOBAL_FLAGS)].map((n) => `--${n}`)
  const where = found.command ? ` for ${quote(found.command.name)}` : ''
  const flag = token.replace(/=.*$/s, '')
  const suggestion = closest(flag, names)
  if (!found.command && !suggestion && commands.some((c) => Object.keys(c.flags ?? {}).some((n) => flag === `--${n}`))) {
    return new UsageError(`flag ${quote(flag)} comes after the command it belongs to`)
  }
  return new UsageError(`unknown flag ${quote(flag)}${where}${didYouMean(suggestion)}`, hintFor(found))
}
