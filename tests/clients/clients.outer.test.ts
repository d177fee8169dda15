// Outer ring (real time): the three client libraries (clients/typescript, clients/python, clients/php)
// against a running service (startService on loopback). Each client's own script (its test/smoke
// file) sends, quotes, sends a bulk twice with one Idempotency-Key, pages through the messages, meets
// a validation error and verifies a webhook delivery that the service itself signed and delivered
// to a real HTTPS receiver (and refuses it once forged); this file judges what each printed, and
// the balances through the admin API. Python and PHP are Debian's python3 and php-cli (+ php-curl),
// installed by .ci/run; outside CI a missing interpreter is a skip that says so.

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readConfig } from '../../src/config'
import { startService, type Running } from '../../src/server'
import { ADMIN_TOKEN } from '../helpers/app'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { makeTestTls, startReceiver, type Receiver, type Received, type TestTls } from '../helpers/receiver'

setDefaultTimeout(90_000)

const CLIENTS = join(import.meta.dir, '..', '..', 'clients')
const IN_CI = process.env.CI === 'true'

type Client = { name: string; command: string[]; cwd: string; missing: () => string | null }

const CLIENT_LIST: Client[] = [
  { name: 'typescript', command: [process.execPath, 'test/smoke.ts'], cwd: join(CLIENTS, 'typescript'), missing: () => null },
  {
    name: 'python',
    command: ['python3', 'smoke.py'],
    cwd: join(CLIENTS, 'python'),
    missing: () => (Bun.which('python3') ? null : 'python3 not found (apt-get install python3)'),
  },
  {
    name: 'php',
    command: ['php', 'tests/smoke.php'],
    cwd: join(CLIENTS, 'php'),
    missing: () => {
      if (!Bun.which('php')) return 'php not found (apt-get install php-cli php-curl)'
      const modules = Bun.spawnSync(['php', '-m']).stdout.toString()
      return /^curl$/m.test(modules) ? null : "php's curl extension not found (apt-get install php-curl)"
    },
  },
]

/** Outside CI a missing interpreter skips its client's test, saying why; in CI it fails it. */
function skipped(client: Client): boolean {
  const why = client.missing()
  if (why === null || IN_CI) return false
  console.log(`client library test skipped (${client.name}): ${why}`)
  return true
}

describe('the client libraries against a running service', () => {
  const dir = mkdtempSync(join(tmpdir(), 'messaging-clients-'))
  let running: Running
  let tls: TestTls
  let receiver: Receiver
  let dropDatabase = async () => {}
  let delivery: Received & { secret: string }

  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const response = await fetch(`${running.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const json = (await response.json()) as any
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
    return json.data
  }

  const newAccount = async (name: string) => {
    const account = await call('POST', '/admin/v1/accounts', ADMIN_TOKEN, { name, balance: 100_000 })
    const key = await call('POST', `/admin/v1/accounts/${account.id}/keys`, ADMIN_TOKEN, { label: name })
    return { id: account.id as number, key: key.key as string }
  }

  beforeAll(async () => {
    tls = makeTestTls()
    receiver = startReceiver(tls)
    const env: Record<string, string> = {
      PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      DATA_DIR: join(dir, 'data'),
      LOG_LEVEL: 'error',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_CA_FILE: tls.caFile,
      SIM_DELIVERED_MS: '50',
      SIM_READ_MS: '600000',
    }
    if (usingPostgres()) {
      const database = await createMigratedPostgresDatabase()
      env.DATABASE_URL = database.url
      dropDatabase = database.drop
    }
    await premigrate(env.DATA_DIR!)
    running = await startService(readConfig(env))

    // The webhook test vector: a real delivery, signed by the service's own signer.
    const owner = await newAccount('webhook vector')
    const { signing_secret } = await call('POST', '/api/v1/webhook', owner.key, { url: receiver.url() })
    await call('POST', '/api/v1/messages/send', owner.key, { to: '081234567899', body: 'a status change to sign' })
    const [first] = await receiver.arrived(1)
    delivery = { ...first!, secret: signing_secret }
  }, 90_000)

  afterAll(async () => {
    await running?.stop()
    receiver?.stop()
    tls?.remove()
    await dropDatabase()
    rmSync(dir, { recursive: true, force: true })
  })

  for (const client of CLIENT_LIST) {
    test.skipIf(skipped(client))(`${client.name}: send, quote, idempotent bulk, paging, a typed error, webhook signatures`, async () => {
      const why = client.missing()
      if (why) throw new Error(`${client.name} client cannot run: ${why}`)
      const account = await newAccount(`${client.name} client`)
      const proc = Bun.spawn(client.command, {
        cwd: client.cwd,
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
        env: {
          PATH: process.env.PATH ?? '',
          PYTHONDONTWRITEBYTECODE: '1',
          MESSAGING_BASE_URL: running.url,
          MESSAGING_API_KEY: account.key,
          WEBHOOK_SECRET: delivery.secret,
          WEBHOOK_ID: delivery.headers['webhook-id']!,
          WEBHOOK_TIMESTAMP: delivery.headers['webhook-timestamp']!,
          WEBHOOK_SIGNATURE: delivery.headers['webhook-signature']!,
          WEBHOOK_BODY: delivery.body,
        },
      })
      const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000)
      const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
      clearTimeout(timer)
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
      const out = JSON.parse(stdout)

      // Send and quote: the quote of a free-form message is the price the send was charged.
      expect(out.sent.status).toBe('sent')
      expect(out.sent.cost).toBeGreaterThan(0)
      expect(out.quote_total).toBe(out.sent.cost)

      // The bulk's repeat with the same Idempotency-Key replays the first answer, charged once.
      expect(out.bulk_first).toMatchObject({ total: 3, sent: 3, failed: 0, total_cost: 3 * out.sent.cost })
      expect(out.bulk_repeat).toEqual(out.bulk_first)
      expect(out.balance_before).toBe(100_000)
      expect(out.balance_after).toBe(100_000 - 4 * out.sent.cost)
      expect(out.bulk_first.balance_after).toBe(out.balance_after)
      const account_ = await call('GET', `/admin/v1/accounts/${account.id}`, ADMIN_TOKEN)
      expect(account_.wa_balance).toBe(out.balance_after)

      // Paging: offset counts records, two pages of two do not overlap, the walk sees each message once.
      expect(out.paging.total).toBe(4)
      expect(out.paging.first).toHaveLength(2)
      expect(out.paging.second).toHaveLength(2)
      expect(new Set([...out.paging.first, ...out.paging.second]).size).toBe(4)
      expect(out.paging.walked).toEqual([...out.paging.first, ...out.paging.second])

      // A typed error with the service's code, status and request id.
      expect(out.error).toEqual({ validation: true, status: 422, code: 'VALIDATION_ERROR', request_id: expect.stringMatching(/\S{8,}/) })

      expect(out.templates_total).toBe(0)

      // The service's own signature verifies; a changed body, another secret or a delivery over 5 minutes old is refused.
      expect(out.webhook).toEqual({ event: 'message.status', forged_body_refused: true, other_secret_refused: true, stale_refused: true })
    })
  }
})
