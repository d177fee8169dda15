// `bun run mutants`: proves each guard of tests/mutants/list.ts. A scratch copy of the repository (its
// tracked and untracked files, node_modules linked) gets one mutation at a time; the mutation's tests
// run there and must fail (killed). A mutation whose tests pass survived. Before the mutants, each
// distinct test command runs once unmutated (the baseline): a test that fails without the mutation
// proves nothing, and a mutant of it is reported as such.
//
//   bun run mutants                  every mutation (exit 1 if any survived or did not apply)
//   bun run mutants NAME...          only those
//   bun run mutants --list           the table of mutations and their tests, as README shows it
//   bun run mutants --no-baseline    skip the unmutated runs
//   bun run mutants --help           this text
//
// Time: each test command is bounded (MUTANT_TIMEOUT_S, default 300 s). A test that hangs fails by
// bun's own per-test timeout (60 s, as `bun run test`): that is a failure, so the mutant is killed.
// A command that outlives its bound (a hang bun's timeout does not catch) is stopped and reported
// `timeout`, which counts as not killed. Mutations marked `postgres` run with DATABASE_URL, or
// postgres://postgres@127.0.0.1:5432/postgres when it is unset; with DATABASE_URL set every mutation
// runs on PostgreSQL but those marked `embedded`. Each test file makes its own fresh database
// (tests/helpers/db.ts).

import { spawn } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { MUTATIONS, type Mutation } from './list'

const ROOT = resolve(import.meta.dir, '../..')
const DEFAULT_POSTGRES = 'postgres://postgres@127.0.0.1:5432/postgres'
const TIMEOUT_S = Number(process.env.MUTANT_TIMEOUT_S ?? 300)

/** The README's table: one row per mutation. */
export function markdownTable(mutations: Mutation[] = MUTATIONS): string {
  const cell = (s: string) => s.replaceAll('|', '\\|')
  const rows = mutations.map((m) => {
    const files = [...new Set(m.edits.map((e) => e.file))].map((f) => `\`${f}\``).join(', ')
    const tests = m.tests.map((t) => `\`${t}\``).join(', ') + (m.filter ? ` (\`-t '${m.filter}'\`)` : '')
    const database = m.database === 'postgres' ? 'PostgreSQL' : (m.database ?? 'either')
    return `| \`${m.name}\` | ${files} | ${cell(m.breaks)} | ${cell(tests)} | ${database} |`
  })
  return ['| mutation | guard in | without it | killed by | database |', '|---|---|---|---|---|', ...rows].join('\n')
}

/** How many times `find` occurs in `text`. */
export function occurrences(text: string, find: string): number {
  let n = 0
  for (let at = text.indexOf(find); at !== -1; at = text.indexOf(find, at + find.length)) n++
  return n
}

type Result = { name: string; tests: string; result: string; seconds: number; detail?: string }
type Run = { exitCode: number | null; timedOut: boolean; pass: number; fail: number; errors: number; failed: string[]; seconds: number }

function copyRepository(): string {
  const scratch = mkdtempSync(join(tmpdir(), 'mutants-'))
  try {
    const listed = Bun.spawnSync(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT })
    if (listed.exitCode !== 0) throw new Error(`git ls-files failed: ${listed.stderr.toString()}`)
    for (const file of listed.stdout.toString().split('\0')) {
      // node_modules is linked below (a worktree's own link to it is not ignored: it is not a directory).
      if (!file || file === 'node_modules' || file.startsWith('node_modules/')) continue
      const target = join(scratch, file)
      mkdirSync(dirname(target), { recursive: true })
      try {
        cpSync(join(ROOT, file), target)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error // deleted but not yet committed
      }
    }
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(scratch, 'node_modules'))
    return scratch
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true })
    throw error
  }
}

function testCommand(m: Mutation): string[] {
  return ['bun', 'test', '--timeout', '60000', ...m.tests.map((t) => `./${t}`), ...(m.filter ? ['-t', m.filter] : [])]
}

/** A key for mutations that run the same tests the same way (one baseline each). */
const commandKey = (m: Mutation) => JSON.stringify([testCommand(m), usesPostgres(m)])
const usesPostgres = (m: Mutation) => m.database === 'postgres' || (m.database !== 'embedded' && Boolean(process.env.DATABASE_URL))

/** The process group of the tests running now, stopped with the runner (Ctrl-C). */
let running: number | undefined

/** Runs the mutation's tests in `dir` in a process group of their own, bounded by TIMEOUT_S. */
function runTests(dir: string, m: Mutation, logFile: string): Promise<Run> {
  const env: Record<string, string | undefined> = { ...process.env }
  if (usesPostgres(m)) env.DATABASE_URL = process.env.DATABASE_URL || DEFAULT_POSTGRES
  else delete env.DATABASE_URL
  const started = Date.now()
  return new Promise((done) => {
    const child = spawn(testCommand(m)[0]!, testCommand(m).slice(1), { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    running = child.pid
    let output = ''
    child.stdout!.on('data', (chunk) => (output += chunk))
    child.stderr!.on('data', (chunk) => (output += chunk))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      try {
        process.kill(-child.pid!, 'SIGKILL') // the whole group: the test runner and the services it started
      } catch {
        // already gone
      }
    }, TIMEOUT_S * 1000)
    child.on('close', (code) => {
      clearTimeout(timer)
      running = undefined
      writeFileSync(logFile, output)
      const count = (word: string) => Number(output.match(new RegExp(`^\\s*(\\d+) ${word}$`, 'm'))?.[1] ?? 0)
      const failed = [...output.matchAll(/^\(fail\) (.*?)(?: \[[\d.]+m?s\])?$/gm)].map((f) => f[1]!)
      done({
        exitCode: code,
        timedOut,
        pass: count('pass'),
        fail: count('fail'),
        errors: count('errors?'),
        failed,
        seconds: (Date.now() - started) / 1000,
      })
    })
  })
}

/** Applies every edit of `m` in `dir`; answers the original texts to restore, or why it does not apply. */
function apply(dir: string, m: Mutation): { restore: Map<string, string> } | { problem: string } {
  const restore = new Map<string, string>()
  const texts = new Map<string, string>()
  for (const edit of m.edits) {
    const path = join(dir, edit.file)
    let text: string
    try {
      text = texts.get(path) ?? readFileSync(path, 'utf8')
    } catch {
      return { problem: `${edit.file} does not exist` }
    }
    if (!restore.has(path)) restore.set(path, text)
    const n = occurrences(text, edit.find)
    if (n !== 1) return { problem: `${edit.file}: the text to replace occurs ${n} times, not once: ${JSON.stringify(edit.find)}` }
    texts.set(
      path,
      text.replace(edit.find, () => edit.replace),
    )
  }
  for (const [path, text] of texts) {
    // A migration's SQL is checked by the tests themselves (a mutant that breaks it fails them all).
    if (!/\.tsx?$/.test(path)) continue
    try {
      new Bun.Transpiler({ loader: path.endsWith('.tsx') ? 'tsx' : 'ts' }).transformSync(text)
    } catch (error) {
      return { problem: `the mutated ${path.slice(dir.length + 1)} does not parse: ${String(error).slice(0, 200)}` }
    }
  }
  for (const [path, text] of texts) writeFileSync(path, text)
  return { restore }
}

function printTable(results: Result[]): void {
  const header = ['mutation', 'test', 'result', 'seconds']
  const short = (s: string) => (s.length > 90 ? `${s.slice(0, 89)}…` : s)
  const rows = results.map((r) => [r.name, r.tests, short(r.result), r.seconds.toFixed(0)])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)))
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ')
  console.log(`\n${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`)
  for (const row of rows) console.log(line(row))
  for (const r of results) if (r.detail) console.log(`\n${r.name}: ${r.detail}`)
}

async function main(): Promise<number> {
  const args = process.argv.slice(2)
  if (args.includes('--help') || args.includes('-h')) {
    // The usage is the comment at the top of this file.
    const top = readFileSync(new URL(import.meta.url), 'utf8').split('\n\nimport ')[0]!
    console.log(top.replace(/^\/\/ ?/gm, ''))
    return 0
  }
  const unknownFlags = args.filter((a) => a.startsWith('-') && !['--list', '--no-baseline'].includes(a))
  if (unknownFlags.length > 0) {
    console.error(`unknown option ${unknownFlags.join(', ')}; see bun run mutants --help`)
    return 2
  }
  if (args.includes('--list')) {
    console.log(markdownTable())
    return 0
  }
  const names = args.filter((a) => !a.startsWith('--'))
  const unknown = names.filter((n) => !MUTATIONS.some((m) => m.name === n))
  if (unknown.length > 0) {
    console.error(`unknown mutation ${unknown.join(', ')}; the mutations: ${MUTATIONS.map((m) => m.name).join(', ')}`)
    return 2
  }
  const chosen = names.length > 0 ? MUTATIONS.filter((m) => names.includes(m.name)) : MUTATIONS
  const baseline = !args.includes('--no-baseline')

  const started = Date.now()
  const scratch = copyRepository()
  const logs = mkdtempSync(join(tmpdir(), 'mutants-logs-'))
  const cleanup = () => rmSync(scratch, { recursive: true, force: true })
  process.on('SIGINT', () => {
    if (running !== undefined) {
      try {
        process.kill(-running, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    cleanup()
    process.exit(130)
  })
  console.log(`scratch copy ${scratch}; logs in ${logs}; each test command bounded to ${TIMEOUT_S} s`)

  const results: Result[] = []
  const broken = new Map<string, string>() // command key → why its baseline failed
  try {
    if (baseline) {
      const seen = new Set<string>()
      for (const m of chosen) {
        const key = commandKey(m)
        if (seen.has(key)) continue
        seen.add(key)
        const log = join(logs, `baseline-${m.name}.log`)
        const run = await runTests(scratch, m, log)
        const ok = run.exitCode === 0 && !run.timedOut && run.pass > 0
        console.log(`baseline for ${m.name}: ${ok ? 'passes' : 'FAILS'} (${run.pass} pass, ${run.fail} fail, ${run.seconds.toFixed(0)} s)`)
        if (!ok) {
          const why = run.timedOut ? 'timed out' : run.pass === 0 && run.fail === 0 ? 'ran no test' : `failed: ${run.failed.join('; ')}`
          broken.set(key, `its tests fail without the mutation (${why}); see ${log}`)
        }
      }
    }
    for (const m of chosen) {
      const tests =
        m.tests.map((t) => t.replace(/^tests\//, '')).join(' ') + (m.filter ? ` -t '${m.filter}'` : '') + (usesPostgres(m) ? ' (pg)' : '')
      const problem = broken.get(commandKey(m))
      if (problem) {
        results.push({ name: m.name, tests, result: 'BASELINE FAILS', seconds: 0, detail: problem })
        continue
      }
      const applied = apply(scratch, m)
      if ('problem' in applied) {
        results.push({ name: m.name, tests, result: 'DOES NOT APPLY', seconds: 0, detail: applied.problem })
        console.log(`${m.name}: DOES NOT APPLY`)
        continue
      }
      const log = join(logs, `${m.name}.log`)
      let run: Run
      try {
        run = await runTests(scratch, m, log)
      } finally {
        for (const [path, text] of applied.restore) writeFileSync(path, text)
      }
      let result: string
      let detail: string | undefined
      if (run.timedOut) [result, detail] = ['TIMEOUT', `stopped after ${TIMEOUT_S} s; not counted as killed; see ${log}`]
      else if (run.exitCode === 0 && run.pass > 0) [result, detail] = ['SURVIVED', `its tests pass with the guard removed; see ${log}`]
      else if (run.exitCode === 0) [result, detail] = ['NO TEST RAN', `see ${log}`]
      else if (run.fail > 0 || run.errors > 0) result = `killed${run.failed.length > 0 ? `: ${run.failed.join('; ')}` : ' (error)'}`
      else [result, detail] = ['ERROR', `exit ${run.exitCode} without a failed test; see ${log}`]
      results.push({ name: m.name, tests, result, seconds: run.seconds, detail })
      console.log(`${m.name}: ${result} (${run.seconds.toFixed(0)} s)`)
    }
  } finally {
    cleanup()
  }
  printTable(results)
  const bad = results.filter((r) => !r.result.startsWith('killed'))
  const minutes = ((Date.now() - started) / 60000).toFixed(1)
  console.log(
    `\n${results.length - bad.length} of ${results.length} mutants killed in ${minutes} min` +
      (bad.length > 0 ? `; NOT PROVEN: ${bad.map((r) => `${r.name} (${r.result})`).join(', ')}` : ''),
  )
  return bad.length > 0 ? 1 : 0
}

if (import.meta.main) process.exit(await main())
