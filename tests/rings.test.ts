// The inner ring never waits on the clock. Every test file but *.outer.test.ts runs the app, the services
// and the workers in one process and moves time with a TestClock (src/lib/clock.ts): none of them sleeps
// (Bun.sleep), polls (until(, waitFor(, setInterval, a setTimeout waited on) or rewrites a time column with
// an SQL UPDATE (due_at, handoff_until, created_at, ...) to move time by hand. What needs real time is in
// the outer ring (*.outer.test.ts, each saying why on its first line).

import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { testFiles } from './lanes'

const ROOT = resolve(import.meta.dir, '..')
const SELF = 'tests/rings.test.ts' // names the patterns it looks for

// Being converted, issue 29: inner-ring files that still wait on the clock. The list can only shrink: a
// file listed here that no longer offends fails the test until it is taken off.
const NOT_YET_CONVERTED: string[] = []

const isOuter = (file: string) => file.endsWith('.outer.test.ts')

/** The columns holding a time (timestamptz or date), read from the migrations. */
function timeColumns(): string[] {
  const columns = new Set<string>()
  for (const name of readdirSync(join(ROOT, 'sql'))) {
    if (!name.endsWith('.sql')) continue
    for (const match of readFileSync(join(ROOT, 'sql', name), 'utf8').matchAll(
      /\b([a-z_][a-z0-9_]*)\s+(?:timestamptz|timestamp with time zone|date)\b/gi,
    )) {
      const column = match[1]!.toLowerCase()
      if (!['column', 'as', 'returns', 'type'].includes(column)) columns.add(column)
    }
  }
  return [...columns].sort()
}

type Offence = { line: number; what: string; text: string }

/** Lines that only comment (// ..., or inside a /* ... *\/ block): what they say does not run. */
function commentLines(lines: string[]): Set<number> {
  const comments = new Set<number>()
  let inBlock = false
  lines.forEach((line, i) => {
    const trimmed = line.trim()
    if (inBlock || trimmed.startsWith('//') || trimmed.startsWith('/*')) comments.add(i)
    if (trimmed.startsWith('/*') && !trimmed.includes('*/')) inBlock = true
    else if (inBlock && trimmed.includes('*/')) inBlock = false
  })
  return comments
}

const WAITS: { what: string; pattern: RegExp }[] = [
  { what: 'Bun.sleep', pattern: /\bBun\.sleep/ },
  { what: 'a polling loop (until)', pattern: /\buntil\s*\(/ },
  { what: 'a polling loop (waitFor)', pattern: /\bwaitFor\s*\(/ },
  { what: 'setInterval', pattern: /(?<![.\w$])setInterval\s*\(/ },
  // A timer that resolves a promise (setTimeout(resolve, ms), setTimeout(() => resolve(), ms)) or the
  // awaited one of node:timers/promises; a timer that kills a stuck child is no wait.
  { what: 'a setTimeout waited on', pattern: /(?<![.\w$])setTimeout\s*\(\s*(?:[\w$]+\s*[,)]|\(\s*\)\s*=>\s*(?:resolve|res|r|done)\s*\()/ },
  { what: 'a setTimeout waited on', pattern: /\bawait\s+setTimeout\s*\(/ },
  { what: 'a setTimeout waited on', pattern: /new Promise\b.*(?<![.\w$])setTimeout\s*\(/ },
]

/** What in a test file's text waits on the real clock or moves time by hand, with its line (from 1). */
function offences(text: string, columns = timeColumns()): Offence[] {
  const lines = text.split('\n')
  const comments = commentLines(lines)
  const found: Offence[] = []
  lines.forEach((line, i) => {
    if (comments.has(i)) return
    const code = line.replace(/\s\/\/\s.*$/, '') // a comment after the code
    const wait = WAITS.find(({ pattern }) => pattern.test(code))
    if (wait) found.push({ line: i + 1, what: wait.what, text: line.trim() })
  })
  // An UPDATE's SET list, up to its WHERE, RETURNING, the end of the statement or of the string (it may
  // span lines): a time column assigned there.
  const setsTime = new RegExp(`(?:^|[\\s,(])(?:[\\w"]+\\.)?"?(${columns.join('|')})"?\\s*=(?!=)`, 'i')
  for (const match of text.matchAll(
    /\bupdate\s+[\w."]+(?:\s+(?:as\s+)?\w+)?\s+set\b([\s\S]*?)(?=\bwhere\b|\breturning\b|\bfrom\b|;|`|$)/gi,
  )) {
    const line = text.slice(0, match.index).split('\n').length
    if (comments.has(line - 1)) continue
    const column = setsTime.exec(match[1]!)
    if (column) found.push({ line, what: `an UPDATE that sets ${column[1]!.toLowerCase()}`, text: lines[line - 1]!.trim() })
  }
  return found.sort((a, b) => a.line - b.line)
}

const report = (file: string, found: Offence[]) => found.map((o) => `${file}:${o.line}: ${o.what}: ${o.text}`)

const files = testFiles()
const inner = files.filter((file) => !isOuter(file) && file !== SELF)
const columns = timeColumns()

describe('the inner ring waits on no clock', () => {
  test('no inner-ring file sleeps, polls or moves a time column by hand', () => {
    const found = inner
      .filter((file) => !NOT_YET_CONVERTED.includes(file))
      .flatMap((file) => report(file, offences(readFileSync(join(ROOT, file), 'utf8'), columns)))
    expect(found).toEqual([])
  })

  test('NOT_YET_CONVERTED only shrinks: each file listed is an inner-ring test file that still offends', () => {
    const stale = NOT_YET_CONVERTED.filter(
      (file) => !inner.includes(file) || offences(readFileSync(join(ROOT, file), 'utf8'), columns).length === 0,
    )
    expect(stale).toEqual([])
  })

  test('both rings hold files, and the outer ring is every *.outer.test.ts', () => {
    expect(inner.length).toBeGreaterThan(0)
    expect(files.filter(isOuter).length).toBeGreaterThan(0)
    expect(columns).toEqual(expect.arrayContaining(['due_at', 'next_attempt_at', 'handoff_until', 'created_at', 'expires_at']))
  })

  test('each outer-ring file says on its first line why it is outer', () => {
    const silent = files.filter(isOuter).filter((file) => !readFileSync(join(ROOT, file), 'utf8').startsWith('// Outer ring (real time): '))
    expect(silent).toEqual([])
  })
})

describe('the check finds what it looks for', () => {
  const sample = [
    "import { until } from '../helpers/wait'", // 1: an import is no call
    'await Bun.sleep(50)', // 2
    'await until(() => count(), (n) => n > 0)', // 3
    'await app.waitFor(() => seen)', // 4
    'const timer = setInterval(tick, 100)', // 5
    'await new Promise((resolve) => setTimeout(resolve, 100))', // 6
    'await new Promise((r) => setTimeout(() => r(), 100))', // 7
    'await setTimeout(100)', // 8
    "await sql`update messages set due_at = now() - interval '1 minute' where id = ${id}`", // 9
    'await sql`', // 10
    '  update webhook_deliveries', // 11
    "  set status = 'pending', next_attempt_at = now()", // 12
    '  where id = ${id}`', // 13
    'await db.sql`update accounts set balance = 0 where id = ${id}`', // 14: no time column
    "const kill = setTimeout(() => proc.kill('SIGKILL'), 20_000)", // 15: a guard, not a wait
    '// Bun.sleep(10) and until( in a comment', // 16
    'clock.advance(1_000); await clock.run(worker.runOnce(deps))', // 17
    'await t.deps.clock.setTimeout(() => {}, 5)', // 18: the test clock's own timer
  ].join('\n')

  test('each sleep, poll and time UPDATE, by line; guards, comments and the test clock are not', () => {
    expect(offences(sample, columns).map(({ line, what }) => `${line} ${what}`)).toEqual([
      '2 Bun.sleep',
      '3 a polling loop (until)',
      '4 a polling loop (waitFor)',
      '5 setInterval',
      '6 a setTimeout waited on',
      '7 a setTimeout waited on',
      '8 a setTimeout waited on',
      '9 an UPDATE that sets due_at',
      '11 an UPDATE that sets next_attempt_at',
    ])
  })

  test('a file named with its line in the report', () => {
    expect(report('tests/x.test.ts', offences('\n\nawait Bun.sleep(5)', columns))).toEqual([
      'tests/x.test.ts:3: Bun.sleep: await Bun.sleep(5)',
    ])
  })
})
