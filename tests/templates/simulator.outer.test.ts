// Outer ring (real time): the service runs as a child process with the simulator and its default
// SIM_TEMPLATE_APPROVAL_MS, and the README's quick path for a WhatsApp template runs as written after
// the quickstart's export line: submitted with the command line for sender 0, approved by the
// simulator's worker on its own, then sent (issue 30 §5).

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN_TOKEN } from '../helpers/app'
import { shBlock } from '../helpers/docs'
import { startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'

const root = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'sim-templates-'))
let child: Child
let env: Record<string, string>
let dropDb = async () => {}

beforeAll(async () => {
  env = { DATA_DIR: dataDir, ADMIN_TOKEN, SIM_DELIVERED_MS: '50', SIM_READ_MS: '100' }
  if (usingPostgres()) {
    const db = await createMigratedPostgresDatabase()
    env.DATABASE_URL = db.url
    dropDb = db.drop
  }
  await premigrate(dataDir)
  child = await startChild(env)
})
afterAll(async () => {
  await child?.stop()
  await dropDb()
  rmSync(dataDir, { recursive: true, force: true })
})

function bash(script: string) {
  const shell = { ...process.env, ...env, HOST: '127.0.0.1', PORT: new URL(child.url).port, DATABASE_URL: env.DATABASE_URL ?? '' }
  const done = Bun.spawnSync(['bash', '-c', script], { cwd: root, env: shell })
  return { code: done.exitCode, out: done.stdout.toString(), err: done.stderr.toString() }
}

/** The docs' ```sh block containing `marker` (README.md or docs/), pointed at this test's service. */
function readmeBlock(marker: string): string {
  const block = shBlock(marker)
  expect(block).toBeDefined()
  return block!.replaceAll('http://127.0.0.1:3000', child.url).trimEnd()
}

test("the README's simulator template quick path: submitted pending, approved by the simulator, then sent", async () => {
  const block = readmeBlock('bun run admin template submit 0 - --quiet')
  // Before the approval: the same send is refused, nothing charged.
  const refused = bash(
    `set -e\neval "$(bun run admin quickstart | grep '^export')"\n${block.replace(/^sleep \d+$/m, '')}\necho; echo "TEMPLATE=$TEMPLATE_ID"`,
  )
  expect(refused.code).toBe(0)
  const answer = JSON.parse(refused.out.split('\n')[0]!)
  expect(answer).toMatchObject({ success: false, code: 'TEMPLATE_NOT_APPROVED' })
  expect(answer.error).toContain('(order_ready, en_US) is pending')

  // A second template of another name, as written: the sleep lets the simulator approve it.
  const ran = bash(`set -e\neval "$(bun run admin quickstart | grep '^export')"\n${block.replaceAll('order_ready', 'order_ready_2')}`)
  expect(ran.err).not.toContain('admin:')
  expect(ran.code).toBe(0)
  expect(JSON.parse(ran.out)).toMatchObject({ success: true, data: { status: 'sent', to: '+6281234567890' } })
  const id = refused.out.match(/TEMPLATE=(\d+)/)![1]
  const first = await fetch(`${child.url}/admin/v1/whatsapp-templates/${id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  const shown = (await first.json()) as { data: { status: string; history: { field: string; new: string; source: string }[] } }
  expect(shown.data.status).toBe('approved')
  expect(shown.data.history.filter((h) => h.field === 'status')).toMatchObject([{ new: 'approved', source: 'simulator' }])
}, 60_000)
