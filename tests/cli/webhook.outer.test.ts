// Outer ring (real time): the service and `admin webhook listen` run as child processes, with real receivers.
// Webhooks on a laptop: `admin webhook listen` and `admin webhook test` as child processes against the
// service as a child process, forwarding to local receivers that verify with the standardwebhooks
// package, while the registered URL (another receiver) gets its own deliveries. The service's own
// output is captured for the warning line of a failed attempt. On PostgreSQL, two instances share
// one database: listening on one sees the events the other records.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Webhook } from 'standardwebhooks'
import { ADMIN_TOKEN } from '../helpers/app'
import { call, freePort, startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { startReceiver, type Received, type Receiver } from '../helpers/receiver'
import { until } from '../helpers/wait'
import { shBlock } from '../helpers/docs'

const CLI = `${import.meta.dir}/../../src/cli/admin.ts`
const dataDir = mkdtempSync(join(tmpdir(), 'cli-webhook-'))
let env: Record<string, string>
let service: Child
let dropDb = async () => {}
let registered: Receiver
let local: Receiver

beforeAll(async () => {
  env = { DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE: 'true', SIM_DELIVERED_MS: '50', SIM_READ_MS: '100' }
  if (usingPostgres()) {
    const db = await createMigratedPostgresDatabase()
    env.DATABASE_URL = db.url
    dropDb = db.drop
  }
  await premigrate(dataDir)
  service = await startChild(env, { readyMs: 90_000 })
  registered = startReceiver(null)
  local = startReceiver(null)
}, 120_000)
afterAll(async () => {
  await service?.stop()
  registered?.stop()
  local?.stop()
  await dropDb()
  rmSync(dataDir, { recursive: true, force: true })
}, 30_000)
afterEach(() => {
  registered.reset()
  local.reset()
})

// Listen commands a failed test left running are killed.
const running = new Set<ReturnType<typeof Bun.spawn>>()
afterEach(() => {
  for (const proc of running) if (proc.exitCode === null) proc.kill(9)
  running.clear()
})

const cliEnv = (target: Child) => ({ ...process.env, ADMIN_TOKEN, PORT: new URL(target.url).port, DATABASE_URL: '' })

/** One command to its end. Not spawnSync: the receivers in this process must answer meanwhile. */
async function admin(target: Child, ...args: string[]) {
  const proc = Bun.spawn(['bun', CLI, ...args], { env: cliEnv(target), stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}

/** `admin webhook listen` running in the background; its output so far, and Ctrl-C. */
async function listen(target: Child, keyId: number, ...flags: string[]) {
  const proc = Bun.spawn(['bun', CLI, 'webhook', 'listen', String(keyId), ...flags], {
    env: cliEnv(target),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  running.add(proc)
  let out = ''
  let err = ''
  void (async () => {
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(chunk)
  })()
  void (async () => {
    for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) err += new TextDecoder().decode(chunk)
  })()
  await until(
    () => out + err,
    // The ready block ends with the secret's line: the registered URL's, or the listen secret itself.
    (text) => /^(Signed with .*| {2}whsec_\S+)$/m.test(text) || proc.exitCode !== null,
    30_000,
    'the listen command to be ready',
  )
  expect(err).toBe('')
  return {
    output: () => out,
    /** Ctrl-C; the exit code. */
    async interrupt() {
      proc.kill('SIGINT')
      return await proc.exited
    },
  }
}

let phone = 10
let customers = 1
async function account(target: Child, url?: string) {
  const created = await call(target.url, 'POST', '/admin/v1/accounts', { name: 'laptop', balance: 1000 })
  const key = await call(target.url, 'POST', `/admin/v1/accounts/${created.body.data.id}/keys`, { label: 'dev' })
  let secret: string | undefined
  if (url) {
    const registration = await call(target.url, 'POST', '/api/v1/webhook', { url }, key.body.data.key)
    expect(registration.status).toBe(200)
    secret = registration.body.data.signing_secret
  }
  return { key: key.body.data.key as string, keyId: key.body.data.id as number, secret }
}

/** Sends to a number the simulator reports delivered then read (or, ending 8888, failed): its SID. */
async function send(target: Child, key: string, to = `0812345${String(phone++).padStart(5, '0')}`) {
  const sent = await call(target.url, 'POST', '/api/v1/messages/send', { to, body: 'hi' }, key)
  expect(sent.status).toBe(200)
  return sent.body.data.message_id as string
}

/** Verifies like an integrator's receiver would; throws when the signature does not match. */
const verify = (secret: string, r: Received) => new Webhook(secret).verify(r.body, r.headers) as { data: Record<string, unknown> }

async function deliveries(target: Child, keyId: number) {
  const list = await call(target.url, 'GET', `/admin/v1/keys/${keyId}/deliveries?limit=200`)
  expect(list.status).toBe(200)
  return list.body.data as { total: number; items: { id: number; webhook_id: string; status: string; attempts: number; payload: any }[] }
}

describe('webhook listen', () => {
  test('forwards every event of the key to a local URL, signed with the registered secret; the registered URL keeps its own deliveries', async () => {
    const { key, keyId, secret } = await account(service, registered.url('127.0.0.1'))
    const listener = await listen(service, keyId, '--forward-to', local.url('localhost', '/local'))
    expect(listener.output()).toContain(`Signed with the signing secret of the registered URL ${registered.url('127.0.0.1')}`)

    const delivered = await send(service, key)
    const failed = await send(service, key, '081234568888')
    // delivered → read, and failed: three events, each at both receivers.
    await local.waitFor(3, 20_000)
    await registered.waitFor(3, 20_000)
    expect(local.requests).toHaveLength(3)
    expect(registered.requests).toHaveLength(3)

    for (const forwarded of local.requests) {
      expect(forwarded.path).toBe('/local')
      const payload = verify(secret!, forwarded)
      const own = registered.byId(forwarded.headers['webhook-id']!)
      expect(own).toHaveLength(1)
      expect(forwarded.body).toBe(own[0]!.body) // the same bytes as the delivery
      // Printed once the receiver's answer is back, a moment after the receiver saw the event.
      const line = new RegExp(
        `${payload.data.status} +${payload.data.message_sid} +\\[${forwarded.headers['webhook-id']}\\] +→ 200 \\(\\d+ ms\\)`,
      )
      await until(
        async () => listener.output(),
        (output) => line.test(output),
        10_000,
        'the listener to print the event',
      )
    }
    const statuses = local.requests.map((r) => JSON.parse(r.body).data).map((d) => `${d.message_sid} ${d.status}`)
    expect(statuses.sort()).toEqual([`${delivered} delivered`, `${delivered} read`, `${failed} failed`].sort())

    // Forwarding is no delivery: each event was delivered once, to the registered URL only.
    const list = await until(
      () => deliveries(service, keyId),
      (l) => l.items.every((d) => d.status === 'delivered'),
      10_000,
      'the deliveries to be recorded',
    )
    expect(list.total).toBe(3)
    for (const delivery of list.items) {
      expect(delivery.attempts).toBe(1)
      const attempts = await call(service.url, 'GET', `/admin/v1/deliveries/${delivery.id}/attempts`)
      expect(attempts.body.data.items).toMatchObject([{ url: registered.url('127.0.0.1'), status_code: 200 }])
    }
    expect(await listener.interrupt()).toBe(0)
  }, 90_000)

  test('a key without a URL: its events are recorded while it is listened to, signed with its listen secret, never delivered', async () => {
    const { key, keyId } = await account(service)
    // Nobody listens yet: its delivered and read reports come and go, and no event is recorded.
    const before = await send(service, key)
    await until(
      () => call(service.url, 'GET', `/api/v1/messages/${before}`, undefined, key),
      (r) => r.body.data?.status === 'read',
      20_000,
      'the first message to be read',
    )

    const listener = await listen(service, keyId, '--forward-to', local.url())
    const secret = /^ {2}(whsec_\S+)$/m.exec(listener.output())?.[1]
    expect(secret).toBeDefined()
    const during = await send(service, key)
    await local.waitFor(2, 20_000)
    // A test event reaches the listeners of a key without a URL.
    const test = await admin(service, 'webhook', 'test', String(keyId))
    expect(test.err).toBe('')
    expect(test.code).toBe(0)
    expect(test.out).toMatch(new RegExp(`test event \\[msg_\\w+\\] sent to the listeners of key ${keyId}`))
    await local.waitFor(3, 20_000)

    const payloads = local.requests.map((r) => verify(secret!, r).data)
    expect(payloads.map((d) => `${d.message_sid} ${d.status}${d.test ? ' test' : ''}`)).toEqual([
      `${during} delivered`,
      `${during} read`,
      'test delivered test',
    ])
    expect(JSON.stringify(payloads)).not.toContain(before)
    // The line is printed once the receiver's answer is back, a moment after the receiver saw the event.
    await until(
      async () => listener.output(),
      (output) => /test event +\[msg_\w+\] +→ 200 \(\d+ ms\)/.test(output),
      10_000,
      'the listener to print the test event',
    )
    expect(await listener.interrupt()).toBe(0)
    expect((await deliveries(service, keyId)).total).toBe(0)
    // The same secret next time: the receiver keeps its configuration.
    const again = await listen(service, keyId)
    expect(again.output()).toContain(`  ${secret}\n`)
    expect(again.output()).toContain('Printing each event')
    expect(await again.interrupt()).toBe(0)

    // Last-Event-ID resumes after the given event: from 0, every event recorded for the key, in order.
    const stream = await readStream(service, keyId, '0', 3)
    expect(stream.map((e) => JSON.parse(e.body).data.message_sid)).toEqual([during, during, 'test'])
    const resumed = await readStream(service, keyId, String(stream[0]!.id), 2)
    expect(resumed.map((e) => e.id)).toEqual([stream[1]!.id, stream[2]!.id])
    for (const event of resumed) expect(() => new Webhook(secret!).verify(event.body, event.headers)).not.toThrow()
  }, 90_000)

  test('shows what the registration receives: a message.received event forwarded and printed; a key without a URL sees message.status only', async () => {
    const { key, keyId } = await account(service)
    const chose = await call(
      service.url,
      'POST',
      '/api/v1/webhook',
      { url: registered.url('127.0.0.1'), events: ['message.received'] },
      key,
    )
    expect(chose.body.data.events).toEqual(['message.received'])
    const listener = await listen(service, keyId, '--forward-to', local.url('localhost', '/local'))
    const phone = `+62812377${String(customers++).padStart(5, '0')}`
    // The account writes first (the inbound message is then the account's); its status events are not chosen.
    await send(service, key, phone)
    const wrote = await call(service.url, 'POST', '/admin/v1/simulator/inbound', { phone, body: 'Halo kak' })
    expect(wrote.status).toBe(200)
    await local.waitFor(1, 20_000)
    await registered.waitFor(1, 20_000)
    const forwarded = local.requests[0]!
    expect(JSON.parse(forwarded.body)).toMatchObject({ event: 'message.received', data: { phone, text: 'Halo kak' } })
    expect(forwarded.body).toBe(registered.requests[0]!.body)
    verify(chose.body.data.signing_secret, forwarded)
    await until(
      async () => listener.output(),
      (output) => new RegExp(`message\\.received \\${phone} +\\[msg_\\w+\\] +→ 200`).test(output),
      10_000,
      'the listener to print the message.received event',
    )
    // The simulator's delivered and read reports make no event for this registration.
    await Bun.sleep(500)
    expect(local.requests).toHaveLength(1)
    expect(await listener.interrupt()).toBe(0)
    // The delivery log names the event.
    const listed = await admin(service, 'deliveries', String(keyId))
    expect(listed.out).toMatch(/^ *ID +STATUS +ATTEMPTS +EVENT +MESSAGE /m)
    expect(listed.out).toMatch(/delivered +1 +message\.received +- /)

    // Without a registration, a listener sees every event: the statuses and the customer's reply.
    const bare = await account(service)
    const bareListener = await listen(service, bare.keyId, '--forward-to', local.url('localhost', '/bare'))
    const barePhone = `+62812377${String(customers++).padStart(5, '0')}`
    await send(service, bare.key, barePhone)
    await call(service.url, 'POST', '/admin/v1/simulator/inbound', { phone: barePhone, body: 'Halo juga' })
    await until(
      () => local.requests.filter((r) => r.path === '/bare'),
      (rs) => rs.length >= 3,
      20_000,
      'the delivered and read events and the reply',
    )
    await Bun.sleep(500)
    const bareEvents = local.requests.filter((r) => r.path === '/bare').map((r) => JSON.parse(r.body))
    expect(bareEvents.map((e) => e.event).sort()).toEqual(['message.received', 'message.status', 'message.status'])
    expect(bareEvents.find((e) => e.event === 'message.received')).toMatchObject({ data: { phone: barePhone, text: 'Halo juga' } })
    expect(await bareListener.interrupt()).toBe(0)
  }, 90_000)

  test('an unknown key, a bad flag and an unreachable service fail with a message', async () => {
    const unknown = await admin(service, 'webhook', 'listen', '999999', '--forward-to', local.url())
    expect(unknown.code).toBe(1)
    expect(unknown.err).toContain('404 NOT_FOUND: API key 999999 not found')
    const bad = await admin(service, 'webhook', 'listen', '1', '--forward-to', 'localhost:8080')
    expect(bad.code).toBe(1)
    expect(bad.err).toContain('--forward-to: must be an http or https URL')
    // The stream is the admin API's: the admin token first, the envelope for every refusal.
    const anonymous = await fetch(`${service.url}/admin/v1/keys/1/webhook/listen`)
    expect(anonymous.status).toBe(401)
    expect(await anonymous.json()).toMatchObject({ success: false, code: 'AUTH_MISSING_HEADER' })
    const port = freePort()
    const down = Bun.spawnSync(['bun', CLI, 'webhook', 'listen', '1'], { env: { ...cliEnv(service), PORT: String(port) } })
    expect(down.exitCode).toBe(1)
    expect(down.stderr.toString()).toContain(`cannot reach the service at http://127.0.0.1:${port}`)
  }, 60_000)
})

/** Reads `count` events of the key's stream from the HTTP endpoint itself, resuming after `lastEventId`. */
async function readStream(target: Child, keyId: number, lastEventId: string, count: number) {
  const abort = new AbortController()
  const response = await fetch(`${target.url}/admin/v1/keys/${keyId}/webhook/listen`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'last-event-id': lastEventId },
    signal: abort.signal,
  })
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toStartWith('text/event-stream')
  const events: { id: number; webhook_id: string; headers: Record<string, string>; body: string }[] = []
  let text = ''
  const timer = setTimeout(() => abort.abort(), 20_000)
  try {
    for await (const chunk of response.body!) {
      text += new TextDecoder().decode(chunk)
      const blocks = text.split('\n\n')
      text = blocks.pop()!
      for (const block of blocks) {
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (block.includes('event: message.status') && data) {
          const event = JSON.parse(data)
          expect(block).toContain(`id: ${event.id}\n`)
          events.push(event)
        }
      }
      if (events.length >= count) break
    }
  } catch {
    // aborted: the assertion below says what was missing
  } finally {
    clearTimeout(timer)
    abort.abort()
  }
  expect(events).toHaveLength(count)
  return events
}

describe('webhook test', () => {
  test('to the registered URL: delivered like any event, marked data.test, listed among the deliveries', async () => {
    const { keyId, secret } = await account(service, registered.url())
    const run = await admin(service, 'webhook', 'test', String(keyId))
    expect(run.err).toBe('')
    expect(run.code).toBe(0)
    expect(run.out).toMatch(new RegExp(`test event +\\[msg_\\w+\\] +delivery \\d+ to ${registered.url()} +→ 200 \\(\\d+ ms\\)`))
    expect(registered.requests).toHaveLength(1)
    expect(verify(secret!, registered.requests[0]!).data).toEqual({
      message_sid: 'test',
      to: 'test',
      status: 'delivered',
      previous_status: 'sent',
      error_code: null,
      error_message: null,
      test: true,
    })
    const list = await deliveries(service, keyId)
    expect(list.total).toBe(1)
    expect(list.items[0]).toMatchObject({ webhook_id: registered.requests[0]!.headers['webhook-id'], status: 'delivered' })
    expect(list.items[0]!.payload.data.test).toBe(true)
  }, 60_000)

  test('with --forward-to: sent there by the command line, signed with the registered secret, and not a delivery', async () => {
    const { keyId, secret } = await account(service, registered.url())
    const run = await admin(service, 'webhook', 'test', String(keyId), '--forward-to', local.url('127.0.0.1'))
    expect(run.err).toBe('')
    expect(run.code).toBe(0)
    expect(run.out).toMatch(/test event +\[msg_\w+\] +→ 200 \(\d+ ms\)/)
    expect(local.requests).toHaveLength(1)
    expect(verify(secret!, local.requests[0]!).data.test).toBe(true)
    expect(registered.requests).toHaveLength(0)
    expect((await deliveries(service, keyId)).total).toBe(0)
    // A key without a URL signs it with its listen secret, shown by listen.
    const bare = await account(service)
    expect((await admin(service, 'webhook', 'test', String(bare.keyId), '--forward-to', local.url())).code).toBe(0)
    const listener = await listen(service, bare.keyId)
    const listenSecret = /^ {2}(whsec_\S+)$/m.exec(listener.output())![1]!
    expect(await listener.interrupt()).toBe(0)
    expect(verify(listenSecret, local.requests[1]!).data.test).toBe(true)
  }, 60_000)

  test('a key with neither URL nor listener: 404 with what to do', async () => {
    const { keyId } = await account(service)
    const run = await admin(service, 'webhook', 'test', String(keyId))
    expect(run.code).toBe(1)
    expect(run.err).toContain(`404 NOT_FOUND: API key ${keyId} has no webhook URL and no listener`)
    expect(run.err).toContain(`bun run admin webhook listen ${keyId} --forward-to URL`)
  }, 30_000)

  test('a failed attempt: exit 1, and the service writes one warning line without the secret or the body', async () => {
    registered.handler = () => new Response('nope', { status: 503 })
    const failing = await account(service, registered.url())
    const refused = await account(service, `http://127.0.0.1:${freePort()}/hook`)

    const first = await admin(service, 'webhook', 'test', String(failing.keyId))
    expect(first.code).toBe(1)
    expect(first.out).toMatch(/→ 503 \(\d+ ms\)/)
    const second = await admin(service, 'webhook', 'test', String(refused.keyId))
    expect(second.code).toBe(1)
    expect(second.out).toMatch(/→ error: connection refused \(\d+ ms\)/)

    const [httpFailure] = (await deliveries(service, failing.keyId)).items
    const [connectionFailure] = (await deliveries(service, refused.keyId)).items
    const lineOf = (webhookId: string) =>
      until(
        () =>
          service
            .output()
            .split('\n')
            .filter((l) => l.includes(webhookId)),
        (lines) => lines.length > 0,
        10_000,
        'the warning line',
      )
    const [httpLine] = await lineOf(httpFailure!.webhook_id)
    expect(httpLine).toContain('webhook delivery attempt failed')
    expect(httpLine).toMatch(/\bWARN\b/)
    expect(httpLine).toMatch(new RegExp(`delivery_id\\W+${httpFailure!.id}\\b`))
    expect(httpLine).toMatch(new RegExp(`key_id\\W+${failing.keyId}\\b`))
    expect(httpLine).toMatch(/status_code\W+503\b/)
    expect(httpLine).toMatch(/next_attempt_at\W+\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/)
    const [connectionLine] = await lineOf(connectionFailure!.webhook_id)
    expect(connectionLine).toContain('connection refused')
    expect(connectionLine).toMatch(new RegExp(`key_id\\W+${refused.keyId}\\b`))

    // Never a secret, a body or the URL (which may carry a token) in the service's output.
    const output = service.output()
    expect(output).not.toContain(failing.secret!)
    expect(output).not.toContain(refused.secret!)
    expect(output).not.toContain('whsec_')
    expect(output).not.toContain('previous_status')
    expect(httpLine).not.toContain(registered.url())
  }, 60_000)
})

describe.skipIf(!usingPostgres())('two instances on one PostgreSQL database', () => {
  test('listening on one instance forwards the events the other records, for a key without a URL', async () => {
    const other = await startChild({ ...env, DATA_DIR: mkdtempSync(join(tmpdir(), 'cli-webhook-b-')) }, { readyMs: 90_000 })
    try {
      const { key, keyId } = await account(other)
      const listener = await listen(service, keyId, '--forward-to', local.url())
      const secret = /^ {2}(whsec_\S+)$/m.exec(listener.output())![1]!
      // Sent through the other instance, whose workers (or this one's) record its status changes.
      const sids = [await send(other, key), await send(other, key)]
      await local.waitFor(4, 20_000)
      const seen = local.requests.map((r) => verify(secret, r).data).map((d) => `${d.message_sid} ${d.status}`)
      expect(seen.sort()).toEqual(sids.flatMap((sid) => [`${sid} delivered`, `${sid} read`]).sort())
      expect(await listener.interrupt()).toBe(0)
    } finally {
      await other.stop()
    }
  }, 120_000)
})

describe('the webhook guides, as written', () => {
  const ROOT = join(import.meta.dir, '..', '..')
  /** The guide's block, its example URLs pointed at this test's service and receivers. */
  const guide = (page: string, marker: string) =>
    shBlock(marker, [page])!
      .replaceAll('http://127.0.0.1:3000', service.url)
      .replaceAll('http://localhost:8080/hook', local.url('localhost', '/hook'))
      .replaceAll('https://crm.example.com/hooks/messages', registered.url('127.0.0.1', '/hooks/messages'))
  const shellEnv = (vars: Record<string, string>) => ({ ...cliEnv(service), ...vars })

  test("docs/start/webhooks-on-a-laptop.md: listen forwards the key's events signed with its listen secret; webhook test reaches both URLs", async () => {
    const { key, keyId } = await account(service)
    // `webhook listen`, as its block's first line, in its own process group so that Ctrl-C reaches bun run's child too.
    const listenLine = guide('docs/start/webhooks-on-a-laptop.md', 'webhook listen "$KEY_ID" --forward-to')
      .split('\n')
      .find((line) => line.startsWith('bun run admin webhook listen'))!
    const proc = Bun.spawn(['setsid', 'bash', '-c', `exec ${listenLine}`], {
      cwd: ROOT,
      env: shellEnv({ KEY_ID: String(keyId) }),
      stdout: 'pipe',
      stderr: 'pipe',
    })
    running.add(proc)
    let out = ''
    void (async () => {
      for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(chunk)
    })()
    try {
      await until(
        () => out,
        (text) => /^ {2}whsec_\S+$/m.test(text) || proc.exitCode !== null,
        30_000,
        'the listen command to be ready',
      )
      expect(out).toContain(`Ready: listening to the events of key ${keyId} at ${service.url}`)
      expect(out).toContain(`Forwarding each event to ${local.url('localhost', '/hook')}`)
      const listenSecret = /^ {2}(whsec_\S+)$/m.exec(out)![1]!
      const sid = await send(service, key)
      await local.waitFor(2, 20_000) // delivered, then read
      expect(local.requests.map((r) => [r.path, verify(listenSecret, r).data.message_sid, verify(listenSecret, r).data.status])).toEqual([
        ['/hook', sid, 'delivered'],
        ['/hook', sid, 'read'],
      ])
    } finally {
      process.kill(-proc.pid, 'SIGINT')
      await proc.exited
    }

    // docs/guides/webhooks.md's registration with events (its URL: this test's receiver), then the laptop
    // guide's two `webhook test` lines: the registered URL, then the local one.
    const registration = guide('docs/guides/webhooks.md', '"events":["message.status","message.received","balance.low"]')
    const registeredRun = Bun.spawnSync(['bash', '-c', registration], { cwd: ROOT, env: shellEnv({ KEY: key }), stdout: 'pipe' })
    expect(JSON.parse(registeredRun.stdout.toString())).toMatchObject({
      success: true,
      data: { events: ['message.status', 'message.received', 'balance.low'] },
    })
    local.reset()
    const tests = guide('docs/start/webhooks-on-a-laptop.md', 'webhook test "$KEY_ID"')
    const proc2 = Bun.spawn(['bash', '-c', `set -e\n${tests}`], {
      cwd: ROOT,
      env: shellEnv({ KEY_ID: String(keyId) }),
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [testOut, testErr, code] = await Promise.all([new Response(proc2.stdout).text(), new Response(proc2.stderr).text(), proc2.exited])
    expect(testErr.replace(/^\$ .*\n/gm, '')).toBe('')
    expect(code).toBe(0)
    expect(testOut).toMatch(/→ 200 \(\d+ ms\)[\s\S]*→ 200 \(\d+ ms\)/)
    // (The keys of this service's earlier tests registered the receiver's /hook: a late status of theirs may
    // still arrive there. This key's registration is the guide's /hooks/messages.)
    expect(registered.requests.map((r) => r.path).filter((path) => path !== '/hook')).toEqual(['/hooks/messages'])
    expect(local.requests.map((r) => r.path)).toEqual(['/hook'])
  }, 90_000)
})
