// Outer ring (real time): it reads the terminal output of the service running as a child process.
// What the terminal shows: one line per request, in LOG_FORMAT=text and LOG_FORMAT=json, read from
// the output of the service running as a child process. Each line names the method, the path, the
// query's parameter names, the status, the duration, the request id and who was identified; no
// key, token, password, cookie, body or query value appears anywhere in the output.

import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN_TOKEN } from '../helpers/app'
import { startChild, type Child } from '../helpers/child'
import { createMigratedPostgresDatabase, premigrate, usingPostgres } from '../helpers/db'
import { until } from '../helpers/wait'
import { webClient } from '../helpers/web'

const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
}, 60_000)

async function start(format: 'text' | 'json'): Promise<Child> {
  const dataDir = mkdtempSync(join(tmpdir(), 'request-log-'))
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
  const env: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: 'info', LOG_FORMAT: format }
  if (usingPostgres()) {
    const db = await createMigratedPostgresDatabase()
    env.DATABASE_URL = db.url
    cleanups.push(db.drop)
  }
  await premigrate(dataDir)
  const child = await startChild(env)
  cleanups.push(async () => void (await child.stop()))
  return child
}

type Event = Record<string, unknown>

/** The events of a text output: `time LEVEL msg key=value ...`, each value bare or JSON-quoted. */
function textEvents(output: string): Event[] {
  const events: Event[] = []
  for (const line of output.split('\n')) {
    const head = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (DEBUG|INFO|WARN|ERROR) +request((?: \w+=(?:"(?:[^"\\]|\\.)*"|\S+))*)$/.exec(
      line,
    )
    if (!head) continue
    const event: Event = { time: head[1], level: head[2]!.toLowerCase(), msg: 'request' }
    for (const [, key, raw] of head[3]!.matchAll(/ (\w+)=("(?:[^"\\]|\\.)*"|\S+)/g)) {
      event[key!] = raw!.startsWith('"') ? JSON.parse(raw!) : /^-?\d+(\.\d+)?$/.test(raw!) ? Number(raw) : raw
    }
    events.push(event)
  }
  return events
}

/** The events of a JSON output; every line must be one JSON object. */
function jsonEvents(output: string): Event[] {
  return output
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const event = JSON.parse(line) as Event
      // (a copy: Bun's toMatchObject writes its matchers into the object it checks)
      expect({ ...event }).toMatchObject({
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/),
        level: expect.any(String),
        msg: expect.any(String),
      })
      return event
    })
}

describe.each(['text', 'json'] as const)('LOG_FORMAT=%s', (format) => {
  test('one line per request with its facts, and no secret, body or query value anywhere', async () => {
    const child = await start(format)
    const call = async (method: string, path: string, id: string, auth: string, body?: unknown) => {
      const res = await fetch(`${child.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json', 'x-request-id': id },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      return { status: res.status, body: (await res.json()) as any }
    }
    const secrets: string[] = [ADMIN_TOKEN]

    // Admin requests: the account, its key, a member's one-time link.
    const accountName = 'Ayu Lestari Personal Name'
    const account = await call('POST', '/admin/v1/accounts', 'log-admin', ADMIN_TOKEN, { name: accountName, balance: 1000 })
    expect(account.status).toBe(201)
    const accountId = account.body.data.id as number
    const created = await call('POST', `/admin/v1/accounts/${accountId}/keys`, 'log-admin-key', ADMIN_TOKEN, { label: 'erp' })
    const key = created.body.data.key as string
    const keyId = created.body.data.id as number
    const email = 'ayu.private@example.com'
    const member = await call('POST', `/admin/v1/accounts/${accountId}/members`, 'log-admin-member', ADMIN_TOKEN, { email })
    const link = member.body.data.link as string
    const userId = member.body.data.id as number
    secrets.push(key, accountName, email, link.split('/').pop()!)

    // API-key requests: a search (its value is personal data), a send with a body, a key that is refused.
    const search = 'SearchedPersonName'
    expect((await call('GET', `/api/v1/contacts?search=${search}&limit=5`, 'log-search', key)).status).toBe(200)
    const text = 'Your private order Rahasia-4711 has shipped'
    const sent = await call('POST', '/api/v1/messages/send', 'log-send', key, { to: '081298765432', body: text })
    expect(sent.status).toBe(200)
    const wrongKey = `pm_${'Z'.repeat(40)}`
    expect((await call('GET', '/api/v1/balance', 'log-bad-key', wrongKey)).status).toBe(401)
    secrets.push(search, text, 'Rahasia', '81298765432', wrongKey)

    // The dashboard: the password set through the link, then a sign-in and a page.
    const password = 'correct horse battery staple'
    const browser = webClient(child.url)
    const set = await browser.post(new URL(link).pathname, { password }, { 'x-request-id': 'log-link' })
    expect(set.status).toBe(303)
    const signingIn = webClient(child.url)
    const form = await signingIn.get('/dashboard/sign-in', { 'x-request-id': 'log-sign-in-page' })
    const signedIn = await signingIn.post('/dashboard/sign-in', { _csrf: form.csrf!, email, password }, { 'x-request-id': 'log-sign-in' })
    expect(signedIn.status).toBe(303)
    expect((await signingIn.get('/dashboard', { 'x-request-id': 'log-page' })).status).toBe(200)
    secrets.push(password, 'horse battery', form.csrf!, ...browser.jar.values(), ...signingIn.jar.values())

    const output = await until(
      () => child.output(),
      (out) => out.includes('log-page'),
      10_000,
    )
    const events = format === 'json' ? jsonEvents(output) : textEvents(output)
    const requests = events.filter((e) => e.msg === 'request')
    const line = (id: string) => {
      const found = requests.filter((e) => e.request_id === id)
      expect({ id, lines: found.length }).toEqual({ id, lines: 1 })
      return found[0]
    }
    const common = { time: expect.any(String), level: 'info', msg: 'request', duration_ms: expect.any(Number) }
    const byKey = { auth: 'key', account_id: accountId, key_id: keyId }
    const bySession = { auth: 'session', user_id: userId, account_id: accountId }
    const expected: [string, Event][] = [
      ['log-admin', { method: 'POST', path: '/admin/v1/accounts', status: 201, auth: 'admin' }],
      ['log-admin-key', { method: 'POST', path: `/admin/v1/accounts/${accountId}/keys`, status: 201, auth: 'admin' }],
      ['log-search', { method: 'GET', path: '/api/v1/contacts', query: 'search&limit', status: 200, ...byKey }],
      ['log-send', { method: 'POST', path: '/api/v1/messages/send', status: 200, ...byKey }],
      ['log-bad-key', { method: 'GET', path: '/api/v1/balance', status: 401 }],
      ['log-link', { method: 'POST', path: '/dashboard/link/[redacted]', status: 303, ...bySession }],
      ['log-sign-in-page', { method: 'GET', path: '/dashboard/sign-in', status: 200 }],
      ['log-sign-in', { method: 'POST', path: '/dashboard/sign-in', status: 303, ...bySession }],
      ['log-page', { method: 'GET', path: '/dashboard', status: 200, ...bySession }],
    ]
    for (const [id, fields] of expected) expect(line(id)).toEqual({ ...common, ...fields, request_id: id })
    for (const e of requests) expect(e.duration_ms as number).toBeGreaterThanOrEqual(0)
    // Health checks (startChild polled /readyz until ready) are debug lines, not shown at info.
    expect(requests.filter((e) => String(e.path).endsWith('z'))).toEqual([])

    for (const secret of secrets) expect({ secret, found: output.includes(secret) }).toEqual({ secret, found: false })
    if (format === 'json') {
      expect(events.find((e) => e.msg === 'listening')).toMatchObject({
        url: child.url,
        dashboard_url: `${child.url}/dashboard`,
        docs_url: `${child.url}/docs`,
        provider: 'simulator',
      })
      expect(output).not.toContain('messaging-api listening on')
    } else {
      expect(output).toContain(`messaging-api listening on ${child.url}`)
      expect(output).toContain(`  dashboard ${child.url}/dashboard\n`)
    }
  }, 120_000)
})
