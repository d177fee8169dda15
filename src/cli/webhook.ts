// `bun run admin webhook listen|test`: webhooks on a developer's machine, in the shape of `stripe listen`.
//
// listen reads a key's event stream (GET /admin/v1/keys/{id}/webhook/listen, server-sent events) and
// POSTs each event to --forward-to with the body and the Standard Webhooks headers exactly as the
// service signed them, so the receiver's own verification code runs; one line per event with the
// receiver's answer and latency. A lost connection is resumed from the last event id (Last-Event-ID).
// Forwarding is not a delivery: the registered URL keeps its own deliveries and attempts.
//
// test sends one test event (`data.test: true`) to the registered URL, through the service's delivery
// worker, and waits for its first attempt; with --forward-to the service only signs it and this
// command sends it there itself.

import type * as webhooks from '../modules/webhooks/model'
import { ADMIN_CLIENT_HEADER } from '../lib/admin-client'
import { unreachable } from './client'
import type { Command, Context } from './command'
import type { Page } from './format'
import { program } from './program'

export type WebhookCommand = {
  /** Service root, e.g. http://127.0.0.1:3000 */
  base: string
  /** Where `base` came from (--url, PORT=...), for the unreachable-service message. */
  origin: string
  token: string
  json: boolean
  keyId: string | undefined
  /** The local receiver; undefined: listen only prints the events. */
  forwardTo: string | true | undefined
}

type Signed = typeof webhooks.SignedEvent.static
type Listened = typeof webhooks.ListenedEvent.static
/** An event to forward: from the listen stream (with its event id), or a test event signed for --forward-to. */
type SignedEvent = Signed | Listened
type Ready = typeof webhooks.ListenReady.static
type Queued = typeof webhooks.QueuedTestEvent.static
type Attempt = typeof webhooks.Attempt.static
/** What became of a forwarded event (the receiver's answer), as a delivery attempt records it. */
type Forwarded = Pick<Attempt, 'status_code' | 'latency_ms' | 'error'>

class WebhookCliError extends Error {}
const fail = (message: string): never => {
  throw new WebhookCliError(message)
}

/** How long a receiver may take to answer a forwarded event (the service allows deliveries 5 s). */
const FORWARD_TIMEOUT_MS = 5_000
/** The stream sends a comment every 15 s: this long without a byte means the connection is dead. */
const SILENCE_MS = 45_000
const USER_AGENT = 'messaging-api-cli (webhook forward)'

function parseCommand(command: WebhookCommand, usage: string): { keyId: number; forwardTo: URL | undefined } {
  if (command.keyId === undefined || !/^\d{1,15}$/.test(command.keyId)) fail(`KEY_ID: expected an API key id\nusage: ${usage}`)
  let forwardTo: URL | undefined
  if (command.forwardTo === true) fail(`--forward-to: expected a URL, e.g. http://localhost:8080/hook`)
  if (typeof command.forwardTo === 'string') {
    try {
      forwardTo = new URL(command.forwardTo)
    } catch {
      fail(`--forward-to: "${command.forwardTo}" is not an absolute URL (e.g. http://localhost:8080/hook)`)
    }
    if (forwardTo!.protocol !== 'http:' && forwardTo!.protocol !== 'https:') fail('--forward-to: must be an http or https URL')
  }
  return { keyId: Number(command.keyId), forwardTo }
}

/** One admin API call; the envelope's data, or a failure naming the status and code. */
async function call<T>(command: WebhookCommand, method: string, path: string, body?: unknown): Promise<T> {
  let response: Response
  try {
    response = await fetch(`${command.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${command.token}`, 'content-type': 'application/json', [ADMIN_CLIENT_HEADER]: 'cli' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  } catch (error) {
    throw unreachable(command.base, command.origin, error)
  }
  const payload = (await response!.json().catch(() => null)) as { success?: boolean; data?: unknown; error?: string; code?: string } | null
  if (!payload?.success) fail(`${response!.status} ${payload?.code ?? ''}: ${payload?.error ?? 'unexpected answer'}`)
  return payload!.data as T
}

/** POSTs a signed event to the local receiver as the service would deliver it. Never throws. */
async function forward(url: URL, event: SignedEvent): Promise<Forwarded> {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { ...event.headers, 'user-agent': USER_AGENT },
      body: event.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
    })
    const latency = elapsed()
    await response.arrayBuffer().catch(() => {})
    return { status_code: response.status, latency_ms: latency, error: null }
  } catch (error) {
    const e = error as { name?: string; code?: string }
    const reason =
      e?.name === 'TimeoutError'
        ? `no answer within ${FORWARD_TIMEOUT_MS} ms`
        : e?.code === 'ConnectionRefused' || e?.code === 'ECONNREFUSED'
          ? 'connection refused'
          : `connection failed: ${e?.code ?? e?.name ?? 'unknown error'}`
    return { status_code: null, latency_ms: elapsed(), error: reason }
  }
}

type Described = { event: string; status: string; message_sid: string | null; test: boolean; subject: string }

/** What a line says about an event: a status change's new status and message, a test event, or another event's type and gist. */
function describeEvent(body: string): Described {
  try {
    const payload = JSON.parse(body) as { event?: string; data?: Record<string, unknown> }
    const data = payload.data ?? {}
    const event = payload.event ?? '?'
    const text = (key: string) => (typeof data[key] === 'string' || typeof data[key] === 'number' ? String(data[key]) : '')
    const test = data.test === true
    const status = event === 'message.status' ? text('status') || '?' : event
    const message_sid = test || event !== 'message.status' ? null : text('message_sid') || null
    const subject =
      event === 'message.status'
        ? `${status.padEnd(9)} ${message_sid ?? ''}`
        : event === 'balance.low'
          ? `${event} balance ${text('balance')} < ${text('threshold')}`
          : event === 'template.status_changed'
            ? `${event} ${text('name')} ${text('language')} ${text('field')} ${text('old')} -> ${text('new')}`
            : event === 'sender.status_changed'
              ? `${event} sender ${text('sender_id')} ${text('field')} ${text('old')} -> ${text('new')}`
              : event === 'verification.approved'
                ? `${event} ${text('verification_id')} ${text('to')}`
                : event === 'message.settled'
                  ? `${event} ${text('message_sid')} ${text('previous_category')} ${text('previous_cost')} -> ${text('category')} ${text('cost')}`
                  : `${event} ${text('phone')}`
    return { event, status, message_sid, test, subject: test ? 'test event' : subject }
  } catch {
    return { event: '?', status: '?', message_sid: null, test: false, subject: '?' }
  }
}

const clock = () => new Date().toTimeString().slice(0, 8)

function eventLine(event: SignedEvent, forwarded: Forwarded | undefined): string {
  const subject = describeEvent(event.body).subject
  const head = `${clock()}  ${subject}  [${event.webhook_id}]`
  if (!forwarded) return head
  const answer = forwarded.status_code === null ? `error: ${forwarded.error}` : String(forwarded.status_code)
  return `${head}  → ${answer} (${forwarded.latency_ms} ms)`
}

function printEvent(command: WebhookCommand, event: SignedEvent, forwarded: Forwarded | undefined): void {
  if (!command.json) return console.log(eventLine(event, forwarded))
  const { subject: _, ...what } = describeEvent(event.body)
  console.log(JSON.stringify({ id: 'id' in event ? event.id : null, webhook_id: event.webhook_id, ...what, forwarded: forwarded ?? null }))
}

type SseMessage = { event: string; id: string | undefined; data: string }

/** The messages of a server-sent event stream (comments skipped), as they arrive. */
async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder()
  let buffer = ''
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n')
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const message: SseMessage = { event: 'message', id: undefined, data: '' }
      let hasData = false
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue
        const colon = line.indexOf(':')
        const field = colon === -1 ? line : line.slice(0, colon)
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
        if (field === 'event') message.event = value
        else if (field === 'id') message.id = value
        else if (field === 'data') {
          message.data = hasData ? `${message.data}\n${value}` : value
          hasData = true
        }
      }
      if (hasData) yield message
    }
  }
}

function printReady(command: WebhookCommand, ready: Ready, forwardTo?: URL) {
  if (command.json) return console.log(JSON.stringify({ ready: true, ...ready, forward_to: forwardTo?.href ?? null }))
  console.log(`Ready: listening to the events of key ${ready.key_id} at ${command.base} (Ctrl-C to stop)`)
  console.log(
    forwardTo ? `Forwarding each event to ${forwardTo.href}` : 'Printing each event (add --forward-to URL to send them to a receiver)',
  )
  if (ready.url) {
    console.log(`Signed with the signing secret of the registered URL ${ready.url}, which keeps its own deliveries`)
  } else {
    console.log(`Key ${ready.key_id} has no registered URL: its events are recorded while you listen, signed with its listen secret:`)
    console.log(`  ${ready.signing_secret}`)
  }
}

/** `webhook listen KEY_ID [--forward-to URL]`: runs until Ctrl-C (0), or fails at the first connection (1). */
export async function webhookListen(command: WebhookCommand): Promise<number> {
  try {
    return await listen(command)
  } catch (error) {
    if (!(error instanceof WebhookCliError)) throw error
    console.error(`admin: ${error.message}`)
    return 1
  }
}

async function listen(command: WebhookCommand): Promise<number> {
  const { keyId, forwardTo } = parseCommand(command, 'webhook listen KEY_ID [--forward-to URL]')
  const stop = new AbortController()
  const onSignal = () => stop.abort()
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  let lastEventId: string | undefined
  let connected = false
  let retryMs = 1_000
  try {
    while (!stop.signal.aborted) {
      // One connection: aborted by Ctrl-C, or by SILENCE_MS without a byte.
      const connection = new AbortController()
      const abortConnection = () => connection.abort()
      stop.signal.addEventListener('abort', abortConnection)
      let silence = setTimeout(abortConnection, SILENCE_MS)
      try {
        const response = await fetch(`${command.base}/admin/v1/keys/${keyId}/webhook/listen`, {
          headers: {
            authorization: `Bearer ${command.token}`,
            accept: 'text/event-stream',
            ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }),
          },
          signal: connection.signal,
        }).catch((error: unknown) => ({ failure: error }))
        if (!(response instanceof Response)) {
          if (!connected && !stop.signal.aborted) fail(unreachable(command.base, command.origin, response.failure).message)
          throw new Error('unreachable') // reconnect below
        }
        // A refusal is final (wrong token, unknown key); a 5xx while the service restarts is retried.
        if (!response.ok && (response.status < 500 || !connected)) {
          const payload = (await response.json().catch(() => null)) as { error?: string; code?: string } | null
          fail(`${response.status} ${payload?.code ?? ''}: ${payload?.error ?? 'unexpected answer'}`)
        }
        if (!response.ok) throw new Error('unavailable') // reconnect below
        if (connected) console.error(`${clock()}  reconnected${lastEventId ? ` (resuming after event ${lastEventId})` : ''}`)
        retryMs = 1_000
        for await (const message of sseMessages(response.body!)) {
          clearTimeout(silence)
          silence = setTimeout(abortConnection, SILENCE_MS)
          if (message.event === 'ready') {
            if (!connected) printReady(command, JSON.parse(message.data) as Ready, forwardTo)
            connected = true
            continue
          }
          // Events are named noun.verb (message.status, message.received, ...); anything else is not one.
          if (!/^[a-z_]+\.[a-z_]+$/.test(message.event)) continue
          const event = JSON.parse(message.data) as Listened
          printEvent(command, event, forwardTo ? await forward(forwardTo, event) : undefined)
          if (message.id !== undefined) lastEventId = message.id
        }
      } catch (error) {
        if (error instanceof WebhookCliError) throw error
        // the stream broke off (service stopped, network, silence): reconnect below
      } finally {
        clearTimeout(silence)
        stop.signal.removeEventListener('abort', abortConnection)
      }
      if (stop.signal.aborted) break
      console.error(`${clock()}  connection to ${command.base} lost; reconnecting in ${retryMs / 1000} s`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, retryMs)
        stop.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true })
      })
      retryMs = Math.min(retryMs * 2, 10_000)
    }
    return 0
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

/** `webhook test KEY_ID [--forward-to URL]`: 0 when the receiver answered 2xx, 1 otherwise. */
export async function webhookTest(command: WebhookCommand): Promise<number> {
  try {
    return await sendTest(command)
  } catch (error) {
    if (!(error instanceof WebhookCliError)) throw error
    console.error(`admin: ${error.message}`)
    return 1
  }
}

const ok2xx = (forwarded: Forwarded) => forwarded.status_code !== null && forwarded.status_code >= 200 && forwarded.status_code < 300

async function sendTest(command: WebhookCommand): Promise<number> {
  const { keyId, forwardTo } = parseCommand(command, 'webhook test KEY_ID [--forward-to URL]')
  if (forwardTo) {
    const event = await call<Signed>(command, 'POST', `/admin/v1/keys/${keyId}/webhook/test`, { deliver: false })
    const forwarded = await forward(forwardTo, event)
    printEvent(command, event, forwarded)
    return ok2xx(forwarded) ? 0 : 1
  }
  let queued: Queued
  try {
    queued = await call<Queued>(command, 'POST', `/admin/v1/keys/${keyId}/webhook/test`, {})
  } catch (error) {
    if (error instanceof WebhookCliError && error.message.includes('no webhook URL and no listener')) {
      fail(
        `${error.message}: register a URL (POST /api/v1/webhook), run \`${program.admin} webhook listen ${keyId} --forward-to URL\` ` +
          'in another terminal, or send it yourself with --forward-to URL',
      )
    }
    throw error
  }
  if (queued.url === null) {
    if (command.json) console.log(JSON.stringify({ ...queued, listeners_only: true }))
    else console.log(`test event [${queued.webhook_id}] sent to the listeners of key ${keyId} (it has no registered URL)`)
    return 0
  }
  // The delivery worker attempts it at once; its first attempt is the answer.
  const deadline = Date.now() + 30_000
  let attempt: Attempt | undefined
  while (!attempt && Date.now() < deadline) {
    const attempts = await call<Page<Attempt>>(command, 'GET', `/admin/v1/deliveries/${queued.id}/attempts?limit=1`)
    attempt = attempts.items[0]
    if (!attempt) await Bun.sleep(200)
  }
  if (!attempt) {
    const text = `test event [${queued.webhook_id}] queued as delivery ${queued.id}, not attempted yet (see: ${program.admin} deliveries ${keyId})`
    console.log(command.json ? JSON.stringify({ ...queued, attempt: null }) : text)
    return 1
  }
  const forwarded: Forwarded = { status_code: attempt.status_code, latency_ms: attempt.latency_ms, error: attempt.error }
  if (command.json) console.log(JSON.stringify({ ...queued, attempt: forwarded }))
  else {
    const answer = attempt.status_code === null ? `error: ${attempt.error}` : String(attempt.status_code)
    console.log(
      `${clock()}  test event  [${queued.webhook_id}]  delivery ${queued.id} to ${queued.url}  → ${answer} (${attempt.latency_ms} ms)`,
    )
  }
  return ok2xx(forwarded) ? 0 : 1
}

const FORWARD_TO = { value: 'URL', help: 'the local receiver, e.g. http://localhost:8080/hook' }

const webhookCommand = (ctx: Context): WebhookCommand => ({
  base: ctx.api.base,
  origin: ctx.api.origin,
  token: ctx.api.token,
  json: ctx.json,
  keyId: ctx.args.KEY_ID,
  forwardTo: ctx.flags['forward-to'],
})

export const webhookCommands: Command[] = [
  {
    name: 'webhook listen',
    args: ['KEY_ID'],
    summary: "stream a key's events as they happen, forwarded (signed) to a local URL",
    details:
      'Runs until Ctrl-C. Each event is POSTed to --forward-to with the body and the webhook-id, webhook-timestamp and ' +
      "webhook-signature headers the service signed, so the receiver's verification runs; one line per event with the " +
      'answer and latency. Forwarding is not a delivery: the registered URL keeps its own. A key without a registered URL ' +
      'gets events while it is listened to, signed with a listen secret printed at the start.',
    example: 'bun run admin webhook listen "$KEY_ID" --forward-to http://localhost:8080/hook',
    flags: { 'forward-to': FORWARD_TO },
    run: (ctx) => webhookListen(webhookCommand(ctx)),
  },
  {
    name: 'webhook test',
    args: ['KEY_ID'],
    summary: "one test event (data.test: true) to the key's URL, or to --forward-to, and its answer",
    example: 'bun run admin webhook test "$KEY_ID"',
    flags: { 'forward-to': FORWARD_TO },
    run: (ctx) => webhookTest(webhookCommand(ctx)),
  },
]
