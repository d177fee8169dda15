// `admin webhook listen`: a key's events (what its registration receives; without one, message.status) streamed to a developer's machine as they
// happen (server-sent events), each signed as a delivery would be, for the command line to forward to
// a local receiver. Streaming changes no delivery: the events are read, never claimed or updated.
//
// Everything goes through the database, so it works with several instances on one PostgreSQL: a
// listener row (webhook_listeners) tells every instance's state machine to record the key's events
// even when it has no URL (status listen_only), and the stream follows the key's webhook_events rows
// by id, woken by the NOTIFY of every commit that wrote events (./notify), and polling every second.
//
// Rows do not commit in id order when transactions run concurrently (a lower id can appear after a
// higher one was read). So the stream keeps a floor below which everything has been sent, moves it
// only over rows older than SETTLE_SECONDS (by then their transaction has long finished), and
// remembers which rows above it it has already sent.

import type { Deps } from '../../deps'
import type { Sql } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import { log } from '../../lib/log'
import { newSigningSecret } from '../../lib/keys'
import { onEventsCommitted } from './notify'
import { signPayload } from './sender'
import { newWebhookId, testPayload, type EventClock } from './events'
import type { ListenedEvent, ListenReady, SignedEvent } from './model'

/** Events are recorded for a listened key until this long after its last listener's last heartbeat. */
export const LISTEN_SECONDS = 30
const HEARTBEAT_MS = 10_000
const POLL_MS = 1_000
/** A comment line this often keeps proxies (and the command line's dead-connection check) content. */
const KEEPALIVE_MS = 15_000
const SETTLE_SECONDS = 10
const PAGE = 200

/** The body exactly as a delivery sends it, and the headers that go with it (signed `now`). */
function sign(secret: string, webhookId: string, body: string, now: Date): SignedEvent {
  const timestamp = Math.floor(now.getTime() / 1000)
  return {
    webhook_id: webhookId,
    headers: {
      'content-type': 'application/json',
      'webhook-id': webhookId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signPayload(secret, webhookId, timestamp, body),
    },
    body,
  }
}

/**
 * The key's listen secret, made on its first use and kept. With `listening`, the key's events are
 * recorded from now until LISTEN_SECONDS from now (extended, never shortened: other listeners may run),
 * now being the clock's, as the events' writers read it (events.ts).
 */
export async function listenSecret(sql: Sql, keyId: number, listening: boolean, clock: EventClock): Promise<string> {
  const [row] = await sql<{ signing_secret: string }[]>`
    insert into webhook_listeners (api_key_id, signing_secret, listening_until)
    values (${keyId}, ${newSigningSecret()}, ${nowOf(sql, clock)} + make_interval(secs => ${listening ? LISTEN_SECONDS : 0}))
    on conflict (api_key_id) do update
      set listening_until = greatest(webhook_listeners.listening_until, excluded.listening_until)
    returning signing_secret`
  return row!.signing_secret
}

/** What events of the key are signed with: the registered URL's secret, else the listen secret. */
async function signingKeys(sql: Sql, keyId: number) {
  const [row] = await sql<{ url: string | null; registered: string | null; listen: string | null }[]>`
    select w.url, w.signing_secret as registered, l.signing_secret as listen
    from api_keys k
    left join webhook_endpoints w on w.api_key_id = k.id
    left join webhook_listeners l on l.api_key_id = k.id
    where k.id = ${keyId}`
  return row
}

/**
 * A test event (as sendTestEvent's) signed for the caller to send itself: nothing is recorded or
 * delivered. Signed with the registered URL's secret, or the listen secret when there is none.
 */
export async function signedTestEvent(sql: Sql, timezone: string, keyId: number, clock: Clock): Promise<SignedEvent> {
  const keys = await signingKeys(sql, keyId)
  const secret = keys?.registered ?? (await listenSecret(sql, keyId, false, clock))
  const [row] = await sql<{ body: string; webhook_id: string }[]>`
    select ${testPayload(sql, timezone, clock)} as body, ${newWebhookId(sql)} as webhook_id`
  return sign(secret, row!.webhook_id, row!.body, clock.now())
}

/** The `ready` event: the registered URL, and the listen secret when events are signed with it. */
export async function startListening(sql: Sql, clock: Clock, keyId: number): Promise<ListenReady> {
  const listen = await listenSecret(sql, keyId, true, clock)
  const keys = await signingKeys(sql, keyId)
  return { key_id: keyId, url: keys?.url ?? null, signing_secret: keys?.registered ? null : listen }
}

type EventRow = { id: number; webhook_id: string; event: string; payload: string; settled: boolean }

/** The key's events above `after`, oldest first, one index range per status (webhook_events_by_key). */
async function eventsAfter(sql: Sql, clock: Clock, keyId: number, after: number): Promise<EventRow[]> {
  return sql<EventRow[]>`
    select e.id, e.webhook_id, e.event, e.payload, e.created_at < ${nowOf(sql, clock)} - make_interval(secs => ${SETTLE_SECONDS}) as settled
    from unnest(array['pending', 'delivered', 'failed', 'listen_only']) s(status)
    cross join lateral (
      select id, webhook_id, event, payload, created_at from webhook_events w
      where w.api_key_id = ${keyId} and w.status = s.status and w.id > ${after}
      order by w.id
      limit ${PAGE}
    ) e
    order by e.id
    limit ${PAGE}`
}

// Open streams, ended when the service stops (an endless response would hold the shutdown).
const openStreams = new Set<() => void>()

export function endListenStreams(): void {
  for (const end of openStreams) end()
}

/**
 * The stream after the `ready` event: the key's events with a higher id than `after` (the client's
 * Last-Event-ID), or from now on. Ends when the client goes away, on a database error (the client
 * reconnects with its Last-Event-ID) or when the service stops.
 */
export function listenStream(
  deps: Pick<Deps, 'sql' | 'config' | 'listen' | 'clock'>,
  keyId: number,
  ready: ListenReady,
  after: number | null,
  signal: AbortSignal,
): ReadableStream<Uint8Array> {
  const { sql, clock } = deps
  const encoder = new TextEncoder()
  let closed = false
  let wakeUp: (() => void) | undefined
  let woken = false
  const wake = () => {
    woken = true
    wakeUp?.()
  }
  // A poll's sleep ends early on a wake-up (or the end of the stream).
  const sleep = async (ms: number) => {
    if (woken || closed) return
    const early = new AbortController()
    wakeUp = () => early.abort()
    await clock.sleep(ms, early.signal)
    wakeUp = undefined
  }
  const close = () => {
    closed = true
    wakeUp?.()
  }

  return new ReadableStream<Uint8Array>({
    start(controller) {
      let lastWrite = clock.monotonic()
      const write = (text: string) => {
        if (closed) return
        controller.enqueue(encoder.encode(text))
        lastWrite = clock.monotonic()
      }
      openStreams.add(close)
      signal.addEventListener('abort', close)
      const listening = onEventsCommitted(deps, wake)

      const run = async () => {
        write(`retry: 2000\nevent: ready\ndata: ${JSON.stringify(ready)}\n\n`)
        let floor = after ?? (await sql<{ id: number }[]>`select coalesce(max(id), 0)::bigint as id from webhook_events`)[0]!.id
        const sent = new Set<number>()
        let lastBeat = clock.monotonic()
        while (!closed) {
          woken = false
          if (clock.monotonic() - lastBeat >= HEARTBEAT_MS) {
            await listenSecret(sql, keyId, true, clock)
            lastBeat = clock.monotonic()
          }
          let secret: string | null | undefined
          let moving = true
          for (let from = floor; !closed;) {
            const rows = await eventsAfter(sql, clock, keyId, from)
            for (const row of rows) {
              if (!sent.has(row.id)) {
                if (secret === undefined) {
                  const keys = await signingKeys(sql, keyId)
                  secret = keys?.registered ?? keys?.listen ?? null
                }
                if (secret === null) return // the key is gone
                const event: ListenedEvent = { id: row.id, ...sign(secret, row.webhook_id, row.payload, clock.now()) }
                write(`id: ${row.id}\nevent: ${row.event}\ndata: ${JSON.stringify(event)}\n\n`)
                sent.add(row.id)
              }
              if (moving && row.settled) {
                floor = row.id
                sent.delete(row.id)
              } else moving = false
            }
            if (rows.length < PAGE) break
            from = rows[rows.length - 1]!.id
          }
          if (clock.monotonic() - lastWrite >= KEEPALIVE_MS) write(': keepalive\n\n')
          await sleep(Math.min(POLL_MS, HEARTBEAT_MS - (clock.monotonic() - lastBeat)))
        }
      }

      void run()
        .catch((error) => {
          if (!closed)
            log.warn('webhook listen stream ended', {
              key_id: keyId,
              error: error instanceof Error ? error.message.slice(0, 200) : 'unknown',
            })
        })
        .finally(async () => {
          closed = true
          openStreams.delete(close)
          signal.removeEventListener('abort', close)
          await (await listening)().catch(() => {})
          try {
            controller.close()
          } catch {
            // already closed by the client
          }
        })
    },
    cancel() {
      close()
    },
  })
}
