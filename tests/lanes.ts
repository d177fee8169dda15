// Which of CI's two lanes runs each test file. `.ci/run` runs the README's test command twice at once,
// one lane per database mode (the embedded PGlite, the machine's PostgreSQL). Every file that reads or
// writes through a database runs in both: the inner ring is where the two databases are compared. A file
// whose subject is not the database runs in one lane only, since the other lane would repeat it: the
// static checks (layout, rings, docs, OpenAPI), the pure units, and the outer ring's browsers and command
// lines, whose pages and commands are the same code over either database (the rules behind them run in
// both lanes, through app.handle). They are dealt to the two lanes in turn, or pinned to the lane
// their file needs. Measured on 2026-12-02 (idle 2-core machine): the whole suite in both modes was
// 3,400 s of test files, of which these were about 600 s run twice.
//
//   bun tests/lanes.ts embedded|postgres [inner|outer]   prints that lane's files, one per line
//   (CI_EVERY_FILE_TWICE=1: every file in both lanes)
//
// A developer's `bun run test` runs every file in the mode DATABASE_URL chooses: each file passes in both.

import { Glob } from 'bun'
import { readdirSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'

export type Lane = 'embedded' | 'postgres'
export const LANES: readonly Lane[] = ['embedded', 'postgres']

type OneLane = { pattern: string; lane?: Lane; why: string }

/** The files that run in one lane only (a lane named pins them there). Each pattern matches some file. */
export const ONE_LANE: OneLane[] = [
  { pattern: 'tests/layout.test.ts', why: 'reads the source tree' },
  { pattern: 'tests/{rings,lanes}.test.ts', why: 'reads the test files' },
  { pattern: 'tests/mutants/list.test.ts', why: 'reads the mutants list' },
  { pattern: 'tests/docs/*.test.ts', why: 'the docs, the reference and the OpenAPI document' },
  { pattern: 'tests/clients/*.test.ts', why: 'the client libraries and their drift from the OpenAPI document' },
  { pattern: 'tests/lib/{address,batch,csv,metrics,phone,template}.test.ts', why: 'pure functions' },
  { pattern: 'tests/providers/twilio-signature.test.ts', why: 'a pure function' },
  { pattern: 'tests/templates/{definitions,twilio}.test.ts', why: 'pure functions' },
  { pattern: 'tests/**/*browser*.outer.test.ts', why: 'pages in Chromium' },
  { pattern: 'tests/dashboard/look.outer.test.ts', why: 'pages in Chromium' },
  {
    pattern: 'tests/cli/admin.outer.test.ts',
    lane: 'embedded',
    why: 'the command line on the embedded database is what a small deployment runs',
  },
  {
    pattern: 'tests/cli/webhook.outer.test.ts',
    lane: 'postgres',
    why: 'the command line; its two instances need PostgreSQL',
  },
  { pattern: 'tests/cli/*.outer.test.ts', why: 'the command line' },
  { pattern: 'tests/{optouts,budgets}/cli.outer.test.ts', why: 'the command line' },
  {
    pattern: 'tests/http/{server,request-log,callback-bodies,metrics-server}.outer.test.ts',
    why: 'HTTP framing, logs and metrics of a process',
  },
]

const ROOT = resolve(import.meta.dir, '..')

/** Every test file under tests/, as a path from the repository's root, sorted. */
export function testFiles(dir = join(ROOT, 'tests'), out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) testFiles(path, out)
    else if (name.endsWith('.test.ts')) out.push(relative(ROOT, path))
  }
  return out.sort()
}

/** The first ONE_LANE entry matching the file, or undefined (both lanes). */
export const oneLaneEntry = (file: string): OneLane | undefined => ONE_LANE.find((e) => new Glob(e.pattern).match(file))

/** Each lane's files: every file in both, but a one-lane file in its pinned lane or, unpinned, the lanes in turn. */
export function assign(files: string[]): Record<Lane, string[]> {
  const out: Record<Lane, string[]> = { embedded: [], postgres: [] }
  let turn = 0
  for (const file of files) {
    const entry = oneLaneEntry(file)
    if (!entry) for (const lane of LANES) out[lane].push(file)
    else out[entry.lane ?? LANES[turn++ % 2]!].push(file)
  }
  return out
}

if (import.meta.main) {
  const [lane, ring] = process.argv.slice(2)
  if (!LANES.includes(lane as Lane) || (ring !== undefined && ring !== 'inner' && ring !== 'outer')) {
    console.error('usage: bun tests/lanes.ts embedded|postgres [inner|outer]')
    process.exit(2)
  }
  const all = testFiles()
  const files = (process.env.CI_EVERY_FILE_TWICE === '1' ? all : assign(all)[lane as Lane]).filter(
    (f) => ring === undefined || (ring === 'outer') === f.endsWith('.outer.test.ts'),
  )
  // `./` makes each a path to that file, not a filter matching any path that contains it.
  for (const file of files) console.log(`./${file}`)
}
