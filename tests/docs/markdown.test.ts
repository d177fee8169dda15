// markdownlint-cli2 (pinned, .markdownlint-cli2.jsonc) passes on README.md, ARCHITECTURE.md and docs/, so a
// page with an unclosed fence, a broken table or a link to a heading of its own that is not there fails CI.

import { expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync, copyFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..')
const LINT = join(ROOT, 'node_modules', '.bin', 'markdownlint-cli2')

const lint = (cwd: string, args: string[] = []) => {
  const run = Bun.spawnSync([LINT, ...args], { cwd, stdout: 'pipe', stderr: 'pipe' })
  return { code: run.exitCode, out: `${run.stdout.toString()}${run.stderr.toString()}` }
}

test('README.md and docs/ pass markdownlint', () => {
  const run = lint(ROOT)
  expect(run.out).toContain('Summary: 0 issues')
  expect(run.code).toBe(0)
}, 60_000)

test('the same configuration fails a page whose fence never closes before its next heading', () => {
  const dir = mkdtempSync(join(tmpdir(), 'markdownlint-'))
  try {
    copyFileSync(join(ROOT, '.markdownlint-cli2.jsonc'), join(dir, '.markdownlint-cli2.jsonc'))
    writeFileSync(
      join(dir, 'README.md'),
      '# Page\n\nSee [Dashboard](#dashboard).\n\n```sh\necho one\n\n## Dashboard\n\n```sh\necho two\n```\n',
    )
    const run = lint(dir)
    expect(run.code).not.toBe(0)
    expect(run.out).toContain('MD051/link-fragments')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 60_000)
