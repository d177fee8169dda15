// Outer ring (real time): the service and the command line run as child processes, Meta's Graph API
// a fake in this process. A Meta sender's WhatsApp templates from the command line: template submit
// (a JSON file, or standard input), template sync and template list --sender, with their errors.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN_TOKEN } from '../helpers/app'
import { call, startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { fakeGraph } from '../helpers/fake-graph'
import { META_A } from '../helpers/senders'

const root = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'cli-wa-templates-'))
const graph = fakeGraph()
const WABA = META_A.credentials.business_account_id
graph.phone(META_A.credentials.phone_number_id, META_A.credentials.access_token)
graph.accountOf.set(META_A.credentials.phone_number_id, WABA)

let child: Child
let env: Record<string, string>
let dropDb = async () => {}
let sender: number

beforeAll(async () => {
  env = { DATA_DIR: dataDir, ADMIN_TOKEN, META_API_BASE: graph.apiBase }
  if (usingPostgres()) {
    const db = await createMigratedPostgresDatabase()
    env.DATABASE_URL = db.url
    dropDb = db.drop
  }
  await premigrate(dataDir)
  child = await startChild(env)
  const created = await call(child.url, 'POST', '/admin/v1/senders', { provider: 'meta', name: 'Warung A', ...META_A })
  expect(created.status).toBe(201)
  sender = created.body.data.id
}, 60_000)
afterAll(async () => {
  await child?.stop()
  graph.stop()
  await dropDb()
  rmSync(dataDir, { recursive: true, force: true })
})

type Run = { code: number | null; out: string; err: string }
/** A command run without blocking: the fake Graph API answers from this process while it runs. */
async function admin(args: string[], stdin?: string): Promise<Run> {
  const shell = { ...process.env, ...env, HOST: '127.0.0.1', PORT: new URL(child.url).port, DATABASE_URL: env.DATABASE_URL ?? '' }
  const proc = Bun.spawn(['bun', join(root, 'src/cli/admin.ts'), ...args], {
    cwd: root,
    env: shell,
    stdin: stdin === undefined ? 'ignore' : new Blob([stdin]),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}
const ok = (r: Run) => {
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' })
  return r.out
}

const definition = (name: string) => ({
  name,
  language: 'id',
  category: 'UTILITY',
  components: [{ type: 'BODY', text: 'Pesanan {{1}} sudah dikirim.', example: { body_text: [['A-1']] } }],
})

test('template submit (a file, then standard input), template sync and template list --sender', async () => {
  const file = join(dataDir, 'order_shipped.json')
  writeFileSync(file, JSON.stringify(definition('order_shipped')))
  const submitted = ok(await admin(['template', 'submit', String(sender), file]))
  const atMeta = graph.templates.get(WABA)!.find((t) => t.name === 'order_shipped')!
  expect(submitted).toMatch(
    new RegExp(`^WhatsApp template \\d+ order_shipped \\(id, utility\\) stored pending: submitted to meta as ${atMeta.id}\\n$`),
  )
  const id = ok(await admin(['template', 'submit', String(sender), '-', '--quiet'], JSON.stringify(definition('order_paid')))).trim()
  expect(id).toMatch(/^\d+$/)

  graph.template(WABA, { ...definition('promo_x'), category: 'MARKETING', status: 'REJECTED', rejected_reason: 'PROMOTIONAL' })
  atMeta.status = 'APPROVED'
  expect(ok(await admin(['template', 'sync', String(sender)]))).toBe(
    `sender ${sender} (meta): 3 listed, 1 new, 1 changed, 1 unchanged, 0 no longer listed (now deleted)\n`,
  )
  const listed = ok(await admin(['template', 'list', '--sender', String(sender)]))
  expect(listed.split('\n')[0]).toMatch(/^\s*ID\s+NAME\s+LANGUAGE\s+CATEGORY\s+STATUS\s+QUALITY\s+REASON$/)
  expect(listed).toMatch(/order_paid\s+id\s+utility\s+pending\s+unknown\s+-/)
  expect(listed).toMatch(/order_shipped\s+id\s+utility\s+approved\s+unknown\s+-/)
  expect(listed).toMatch(/promo_x\s+id\s+marketing\s+rejected\s+unknown\s+PROMOTIONAL/)
  expect(listed).toEndWith(`3 WhatsApp templates of sender ${sender}, by name and language\n`)
  const json = JSON.parse(ok(await admin(['template', 'list', '--sender', String(sender), '--json'])))
  expect(json.map((t: any) => t.name)).toEqual(['order_paid', 'order_shipped', 'promo_x'])
}, 60_000)

test('the errors: a definition the service refuses is exit 1 naming the part; a bad file or sender is exit 2', async () => {
  const refused = await admin(['template', 'submit', String(sender), '-'], JSON.stringify({ ...definition('Bad Name') }))
  expect(refused.code).toBe(1)
  expect(refused.err).toContain('name: only lowercase letters, digits and underscores')
  const notJson = await admin(['template', 'submit', String(sender), '-'], 'name: x')
  expect(notJson.code).toBe(2)
  expect(notJson.err).toContain("not JSON (a template in the Cloud API's JSON")
  expect((await admin(['template', 'sync', 'x'])).code).toBe(2)
  const both = await admin(['template', 'list', '1', '--sender', String(sender)])
  expect(both.code).toBe(2)
  expect(both.err).toContain('give ACCOUNT_ID or --sender, not both')
  const deployment = await admin(['template', 'sync', '0'])
  expect(deployment.code).toBe(1)
  expect(deployment.err).toContain("the deployment's default sender (simulator) keeps its templates here only")
}, 60_000)

test('template edit (its new components, pending again at Meta) and template delete (at Meta, then here)', async () => {
  const list = JSON.parse(ok(await admin(['template', 'list', '--sender', String(sender), '--json'])))
  const shipped = list.find((t: any) => t.name === 'order_shipped')
  expect(shipped.status).toBe('approved')
  const components = [{ type: 'BODY', text: 'Pesanan {{1}} sudah kami kirim.', example: { body_text: [['A-1']] } }]
  const edited = ok(await admin(['template', 'edit', String(shipped.id), '-'], JSON.stringify({ components })))
  expect(edited).toBe(`WhatsApp template ${shipped.id} order_shipped (id, utility) edited, submitted to meta again: pending\n`)
  expect(graph.templates.get(WABA)!.find((t) => t.name === 'order_shipped')!.components).toEqual(components)
  const again = await admin(['template', 'edit', String(shipped.id), '-'], JSON.stringify({ components }))
  expect(again.code).toBe(1)
  expect(again.err).toContain('is pending: only an approved, rejected or paused template can be edited')
  const deleted = ok(await admin(['template', 'delete', String(shipped.id)]))
  expect(deleted).toBe(`WhatsApp template ${shipped.id} order_shipped (id, utility) deleted at meta: deleted\n`)
  expect(graph.templates.get(WABA)!.some((t) => t.name === 'order_shipped')).toBe(false)
  expect((await admin(['template', 'delete', 'x'])).code).toBe(2)
}, 60_000)
