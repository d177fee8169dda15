// The mutation list stays true to the code and to the README, without running a mutant: every
// mutation still applies (each text to replace occurs exactly once), names the tests that exist, and
// README's table is the one `bun run mutants --list` prints. The mutants themselves: `bun run mutants`.

import { expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { MUTATIONS } from './list'
import { markdownTable, occurrences } from './run'

const ROOT = resolve(import.meta.dir, '../..')

test('every mutation applies today and names existing tests', () => {
  expect(new Set(MUTATIONS.map((m) => m.name)).size).toBe(MUTATIONS.length)
  for (const m of MUTATIONS) {
    expect(m.edits.length).toBeGreaterThan(0)
    for (const edit of m.edits) {
      const text = readFileSync(join(ROOT, edit.file), 'utf8')
      expect({ mutation: m.name, file: edit.file, find: edit.find, occurrences: occurrences(text, edit.find) }).toMatchObject({
        occurrences: 1,
      })
    }
    for (const file of m.tests) expect({ mutation: m.name, file, exists: existsSync(join(ROOT, file)) }).toMatchObject({ exists: true })
  }
})

test("docs/internals/mutants.md's table of mutations is the list's", () => {
  const lines = readFileSync(join(ROOT, 'docs', 'internals', 'mutants.md'), 'utf8').split('\n')
  const start = lines.findIndex((line) => line.startsWith('| mutation | guard in |'))
  const end = lines.findIndex((line, i) => i > start && !line.startsWith('|'))
  expect(start).toBeGreaterThan(-1)
  expect(lines.slice(start, end).join('\n')).toBe(markdownTable())
})
