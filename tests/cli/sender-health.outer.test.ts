// Outer ring (real time): the service and the command line run as child processes, Meta's Graph API
// a fake in this process. A Meta sender's health from the command line (issue 32 §4): `senders show`
// after a check read its quality and Meta's webhooks (a flag, a restriction, a capability update)
// arrived says what it is now and its latest changes, newest first; --json carries `health`; a
// Twilio or simulator sender shows no health lines.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN_TOKEN } from '../helpers/app'
import { call, startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { fakeGraph } from '../helpers/fake-graph'
import { META_A } from '../helpers/senders'

const root = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'cli-sender-health-'))
const graph = fakeGraph()
const WABA = META_A.credentials.business_account_id
const PHONE_ID = META_A.credentials.phone_number_id
graph.phone(PHONE_ID, META_A.credentials.access_token, {
  display_phone_number: '62 811-0000-0001',
  verified_name: 'Warung A',
  quality_rating: 'YELLOW',
  appSecret: META_A.credentials.app_secret,
})
graph.accountOf.set(PHONE_ID, WABA)

let child: Child
let env: Record<string, string>
let dropDb = async () => {}
let sender: number
let sim: number

beforeAll(async () => {
  env = { DATA_DIR: dataDir, ADMIN_TOKEN, META_API_BASE: graph.apiBase }
  if (usingPostgres()) {
    const db = await createMigratedPostgresDatabase()
    env.DATABASE_URL = db.url
    dropDb = db.drop
  }
  await premigrate(dataDir)
  child = await startChild(env)
  // Meta's webhooks go to the child's real route, signed with the sender's app secret.
  graph.callback = { publicBaseUrl: child.url, deliver: (request: Request) => fetch(request) }
  const created = await call(child.url, 'POST', '/admin/v1/senders', { provider: 'meta', name: 'Warung A', ...META_A })
  expect(created.status).toBe(201)
  sender = created.body.data.id
  const simulated = await call(child.url, 'POST', '/admin/v1/senders', { provider: 'simulator', name: 'Sim', number: '+6281100000077' })
  sim = simulated.body.data.id
}, 60_000)
afterAll(async () => {
  await child?.stop()
  graph.stop()
  await dropDb()
  rmSync(dataDir, { recursive: true, force: true })
})

type Run = { code: number | null; out: string; err: string }
async function admin(args: string[]): Promise<Run> {
  const shell = { ...process.env, ...env, HOST: '127.0.0.1', PORT: new URL(child.url).port, DATABASE_URL: env.DATABASE_URL ?? '' }
  const proc = Bun.spawn(['bun', join(root, 'src/cli/admin.ts'), ...args], { cwd: root, env: shell, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}
const ok = (r: Run) => {
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' })
  return r.out
}
/** The lines of `senders show` from its health on (created stays last). */
const healthPart = (out: string) => {
  const lines = out.trimEnd().split('\n')
  return lines.slice(
    lines.findIndex((l) => l.startsWith('  health: ')),
    -1,
  )
}
const said = async (answer: Promise<Response>) => expect((await answer).status).toBe(200)

test("senders show: a Meta sender's health and its latest changes, after a check and Meta's webhooks", async () => {
  // Another provider's sender has no health to show.
  expect(ok(await admin(['senders', 'show', String(sim)]))).not.toContain('health')
  // Creating the sender synced its templates, which read the node's quality_rating.
  expect(healthPart(ok(await admin(['senders', 'show', String(sender)])))).toEqual([
    '  health: quality yellow; messaging limit said by the operator',
    '  health history (latest 1, newest first):',
    expect.stringMatching(/^ {4}AT +FIELD +OLD +NEW +SAID BY$/),
    expect.stringMatching(/^ {4}\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  quality +- +yellow +its sync$/),
  ])

  // A check reads it again (no change); then Meta flags the number, restricts the account and says its limit.
  ok(await admin(['senders', 'check', String(sender)]))
  const now = Math.floor(Date.now() / 1000)
  await said(graph.sayHealth({ waba: WABA, quality: { phoneNumberId: PHONE_ID, event: 'FLAGGED' }, time: now }))
  await said(graph.sayHealth({ waba: WABA, restrictions: [{ restriction_type: 'RESTRICTED_BIZ_INITIATED_MESSAGING' }], time: now + 1 }))
  await said(graph.sayHealth({ waba: WABA, capability: 2000, time: now + 2 }))

  const shown = ok(await admin(['senders', 'show', String(sender)]))
  expect(shown).toContain('\n  messaging limit: 0/2,000 recipients in the last 24 h (its own tier)\n')
  const part = healthPart(shown)
  expect(part.slice(0, 3)).toEqual([
    '  health: quality yellow; flagged by Meta: its campaigns pause; restricted by Meta: business-initiated sends refused, its ' +
      'campaigns pause; restrictions: RESTRICTED_BIZ_INITIATED_MESSAGING; messaging limit said by Meta',
    '  health history (latest 4, newest first):',
    expect.stringMatching(/^ {4}AT +FIELD +OLD +NEW +SAID BY$/),
  ])
  const rows = part.slice(3).map((l) => l.trim().split(/ {2,}/))
  expect(rows.map((r) => r.slice(1))).toEqual([
    ['messaging_limit', 'unlimited', '2000', 'Meta (webhook)'],
    ['restrictions', 'none', expect.stringContaining('RESTRICTED_BIZ_INITIATED_MESSAGING'), 'Meta (webhook)'],
    ['flagged', 'false', 'true', 'Meta (webhook)'],
    ['quality', '-', 'yellow', 'its sync'],
  ])
  for (const row of rows) expect(row[0]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)

  const json = JSON.parse(ok(await admin(['senders', 'show', String(sender), '--json'])))
  expect(json.health).toMatchObject({ quality: 'yellow', flagged: true, restricted: 'business', messaging_limit_source: 'meta' })
  expect(json.health.history).toHaveLength(4)
}, 60_000)
