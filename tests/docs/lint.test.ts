// The two OpenAPI documents as other tools read them: Redocly's linter, with the repository's
// redocly.yaml, finds no error in either, as the app serves them. A copy with known errors is linted
// too, so the check cannot pass because the linter looked at nothing.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { testApp, type TestApp } from '../helpers/app'

type Json = Record<string, any>

const ROOT = join(import.meta.dir, '..', '..')
const REDOCLY = join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js')

let t: TestApp
let dir: string
const documents: Record<string, Json> = {}

beforeAll(async () => {
  t = await testApp()
  dir = mkdtempSync(join(tmpdir(), 'docs-lint-'))
  for (const [name, path] of [
    ['api', '/docs/json'],
    ['admin', '/docs/admin/json'],
  ]) {
    const answer = await t.request('GET', path!)
    expect(answer.status).toBe(200)
    documents[name!] = answer.body
  }
}, 60_000)

afterAll(async () => {
  await t.close()
  rmSync(dir, { recursive: true, force: true })
}, 30_000)

/** `redocly lint` of a document written to the temp dir, run by Bun as the client test runs tsc (no Node needed). */
async function lint(name: string, document: Json) {
  const file = join(dir, `${name}.json`)
  writeFileSync(file, JSON.stringify(document))
  const proc = Bun.spawn([process.execPath, REDOCLY, 'lint', '--config', join(ROOT, 'redocly.yaml'), '--format', 'json', file], {
    cwd: dir,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 25_000)
  const [exit, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(timer)
  let report: Json = {}
  try {
    report = JSON.parse(out)
  } catch {
    // not a report: the exit code and the output below say what happened
  }
  const errors = ((report.problems ?? []) as Json[]).filter((p) => p.severity === 'error')
  return {
    name,
    exit,
    errors: report.totals?.errors ?? `no report: ${err.slice(-500)}`,
    rules: [...new Set(errors.map((p) => p.ruleId as string))],
    problems: errors.map((p) => `${p.ruleId}: ${p.message} (${p.location?.[0]?.pointer})`),
  }
}

test('redocly lint finds no error in either document, and does find them in a broken copy', async () => {
  const clean = await Promise.all([lint('api', documents.api!), lint('admin', documents.admin!)])
  for (const result of clean) expect(result).toEqual({ name: result.name, exit: 0, errors: 0, rules: [], problems: [] })

  // No servers, and an example with both body and template_id, which the send body's oneOf forbids.
  const broken = structuredClone(documents.api!)
  delete broken.servers
  broken.paths['/api/v1/messages/send'].post.requestBody.content['application/json'].examples.text.value.template_id = 3
  const caught = await lint('broken', broken)
  expect({ exit: caught.exit, rules: caught.rules.sort() }).toEqual({
    exit: 1,
    rules: ['no-empty-servers', 'no-invalid-media-type-examples'],
  })
}, 30_000)
