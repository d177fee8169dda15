// docs/guides/webhooks.md's by-hand signature check, run as written: it accepts what a Standard Webhooks
// library signs (the service's deliveries verify with that library: tests/webhooks/delivery.test.ts) and
// refuses a changed body, another secret and a stale timestamp.

import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Webhook } from 'standardwebhooks'
import { docPage } from '../helpers/docs'

const dir = mkdtempSync(join(tmpdir(), 'webhook-signature-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

type Check = (headers: Headers, secret: string, rawBody: string) => { valid: boolean; fresh: boolean }

/** The guide's ```ts block under "## Signatures", as a function of the names it uses. */
async function guideCheck(): Promise<Check> {
  const section = docPage('docs/guides/webhooks.md').split('## Signatures')[1]!.split('\n## ')[0]!
  const code = /```ts\n([\s\S]*?)```/.exec(section)![1]!
  const imports = code.split('\n').filter((line) => line.startsWith('import '))
  const body = code.split('\n').filter((line) => !line.startsWith('import '))
  const file = join(dir, 'check.ts')
  writeFileSync(
    file,
    [
      ...imports,
      'export function check(headers: Headers, secret: string, rawBody: string) {',
      ...body,
      '  return { valid, fresh }',
      '}',
    ].join('\n'),
  )
  return (await import(file)).check
}

const secret = `whsec_${Buffer.from('a secret of thirty-two bytes....').toString('base64')}`
const body = '{"event":"message.status","timestamp":"2026-11-21 10:15:02","data":{"message_sid":"SM1","status":"delivered"}}'

function signed(at: Date, payload = body, key = secret): Headers {
  const id = 'msg_2Lh9KZB0a1'
  return new Headers({
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(key).sign(id, at, payload),
  })
}

test("the guide's by-hand check accepts a Standard Webhooks signature, and refuses a changed body, another key or an old timestamp", async () => {
  const check = await guideCheck()
  const now = new Date()
  expect(check(signed(now), secret, body)).toEqual({ valid: true, fresh: true })
  expect(check(signed(now), secret, body.replace('delivered', 'read')).valid).toBe(false)
  const other = `whsec_${Buffer.from('another secret, thirty-two bytes').toString('base64')}`
  expect(check(signed(now, body, other), secret, body).valid).toBe(false)
  // Several signatures (a secret being rotated): any one of them.
  const both = signed(now)
  both.set('webhook-signature', `${signed(now, body, other).get('webhook-signature')} ${both.get('webhook-signature')}`)
  expect(check(both, secret, body).valid).toBe(true)
  expect(check(signed(new Date(now.getTime() - 10 * 60_000)), secret, body)).toEqual({ valid: true, fresh: false })
})
