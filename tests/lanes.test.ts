// CI's lanes (tests/lanes.ts): every test file runs in at least one, a file that goes through a database
// in both, and a file given to one lane only never has tests that run in the other mode alone.

import { describe, expect, test } from 'bun:test'
import { Glob } from 'bun'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { assign, LANES, ONE_LANE, oneLaneEntry, testFiles } from './lanes'

const ROOT = resolve(import.meta.dir, '..')
const files = testFiles()
const lanes = assign(files)

describe('CI lanes', () => {
  test('every test file is in a lane; one given to one lane is in exactly one, every other in both', () => {
    const wrong: string[] = []
    for (const file of files) {
      const count = LANES.filter((lane) => lanes[lane].includes(file)).length
      if (count !== (oneLaneEntry(file) ? 1 : 2)) wrong.push(`${file}: in ${count} lanes`)
    }
    expect(wrong).toEqual([])
    expect(files.length).toBeGreaterThan(150)
  })

  test('each one-lane pattern matches a test file (none is left over from a file renamed or gone)', () => {
    const unmatched = ONE_LANE.filter((e) => !files.some((f) => new Glob(e.pattern).match(f))).map((e) => e.pattern)
    expect(unmatched).toEqual([])
  })

  test("a one-lane file with tests for one database mode only is pinned to that mode's lane", () => {
    const wrong: string[] = []
    for (const file of files) {
      const entry = oneLaneEntry(file)
      if (!entry || file === 'tests/lanes.test.ts') continue // this file names the pattern
      const text = readFileSync(join(ROOT, file), 'utf8')
      // describe.skipIf(!usingPostgres()), test.if(usingPostgres()), and the like.
      for (const m of text.matchAll(/\.(skipIf|if)\(\s*(!?)\s*usingPostgres\(\)/g)) {
        const postgresOnly = (m[1] === 'skipIf') === (m[2] === '!')
        const needs = postgresOnly ? 'postgres' : 'embedded'
        if (entry.lane !== needs) wrong.push(`${file}: has ${needs}-only tests, lane ${entry.lane ?? 'unpinned'}`)
      }
    }
    expect(wrong).toEqual([])
  })

  test('the lanes share the one-lane files about evenly', () => {
    const count = (lane: (typeof LANES)[number]) => lanes[lane].filter((f) => oneLaneEntry(f)).length
    expect(Math.abs(count('embedded') - count('postgres'))).toBeLessThanOrEqual(4)
  })
})
