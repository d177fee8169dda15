// Outer ring (real time): it measures the memory of the service as a child process under a flood of bodies.
// Unauthenticated bodies are cheap: the provider callbacks (no API key; a provider's signature is their
// only authentication) refuse a body over MAX_CALLBACK_BODY_BYTES with 413 before reading it whole, and
// parse what they read with bounds. The service runs as a child process, so that its own memory (VmRSS
// in /proc) is measured, not this test's: four 35 MB unsigned bodies to each callback route at once,
// declared and chunked, keep its peak within 100 MB of idle and /healthz answering all along (every probe
// within its 5 s limit; how fast is a speed target, printed here, not asserted: it follows the machine's load).

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import twilio from 'twilio'
import { CALLBACK_JSON_BOUNDS, MAX_CALLBACK_BODY_BYTES, MAX_CALLBACK_FORM_FIELDS } from '../../src/http/body'
import { testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'
import { metaSignature } from '../helpers/meta-webhook'
import { startChild, type Child } from '../helpers/child'
import type { Outcome, Plan } from '../helpers/flood'
import { createMigratedPostgresDatabase, migratedDataDir, usingPostgres } from '../helpers/db'

setDefaultTimeout(120_000)

const MB = 1_000_000

const ACCOUNT_SID = `AC${'0'.repeat(32)}`
const FLOOD = 35 * MB
const ROUTES: Plan['requests'] = [
  { path: '/provider/meta/webhook', contentType: 'application/json', body: 'json', bytes: FLOOD },
  { path: '/provider/twilio/status', contentType: 'application/x-www-form-urlencoded', body: 'form', bytes: FLOOD },
  { path: '/provider/twilio/inbound', contentType: 'application/x-www-form-urlencoded', body: 'form', bytes: FLOOD },
]

const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
}, 60_000)

/** The child's resident memory in bytes, now (VmRSS) or at its peak (VmHWM). */
function memoryOf(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`))
  return Number(/(\d+) kB/.exec(line!)![1]) * 1024
}

/** Resets the child's peak (VmHWM) to its current RSS, where the kernel lets us (`clear_refs`); false if not. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

describe('four 35 MB unsigned bodies to each callback route at once', () => {
  let child: Child
  beforeAll(async () => {
    const env: Record<string, string> = {
      DATA_DIR: await migratedDataDir('callback-bodies-', (fn) => cleanups.push(fn)),
      // The callback routes exist once a secret can verify them, whatever PROVIDER says.
      META_APP_SECRET: 'meta_app_secret_0123456789abcdef',
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: 'twilio_auth_token_0123456789abcd',
      LOG_LEVEL: 'error',
    }
    if (usingPostgres()) {
      const db = await createMigratedPostgresDatabase()
      env.DATABASE_URL = db.url
      cleanups.push(db.drop)
    }
    child = await startChild(env)
    cleanups.push(async () => {
      // Without the cap the service may still be parsing gigabytes: it gets 10 s to stop cleanly.
      child.proc.kill('SIGTERM')
      if ((await Promise.race([child.proc.exited, Bun.sleep(10_000).then(() => 'late')])) === 'late') await child.kill9()
    })
  }, 120_000)

  test('are each refused 413 in the envelope, the peak RSS stays within 100 MB of idle, /healthz answers all along', async () => {
    const port = Number(new URL(child.url).port)
    const pid = child.proc.pid
    // Idle: once a request to each route has warmed it up.
    for (const { path, contentType } of ROUTES) {
      await fetch(`${child.url}${path}`, { method: 'POST', headers: { 'content-type': contentType }, body: 'x' })
    }
    const idle = memoryOf(pid, 'VmRSS')
    const peakKept = resetPeak(pid)
    let sampledPeak = idle
    const health: number[] = [] // milliseconds to each answer; Infinity for none in 5 s
    let running = true
    const sampling = (async () => {
      while (running) {
        sampledPeak = Math.max(sampledPeak, memoryOf(pid, 'VmRSS'))
        await Bun.sleep(5)
      }
    })()
    const probing = (async () => {
      while (running) {
        const started = performance.now()
        const ok = await fetch(`${child.url}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
          (res) => res.status === 200,
          () => false,
        )
        health.push(ok ? performance.now() - started : Infinity)
        await Bun.sleep(20)
      }
    })()
    const plan: Plan = { port, requests: ROUTES, copies: 4, timeoutMs: 30_000 }
    const flood = Bun.spawn(['bun', `${import.meta.dir}/../helpers/flood.ts`, JSON.stringify(plan)], { stdout: 'pipe', stderr: 'inherit' })
    const output = await new Response(flood.stdout).text()
    await flood.exited
    running = false
    await Promise.all([sampling, probing])
    const peak = Math.max(sampledPeak, peakKept ? memoryOf(pid, 'VmHWM') : 0)
    const answers = output
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Outcome)
    console.log(
      `idle ${(idle / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB (+${((peak - idle) / MB).toFixed(0)} MB); ` +
        `/healthz answered ${health.length} times, slowest in ${Math.max(...health).toFixed(0)} ms`,
    )

    expect(answers).toHaveLength(ROUTES.length * 4 * 2)
    for (const answer of answers) {
      expect(answer).toEqual({
        path: answer.path,
        chunked: answer.chunked,
        status: 413,
        body: {
          success: false,
          error: `request body exceeds ${MAX_CALLBACK_BODY_BYTES} bytes`,
          code: 'PAYLOAD_TOO_LARGE',
          request_id: expect.any(String),
        },
      })
    }
    expect(peak - idle).toBeLessThan(100 * MB)
    expect(health.length).toBeGreaterThan(0)
    expect(health.filter((ms) => ms === Infinity)).toEqual([])
  })
})

describe('through app.handle', () => {
  const META_SECRET = 'meta_app_secret_0123456789abcdef'
  const TWILIO_TOKEN = 'twilio_auth_token_0123456789abcd'
  const BASE = 'https://api.example.com'
  let t: TestApp
  beforeAll(async () => {
    t = await testApp({
      env: {
        META_APP_SECRET: META_SECRET,
        META_PHONE_NUMBER_ID: '106540352242922',
        TWILIO_ACCOUNT_SID: ACCOUNT_SID,
        TWILIO_AUTH_TOKEN: TWILIO_TOKEN,
        PUBLIC_BASE_URL: BASE,
      },
    })
  }, 120_000)
  afterAll(() => t?.close())

  const FORM = 'application/x-www-form-urlencoded'
  const CALLBACKS = [
    { path: '/provider/meta/webhook', contentType: 'application/json', sized: (n: number) => `{"a":"${'x'.repeat(n - 8)}"}` },
    { path: '/provider/twilio/status', contentType: FORM, sized: (n: number) => `a=${'x'.repeat(n - 2)}` },
    { path: '/provider/twilio/inbound', contentType: FORM, sized: (n: number) => `a=${'x'.repeat(n - 2)}` },
  ]

  /** POSTs `body` with its length declared, or streamed in 64 KiB chunks without one. */
  async function post(path: string, body: string, headers: Record<string, string>, streamed = false) {
    const bytes = new TextEncoder().encode(body)
    let sent = 0
    const chunks = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= bytes.byteLength) return controller.close()
        controller.enqueue(bytes.subarray(sent, sent + 65_536))
        sent += 65_536
      },
    })
    const response = await t.app.handle(
      new Request(`http://localhost${path}`, {
        method: 'POST',
        headers: streamed ? headers : { ...headers, 'content-length': String(bytes.byteLength) },
        // The stream's first chunk is pulled at once: a declared body counts as sent whole.
        body: streamed ? chunks : bytes,
      }),
    )
    if (!streamed) sent = bytes.byteLength
    const text = await response.text()
    // Twilio's inbound route answers TwiML on success.
    const answer = response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text
    return { status: response.status, body: answer, headers: response.headers, sent }
  }

  test(`a body of ${MAX_CALLBACK_BODY_BYTES} bytes (the cap) reaches the signature check; one byte more is 413, declared or streamed`, async () => {
    for (const { path, contentType, sized } of CALLBACKS) {
      for (const streamed of [false, true]) {
        const at = sized(MAX_CALLBACK_BODY_BYTES)
        expect(at.length).toBe(MAX_CALLBACK_BODY_BYTES)
        const fits = await post(path, at, { 'content-type': contentType }, streamed)
        expect({ path, streamed, status: fits.status, body: fits.body }).toEqual({
          path,
          streamed,
          status: 403,
          body: errorEnvelope(fits.headers, 'FORBIDDEN', expect.stringContaining('header is missing')),
        })
        const over = await post(path, sized(MAX_CALLBACK_BODY_BYTES + 1), { 'content-type': contentType }, streamed)
        expect({ path, streamed, status: over.status, body: over.body }).toEqual({
          path,
          streamed,
          status: 413,
          body: errorEnvelope(over.headers, 'PAYLOAD_TOO_LARGE', `request body exceeds ${MAX_CALLBACK_BODY_BYTES} bytes`),
        })
        // A stream is read no further than the chunk that passes the cap.
        if (streamed) expect(over.sent).toBeLessThanOrEqual(MAX_CALLBACK_BODY_BYTES + 65_536 * 2)
      }
    }
  })

  test(`a signed Meta notification nested deeper than ${CALLBACK_JSON_BOUNDS.depth} levels or with more than ${CALLBACK_JSON_BOUNDS.values} values is 400 naming the bound; unsigned, 403`, async () => {
    const deep = `{"entry":${'['.repeat(CALLBACK_JSON_BOUNDS.depth)}${']'.repeat(CALLBACK_JSON_BOUNDS.depth)}}`
    const many = `{"entry":[${'0,'.repeat(CALLBACK_JSON_BOUNDS.values)}0]}`
    for (const [body, error] of [
      [deep, `body: nested deeper than ${CALLBACK_JSON_BOUNDS.depth} levels`],
      [many, `body: more than ${CALLBACK_JSON_BOUNDS.values} JSON values`],
    ] as const) {
      const headers = { 'content-type': 'application/json' }
      const signed = await post('/provider/meta/webhook', body, { ...headers, 'x-hub-signature-256': metaSignature(body, META_SECRET) })
      expect({ status: signed.status, body: signed.body }).toEqual({
        status: 400,
        body: errorEnvelope(signed.headers, 'VALIDATION_ERROR', error),
      })
      const unsigned = await post('/provider/meta/webhook', body, headers)
      expect({ status: unsigned.status, body: unsigned.body }).toEqual({ status: 403, body: errorEnvelope(unsigned.headers, 'FORBIDDEN') })
    }
  })

  test('the largest batch Meta sends (1000 status changes, as Meta writes them) passes the bounds', async () => {
    const statuses = Array.from({ length: 1000 }, (_, i) => ({
      id: `wamid.HBgNNjI4MTIzNDU2Nzg5MBUCABEYEj${String(i).padStart(8, '0')}A=`,
      status: 'failed',
      timestamp: '1750857384',
      recipient_id: '6281234567890',
      conversation: { id: 'a75d17ad06104c51166f948319b03c6a', expiration_timestamp: '1750943784', origin: { type: 'utility' } },
      pricing: { billable: true, pricing_model: 'CBP', category: 'utility' },
      errors: [
        { code: 131047, title: 'Re-engagement message', message: 'Re-engagement message', error_data: { details: 'More than 24 hours' } },
      ],
    }))
    const metadata = { display_phone_number: '15550783881', phone_number_id: '106540352242922' }
    const body = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [{ id: '102290129340398', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata, statuses } }] }],
    })
    const res = await post('/provider/meta/webhook', body, {
      'content-type': 'application/json',
      'x-hub-signature-256': metaSignature(body, META_SECRET),
    })
    // Unknown wamids: kept for later, nothing changed.
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { success: true, data: { changed: false } } })
  })

  test(`a signed Twilio form with more than ${MAX_CALLBACK_FORM_FIELDS} fields is 400 naming the bound; ${MAX_CALLBACK_FORM_FIELDS} fields pass`, async () => {
    for (const path of ['/provider/twilio/status', '/provider/twilio/inbound']) {
      const fieldsOf = (count: number) => {
        const fields: Record<string, string> = {
          AccountSid: ACCOUNT_SID,
          MessageSid: `SM${'1'.repeat(32)}`,
          MessageStatus: 'sent',
          From: 'whatsapp:+6281234567890',
          To: 'whatsapp:+14155238886',
          Body: 'halo',
        }
        for (let i = Object.keys(fields).length; i < count; i++) fields[`Extra${i}`] = 'x'
        return fields
      }
      const signed = (fields: Record<string, string>) =>
        post(path, new URLSearchParams(fields).toString(), {
          'content-type': FORM,
          'x-twilio-signature': twilio.getExpectedTwilioSignature(TWILIO_TOKEN, `${BASE}${path}`, fields),
        })
      const over = await signed(fieldsOf(MAX_CALLBACK_FORM_FIELDS + 1))
      expect({ path, status: over.status, body: over.body }).toEqual({
        path,
        status: 400,
        body: errorEnvelope(over.headers, 'VALIDATION_ERROR', `body: more than ${MAX_CALLBACK_FORM_FIELDS} form fields`),
      })
      const at = await signed(fieldsOf(MAX_CALLBACK_FORM_FIELDS))
      expect({ path, status: at.status }).toEqual({ path, status: 200 })
    }
  })
})
